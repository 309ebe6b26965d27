// Digest and NaN/Inf search in one pass (see weight_scan.h). The constants
// and the lane layout are repeated in kernels/weight_scan.cu; the CUDA test
// (tests/cuda/weight_scan_cuda_test.cc) checks both give the same digests.
#include "atlas/runtime/base/weight_scan.h"

#include <string.h>

enum { kLanes = 32, kUnit = 16 };

static const uint64_t kMul = 0x9e3779b97f4a7c15ull;
static const uint64_t kSeedA = 0x243f6a8885a308d3ull;
static const uint64_t kSeedC = 0x13198a2e03707344ull;
static const uint64_t kLaneC = 0x1234567ull;
static const uint64_t kLength = 0xa4093822299f31d0ull;
static const uint64_t kBlock = 0xd6e8feb86659fd93ull;

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

size_t atlas_scan_finite_bytes(atlas_scan_finite finite) {
  switch (finite) {
    case ATLAS_SCAN_FINITE_F32:
      return 4;
    case ATLAS_SCAN_FINITE_F16:
    case ATLAS_SCAN_FINITE_BF16:
      return 2;
    case ATLAS_SCAN_FINITE_NONE:
      break;
  }
  return 0;
}

// Non-zero when some lane of `w` has every exponent bit set (NaN or Inf).
static uint64_t bad_lanes(uint64_t w, uint64_t exp_mask, uint64_t low,
                          uint64_t high) {
  uint64_t x = (w & exp_mask) ^ exp_mask;  // a lane is 0 iff all ones
  return (x - low) & ~x & high;
}

static uint64_t scalar_first_bad(const unsigned char *p, size_t bytes,
                                 atlas_scan_finite finite) {
  size_t elem = atlas_scan_finite_bytes(finite);
  for (size_t i = 0; i + elem <= bytes; i += elem) {
    uint32_t v = 0;
    for (size_t k = 0; k < elem; ++k) v |= (uint32_t)p[i + k] << (8 * k);
    bool bad = false;
    switch (finite) {
      case ATLAS_SCAN_FINITE_F32:
        bad = (v & 0x7f800000u) == 0x7f800000u;
        break;
      case ATLAS_SCAN_FINITE_F16:
        bad = (v & 0x7c00u) == 0x7c00u;
        break;
      case ATLAS_SCAN_FINITE_BF16:
        bad = (v & 0x7f80u) == 0x7f80u;
        break;
      case ATLAS_SCAN_FINITE_NONE:
        break;
    }
    if (bad) return i / elem;
  }
  return UINT64_MAX;
}

// One block of n <= 4096 bytes: its hash, and the bad-lane flags of its
// words (units are whole elements, and the zero padding is finite).
static uint64_t block_hash(const unsigned char *p, size_t n, uint64_t exp_mask,
                           uint64_t low, uint64_t high, uint64_t *bad) {
  uint64_t a[kLanes], c[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    a[j] = kSeedA + (uint64_t)j;
    c[j] = kSeedC + (uint64_t)j;
  }
  uint64_t flags = 0;
  size_t units = (n + kUnit - 1) / kUnit;
  for (size_t u = 0; u < units; ++u) {
    uint64_t w[2] = {0, 0};
    size_t at = u * kUnit;
    memcpy(w, p + at, n - at < kUnit ? n - at : kUnit);
    size_t j = u % kLanes;
    a[j] = (a[j] ^ w[0]) * kMul;
    c[j] = (c[j] ^ w[1]) * kMul;
    if (exp_mask != 0) {
      flags |= bad_lanes(w[0], exp_mask, low, high) |
               bad_lanes(w[1], exp_mask, low, high);
    }
  }
  *bad |= flags;
  uint64_t h = mix64((uint64_t)n ^ kLength);
  for (int j = 0; j < kLanes; ++j) h ^= mix64(a[j]) ^ mix64(c[j] + kLaneC);
  return h;
}

uint64_t atlas_weight_scan(const void *data, size_t bytes, uint64_t offset,
                           atlas_scan_finite finite, uint64_t *out_first_bad) {
  uint64_t exp_mask = 0, low = 0, high = 0;
  switch (finite) {
    case ATLAS_SCAN_FINITE_F32:
      exp_mask = 0x7f8000007f800000ull;
      low = 0x0000000100000001ull;
      high = 0x8000000080000000ull;
      break;
    case ATLAS_SCAN_FINITE_F16:
      exp_mask = 0x7c007c007c007c00ull;
      low = 0x0001000100010001ull;
      high = 0x8000800080008000ull;
      break;
    case ATLAS_SCAN_FINITE_BF16:
      exp_mask = 0x7f807f807f807f80ull;
      low = 0x0001000100010001ull;
      high = 0x8000800080008000ull;
      break;
    case ATLAS_SCAN_FINITE_NONE:
      break;
  }
  const size_t elem = atlas_scan_finite_bytes(finite);
  const unsigned char *p = data;
  uint64_t digest = 0;
  uint64_t first_bad = UINT64_MAX;
  uint64_t block = offset / ATLAS_SCAN_BLOCK_BYTES;
  for (size_t at = 0; at < bytes; at += ATLAS_SCAN_BLOCK_BYTES, ++block) {
    size_t n = bytes - at < ATLAS_SCAN_BLOCK_BYTES ? bytes - at
                                                   : ATLAS_SCAN_BLOCK_BYTES;
    uint64_t bad = 0;
    uint64_t h = block_hash(p + at, n, exp_mask, low, high, &bad);
    digest += mix64(h ^ (block * kBlock));
    // The word test flags a block; the scalar pass finds the element.
    if (bad != 0 && elem != 0 && first_bad == UINT64_MAX) {
      uint64_t i = scalar_first_bad(p + at, n, finite);
      if (i != UINT64_MAX) first_bad = (offset + at) / elem + i;
    }
  }
  if (out_first_bad != NULL) *out_first_bad = first_bad;
  return digest;
}

bool atlas_scan_is_nan(const void *elem, atlas_scan_finite finite) {
  const unsigned char *p = elem;
  switch (finite) {
    case ATLAS_SCAN_FINITE_F32:
      return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
              (uint32_t)(p[3] & 0x7f) << 24) > 0x7f800000u;
    case ATLAS_SCAN_FINITE_F16:
      return ((uint32_t)p[0] | (uint32_t)(p[1] & 0x7f) << 8) > 0x7c00u;
    case ATLAS_SCAN_FINITE_BF16:
      return ((uint32_t)p[0] | (uint32_t)(p[1] & 0x7f) << 8) > 0x7f80u;
    case ATLAS_SCAN_FINITE_NONE:
      break;
  }
  return false;
}

atlas_status atlas_scan_refuse(const char *file, const char *what,
                               uint64_t index, bool is_nan) {
  return atlas_status_make(
      ATLAS_STATUS_DATA_LOSS,
      "%s: tensor %s holds a non-finite weight: element %llu is %s (NaN and "
      "Inf weights are refused: they would make every logit NaN)",
      file != NULL ? file : "(memory)", what != NULL ? what : "?",
      (unsigned long long)index, is_nan ? "NaN" : "Inf");
}
