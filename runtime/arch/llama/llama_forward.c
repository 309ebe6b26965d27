// The Llama forward pass, one token at a time, dispatched through the
// model's ForwardContext (so the same code runs on every backend).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/llama_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/runtime/arch/llama/llama_model.h"
#include "atlas/runtime/log.h"

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define F(x) ATLAS_ARG_F32(x)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static atlas_dim3 dim1(uint32_t x) { return (atlas_dim3){x ? x : 1, 1, 1}; }
static uint32_t blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

static atlas_status launch_shared(const atlas_llama_ctx *ctx,
                                  const atlas_kernel *k, uint32_t grid,
                                  uint32_t block, uint32_t shared,
                                  const atlas_arg *args, size_t count) {
  return atlas_forward_launch_shared(&ctx->core, k, dim1(grid), dim1(block),
                                     shared, args, count);
}

static atlas_status launch(const atlas_llama_ctx *ctx, const atlas_kernel *k,
                           uint32_t grid, uint32_t block, const atlas_arg *args,
                           size_t count) {
  return launch_shared(ctx, k, grid, block, 0, args, count);
}

static atlas_status elementwise(const atlas_llama_ctx *ctx,
                                const atlas_kernel *k, float *a, const float *b,
                                uint32_t n) {
  atlas_arg args[] = {P(a), P(b), U(n)};
  return launch(ctx, k, blocks(n, 256), 256, args, COUNT(args));
}

static atlas_status rmsnorm(const atlas_llama_ctx *ctx, float *out,
                            const float *x, const float *w) {
  atlas_arg args[] = {P(out), P(x), P(w), U((uint32_t)ctx->config->hidden_size),
                      F((float)ctx->config->rms_norm_eps)};
  return launch(ctx, ctx->ops.rmsnorm, 1, 1024, args, COUNT(args));
}

// What a product reads: `x` as is (`norm` NULL), or RMSNorm(x) with the
// weights `norm`, formed inside the product's launch: by each warp beside
// its dots (matvec, gate_up, qkv_rope: `shared` 0), or by each block into
// `shared` bytes of dynamic shared memory (matvec_qkv: llama.cu, staged_x).
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
static atlas_status norm_launch(const atlas_llama_ctx *ctx, const float *norm,
                                product_input *out) {
  atlas_llama_scratch *s = ctx->scratch;
  *out = (product_input){s->xb, NULL, 0};
  return rmsnorm(ctx, s->xb, s->x, norm);
}

// The normalised hidden state (scratch->x) for matvec_qkv: staged
// by each block where x fits in shared memory, which saves a launch and a
// round trip through memory; otherwise the rmsnorm launch into scratch->xb,
// read as is.
static atlas_status norm_input(const atlas_llama_ctx *ctx, const float *norm,
                               product_input *out) {
  atlas_llama_scratch *s = ctx->scratch;
  uint64_t bytes = (uint64_t)ctx->config->hidden_size * sizeof(float);
  if (bytes + NORM_OWN_SHARED <= SHARED_PLAIN_MAX) {
    *out = (product_input){s->x, norm, (uint32_t)bytes};
    return ATLAS_OK;
  }
  return norm_launch(ctx, norm, out);
}

// RMSNorm(x) with the weights `norm` for gate_up, qkv_rope and matvec:
// each warp normalises in the same pass as its dot products (llama.cu,
// rows_dot_norm), so nothing is staged and no launch comes between.
static product_input norm_in_warps(const atlas_llama_ctx *ctx,
                                   const float *norm) {
  return (product_input){ctx->scratch->x, norm, 0};
}

static atlas_status matvec(const atlas_llama_ctx *ctx, float *out,
                           const atlas_llama_matrix *w, const product_input *in,
                           int64_t rows, int64_t cols) {
  atlas_arg args[] = {P(out),
                      P(w->data),
                      P(in->x),
                      U((uint32_t)rows),
                      U((uint32_t)cols),
                      P(in->norm),
                      F((float)ctx->config->rms_norm_eps)};
  return launch_shared(ctx, ctx->ops.matvec[atlas_llama_wtype_of(w->dtype)],
                       blocks((uint64_t)rows, 8), 256, in->shared, args,
                       COUNT(args));
}

// The row of this step's token (scratch->step[0]).
static atlas_status embed(const atlas_llama_ctx *ctx, float *out,
                          const atlas_llama_matrix *table) {
  uint32_t dim = (uint32_t)ctx->config->hidden_size;
  atlas_arg args[] = {P(out), P(table->data), P(ctx->scratch->step), U(dim)};
  return launch(ctx, ctx->ops.embed[atlas_llama_wtype_of(table->dtype)],
                blocks(dim, 256), 256, args, COUNT(args));
}

static atlas_status add_bias(const atlas_llama_ctx *ctx, float *x,
                             const float *bias, int64_t n) {
  if (bias == NULL) return ATLAS_OK;
  return elementwise(ctx, ctx->ops.add_bias, x, bias, (uint32_t)n);
}

// x[h] = q_or_k_norm(x[h]) for each head (Qwen3), before RoPE.
static atlas_status head_norm(const atlas_llama_ctx *ctx, float *x,
                              const float *w, int64_t heads) {
  if (w == NULL) return ATLAS_OK;
  const atlas_llama_config *c = ctx->config;
  atlas_arg args[] = {P(x), P(w), U((uint32_t)heads), U((uint32_t)c->head_dim),
                      F((float)c->rms_norm_eps)};
  return launch(ctx, ctx->ops.head_rmsnorm, (uint32_t)heads, 32, args,
                COUNT(args));
}

// RoPE at this step's position (scratch->step[1]) on q and k, and k and v
// into that position's cache rows of layer cache kc / vc, in one launch.
static atlas_status rope_store(const atlas_llama_model *m, void *kc, void *vc) {
  const atlas_llama_ctx *ctx = &m->ctx;
  const atlas_llama_config *c = ctx->config;
  atlas_llama_scratch *s = ctx->scratch;
  uint32_t half = (uint32_t)(m->rot_dim / 2);
  uint32_t n_heads = (uint32_t)c->num_attention_heads;
  uint32_t n_kv = (uint32_t)c->num_key_value_heads;
  uint32_t hd = (uint32_t)c->head_dim;
  atlas_arg args[] = {P(s->q),    P(s->k),
                      P(s->v),    P(kc),
                      P(vc),      P(s->inv_freq),
                      U(n_heads), U(n_kv),
                      U(hd),      U((uint32_t)m->rot_dim),
                      P(s->step), F(m->attention_factor)};
  uint64_t threads = (uint64_t)(n_heads + n_kv) * half + (uint64_t)n_kv * hd;
  return launch(ctx, ctx->ops.rope_store[atlas_llama_wtype_of(m->kv->dtype)],
                blocks(threads, 256), 256, args, COUNT(args));
}

// q, k and v with their biases (and the norm), RoPE at this step's position,
// and k and v into that position's rows of kc / vc: one launch where
// matvec_qkv and rope_store were two.
static atlas_status qkv_rope(const atlas_llama_model *m,
                             const atlas_llama_layer *L,
                             const product_input *in, void *kc, void *vc) {
  const atlas_llama_ctx *ctx = &m->ctx;
  const atlas_llama_config *c = ctx->config;
  atlas_llama_scratch *s = ctx->scratch;
  uint32_t hd = (uint32_t)c->head_dim;
  uint32_t q_dim = (uint32_t)c->num_attention_heads * hd;
  uint32_t kv_dim = (uint32_t)c->num_key_value_heads * hd;
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
                      P(s->inv_freq),
                      U(hd),
                      U((uint32_t)m->rot_dim),
                      P(s->step),
                      F(m->attention_factor)};
  const atlas_kernel *k = ctx->ops.qkv_rope[atlas_llama_wtype_of(m->kv->dtype)]
                                           [atlas_llama_wtype_of(L->wq.dtype)];
  return launch(ctx, k, blocks((uint64_t)q_dim + 2 * (uint64_t)kv_dim, 16), 256,
                args, COUNT(args));
}

// x += W in (+ bias), one launch; `splits` warps a row (add_splits).
static atlas_status residual(const atlas_llama_ctx *ctx, float *x,
                             const atlas_llama_matrix *w, const float *in,
                             const float *bias, int64_t rows, int64_t cols,
                             uint32_t splits) {
  atlas_arg args[] = {P(x),     P(w->data),        P(in),
                      P(bias),  U((uint32_t)rows), U((uint32_t)cols),
                      U(splits)};
  return launch(ctx, ctx->ops.matvec_add[atlas_llama_wtype_of(w->dtype)],
                blocks((uint64_t)rows * splits, 8), 256, args, COUNT(args));
}

// One decoder layer of the decode step. Nothing here depends on the token or
// the position (the kernels read them from scratch->step), so the same
// launches replay as a graph at every step.
static atlas_status layer(const atlas_llama_model *m,
                          const atlas_llama_layer *L, int64_t l) {
  const atlas_llama_ctx *ctx = &m->ctx;
  const atlas_llama_config *c = ctx->config;
  atlas_llama_scratch *s = ctx->scratch;
  int64_t hidden = c->hidden_size, head_dim = c->head_dim;
  int64_t q_dim = c->num_attention_heads * head_dim;
  int64_t kv_dim = c->num_key_value_heads * head_dim;
  size_t layer_off = (size_t)(l * m->max_seq * kv_dim);
  void *kc = atlas_llama_kv_layer(m->kv, m->kv->keys, layer_off);
  void *vc = atlas_llama_kv_layer(m->kv, m->kv->values, layer_off);

  float eps = (float)c->rms_norm_eps;
  // matvec_qkv (q, k and v of one dtype, RoPE apart) stages the norm a
  // block at a time; qkv_rope and separate products (mixed dtypes)
  // normalise a warp at a time.
  bool qkv_one = L->wk.dtype == L->wq.dtype && L->wv.dtype == L->wq.dtype;
  // RoPE joins the products' launch unless a per-head norm (Qwen3's q_norm,
  // k_norm) must come between.
  bool fused = qkv_one && L->q_norm == NULL && L->k_norm == NULL &&
               head_dim % 2 == 0 && m->rot_dim % 2 == 0;
  product_input in = norm_in_warps(ctx, L->attn_norm);
  if (qkv_one && !fused)
    ATLAS_RETURN_IF_ERROR(norm_input(ctx, L->attn_norm, &in));
  if (fused) {
    ATLAS_RETURN_IF_ERROR(qkv_rope(m, L, &in, kc, vc));
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
        ctx, ctx->ops.matvec_qkv[atlas_llama_wtype_of(L->wq.dtype)],
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
    ATLAS_RETURN_IF_ERROR(rope_store(m, kc, vc));
  }
  uint32_t window = (uint32_t)atlas_llama_layer_window(c, l);
  if (m->prefill != NULL) {
    // Split over the context (flash-decoding) where the batch scratch exists.
    ATLAS_RETURN_IF_ERROR(
        atlas_llama_decode_attention(m, l, window, s->xb2, s->q));
  } else {
    atlas_arg att_args[] = {P(s->xb2),
                            P(s->q),
                            P(kc),
                            P(vc),
                            P(s->att),
                            U(n_heads),
                            U((uint32_t)c->num_key_value_heads),
                            U((uint32_t)head_dim),
                            P(s->step),
                            U(window)};
    ATLAS_RETURN_IF_ERROR(
        launch(ctx, ctx->ops.attention[atlas_llama_wtype_of(m->kv->dtype)],
               n_heads, 256, att_args, COUNT(att_args)));
  }
  // The output projection and the residual add in one pass.
  ATLAS_RETURN_IF_ERROR(residual(ctx, s->x, &L->wo, s->xb2, L->o_bias, hidden,
                                 q_dim, ctx->o_splits));

  int64_t inter = c->intermediate_size;
  bool gate_up_one = L->w_up.dtype == L->w_gate.dtype;
  // The FFN norm a warp at a time, in gate_up's pass (H200, context 128,
  // session 30: 1B 0.832 ms a step against 0.855 with the rmsnorm launch,
  // 8B 4.162 against 4.239; staged a block at a time it cost, 8B 4.90
  // against 4.82).
  in = norm_in_warps(ctx, L->ffn_norm);
  if (gate_up_one) {
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
        ctx, ctx->ops.gate_up[atlas_llama_wtype_of(L->w_gate.dtype)],
        blocks((uint64_t)inter, 2), 64, in.shared, gu, COUNT(gu)));
  } else {
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb, &L->w_gate, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb, L->gate_bias, inter));
    ATLAS_RETURN_IF_ERROR(matvec(ctx, s->hb2, &L->w_up, &in, inter, hidden));
    ATLAS_RETURN_IF_ERROR(add_bias(ctx, s->hb2, L->up_bias, inter));
    ATLAS_RETURN_IF_ERROR(
        elementwise(ctx, ctx->ops.silu_mul, s->hb, s->hb2, (uint32_t)inter));
  }
  return residual(ctx, s->x, &L->w_down, s->hb, L->down_bias, hidden, inter,
                  ctx->down_splits);
}

// The whole decode step on the context's stream: embedding, layers, final
// norm, logits and the argmax (into scratch->result).
static atlas_status step_body(const atlas_llama_model *m) {
  const atlas_llama_config *c = &m->config;
  atlas_llama_scratch *s = m->scratch;
  const atlas_llama_weights *w = m->weights;
  ATLAS_RETURN_IF_ERROR(embed(&m->ctx, s->x, &w->embed));
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
  // The argmax also writes the next step's token and position, so greedy
  // decoding can queue that step before this one's id reaches the host.
  atlas_arg args[] = {P(s->result), P(s->logits), U((uint32_t)c->vocab_size),
                      P(s->step)};
  return launch(&m->ctx, m->ctx.ops.argmax,
                blocks((uint64_t)c->vocab_size, 2048), 256, args, COUNT(args));
}

// This step's token and position, to scratch->step (the backend stages the
// source, so host_step may change as soon as this returns).
static atlas_status upload_step(atlas_llama_model *m) {
  return atlas_backend_h2d_async(m->backend, m->scratch->step, m->host_step,
                                 sizeof(m->host_step), m->ctx.core.stream);
}

// Captures the step body once, then replays it. Only the capture machinery
// failing (a backend or driver that cannot capture) makes the step fall
// back to eager launches, with one log line; a kernel that fails while
// being captured is an error, as it would be eagerly.
static atlas_status run_step_body(atlas_llama_model *m) {
  atlas_llama_graph *g = m->graph;
  if (g == NULL || g->disabled) return step_body(m);
  atlas_backend *b = m->backend;
  atlas_stream *stream = m->ctx.core.stream;
  if (g->graph == NULL) {
    atlas_status cap = atlas_backend_begin_capture(b, stream);
    if (cap == ATLAS_OK) {
      atlas_status body = step_body(m);
      atlas_graph *graph = NULL;
      cap = atlas_backend_end_capture(b, stream, &graph);
      if (body != ATLAS_OK) {
        atlas_status_free(cap);
        if (graph != NULL)
          atlas_status_free(atlas_backend_destroy_graph(b, graph));
        bool aborted = false;
        atlas_status_free(
            atlas_backend_abort_capture_if_active(b, stream, &aborted));
        return body;
      }
      if (cap == ATLAS_OK) g->graph = graph;
    }
    if (cap != ATLAS_OK) {
      bool aborted = false;
      atlas_status_free(
          atlas_backend_abort_capture_if_active(b, stream, &aborted));
      // A capture someone else left open took the step's upload with it.
      ATLAS_RETURN_IF_ERROR(upload_step(m));
      atlas_log(atlas_backend_log_sink(b), ATLAS_LOG_WARNING,
                "decode step: capturing it as a graph failed (%s); decode "
                "steps run as separate launches from now on",
                atlas_status_message(cap));
      atlas_status_free(cap);
      g->disabled = true;
      return step_body(m);
    }
  }
  return atlas_backend_launch_graph(b, g->graph, stream);
}

// Every kernel of the step waits for its inputs (atlas_overlap_begin), so
// each may start while the one before it ends: the launch gaps and the
// first loads of each product overlap the previous kernel's tail.
static atlas_status run_step(atlas_llama_model *m) {
  m->ctx.core.overlap = m->graph == NULL || !m->graph->no_overlap;
  atlas_status status = run_step_body(m);
  m->ctx.core.overlap = false;
  return status;
}

// The captured step bakes RoPE's attention factor in: drop it when that
// changes (dynamic RoPE past max_position_embeddings).
static atlas_status drop_graph(atlas_llama_model *m) {
  if (m->graph == NULL || m->graph->graph == NULL) return ATLAS_OK;
  atlas_graph *graph = m->graph->graph;
  m->graph->graph = NULL;
  return atlas_backend_destroy_graph(m->backend, graph);
}

atlas_status atlas_llama_set_decode_graph(atlas_llama_model *m, bool enabled) {
  if (m->graph == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "this model has no decode graph state");
  }
  if (!enabled) ATLAS_RETURN_IF_ERROR(drop_graph(m));
  m->graph->disabled = !enabled;
  return ATLAS_OK;
}

atlas_status atlas_llama_set_decode_overlap(atlas_llama_model *m,
                                            bool enabled) {
  if (m->graph == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "this model has no decode graph state");
  }
  ATLAS_RETURN_IF_ERROR(drop_graph(m));  // captured with the other launches
  m->graph->no_overlap = !enabled;
  return ATLAS_OK;
}

// What the RoPE frequencies depend on at seq_len: only dynamic RoPE past
// max_position_embeddings depends on it.
static int64_t rope_key(const atlas_llama_model *m, int64_t seq_len) {
  const atlas_llama_config *c = &m->config;
  return c->rope.type == ATLAS_ROPE_DYNAMIC &&
                 seq_len > c->max_position_embeddings
             ? seq_len
             : 0;
}

static uint32_t default_decode_blocks(const atlas_llama_config *c, int sms) {
  return atlas_llama_decode_blocks(sms, (uint32_t)c->num_key_value_heads,
                                   (uint32_t)c->head_dim);
}

atlas_status atlas_llama_set_decode_attention_blocks(atlas_llama_model *m,
                                                     uint32_t blocks) {
  ATLAS_RETURN_IF_ERROR(drop_graph(m));  // captured with the old launch shape
  const atlas_llama_config *c = &m->config;
  int sms = 1;
  ATLAS_RETURN_IF_ERROR(atlas_backend_sm_count(m->backend, &sms));
  m->ctx.decode_blocks = blocks != 0 ? blocks : default_decode_blocks(c, sms);
  return ATLAS_OK;
}

atlas_status atlas_llama_set_decode_ahead(atlas_llama_model *m, bool enabled) {
  m->no_ahead = !enabled;
  return ATLAS_OK;
}

atlas_status atlas_llama_rope_update(atlas_llama_model *m, int64_t seq_len) {
  const atlas_llama_config *c = &m->config;
  int64_t key = rope_key(m, seq_len);
  if (key == m->rope_seq_len) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(drop_graph(m));
  size_t half = (size_t)(m->rot_dim / 2);
  double *inv = malloc((half ? half : 1) * sizeof(double));
  float *f = malloc((half ? half : 1) * sizeof(float));
  atlas_status status = ATLAS_OK;
  if (inv == NULL || f == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "cannot compute %zu RoPE frequencies", half);
  } else {
    double factor = 1.0;
    atlas_rope_inv_freq(&c->rope, c->head_dim, c->max_position_embeddings,
                        seq_len, inv, &factor);
    for (size_t i = 0; i < half; ++i) f[i] = (float)inv[i];
    m->attention_factor = (float)factor;
    status = atlas_status_annotate(
        atlas_backend_h2d(m->backend, m->scratch->inv_freq, f,
                          half * sizeof(float)),
        "uploading RoPE frequencies");
  }
  free(inv);
  free(f);
  if (status == ATLAS_OK) m->rope_seq_len = key;
  return status;
}

// A NaN or Inf logit makes argmax meaningless: an error naming the step,
// never a silent token 0. `what`: "NaN", "Inf", or "a non-finite value".
static atlas_status non_finite_logit(size_t step, const char *what,
                                     size_t index) {
  return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "forward step %zu produced a non-finite logit "
                           "(%s at index %zu); refusing to pick a token",
                           step, what, index);
}

atlas_status atlas_llama_decode_step(atlas_llama_model *m, uint32_t token,
                                     uint32_t pos, int64_t seq_len,
                                     float *out_logits, uint32_t *out_token) {
  const atlas_llama_config *c = &m->config;
  if ((int64_t)token >= c->vocab_size) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "token %u is outside the vocabulary (%lld ids)",
                             token, (long long)c->vocab_size);
  }
  if ((int64_t)pos >= m->max_seq) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "position %u is past the KV cache (%lld positions)", pos,
        (long long)m->max_seq);
  }
  if (seq_len <= (int64_t)pos) seq_len = (int64_t)pos + 1;
  ATLAS_RETURN_IF_ERROR(atlas_llama_rope_update(m, seq_len));
  atlas_llama_scratch *s = m->scratch;
  atlas_stream *stream = m->ctx.core.stream;
  m->host_step[0] = token;
  m->host_step[1] = pos;
  ATLAS_RETURN_IF_ERROR(upload_step(m));
  ATLAS_RETURN_IF_ERROR(run_step(m));
  uint32_t result[2] = {0, 0};
  ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
      m->backend, result, s->result, sizeof(result), stream));
  if (out_logits != NULL) {
    ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
        m->backend, out_logits, s->logits,
        (size_t)c->vocab_size * sizeof(float), stream));
  }
  if (result[1] != UINT32_MAX) {
    const char *what = "a non-finite value";
    if (out_logits != NULL && result[1] < (uint64_t)c->vocab_size) {
      what = isnan(out_logits[result[1]]) ? "NaN" : "Inf";
    }
    return non_finite_logit(pos, what, result[1]);
  }
  if (out_token != NULL) *out_token = result[0];
  return ATLAS_OK;
}

atlas_status atlas_llama_forward_step(atlas_llama_model *m, uint32_t token,
                                      uint32_t pos, int64_t seq_len,
                                      float *out_logits) {
  return atlas_llama_decode_step(m, token, pos, seq_len, out_logits, NULL);
}

atlas_status atlas_llama_forward(atlas_llama_model *m, uint32_t token,
                                 uint32_t pos, float *out_logits) {
  return atlas_llama_forward_step(m, token, pos, (int64_t)pos + 1, out_logits);
}

static uint32_t argmax(const float *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return (uint32_t)best;
}

// The first non-finite logit of a step copied to the host, as an error.
static atlas_status check_finite_logits(const float *logits, size_t vocab,
                                        size_t step) {
  for (size_t i = 0; i < vocab; ++i) {
    if (!isfinite(logits[i])) {
      return non_finite_logit(step, isnan(logits[i]) ? "NaN" : "Inf", i);
    }
  }
  return ATLAS_OK;
}

static bool is_eos(const atlas_arch_generate_options *o, uint32_t token) {
  if (o == NULL || o->ignore_eos) return false;
  for (size_t i = 0; i < o->eos_count; ++i) {
    if (o->eos[i] == token) return true;
  }
  return false;
}

// The token after a forward step past the prompt (options->choose's, else
// the argmax): recorded; *out_stop when generation stops there (an EOS id,
// never fed back, or on_token said stop, or `steps` tokens are recorded).
// `logits` may be NULL when there is no chooser: then `device_id`, the
// argmax the step computed on the device, is the token.
static atlas_status take(const atlas_arch_generate_options *options,
                         const float *logits, uint32_t device_id, size_t vocab,
                         size_t steps, uint32_t *out_tokens, size_t *generated,
                         uint32_t *out_token, bool *out_stop) {
  // Steps 0 runs the prompt's last position for its logits only: no token is
  // generated there, so neither the chooser nor on_token may see one.
  if (*generated >= steps) {
    *out_stop = true;
    return ATLAS_OK;
  }
  uint32_t token = 0;
  if (options != NULL && options->choose != NULL) {
    // Into the caller's token, so the status can point at nothing of ours.
    atlas_status status =
        options->choose(options->choose_ctx, logits, vocab, out_token);
    if (status != ATLAS_OK) return status;
    token = *out_token;
    if (token >= vocab) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "the token chooser returned id %u, "
                               "outside the vocabulary of %zu",
                               token, vocab);
    }
  } else {
    token = logits != NULL ? argmax(logits, vocab) : device_id;
  }
  *out_token = token;
  out_tokens[(*generated)++] = token;
  // Every recorded token reaches on_token, the EOS that ends it included.
  bool go_on = options == NULL || options->on_token == NULL ||
               options->on_token(options->token_ctx, token);
  *out_stop = !go_on || is_eos(options, token);
  return ATLAS_OK;
}

// Whether steps at sequence lengths first_len .. last_len may run ahead: not
// switched off, and the RoPE frequencies (uploaded once, before the first
// step) the same for all of them.
static bool can_run_ahead(const atlas_llama_model *m, int64_t first_len,
                          int64_t last_len) {
  return !m->no_ahead && rope_key(m, first_len) == rope_key(m, last_len);
}

// Greedy steps with the host behind the device: each step's argmax writes
// the next step's token and position (step_body), so step pos + 1 is queued
// before step pos's id is read. The device runs ahead by ATLAS_LLAMA_AHEAD - 1
// steps (the model's ring and events, llama_model.h); after a stop (EOS,
// on_token) the steps already queued finish and their ids are dropped.
// Consecutive steps are separated by the copy of the id, so no step's
// kernels overlap the one before (the step kernels read the token and
// position before they wait: llama.cu). In a captured step on the H200 the
// host round trip between steps (the id's copy and sync, the upload, the
// graph launch) otherwise leaves the GPU idle.
static atlas_status greedy_ahead(atlas_llama_model *m,
                                 const atlas_arch_generate_options *options,
                                 uint32_t token, size_t pos, size_t forwards,
                                 int64_t seq_len_min, size_t vocab,
                                 size_t steps, uint32_t *out_tokens,
                                 size_t *generated) {
  atlas_backend *b = m->backend;
  atlas_stream *stream = m->ctx.core.stream;
  atlas_llama_scratch *s = m->scratch;
  int64_t first_len =
      (int64_t)pos + 1 > seq_len_min ? (int64_t)pos + 1 : seq_len_min;
  ATLAS_RETURN_IF_ERROR(atlas_llama_rope_update(m, first_len));
  uint32_t *ring = m->ahead->ring;
  atlas_event *const *done = m->ahead->done;
  m->host_step[0] = token;
  m->host_step[1] = (uint32_t)pos;
  atlas_status status = upload_step(m);
  size_t queued = pos;
  bool stop = false;
  while (status == ATLAS_OK && !stop && pos < forwards) {
    while (status == ATLAS_OK && queued < forwards &&
           queued - pos < ATLAS_LLAMA_AHEAD) {
      size_t slot = queued % ATLAS_LLAMA_AHEAD;
      status = run_step(m);
      if (status == ATLAS_OK) {
        status = atlas_backend_d2h_async(b, ring + 2 * slot, s->result,
                                         2 * sizeof(uint32_t), stream);
      }
      if (status == ATLAS_OK)
        status = atlas_backend_event_record(b, done[slot], stream);
      if (status != ATLAS_OK) {
        status =
            atlas_status_annotate(status, "queueing decode step %zu", queued);
      }
      ++queued;
    }
    if (status != ATLAS_OK) break;
    size_t slot = pos % ATLAS_LLAMA_AHEAD;
    status = atlas_backend_event_synchronize(b, done[slot]);
    if (status != ATLAS_OK) {
      status =
          atlas_status_annotate(status, "waiting for decode step %zu", pos);
      break;
    }
    if (ring[2 * slot + 1] != UINT32_MAX) {
      status = non_finite_logit(pos, "a non-finite value", ring[2 * slot + 1]);
      break;
    }
    status = take(options, NULL, ring[2 * slot], vocab, steps, out_tokens,
                  generated, &token, &stop);
    ++pos;
  }
  // The steps still queued finish before the ring is read again.
  return atlas_status_join(status, atlas_backend_stream_synchronize(b, stream));
}

atlas_status atlas_llama_decode_greedy(atlas_llama_model *m, uint32_t token,
                                       uint32_t pos, size_t count,
                                       uint32_t *out_tokens) {
  size_t end = (size_t)pos + count, generated = 0;
  if ((int64_t)end > m->max_seq) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu steps from position %u pass the KV cache "
                             "(%lld positions)",
                             count, pos, (long long)m->max_seq);
  }
  size_t vocab = (size_t)m->config.vocab_size;
  if (token >= vocab) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "token %u is outside the vocabulary (%zu ids)",
                             token, vocab);
  }
  if (count == 0) return ATLAS_OK;
  if (can_run_ahead(m, (int64_t)pos + 1, (int64_t)end)) {
    return greedy_ahead(m, NULL, token, pos, end, 0, vocab, count, out_tokens,
                        &generated);
  }
  for (size_t i = 0; i < count; ++i) {
    ATLAS_RETURN_IF_ERROR(
        atlas_llama_decode_step(m, token, pos + (uint32_t)i, 0, NULL, &token));
    out_tokens[i] = token;
  }
  return ATLAS_OK;
}

atlas_status atlas_llama_generate_ex(atlas_llama_model *m,
                                     const uint32_t *prompt, size_t prompt_len,
                                     size_t steps,
                                     const atlas_arch_generate_options *options,
                                     uint32_t *out_tokens, size_t *out_count,
                                     atlas_logits_sink sink, void *sink_ctx) {
  if (out_count != NULL) *out_count = 0;
  if (prompt_len == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "generation needs at least one prompt token");
  }
  // Compared without the sum, which a steps near SIZE_MAX would wrap.
  size_t later = steps > 0 ? steps - 1 : 0;
  if (prompt_len > (uint64_t)m->max_seq ||
      later > (uint64_t)m->max_seq - prompt_len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu prompt tokens and %zu steps need more "
                             "positions than there are: the KV cache holds "
                             "%lld",
                             prompt_len, steps, (long long)m->max_seq);
  }
  size_t forwards = prompt_len + later;
  size_t vocab = (size_t)m->config.vocab_size;
  float *logits = malloc(vocab * sizeof(float));
  if (logits == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "cannot allocate %zu logits", vocab);
  }
  atlas_status status = ATLAS_OK;
  uint32_t token = prompt[0];
  size_t generated = 0, pos = 0;
  bool stop = false;
  if (m->prefill != NULL && prompt_len > 1) {
    // The whole prompt in one batched pass per layer (it uses RoPE at the
    // prompt's length, as the loop below does), then token by token. One
    // token goes through the decode step: its matrix-vector products read
    // the weights at full bandwidth where the prompt's tiles would not (a
    // swap's proving step took 15 ms on the H200 for a 4.8 GB model).
    status =
        atlas_llama_prefill(m, prompt, prompt_len, 0, logits, sink, sink_ctx);
    pos = prompt_len;
    // The first generated token, under the same EOS and on_token rules.
    if (status == ATLAS_OK)
      status = check_finite_logits(logits, vocab, prompt_len - 1);
    if (status == ATLAS_OK) {
      status = take(options, logits, 0, vocab, steps, out_tokens, &generated,
                    &token, &stop);
    }
  }
  bool chooser = options != NULL && options->choose != NULL;
  for (; status == ATLAS_OK && !stop && pos < forwards; ++pos) {
    // Past the prompt, with nothing reading logits on the host and the
    // RoPE frequencies fixed to the end: the device runs ahead.
    if (pos + 1 >= prompt_len && sink == NULL && !chooser &&
        can_run_ahead(m, (int64_t)(pos + 1), (int64_t)forwards)) {
      status =
          greedy_ahead(m, options, token, pos, forwards, (int64_t)prompt_len,
                       vocab, steps, out_tokens, &generated);
      break;
    }
    // transformers' generate runs the prompt as one forward, so dynamic
    // RoPE sees the prompt's length at every prompt position.
    int64_t seq_len = (int64_t)(pos + 1 > prompt_len ? pos + 1 : prompt_len);
    bool in_prompt = pos + 1 < prompt_len;
    // Logits cross to the host only when someone reads them; greedy
    // decoding brings back the id alone.
    float *want = sink != NULL || (!in_prompt && chooser) ? logits : NULL;
    uint32_t device_id = 0;
    status = atlas_llama_decode_step(m, token, (uint32_t)pos, seq_len, want,
                                     &device_id);
    if (status == ATLAS_OK && sink != NULL)
      status = sink(sink_ctx, logits, vocab);
    if (status != ATLAS_OK) break;
    if (in_prompt) {
      token = prompt[pos + 1];
    } else {
      status = take(options, want, device_id, vocab, steps, out_tokens,
                    &generated, &token, &stop);
    }
  }
  free(logits);
  if (out_count != NULL)
    *out_count = generated;  // on failure too: what on_token saw
  return status;
}

atlas_status atlas_llama_generate(atlas_llama_model *m, const uint32_t *prompt,
                                  size_t prompt_len, size_t steps,
                                  uint32_t *out_tokens, atlas_logits_sink sink,
                                  void *sink_ctx) {
  return atlas_llama_generate_ex(m, prompt, prompt_len, steps, NULL, out_tokens,
                                 NULL, sink, sink_ctx);
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

atlas_status atlas_llama_ctx_make(atlas_backend *backend, atlas_stream *stream,
                                  const atlas_llama_config *config,
                                  atlas_llama_scratch *scratch,
                                  atlas_llama_ctx *out_ctx) {
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
  uint32_t group = config->num_key_value_heads > 0
                       ? (uint32_t)(config->num_attention_heads /
                                    config->num_key_value_heads)
                       : 1;
  return atlas_llama_ops_resolve(&out_ctx->core, group,
                                 (uint32_t)config->head_dim, &out_ctx->ops);
}
