// safetensors: one file of named tensors, validated before anything is used.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON, then the
// data region. The header maps each tensor name to {dtype, shape,
// data_offsets:[begin,end]} (offsets relative to the data region) plus an
// optional "__metadata__" object of strings.
//
// Validation is stricter than the reference (Hugging Face's Rust crate):
// N <= 100 MB and 8 + N <= file size; the header is UTF-8 JSON with no
// duplicate keys, starting with '{' after optional whitespace; every tensor
// has exactly the three fields; bytes == product(shape) * dtype size with
// every multiply and add checked; tensors sorted by offset tile the data
// region from 0 to the end of the file with no gap, overlap or trailing byte;
// only F32, F16 and BF16 are accepted (other safetensors dtypes are named as
// unsupported). Every error message names the file and what is wrong; names
// taken from the file are escaped and cut (file_read.h's atlas_quote).
//
// A file is never mapped: the header is read with pread and the file stays
// open; tensor data is read with pread when used (atlas_safetensors_read, or
// an upload job reading the descriptor), so a file that shrinks is an error
// naming it, never a SIGBUS. Every header pass is linear or n log n.
#ifndef ATLAS_RUNTIME_FORMATS_SAFETENSORS_H_
#define ATLAS_RUNTIME_FORMATS_SAFETENSORS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_SAFETENSORS_MAX_RANK 8
// The reference's MAX_HEADER_SIZE.
#define ATLAS_SAFETENSORS_MAX_HEADER_BYTES ((uint64_t)100000000)

typedef enum atlas_dtype {
  ATLAS_DTYPE_F32 = 0,
  ATLAS_DTYPE_F16,
  ATLAS_DTYPE_BF16,
  // The stored types of quantized checkpoints (packed words, g_idx and
  // shapes, FP8 weights): only in files opened with
  // ATLAS_SAFETENSORS_QUANTIZED; every other open refuses them as before.
  ATLAS_DTYPE_I32,
  ATLAS_DTYPE_I64,
  ATLAS_DTYPE_F8_E4M3,
  // llama.cpp's blocks (kernels/quant_decode.h's GGUF layouts): only in a
  // GGUF file's checkpoint view (gguf_checkpoint.h); a safetensors file
  // never holds them. No per-element size: a row is a whole number of
  // blocks.
  ATLAS_DTYPE_GGUF_Q8_0,
  ATLAS_DTYPE_GGUF_Q4_0,
  ATLAS_DTYPE_GGUF_Q4_K,
  ATLAS_DTYPE_GGUF_Q5_K,
  ATLAS_DTYPE_GGUF_Q6_K,
} atlas_dtype;

// Flags of atlas_safetensors_open_with / parse_buffer_with.
#define ATLAS_SAFETENSORS_QUANTIZED 1u

// F32, F16 or BF16: a dtype the architectures compute with.
bool atlas_dtype_is_float(atlas_dtype dtype);

// "F32", "F16", "BF16", "I32", "I64", "F8_E4M3" (the safetensors
// spelling), "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K" (ggml's); "?" for
// anything else.
const char *atlas_dtype_name(atlas_dtype dtype);
// The dtype named "f32", "f16" or "bf16" (any case: the command lines' and
// the public API's spelling, or atlas_dtype_name's); false for anything else.
bool atlas_dtype_from_name(const char *name, atlas_dtype *out_dtype);
// Bytes per element (8, 4, 2 or 1); 0 for an invalid value and for GGUF
// blocks.
size_t atlas_dtype_size(atlas_dtype dtype);

// One tensor as the header describes it. Borrowed from its file: valid until
// the file is closed.
struct atlas_safetensors;

typedef struct atlas_safetensors_tensor {
  const char *name;
  atlas_dtype dtype;
  int rank;  // 0 (a scalar) .. ATLAS_SAFETENSORS_MAX_RANK
  int64_t shape[ATLAS_SAFETENSORS_MAX_RANK];  // entries past rank are 0
  uint64_t elements;                          // product(shape); 1 for a scalar
  uint64_t file_offset;  // absolute byte offset of the data in the file
  uint64_t bytes;        // elements * atlas_dtype_size(dtype)
  // The data, for a file parsed from a buffer: bytes [file_offset,
  // file_offset + bytes) of it. Only byte alignment is guaranteed (the format
  // does not align data); copy or use memcpy-based loads. NULL for a file
  // opened from a path: read it with atlas_safetensors_read.
  const void *data;
  const struct atlas_safetensors *file;  // the file it belongs to
} atlas_safetensors_tensor;

typedef struct atlas_safetensors atlas_safetensors;

// Opens `path` (a regular file: a FIFO, directory, device or dangling link
// is refused by name, never waited on) and parses its header. The file stays
// open until closed. On error *out_file is NULL and nothing stays allocated
// or open.
ATLAS_MUST_USE atlas_status
atlas_safetensors_open(const char *path, atlas_safetensors **out_file);

// Parses a buffer already in memory. Does not copy or own `data`, which must
// outlive the result. `name_for_errors` is used in messages and returned by
// atlas_safetensors_path (it is copied).
ATLAS_MUST_USE atlas_status atlas_safetensors_parse_buffer(
    const void *data, size_t size, const char *name_for_errors,
    atlas_safetensors **out_file);

// As atlas_safetensors_open / parse_buffer, with `flags`
// (ATLAS_SAFETENSORS_QUANTIZED: I32, I64 and F8_E4M3 tensors are read).
ATLAS_MUST_USE atlas_status atlas_safetensors_open_with(
    const char *path, unsigned flags, atlas_safetensors **out_file);
ATLAS_MUST_USE atlas_status atlas_safetensors_parse_buffer_with(
    const void *data, size_t size, const char *name_for_errors, unsigned flags,
    atlas_safetensors **out_file);

// Closes (if opened from a path) and frees. NULL is fine.
void atlas_safetensors_close(atlas_safetensors *file);

// Reads bytes [offset, offset + bytes) of a tensor's data into dst: pread
// from its file (a short read says the file changed size during the load)
// or a copy from its buffer.
ATLAS_MUST_USE atlas_status
atlas_safetensors_read(const atlas_safetensors_tensor *tensor, uint64_t offset,
                       uint64_t bytes, void *dst);

// The descriptor tensor data is read from (-1 for a buffer).
int atlas_safetensors_fd(const atlas_safetensors *file);

// Where a load records the content digest of the tensor's bytes as it reads
// them (weight_scan.h); zeroes it and marks the tensor as digested. NULL when
// the tensor belongs to no file.
uint64_t *atlas_safetensors_digest_slot(const atlas_safetensors_tensor *tensor);

// FAILED_PRECONDITION naming the file when it changed size or was written
// since it was opened (OK for a buffer).
ATLAS_MUST_USE atlas_status
atlas_safetensors_check_unchanged(const atlas_safetensors *file);

// A copy of the whole file in host memory that owns its bytes, checked
// against the digests recorded by earlier loads: FAILED_PRECONDITION naming
// the file and tensor when any digested tensor's bytes differ now, so the
// copy is bit for bit what was loaded. OUT_OF_MEMORY when it does not fit.
ATLAS_MUST_USE atlas_status atlas_safetensors_snapshot(
    const atlas_safetensors *file, atlas_safetensors **out_copy);

// The path or name the file was opened with.
const char *atlas_safetensors_path(const atlas_safetensors *file);
// Total size of the file or buffer, header included (a GGUF file's view:
// with the tensors it holds in host memory, what a snapshot holds).
uint64_t atlas_safetensors_file_bytes(const atlas_safetensors *file);
// Sum of all tensors' bytes (the data region's size).
uint64_t atlas_safetensors_data_bytes(const atlas_safetensors *file);

// Tensors are indexed in file order (ascending offset; ties by name).
size_t atlas_safetensors_count(const atlas_safetensors *file);
// NULL when index >= count.
const atlas_safetensors_tensor *atlas_safetensors_at(
    const atlas_safetensors *file, size_t index);
// NULL when absent (O(log n)).
const atlas_safetensors_tensor *atlas_safetensors_lookup(
    const atlas_safetensors *file, const char *name);
// As lookup, but absence is a NOT_FOUND status naming the tensor and file.
ATLAS_MUST_USE atlas_status
atlas_safetensors_find(const atlas_safetensors *file, const char *name,
                       const atlas_safetensors_tensor **out_tensor);

// "__metadata__" entries, in name order. NULL when index >= count.
size_t atlas_safetensors_metadata_count(const atlas_safetensors *file);
const char *atlas_safetensors_metadata_key(const atlas_safetensors *file,
                                           size_t index);
const char *atlas_safetensors_metadata_value(const atlas_safetensors *file,
                                             size_t index);
// NULL when absent.
const char *atlas_safetensors_metadata_get(const atlas_safetensors *file,
                                           const char *key);

// Writes "[a, b, c]" into buf (always NUL-terminated, truncated if short):
// for error messages that show a shape.
void atlas_shape_format(const int64_t *shape, int rank, char *buf, size_t size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_SAFETENSORS_H_
