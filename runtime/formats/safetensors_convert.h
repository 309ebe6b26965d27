// Reading tensor elements as f32, whatever their stored dtype (F32, F16,
// BF16). The data in a file is only byte-aligned, so these read bytes.
#ifndef ATLAS_RUNTIME_FORMATS_SAFETENSORS_CONVERT_H_
#define ATLAS_RUNTIME_FORMATS_SAFETENSORS_CONVERT_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/half.h"  // atlas_f16_to_f32, atlas_bf16_to_f32
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// Element `index` of little-endian data of `dtype` at `data`.
float atlas_dtype_load_f32(atlas_dtype dtype, const void *data, uint64_t index);

// Copies elements [first, first + count) of `tensor` into `out` as f32.
// INVALID_ARGUMENT (naming the tensor) when the range is out of bounds.
ATLAS_MUST_USE atlas_status
atlas_safetensors_tensor_to_f32(const atlas_safetensors_tensor *tensor,
                                uint64_t first, uint64_t count, float *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_SAFETENSORS_CONVERT_H_
