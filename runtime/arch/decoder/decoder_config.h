// Llama config.json: the keys the forward pass needs, with Hugging Face's
// defaults, validated so that later code can trust every value.
#ifndef ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_
#define ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/rope/rope.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Every integer dimension is at most this, so products of two or three of
// them fit comfortably in int64 (and any one fits in an int).
#define ATLAS_DECODER_MAX_DIM ((int64_t)0x7fffffff)

// The decoder families that share this forward pass; each is its own folder
// and table row (runtime/arch/<family>/) that picks one of these.
typedef enum atlas_decoder_family {
  ATLAS_DECODER_FAMILY_LLAMA = 0,  // Llama 2/3: attention_bias, mlp_bias
  ATLAS_DECODER_FAMILY_QWEN2,      // q/k/v biases; sliding window by layer
  ATLAS_DECODER_FAMILY_QWEN3,      // per-head q_norm/k_norm; head_dim 128
  ATLAS_DECODER_FAMILY_MISTRAL,    // sliding_window on every layer
} atlas_decoder_family;

typedef struct atlas_decoder_config {
  atlas_decoder_family family;
  int64_t vocab_size;           // required
  int64_t hidden_size;          // required
  int64_t intermediate_size;    // required
  int64_t num_hidden_layers;    // required
  int64_t num_attention_heads;  // required
  int64_t num_key_value_heads;  // absent: 32 (Qwen), 8 (Mistral), else heads
  int64_t head_dim;             // default: hidden_size / heads
  int64_t max_position_embeddings;  // default: 2048; Qwen 32768; Mistral 131072
  double rms_norm_eps;              // default: 1e-6
  double rope_theta;  // default 10000; top level or rope_parameters.rope_theta
  atlas_rope_config rope;    // type and scaling (theta == rope_theta)
  bool tie_word_embeddings;  // default: false
  bool qkv_bias;             // q_proj, k_proj, v_proj carry .bias tensors
  bool o_bias;               // o_proj carries a .bias
  bool mlp_bias;             // gate/up/down_proj carry .bias tensors
  bool qk_norm;              // per-head RMSNorm of q and k before RoPE (Qwen3)
  int64_t sliding_window;    // 0: every layer attends to all positions
  int64_t window_first_layer;  // layers >= this attend to the last
                               // sliding_window positions only
  // model_type llama's sliding_window (0: none): every layer still attends
  // to all positions, as LlamaAttention does, but the context is held to
  // this many positions (past it transformers' generate, whose cache keeps
  // the last sliding_window - 1 keys, parts from its own forward).
  int64_t context_window;
} atlas_decoder_config;

// Parses config.json text (`len` bytes, need not be NUL-terminated).
// Family Llama. Rejects: missing required keys, wrong JSON types,
// non-positive values, heads not dividing hidden_size (when head_dim is
// defaulted), kv heads not dividing heads, odd head_dim (RoPE pairs halves),
// and features the runtime does not implement (unknown rope types,
// use_sliding_window, activations other than silu, ...) with UNIMPLEMENTED.
// Messages name `path_for_errors`.
ATLAS_MUST_USE atlas_status atlas_decoder_config_parse(
    const char *text, size_t len, const char *path_for_errors,
    atlas_decoder_config *out_config);

// As atlas_decoder_config_parse for one family: the keys that family
// implements are read, every math-changing key it does not implement is
// refused by name (UNIMPLEMENTED).
ATLAS_MUST_USE atlas_status atlas_decoder_config_parse_family(
    atlas_decoder_family family, const char *text, size_t len,
    const char *path_for_errors, atlas_decoder_config *out_config);

// Sliding window of layer `layer` (0: none).
static inline int64_t atlas_decoder_layer_window(const atlas_decoder_config *c,
                                                 int64_t layer) {
  return layer >= c->window_first_layer ? c->sliding_window : 0;
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

// Reads and parses a config.json file (as Llama's: atlas_decoder_config_parse).
ATLAS_MUST_USE atlas_status
atlas_decoder_config_load(const char *path, atlas_decoder_config *out_config);
// The same as `family`'s (atlas_decoder_config_parse_family).
ATLAS_MUST_USE atlas_status
atlas_decoder_config_load_family(atlas_decoder_family family, const char *path,
                                 atlas_decoder_config *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_
