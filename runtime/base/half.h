// F16 and BF16 to f32: exact conversions (every F16 and BF16 value is
// representable in f32); f32 to F16 and BF16, rounded to nearest even (as
// CUDA's __float2half_rn and __float2bfloat16_rn, for the KV cache). A leaf
// header: kernels, formats and architectures all use it, and it uses nothing of
// Atlas.
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
  if (exp == 0x1f)
    return atlas_f32_from_bits(sign | 0x7f800000u | (mant << 13));
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

static inline uint32_t atlas_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline uint16_t atlas_f32_to_bf16(float value) {
  uint32_t u = atlas_f32_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline uint16_t atlas_f32_to_f16(float value) {
  uint32_t x = atlas_f32_bits(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  }
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // rounds to inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal half or zero
    if (a < 0x33000000u) return (uint16_t)sign;  // below half of 2^-24
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - (a >> 23);  // 14..24
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (uint16_t)(sign | q);
  }
  uint32_t h = (((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13);
  uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_HALF_H_
