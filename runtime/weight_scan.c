// Digest and NaN/Inf search in one pass (see weight_scan.h).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/weight_scan.h"

#include <stdbool.h>
#include <string.h>

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Non-zero when some lane of `w` has every exponent bit set (NaN or Inf).
static uint64_t bad_lanes(uint64_t w, uint64_t exp_mask, uint64_t low,
                          uint64_t high) {
  uint64_t x = (w & exp_mask) ^ exp_mask;  // a lane is 0 iff all ones
  return (x - low) & ~x & high;
}

static uint64_t scalar_first_bad(const unsigned char *p, size_t bytes,
                                 atlas_scan_finite finite) {
  size_t elem = finite == ATLAS_SCAN_FINITE_F32 ? 4 : 2;
  for (size_t i = 0; i + elem <= bytes; i += elem) {
    uint32_t v = 0;
    for (size_t k = 0; k < elem; ++k) v |= (uint32_t)p[i + k] << (8 * k);
    bool bad = false;
    switch (finite) {
      case ATLAS_SCAN_FINITE_F32: bad = (v & 0x7f800000u) == 0x7f800000u; break;
      case ATLAS_SCAN_FINITE_F16: bad = (v & 0x7c00u) == 0x7c00u; break;
      case ATLAS_SCAN_FINITE_BF16: bad = (v & 0x7f80u) == 0x7f80u; break;
      case ATLAS_SCAN_FINITE_NONE: break;
    }
    if (bad) return i / elem;
  }
  return UINT64_MAX;
}

// One block: hash (4 independent xor-multiply lanes) and the bad-lane flag.
static uint64_t block_hash(const unsigned char *p, size_t bytes,
                           uint64_t exp_mask, uint64_t low, uint64_t high,
                           uint64_t *bad) {
  const uint64_t k = 0x9e3779b97f4a7c15ull;
  uint64_t a0 = 1, a1 = 2, a2 = 3, a3 = 4;
  uint64_t flags = 0;
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    uint64_t w[4];
    memcpy(w, p + i, 32);
    a0 = (a0 ^ w[0]) * k;
    a1 = (a1 ^ w[1]) * k;
    a2 = (a2 ^ w[2]) * k;
    a3 = (a3 ^ w[3]) * k;
    if (exp_mask != 0) {
      flags |= bad_lanes(w[0], exp_mask, low, high) |
               bad_lanes(w[1], exp_mask, low, high) |
               bad_lanes(w[2], exp_mask, low, high) |
               bad_lanes(w[3], exp_mask, low, high);
    }
  }
  uint64_t tail = 0;
  for (size_t t = 0; i < bytes; ++i, ++t) {
    tail ^= (uint64_t)p[i] << (8 * (t & 7));
    if ((t & 7) == 7 || i + 1 == bytes) {
      a0 = (a0 ^ tail) * k;
      tail = 0;
    }
  }
  *bad |= flags;
  return mix64(a0) ^ mix64(a1 + 0x1234567ull) ^ mix64(a2 + 0x89abcdefull) ^
         mix64(a3 ^ (uint64_t)bytes);
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
  const unsigned char *p = data;
  uint64_t digest = 0;
  uint64_t first_bad = UINT64_MAX;
  uint64_t block = offset / ATLAS_SCAN_BLOCK_BYTES;
  for (size_t at = 0; at < bytes; at += ATLAS_SCAN_BLOCK_BYTES, ++block) {
    size_t n = bytes - at < ATLAS_SCAN_BLOCK_BYTES ? bytes - at
                                                   : ATLAS_SCAN_BLOCK_BYTES;
    uint64_t bad = 0;
    uint64_t h = block_hash(p + at, n, exp_mask, low, high, &bad);
    digest += mix64(h ^ (block * 0xd6e8feb86659fd93ull));
    if (finite != ATLAS_SCAN_FINITE_NONE && first_bad == UINT64_MAX) {
      // The word test misses an element split across the 32-byte tail; the
      // scalar pass over a flagged or short-tailed block is exact.
      if (bad != 0 || (n % 32) != 0) {
        uint64_t i = scalar_first_bad(p + at, n, finite);
        if (i != UINT64_MAX) {
          size_t elem = finite == ATLAS_SCAN_FINITE_F32 ? 4 : 2;
          first_bad = (offset + at) / elem + i;
        }
      }
    }
  }
  if (out_first_bad != NULL) *out_first_bad = first_bad;
  return digest;
}
