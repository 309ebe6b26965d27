// F16 and BF16 to f32: exact conversions (every F16 and BF16 value is
// representable in f32). A leaf header: kernels, formats and architectures
// all use it, and it uses nothing of Atlas.
#ifndef ATLAS_RUNTIME_HALF_H_
#define ATLAS_RUNTIME_HALF_H_

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline float atlas_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline float atlas_bf16_to_f32(uint16_t bits) {
  return atlas_f32_from_bits((uint32_t)bits << 16);
}

static inline float atlas_f16_to_f32(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return atlas_f32_from_bits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) {
    return atlas_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  }
  if (mant == 0) return atlas_f32_from_bits(sign);
  // Subnormal: shift the leading 1 up into the implicit bit.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return atlas_f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_HALF_H_
