// The Llama forward pass, one token at a time, dispatched through the
// model's ForwardContext (so the same code runs on every backend).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/base/log.h"

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define F(x) ATLAS_ARG_F32(x)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static atlas_dim3 dim1(uint32_t x) { return (atlas_dim3){x ? x : 1, 1, 1}; }
static uint32_t blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

static atlas_status launch_shared(const atlas_decoder_ctx *ctx,
                                  const atlas_kernel *k, uint32_t grid,
                                  uint32_t block, uint32_t shared,
                                  const atlas_arg *args, size_t count) {
  return atlas_forward_launch_shared(&ctx->core, k, dim1(grid), dim1(block),
                                     shared, args, count);
}

static atlas_status launch(const atlas_decoder_ctx *ctx, const atlas_kernel *k,
                           uint32_t grid, uint32_t block, const atlas_arg *args,
                           size_t count) {
  return launch_shared(ctx, k, grid, block, 0, args, count);
}

static atlas_status elementwise(const atlas_decoder_ctx *ctx,
                                const atlas_kernel *k, float *a, const float *b,
                                uint32_t n) {
  atlas_arg args[] = {P(a), P(b), U(n)};
  return launch(ctx, k, blocks(n, 256), 256, args, COUNT(args));
}

static atlas_status rmsnorm(const atlas_decoder_ctx *ctx, float *out,
                            const float *x, const float *w) {
  atlas_arg args[] = {P(out), P(x), P(w), U((uint32_t)ctx->config->hidden_size),
                      F((float)ctx->config->rms_norm_eps)};
  return launch(ctx, ctx->ops.rmsnorm, 1, 1024, args, COUNT(args));
}

// What a product reads: `x` as is (`norm` NULL), or RMSNorm(x) with the
// weights `norm`, formed inside the product's launch: by each warp beside
// its dots (matvec, gate_up, qkv_rope: `shared` 0), or by each block into
// `shared` bytes of dynamic shared memory (matvec_qkv: matvec.cuh,
// staged_x).
typedef struct product_input {
  const float *x, *norm;
  uint32_t shared;
} product_input;

// A launch may ask for 48 KiB of shared memory without opting the kernel in
// (cuFuncSetAttribute); the products keep 32 floats of their own for the
// norm's block reduction.
#define SHARED_PLAIN_MAX ((uint64_t)48 * 1024)
#define NORM_OWN_SHARED ((uint64_t)32 * sizeof(float))

// RMSNorm(scratch->x) by the rmsnorm launch into scratch->xb, read as is.
static atlas_status norm_launch(const atlas_decoder_ctx *ctx, const float *norm,
                                product_input *out) {
  atlas_decoder_scratch *s = ctx->scratch;
  *out = (product_input){s->xb, NULL, 0};
  return rmsnorm(ctx, s->xb, s->x, norm);
}

// The normalised hidden state (scratch->x) for matvec_qkv: staged
// by each block where x fits in shared memory, which saves a launch and a
// round trip through memory; otherwise the rmsnorm launch into scratch->xb,
// read as is.
static atlas_status norm_input(const atlas_decoder_ctx *ctx, const float *norm,
                               product_input *out) {
  atlas_decoder_scratch *s = ctx->scratch;
  uint64_t bytes = (uint64_t)ctx->config->hidden_size * sizeof(float);
  if (bytes + NORM_OWN_SHARED <= SHARED_PLAIN_MAX) {
    *out = (product_input){s->x, norm, (uint32_t)bytes};
    return ATLAS_OK;
  }
  return norm_launch(ctx, norm, out);
}

// RMSNorm(x) with the weights `norm` for gate_up, qkv_rope and matvec:
// each warp normalises in the same pass as its dot products (matvec.cuh,
// rows_dot_norm), so nothing is staged and no launch comes between.
static product_input norm_in_warps(const atlas_decoder_ctx *ctx,
                                   const float *norm) {
  return (product_input){ctx->scratch->x, norm, 0};
}

static atlas_status matvec(const atlas_decoder_ctx *ctx, float *out,
                           const atlas_decoder_matrix *w,
                           const product_input *in, int64_t rows,
                           int64_t cols) {
  if (w->quant != NULL) {
    // The quantized products read x as is: the caller normalised it
    // (norm_launch) for them.
    if (in->norm != NULL) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "a quantized product was handed an "
                               "unnormalised input");
    }
    return atlas_quant_linear_matvec(ctx->core.backend, &ctx->quant,
                                     ctx->core.stream, w->quant, in->x, out,
                                     false);
  }
  atlas_arg args[] = {P(out),
                      P(w->data),
                      P(in->x),
                      U((uint32_t)rows),
                      U((uint32_t)cols),
                      P(in->norm),
                      F((float)ctx->config->rms_norm_eps)};
  return launch_shared(ctx, ctx->ops.matvec[atlas_decoder_wtype_of(w->dtype)],
                       blocks((uint64_t)rows, 8), 256, in->shared, args,
                       COUNT(args));
}

// The row of this step's token (scratch->step[0]).
static atlas_status embed(const atlas_decoder_ctx *ctx, float *out,
                          const atlas_decoder_matrix *table) {
  uint32_t dim = (uint32_t)ctx->config->hidden_size;
  atlas_arg args[] = {P(out), P(table->data), P(ctx->scratch->step), U(dim)};
  return launch(ctx, ctx->ops.embed[atlas_decoder_wtype_of(table->dtype)],
                blocks(dim, 256), 256, args, COUNT(args));
}

static atlas_status add_bias(const atlas_decoder_ctx *ctx, float *x,
                             const float *bias, int64_t n) {
  if (bias == NULL) return ATLAS_OK;
  return elementwise(ctx, ctx->ops.add_bias, x, bias, (uint32_t)n);
}

// x[h] = q_or_k_norm(x[h]) for each head (Qwen3), before RoPE.
static atlas_status head_norm(const atlas_decoder_ctx *ctx, float *x,
                              const float *w, int64_t heads) {
  if (w == NULL) return ATLAS_OK;
  const atlas_decoder_config *c = ctx->config;
  atlas_arg args[] = {P(x), P(w), U((uint32_t)heads), U((uint32_t)c->head_dim),
                      F((float)c->rms_norm_eps)};
  return launch(ctx, ctx->ops.head_rmsnorm, (uint32_t)heads, 32, args,
                COUNT(args));
}

// RoPE at this step's position (scratch->step[1]) on q and k, and k and v
// into that position's cache rows of layer cache kc / vc, in one launch.
static atlas_status rope_store(const atlas_decoder_model *m, int64_t l,
                               void *kc, void *vc) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  atlas_decoder_scratch *s = ctx->scratch;
  uint32_t half = (uint32_t)(m->rot_dim / 2);
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  uint32_t n_kv = (uint32_t)c->num_key_value_heads;
  uint32_t hd = (uint32_t)c->head_dim;
  float factor = 1;
  const float *inv_freq = atlas_decoder_rope_table(m, l, &factor);
  atlas_arg args[] = {
      P(s->q),     P(s->k),    P(s->v), P(kc), P(vc),
      P(inv_freq), U(n_heads), U(n_kv), U(hd), U((uint32_t)m->rot_dim),
      P(s->step),  F(factor)};
  uint64_t threads = (uint64_t)(n_heads + n_kv) * half + (uint64_t)n_kv * hd;
  return launch(ctx, ctx->ops.rope_store[atlas_decoder_wtype_of(m->kv->dtype)],
                blocks(threads, 256), 256, args, COUNT(args));
}

// q, k and v with their biases (and the norm), RoPE at this step's position,
// and k and v into that position's rows of kc / vc: one launch where
// matvec_qkv and rope_store were two.
static atlas_status qkv_rope(const atlas_decoder_model *m,
                             const atlas_decoder_layer *L, int64_t l,
                             const product_input *in, void *kc, void *vc) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  atlas_decoder_scratch *s = ctx->scratch;
  uint32_t hd = (uint32_t)c->head_dim;
  uint32_t q_dim = (uint32_t)c->num_attention_heads * hd;
  uint32_t kv_dim = (uint32_t)c->num_key_value_heads * hd;
  float factor = 1;
  const float *inv_freq = atlas_decoder_rope_table(m, l, &factor);
  atlas_arg args[] = {P(s->q),
                      P(kc),
                      P(vc),
                      P(L->wq.data),
                      P(L->wk.data),
                      P(L->wv.data),
                      P(L->q_bias),
                      P(L->k_bias),
                      P(L->v_bias),
                      P(in->x),
                      U(q_dim),
                      U(kv_dim),
                      U((uint32_t)c->hidden_size),
                      P(in->norm),
                      F((float)c->rms_norm_eps),
                      P(inv_freq),
                      U(hd),
                      U((uint32_t)m->rot_dim),
                      P(s->step),
                      F(factor)};
  const atlas_kernel *k =
      ctx->ops.qkv_rope[atlas_decoder_wtype_of(m->kv->dtype)]
                       [atlas_decoder_wtype_of(L->wq.dtype)];
  return launch(ctx, k, blocks((uint64_t)q_dim + 2 * (uint64_t)kv_dim, 16), 256,
                args, COUNT(args));
}

// x += W in (+ bias), one launch; `splits` warps a row (add_splits).
static atlas_status residual(const atlas_decoder_ctx *ctx, float *x,
                             const atlas_decoder_matrix *w, const float *in,
                             const float *bias, int64_t rows, int64_t cols,
                             uint32_t splits) {
  if (w->quant != NULL) {
    // x += W in through the product's accumulate flag, then the bias.
    ATLAS_RETURN_IF_ERROR(
        atlas_quant_linear_matvec(ctx->core.backend, &ctx->quant,
                                  ctx->core.stream, w->quant, in, x, true));
    return add_bias(ctx, x, bias, rows);
  }
  atlas_arg args[] = {P(x),     P(w->data),        P(in),
                      P(bias),  U((uint32_t)rows), U((uint32_t)cols),
                      U(splits)};
  return launch(ctx, ctx->ops.matvec_add[atlas_decoder_wtype_of(w->dtype)],
                blocks((uint64_t)rows * splits, 8), 256, args, COUNT(args));
}

// x += W in (+ bias), or with a sandwich norm (`norm` not NULL, Gemma):
// x += norm(W in + bias), the product into xb and the norm into xb2.
static atlas_status out_norm(const atlas_decoder_ctx *ctx,
                             const atlas_decoder_matrix *w, const float *in,
                             const float *bias, const float *norm, int64_t cols,
                             uint32_t splits) {
  atlas_decoder_scratch *s = ctx->scratch;
  int64_t hidden = ctx->config->hidden_size;
  if (norm == NULL && ctx->shard == NULL) {
    return residual(ctx, s->x, w, in, bias, hidden, cols, splits);
  }
  product_input plain = {in, NULL, 0};
  ATLAS_RETURN_IF_ERROR(matvec(ctx, s->xb, w, &plain, hidden, cols));
  ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->xb, bias, hidden));
  // A rank's product (its rows of W, its bias or zeros) is its part of
  // the sum.
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_shard_sum(ctx->shard, ctx->core.stream, s->xb, hidden));
  if (norm == NULL) {
    return elementwise(ctx, ctx->ops.add, s->x, s->xb, (uint32_t)hidden);
  }
  ATLAS_RETURN_IF_ERROR(rmsnorm(ctx, s->xb2, s->xb, norm));
  return elementwise(ctx, ctx->ops.add, s->x, s->xb2, (uint32_t)hidden);
}

// One decoder layer of the decode step. Nothing here depends on the token or
// the position (the kernels read them from scratch->step), so the same
// launches replay as a graph at every step.
static atlas_status layer(const atlas_decoder_model *m,
                          const atlas_decoder_layer *L, int64_t l) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  atlas_decoder_scratch *s = ctx->scratch;
  int64_t hidden = c->hidden_size, head_dim = c->head_dim;
  int64_t q_dim = c->num_attention_heads * head_dim;
  int64_t kv_dim = c->num_key_value_heads * head_dim;
  size_t layer_off = (size_t)(l * m->max_seq * kv_dim);
  void *kc = atlas_decoder_kv_layer(m->kv, m->kv->keys, layer_off);
  void *vc = atlas_decoder_kv_layer(m->kv, m->kv->values, layer_off);

  float eps = (float)c->rms_norm_eps;
  // matvec_qkv (q, k and v of one dtype, RoPE apart) stages the norm a
  // block at a time; qkv_rope and separate products (mixed dtypes)
  // normalise a warp at a time.
  // Quantized q, k and v: the norm into scratch, then a product each.
  bool qkv_quant =
      L->wq.quant != NULL || L->wk.quant != NULL || L->wv.quant != NULL;
  bool qkv_one =
      !qkv_quant && L->wk.dtype == L->wq.dtype && L->wv.dtype == L->wq.dtype;
  // RoPE joins the products' launch unless a per-head norm (Qwen3's q_norm,
  // k_norm) must come between.
  bool fused = qkv_one && L->q_norm == NULL && L->k_norm == NULL &&
               head_dim % 2 == 0 && m->rot_dim % 2 == 0;
  product_input in = norm_in_warps(ctx, L->attn_norm);
  if (qkv_one && !fused)
    ATLAS_RETURN_IF_ERROR(norm_input(ctx, L->attn_norm, &in));
  if (qkv_quant) ATLAS_RETURN_IF_ERROR(norm_launch(ctx, L->attn_norm, &in));
  if (fused) {
    ATLAS_RETURN_IF_ERROR(qkv_rope(m, L, l, &in, kc, vc));
  } else if (qkv_one) {
    // q, k and v with their biases (and the norm): one launch.
    atlas_arg qkv[] = {P(s->q),
                       P(s->k),
                       P(s->v),
                       P(L->wq.data),
                       P(L->wk.data),
                       P(L->wv.data),
                       P(L->q_bias),
                       P(L->k_bias),
                       P(L->v_bias),
                       P(in.x),
                       U((uint32_t)q_dim),
                       U((uint32_t)kv_dim),
                       U((uint32_t)hidden),
                       P(in.norm),
                       F(eps)};
    ATLAS_RETURN_IF_ERROR(launch_shared(
        ctx, ctx->ops.matvec_qkv[atlas_decoder_wtype_of(L->wq.dtype)],
        blocks((uint64_t)(q_dim + 2 * kv_dim), 8), 256, in.shared, qkv,
        COUNT(qkv)));
  } else {
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->q, &L->wq, &in, q_dim, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->q, L->q_bias, q_dim));
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->k, &L->wk, &in, kv_dim, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->k, L->k_bias, kv_dim));
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->v, &L->wv, &in, kv_dim, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->v, L->v_bias, kv_dim));
  }
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  if (!fused) {
    ATLAS_RETURN_IF_ERROR(
        head_norm(ctx, s->q, L->q_norm, c->num_attention_heads));
    ATLAS_RETURN_IF_ERROR(
        head_norm(ctx, s->k, L->k_norm, c->num_key_value_heads));
    ATLAS_RETURN_IF_ERROR(rope_store(m, l, kc, vc));
  }
  uint32_t window = (uint32_t)atlas_decoder_layer_window(c, l);
  if (m->prefill != NULL) {
    // Split over the context (flash-decoding) where the batch scratch exists.
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_decode_attention(m, l, window, s->xb2, s->q));
  } else {
    atlas_arg att_args[12] = {P(s->xb2),
                              P(s->q),
                              P(kc),
                              P(vc),
                              P(s->att),
                              U(n_heads),
                              U((uint32_t)c->num_key_value_heads),
                              U((uint32_t)head_dim),
                              P(s->step),
                              U(window)};
    size_t count = 10;
    atlas_decoder_wtype kvt = atlas_decoder_wtype_of(m->kv->dtype);
    const atlas_kernel *k = atlas_decoder_pick_attention(
        &ctx->ops, ctx->ops.attention[kvt], ctx->ops.attention_ext[kvt],
        att_args, &count);
    ATLAS_RETURN_IF_ERROR(launch(ctx, k, n_heads, 256, att_args, count));
  }
  // The output projection and the residual add in one pass (a sandwich
  // norm between them: out_norm).
  ATLAS_RETURN_IF_ERROR(out_norm(ctx, &L->wo, s->xb2, L->o_bias,
                                 L->attn_out_norm, q_dim, ctx->o_splits));
  if (L->moe.router.data != NULL) return atlas_decoder_moe_token(m, L);

  int64_t inter = c->intermediate_size;
  bool gate_up_quant = L->w_gate.quant != NULL || L->w_up.quant != NULL;
  bool gate_up_one = !gate_up_quant && L->w_up.dtype == L->w_gate.dtype;
  // The FFN norm a warp at a time, in gate_up's pass (H200, context 128,
  // H200, 2026-12-04: 1B 0.832 ms a step against 0.855 with the rmsnorm launch,
  // 8B 4.162 against 4.239; staged a block at a time it cost, 8B 4.90
  // against 4.82).
  in = norm_in_warps(ctx, L->ffn_norm);
  if (gate_up_quant) ATLAS_RETURN_IF_ERROR(norm_launch(ctx, L->ffn_norm, &in));
  if (ctx->ops.gelu_mul != NULL) {
    // act(gate) * up with GELU: the products, then gelu_tanh_mul.
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb, &L->w_gate, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb, L->gate_bias, inter));
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb2, &L->w_up, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb2, L->up_bias, inter));
    ATLAS_RETURN_IF_ERROR(
        elementwise(ctx, ctx->ops.gelu_mul, s->hb, s->hb2, (uint32_t)inter));
  } else if (gate_up_one) {
    // Gate and up with their biases, SiLU (and the norm): one launch, two
    // rows a block (H200, context 128, calls 5 and 6: 8B 4.50-4.52 ms, 1B
    // 0.943-0.953 vs 4.546 and 0.956 at eight rows: the last wave's tail is
    // smaller).
    atlas_arg gu[] = {P(s->hb),           P(L->w_gate.data),
                      P(L->w_up.data),    P(L->gate_bias),
                      P(L->up_bias),      P(in.x),
                      U((uint32_t)inter), U((uint32_t)hidden),
                      P(in.norm),         F(eps)};
    ATLAS_RETURN_IF_ERROR(launch_shared(
        ctx, ctx->ops.gate_up[atlas_decoder_wtype_of(L->w_gate.dtype)],
        blocks((uint64_t)inter, 2), 64, in.shared, gu, COUNT(gu)));
  } else {
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb, &L->w_gate, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb, L->gate_bias, inter));
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb2, &L->w_up, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb2, L->up_bias, inter));
    ATLAS_RETURN_IF_ERROR(
        elementwise(ctx, ctx->ops.silu_mul, s->hb, s->hb2, (uint32_t)inter));
  }
  return out_norm(ctx, &L->w_down, s->hb, L->down_bias, L->ffn_out_norm, inter,
                  ctx->down_splits);
}

// The whole decode step on the context's stream: embedding, layers, final
// norm, logits and the argmax (into scratch->result).
atlas_status atlas_decoder_step_body(const atlas_decoder_model *m) {
  const atlas_decoder_config *c = &m->config;
  atlas_decoder_scratch *s = m->scratch;
  const atlas_decoder_weights *w = m->weights;
  ATLAS_RETURN_IF_ERROR(embed(&m->ctx, s->x, &w->embed));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_scale(&m->ctx, s->x, c->hidden_size));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_shard_embed(
      m->ctx.shard, m->ctx.core.stream, s->x, c->hidden_size));
  for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(layer(m, &w->layers[l], l),
                                                "layer %lld", (long long)l));
  }
  // The final norm stays a launch. Folded into the logits it cost more
  // than the launch on the 1B shape (H200, context 128): staged, each of
  // 16000 blocks normalising x, 1.03 ms a step against 1.01; a warp at a
  // time, 0.904 against 0.858 (each warp reads x and the norm weights, four
  // times its row's bytes, from L1).
  product_input in;
  ATLAS_RETURN_IF_ERROR(norm_launch(&m->ctx, w->final_norm, &in));
  ATLAS_RETURN_IF_ERROR(matvec(&m->ctx, s->logits, &w->lm_head, &in,
                               c->vocab_size, c->hidden_size));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_softcap(&m->ctx, s->logits, (uint64_t)c->vocab_size));
  // The argmax also writes the next step's token and position, so greedy
  // decoding can queue that step before this one's id reaches the host.
  atlas_arg args[] = {P(s->result), P(s->logits), U((uint32_t)c->vocab_size),
                      P(s->step)};
  return launch(&m->ctx, m->ctx.ops.argmax,
                blocks((uint64_t)c->vocab_size, 2048), 256, args, COUNT(args));
}

atlas_status atlas_decoder_scale(const atlas_decoder_ctx *ctx, float *x,
                                 uint64_t n) {
  if (ctx->ops.scale == NULL) return ATLAS_OK;
  atlas_arg args[] = {P(x), U((uint32_t)n), F((float)ctx->config->embed_scale)};
  return launch(ctx, ctx->ops.scale, blocks(n, 256), 256, args, COUNT(args));
}

atlas_status atlas_decoder_softcap(const atlas_decoder_ctx *ctx, float *x,
                                   uint64_t n) {
  if (ctx->ops.softcap == NULL) return ATLAS_OK;
  atlas_arg args[] = {P(x), U((uint32_t)n),
                      F((float)ctx->config->final_softcap)};
  return launch(ctx, ctx->ops.softcap, blocks(n, 256), 256, args, COUNT(args));
}

static uint32_t default_decode_blocks(const atlas_decoder_config *c, int sms) {
  return atlas_decoder_decode_blocks(sms, (uint32_t)c->num_key_value_heads,
                                     (uint32_t)c->head_dim);
}

atlas_status atlas_decoder_set_decode_attention_blocks(atlas_decoder_model *m,
                                                       uint32_t blocks) {
  // Captured with the old launch shape.
  ATLAS_RETURN_IF_ERROR(atlas_decoder_drop_graph(m));
  const atlas_decoder_config *c = &m->config;
  int sms = 1;
  ATLAS_RETURN_IF_ERROR(atlas_backend_sm_count(m->backend, &sms));
  m->ctx.decode_blocks = blocks != 0 ? blocks : default_decode_blocks(c, sms);
  return ATLAS_OK;
}

// Warps a row for matvec_add: doubled, up to 4, while the doubled grid's
// warps all fit on the GPU at once (32 an SM at the kernel's registers) and
// 8 * splits divides the columns. H200, context 128 (call 8): the 1B
// shape's o and down projections (2048 rows) at 2 warps a row took decode
// from 0.917 to 0.867-0.874 ms, at 4 0.923-0.928; the 8B shape's (4096
// rows, a full wave already) at 2 from 4.40-4.42 to 4.48-4.49.
static uint32_t add_splits(int64_t rows, int64_t cols, int sms) {
  uint32_t s = 1;
  while (s < 4 && rows * 2 * (int64_t)s <= (int64_t)sms * 32 &&
         cols % (16 * (int64_t)s) == 0) {
    s *= 2;
  }
  return s;
}

atlas_status atlas_decoder_ctx_make(atlas_backend *backend,
                                    atlas_stream *stream,
                                    const atlas_decoder_config *config,
                                    atlas_decoder_scratch *scratch,
                                    atlas_decoder_ctx *out_ctx) {
  memset(out_ctx, 0, sizeof(*out_ctx));
  if (config == NULL || scratch == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT, "llama context: no %s",
        config == NULL ? "model configuration" : "scratch");
  }
  ATLAS_RETURN_IF_ERROR(
      atlas_forward_ctx_make(backend, stream, &out_ctx->core));
  out_ctx->config = config;
  out_ctx->scratch = scratch;
  int sms = 1;
  ATLAS_RETURN_IF_ERROR(atlas_backend_sm_count(backend, &sms));
  int64_t q_dim = config->num_attention_heads * config->head_dim;
  out_ctx->o_splits = add_splits(config->hidden_size, q_dim, sms);
  out_ctx->down_splits =
      add_splits(config->hidden_size, config->intermediate_size, sms);
  out_ctx->decode_blocks = default_decode_blocks(config, sms);
  if (config->quant.method != ATLAS_QUANT_NONE) {
    ATLAS_RETURN_IF_ERROR(
        atlas_quant_kernels_resolve(backend, &out_ctx->quant));
  }
  return atlas_decoder_ops_resolve(&out_ctx->core, config, &out_ctx->ops);
}
