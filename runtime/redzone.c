// Red zones: trailing guard bands, scanned and poisoned to find overruns.
//
// Each allocation of a backend built with ATLAS_REDZONE=<pad> gets `pad`
// bytes after it, filled with a known byte. A scan reads every band back;
// poisoning changes which byte each band holds so a write (or a read) that
// lands in some band can be bisected to one allocation by creation index. A
// free and the sweep read the band of what they release, so an overrun is
// reported even when no scan ran before the memory went.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/backend_impl.h"

// Offset of the first byte of `band` that is not `fill` (`bytes` if none).
static size_t first_changed(const unsigned char *band, uint8_t fill,
                            size_t bytes) {
  for (size_t k = 0; k < bytes; ++k) {
    if (band[k] != fill) return k;
  }
  return bytes;
}

atlas_status atlas_backend_base_check_redzone(atlas_backend *b,
                                              const atlas_ledger_entry *e,
                                              const char *when) {
  if (e->redzone_bytes == 0) return ATLAS_OK;
  unsigned char *band = malloc(e->redzone_bytes);
  if (band == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: red-zone check: cannot allocate a %zu-byte "
                             "buffer",
                             b->name, e->redzone_bytes);
  }
  atlas_status status =
      b->vtable->raw_read(b, band, (const char *)e->addr + e->bytes,
                          e->redzone_bytes);
  size_t first = e->redzone_bytes;
  if (status == ATLAS_OK) {
    first = first_changed(band, atlas_backend_base_redzone_fill(b, e->index),
                          e->redzone_bytes);
  }
  free(band);
  if (status != ATLAS_OK) {
    return atlas_status_annotate(status, "%s: reading the red zone of "
                                         "allocation #%" PRIu64 " %s",
                                 b->name, e->index, when);
  }
  if (first == e->redzone_bytes) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_DATA_LOSS,
      "%s: buffer overrun: the red zone after allocation #%" PRIu64
      " (0x%" PRIxPTR ", %zu bytes, allocated at %s:%d (%s)) was written "
      "%zu bytes past its end; found %s",
      b->name, e->index, e->addr, e->bytes, e->site.file, e->site.line,
      e->site.func, first, when);
}

atlas_status atlas_backend_base_scan_redzones(
    atlas_backend *b, atlas_redzone_violation *out_violations,
    size_t max_violations, size_t *out_count) {
  *out_count = 0;
  if (b->redzone_bytes == 0) return ATLAS_OK;
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(b->ledger, &entries, &count));
  unsigned char *band = malloc(b->redzone_bytes);
  if (band == NULL && count > 0) {
    free(entries);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "red-zone scan: cannot allocate a %zu-byte buffer",
                             b->redzone_bytes);
  }
  atlas_status status = ATLAS_OK;
  size_t found = 0;
  for (size_t i = 0; status == ATLAS_OK && i < count; ++i) {
    const atlas_ledger_entry *e = &entries[i];
    if (e->redzone_bytes == 0) continue;
    char *zone = (char *)e->addr + e->bytes;
    status = b->vtable->raw_read(b, band, zone, e->redzone_bytes);
    if (status != ATLAS_OK) break;
    uint8_t fill = atlas_backend_base_redzone_fill(b, e->index);
    size_t first = first_changed(band, fill, e->redzone_bytes);
    if (first == e->redzone_bytes) continue;
    if (found < max_violations && out_violations != NULL) {
      out_violations[found] = (atlas_redzone_violation){
          e->index, e->addr, e->bytes, first, e->site};
    }
    found++;
    status = b->vtable->raw_fill(b, zone, fill, e->redzone_bytes);  // refill
  }
  free(band);
  free(entries);
  *out_count = found;
  return atlas_status_annotate(status, "%s: red-zone scan", b->name);
}

atlas_status atlas_backend_base_poison_redzones(atlas_backend *b, uint64_t lo,
                                                uint64_t hi) {
  if (b->redzone_bytes == 0) return ATLAS_OK;
  pthread_mutex_lock(&b->state_mutex);
  b->poison_active = true;
  b->poison_lo = lo;
  b->poison_hi = hi;
  pthread_mutex_unlock(&b->state_mutex);
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(b->ledger, &entries, &count));
  atlas_status status = ATLAS_OK;
  for (size_t i = 0; status == ATLAS_OK && i < count; ++i) {
    const atlas_ledger_entry *e = &entries[i];
    if (e->redzone_bytes == 0) continue;
    uint8_t fill = (e->index >= lo && e->index < hi) ? 0xEE : 0x00;
    status = b->vtable->raw_fill(b, (char *)e->addr + e->bytes, fill, e->redzone_bytes);
  }
  free(entries);
  return atlas_status_annotate(status, "%s: poisoning red zones", b->name);
}
