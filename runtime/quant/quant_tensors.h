// The tensors of one quantized linear layer in a checkpoint, found and
// checked against the format quantization_config names: their dtypes and
// shapes for the layer's rows x cols, compressed-tensors' weight_shape, and
// every g_idx entry inside the groups (the kernels index with it). What the
// kernels of module "quant" take comes out, with the bytes it occupies.
#ifndef ATLAS_RUNTIME_QUANT_QUANT_TENSORS_H_
#define ATLAS_RUNTIME_QUANT_QUANT_TENSORS_H_

#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/quant/quant_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_quant_matrix {
  // The kernels' arguments (kernels/quant_kernels.h).
  uint32_t layout, bits, group_k, block_n, flags;
  uint32_t rows, cols;
  // The stored tensors; zeros and g_idx have a NULL tensor when absent.
  atlas_checkpoint_tensor w, scales, zeros, g_idx;
  uint64_t bytes;  // all four together: what the device holds
} atlas_quant_matrix;

// Whether `module` ("model.layers.0.mlp.down_proj") stays in its stored type:
// compressed-tensors' ignore (exact names, or "re:" and a regular expression
// matched from the start), or a modules_to_not_convert entry the name holds
// (transformers' rule for fp8, awq and gptq).
ATLAS_MUST_USE atlas_status atlas_quant_module_kept(
    const atlas_quant_config *config, const char *module, bool *out_kept);

// The quantized tensors of `module` (its unquantized weight would be
// [rows, cols]): "<module>.weight" and "<module>.weight_scale_inv" (fp8),
// "<module>.weight_packed", "weight_scale", "weight_zero_point",
// "weight_g_idx", "weight_shape" (compressed-tensors), "<module>.qweight",
// "qzeros", "scales", "g_idx" (gptq, awq). Anything missing, of another
// dtype or shape, or a g_idx entry outside the groups: DATA_LOSS naming the
// tensor and what was expected.
ATLAS_MUST_USE atlas_status atlas_quant_matrix_find(
    const atlas_quant_config *config, const atlas_checkpoint *ck,
    const char *module, uint32_t rows, uint32_t cols, atlas_quant_matrix *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_QUANT_QUANT_TENSORS_H_
