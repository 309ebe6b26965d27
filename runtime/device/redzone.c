// Red zones: guard bands before and after each buffer, scanned and poisoned
// to find underruns and overruns.
//
// Each allocation of a backend built with ATLAS_REDZONE=<pad> gets `pad`
// bytes after it and `pad` rounded up to the alignment before it
// (atlas_redzone_lead_bytes), both filled with a known byte. A scan reads
// every band back; poisoning changes which byte each band holds so a write
// (or a read) that lands in some band can be bisected to one allocation by
// creation index. A free and the sweep read the bands of what they release,
// so an underrun or overrun is reported even when no scan ran before the
// memory went.
#include "atlas/runtime/device/redzone.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// Parses ATLAS_REDZONE once, at creation: hot paths never call getenv.
atlas_status atlas_redzone_read_env(size_t *out_bytes) {
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

uint8_t atlas_redzone_fill(atlas_backend *b, uint64_t index) {
  pthread_mutex_lock(&b->state_mutex);
  uint8_t fill = 0xA5;
  if (b->poison_active) {
    fill = (index >= b->poison_lo && index < b->poison_hi) ? 0xEE : 0x00;
  }
  pthread_mutex_unlock(&b->state_mutex);
  return fill;
}

// The host's own reads and fills of backend memory (the device is quiet).
static atlas_status host_read(atlas_backend *b, void *dst_host, const void *src,
                              size_t bytes) {
  atlas_copy_op op = {.kind = ATLAS_COPY_D2H,
                      .when = ATLAS_XFER_HOST_NOW,
                      .dst = dst_host,
                      .src = src,
                      .width_bytes = bytes,
                      .height = 1,
                      .dst_pitch = bytes,
                      .src_pitch = bytes,
                      .name = "red-zone read"};
  // A status never points into the op it was given (cppcheck takes the
  // returned handle for a pointer that may).
  // cppcheck-suppress returnDanglingLifetime
  return b->vtable->copy(b, &op);
}

static atlas_status host_fill(atlas_backend *b, void *dst, uint8_t value,
                              size_t bytes) {
  atlas_fill_op op = {.when = ATLAS_XFER_HOST_NOW,
                      .dst = dst,
                      .value = value,
                      .bytes = bytes,
                      .name = "red-zone fill"};
  // A status never points into the op it was given (cppcheck takes the
  // returned handle for a pointer that may).
  // cppcheck-suppress returnDanglingLifetime
  return b->vtable->fill(b, &op);
}

// Offset of the first byte of `band` that is not `fill` (`bytes` if none).
static size_t first_changed(const unsigned char *band, uint8_t fill,
                            size_t bytes) {
  for (size_t k = 0; k < bytes; ++k) {
    if (band[k] != fill) return k;
  }
  return bytes;
}

// How far before the end of `band` its last byte that is not `fill` lies
// (1: the last byte; 0 if none): for the band before a buffer, how many
// bytes before the buffer's start the nearest stray write landed.
static size_t last_changed_from_end(const unsigned char *band, uint8_t fill,
                                    size_t bytes) {
  for (size_t k = bytes; k-- > 0;) {
    if (band[k] != fill) return bytes - k;
  }
  return 0;
}

// Reads both bands of `e` into `scratch` (at least max(lead, pad) bytes) and
// says where they changed: *out_before as last_changed_from_end (0: intact),
// *out_after as first_changed (redzone_bytes: intact).
static atlas_status read_bands(atlas_backend *b, const atlas_ledger_entry *e,
                               uint8_t fill, unsigned char *scratch,
                               size_t *out_before, size_t *out_after) {
  *out_before = 0;
  *out_after = e->redzone_bytes;
  if (e->lead_bytes > 0) {
    ATLAS_RETURN_IF_ERROR(host_read(
        b, scratch, (const char *)(e->addr - e->lead_bytes), e->lead_bytes));
    *out_before = last_changed_from_end(scratch, fill, e->lead_bytes);
  }
  ATLAS_RETURN_IF_ERROR(host_read(b, scratch, (const char *)e->addr + e->bytes,
                                  e->redzone_bytes));
  *out_after = first_changed(scratch, fill, e->redzone_bytes);
  return ATLAS_OK;
}

static size_t band_buffer_bytes(const atlas_ledger_entry *e) {
  return e->lead_bytes > e->redzone_bytes ? e->lead_bytes : e->redzone_bytes;
}

atlas_status atlas_redzone_check(atlas_backend *b, const atlas_ledger_entry *e,
                                 const char *when) {
  if (e->redzone_bytes == 0) return ATLAS_OK;
  unsigned char *band = malloc(band_buffer_bytes(e));
  if (band == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: red-zone check: cannot allocate a %zu-byte "
                             "buffer",
                             b->name, band_buffer_bytes(e));
  }
  size_t before = 0, after = e->redzone_bytes;
  atlas_status status =
      read_bands(b, e, atlas_redzone_fill(b, e->index), band, &before, &after);
  free(band);
  if (status != ATLAS_OK) {
    return atlas_status_annotate(status,
                                 "%s: reading the red zones of "
                                 "allocation #%" PRIu64 " %s",
                                 b->name, e->index, when);
  }
  if (before > 0) {
    status = atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: buffer underrun: the red zone before allocation #%" PRIu64
        " (0x%" PRIxPTR
        ", %zu bytes, allocated at %s:%d (%s)) was written "
        "%zu bytes before its start; found %s",
        b->name, e->index, e->addr, e->bytes, e->site.file, e->site.line,
        e->site.func, before, when);
  }
  if (after < e->redzone_bytes) {
    status = atlas_status_join(
        status,
        atlas_status_make(
            ATLAS_STATUS_DATA_LOSS,
            "%s: buffer overrun: the red zone after allocation #%" PRIu64
            " (0x%" PRIxPTR ", %zu bytes, allocated at %s:%d (%s)) was written "
            "%zu bytes past its end; found %s",
            b->name, e->index, e->addr, e->bytes, e->site.file, e->site.line,
            e->site.func, after, when));
  }
  return status;
}

// Fills both bands of `e` with `fill`.
static atlas_status fill_bands(atlas_backend *b, const atlas_ledger_entry *e,
                               uint8_t fill) {
  if (e->lead_bytes > 0) {
    ATLAS_RETURN_IF_ERROR(
        host_fill(b, (char *)(e->addr - e->lead_bytes), fill, e->lead_bytes));
  }
  return host_fill(b, (char *)e->addr + e->bytes, fill, e->redzone_bytes);
}

atlas_status atlas_redzone_arm(atlas_backend *b, const atlas_ledger_entry *e) {
  if (e->redzone_bytes == 0) return ATLAS_OK;
  return fill_bands(b, e, atlas_redzone_fill(b, e->index));
}

atlas_status atlas_redzone_scan(atlas_backend *b,
                                atlas_redzone_violation *out_violations,
                                size_t max_violations, size_t *out_count) {
  *out_count = 0;
  if (b->redzone_bytes == 0) return ATLAS_OK;
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(b->ledger, &entries, &count));
  size_t band_bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    size_t need = band_buffer_bytes(&entries[i]);
    if (need > band_bytes) band_bytes = need;
  }
  unsigned char *band = band_bytes > 0 ? malloc(band_bytes) : NULL;
  if (band == NULL && band_bytes > 0) {
    free(entries);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "red-zone scan: cannot allocate a %zu-byte buffer",
                             band_bytes);
  }
  atlas_status status = ATLAS_OK;
  size_t found = 0;
  for (size_t i = 0; status == ATLAS_OK && i < count; ++i) {
    const atlas_ledger_entry *e = &entries[i];
    if (e->redzone_bytes == 0) continue;
    uint8_t fill = atlas_redzone_fill(b, e->index);
    size_t before = 0, after = e->redzone_bytes;
    status = read_bands(b, e, fill, band, &before, &after);
    if (status != ATLAS_OK) break;
    if (before == 0 && after == e->redzone_bytes) continue;
    if (found < max_violations && out_violations != NULL) {
      out_violations[found] = (atlas_redzone_violation){
          e->index, e->addr,
          e->bytes, after < e->redzone_bytes ? after : SIZE_MAX,
          e->site,  before};
    }
    found++;
    status = fill_bands(b, e, fill);  // refill
  }
  free(band);
  free(entries);
  *out_count = found;
  return atlas_status_annotate(status, "%s: red-zone scan", b->name);
}

atlas_status atlas_redzone_poison(atlas_backend *b, uint64_t lo, uint64_t hi) {
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
    status = fill_bands(b, e, fill);
  }
  free(entries);
  return atlas_status_annotate(status, "%s: poisoning red zones", b->name);
}
