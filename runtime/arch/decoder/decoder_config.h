// The decoder's config: the dimensions and the per-family descriptor read
// from config.json (shared keys here, each family's in its folder), with
// Hugging Face's defaults, validated so that later code can trust every
// value.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_CONFIG_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "atlas/runtime/arch/rope/rope.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/quant/quant_config.h"

#ifdef __cplusplus
extern "C" {
#endif

// Every integer dimension is at most this, so products of two or three of
// them fit comfortably in int64 (and any one fits in an int).
#define ATLAS_DECODER_MAX_DIM ((int64_t)0x7fffffff)

struct atlas_decoder_family;

// The MLP's activation: act(gate) * up.
typedef enum atlas_decoder_act {
  ATLAS_DECODER_ACT_SILU = 0,   // silu (also spelt swish)
  ATLAS_DECODER_ACT_GELU_TANH,  // gelu_pytorch_tanh (Gemma)
} atlas_decoder_act;

// Layers a window pattern can name one by one (a bit each).
#define ATLAS_DECODER_MAX_PATTERN_LAYERS 1024

// A model as the decoder reads it: the dimensions, and the descriptor (what
// each layer computes), filled from config.json by the family
// (runtime/arch/<family>/, an atlas_decoder_family) and validated so that
// later code can trust every value.
typedef struct atlas_decoder_config {
  const struct atlas_decoder_family *family;  // its names and its reader
  int64_t vocab_size;                         // required
  int64_t hidden_size;                        // required
  int64_t intermediate_size;                  // required
  int64_t num_hidden_layers;                  // required
  int64_t num_attention_heads;                // required
  int64_t num_key_value_heads;                // absent: the family's default
  int64_t head_dim;                 // absent: the family's, else hidden / heads
  int64_t max_position_embeddings;  // absent: the family's default
  double rms_norm_eps;              // default: 1e-6
  double rope_theta;  // default 10000; top level or rope_parameters.rope_theta
  atlas_rope_config rope;    // type and scaling (theta == rope_theta)
  bool tie_word_embeddings;  // default: false
  // ---- the descriptor ----
  bool qkv_bias;           // q_proj, k_proj, v_proj carry .bias tensors
  bool o_bias;             // o_proj carries a .bias
  bool mlp_bias;           // gate/up/down_proj carry .bias tensors
  bool qk_norm;            // per-head RMSNorm of q and k before RoPE
  bool fused_qkv;          // one qkv_proj tensor: q rows, k rows, v rows
  bool fused_gate_up;      // one gate_up_proj tensor: gate rows, up rows
  bool norm_one_plus;      // RMSNorm scales by (1 + w), not w (Gemma)
  bool sandwich;           // norms after attention and after the MLP too
  atlas_decoder_act act;   // the MLP's activation
  double embed_scale;      // the embedding is scaled by this (1: none)
  double attn_softcap;     // scores = cap * tanh(scores / cap) (0: none)
  double final_softcap;    // logits = cap * tanh(logits / cap) (0: none)
  double query_scale;      // scores = q.k * this (1 / sqrt(head_dim))
  int64_t sliding_window;  // 0: every layer attends to all positions
  // Layers that attend to the last sliding_window positions only: bit l.
  uint64_t sliding[ATLAS_DECODER_MAX_PATTERN_LAYERS / 64];
  // RoPE of the sliding layers where it differs from `rope` (Gemma 3's
  // rope_local_base_freq); local_rope false: every layer uses `rope`.
  bool local_rope;
  atlas_rope_config rope_local;
  // model_type llama's sliding_window (0: none): every layer still attends
  // to all positions, as LlamaAttention does, but the context is held to
  // this many positions (past it transformers' generate, whose cache keeps
  // the last sliding_window - 1 keys, parts from its own forward).
  int64_t context_window;
  // Mixture-of-experts FFN (num_experts 0: every layer's MLP is dense). On
  // the layers `moe_layers` names (decoder_sparse_step, mlp_only_layers),
  // the MLP is a router over num_experts experts of moe_intermediate_size,
  // num_experts_per_tok of them a token, their weights divided by their sum
  // where norm_topk_prob, plus a shared expert of
  // shared_expert_intermediate_size (0: none) scaled by sigmoid(a gate);
  // the other layers keep the dense MLP of intermediate_size.
  int64_t num_experts, num_experts_per_tok, moe_intermediate_size;
  int64_t shared_expert_intermediate_size;
  bool norm_topk_prob;
  uint64_t moe_layers[ATLAS_DECODER_MAX_PATTERN_LAYERS / 64];
  // config.json's quantization_config (method ATLAS_QUANT_NONE: none): every
  // *_proj matrix of every layer is stored in this format (a module kept in
  // its stored type is refused when the config is read, so `keep` is always
  // empty here and the config stays a plain value).
  atlas_quant_config quant;
} atlas_decoder_config;

// A mixture-of-experts family's tensor names, relative to
// "model.layers.{i}.": the router ([num_experts, hidden]); each expert's
// gate, up and down as "<expert_prefix><N>.<gate>" (Qwen3-MoE:
// "mlp.experts.", "gate_proj.weight"; Mixtral: "block_sparse_moe.experts.",
// "w1.weight"), or a checkpoint's fused 3-D tensors where the family names
// them (fused_gate_up [experts, 2 * moe_inter, hidden], gate rows first;
// fused_down [experts, hidden, moe_inter]; NULL: not read; fused_router:
// the router's name in that layout, NULL: `router`); the shared expert's
// three and its gate ([1, hidden]), NULL where the family has none.
typedef struct atlas_decoder_moe_names {
  const char *router;
  const char *expert_prefix;
  const char *gate, *up, *down;
  const char *fused_gate_up, *fused_down, *fused_router;
  const char *shared_gate, *shared_up, *shared_down, *shared_expert_gate;
} atlas_decoder_moe_names;

// A family of this decoder (Llama, Qwen2, Gemma 2, ...): a constant in its
// folder (runtime/arch/<family>/), named by its registry row's parser.
typedef struct atlas_decoder_family {
  const char *name;  // its model_type, for messages
  // What its config class gives absent keys (0: derived: heads, hidden /
  // heads).
  int64_t max_positions, kv_heads, head_dim;
  double rms_norm_eps;  // 0: 1e-6
  // The tensor of each role (atlas_decoder_weight), relative to
  // "model.layers.{i}." for per-layer ones; NULL entries: not in this
  // family's layout. NULL: the Llama layout (atlas_decoder_llama_names).
  const char *const *tensor_names;
  // A mixture-of-experts family's expert tensors (NULL: none).
  const atlas_decoder_moe_names *moe_names;
  // Keys of other architectures (decoder_config.c, kForeignKeys) this family
  // reads itself, NULL-terminated (NULL: none): the rest are refused.
  const char *const *keys;
  // Reads the RoPE keys into cfg->rope (and cfg->rope_local) where the
  // family spells them its own way (NULL: atlas_rope_config_parse).
  atlas_status (*read_rope)(const char *path, const json_t *root,
                            atlas_decoder_config *cfg);
  // Reads the family's own keys into the descriptor, after the shared ones
  // (dimensions, RoPE, quantization_config), refusing by name every
  // math-changing key it does not implement (UNIMPLEMENTED).
  atlas_status (*read)(const char *path, const json_t *root,
                       atlas_decoder_config *cfg);
} atlas_decoder_family;

// Parses config.json text (`len` bytes, need not be NUL-terminated) as
// `family` reads it: the shared keys (dimensions, RoPE, the refused keys of
// other architectures), then the family's. Rejects: missing required keys,
// wrong JSON types, non-positive values, heads not dividing hidden_size (when
// head_dim is defaulted), kv heads not dividing heads, odd head_dim (RoPE
// pairs halves), and features the runtime does not implement (UNIMPLEMENTED,
// by name). Messages name `path_for_errors`.
ATLAS_MUST_USE atlas_status atlas_decoder_config_parse(
    const atlas_decoder_family *family, const char *text, size_t len,
    const char *path_for_errors, atlas_decoder_config *out_config);

// Reads and parses a config.json file (atlas_decoder_config_parse).
ATLAS_MUST_USE atlas_status
atlas_decoder_config_load(const atlas_decoder_family *family, const char *path,
                          atlas_decoder_config *out_config);

// ---- for the families' readers --------------------------------------------

// A present, non-null key (HF writes null for "use the default").
const json_t *atlas_decoder_json_present(const json_t *obj, const char *key);
// A positive integer key (at most ATLAS_DECODER_MAX_DIM); `required` says
// whether absence is an error (else *out is left alone).
ATLAS_MUST_USE atlas_status atlas_decoder_json_dim(const char *path,
                                                   const json_t *root,
                                                   const char *key,
                                                   bool required, int64_t *out);
// An optional positive finite number that fits a float32.
ATLAS_MUST_USE atlas_status atlas_decoder_json_positive(const char *path,
                                                        const json_t *obj,
                                                        const char *key,
                                                        bool *found,
                                                        double *out);
// An optional true / false (absent: *out is left alone).
ATLAS_MUST_USE atlas_status atlas_decoder_json_bool(const char *path,
                                                    const json_t *root,
                                                    const char *key, bool *out);
// A present key must be null or false: anything else asks for math the
// family does not do, refused naming the key, its value and `why`.
ATLAS_MUST_USE atlas_status atlas_decoder_json_refuse(const char *path,
                                                      const json_t *root,
                                                      const char *key,
                                                      const char *why);
// layer_types, when present: one "full_attention" or "sliding_attention"
// per layer, into cfg->sliding (*found says whether the key was there).
ATLAS_MUST_USE atlas_status
atlas_decoder_json_layer_types(const char *path, const json_t *root,
                               atlas_decoder_config *cfg, bool *found);
// The activation under `key` ("silu"/"swish"; "gelu_pytorch_tanh" where
// `gelu_ok`); absent: *out is left alone. Anything else is refused by name.
ATLAS_MUST_USE atlas_status atlas_decoder_json_act(const char *path,
                                                   const json_t *root,
                                                   const char *key,
                                                   bool gelu_ok,
                                                   atlas_decoder_act *out);
// Layers first..num_hidden_layers-1 attend to the last `window` positions
// (window 0: no layer does). Past ATLAS_DECODER_MAX_PATTERN_LAYERS layers
// refused by name.
ATLAS_MUST_USE atlas_status atlas_decoder_window_from(const char *path,
                                                      atlas_decoder_config *cfg,
                                                      int64_t window,
                                                      int64_t first);

// partial_rotary_factor other than 1 where the family rotates the whole
// head: refused naming the family.
ATLAS_MUST_USE atlas_status atlas_decoder_refuse_partial_rotary(
    const char *path, const atlas_decoder_config *cfg);

// LongRoPE where the family has not been checked against transformers with
// it: refused naming the family.
ATLAS_MUST_USE atlas_status atlas_decoder_refuse_longrope(
    const char *path, const atlas_decoder_config *cfg);

// The mixture-of-experts keys shared by Qwen2-MoE, Qwen3-MoE and Qwen3-Next
// (num_experts, num_experts_per_tok, norm_topk_prob, moe_intermediate_size,
// decoder_sparse_step, mlp_only_layers), with their config class's defaults
// (`experts`, `per_tok`), into cfg; checks the router's limits
// (kernels/moe_kernels.h) and refuses what the MoE FFN does not run with
// (a GELU or sandwich MLP; quantized weights are refused when
// quantization_config is read) by name.
ATLAS_MUST_USE atlas_status atlas_decoder_json_moe(const char *path,
                                                   const json_t *root,
                                                   atlas_decoder_config *cfg,
                                                   int64_t experts,
                                                   int64_t per_tok);
// The router's limits and the features the MoE FFN does not combine with,
// for a config whose MoE fields are filled (atlas_decoder_json_moe calls it).
ATLAS_MUST_USE atlas_status
atlas_decoder_moe_validate(const char *path, const atlas_decoder_config *cfg);

// Whether layer `layer`'s MLP is the mixture of experts.
static inline bool atlas_decoder_layer_moe(const atlas_decoder_config *c,
                                           int64_t layer) {
  return c->num_experts > 0 && layer >= 0 &&
         layer < ATLAS_DECODER_MAX_PATTERN_LAYERS &&
         ((c->moe_layers[layer / 64] >> (layer % 64)) & 1) != 0;
}

// Marks layer `layer` sliding (or not).
static inline void atlas_decoder_set_sliding(atlas_decoder_config *c,
                                             int64_t layer, bool sliding) {
  uint64_t bit = (uint64_t)1 << (layer % 64);
  if (sliding) {
    c->sliding[layer / 64] |= bit;
  } else {
    c->sliding[layer / 64] &= ~bit;
  }
}

// Whether layer `layer` attends to the last sliding_window positions only.
static inline bool atlas_decoder_layer_sliding(const atlas_decoder_config *c,
                                               int64_t layer) {
  return c->sliding_window > 0 && layer >= 0 &&
         layer < ATLAS_DECODER_MAX_PATTERN_LAYERS &&
         ((c->sliding[layer / 64] >> (layer % 64)) & 1) != 0;
}

// The RoPE of layer `layer`: the local one on sliding layers where the
// family has one.
static inline const atlas_rope_config *atlas_decoder_layer_rope(
    const atlas_decoder_config *c, int64_t layer) {
  return c->local_rope && atlas_decoder_layer_sliding(c, layer) ? &c->rope_local
                                                                : &c->rope;
}

// Sliding window of layer `layer` (0: none).
static inline int64_t atlas_decoder_layer_window(const atlas_decoder_config *c,
                                                 int64_t layer) {
  return atlas_decoder_layer_sliding(c, layer) ? c->sliding_window : 0;
}

// The positions the model may use: max_position_embeddings, or a smaller
// context_window (model_type llama's sliding_window). `out_key` (may be
// NULL) gets the config.json key that sets it.
static inline int64_t atlas_decoder_context(const atlas_decoder_config *c,
                                            const char **out_key) {
  bool window =
      c->context_window > 0 && c->context_window < c->max_position_embeddings;
  if (out_key != NULL) {
    *out_key = window ? "sliding_window" : "max_position_embeddings";
  }
  return window ? c->context_window : c->max_position_embeddings;
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_CONFIG_H_
