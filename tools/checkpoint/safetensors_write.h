// Writing safetensors files: for the checkpoint generator and tests.
//
// Tensors are laid out in the order given, contiguously from offset 0; the
// header is padded with spaces to a multiple of 8 bytes (as the reference
// writer does) so F32 data stays 4-byte aligned in a mapped file.
#ifndef ATLAS_TOOLS_SAFETENSORS_WRITE_H_
#define ATLAS_TOOLS_SAFETENSORS_WRITE_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_safetensors_write_tensor {
  const char *name;
  atlas_dtype dtype;
  int rank;
  int64_t shape[ATLAS_SAFETENSORS_MAX_RANK];
  const void *data;  // product(shape) * atlas_dtype_size(dtype) bytes
} atlas_safetensors_write_tensor;

// Writes `count` tensors and `metadata_count` key/value pairs
// (metadata[2*i] is a key, metadata[2*i+1] its value) to `path`.
ATLAS_MUST_USE atlas_status atlas_safetensors_write(
    const char *path, const atlas_safetensors_write_tensor *tensors,
    size_t count, const char *const *metadata, size_t metadata_count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_SAFETENSORS_WRITE_H_
