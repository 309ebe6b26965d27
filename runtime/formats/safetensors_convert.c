// F16/BF16/F32 element loads for weights read straight from a file.
#include "atlas/runtime/formats/safetensors_convert.h"

#include <string.h>

#include "atlas/runtime/half.h"

float atlas_dtype_load_f32(atlas_dtype dtype, const void *data,
                           uint64_t index) {
  const uint8_t *p = (const uint8_t *)data + index * atlas_dtype_size(dtype);
  switch (dtype) {
    case ATLAS_DTYPE_F32:
      return atlas_f32_from_bits((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    case ATLAS_DTYPE_F16:
      return atlas_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
    case ATLAS_DTYPE_BF16:
      return atlas_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
  }
  return 0.0f;
}

atlas_status atlas_safetensors_tensor_to_f32(
    const atlas_safetensors_tensor *tensor, uint64_t first, uint64_t count,
    float *out) {
  if (first > tensor->elements || count > tensor->elements - first) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tensor \"%s\": elements [%llu, %llu + %llu) are "
                             "out of range (it has %llu)",
                             tensor->name, (unsigned long long)first,
                             (unsigned long long)first,
                             (unsigned long long)count,
                             (unsigned long long)tensor->elements);
  }
  if (tensor->dtype == ATLAS_DTYPE_F32) {
    memcpy(out, (const uint8_t *)tensor->data + first * 4, count * 4);
    return ATLAS_OK;
  }
  for (uint64_t i = 0; i < count; ++i) {
    out[i] = atlas_dtype_load_f32(tensor->dtype, tensor->data, first + i);
  }
  return ATLAS_OK;
}
