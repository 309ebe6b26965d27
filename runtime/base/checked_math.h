// Overflow-checked size arithmetic: every size computed from a file or a
// config goes through these, so a crafted input cannot wrap a byte count.
#ifndef ATLAS_RUNTIME_CHECKED_MATH_H_
#define ATLAS_RUNTIME_CHECKED_MATH_H_

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// *acc = *acc * x; false (and *acc unchanged) on overflow.
static inline bool atlas_mul_u64(uint64_t *acc, uint64_t x) {
  uint64_t r;
  if (__builtin_mul_overflow(*acc, x, &r)) return false;
  *acc = r;
  return true;
}

// *acc = *acc + x; false (and *acc unchanged) on overflow.
static inline bool atlas_add_u64(uint64_t *acc, uint64_t x) {
  uint64_t r;
  if (__builtin_add_overflow(*acc, x, &r)) return false;
  *acc = r;
  return true;
}

// The product of `n` factors; false on overflow or a negative factor.
static inline bool atlas_product_u64(const int64_t *factors, int n,
                                     uint64_t *out) {
  uint64_t acc = 1;
  for (int i = 0; i < n; ++i) {
    if (factors[i] < 0 || !atlas_mul_u64(&acc, (uint64_t)factors[i])) {
      return false;
    }
  }
  *out = acc;
  return true;
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CHECKED_MATH_H_
