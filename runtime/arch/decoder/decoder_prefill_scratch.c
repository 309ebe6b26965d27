// The batched prefill's scratch: its pieces' sizes (carved from the model's
// buffers in the load's two passes), its teardown resource, and the
// precision mode decided with it (decoder_prefill.h).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/prefill_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/arch/decoder/decoder_prefill.h"
#include "atlas/runtime/base/checked_math.h"

static uint64_t wide_dim(const atlas_decoder_config *c) {
  uint64_t q_dim = (uint64_t)(c->num_attention_heads * c->head_dim);
  return q_dim > (uint64_t)c->hidden_size ? q_dim : (uint64_t)c->hidden_size;
}

// The widest input a product takes: hidden (q, k, v, gate, up, lm_head),
// q_dim (o) or intermediate (down).
static uint64_t input_dim(const atlas_decoder_config *c) {
  uint64_t w = wide_dim(c);
  return (uint64_t)c->intermediate_size > w ? (uint64_t)c->intermediate_size
                                            : w;
}

bool atlas_decoder_prefill_one_term(atlas_dtype kv_dtype) {
  return kv_dtype == ATLAS_DTYPE_F16 || kv_dtype == ATLAS_DTYPE_BF16;
}

uint64_t atlas_decoder_decode_splits(int64_t max_seq, int64_t head_dim) {
  uint64_t chunk = atlas_decoder_decode_chunk((uint32_t)head_dim);
  return ((uint64_t)max_seq + chunk - 1) / chunk;
}

// Flash-decoding partials: per head and split, max, sum and head_dim values.
static uint64_t part_floats(const atlas_decoder_config *c, int64_t max_seq) {
  return (uint64_t)c->num_attention_heads *
         atlas_decoder_decode_splits(max_seq, c->head_dim) *
         ((uint64_t)c->head_dim + 2);
}

// rows x n elements of `elt` bytes, checked: rows may come from a caller's
// --max-seq, far past anything checked_sizes multiplied out.
static atlas_status rows_bytes(uint64_t rows, uint64_t n, uint64_t elt,
                               size_t *out) {
  uint64_t bytes = rows;
  if (!atlas_mul_u64(&bytes, n) || !atlas_mul_u64(&bytes, elt) ||
      bytes > SIZE_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the prefill scratch's sizes overflow 64 bits "
                             "(%llu rows of %llu elements)",
                             (unsigned long long)rows, (unsigned long long)n);
  }
  *out = (size_t)bytes;
  return ATLAS_OK;
}

atlas_status atlas_decoder_prefill_take(atlas_decoder_prefill_scratch *s,
                                        atlas_decoder_buffers *b,
                                        const atlas_decoder_config *c,
                                        int64_t max_seq) {
  uint64_t r = (uint64_t)s->rows, f = sizeof(float);
  uint64_t q_dim = (uint64_t)(c->num_attention_heads * c->head_dim);
  uint64_t kv_dim = (uint64_t)(c->num_key_value_heads * c->head_dim);
  uint64_t logit_rows = r < ATLAS_DECODER_PREFILL_LOGIT_ROWS
                            ? r
                            : ATLAS_DECODER_PREFILL_LOGIT_ROWS;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, 1, 4, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->tokens));
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, (uint64_t)c->hidden_size, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->x));
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, wide_dim(c), f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->xb));
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, q_dim, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->xb2));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->q));
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, (uint64_t)c->intermediate_size, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->hb));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->hb2));
  ATLAS_RETURN_IF_ERROR(rows_bytes(logit_rows, (uint64_t)c->vocab_size, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->logits));
  // RoPE's inverse frequencies are the one-token scratch's (m->scratch),
  // which atlas_decoder_rope_update keeps right for every RoPE type.
  ATLAS_RETURN_IF_ERROR(rows_bytes(part_floats(c, max_seq), 1, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->part));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take_zeroed(
      b, (size_t)c->num_attention_heads * sizeof(uint32_t), &s->counters));
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, kv_dim, f, &n));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->k));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, n, &s->v));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_take(&s->moe, b, c, s->rows));
  if (!s->one_term) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(rows_bytes(r, input_dim(c), 2, &n));
  return atlas_decoder_buffers_take(b, n, &s->x16);
}

// The sizing pass of atlas_decoder_prefill_take itself, so that the figure is
// what a load carves (alignment included), never a formula beside it.
uint64_t atlas_decoder_prefill_bytes(const atlas_decoder_config *c,
                                     int64_t rows, int64_t max_seq) {
  if (rows <= 0) return 0;
  atlas_decoder_prefill_scratch s;
  memset(&s, 0, sizeof(s));
  s.rows = rows;
  s.one_term = true;  // x16 counted whatever the KV type: an upper bound
  atlas_decoder_buffers b;
  memset(&b, 0, sizeof(b));
  b.sizing = true;
  atlas_status status = atlas_decoder_prefill_take(&s, &b, c, max_seq);
  if (status != ATLAS_OK) {
    atlas_status_free(status);
    return UINT64_MAX;  // overflows the caller's sum: refused there
  }
  return atlas_decoder_buffers_bytes(&b);
}

// The device memory is the model's buffers' (released by "buffers").
static atlas_status release_prefill(void *p) {
  free(p);
  return ATLAS_OK;
}

// Whether the backend multiplies (cuBLASLt on CUDA): asked once, here; its
// UNIMPLEMENTED means the model's own one-term kernels.
static atlas_status probe_matmul(atlas_backend *b, bool *out_matmul) {
  *out_matmul = false;
  atlas_status status =
      atlas_backend_matmul(b, NULL, NULL, NULL, NULL, ATLAS_MATMUL_BF16, 0, 0,
                           0, ATLAS_MATMUL_WRITE);
  if (status == ATLAS_OK) {
    *out_matmul = true;
    return ATLAS_OK;
  }
  if (atlas_status_code_of(status) == ATLAS_STATUS_UNIMPLEMENTED) {
    atlas_status_free(status);
    return ATLAS_OK;
  }
  return status;
}

atlas_status atlas_decoder_prefill_setup(atlas_decoder_model *m, int64_t rows) {
  m->prefill = NULL;
  if (rows <= 0) return ATLAS_OK;
  atlas_decoder_prefill_scratch *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory for the prefill scratch");
  }
  s->rows = rows;
  s->one_term = atlas_decoder_prefill_one_term(m->kv->dtype);
  atlas_status status =
      s->one_term ? probe_matmul(m->backend, &s->matmul) : ATLAS_OK;
  if (status != ATLAS_OK) {
    free(s);
    return status;
  }
  status = atlas_teardown_register(m->teardown, "prefill_scratch",
                                   release_prefill, s);
  if (status != ATLAS_OK) {
    atlas_status_free(release_prefill(s));
    return status;
  }
  m->prefill = s;  // its pieces come from atlas_decoder_prefill_take
  return ATLAS_OK;
}
