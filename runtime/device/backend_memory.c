// Ledgered backend memory: raw_alloc / raw_free with call sites, red zones,
// fault points, the free-kind check and the sweep of unreleased memory.
#include "atlas/runtime/device/backend_memory.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/ledger_report.h"
#include "atlas/runtime/device/fault.h"
#include "atlas/runtime/device/redzone.h"

static const char *kind_name(atlas_mem_kind kind) {
  switch (kind) {
    case ATLAS_MEM_DEVICE:
      return "device";
    case ATLAS_MEM_MANAGED:
      return "managed";
    case ATLAS_MEM_PINNED_HOST:
      return "pinned host";
  }
  return "unknown";
}

atlas_status atlas_backend_memory_alloc(atlas_backend *b, size_t bytes,
                                        atlas_mem_kind kind, atlas_site site,
                                        void **out_ptr) {
  *out_ptr = NULL;
  if (bytes == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: a %s allocation of 0 bytes at %s:%d (%s)",
                             b->name, kind_name(kind), site.file, site.line,
                             site.func);
  }
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      kind == ATLAS_MEM_PINNED_HOST
          ? atlas_fault_check(&b->faults, ATLAS_FAULT_HOST_ALLOC,
                              "host allocation", b->name)
          : atlas_fault_check(&b->faults, ATLAS_FAULT_ALLOC, "allocation",
                              b->name),
      "%s:%d (%s)", site.file, site.line, site.func));
  // The bands: `pad` bytes after the buffer, `lead` (pad rounded up to the
  // alignment) before it; the caller gets base + lead.
  size_t pad = b->redzone_bytes;
  size_t lead = atlas_redzone_lead_bytes(pad);
  if (bytes > SIZE_MAX - pad - lead) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %zu bytes plus %zu bytes of red zones "
                             "overflow",
                             b->name, bytes, pad + lead);
  }
  size_t total = lead + bytes + pad;
  void *base = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      b->vtable->raw_alloc(b, total, kind, &base),
      "%s: allocating %zu bytes of %s memory at %s:%d (%s)", b->name, bytes,
      kind_name(kind), site.file, site.line, site.func));
  char *ptr = (char *)base + lead;
  uint64_t index = 0;
  atlas_status status = atlas_ledger_insert_banded(
      b->ledger, (uintptr_t)ptr, bytes, lead, pad, kind, site, &index);
  if (status == ATLAS_OK && pad > 0) {
    atlas_ledger_entry armed = {.addr = (uintptr_t)ptr,
                                .bytes = bytes,
                                .redzone_bytes = pad,
                                .lead_bytes = lead,
                                .index = index};
    status = atlas_redzone_arm(b, &armed);
    if (status != ATLAS_OK) {
      atlas_status_free(atlas_ledger_remove(b->ledger, (uintptr_t)ptr, NULL));
    }
  }
  if (status != ATLAS_OK) {
    return atlas_status_join(status, b->vtable->raw_free(b, base, total, kind));
  }
  *out_ptr = ptr;
  return ATLAS_OK;
}

// What raw_alloc returned for an entry, and how many bytes it was asked for.
static void *entry_base(const atlas_ledger_entry *e) {
  return (void *)(e->addr - e->lead_bytes);
}

static size_t entry_span(const atlas_ledger_entry *e) {
  return e->lead_bytes + e->bytes + e->redzone_bytes;
}

typedef struct free_check {
  atlas_mem_kind kind;
} free_check;

// Pinned memory and device memory have their own free calls; mixing them
// up would hand a pointer to the wrong allocator.
static atlas_status check_free_kind(void *ctx, const atlas_ledger_entry *e) {
  const free_check *c = ctx;
  bool pinned = e->kind == ATLAS_MEM_PINNED_HOST;
  if (pinned == (c->kind == ATLAS_MEM_PINNED_HOST)) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "0x%" PRIxPTR
      " is %s memory (allocated at %s:%d (%s)); free it "
      "with %s",
      e->addr, kind_name(e->kind), e->site.file, e->site.line, e->site.func,
      pinned ? "atlas_backend_pinned_free" : "atlas_backend_free");
}

atlas_status atlas_backend_memory_free(atlas_backend *b, void *ptr,
                                       atlas_mem_kind kind) {
  if (ptr == NULL) return ATLAS_OK;
  atlas_ledger_entry entry;
  free_check check = {kind};
  atlas_status status = atlas_ledger_remove_if(b->ledger, (uintptr_t)ptr,
                                               check_free_kind, &check, &entry);
  if (status != ATLAS_OK) return atlas_status_annotate(status, "%s", b->name);
  // Under ATLAS_REDZONE the band is read before the memory goes: without it,
  // an overrun of a buffer freed before any scan would never be reported.
  // The memory is freed either way. A backend that cannot wait for its
  // streams now (a capture is open) skips the check.
  atlas_status zone = ATLAS_OK;
  if (entry.redzone_bytes > 0) {
    atlas_status waited =
        b->vtable->quiesce != NULL
            ? b->vtable->quiesce(b, "red-zone check of a free")
            : ATLAS_OK;
    if (waited == ATLAS_OK) {
      zone = atlas_redzone_check(b, &entry, "when it was freed");
    }
    atlas_status_free(waited);
  }
  status = atlas_fault_check(&b->faults, ATLAS_FAULT_FREE, "free", b->name);
  if (status == ATLAS_OK) {
    status = b->vtable->raw_free(b, entry_base(&entry), entry_span(&entry),
                                 entry.kind);
  }
  if (status != ATLAS_OK) {
    // The device still holds the memory: it stays live (marked), so live
    // bytes and reports count it and the sweep frees and names it.
    status = atlas_status_join(
        atlas_status_annotate(
            status,
            "%s: freeing %zu bytes allocated at %s:%d (%s) failed; they "
            "stay live on the ledger until a later free or the sweep "
            "releases them",
            b->name, entry.bytes, entry.site.file, entry.site.line,
            entry.site.func),
        atlas_ledger_restore(b->ledger, &entry));
  }
  return atlas_status_join(zone, status);
}

atlas_status atlas_backend_memory_sweep(atlas_backend *b,
                                        atlas_sweep_result *out_result) {
  memset(out_result, 0, sizeof(*out_result));
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(b->ledger, &entries, &count));
  if (count == 0) return ATLAS_OK;
  atlas_status status =
      atlas_ledger_report_text(b->ledger, 0, 0.0, &out_result->sites);
  // Newest first: later allocations may live inside structures of earlier ones.
  for (size_t i = count; i-- > 0;) {
    atlas_ledger_entry e;
    atlas_status s = atlas_ledger_remove(b->ledger, entries[i].addr, &e);
    if (s == ATLAS_OK) {
      if (e.release_failed) {  // freed once, refused by the device: no leak
        out_result->refused_count++;
        out_result->refused_bytes += e.bytes;
      }
      // A leaked buffer's overrun is still an overrun: read its band first.
      atlas_status zone =
          atlas_redzone_check(b, &e, "by the sweep of unreleased memory");
      atlas_status freed =
          b->vtable->raw_free(b, entry_base(&e), entry_span(&e), e.kind);
      if (freed != ATLAS_OK) {
        // Still held by the device: keep it live, as a free does.
        out_result->unfreed_count++;
        out_result->unfreed_bytes += e.bytes;
        freed = atlas_status_join(
            atlas_status_annotate(
                freed,
                "sweep: freeing %zu bytes allocated at %s:%d (%s) "
                "failed; they stay live on the ledger",
                e.bytes, e.site.file, e.site.line, e.site.func),
            atlas_ledger_restore(b->ledger, &e));
      }
      s = atlas_status_join(zone, freed);
      out_result->count++;
      out_result->bytes += e.bytes;
    }
    status = atlas_status_join(status, s);
  }
  free(entries);
  return status;
}
