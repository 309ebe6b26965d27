// Inside a safetensors file object: shared by the header parser
// (safetensors_header.c) and the file access (safetensors.c). Private to
// runtime/formats.
#ifndef ATLAS_RUNTIME_FORMATS_SAFETENSORS_INTERNAL_H_
#define ATLAS_RUNTIME_FORMATS_SAFETENSORS_INTERNAL_H_

#include <stdint.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/safetensors.h"

struct atlas_safetensors {
  char *path;
  const uint8_t *base;  // the buffer; NULL for a file (read with pread)
  uint64_t size;
  int fd;  // >= 0 for a file: kept open so its data stays readable
  atlas_file_identity identity;  // what the file was when opened
  void *owned;  // a buffer this object frees (a snapshot), or NULL
  // Content digests of tensors read through a digest slot (weight_scan.h),
  // and which tensors have one: what a snapshot is checked against.
  uint64_t *digests;
  unsigned char *digested;
  uint64_t data_start;  // 8 + header length
  uint64_t data_bytes;
  atlas_safetensors_tensor *tensors;  // file order
  size_t count;
  const atlas_safetensors_tensor **by_name;  // sorted by name
  char **meta_keys;                          // sorted by key
  char **meta_values;
  size_t meta_count;
  unsigned flags;        // what it was opened with (a snapshot keeps them)
  uint64_t owned_bytes;  // a view's: the bytes of `owned` its tensors use
};

// A flag of `flags` no caller passes: the object is a view of another
// format's file (a GGUF file's, gguf_checkpoint.c) whose tensors need not
// tile a safetensors data region; some of its tensors' data live in
// `owned`, the rest are read from `fd`.
#define ATLAS_SAFETENSORS_VIEW 0x100u

// A view's snapshot (atlas_safetensors_snapshot's, safetensors_view.c): the
// viewed file read whole into memory and the view's own tensors after it,
// checked against the digests earlier loads recorded.
ATLAS_MUST_USE atlas_status atlas_safetensors_view_snapshot(
    const atlas_safetensors *file, atlas_safetensors **out_copy);

// OUT_OF_MEMORY naming the file (`path` already quoted).
static inline atlas_status atlas_safetensors_oom(const char *path) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "%s: out of host memory while parsing the header",
                           path);
}

// Reads the 8-byte length prefix of a file of `size` bytes starting at
// `base` and checks it against the size and ATLAS_SAFETENSORS_MAX_HEADER_BYTES.
ATLAS_MUST_USE atlas_status atlas_safetensors_header_length(const char *path,
                                                            const uint8_t *base,
                                                            uint64_t size,
                                                            uint64_t *out_len);
// Parses a header already read into a new file object. `base` is the buffer
// holding the whole file (data is read from it) or NULL for a file read with
// pread; the caller sets fd and identity for a file.
ATLAS_MUST_USE atlas_status atlas_safetensors_parse_header(
    const char *path, const uint8_t *header, uint64_t header_len, uint64_t size,
    const uint8_t *base, unsigned flags, atlas_safetensors **out_file);

#endif  // ATLAS_RUNTIME_FORMATS_SAFETENSORS_INTERNAL_H_
