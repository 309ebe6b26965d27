// The tensors of a mixture-of-experts layer (decoder_config.h,
// atlas_decoder_moe_names): their names in the family's layout, their
// shapes, and their check against a checkpoint. Experts are one tensor
// each, as the Hub publishes them (mlp.experts.N.gate_proj.weight,
// block_sparse_moe.experts.N.w1.weight), or fused 3-D tensors of every
// expert (mlp.experts.gate_up_proj, as transformers 5 holds them) where the
// family names those.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_WEIGHTS_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_WEIGHTS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_decoder_moe_role {
  ATLAS_DECODER_MOE_ROUTER = 0,          // [experts, hidden]
  ATLAS_DECODER_MOE_GATE,                // [moe_inter, hidden] per expert
  ATLAS_DECODER_MOE_UP,                  // [moe_inter, hidden] per expert
  ATLAS_DECODER_MOE_DOWN,                // [hidden, moe_inter] per expert
  ATLAS_DECODER_MOE_SHARED_GATE,         // [shared_inter, hidden]
  ATLAS_DECODER_MOE_SHARED_UP,           // [shared_inter, hidden]
  ATLAS_DECODER_MOE_SHARED_DOWN,         // [hidden, shared_inter]
  ATLAS_DECODER_MOE_SHARED_EXPERT_GATE,  // [1, hidden]
  ATLAS_DECODER_MOE_FUSED_GATE_UP,       // [experts, 2 * moe_inter, hidden]
  ATLAS_DECODER_MOE_FUSED_DOWN,          // [experts, hidden, moe_inter]
} atlas_decoder_moe_role;

// One tensor of a MoE layer: its role, its expert (-1: not one expert's),
// its name and its shape.
typedef struct atlas_decoder_moe_tensor {
  atlas_decoder_moe_role role;
  int64_t expert;
  char name[256];
  int64_t shape[3];
  int rank;
} atlas_decoder_moe_tensor;

// Whether layer `layer`'s experts are fused 3-D tensors in `ck`
// (the family names them, and the checkpoint holds fused_gate_up and not
// expert 0's gate); false for a NULL checkpoint.
bool atlas_decoder_moe_fused(const atlas_decoder_config *c,
                             const atlas_checkpoint *ck, int64_t layer);

// The MoE tensors of layer `layer` in `ck`'s layout (NULL: one
// tensor per expert): 0 for a dense layer; else the router, then each
// expert's gate, up and down (or the two fused tensors), then the shared
// expert's four.
size_t atlas_decoder_moe_tensor_count(const atlas_decoder_config *c,
                                      const atlas_checkpoint *ck,
                                      int64_t layer);

// The index-th of them (index < atlas_decoder_moe_tensor_count).
ATLAS_MUST_USE atlas_status atlas_decoder_moe_tensor_at(
    const atlas_decoder_config *c, const atlas_checkpoint *ck, int64_t layer,
    size_t index, atlas_decoder_moe_tensor *out);

// Whether `suffix` (the name after "model.layers.{layer}.") is one of
// layer `layer`'s MoE tensors in `ck`'s layout.
bool atlas_decoder_moe_consumed(const atlas_decoder_config *c,
                                const atlas_checkpoint *ck, int64_t layer,
                                const char *suffix);

// Checks every MoE tensor of `layer` is in the checkpoint with its shape,
// that each expert's gate, up and down share one dtype, and that the
// shared expert's gate has the router's (their kernels read one type);
// adds their bytes. Errors name the tensor, the shapes and the file.
ATLAS_MUST_USE atlas_status atlas_decoder_moe_check(
    const atlas_decoder_config *c, const atlas_checkpoint *ck, int64_t layer,
    uint64_t *bytes);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_MOE_WEIGHTS_H_
