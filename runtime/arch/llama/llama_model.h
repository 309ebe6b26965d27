// The Llama model's parts, shared by loading (llama.c) and the forward pass
// (llama_forward.c). Private to runtime/model.
#ifndef ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_MODEL_H_
#define ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_MODEL_H_

#include "atlas/runtime/forward.h"
#include "atlas/runtime/arch/llama/llama_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/llama/llama_prefill.h"
#include "atlas/runtime/formats/safetensors.h"

// A weight matrix on the device in its checkpoint dtype.
typedef struct atlas_llama_matrix {
  void *data;
  atlas_dtype dtype;
} atlas_llama_matrix;

typedef struct atlas_llama_layer {
  float *attn_norm, *ffn_norm;  // f32 whatever the checkpoint held
  atlas_llama_matrix wq, wk, wv, wo, w_gate, w_up, w_down;
} atlas_llama_layer;

// Teardown resource "weights": every weight allocation of the model.
typedef struct atlas_llama_weights {
  atlas_backend *backend;
  atlas_llama_matrix embed, lm_head;
  float *final_norm;
  atlas_llama_layer *layers;
  int64_t layer_count;
  void **allocs;  // everything allocated, in order, for release
  size_t alloc_count, alloc_cap;
} atlas_llama_weights;

// Teardown resource "kv_cache": [layer][seq][kv_dim] f32, keys and values.
typedef struct atlas_llama_kv_cache {
  atlas_backend *backend;
  float *keys, *values;
} atlas_llama_kv_cache;

// Teardown resource "scratch": activations of one token.
typedef struct atlas_llama_scratch {
  atlas_backend *backend;
  float *x, *xb, *xb2, *q, *hb, *hb2, *att, *logits;
} atlas_llama_scratch;

// The Llama forward context: the core one plus the model-derived values
// every Llama dispatch site needs. Built by atlas_llama_ctx_make only.
typedef struct atlas_llama_ctx {
  atlas_forward_ctx core;
  const atlas_llama_config *config;
  atlas_llama_scratch *scratch;
} atlas_llama_ctx;

// Fails when a piece is missing rather than letting a dispatch site find out.
atlas_status atlas_llama_ctx_make(atlas_backend *backend, atlas_stream *stream,
                                  const atlas_llama_config *config,
                                  atlas_llama_scratch *scratch,
                                  atlas_llama_ctx *out_ctx);

// Teardown resource "kernel_registry": the model's reference to its kernels.
typedef struct atlas_llama_kernels {
  atlas_kernel_registry *registry;
} atlas_llama_kernels;

struct atlas_llama_model {
  atlas_backend *backend;
  atlas_llama_config config;
  int64_t max_seq;
  atlas_teardown *teardown;
  atlas_llama_weights *weights;
  atlas_llama_kv_cache *kv;
  atlas_llama_scratch *scratch;
  atlas_llama_kernels *kernels;
  atlas_llama_prefill_scratch *prefill;  // NULL: prompts run token by token
  atlas_llama_ctx ctx;
};

#endif  // ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_MODEL_H_
