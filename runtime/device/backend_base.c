// State and accounting every backend shares: ledger, faults, sweep, kernels.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/ledger_report.h"
#include "atlas/runtime/base/log.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/op_cache.h"

// Parses ATLAS_REDZONE once, at creation: hot paths never call getenv.
static atlas_status read_redzone_env(size_t *out_bytes) {
  *out_bytes = 0;
  const char *text = getenv("ATLAS_REDZONE");
  if (text == NULL || text[0] == '\0') return ATLAS_OK;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
      v > (1ull << 30)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "ATLAS_REDZONE='%s' is not a byte count between 0 "
                             "and 1073741824",
                             text);
  }
  *out_bytes = (size_t)v;
  return ATLAS_OK;
}

const char *atlas_fault_kind_name(atlas_fault_kind kind) {
  switch (kind) {
    case ATLAS_FAULT_ALLOC:
      return "alloc";
    case ATLAS_FAULT_COPY:
      return "copy";
    case ATLAS_FAULT_STREAM:
      return "stream";
    case ATLAS_FAULT_EVENT:
      return "event";
    case ATLAS_FAULT_LAUNCH:
      return "launch";
    case ATLAS_FAULT_HOST_ALLOC:
      return "host-alloc";
    case ATLAS_FAULT_FREE:
      return "free";
    case ATLAS_FAULT_KIND_COUNT:
      break;
  }
  return "?";
}

// Parses ATLAS_FAULT=kind:n[,kind:n...] once, at creation, into fail_at.
static atlas_status read_fault_env(atlas_fault_state *faults) {
  const char *text = getenv("ATLAS_FAULT");
  if (text == NULL || text[0] == '\0') return ATLAS_OK;
  const char *p = text;
  while (*p != '\0') {
    const char *colon = strchr(p, ':');
    int kind = -1;
    for (int k = 0; colon != NULL && k < ATLAS_FAULT_KIND_COUNT; ++k) {
      const char *name = atlas_fault_kind_name((atlas_fault_kind)k);
      if (strlen(name) == (size_t)(colon - p) &&
          strncmp(name, p, (size_t)(colon - p)) == 0) {
        kind = k;
      }
    }
    char *end = NULL;
    errno = 0;
    unsigned long long n = colon != NULL ? strtoull(colon + 1, &end, 10) : 0;
    if (kind < 0 || errno != 0 || end == colon + 1 || n == 0 ||
        colon[1] == '-' || (*end != ',' && *end != '\0')) {
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "ATLAS_FAULT='%.200s' is not kind:n[,kind:n...] with kind one of "
          "alloc, copy, stream, event, launch, host-alloc, free and n >= 1",
          text);
    }
    faults->fail_at[kind] = (uint64_t)n;
    p = *end == ',' ? end + 1 : end;
  }
  return ATLAS_OK;
}

atlas_status atlas_backend_read_switch_env(const char *name, bool *out_on) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0') return ATLAS_OK;  // the default
  if (strcmp(text, "0") == 0 || strcmp(text, "1") == 0) {
    *out_on = text[0] == '1';
    return ATLAS_OK;
  }
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "%s='%.200s' is neither 0 (off) nor 1 (on)", name,
                           text);
}

// The entries the shared code cannot do without.
static atlas_status check_required(const atlas_backend_vtable *v,
                                   const char *name) {
  const char *missing = v == NULL              ? "the whole vtable"
                        : v->destroy == NULL   ? "destroy"
                        : v->raw_alloc == NULL ? "raw_alloc"
                        : v->raw_free == NULL  ? "raw_free"
                        : v->raw_read == NULL  ? "raw_read"
                        : v->raw_fill == NULL  ? "raw_fill"
                                               : NULL;
  if (missing == NULL) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "backend %s: its vtable lacks %s, which every "
      "backend must fill (see runtime/device/backend_impl.h)",
      name, missing);
}

atlas_status atlas_backend_base_init(atlas_backend *b,
                                     const atlas_backend_vtable *vtable,
                                     const char *name) {
  ATLAS_RETURN_IF_ERROR(check_required(vtable, name));
  b->vtable = vtable;
  snprintf(b->name, sizeof(b->name), "%s", name);
  ATLAS_RETURN_IF_ERROR(read_redzone_env(&b->redzone_bytes));
  b->debug_sync = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_read_switch_env("ATLAS_DEBUG_SYNC", &b->debug_sync));
  memset(&b->faults, 0, sizeof(b->faults));
  ATLAS_RETURN_IF_ERROR(read_fault_env(&b->faults));
  b->poison_active = false;
  b->poison_lo = b->poison_hi = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_create(&b->ledger));
  atlas_status status = atlas_op_cache_create(b, &b->op_cache);
  if (status != ATLAS_OK) {
    atlas_ledger_destroy(b->ledger);
    b->ledger = NULL;
    return status;
  }
  pthread_mutex_init(&b->state_mutex, NULL);
  b->registry = NULL;
  b->modules_job = NULL;
  b->modules_error = ATLAS_OK;
  return ATLAS_OK;
}

atlas_status atlas_backend_base_deinit(atlas_backend *b) {
  atlas_status status = atlas_op_cache_destroy(b->op_cache);
  b->op_cache = NULL;
  atlas_sweep_result swept;
  status =
      atlas_status_join(status, atlas_backend_base_sweep_unreleased(b, &swept));
  if (swept.count > swept.refused_count) {
    // Last-resort reclamation is expected after a failed load; say what it
    // had to free so a leak on the clean path is visible.
    atlas_log(&b->log, ATLAS_LOG_WARNING,
              "backend %s reclaimed %zu unreleased allocations (%zu bytes) "
              "at destroy%s%s:\n%s",
              b->name, swept.count - swept.refused_count,
              swept.bytes - swept.refused_bytes,
              swept.refused_count > 0 ? ", and released the ones whose free "
                                        "the device had refused"
                                      : "",
              swept.unfreed_count > 0 ? "; the device refused to free some "
                                        "(the status names them), which "
                                        "stay allocated"
                                      : "",
              swept.sites ? swept.sites : "");
  } else if (swept.count > 0) {
    // Every one was freed before and refused by the device: nothing leaked,
    // but the memory was held until now, so say what was released.
    atlas_log(&b->log, ATLAS_LOG_WARNING,
              "backend %s released at destroy %zu allocations (%zu bytes) "
              "whose free the device had refused (no leak); freed %zu of "
              "them%s:\n%s",
              b->name, swept.count, swept.bytes,
              swept.count - swept.unfreed_count,
              swept.unfreed_count > 0 ? ", the device refused again for the "
                                        "rest (the status names them), which "
                                        "stay allocated"
                                      : "",
              swept.sites ? swept.sites : "");
  }
  atlas_sweep_result_free(&swept);
  atlas_backend_base_drop_modules(b);
  atlas_status_free(b->modules_error);
  b->modules_error = ATLAS_OK;
  status =
      atlas_status_join(status, atlas_kernel_registry_release(b->registry));
  b->registry = NULL;
  atlas_ledger_destroy(b->ledger);
  b->ledger = NULL;
  pthread_mutex_destroy(&b->state_mutex);
  return status;
}

atlas_status atlas_backend_base_fault_check(atlas_backend *b,
                                            atlas_fault_kind kind,
                                            const char *what) {
  // Hot path: one relaxed increment and one load, no lock.
  uint64_t n = __atomic_add_fetch(&b->faults.count[kind], 1, __ATOMIC_RELAXED);
  uint64_t at = __atomic_load_n(&b->faults.fail_at[kind], __ATOMIC_RELAXED);
  if (at == 0 || n != at) return ATLAS_OK;
  // One-shot: only the thread that clears it reports the fault.
  if (!__atomic_compare_exchange_n(&b->faults.fail_at[kind], &at, 0, false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_ABORTED,
      "injected fault: %s #%" PRIu64 " on backend %s failed", what, n, b->name);
}

void atlas_backend_inject_fault(atlas_backend *b, atlas_fault_kind kind,
                                uint64_t k) {
  uint64_t now = __atomic_load_n(&b->faults.count[kind], __ATOMIC_RELAXED);
  __atomic_store_n(&b->faults.fail_at[kind], k == 0 ? 0 : now + k,
                   __ATOMIC_RELAXED);
}

uint64_t atlas_backend_op_count(const atlas_backend *b, atlas_fault_kind kind) {
  return __atomic_load_n(&b->faults.count[kind], __ATOMIC_RELAXED);
}

uint8_t atlas_backend_base_redzone_fill(atlas_backend *b, uint64_t index) {
  pthread_mutex_lock(&b->state_mutex);
  uint8_t fill = 0xA5;
  if (b->poison_active) {
    fill = (index >= b->poison_lo && index < b->poison_hi) ? 0xEE : 0x00;
  }
  pthread_mutex_unlock(&b->state_mutex);
  return fill;
}

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

atlas_status atlas_backend_base_alloc(atlas_backend *b, size_t bytes,
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
          ? atlas_backend_base_fault_check(b, ATLAS_FAULT_HOST_ALLOC,
                                           "host allocation")
          : atlas_backend_base_fault_check(b, ATLAS_FAULT_ALLOC, "allocation"),
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
    uint8_t fill = atlas_backend_base_redzone_fill(b, index);
    status = b->vtable->raw_fill(b, base, fill, lead);
    if (status == ATLAS_OK) {
      status = b->vtable->raw_fill(b, ptr + bytes, fill, pad);
    }
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

atlas_status atlas_backend_base_free(atlas_backend *b, void *ptr,
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
      zone = atlas_backend_base_check_redzone(b, &entry, "when it was freed");
    }
    atlas_status_free(waited);
  }
  status = atlas_backend_base_fault_check(b, ATLAS_FAULT_FREE, "free");
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

atlas_status atlas_backend_base_sweep_unreleased(
    atlas_backend *b, atlas_sweep_result *out_result) {
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
      atlas_status zone = atlas_backend_base_check_redzone(
          b, &e, "by the sweep of unreleased memory");
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
