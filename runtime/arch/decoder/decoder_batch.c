// The batch step of the Llama row (arch.h, forward_batch): many sequences'
// new tokens as the rows of one prompt-style pass, their keys and values in
// the paged pool. Each layer is the prompt chunk's layer (decoder_prefill.c)
// with RoPE, the store and the attention of the paged kernels; the logits
// of each sequence's last row come from one lm_head product per 16 rows.
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/arch/decoder/decoder_prefill.h"

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// Sequences one step takes (the scheduler's cap on running ones is below).
enum { kMaxSeqs = 256, kMinBlockTokens = 1 };

// Teardown resource "batch_scratch": the step's device arrays and the paged
// kernels, made at the first batch step (a model that never batches pays
// nothing) and released before the buffers.
typedef struct atlas_decoder_batch_scratch {
  atlas_backend *backend;
  size_t rows, seqs, stride;
  uint32_t *d_pos, *d_slots, *d_row_seq, *d_tables, *d_last, *d_ids;
  // Every sequence's logits at once: one lm_head product a step (16 rows
  // at a time read the head 16 times over at 256 sequences).
  float *d_logits;
  uint32_t *h_ids;
  atlas_decoder_paged paged;
  const atlas_kernel *gather, *argmax;
} llama_batch_scratch;

static atlas_dim3 d3(uint32_t x, uint32_t y) {
  return (atlas_dim3){x ? x : 1, y ? y : 1, 1};
}
static uint32_t blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

void atlas_decoder_kv_shape(const atlas_decoder_model *m,
                            atlas_arch_kv_shape *out) {
  const atlas_decoder_config *c = &m->config;
  out->layers = c->num_hidden_layers;
  out->kv_dim = c->num_key_value_heads * c->head_dim;
  out->dtype = m->kv->dtype;
}

// Whether RoPE's frequencies depend on the sequence's length (dynamic
// RoPE): then one step takes one sequence.
static bool rope_by_length(const atlas_decoder_model *m) {
  return m->rope_seq_len != 0;
}

void atlas_decoder_batch_limits(const atlas_decoder_model *m,
                                uint32_t block_tokens,
                                atlas_arch_batch_limits *out) {
  memset(out, 0, sizeof(*out));
  // Quantized projections need nothing of their own here: the layer is the
  // prompt chunk's, whose products go through quant_linear (weight-only, f32
  // rows in and out, no per-call scratch).
  if (m->prefill == NULL || block_tokens < kMinBlockTokens ||
      m->config.head_dim > ATLAS_DECODER_PAGED_MAX_HEAD_DIM ||
      m->config.num_attention_heads / m->config.num_key_value_heads >
          ATLAS_DECODER_PAGED_MAX_GROUP) {
    return;  // no batch step for this model (rows 0)
  }
  out->rows = (size_t)m->prefill->rows;
  out->seqs = rope_by_length(m) ? 1 : kMaxSeqs;
  if (out->seqs > out->rows) out->seqs = out->rows;
  out->table_stride = (size_t)((m->max_seq + block_tokens - 1) / block_tokens);
}

static atlas_status scratch_release(void *p) {
  llama_batch_scratch *s = p;
  atlas_status status = ATLAS_OK;
  uint32_t *ptrs[] = {s->d_pos,    s->d_slots, s->d_row_seq,
                      s->d_tables, s->d_last,  s->d_ids};
  for (size_t i = 0; i < COUNT(ptrs); ++i) {
    if (ptrs[i] != NULL) {
      status =
          atlas_status_join(status, atlas_backend_free(s->backend, ptrs[i]));
    }
  }
  if (s->d_logits != NULL) {
    status =
        atlas_status_join(status, atlas_backend_free(s->backend, s->d_logits));
  }
  free(s->h_ids);
  free(s);
  return status;
}

static atlas_status resolve(const atlas_decoder_model *m,
                            llama_batch_scratch *s) {
  const atlas_forward_ctx *ctx = &m->ctx.core;
  const char *mod = ATLAS_DECODER_PAGED_MODULE;
  static const char *const kTypes[ATLAS_DECODER_W_COUNT] = {"f32", "f16",
                                                            "bf16"};
  ATLAS_RETURN_IF_ERROR(
      atlas_forward_kernel(ctx, mod, "rope_rows_at", &s->paged.rope_at));
  ATLAS_RETURN_IF_ERROR(
      atlas_forward_kernel(ctx, mod, "gather_rows", &s->gather));
  ATLAS_RETURN_IF_ERROR(
      atlas_forward_kernel(ctx, mod, "argmax_rows", &s->argmax));
  for (int t = 0; t < ATLAS_DECODER_W_COUNT; ++t) {
    char name[64];
    snprintf(name, sizeof(name), "kv_store_slots_%s", kTypes[t]);
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, mod, name, &s->paged.store[t]));
    snprintf(name, sizeof(name), "attention_paged_%s", kTypes[t]);
    ATLAS_RETURN_IF_ERROR(
        atlas_forward_kernel(ctx, mod, name, &s->paged.attention[t]));
  }
  return ATLAS_OK;
}

static atlas_status scratch_make(atlas_decoder_model *m, size_t stride,
                                 llama_batch_scratch **out) {
  llama_batch_scratch *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no host memory for the batch scratch");
  }
  s->backend = m->backend;
  s->rows = (size_t)m->prefill->rows;
  s->seqs = s->rows < kMaxSeqs ? s->rows : kMaxSeqs;
  s->stride = stride;
  s->h_ids = malloc((size_t)2 * kMaxSeqs * sizeof(uint32_t));
  atlas_status st = s->h_ids == NULL
                        ? atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                            "no host memory for the batch ids")
                        : resolve(m, s);
  size_t r4 = s->rows * sizeof(uint32_t);
  if (st == ATLAS_OK)
    st = atlas_backend_alloc(m->backend, r4, (void **)&s->d_pos);
  if (st == ATLAS_OK) {
    st = atlas_backend_alloc(m->backend, r4, (void **)&s->d_slots);
  }
  if (st == ATLAS_OK) {
    st = atlas_backend_alloc(m->backend, r4, (void **)&s->d_row_seq);
  }
  if (st == ATLAS_OK) {
    st = atlas_backend_alloc(m->backend, kMaxSeqs * stride * sizeof(uint32_t),
                             (void **)&s->d_tables);
  }
  if (st == ATLAS_OK) {
    st = atlas_backend_alloc(m->backend, kMaxSeqs * sizeof(uint32_t),
                             (void **)&s->d_last);
  }
  if (st == ATLAS_OK) {
    st =
        atlas_backend_alloc(m->backend, (size_t)2 * kMaxSeqs * sizeof(uint32_t),
                            (void **)&s->d_ids);
  }
  if (st == ATLAS_OK) {
    st = atlas_backend_alloc(
        m->backend, s->seqs * (size_t)m->config.vocab_size * sizeof(float),
        (void **)&s->d_logits);
  }
  if (st == ATLAS_OK) {
    st = atlas_teardown_register(m->teardown, "batch_scratch", scratch_release,
                                 s);
  }
  if (st != ATLAS_OK) {
    atlas_status_free(scratch_release(s));
    return atlas_status_annotate(st, "making the batch step's scratch");
  }
  *out = s;
  return ATLAS_OK;
}

static atlas_status check_batch(const atlas_decoder_model *m,
                                const atlas_arch_batch *b,
                                const atlas_arch_batch_limits *lim) {
  if (lim->rows == 0) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "this model has no batch step (no prompt "
                             "scratch, or head_dim %lld above %d)",
                             (long long)m->config.head_dim,
                             ATLAS_DECODER_PAGED_MAX_HEAD_DIM);
  }
  if (b->rows == 0 || b->rows > lim->rows || b->seqs == 0 ||
      b->seqs > lim->seqs || b->table_stride > lim->table_stride) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step of %zu rows, %zu sequences, %u "
                             "table entries a sequence: at most %zu, %zu, %zu",
                             b->rows, b->seqs, b->table_stride, lim->rows,
                             lim->seqs, lim->table_stride);
  }
  if (b->kv == NULL || b->kv->dtype != m->kv->dtype) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step: the KV pool's type differs from "
                             "the model's KV type");
  }
  for (size_t r = 0; r < b->rows; ++r) {
    if ((int64_t)b->tokens[r] >= m->config.vocab_size ||
        (int64_t)b->positions[r] >= m->max_seq || b->row_seq[r] >= b->seqs) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "batch row %zu: token %u, position %u, "
                               "sequence %u (vocabulary %lld, positions "
                               "%lld, %zu sequences)",
                               r, b->tokens[r], b->positions[r], b->row_seq[r],
                               (long long)m->config.vocab_size,
                               (long long)m->max_seq, b->seqs);
    }
  }
  for (size_t i = 0; i < b->seqs; ++i) {
    if (b->last_row[i] >= b->rows || b->row_seq[b->last_row[i]] != i) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "batch sequence %zu: last row %u is not one "
                               "of its rows",
                               i, b->last_row[i]);
    }
  }
  return ATLAS_OK;
}

// Final norm of each sequence's last row, then their logits in one lm_head
// product: to the host, and/or their argmax on the device.
static atlas_status heads(atlas_decoder_model *m, llama_batch_scratch *bs,
                          size_t seqs, float *out_logits, uint32_t *out_ids) {
  const atlas_decoder_config *c = &m->config;
  atlas_decoder_prefill_scratch *s = m->prefill;
  const atlas_decoder_ctx *ctx = &m->ctx;
  uint32_t dim = (uint32_t)c->hidden_size;
  size_t vocab = (size_t)c->vocab_size;
  atlas_arg g[] = {P(s->xb), P(s->x), P(bs->d_last), U((uint32_t)seqs), U(dim)};
  ATLAS_RETURN_IF_ERROR(atlas_forward_launch(
      &ctx->core, bs->gather, d3(blocks(dim, 256), (uint32_t)seqs), d3(256, 1),
      g, COUNT(g)));
  atlas_arg nrm[] = {P(s->x),
                     P(s->xb),
                     P(m->weights->final_norm),
                     U(dim),
                     ATLAS_ARG_F32((float)c->rms_norm_eps),
                     U((uint32_t)seqs)};
  ATLAS_RETURN_IF_ERROR(atlas_forward_launch(&ctx->core, ctx->ops.rmsnorm_rows,
                                             d3((uint32_t)seqs, 1), d3(256, 1),
                                             nrm, COUNT(nrm)));
  size_t chunk = bs->seqs;
  for (size_t i = 0; i < seqs; i += chunk) {
    uint32_t rows = (uint32_t)(seqs - i < chunk ? seqs - i : chunk);
    ATLAS_RETURN_IF_ERROR(atlas_decoder_prefill_gemm(
        m, bs->d_logits, &m->weights->lm_head, s->x + i * dim, rows,
        c->vocab_size, c->hidden_size));
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_softcap(&m->ctx, bs->d_logits, (uint64_t)rows * vocab));
    if (out_ids != NULL) {
      atlas_arg a[] = {P(bs->d_ids + 2 * i), P(bs->d_logits), U(rows),
                       U((uint32_t)vocab)};
      ATLAS_RETURN_IF_ERROR(atlas_forward_launch(
          &ctx->core, bs->argmax, d3(rows, 1), d3(256, 1), a, COUNT(a)));
    }
    if (out_logits != NULL) {
      ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
          m->backend, out_logits + i * vocab, bs->d_logits,
          rows * vocab * sizeof(float), ctx->core.stream));
    }
  }
  if (out_ids == NULL) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
      m->backend, bs->h_ids, bs->d_ids, 2 * seqs * sizeof(uint32_t),
      ctx->core.stream));
  for (size_t i = 0; i < seqs; ++i) {
    if (bs->h_ids[2 * i + 1] != UINT32_MAX) {
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "batch step: sequence %zu's logit %u is not "
                               "finite",
                               i, bs->h_ids[2 * i + 1]);
    }
    out_ids[i] = bs->h_ids[2 * i];
  }
  return ATLAS_OK;
}

// The batch scratch of the model, made at its first step.
static atlas_status scratch_of(atlas_decoder_model *m, size_t stride,
                               llama_batch_scratch **out) {
  if (m->batch == NULL) {
    ATLAS_RETURN_IF_ERROR(scratch_make(m, stride, &m->batch));
  }
  *out = m->batch;
  return ATLAS_OK;
}

atlas_status atlas_decoder_forward_batch(atlas_decoder_model *m,
                                         const atlas_arch_batch *b,
                                         float *out_logits, uint32_t *out_ids) {
  if (m->ctx.shard != NULL &&
      (out_ids != NULL || m->ctx.shard->owned_rows == NULL)) {
    // A rank's logits are its vocabulary slice: the driver
    // (tensor_parallel) puts them together and picks the ids.
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tensor-parallel rank %d: a batch step takes "
                             "the rows' owners and gives no ids",
                             m->ctx.shard->rank);
  }
  if (b->kv == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step without a KV pool");
  }
  atlas_arch_batch_limits lim;
  atlas_decoder_batch_limits(m, b->kv ? b->kv->block_tokens : 0, &lim);
  ATLAS_RETURN_IF_ERROR(check_batch(m, b, &lim));
  // RoPE's table for the longest sequence (static RoPE: the same for all).
  uint32_t longest = 0;
  for (size_t r = 0; r < b->rows; ++r) {
    if (b->positions[r] + 1 > longest) longest = b->positions[r] + 1;
  }
  ATLAS_RETURN_IF_ERROR(atlas_decoder_rope_update(m, longest));
  if (rope_by_length(m) && b->seqs > 1) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "dynamic RoPE scales by each sequence's length: "
                             "a batch step takes one sequence of this model");
  }
  llama_batch_scratch *bs = NULL;
  ATLAS_RETURN_IF_ERROR(scratch_of(m, lim.table_stride, &bs));
  atlas_decoder_prefill_scratch *s = m->prefill;
  size_t r4 = b->rows * sizeof(uint32_t);
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d(m->backend, s->tokens, b->tokens, r4));
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d(m->backend, bs->d_pos, b->positions, r4));
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d(m->backend, bs->d_slots, b->slots, r4));
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d(m->backend, bs->d_row_seq, b->row_seq, r4));
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d(m->backend, bs->d_tables, b->tables,
                        b->seqs * b->table_stride * sizeof(uint32_t)));
  ATLAS_RETURN_IF_ERROR(atlas_backend_h2d(m->backend, bs->d_last, b->last_row,
                                          b->seqs * sizeof(uint32_t)));
  atlas_decoder_paged pg = bs->paged;
  pg.keys = b->kv->keys;
  pg.values = b->kv->values;
  pg.layer_elements = b->kv->layer_elements;
  pg.bt = b->kv->block_tokens;
  pg.stride = b->table_stride;
  pg.pos = bs->d_pos;
  pg.slots = bs->d_slots;
  pg.row_seq = bs->d_row_seq;
  pg.tables = bs->d_tables;
  const atlas_decoder_config *c = &m->config;
  const atlas_decoder_weights *w = m->weights;
  uint32_t dim = (uint32_t)c->hidden_size;
  uint32_t rows = (uint32_t)b->rows;
  atlas_arg e[] = {P(s->x), P(w->embed.data), P(s->tokens), U(rows), U(dim)};
  ATLAS_RETURN_IF_ERROR(atlas_forward_launch(
      &m->ctx.core,
      m->ctx.ops.embed_rows[atlas_decoder_wtype_of(w->embed.dtype)],
      d3(blocks(dim, 256), rows), d3(256, 1), e, COUNT(e)));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_scale(&m->ctx, s->x, (uint64_t)rows * dim));
  // A rank: the rows whose token another rank holds come from it.
  ATLAS_RETURN_IF_ERROR(atlas_decoder_shard_embed_rows(
      m->ctx.shard, m->backend, m->ctx.core.stream, s->x, 0, rows, dim));
  for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
    ATLAS_RETURN_IF_ERROR(atlas_decoder_prefill_layer(m, l, rows, &pg),
                          "batch step, layer %lld", (long long)l);
  }
  return heads(m, bs, b->seqs, out_logits, out_ids);
}
