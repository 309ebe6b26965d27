// The mixture-of-experts FFN (decoder_moe.h). Weights of every type the
// kernels take (F32, F16, BF16) are read as stored; activations are f32.
#include "atlas/runtime/arch/decoder/decoder_moe.h"

#include "atlas/kernels/moe_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/base/checked_math.h"

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define F(x) ATLAS_ARG_F32(x)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

// count x width 4-byte elements, checked (rows come from a load option).
static atlas_status take_n(atlas_decoder_buffers *b, uint64_t count,
                           uint64_t width, bool zeroed, void **out) {
  uint64_t bytes = count;
  if (!atlas_mul_u64(&bytes, width) || !atlas_mul_u64(&bytes, 4) ||
      bytes > SIZE_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the mixture-of-experts scratch's sizes overflow "
                             "64 bits (%llu rows of %llu)",
                             (unsigned long long)count,
                             (unsigned long long)width);
  }
  return zeroed ? atlas_decoder_buffers_take_zeroed(b, (size_t)bytes, out)
                : atlas_decoder_buffers_take(b, (size_t)bytes, out);
}

atlas_status atlas_decoder_moe_take(atlas_decoder_moe_buffers *mb,
                                    atlas_decoder_buffers *b,
                                    const atlas_decoder_config *c,
                                    int64_t rows) {
  if (c->num_experts == 0 || rows <= 0) return ATLAS_OK;
  // Each dimension is at most ATLAS_DECODER_MAX_DIM and k at most
  // ATLAS_MOE_MAX_K, so rows * k fits; take_n checks the rest.
  uint64_t r = (uint64_t)rows, e = (uint64_t)c->num_experts;
  uint64_t assign = r * (uint64_t)c->num_experts_per_tok;
  uint64_t hidden = (uint64_t)c->hidden_size;
  uint64_t shared = (uint64_t)c->shared_expert_intermediate_size;
  struct {
    void **out;
    uint64_t count, width;
    bool zeroed;
  } parts[] = {
      {(void **)&mb->ids, assign, 1, false},
      {(void **)&mb->weights, assign, 1, false},
      {(void **)&mb->shared_gate, r, 1, false},
      {(void **)&mb->counts, e, 1, false},
      {(void **)&mb->offsets, e + 1, 1, false},
      {(void **)&mb->tiles, e + 1, 1, false},
      {(void **)&mb->order, assign, 1, false},
      {(void **)&mb->act, assign, (uint64_t)c->moe_intermediate_size, false},
      {(void **)&mb->y, assign, hidden, false},
      {(void **)&mb->zero_ids, r, 1, true},
      {(void **)&mb->s_counts, 1, 1, false},
      {(void **)&mb->s_offsets, 2, 1, false},
      {(void **)&mb->s_tiles, 2, 1, false},
      {(void **)&mb->s_order, r, 1, false},
      {(void **)&mb->s_act, r, shared ? shared : 1, false},
      {(void **)&mb->s_y, r, hidden, false},
  };
  for (size_t i = 0; i < COUNT(parts); ++i) {
    ATLAS_RETURN_IF_ERROR(take_n(b, parts[i].count, parts[i].width,
                                 parts[i].zeroed, parts[i].out));
  }
  return ATLAS_OK;
}

static atlas_status launch(const atlas_decoder_ctx *ctx, const atlas_kernel *k,
                           uint32_t gx, uint32_t gy, uint32_t block,
                           uint32_t shared, const atlas_arg *args,
                           size_t count) {
  atlas_dim3 grid = {gx ? gx : 1, gy ? gy : 1, 1};
  atlas_dim3 threads = {block, 1, 1};
  return atlas_forward_launch_shared(&ctx->core, k, grid, threads, shared, args,
                                     count);
}

static atlas_decoder_wtype wt(atlas_dtype d) {
  return atlas_decoder_wtype_of(d);
}

// Router over n tokens of x: ids, weights and the shared expert's gate.
static atlas_status route(const atlas_decoder_ctx *ctx,
                          const atlas_decoder_moe_layer *L,
                          const atlas_decoder_moe_buffers *mb, const float *x,
                          uint32_t n) {
  const atlas_decoder_config *c = ctx->config;
  uint32_t e = (uint32_t)c->num_experts;
  atlas_arg args[] = {P(mb->ids),
                      P(mb->weights),
                      P(mb->shared_gate),
                      P(x),
                      P(L->router.data),
                      P(L->shared_expert_gate.data),
                      U(n),
                      U(e),
                      U((uint32_t)c->hidden_size),
                      U((uint32_t)c->num_experts_per_tok),
                      U(c->norm_topk_prob ? ATLAS_MOE_NORM_TOPK : 0u)};
  return launch(ctx, ctx->ops.moe_router[wt(L->router.dtype)], n, 1,
                ATLAS_MOE_ROUTER_BLOCK, e * (uint32_t)sizeof(float), args,
                COUNT(args));
}

// The decode form of one expert set: act and y for n_assign assignments
// (token a / k, expert ids[a]), reading only the chosen experts.
static atlas_status experts_vec(const atlas_decoder_ctx *ctx, atlas_dtype t,
                                const uint64_t *gate, const uint64_t *up,
                                const uint64_t *down, const uint32_t *ids,
                                const float *x, float *act, float *y,
                                uint32_t n_assign, uint32_t k, uint32_t inter) {
  uint32_t hidden = (uint32_t)ctx->config->hidden_size;
  atlas_arg gu[] = {P(act),      P(x), P(ids),    P(gate), P(up),
                    U(n_assign), U(k), U(hidden), U(inter)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.moe_gate_up_vec[wt(t)],
                               blocks(inter, ATLAS_MOE_VEC_ROWS_PER_BLOCK),
                               n_assign, ATLAS_MOE_BLOCK, 0, gu, COUNT(gu)));
  atlas_arg dn[] = {P(y),        P(act),    P(ids),  P(down),
                    U(n_assign), U(hidden), U(inter)};
  return launch(ctx, ctx->ops.moe_down_vec[wt(t)],
                blocks(hidden, ATLAS_MOE_VEC_ROWS_PER_BLOCK), n_assign,
                ATLAS_MOE_BLOCK, 0, dn, COUNT(dn));
}

// The shared expert's gate, up and down (decoder_model.h): laid out as
// the tables of an expert set of one.
static const uint64_t *shared_table(const atlas_decoder_moe_layer *L,
                                    int64_t experts) {
  return L->tables + 3 * experts;
}

// x += sum of the weighted experts (+ the gated shared expert).
static atlas_status combine(const atlas_decoder_ctx *ctx,
                            const atlas_decoder_moe_layer *L,
                            const atlas_decoder_moe_buffers *mb, float *x,
                            uint32_t n) {
  const atlas_decoder_config *c = ctx->config;
  bool shared = c->shared_expert_intermediate_size > 0;
  uint32_t hidden = (uint32_t)c->hidden_size;
  atlas_arg args[] = {
      P(x),
      P(mb->y),
      P(mb->weights),
      P(shared ? mb->s_y : NULL),
      P(shared && L->shared_expert_gate.data != NULL ? mb->shared_gate : NULL),
      U(n),
      U((uint32_t)c->num_experts_per_tok),
      U(hidden),
      U(1)};
  return launch(ctx, ctx->ops.moe_combine,
                blocks((uint64_t)n * hidden, ATLAS_MOE_BLOCK), 1,
                ATLAS_MOE_BLOCK, 0, args, COUNT(args));
}

atlas_status atlas_decoder_moe_token(const atlas_decoder_model *m,
                                     const atlas_decoder_layer *layer) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  const atlas_decoder_moe_layer *L = &layer->moe;
  atlas_decoder_scratch *s = ctx->scratch;
  const atlas_decoder_moe_buffers *mb = &s->moe;
  atlas_arg norm[] = {P(s->xb), P(s->x), P(layer->ffn_norm),
                      U((uint32_t)c->hidden_size), F((float)c->rms_norm_eps)};
  ATLAS_RETURN_IF_ERROR(
      launch(ctx, ctx->ops.rmsnorm, 1, 1, 1024, 0, norm, COUNT(norm)));
  ATLAS_RETURN_IF_ERROR(route(ctx, L, mb, s->xb, 1));
  int64_t e = c->num_experts;
  uint32_t k = (uint32_t)c->num_experts_per_tok;
  ATLAS_RETURN_IF_ERROR(experts_vec(ctx, L->expert_dtype, L->tables,
                                    L->tables + e, L->tables + 2 * e, mb->ids,
                                    s->xb, mb->act, mb->y, k, k,
                                    (uint32_t)c->moe_intermediate_size));
  if (c->shared_expert_intermediate_size > 0) {
    const uint64_t *t = shared_table(L, e);
    ATLAS_RETURN_IF_ERROR(experts_vec(
        ctx, L->shared_dtype, t, t + 1, t + 2, mb->zero_ids, s->xb, mb->s_act,
        mb->s_y, 1, 1, (uint32_t)c->shared_expert_intermediate_size));
  }
  return combine(ctx, L, mb, s->x, 1);
}

// The grouped form of one expert set over n_assign assignments of k a
// token: the counting sort by expert, then tiles of one expert's rows.
static atlas_status experts_grouped(const atlas_decoder_ctx *ctx, atlas_dtype t,
                                    const uint64_t *tables, uint32_t experts,
                                    const uint32_t *ids, uint32_t *counts,
                                    uint32_t *offsets, uint32_t *tiles,
                                    uint32_t *order, const float *x, float *act,
                                    float *y, uint32_t n_assign, uint32_t k,
                                    uint32_t inter) {
  uint32_t hidden = (uint32_t)ctx->config->hidden_size;
  uint32_t sort_grid = blocks(experts, ATLAS_MOE_BLOCK / 32);
  atlas_arg count[] = {P(counts), P(ids), U(n_assign), U(experts)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.moe_count, sort_grid, 1,
                               ATLAS_MOE_BLOCK, 0, count, COUNT(count)));
  atlas_arg scatter[] = {P(offsets), P(tiles),    P(order),  P(counts),
                         P(ids),     U(n_assign), U(experts)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.moe_scatter, sort_grid, 1,
                               ATLAS_MOE_BLOCK, 0, scatter, COUNT(scatter)));
  uint32_t tile_rows = atlas_moe_tile_rows(n_assign, experts);
  atlas_arg gu[] = {P(act),
                    P(x),
                    P(order),
                    P(offsets),
                    P(tiles),
                    P(tables),
                    P(tables + experts),
                    U(experts),
                    U(k),
                    U(hidden),
                    U(inter)};
  ATLAS_RETURN_IF_ERROR(launch(ctx, ctx->ops.moe_gate_up[wt(t)],
                               blocks(inter, ATLAS_MOE_TILE_COLS), tile_rows,
                               ATLAS_MOE_BLOCK, 0, gu, COUNT(gu)));
  atlas_arg dn[] = {P(y),       P(act),    P(order),
                    P(offsets), P(tiles),  P(tables + 2 * (size_t)experts),
                    U(experts), U(hidden), U(inter)};
  return launch(ctx, ctx->ops.moe_down[wt(t)],
                blocks(hidden, ATLAS_MOE_TILE_COLS), tile_rows, ATLAS_MOE_BLOCK,
                0, dn, COUNT(dn));
}

atlas_status atlas_decoder_moe_rows(const atlas_decoder_model *m,
                                    const atlas_decoder_layer *layer,
                                    uint32_t n) {
  const atlas_decoder_ctx *ctx = &m->ctx;
  const atlas_decoder_config *c = ctx->config;
  const atlas_decoder_moe_layer *L = &layer->moe;
  atlas_decoder_prefill_scratch *s = m->prefill;
  const atlas_decoder_moe_buffers *mb = &s->moe;
  atlas_arg norm[] = {P(s->xb),
                      P(s->x),
                      P(layer->ffn_norm),
                      U((uint32_t)c->hidden_size),
                      F((float)c->rms_norm_eps),
                      U(n)};
  ATLAS_RETURN_IF_ERROR(
      launch(ctx, ctx->ops.rmsnorm_rows, n, 1, 256, 0, norm, COUNT(norm)));
  ATLAS_RETURN_IF_ERROR(route(ctx, L, mb, s->xb, n));
  uint32_t e = (uint32_t)c->num_experts, k = (uint32_t)c->num_experts_per_tok;
  ATLAS_RETURN_IF_ERROR(
      experts_grouped(ctx, L->expert_dtype, L->tables, e, mb->ids, mb->counts,
                      mb->offsets, mb->tiles, mb->order, s->xb, mb->act, mb->y,
                      n * k, k, (uint32_t)c->moe_intermediate_size));
  if (c->shared_expert_intermediate_size > 0) {
    // One expert every token picks (all ids 0): its gate, up and down sit
    // in the table as an expert set of one.
    ATLAS_RETURN_IF_ERROR(experts_grouped(
        ctx, L->shared_dtype, shared_table(L, e), 1, mb->zero_ids, mb->s_counts,
        mb->s_offsets, mb->s_tiles, mb->s_order, s->xb, mb->s_act, mb->s_y, n,
        1, (uint32_t)c->shared_expert_intermediate_size));
  }
  return combine(ctx, L, mb, s->x, n);
}
