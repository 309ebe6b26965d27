// GGUF files (llama.cpp's format, versions 2 and 3): the metadata, the
// tensor table and where each tensor's bytes lie, checked strictly before
// anything is read from the data: the magic and version, every length
// against the bytes that remain, keys and tensor names unique, value and
// tensor types known, shapes whose element count fits and whose first
// dimension is a whole number of blocks, byte sizes that follow from type
// and shape, offsets aligned to general.alignment and inside the file, and
// no two tensors' bytes overlapping. A file that breaks one is DATA_LOSS
// naming the file, the byte and what was wrong; nothing past the header is
// read at open.
#ifndef ATLAS_RUNTIME_FORMATS_GGUF_H_
#define ATLAS_RUNTIME_FORMATS_GGUF_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_GGUF_MAX_DIMS 4
// llama.cpp's GGML_MAX_NAME: a tensor name has fewer bytes than this.
#define ATLAS_GGUF_MAX_NAME 64
#define ATLAS_GGUF_DEFAULT_ALIGNMENT 32
// The header (metadata and tensor table) a file may have: a large
// vocabulary's is tens of megabytes.
#define ATLAS_GGUF_MAX_HEADER_BYTES ((uint64_t)1 << 30)

// Metadata value types (the file's numbering).
typedef enum atlas_gguf_value_type {
  ATLAS_GGUF_U8 = 0,
  ATLAS_GGUF_I8 = 1,
  ATLAS_GGUF_U16 = 2,
  ATLAS_GGUF_I16 = 3,
  ATLAS_GGUF_U32 = 4,
  ATLAS_GGUF_I32 = 5,
  ATLAS_GGUF_F32 = 6,
  ATLAS_GGUF_BOOL = 7,
  ATLAS_GGUF_STRING = 8,
  ATLAS_GGUF_ARRAY = 9,
  ATLAS_GGUF_U64 = 10,
  ATLAS_GGUF_I64 = 11,
  ATLAS_GGUF_F64 = 12,
} atlas_gguf_value_type;

// Tensor types Atlas names (ggml's numbering); the others known to ggml are
// named by atlas_gguf_type_name too, and refused where a model is loaded.
typedef enum atlas_gguf_type {
  ATLAS_GGUF_TYPE_F32 = 0,
  ATLAS_GGUF_TYPE_F16 = 1,
  ATLAS_GGUF_TYPE_Q4_0 = 2,
  ATLAS_GGUF_TYPE_Q8_0 = 8,
  ATLAS_GGUF_TYPE_Q4_K = 12,
  ATLAS_GGUF_TYPE_Q5_K = 13,
  ATLAS_GGUF_TYPE_Q6_K = 14,
  ATLAS_GGUF_TYPE_BF16 = 30,
} atlas_gguf_type;

typedef struct atlas_gguf_kv {
  const char *key;     // NUL-terminated
  uint32_t type;       // atlas_gguf_value_type
  uint32_t elem_type;  // arrays: the elements' type
  uint64_t count;      // arrays: elements; scalars: 1
  uint64_t value_at;   // where the value (an array's first element)
                       // starts in the file
} atlas_gguf_kv;

typedef struct atlas_gguf_tensor {
  const char *name;  // NUL-terminated
  uint32_t type;     // ggml type (atlas_gguf_type for the ones Atlas reads)
  uint32_t n_dims;   // 1 .. ATLAS_GGUF_MAX_DIMS
  uint64_t ne[ATLAS_GGUF_MAX_DIMS];  // ne[0] varies fastest; past n_dims 1
  uint64_t elements;
  uint64_t file_offset;  // absolute, aligned to the file's alignment
  uint64_t bytes;
} atlas_gguf_tensor;

typedef struct atlas_gguf atlas_gguf;

// Parses a whole file held in memory (not copied: it must outlive the
// result). `name` is used in messages.
ATLAS_MUST_USE atlas_status atlas_gguf_parse_buffer(const void *data,
                                                    size_t size,
                                                    const char *name,
                                                    atlas_gguf **out);
// Opens `path` (a regular file) and parses its header; the file stays open
// for atlas_gguf_read until closed.
ATLAS_MUST_USE atlas_status atlas_gguf_open(const char *path, atlas_gguf **out);
void atlas_gguf_close(atlas_gguf *g);

uint32_t atlas_gguf_version(const atlas_gguf *g);
uint64_t atlas_gguf_alignment(const atlas_gguf *g);
uint64_t atlas_gguf_data_offset(const atlas_gguf *g);
uint64_t atlas_gguf_file_bytes(const atlas_gguf *g);

size_t atlas_gguf_kv_count(const atlas_gguf *g);
const atlas_gguf_kv *atlas_gguf_kv_at(const atlas_gguf *g, size_t i);
const atlas_gguf_kv *atlas_gguf_find_kv(const atlas_gguf *g, const char *key);

size_t atlas_gguf_tensor_count(const atlas_gguf *g);
const atlas_gguf_tensor *atlas_gguf_tensor_at(const atlas_gguf *g, size_t i);
const atlas_gguf_tensor *atlas_gguf_find_tensor(const atlas_gguf *g,
                                                const char *name);

// Typed reads of metadata. Absent: NOT_FOUND naming the key; another type:
// INVALID_ARGUMENT naming the key and both types. Integers of any width and
// signedness read as u64 where the value is not negative; f32 and f64 read
// as double.
ATLAS_MUST_USE atlas_status atlas_gguf_get_u64(const atlas_gguf *g,
                                               const char *key, uint64_t *out);
ATLAS_MUST_USE atlas_status atlas_gguf_get_f64(const atlas_gguf *g,
                                               const char *key, double *out);
ATLAS_MUST_USE atlas_status atlas_gguf_get_bool(const atlas_gguf *g,
                                                const char *key, bool *out);
// A string's bytes (not NUL-terminated; valid while g is open).
ATLAS_MUST_USE atlas_status atlas_gguf_get_string(const atlas_gguf *g,
                                                  const char *key,
                                                  const char **out,
                                                  size_t *out_len);
// Element i of a string array / a numeric array (as double).
ATLAS_MUST_USE atlas_status atlas_gguf_array_string(const atlas_gguf *g,
                                                    const atlas_gguf_kv *kv,
                                                    uint64_t i,
                                                    const char **out,
                                                    size_t *out_len);
ATLAS_MUST_USE atlas_status atlas_gguf_array_number(const atlas_gguf *g,
                                                    const atlas_gguf_kv *kv,
                                                    uint64_t i, double *out);

// Reads bytes [offset, offset + bytes) of a tensor's data into dst.
ATLAS_MUST_USE atlas_status atlas_gguf_read(const atlas_gguf *g,
                                            const atlas_gguf_tensor *t,
                                            uint64_t offset, uint64_t bytes,
                                            void *dst);

// "F32", "Q4_K", ...; "?" for a number ggml does not define.
const char *atlas_gguf_type_name(uint32_t type);
const char *atlas_gguf_value_type_name(uint32_t type);
// Elements per block and bytes per block; false for an unknown type.
bool atlas_gguf_type_block(uint32_t type, uint32_t *out_elements,
                           uint32_t *out_bytes);
// The tensor types Atlas reads: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K,
// Q6_K.
bool atlas_gguf_type_supported(uint32_t type);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_GGUF_H_
