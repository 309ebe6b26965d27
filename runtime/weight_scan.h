// One pass over weight bytes as they are staged: a content digest (so a
// later reader can prove it has the same bytes) and a search for NaN/Inf.
//
// The digest of a tensor is the wrapping sum, over its 4 KiB blocks, of a
// mix of each block's hash and its index: the same whatever order threads
// see the blocks in and however a reader chunks them, as long as chunks
// start at a multiple of ATLAS_SCAN_BLOCK_BYTES within the tensor. It is a
// check against accidental or in-place change, not a cryptographic hash.
#ifndef ATLAS_RUNTIME_WEIGHT_SCAN_H_
#define ATLAS_RUNTIME_WEIGHT_SCAN_H_

#include <stddef.h>
#include <stdint.h>

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

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_WEIGHT_SCAN_H_
