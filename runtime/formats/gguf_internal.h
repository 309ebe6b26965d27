// Inside a GGUF file object: shared by the header parser (gguf.c) and the
// typed metadata reads (gguf_values.c). Private to runtime/formats.
#ifndef ATLAS_RUNTIME_FORMATS_GGUF_INTERNAL_H_
#define ATLAS_RUNTIME_FORMATS_GGUF_INTERNAL_H_

#include <stdint.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/gguf.h"

struct atlas_gguf {
  char *name;
  const uint8_t *buf;  // the file's first buf_size bytes (all of a buffer)
  uint8_t *owned;      // buf, when read from a file
  uint64_t buf_size, file_size;
  int fd;  // -1 for a buffer
  atlas_file_identity identity;
  uint32_t version;
  uint64_t alignment, data_offset;
  atlas_gguf_kv *kvs;
  uint64_t **str_offsets;  // per kv: string arrays' element offsets
  size_t kv_count, kv_alloc;
  atlas_gguf_tensor *tensors;
  size_t tensor_count;
};

// Bytes of one value of a fixed-size metadata type (0: string or array).
uint32_t atlas_gguf_value_size(uint32_t type);

#endif  // ATLAS_RUNTIME_FORMATS_GGUF_INTERNAL_H_
