// Reading tensor elements as f32, whatever their stored dtype (F32, F16,
// BF16). The data in a file is only byte-aligned, so these read bytes.
#ifndef ATLAS_RUNTIME_MODEL_SAFETENSORS_CONVERT_H_
#define ATLAS_RUNTIME_MODEL_SAFETENSORS_CONVERT_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/model/safetensors.h"
#include "runtime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Exact conversions (every F16 and BF16 value is representable in f32).
float atlas_f16_to_f32(uint16_t bits);
float atlas_bf16_to_f32(uint16_t bits);

// Element `index` of little-endian data of `dtype` at `data`.
float atlas_dtype_load_f32(atlas_dtype dtype, const void *data, uint64_t index);

// Copies elements [first, first + count) of `tensor` into `out` as f32.
// INVALID_ARGUMENT (naming the tensor) when the range is out of bounds.
atlas_status atlas_safetensors_tensor_to_f32(
    const atlas_safetensors_tensor *tensor, uint64_t first, uint64_t count,
    float *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_MODEL_SAFETENSORS_CONVERT_H_
