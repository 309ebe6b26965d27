// One element of a quantized weight matrix, read where it is stored: the
// layouts of module "quant" (quant_kernels.h) and the dequantization both
// backends share. Plain C that nvcc also compiles (quant.cu includes it), so
// the host twin and the CUDA kernel read a weight the same way; the tests
// check both against a dequantizer of their own (tests/quant/).
#ifndef ATLAS_KERNELS_QUANT_DECODE_H_
#define ATLAS_KERNELS_QUANT_DECODE_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define ATLAS_QD __device__ __forceinline__
#else
#define ATLAS_QD static inline
#endif

// The stored layouts (element W[n][k] of a rows x cols matrix; ppw = 32 /
// bits values per 32-bit word, the lowest bits first):
// FP8: w bytes [rows][cols], F8_E4M3; scales [ceil(rows/block_n)]
//   [ceil(cols/group_k)]. (fp8's weight_scale_inv; compressed-tensors
//   float-quantized weight_scale, strategy tensor, channel or block.)
#define ATLAS_QUANT_LAYOUT_FP8 1u
// INT_ROWS: w int32 [rows][ceil(cols/ppw)], values offset by 2^(bits-1);
//   scales [rows][G]; zeros int32 [ceil(rows/ppw)][G], packed down the rows;
//   G = ceil(cols/group_k). (compressed-tensors pack-quantized
//   weight_packed, weight_scale, weight_zero_point, weight_g_idx.)
#define ATLAS_QUANT_LAYOUT_INT_ROWS 2u
// GPTQ: w int32 [cols/ppw][rows], packed down the input dimension; scales
//   [G][rows]; zeros int32 [G][ceil(rows/ppw)].
#define ATLAS_QUANT_LAYOUT_GPTQ 3u
// AWQ (version gemm, 4 bits): w int32 [cols][rows/8], row r of a word in
//   nibble ATLAS_QD_AWQ_SLOT(r % 8) (AWQ packs rows 0 2 4 6 1 3 5 7);
//   scales [G][rows]; zeros int32 [G][rows/8] in the same order.
#define ATLAS_QUANT_LAYOUT_AWQ 4u
// Where g_idx (int32 [cols]) is given, it names each column's group (GPTQ's
// desc_act, compressed-tensors' actorder); else the group is k / group_k.

// flags: the scales' dtype in bits 0-1; ATLAS_QUANT_FLAG_ZEROS where zero
// points are stored (else the zero is 2^(bits-1)); in bits 3-4 an amount
// added to each stored zero (GPTQ's original format stores zero - 1).
#define ATLAS_QUANT_SCALE_F32 0u
#define ATLAS_QUANT_SCALE_F16 1u
#define ATLAS_QUANT_SCALE_BF16 2u
#define ATLAS_QUANT_FLAG_SCALE_MASK 3u
#define ATLAS_QUANT_FLAG_ZEROS 4u
#define ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT 3u
#define ATLAS_QUANT_FLAG_ZERO_OFFSET_MASK 3u

// AWQ's nibble for row r % 8 of a word (its pack order 0 2 4 6 1 3 5 7).
#define ATLAS_QD_AWQ_SLOT(r) ((((r)&1u) << 2) | ((r) >> 1))

// One quantized matrix as the kernels see it.
typedef struct atlas_qd_matrix {
  const void *w;
  const void *scales;
  const int32_t *zeros;  // NULL: symmetric
  const int32_t *g_idx;  // NULL: k / group_k
  uint32_t rows, cols, layout, bits, group_k, block_n, flags;
} atlas_qd_matrix;

ATLAS_QD float atlas_qd_f32_bits(uint32_t u) {
#ifdef __CUDACC__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

ATLAS_QD float atlas_qd_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
           m = h & 0x3ffu;
  if (e == 0x1fu) return atlas_qd_f32_bits(sign | 0x7f800000u | (m << 13));
  if (e != 0) return atlas_qd_f32_bits(sign | ((e + 112u) << 23) | (m << 13));
  // Subnormal: m * 2^-24, exact in f32.
  float v = (float)m * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

ATLAS_QD float atlas_qd_bf16(uint16_t h) {
  return atlas_qd_f32_bits((uint32_t)h << 16);
}

// F8_E4M3 (the "fn" variant: bias 7, no infinities, 0x7f and 0xff NaN).
ATLAS_QD float atlas_qd_fp8_e4m3(uint8_t b) {
  uint32_t sign = (uint32_t)(b & 0x80u) << 24, e = (b >> 3) & 0xfu, m = b & 7u;
  if (e == 0xfu && m == 7u) return atlas_qd_f32_bits(sign | 0x7fc00000u);
  if (e != 0) return atlas_qd_f32_bits(sign | ((e + 120u) << 23) | (m << 20));
  float v = (float)m * 0.001953125f;  // m * 2^-9
  return sign ? -v : v;
}

ATLAS_QD float atlas_qd_scale(const void *scales, uint32_t type, size_t i) {
  if (type == ATLAS_QUANT_SCALE_F32) return ((const float *)scales)[i];
  uint16_t h = ((const uint16_t *)scales)[i];
  return type == ATLAS_QUANT_SCALE_F16 ? atlas_qd_f16(h) : atlas_qd_bf16(h);
}

ATLAS_QD uint32_t atlas_qd_field(uint32_t word, uint32_t slot, uint32_t bits) {
  return (word >> (slot * bits)) & ((1u << bits) - 1u);
}

// W[n][k], dequantized in f32: (q - zero) * scale, or fp8(q) * scale. The
// product is one f32 rounding of exact operands.
ATLAS_QD float atlas_qd_weight(const atlas_qd_matrix *m, uint32_t n,
                               uint32_t k) {
  const uint32_t stype = m->flags & ATLAS_QUANT_FLAG_SCALE_MASK;
  const uint32_t gk = m->group_k ? m->group_k : m->cols;
  const uint32_t groups = (m->cols + gk - 1) / gk;
  const uint32_t g = m->g_idx ? (uint32_t)m->g_idx[k] : k / gk;
  if (m->layout == ATLAS_QUANT_LAYOUT_FP8) {
    const uint32_t bn = m->block_n ? m->block_n : m->rows;
    float q =
        atlas_qd_fp8_e4m3(((const uint8_t *)m->w)[(size_t)n * m->cols + k]);
    return q * atlas_qd_scale(m->scales, stype, (size_t)(n / bn) * groups + g);
  }
  const uint32_t bits = m->bits, ppw = 32u / bits;
  const uint32_t *w = (const uint32_t *)m->w;
  const uint32_t *z = (const uint32_t *)m->zeros;
  uint32_t q, zero = 1u << (bits - 1);
  size_t si;
  if (m->layout == ATLAS_QUANT_LAYOUT_INT_ROWS) {
    const size_t wpr = (m->cols + ppw - 1) / ppw;
    q = atlas_qd_field(w[(size_t)n * wpr + k / ppw], k % ppw, bits);
    si = (size_t)n * groups + g;
    if (z)
      zero = atlas_qd_field(z[(size_t)(n / ppw) * groups + g], n % ppw, bits);
  } else if (m->layout == ATLAS_QUANT_LAYOUT_GPTQ) {
    q = atlas_qd_field(w[(size_t)(k / ppw) * m->rows + n], k % ppw, bits);
    si = (size_t)g * m->rows + n;
    if (z) {
      const size_t zpr = (m->rows + ppw - 1) / ppw;
      zero = atlas_qd_field(z[(size_t)g * zpr + n / ppw], n % ppw, bits);
    }
  } else {  // AWQ
    const size_t wpr = m->rows / 8u;
    q = atlas_qd_field(w[(size_t)k * wpr + n / 8u], ATLAS_QD_AWQ_SLOT(n % 8u),
                       4u);
    si = (size_t)g * m->rows + n;
    if (z)
      zero = atlas_qd_field(z[(size_t)g * wpr + n / 8u],
                            ATLAS_QD_AWQ_SLOT(n % 8u), 4u);
  }
  if (z) {
    zero += (m->flags >> ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT) &
            ATLAS_QUANT_FLAG_ZERO_OFFSET_MASK;
  }
  return (float)((int32_t)q - (int32_t)zero) *
         atlas_qd_scale(m->scales, stype, si);
}

#endif  // ATLAS_KERNELS_QUANT_DECODE_H_
