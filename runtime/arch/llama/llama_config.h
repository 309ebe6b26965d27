// Llama config.json: the keys the forward pass needs, with Hugging Face's
// defaults, validated so that later code can trust every value.
#ifndef ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_
#define ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Every integer dimension is at most this, so products of two or three of
// them fit comfortably in int64 (and any one fits in an int).
#define ATLAS_LLAMA_MAX_DIM ((int64_t)0x7fffffff)

typedef struct atlas_llama_config {
  int64_t vocab_size;               // required
  int64_t hidden_size;              // required
  int64_t intermediate_size;        // required
  int64_t num_hidden_layers;        // required
  int64_t num_attention_heads;      // required
  int64_t num_key_value_heads;      // default: num_attention_heads
  int64_t head_dim;                 // default: hidden_size / heads
  int64_t max_position_embeddings;  // default: 2048
  double rms_norm_eps;              // default: 1e-6
  double rope_theta;  // default 10000; top level or rope_parameters.rope_theta
  bool tie_word_embeddings;         // default: false
} atlas_llama_config;

// Parses config.json text (`len` bytes, need not be NUL-terminated).
// Rejects: missing required keys, wrong JSON types, non-positive values,
// heads not dividing hidden_size (when head_dim is defaulted), kv heads not
// dividing heads, odd head_dim (RoPE pairs halves), and features the runtime
// does not implement (rope scaling, attention/MLP biases, activations other
// than silu) with UNIMPLEMENTED. Messages name `path_for_errors`.
ATLAS_MUST_USE atlas_status atlas_llama_config_parse(const char *text, size_t len,
                                      const char *path_for_errors,
                                      atlas_llama_config *out_config);

// Reads and parses a config.json file.
ATLAS_MUST_USE atlas_status atlas_llama_config_load(const char *path,
                                     atlas_llama_config *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_CONFIG_H_
