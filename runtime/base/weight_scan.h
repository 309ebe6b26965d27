// One pass over weight bytes: a content digest (so a later reader can prove
// it has the same bytes) and a search for NaN/Inf.
//
// The digest of a tensor is the wrapping sum, over its 4 KiB blocks, of a
// mix of each block's hash and its index: the same whatever order threads
// see the blocks in and however a reader chunks them, as long as chunks
// start at a multiple of ATLAS_SCAN_BLOCK_BYTES within the tensor. A block's
// hash runs 32 lanes: lane j folds 16-byte units j, j + 32, ... (the last
// unit zero-padded) into two xor-multiply chains, and the lanes' mixes are
// xor-ed. That is the shape a warp reads a block in, so the CUDA kernel
// (kernels/weight_scan.cu) computes the same value from device memory. It
// is a check against accidental or in-place change, not a cryptographic
// hash.
#ifndef ATLAS_RUNTIME_WEIGHT_SCAN_H_
#define ATLAS_RUNTIME_WEIGHT_SCAN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_SCAN_BLOCK_BYTES ((size_t)4096)

// How to look for non-finite values: by element encoding.
typedef enum atlas_scan_finite {
  ATLAS_SCAN_FINITE_NONE = 0,
  ATLAS_SCAN_FINITE_F32,
  ATLAS_SCAN_FINITE_F16,
  ATLAS_SCAN_FINITE_BF16,
} atlas_scan_finite;

// Scans `bytes` of a tensor starting at byte `offset` within it (a multiple
// of ATLAS_SCAN_BLOCK_BYTES). Returns the digest contribution (add it to the
// tensor's digest). *out_first_bad is the element index (within the tensor)
// of the first non-finite element in this range, or UINT64_MAX.
uint64_t atlas_weight_scan(const void *data, size_t bytes, uint64_t offset,
                           atlas_scan_finite finite, uint64_t *out_first_bad);

// Bytes per element of `finite` (0 for NONE).
size_t atlas_scan_finite_bytes(atlas_scan_finite finite);

// Whether the non-finite element at `elem` (little-endian) is a NaN (else an
// Inf).
bool atlas_scan_is_nan(const void *elem, atlas_scan_finite finite);

// The error for a non-finite weight: element `index` of tensor `what` in
// `file`.
ATLAS_MUST_USE atlas_status atlas_scan_refuse(const char *file,
                                              const char *what, uint64_t index,
                                              bool is_nan);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_WEIGHT_SCAN_H_
