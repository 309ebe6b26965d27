// The model's working memory as one device allocation (decoder_buffers.h).
#include "atlas/runtime/arch/decoder/decoder_buffers.h"

#include <stdlib.h>

// As the weight arena and the driver: every piece starts 256-byte aligned.
enum { kAlign = 256 };

size_t atlas_decoder_buffers_bytes(const atlas_decoder_buffers *b) {
  return b->zero_bytes + b->rest_bytes;
}

static atlas_status overflow(size_t bytes) {
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "the model's KV cache and scratch overflow the "
                           "address space (a piece of %zu bytes)",
                           bytes);
}

atlas_status atlas_decoder_buffers_take_at(atlas_decoder_buffers *b,
                                           size_t bytes, bool zeroed,
                                           atlas_site site, void **out) {
  *out = NULL;
  size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
  if (need < bytes) return overflow(bytes);
  if (b->sizing) {
    size_t *total = zeroed ? &b->zero_bytes : &b->rest_bytes;
    size_t sum = b->zero_bytes + b->rest_bytes;
    if (sum < b->zero_bytes || sum + need < sum) return overflow(bytes);
    *total += need;
    b->piece_cap++;
    return ATLAS_OK;
  }
  if (b->separate) {
    if (b->piece_count == b->piece_cap) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "model buffers: piece %zu past the %zu sized",
                               b->piece_count + 1, b->piece_cap);
    }
    void *p = NULL;
    ATLAS_RETURN_IF_ERROR(atlas_backend_alloc_at(b->backend, bytes, site, &p));
    b->pieces[b->piece_count++] = p;
    *out = p;
    return zeroed ? atlas_backend_memset(b->backend, p, 0, bytes) : ATLAS_OK;
  }
  size_t *used = zeroed ? &b->zero_used : &b->rest_used;
  size_t room = zeroed ? b->zero_bytes : b->rest_bytes;
  if (b->base == NULL || room - *used < need) {
    return atlas_status_make(
        ATLAS_STATUS_INTERNAL,
        "model buffers: %zu bytes asked past the %zu sized", need, room);
  }
  *out = b->base + (zeroed ? 0 : b->zero_bytes) + *used;
  *used += need;
  return ATLAS_OK;
}

atlas_status atlas_decoder_buffers_commit(atlas_decoder_buffers *b) {
  b->sizing = false;
  b->separate = atlas_backend_redzone_bytes(b->backend) > 0;
  if (b->separate) {
    b->pieces = calloc(b->piece_cap ? b->piece_cap : 1, sizeof(void *));
    if (b->pieces == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "out of host memory for %zu buffer pointers",
                               b->piece_cap);
    }
    return ATLAS_OK;
  }
  size_t bytes = atlas_decoder_buffers_bytes(b);
  if (bytes == 0) return ATLAS_OK;
  // One site for the whole: the report names what it holds.
  atlas_site site = ATLAS_SITE;
  site.func =
      "atlas_decoder_buffers_commit (kv_cache, scratch, prefill_scratch)";
  return atlas_backend_alloc_at(b->backend, bytes, site, (void **)&b->base);
}

atlas_status atlas_decoder_buffers_zero(atlas_decoder_buffers *b) {
  if (b->separate || b->zero_bytes == 0) return ATLAS_OK;  // zeroed at take
  return atlas_backend_memset(b->backend, b->base, 0, b->zero_bytes);
}

atlas_status atlas_decoder_buffers_release(void *p) {
  atlas_decoder_buffers *b = p;
  atlas_status status = ATLAS_OK;
  if (b->base != NULL) status = atlas_backend_free(b->backend, b->base);
  for (size_t i = b->piece_count; i > 0; --i) {
    status = atlas_status_join(
        status, atlas_backend_free(b->backend, b->pieces[i - 1]));
  }
  free(b->pieces);
  free(b);
  return status;
}
