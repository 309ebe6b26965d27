// Batched prefill (decoder_prefill.c): the prompt chunk scratch, sized at load,
// and its teardown resource (decoder_prefill_scratch.c). Private to the Llama
// architecture.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_PREFILL_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_PREFILL_H_

#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_buffers.h"
#include "atlas/runtime/arch/decoder/decoder_moe.h"
#include "atlas/runtime/arch/decoder/decoder_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

// Teardown resource "prefill_scratch": activations of `rows` prompt tokens,
// carved from the model's buffers (decoder_buffers.h), which own the memory.
typedef struct atlas_decoder_prefill_scratch {
  int64_t rows;
  uint32_t *tokens;
  float *x, *xb, *xb2, *q, *hb, *hb2, *logits;
  float *part;         // flash-decoding partials (one-token steps use them too)
  uint32_t *counters;  // per query head: splits done this step (zero between;
                       // a zeroed piece of the buffers)
  float *k, *v;  // (rows, kv_dim) the chunk's keys and values before the cache
  // The 16-bit mode (atlas_decoder_prefill_one_term): a product's input rows
  // rounded to its weights' type, (rows, max(hidden, q_dim, intermediate));
  // NULL in the f32 mode.
  void *x16;
  bool one_term;  // decided once at setup from the KV cache's type
  bool matmul;    // one-term products through atlas_backend_matmul (cuBLASLt)
  // The weights' type x16 holds the last input rounded to (F32: nothing
  // valid), so that q, k, v (gate, up) round their shared input once.
  atlas_decoder_wtype x16_type;
  atlas_decoder_moe_buffers moe;  // the experts' activations, `rows` tokens
} atlas_decoder_prefill_scratch;

// Logit rows computed per lm_head product when every row is asked for (the
// scratch's logits hold this many).
enum { ATLAS_DECODER_PREFILL_LOGIT_ROWS = 16 };

// Splits of the one-token attention over a context of max_seq positions
// (flash-decoding): the scratch's partials hold this many per head.
uint64_t atlas_decoder_decode_splits(int64_t max_seq, int64_t head_dim);

// The prefill's precision, decided here and only here: with a 16-bit KV
// cache (F16 or BF16, the stated-error mode) a product whose weights are F16
// or BF16 multiplies its input rows rounded once to the weights' type (one
// 16-bit term); with an f32 cache (the faithful mode) products keep their f32
// inputs (three 16-bit terms against 16-bit weights: f32 accuracy).
bool atlas_decoder_prefill_one_term(atlas_dtype kv_dtype);

// Rows per prefill chunk for a load option (`requested`: 0 default, < 0
// none); 0 (prompts run token by token) when the config has a shape or a
// feature the batched path does not implement.
int64_t atlas_decoder_prefill_rows(const atlas_decoder_config *config,
                                   int64_t max_seq, int64_t requested);

// Device bytes of the prefill scratch for `rows` and a cache of max_seq, as
// carved (256-byte aligned pieces; the 16-bit input rows counted whatever
// the KV type: an upper bound). UINT64_MAX when the sizes overflow.
uint64_t atlas_decoder_prefill_bytes(const atlas_decoder_config *config,
                                     int64_t rows, int64_t max_seq);

// Makes the scratch a teardown resource of `model` (none for rows 0),
// registered after the model's buffers; allocates no device memory: its
// pieces come from atlas_decoder_prefill_take in the load's two passes.
ATLAS_MUST_USE atlas_status
atlas_decoder_prefill_setup(atlas_decoder_model *model, int64_t rows);

// Takes the scratch's pieces from `buffers` (sizing or carving pass); the
// split counters are a zeroed piece.
ATLAS_MUST_USE atlas_status atlas_decoder_prefill_take(
    atlas_decoder_prefill_scratch *s, atlas_decoder_buffers *buffers,
    const atlas_decoder_config *config, int64_t max_seq);

// One token's attention for layer `l` (sliding `window`, 0: none) at the
// position in the model's scratch->step, split over the context
// (flash-decoding); needs the scratch (model->prefill != NULL).
// A batch step's rows over the paged KV pool (decoder_batch.c): device arrays
// of the step, the pool, and the paged kernels (kernels/paged_kernels.h).
typedef struct atlas_decoder_paged {
  void *keys, *values;    // the pool (kv_pool.h layout)
  size_t layer_elements;  // elements between layers
  uint32_t bt;            // positions a block
  uint32_t stride;        // block-table entries a sequence
  const uint32_t *pos, *slots, *row_seq, *tables;  // device
  const atlas_kernel *rope_at;
  const atlas_kernel *store[ATLAS_DECODER_W_COUNT];      // by the KV type
  const atlas_kernel *attention[ATLAS_DECODER_W_COUNT];  // by the KV type
} atlas_decoder_paged;

// Layer l over the n rows of m->prefill->x (the residual stream), their
// keys and values into the pool: the prompt chunk's layer, step for step,
// with RoPE, the store and the attention of the paged kernels.
ATLAS_MUST_USE atlas_status
atlas_decoder_prefill_layer(atlas_decoder_model *m, int64_t l, uint32_t n,
                            const atlas_decoder_paged *paged);

// out (rows x n) = x (rows x k) times w^T in the prompt path's precision.
struct atlas_decoder_matrix;
ATLAS_MUST_USE atlas_status
atlas_decoder_prefill_gemm(const atlas_decoder_model *m, float *out,
                           const struct atlas_decoder_matrix *w, const float *x,
                           uint32_t rows, int64_t n, int64_t k);

ATLAS_MUST_USE atlas_status
atlas_decoder_decode_attention(const atlas_decoder_model *model, int64_t l,
                               uint32_t window, float *out, const float *q);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_PREFILL_H_
