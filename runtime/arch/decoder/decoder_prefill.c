// Batched prefill: a prompt chunk of up to `rows` tokens goes through each
// layer in one pass (matrix-matrix products, RoPE over all its positions,
// causal attention over the cache), dispatched through the model's
// ForwardContext like the one-token path, so the host backend runs the same
// code as the reference.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/arch/decoder/decoder_prefill.h"

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define F(x) ATLAS_ARG_F32(x)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// Rows of a chunk when the load options leave it to us.
enum { kDefaultRows = 2048 };
// 128 x 128 tiles of a product from which the 128-row gemm pays (about one
// wave on a 132-SM H100/H200).
enum { kTall = 128 };

static atlas_dim3 d3(uint32_t x, uint32_t y) {
  return (atlas_dim3){x ? x : 1, y ? y : 1, 1};
}
static uint32_t blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

// The batched path implements every feature of the one-token layer: RoPE
// from the model's own inv_freq table, rot_dim and attention_factor (every
// RoPE type; dynamic RoPE at the chunk's seq_len, see atlas_decoder_prefill),
// attention/MLP biases, q/k norms and per-layer sliding windows. Only shapes
// the batched kernels cannot hold fall back to the one-token path. A new
// feature of the one-token layer must be added to layer() below, or refused
// here, so that the two paths never compute different things.
int64_t atlas_decoder_prefill_rows(const atlas_decoder_config *c,
                                   int64_t max_seq, int64_t requested) {
  if (requested < 0) return 0;
  if (c->head_dim > ATLAS_DECODER_BATCH_MAX_HEAD_DIM || c->head_dim % 2 != 0 ||
      c->num_attention_heads / c->num_key_value_heads >
          ATLAS_DECODER_BATCH_MAX_GROUP) {
    return 0;  // the one-token kernels serve these shapes
  }
  int64_t rows = requested > 0 ? requested : kDefaultRows;
  return rows < max_seq ? rows : max_seq;
}

// ---- dispatch helpers ----------------------------------------------------------

static atlas_status launch(const atlas_decoder_ctx *ctx, const atlas_kernel *k,
                           atlas_dim3 grid, uint32_t block,
                           const atlas_arg *args, size_t count) {
  return atlas_forward_launch(&ctx->core, k, grid, d3(block, 1), args, count);
}

// The 16-bit mode's product: x (m x k, f32) rounded to the weights' type
// into s->x16 (unless `rounded`: the previous product's input, already
// there), then one term, through the backend's matmul or gemm16_*.
// ATLAS_MATMUL_ACCUMULATE (out += the product) only through the matmul.
static atlas_status gemm_one_term(const atlas_decoder_model *mdl, float *out,
                                  const atlas_decoder_matrix *w, const float *x,
                                  uint32_t m, int64_t n, int64_t k,
                                  bool rounded, atlas_matmul_out mode) {
  const atlas_decoder_ctx *ctx = &mdl->ctx;
  atlas_decoder_prefill_scratch *s = mdl->prefill;
  atlas_decoder_wtype t = atlas_decoder_wtype_of(w->dtype);
  if (!rounded || s->x16_type != t) {
    s->x16_type = ATLAS_DECODER_W_F32;  // nothing valid until the launch is in
    uint64_t count = (uint64_t)m * (uint64_t)k;
    atlas_arg args[] = {P(s->x16), P(x), U((uint32_t)count)};
    ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.round_rows[t],
                                 d3(blocks(count, 256), 1), 256, args,
                                 COUNT(args)));
    s->x16_type = t;
  }
  if (s->matmul) {
    return atlas_backend_matmul(
        ctx->core.backend, ctx->core.stream, out, w->data, s->x16,
        t == ATLAS_DECODER_W_F16 ? ATLAS_MATMUL_F16 : ATLAS_MATMUL_BF16, m,
        (size_t)n, (size_t)k, mode);
  }
  if (mode != ATLAS_MATMUL_WRITE) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "an accumulating product without the backend's "
                             "matmul (the gemm16 kernels overwrite)");
  }
  atlas_arg args[] = {P(out), P(w->data),     P(s->x16),
                      U(m),   U((uint32_t)n), U((uint32_t)k)};
  if ((uint64_t)blocks((uint64_t)n, 128) * blocks(m, 128) >= kTall) {
    return launch(ctx, ctx->ops.gemm16_m128[t],
                  d3(blocks((uint64_t)n, 128), blocks(m, 128)), 256, args,
                  COUNT(args));
  }
  return launch(ctx, ctx->ops.gemm16[t],
                d3(blocks((uint64_t)n, 128), blocks(m, 64)), 256, args,
                COUNT(args));
}

// out (m x n) = x (m x k, f32 rows) times w^T, in the precision
// atlas_decoder_prefill_one_term chose. `same_x`: x is the previous product's
// input, unchanged since (q, k, v; gate, up), so the 16-bit mode need not
// round it again.
static atlas_status gemm_x(const atlas_decoder_model *mdl, float *out,
                           const atlas_decoder_matrix *w, const float *x,
                           uint32_t m, int64_t n, int64_t k, bool same_x) {
  const atlas_decoder_ctx *ctx = &mdl->ctx;
  if (w->quant != NULL) {  // f32 rows (its dtype reads F32) through "quant"
    return atlas_quant_linear_matmul(ctx->core.backend, &ctx->quant,
                                     ctx->core.stream, w->quant, x, m, out,
                                     false);
  }
  atlas_decoder_wtype t = atlas_decoder_wtype_of(w->dtype);
  if (mdl->prefill->one_term && t != ATLAS_DECODER_W_F32) {
    return gemm_one_term(mdl, out, w, x, m, n, k, same_x, ATLAS_MATMUL_WRITE);
  }
  mdl->prefill->x16_type = ATLAS_DECODER_W_F32;  // the next product rounds
  atlas_arg args[] = {P(out), P(w->data),     P(x),
                      U(m),   U((uint32_t)n), U((uint32_t)k)};
  if (t == ATLAS_DECODER_W_F32) {
    return launch(ctx, ctx->ops.gemm[t],
                  d3(blocks((uint64_t)n, 64), blocks(m, 64)), 256, args,
                  COUNT(args));
  }
  if ((uint64_t)blocks((uint64_t)n, 128) * blocks(m, 128) >= kTall) {
    // Enough 128 x 128 tiles to fill a large GPU: the taller tile reuses
    // each weight tile twice as often.
    return launch(ctx, ctx->ops.gemm_m128[t],
                  d3(blocks((uint64_t)n, 128), blocks(m, 128)), 256, args,
                  COUNT(args));
  }
  return launch(ctx, ctx->ops.gemm[t],
                d3(blocks((uint64_t)n, 128), blocks(m, 64)), 256, args,
                COUNT(args));
}

static atlas_status gemm(const atlas_decoder_model *mdl, float *out,
                         const atlas_decoder_matrix *w, const float *x,
                         uint32_t m, int64_t n, int64_t k) {
  return gemm_x(mdl, out, w, x, m, n, k, false);
}

// As gemm, with the previous product's input x (see gemm_x); rounds it
// anyway when the previous product left no rounding of this one's type.
static atlas_status gemm_same_x(const atlas_decoder_model *mdl, float *out,
                                const atlas_decoder_matrix *w, const float *x,
                                uint32_t m, int64_t n, int64_t k) {
  return gemm_x(mdl, out, w, x, m, n, k, true);
}

static atlas_status rmsnorm_rows(const atlas_decoder_ctx *ctx, float *out,
                                 const float *x, const float *w, uint32_t n) {
  atlas_arg args[] = {P(out),
                      P(x),
                      P(w),
                      U((uint32_t)ctx->config->hidden_size),
                      F((float)ctx->config->rms_norm_eps),
                      U(n)};
  return launch(ctx, ctx->ops.rmsnorm_rows, d3(n, 1), 256, args, COUNT(args));
}

// The 16-bit weights' type every one of `count` products shares, or F32
// (one-term mode off, F32 weights, or types that differ).
static atlas_decoder_wtype shared_16bit(const atlas_decoder_prefill_scratch *s,
                                        const atlas_decoder_matrix *const *w,
                                        size_t count) {
  if (!s->one_term) return ATLAS_DECODER_W_F32;
  atlas_decoder_wtype t = atlas_decoder_wtype_of(w[0]->dtype);
  for (size_t i = 1; i < count; ++i) {
    if (atlas_decoder_wtype_of(w[i]->dtype) != t) return ATLAS_DECODER_W_F32;
  }
  return t;
}

// The rmsnorm of s->x before `count` products that share it (q, k, v; gate,
// up), each then made with gemm_same_x. When they take one 16-bit input
// type (the 16-bit mode), the normalised rows go straight into s->x16,
// rounded as gemm_one_term would round them (bit for bit: the same f32
// values, rounded to nearest even), and s->xb is left unwritten: those
// products read x16 only, and nothing else reads this norm's rows. Else f32
// rows into s->xb, and the first product rounds them if it needs to.
static atlas_status norm_for(const atlas_decoder_model *m, const float *norm_w,
                             const atlas_decoder_matrix *const *w, size_t count,
                             uint32_t n) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  atlas_decoder_prefill_scratch *s = m->prefill;
  atlas_decoder_wtype t = shared_16bit(s, w, count);
  s->x16_type = ATLAS_DECODER_W_F32;  // nothing valid until the launch is in
  if (t == ATLAS_DECODER_W_F32)
    return rmsnorm_rows(ctx, s->xb, s->x, norm_w, n);
  atlas_arg args[] = {P(s->x16),
                      P(s->x),
                      P(norm_w),
                      U((uint32_t)ctx->config->hidden_size),
                      F((float)ctx->config->rms_norm_eps),
                      U(n)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.rmsnorm_rows16[t], d3(n, 1), 256,
                               args, COUNT(args)));
  s->x16_type = t;
  return ATLAS_OK;
}

static atlas_status elementwise(const atlas_decoder_ctx *ctx,
                                const atlas_kernel *k, float *a, const float *b,
                                uint64_t n) {
  atlas_arg args[] = {P(a), P(b), U((uint32_t)n)};
  return launch(ctx, k, d3(blocks(n, 256), 1), 256, args, COUNT(args));
}

// s->hb = silu(s->hb) * s->hb2 before the down product `w_down`, made
// with gemm_same_x. In the 16-bit mode the values go straight into s->x16,
// rounded to the weights' type as gemm_one_term would round them (bit for
// bit: the same f32 expression, rounded to nearest even); s->hb is then
// left as it was (the down product reads x16 only).
static atlas_status silu_mul_for(const atlas_decoder_model *m,
                                 const atlas_decoder_matrix *w_down,
                                 uint64_t count) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  atlas_decoder_prefill_scratch *s = m->prefill;
  atlas_decoder_wtype t = shared_16bit(s, &w_down, 1);
  s->x16_type = ATLAS_DECODER_W_F32;
  // The descriptor's activation: GELU's kernels where it asks for them.
  bool gelu = ctx->ops.gelu_mul != NULL;
  if (t == ATLAS_DECODER_W_F32) {
    return elementwise(ctx, gelu ? ctx->ops.gelu_mul : ctx->ops.silu_mul, s->hb,
                       s->hb2, count);
  }
  atlas_arg args[] = {P(s->x16), P(s->hb), P(s->hb2), U((uint32_t)count)};
  ATLAS_RETURN_IF_ERROR(launch(
      ctx, gelu ? ctx->ops.gelu_mul_round[t] : ctx->ops.silu_mul_round[t],
      d3(blocks(count, 256), 1), 256, args, COUNT(args)));
  s->x16_type = t;
  return ATLAS_OK;
}

// The model's RoPE (its inv_freq table, rot_dim and attention_factor, as the
// one-token rope kernel gets them) over n rows at positions pos0...
static atlas_status rope_rows(const atlas_decoder_model *m, int64_t l, float *x,
                              uint32_t heads, uint32_t pos0, uint32_t n,
                              uint32_t row_stride) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  uint32_t hd = (uint32_t)ctx->config->head_dim;
  uint32_t rot = (uint32_t)m->rot_dim;
  float factor = 1;
  const float *inv_freq = atlas_decoder_rope_table(m, l, &factor);
  atlas_arg args[] = {P(x),    P(inv_freq), U(heads),  U(hd),        U(rot),
                      U(pos0), U(n),        F(factor), U(row_stride)};
  return launch(ctx, ctx->ops.rope_rows,
                d3(blocks((uint64_t)heads * (rot / 2), 256), n), 256, args,
                COUNT(args));
}

// x[r] += bias for each of n rows of `cols` (stride `cols`), one add_bias
// launch per row: the one-token kernel, so the sums are the same. (A
// broadcast kernel would save the launches.)
static atlas_status add_bias_rows(const atlas_decoder_ctx *ctx, float *x,
                                  const float *bias, uint32_t n, int64_t cols) {
  if (bias == NULL) return ATLAS_OK;
  for (uint32_t r = 0; r < n; ++r) {
    ATLAS_RETURN_IF_ERROR(elementwise(ctx, ctx->ops.add_bias,
                                      x + (size_t)r * (size_t)cols, bias,
                                      (uint64_t)cols));
  }
  return ATLAS_OK;
}

// Qwen3's q_norm / k_norm over n contiguous rows of `heads` heads: the rows
// are n * heads heads in a row for the one-token head_rmsnorm kernel.
static atlas_status head_norm_rows(const atlas_decoder_ctx *ctx, float *x,
                                   const float *w, uint32_t n, uint32_t heads) {
  if (w == NULL) return ATLAS_OK;
  const atlas_decoder_config *c = ctx->config;
  uint32_t total = n * heads;
  atlas_arg args[] = {P(x), P(w), U(total), U((uint32_t)c->head_dim),
                      F((float)c->rms_norm_eps)};
  return launch(ctx, ctx->ops.head_rmsnorm, d3(total, 1), 32, args,
                COUNT(args));
}

// s->x += w h, the residual connection after the o and down products (h:
// n rows of k; `same_x` as gemm_x). Through the backend's matmul (the 16-bit
// mode: cuBLASLt on CUDA, or the host backend) and without a bias, the
// product is added to x as it is made (ATLAS_MATMUL_ACCUMULATE): no f32
// rows in s->xb and no separate add pass. On the host backend that is the
// same f32 addition, x + (w h), bit for bit; cuBLASLt's epilogue (beta = 1)
// may fold x into its partial sums in another order (split-k), which
// changes only the summation order of this one f32 addition. With a bias,
// or without the matmul (the gemm16 kernels; the f32 mode), the order stays
// x + ((w h) + bias): the product into s->xb, the bias, then the add.
static atlas_status add_product(const atlas_decoder_model *m,
                                const atlas_decoder_matrix *w, const float *h,
                                const float *bias, uint32_t n, int64_t k,
                                bool same_x) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  atlas_decoder_prefill_scratch *s = m->prefill;
  int64_t hidden = ctx->config->hidden_size;
  if (w->quant != NULL) {  // x += W h (the accumulate flag), then the bias
    ATLAS_RETURN_IF_ERROR(atlas_quant_linear_matmul(
        ctx->core.backend, &ctx->quant, ctx->core.stream, w->quant, h, n, s->x,
        true));
    return add_bias_rows(ctx, s->x, bias, n, hidden);
  }
  atlas_decoder_wtype t = atlas_decoder_wtype_of(w->dtype);
  if (s->matmul && s->one_term && t != ATLAS_DECODER_W_F32 && bias == NULL &&
      ctx->shard == NULL) {
    return gemm_one_term(m, s->x, w, h, n, hidden, k, same_x,
                         ATLAS_MATMUL_ACCUMULATE);
  }
  ATLAS_RETURN_IF_ERROR(gemm_x(m, s->xb, w, h, n, hidden, k, same_x));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, s->xb, bias, n, hidden));
  // A rank's rows are its part of the sum (decoder_shard.h).
  ATLAS_RETURN_IF_ERROR(atlas_decoder_shard_sum(
      ctx->shard, ctx->core.stream, s->xb, (uint64_t)n * (uint64_t)hidden));
  return elementwise(ctx, ctx->ops.add, s->x, s->xb,
                     (uint64_t)n * (uint64_t)hidden);
}

// s->x += norm(w h + bias) with a sandwich norm (Gemma), else add_product.
// The product's rows are normalised in place in s->xb.
static atlas_status add_product_normed(const atlas_decoder_model *m,
                                       const atlas_decoder_matrix *w,
                                       const float *h, const float *bias,
                                       const float *norm, uint32_t n, int64_t k,
                                       bool same_x) {
  if (norm == NULL) return add_product(m, w, h, bias, n, k, same_x);
  const atlas_decoder_ctx *ctx = &m->ctx;
  atlas_decoder_prefill_scratch *s = m->prefill;
  int64_t hidden = ctx->config->hidden_size;
  ATLAS_RETURN_IF_ERROR(gemm_x(m, s->xb, w, h, n, hidden, k, same_x));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, s->xb, bias, n, hidden));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_shard_sum(
      ctx->shard, ctx->core.stream, s->xb, (uint64_t)n * (uint64_t)hidden));
  ATLAS_RETURN_IF_ERROR(rmsnorm_rows(ctx, s->xb, s->xb, norm, n));
  return elementwise(ctx, ctx->ops.add, s->x, s->xb,
                     (uint64_t)n * (uint64_t)hidden);
}

// ---- one-token attention, split over the context (flash-decoding) ----------

atlas_status atlas_decoder_decode_attention(const atlas_decoder_model *m,
                                            int64_t l, uint32_t window,
                                            float *out, const float *q) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  uint32_t n_kv = (uint32_t)c->num_key_value_heads;
  uint32_t hd = (uint32_t)c->head_dim;
  // Sized for the longest context; the kernels read this step's position
  // from scratch->step, and splits past it return at once.
  uint32_t splits =
      (uint32_t)atlas_decoder_decode_splits(m->max_seq, c->head_dim);
  size_t layer_off = (size_t)l * (size_t)m->max_seq * n_kv * hd;
  float *part = m->prefill->part;
  const uint32_t *step = ctx->scratch->step;
  atlas_arg args[14] = {
      P(part),
      P(q),
      P(atlas_decoder_kv_layer(m->kv, m->kv->keys, layer_off)),
      P(atlas_decoder_kv_layer(m->kv, m->kv->values, layer_off)),
      U(n_heads),
      U(n_kv),
      U(hd),
      P(step),
      U(window),
      U(splits),
      P(out),
      P(m->prefill->counters)};
  size_t count = 12;
  atlas_decoder_wtype kvt = atlas_decoder_wtype_of(m->kv->dtype);
  const atlas_kernel *k = atlas_decoder_pick_attention(
      &ctx->ops, ctx->ops.decode[kvt], ctx->ops.attention_decode_ext[kvt], args,
      &count);
  return launch(ctx, k,
                d3(atlas_decoder_decode_grid_x(splits, n_heads / n_kv,
                                               ctx->decode_blocks, hd),
                   n_kv),
                ATLAS_DECODER_DECODE_THREADS, args, count);
}

// ---- the chunk -----------------------------------------------------------------

static atlas_status after_attention(atlas_decoder_model *m,
                                    const atlas_decoder_layer *L, uint32_t n);

// The paged variant's RoPE, store and attention (decoder_batch.c): rows at
// positions pg->pos of the sequences pg->row_seq, keys and values in the
// pool's slots.
static atlas_status paged_rope(const atlas_decoder_model *m,
                               const atlas_decoder_paged *pg, int64_t l,
                               float *x, uint32_t heads, uint32_t n,
                               uint32_t row_stride) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  uint32_t hd = (uint32_t)ctx->config->head_dim;
  uint32_t rot = (uint32_t)m->rot_dim;
  float factor = 1;
  const float *inv_freq = atlas_decoder_rope_table(m, l, &factor);
  atlas_arg args[] = {P(x),       P(inv_freq), U(heads),  U(hd),        U(rot),
                      P(pg->pos), U(n),        F(factor), U(row_stride)};
  return launch(ctx, pg->rope_at,
                d3(blocks((uint64_t)heads * (rot / 2), 256), n), 256, args,
                COUNT(args));
}

static atlas_status paged_attention(const atlas_decoder_model *m,
                                    const atlas_decoder_paged *pg, int64_t l,
                                    uint32_t n, float *out, const float *q,
                                    const float *k, const float *v) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  uint32_t n_kv = (uint32_t)c->num_key_value_heads;
  uint32_t hd = (uint32_t)c->head_dim, kv_dim = n_kv * hd;
  atlas_decoder_wtype kvt = atlas_decoder_wtype_of(m->kv->dtype);
  size_t off = (size_t)l * pg->layer_elements * atlas_dtype_size(m->kv->dtype);
  void *kc = (char *)pg->keys + off, *vc = (char *)pg->values + off;
  atlas_arg store[] = {P(kc), P(vc), P(k), P(v), U(kv_dim), P(pg->slots), U(n)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, pg->store[kvt],
                               d3(blocks((uint64_t)n * kv_dim, 256), 1), 256,
                               store, COUNT(store)));
  uint32_t window = (uint32_t)atlas_decoder_layer_window(c, l);
  atlas_arg att[16] = {P(out),         P(q),          P(kc),         P(vc),
                       U(n_heads),     U(n_kv),       U(hd),         P(pg->pos),
                       P(pg->row_seq), P(pg->tables), U(pg->stride), U(pg->bt),
                       U(n),           U(window)};
  size_t count = 14;
  const atlas_kernel *attend = atlas_decoder_pick_attention(
      &ctx->ops, pg->attention[kvt], ctx->ops.attention_paged_ext[kvt], att,
      &count);
  return launch(ctx, attend, d3(n_kv, n), 128, att, count);
}

static atlas_status layer(atlas_decoder_model *m, const atlas_decoder_layer *L,
                          int64_t l, uint32_t pos0, uint32_t n,
                          const atlas_decoder_paged *pg) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  atlas_decoder_prefill_scratch *s = m->prefill;
  int64_t hidden = c->hidden_size, hd = c->head_dim;
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  uint32_t n_kv = (uint32_t)c->num_key_value_heads;
  int64_t q_dim = (int64_t)n_heads * hd, kv_dim = (int64_t)n_kv * hd;
  size_t layer_off = (size_t)(l * m->max_seq * kv_dim);
  void *kc = atlas_decoder_kv_layer(m->kv, m->kv->keys, layer_off);
  void *vc = atlas_decoder_kv_layer(m->kv, m->kv->values, layer_off);
  // Keys and values of the chunk in f32 rows, stored into their cache rows
  // (in the cache's type) once RoPE has turned the keys.
  float *k = s->k, *v = s->v;

  // Step for step the one-token layer (decoder_forward.c), over n rows.
  const atlas_decoder_matrix *const qkv[] = {&L->wq, &L->wk, &L->wv};
  ATLAS_RETURN_IF_ERROR(norm_for(m, L->attn_norm, qkv, COUNT(qkv), n));
  ATLAS_RETURN_IF_ERROR(gemm_same_x(m, s->q, &L->wq, s->xb, n, q_dim, hidden));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, s->q, L->q_bias, n, q_dim));
  ATLAS_RETURN_IF_ERROR(gemm_same_x(m, k, &L->wk, s->xb, n, kv_dim, hidden));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, k, L->k_bias, n, kv_dim));
  ATLAS_RETURN_IF_ERROR(gemm_same_x(m, v, &L->wv, s->xb, n, kv_dim, hidden));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, v, L->v_bias, n, kv_dim));
  ATLAS_RETURN_IF_ERROR(head_norm_rows(ctx, s->q, L->q_norm, n, n_heads));
  ATLAS_RETURN_IF_ERROR(head_norm_rows(ctx, k, L->k_norm, n, n_kv));
  if (pg != NULL) {
    ATLAS_RETURN_IF_ERROR(
        paged_rope(m, pg, l, s->q, n_heads, n, (uint32_t)q_dim));
    ATLAS_RETURN_IF_ERROR(paged_rope(m, pg, l, k, n_kv, n, (uint32_t)kv_dim));
    ATLAS_RETURN_IF_ERROR(paged_attention(m, pg, l, n, s->xb2, s->q, k, v));
    return after_attention(m, L, n);
  }
  ATLAS_RETURN_IF_ERROR(
      rope_rows(m, l, s->q, n_heads, pos0, n, (uint32_t)q_dim));
  ATLAS_RETURN_IF_ERROR(rope_rows(m, l, k, n_kv, pos0, n, (uint32_t)kv_dim));
  atlas_decoder_wtype kvt = atlas_decoder_wtype_of(m->kv->dtype);
  atlas_arg store[] = {P(kc),   P(vc), P(k), P(v), U((uint32_t)kv_dim),
                       U(pos0), U(n)};
  ATLAS_RETURN_IF_ERROR(
      launch(ctx, ctx->ops.kv_store_rows[kvt],
             d3(blocks((uint64_t)n * (uint64_t)kv_dim, 256), 1), 256, store,
             COUNT(store)));
  uint32_t group = n_heads / n_kv;
  uint32_t window = (uint32_t)atlas_decoder_layer_window(c, l);
  atlas_arg att[12] = {P(s->xb2), P(s->q), P(kc),   P(vc), U(n_heads),
                       U(n_kv),   U(hd),   U(pos0), U(n),  U(window)};
  size_t count = 10;
  const atlas_kernel *attend = atlas_decoder_pick_attention(
      &ctx->ops, ctx->ops.attention_prefill[kvt],
      ctx->ops.attention_prefill_ext[kvt], att, &count);
  uint32_t rows = atlas_decoder_prefill_attention_rows(
      kvt != ATLAS_DECODER_W_F32, (uint32_t)hd);
  ATLAS_RETURN_IF_ERROR(launch(ctx, attend,
                               d3(blocks((uint64_t)n * group, rows) * n_kv, 1),
                               128, att, count));
  return after_attention(m, L, n);
}

// The layer from the attention's output (s->xb2) on: the o product and the
// residual, then the MLP.
static atlas_status after_attention(atlas_decoder_model *m,
                                    const atlas_decoder_layer *L, uint32_t n) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  atlas_decoder_prefill_scratch *s = m->prefill;
  int64_t hidden = c->hidden_size;
  int64_t q_dim = c->num_attention_heads * c->head_dim;
  ATLAS_RETURN_IF_ERROR(add_product_normed(m, &L->wo, s->xb2, L->o_bias,
                                           L->attn_out_norm, n, q_dim, false));
  if (L->moe.router.data != NULL) return atlas_decoder_moe_rows(m, L, n);
  const atlas_decoder_matrix *const gate_up[] = {&L->w_gate, &L->w_up};
  ATLAS_RETURN_IF_ERROR(norm_for(m, L->ffn_norm, gate_up, COUNT(gate_up), n));
  int64_t inter = c->intermediate_size;
  ATLAS_RETURN_IF_ERROR(
      gemm_same_x(m, s->hb, &L->w_gate, s->xb, n, inter, hidden));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, s->hb, L->gate_bias, n, inter));
  ATLAS_RETURN_IF_ERROR(
      gemm_same_x(m, s->hb2, &L->w_up, s->xb, n, inter, hidden));
  ATLAS_RETURN_IF_ERROR(add_bias_rows(ctx, s->hb2, L->up_bias, n, inter));
  ATLAS_RETURN_IF_ERROR(
      silu_mul_for(m, &L->w_down, (uint64_t)n * (uint64_t)inter));
  return add_product_normed(m, &L->w_down, s->hb, L->down_bias, L->ffn_out_norm,
                            n, inter, true);
}

// Logits of rows [first, first + count) of the chunk's final hidden states
// (already normalised in s->xb), ATLAS_DECODER_PREFILL_LOGIT_ROWS at a time.
static atlas_status logits(atlas_decoder_model *m, uint32_t first,
                           uint32_t count, float *host, bool last_chunk,
                           float *out_last, atlas_logits_sink sink,
                           void *sink_ctx) {
  const atlas_decoder_config *c = &m->config;
  atlas_decoder_prefill_scratch *s = m->prefill;
  size_t vocab = (size_t)c->vocab_size;
  for (uint32_t r = 0; r < count; r += ATLAS_DECODER_PREFILL_LOGIT_ROWS) {
    uint32_t rows = count - r < ATLAS_DECODER_PREFILL_LOGIT_ROWS
                        ? count - r
                        : ATLAS_DECODER_PREFILL_LOGIT_ROWS;
    const float *x = s->xb + (size_t)(first + r) * (size_t)c->hidden_size;
    ATLAS_RETURN_IF_ERROR(gemm(m, s->logits, &m->weights->lm_head, x, rows,
                               c->vocab_size, c->hidden_size));
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_softcap(&m->ctx, s->logits, (uint64_t)rows * vocab));
    ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
        m->backend, host, s->logits, (size_t)rows * vocab * sizeof(float),
        m->ctx.core.stream));
    for (uint32_t i = 0; i < rows; ++i) {
      if (sink != NULL) {
        ATLAS_RETURN_IF_ERROR(sink(sink_ctx, host + (size_t)i * vocab, vocab));
      }
    }
    bool has_last = last_chunk && r + rows == count;
    if (has_last && out_last != NULL) {
      memcpy(out_last, host + (size_t)(rows - 1) * vocab,
             vocab * sizeof(float));
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_prefill(atlas_decoder_model *m,
                                   const uint32_t *tokens, size_t n,
                                   uint32_t pos0, float *out_last_logits,
                                   atlas_logits_sink sink, void *sink_ctx) {
  const atlas_decoder_config *c = &m->config;
  atlas_decoder_prefill_scratch *s = m->prefill;
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "this model was loaded without a prefill scratch "
                             "(head_dim %lld, prefill rows option < 0)",
                             (long long)c->head_dim);
  }
  if (n == 0 || (int64_t)pos0 + (int64_t)n > m->max_seq) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "prefill of %zu tokens at position %u: the KV "
                             "cache holds %lld positions",
                             n, pos0, (long long)m->max_seq);
  }
  for (size_t i = 0; i < n; ++i) {
    if ((int64_t)tokens[i] >= c->vocab_size) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "token %u (prompt index %zu) is outside the "
                               "vocabulary (%lld ids)",
                               tokens[i], i, (long long)c->vocab_size);
    }
  }
  // RoPE as the one-token path has it in generation: dynamic RoPE scaled
  // for the whole prompt, pos0 + n (its table stays for the next steps).
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_rope_update(m, (int64_t)pos0 + (int64_t)n));
  size_t vocab = (size_t)c->vocab_size;
  float *host =
      malloc((size_t)ATLAS_DECODER_PREFILL_LOGIT_ROWS * vocab * sizeof(float));
  if (host == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "cannot allocate %d rows of %zu logits",
                             (int)ATLAS_DECODER_PREFILL_LOGIT_ROWS, vocab);
  }
  atlas_status status = ATLAS_OK;
  const atlas_decoder_weights *w = m->weights;
  for (size_t done = 0; status == ATLAS_OK && done < n;) {
    uint32_t rows =
        (uint32_t)(n - done < (size_t)s->rows ? n - done : (size_t)s->rows);
    uint32_t pos = pos0 + (uint32_t)done;
    bool last_chunk = done + rows == n;
    uint32_t dim = (uint32_t)c->hidden_size;
    status = atlas_backend_h2d(m->backend, s->tokens, tokens + done,
                               rows * sizeof(uint32_t));
    if (status == ATLAS_OK) {
      atlas_arg args[] = {P(s->x), P(w->embed.data), P(s->tokens), U(rows),
                          U(dim)};
      status =
          launch(&m->ctx,
                 m->ctx.ops.embed_rows[atlas_decoder_wtype_of(w->embed.dtype)],
                 d3(blocks(dim, 256), rows), 256, args, COUNT(args));
    }
    if (status == ATLAS_OK) {
      status = atlas_decoder_scale(&m->ctx, s->x, (uint64_t)rows * dim);
    }
    if (status == ATLAS_OK) {
      status = atlas_decoder_shard_embed_rows(
          m->ctx.shard, m->backend, m->ctx.core.stream, s->x, done, rows, dim);
    }
    for (int64_t l = 0; status == ATLAS_OK && l < c->num_hidden_layers; ++l) {
      status =
          atlas_status_annotate(layer(m, &w->layers[l], l, pos, rows, NULL),
                                "prefill, layer %lld", (long long)l);
    }
    // Logits: every row for a sink, else only the prompt's last row.
    uint32_t first = sink != NULL ? 0 : rows - 1;
    bool wanted = sink != NULL || (last_chunk && out_last_logits != NULL);
    if (status == ATLAS_OK && wanted) {
      status =
          rmsnorm_rows(&m->ctx, s->xb + (size_t)first * dim,
                       s->x + (size_t)first * dim, w->final_norm, rows - first);
      if (status == ATLAS_OK) {
        status = logits(m, first, rows - first, host, last_chunk,
                        out_last_logits, sink, sink_ctx);
      }
    }
    done += rows;
  }
  free(host);
  return status;
}

// ---- the paged batch step's entry points (decoder_batch.c) ----------------------

atlas_status atlas_decoder_prefill_layer(atlas_decoder_model *m, int64_t l,
                                         uint32_t n,
                                         const atlas_decoder_paged *paged) {
  return layer(m, &m->weights->layers[l], l, 0, n, paged);
}

atlas_status atlas_decoder_prefill_gemm(const atlas_decoder_model *m,
                                        float *out,
                                        const atlas_decoder_matrix *w,
                                        const float *x, uint32_t rows,
                                        int64_t n, int64_t k) {
  return gemm(m, out, w, x, rows, n, k);
}
