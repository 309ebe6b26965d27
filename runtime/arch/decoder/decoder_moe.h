// The mixture-of-experts FFN inside the decoder (decoder_moe.c): module
// "moe"'s kernels (kernels/moe_kernels.h) in place of the dense MLP on the
// layers the descriptor names (atlas_decoder_layer_moe), in the one-token
// step and over a prompt chunk's or a batch step's rows.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_H_

#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_buffers.h"
#include "atlas/runtime/arch/decoder/decoder_config.h"

#ifdef __cplusplus
extern "C" {
#endif

// The FFN's activations for up to `rows` tokens, carved from the model's
// buffers (all NULL for a config without experts). k = experts a token.
typedef struct atlas_decoder_moe_buffers {
  uint32_t *ids;       // (rows * k) chosen experts, by assignment
  float *weights;      // (rows * k) their weights
  float *shared_gate;  // (rows) sigmoid of the shared expert's gate
  uint32_t *counts;    // (experts) assignments an expert
  uint32_t *offsets;   // (experts + 1) each expert's first row
  uint32_t *tiles;     // (experts + 1) each expert's first tile
  uint32_t *order;     // (rows * k) assignments grouped by expert
  float *act;          // (rows * k, moe_intermediate) silu(g) * u
  float *y;            // (rows * k, hidden) each assignment's output
  uint32_t *zero_ids;  // (rows) zeroed: the shared expert is expert 0 of 1
  uint32_t *s_counts, *s_offsets, *s_tiles, *s_order;  // its grouping
  float *s_act;  // (rows, shared_intermediate)
  float *s_y;    // (rows, hidden)
} atlas_decoder_moe_buffers;

// Takes the buffers for `rows` tokens from `b` (sizing or carving pass).
ATLAS_MUST_USE atlas_status
atlas_decoder_moe_take(atlas_decoder_moe_buffers *mb, atlas_decoder_buffers *b,
                       const atlas_decoder_config *config, int64_t rows);

struct atlas_decoder_layer;

// The one-token step's FFN of layer L: x += MoE(RMSNorm(x)) on the model's
// scratch (scratch->xb holds the norm); every launch's shape depends only
// on the config, so the step stays capturable.
ATLAS_MUST_USE atlas_status atlas_decoder_moe_token(
    const atlas_decoder_model *m, const struct atlas_decoder_layer *L);

// The same over the n rows of the prompt scratch (m->prefill->x): the
// router, the counting sort of the assignments by expert, the grouped
// products, the shared expert, and the weighted sum into x.
ATLAS_MUST_USE atlas_status
atlas_decoder_moe_rows(const atlas_decoder_model *m,
                       const struct atlas_decoder_layer *L, uint32_t n);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_H_
