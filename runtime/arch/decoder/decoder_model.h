// The Llama model's parts, shared by loading (llama.c) and the forward pass
// (decoder_forward.c). Private to runtime/model.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_MODEL_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_MODEL_H_

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_buffers.h"
#include "atlas/runtime/arch/decoder/decoder_moe.h"
#include "atlas/runtime/arch/decoder/decoder_ops.h"
#include "atlas/runtime/arch/decoder/decoder_prefill.h"
#include "atlas/runtime/arch/decoder/decoder_shard.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/device/forward.h"
#include "atlas/runtime/formats/safetensors.h"
#include "atlas/runtime/quant/quant_linear.h"

// A weight matrix on the device in its checkpoint dtype, or (quant not
// NULL: data NULL, dtype F32, so that the 16-bit paths stay out) a
// quantized projection whose products go through module "quant".
typedef struct atlas_decoder_matrix {
  void *data;
  atlas_dtype dtype;
  const atlas_quant_linear *quant;
} atlas_decoder_matrix;

// A mixture-of-experts layer's weights (router.data NULL: a dense layer).
// The experts are reached through `tables`, device arrays of 64-bit
// addresses (kernels/moe_kernels.h): gate[experts], up[experts],
// down[experts], then the shared expert's gate, up and down (0 where there
// is none), built at load into the weight arena.
typedef struct atlas_decoder_moe_layer {
  atlas_decoder_matrix router;              // (experts, dim)
  atlas_decoder_matrix shared_expert_gate;  // (1, dim), the router's dtype
  atlas_dtype expert_dtype, shared_dtype;   // what the tables point at
  uint64_t *tables;
} atlas_decoder_moe_layer;

// One decoder layer. Matrices are row-major (out_features, in_features) as
// Hugging Face stores them; vectors are f32 whatever the checkpoint held.
// q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim.
typedef struct atlas_decoder_layer {
  float *attn_norm;             // (dim)
  float *ffn_norm;              // (dim)
  atlas_decoder_matrix wq;      // (q_dim, dim)
  atlas_decoder_matrix wk;      // (kv_dim, dim)
  atlas_decoder_matrix wv;      // (kv_dim, dim)
  atlas_decoder_matrix wo;      // (dim, q_dim)
  atlas_decoder_matrix w_gate;  // (hidden_dim, dim)
  atlas_decoder_matrix w_up;    // (hidden_dim, dim)
  atlas_decoder_matrix w_down;  // (dim, hidden_dim)
  // Optional, NULL unless the config asks for them:
  float *q_bias;                // (q_dim)        qkv_bias
  float *k_bias;                // (kv_dim)       qkv_bias
  float *v_bias;                // (kv_dim)       qkv_bias
  float *o_bias;                // (dim)          o_bias
  float *gate_bias;             // (hidden_dim)   mlp_bias
  float *up_bias;               // (hidden_dim)   mlp_bias
  float *down_bias;             // (dim)          mlp_bias
  float *q_norm;                // (head_dim)     qk_norm
  float *k_norm;                // (head_dim)     qk_norm
  float *attn_out_norm;         // (dim)      sandwich: attention's output
  float *ffn_out_norm;          // (dim)      sandwich: the MLP's output
  atlas_decoder_moe_layer moe;  // a mixture of experts in place of the MLP
} atlas_decoder_layer;

// Teardown resource "weights": every weight allocation of the model.
typedef struct atlas_decoder_weights {
  atlas_backend *backend;
  const atlas_decoder_config *config;  // the model's
  atlas_decoder_matrix embed;          // (vocab_size, dim)
  atlas_decoder_matrix lm_head;  // (vocab_size, dim); the embedding when tied
  float *final_norm;             // (dim)
  atlas_decoder_layer *layers;   // (layer)
  int64_t layer_count;
  // Every tensor is carved from one allocation (the arena, the only one
  // released): a driver allocation per tensor cost about 50 us each, 5 ms
  // of a 100 ms load.
  char *arena;
  size_t arena_used, arena_bytes;
  bool sizing;  // the first pass only adds up arena_bytes
  // A quantized checkpoint's projections: a block each (ledgered by format),
  // outside the arena, freed with it.
  atlas_quant_linear *quant;
  size_t quant_count, quant_cap;
} atlas_decoder_weights;

// Teardown resource "kv_cache": keys and values in `dtype` (F32, F16 or
// BF16; the load option kv_dtype), carved from the model's buffers
// (decoder_buffers.h), which own the memory.
typedef struct atlas_decoder_kv_cache {
  atlas_backend *backend;
  atlas_dtype dtype;
  void *keys;    // (layer, max_seq, kv_dim)
  void *values;  // (layer, max_seq, kv_dim)
} atlas_decoder_kv_cache;

// Layer l's keys (or values) in the cache: element offset l * max_seq *
// kv_dim in the cache's type.
static inline void *atlas_decoder_kv_layer(const atlas_decoder_kv_cache *kv,
                                           void *base, size_t elements) {
  return (char *)base + elements * atlas_dtype_size(kv->dtype);
}

// Teardown resource "scratch": activations of one token, and RoPE's
// inverse frequencies, carved from the model's buffers like the KV cache.
typedef struct atlas_decoder_scratch {
  atlas_backend *backend;
  float *x;               // (dim) the residual stream
  float *xb;              // (max(dim, q_dim))
  float *xb2;             // (max(dim, q_dim))
  float *q;               // (q_dim)
  float *hb;              // (hidden_dim)
  float *hb2;             // (hidden_dim)
  float *att;             // (n_heads, max_seq)
  float *logits;          // (vocab_size)
  float *inv_freq;        // (rot_dim / 2) from the rope config, see rope.h
  float *inv_freq_local;  // (rot_dim / 2) the sliding layers' (local_rope)
  float *k;               // (kv_dim) this step's key, before kv_store
  float *v;               // (kv_dim) this step's value, before kv_store
  uint32_t *step;         // (2) this step's token and position, read by kernels
  uint32_t *result;  // (2) argmax id, first non-finite logit (or UINT32_MAX)
  atlas_decoder_moe_buffers moe;  // the experts' activations, one token
} atlas_decoder_scratch;

// Teardown resource "decode_graph": the decode step captured once and
// replayed every token (its token and position are read from device
// memory). Made at the first step; dropped when RoPE's by-value factor
// changes (dynamic RoPE), and never tried again after a capture failed.
typedef struct atlas_decoder_graph {
  atlas_backend *backend;
  atlas_graph *graph;  // NULL until captured
  bool disabled;       // a load option, or a capture failed (logged once)
  bool no_overlap;     // launches wait for the one before (benchmarks)
} atlas_decoder_graph;

// Teardown resource "decode_ahead": what greedy decoding with the device a
// step ahead (decoder_forward.c, greedy_ahead) reads each step's id through: a
// ring of ATLAS_DECODER_AHEAD slots in pinned memory (two words a slot: the id,
// the first non-finite logit's index) and an event a slot. Made at load, so
// that a generate call allocates nothing (a pinned free may wait for the
// whole device).
enum { ATLAS_DECODER_AHEAD = 2 };
typedef struct atlas_decoder_ahead {
  atlas_backend *backend;
  uint32_t *ring;
  atlas_event *done[ATLAS_DECODER_AHEAD];
} atlas_decoder_ahead;

// The Llama forward context: the core one plus the model-derived values
// every Llama dispatch site needs. Built by atlas_decoder_ctx_make only.
typedef struct atlas_decoder_ctx {
  atlas_forward_ctx core;
  const atlas_decoder_config *config;
  atlas_decoder_scratch *scratch;
  atlas_decoder_ops ops;  // every kernel, resolved once
  // Module "quant"'s products, resolved for a quantized checkpoint only.
  atlas_quant_kernels quant;
  // Warps a row of the output and down projections (matvec_add), by the
  // GPU's size: decoder_forward.c, add_splits.
  uint32_t o_splits, down_splits;
  // Decode-attention blocks a KV head at long contexts, by the GPU's size
  // (atlas_decoder_decode_blocks).
  uint32_t decode_blocks;
  // A rank of a split (decoder_shard.h); NULL: the whole model.
  const atlas_decoder_shard *shard;
} atlas_decoder_ctx;

// Fails when a piece is missing rather than letting a dispatch site find out.
ATLAS_MUST_USE atlas_status atlas_decoder_ctx_make(
    atlas_backend *backend, atlas_stream *stream,
    const atlas_decoder_config *config, atlas_decoder_scratch *scratch,
    atlas_decoder_ctx *out_ctx);

// Teardown resource "kernel_registry": the model's reference to its kernels.
typedef struct atlas_decoder_kernels {
  atlas_kernel_registry *registry;
} atlas_decoder_kernels;

struct atlas_decoder_model {
  atlas_backend *backend;
  atlas_decoder_config config;
  int64_t max_seq;
  atlas_teardown *teardown;
  atlas_decoder_weights *weights;
  atlas_decoder_buffers *buffers;  // the memory of kv, scratch and prefill
  atlas_decoder_kv_cache *kv;
  atlas_decoder_scratch *scratch;
  atlas_decoder_kernels *kernels;
  atlas_decoder_prefill_scratch *prefill;  // NULL: prompts run token by token
  atlas_decoder_graph *graph;
  atlas_decoder_ahead *ahead;
  // The batch step's scratch (decoder_batch.c), made at the first step.
  struct atlas_decoder_batch_scratch *batch;
  atlas_decoder_ctx ctx;
  uint32_t host_step[2];  // the source of scratch->step's upload
  // Greedy steps wait for the host to read each id before the next is
  // queued (atlas_decoder_set_decode_ahead: benchmarks and tests).
  bool no_ahead;
  // RoPE on the host: what scratch->inv_freq was computed for.
  int64_t rot_dim;
  int64_t rope_seq_len;          // -1: not uploaded yet; 0: static (seq-free)
  float attention_factor;        // YaRN's cos/sin scale; 1 otherwise
  float attention_factor_local;  // the same for the local RoPE
};

// Layer l's RoPE table (scratch->inv_freq, or inv_freq_local on a sliding
// layer of a family with a local RoPE) and its cos/sin factor.
static inline const float *atlas_decoder_rope_table(
    const atlas_decoder_model *m, int64_t l, float *out_factor) {
  bool local =
      m->config.local_rope && atlas_decoder_layer_sliding(&m->config, l);
  *out_factor = local ? m->attention_factor_local : m->attention_factor;
  return local ? m->scratch->inv_freq_local : m->scratch->inv_freq;
}

// The attention kernel a launch takes, by the descriptor: the base one, or
// (ops->ext_attention) its decoder_ext twin, whose scale and cap are
// appended to `args` (room for two more) here.
static inline const atlas_kernel *atlas_decoder_pick_attention(
    const atlas_decoder_ops *o, const atlas_kernel *base,
    const atlas_kernel *ext, atlas_arg *args, size_t *count) {
  if (!o->ext_attention) return base;
  args[(*count)++] = ATLAS_ARG_F32(o->query_scale);
  args[(*count)++] = ATLAS_ARG_F32(o->attn_cap);
  return ext;
}

// The whole decode step on the context's stream (decoder_forward.c):
// embedding, layers, final norm, logits and the argmax (into
// scratch->result). decoder_decode.c runs it eagerly or captured as a graph.
ATLAS_MUST_USE atlas_status
atlas_decoder_step_body(const atlas_decoder_model *m);

// The descriptor's embedding scale (x *= embed_scale) and final soft-cap
// (x = cap * tanh(x / cap)) over n floats; nothing where it has none.
ATLAS_MUST_USE atlas_status atlas_decoder_scale(const atlas_decoder_ctx *ctx,
                                                float *x, uint64_t n);
ATLAS_MUST_USE atlas_status atlas_decoder_softcap(const atlas_decoder_ctx *ctx,
                                                  float *x, uint64_t n);

// Destroys the captured decode step, if any (it is captured again at the
// next step): its launches bake in RoPE's attention factor and the launch
// shapes, so a change to either drops it.
ATLAS_MUST_USE atlas_status atlas_decoder_drop_graph(atlas_decoder_model *m);

// What the RoPE frequencies depend on at seq_len (decoder_rope.c): only
// dynamic RoPE past max_position_embeddings depends on it.
int64_t atlas_decoder_rope_key(const atlas_decoder_model *m, int64_t seq_len);

// Makes scratch->inv_freq right for a forward whose last position is
// seq_len - 1 (only `dynamic` RoPE depends on it; see rope.h). Uploads only
// when the frequencies change.
ATLAS_MUST_USE atlas_status atlas_decoder_rope_update(atlas_decoder_model *m,
                                                      int64_t seq_len);

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_MODEL_H_
