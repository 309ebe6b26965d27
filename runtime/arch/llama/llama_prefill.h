// Batched prefill (llama_prefill.c): the prompt chunk scratch, sized at load,
// and its teardown resource. Private to the Llama architecture.
#ifndef ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_PREFILL_H_
#define ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_PREFILL_H_

#include <stdint.h>

#include "atlas/runtime/arch/llama/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

// Teardown resource "prefill_scratch": activations of `rows` prompt tokens.
typedef struct atlas_llama_prefill_scratch {
  atlas_backend *backend;
  int64_t rows;
  uint32_t *tokens;
  float *x, *xb, *xb2, *q, *hb, *hb2, *logits;
  float *part;  // flash-decoding partials (one-token steps use them too)
  uint32_t *counters;  // per KV head: splits done this step (zero between)
  float *k, *v; // (rows, kv_dim) the chunk's keys and values before the cache
} atlas_llama_prefill_scratch;

// Rows per prefill chunk for a load option (`requested`: 0 default, < 0
// none); 0 (prompts run token by token) when the config has a shape or a
// feature the batched path does not implement.
int64_t atlas_llama_prefill_rows(const atlas_llama_config *config,
                                 int64_t max_seq, int64_t requested);

// Device bytes of the prefill scratch for `rows` and a cache of max_seq.
uint64_t atlas_llama_prefill_bytes(const atlas_llama_config *config,
                                   int64_t rows, int64_t max_seq);

// Allocates the scratch as a teardown resource of `model` (none for rows 0).
ATLAS_MUST_USE atlas_status atlas_llama_prefill_setup(atlas_llama_model *model, int64_t rows);

// One token's attention for layer `l` (sliding `window`, 0: none) at the
// position in the model's scratch->step, split over the context
// (flash-decoding); needs the scratch (model->prefill != NULL).
ATLAS_MUST_USE atlas_status atlas_llama_decode_attention(
    const atlas_llama_model *model, int64_t l, uint32_t window, float *out,
    const float *q);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_PREFILL_H_
