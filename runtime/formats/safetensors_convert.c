// F16/BF16/F32 element loads for weights read straight from a file.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/formats/safetensors_convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/weight_scan.h"

#include "atlas/runtime/base/half.h"

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
    case ATLAS_DTYPE_I32:
    case ATLAS_DTYPE_I64:
    case ATLAS_DTYPE_F8_E4M3:
    case ATLAS_DTYPE_GGUF_Q8_0:
    case ATLAS_DTYPE_GGUF_Q4_0:
    case ATLAS_DTYPE_GGUF_Q4_K:
    case ATLAS_DTYPE_GGUF_Q5_K:
    case ATLAS_DTYPE_GGUF_Q6_K:
      break;  // not values a float conversion reads (refused by callers)
  }
  return 0.0f;
}

atlas_status atlas_safetensors_tensor_to_f32(
    const atlas_safetensors_tensor *tensor, uint64_t first, uint64_t count,
    float *out) {
  char qn[ATLAS_QUOTE_BYTES];
  atlas_quote(tensor->name, qn, sizeof(qn));
  if (!atlas_dtype_is_float(tensor->dtype)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tensor \"%s\" is %s, not a float tensor", qn,
                             atlas_dtype_name(tensor->dtype));
  }
  if (first > tensor->elements || count > tensor->elements - first) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "tensor \"%s\": elements [%llu, %llu + %llu) are "
        "out of range (it has %llu)",
        qn, (unsigned long long)first, (unsigned long long)first,
        (unsigned long long)count, (unsigned long long)tensor->elements);
  }
  size_t elem = atlas_dtype_size(tensor->dtype);
  uint64_t bytes = count * elem;  // <= tensor->bytes, checked at parse
  // Raw bytes: straight into `out` for F32, else a temporary.
  void *raw = out;
  if (tensor->dtype != ATLAS_DTYPE_F32) {
    raw = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (raw == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "tensor \"%s\": out of host memory converting "
                               "%llu elements",
                               qn, (unsigned long long)count);
    }
  }
  atlas_status status =
      atlas_safetensors_read(tensor, first * elem, bytes, raw);
  if (status == ATLAS_OK && first == 0 && count == tensor->elements) {
    uint64_t *slot = atlas_safetensors_digest_slot(tensor);
    if (slot != NULL) {
      *slot = atlas_weight_scan(raw, (size_t)bytes, 0, ATLAS_SCAN_FINITE_NONE,
                                NULL);
    }
  }
  if (status == ATLAS_OK && tensor->dtype != ATLAS_DTYPE_F32) {
    for (uint64_t i = 0; i < count; ++i) {
      out[i] = atlas_dtype_load_f32(tensor->dtype, raw, i);
    }
  }
  if (raw != out) free(raw);
  for (uint64_t i = 0; status == ATLAS_OK && i < count; ++i) {
    if (!isfinite(out[i])) {
      const char *file =
          tensor->file != NULL ? atlas_safetensors_path(tensor->file) : "?";
      char qf[ATLAS_QUOTE_PATH_BYTES];
      status = atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: tensor %s holds a non-finite weight: element %llu is %s (NaN "
          "and Inf weights are refused: they would make every logit NaN)",
          atlas_quote_path(file, qf, sizeof(qf)), qn,
          (unsigned long long)(first + i), isnan(out[i]) ? "NaN" : "Inf");
    }
  }
  return status;
}
