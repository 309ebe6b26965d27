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
#ifndef __cplusplus
#include <stdbool.h>
#endif

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
// GGUF_*: llama.cpp's blocks (ggml-common.h), w [rows][cols / block]
//   blocks, each row's blocks in order (a GGUF tensor of ne = {cols, rows});
//   the scales live in the blocks (scales, zeros, g_idx unused).
#define ATLAS_QUANT_LAYOUT_GGUF_Q8_0 5u  // 32 per block: f16 d, int8 q[32]
#define ATLAS_QUANT_LAYOUT_GGUF_Q4_0 6u  // 32: f16 d, q[16] nibbles (-8)
#define ATLAS_QUANT_LAYOUT_GGUF_Q4_K 7u  // 256: d, dmin, 6-bit scales
#define ATLAS_QUANT_LAYOUT_GGUF_Q5_K 8u  // 256: Q4_K plus a high bit
#define ATLAS_QUANT_LAYOUT_GGUF_Q6_K 9u  // 256: 6-bit q, int8 scales, d
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

ATLAS_QD float atlas_qd_f16_at(const uint8_t *p) {
  return atlas_qd_f16((uint16_t)(p[0] | (uint16_t)p[1] << 8));
}

// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K block's 12 bytes.
ATLAS_QD void atlas_qd_k4_scale(const uint8_t *q, uint32_t j, uint32_t *sc,
                                uint32_t *mn) {
  if (j < 4) {
    *sc = q[j] & 63u;
    *mn = q[j + 4] & 63u;
  } else {
    *sc = (q[j + 4] & 0xfu) | ((uint32_t)(q[j - 4] >> 6) << 4);
    *mn = (uint32_t)(q[j + 4] >> 4) | ((uint32_t)(q[j] >> 6) << 4);
  }
}

// Element j of a GGUF block at `b`, in f32 as ggml's dequantize_row_* forms
// it (the same operations in the same order).
ATLAS_QD float atlas_qd_gguf(uint32_t layout, const uint8_t *b, uint32_t j) {
  if (layout == ATLAS_QUANT_LAYOUT_GGUF_Q8_0) {
    return (float)(int8_t)b[2 + j] * atlas_qd_f16_at(b);
  }
  if (layout == ATLAS_QUANT_LAYOUT_GGUF_Q4_0) {
    const uint32_t q =
        j < 16 ? (b[2 + j] & 0xfu) : (uint32_t)(b[2 + j - 16] >> 4);
    return (float)((int32_t)q - 8) * atlas_qd_f16_at(b);
  }
  if (layout == ATLAS_QUANT_LAYOUT_GGUF_Q6_K) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const size_t h = j / 128;
    const uint32_t r = j % 128, quarter = r / 32, l = r % 32;
    ql += 64 * h, qh += 32 * h, sc += 8 * h;
    const uint32_t lo = quarter & 1u ? ql[l + 32] : ql[l];
    const uint32_t nib = quarter < 2 ? (lo & 0xfu) : (lo >> 4);
    const int32_t q =
        (int32_t)(nib | (((uint32_t)(qh[l] >> (2 * quarter)) & 3u) << 4)) - 32;
    const uint32_t sub = l / 16 + 2 * quarter;  // the 16-element sub-block
    const float scale = (float)sc[sub];
    return atlas_qd_f16_at(b + 208) * scale * (float)q;
  }
  // Q4_K and Q5_K: 8 sub-blocks of 32, chunks of 64 sharing a byte.
  const uint32_t c = j / 64, within = j % 64, l = within % 32;
  const bool high = within >= 32;
  uint32_t sc = 0, mn = 0;
  atlas_qd_k4_scale(b + 4, 2 * c + (high ? 1u : 0u), &sc, &mn);
  const float d1 = atlas_qd_f16_at(b) * (float)sc;
  const float m1 = atlas_qd_f16_at(b + 2) * (float)mn;
  const uint8_t *qs = b + (layout == ATLAS_QUANT_LAYOUT_GGUF_Q5_K ? 48 : 16);
  uint32_t q = high ? (uint32_t)(qs[32 * c + l] >> 4) : (qs[32 * c + l] & 0xfu);
  if (layout == ATLAS_QUANT_LAYOUT_GGUF_Q5_K &&
      ((b[16 + l] >> (2 * c + (high ? 1u : 0u))) & 1u)) {
    q += 16;
  }
  return d1 * (float)q - m1;
}

// Elements and bytes of a GGUF layout's block.
ATLAS_QD uint32_t atlas_qd_gguf_block(uint32_t layout) {
  return layout <= ATLAS_QUANT_LAYOUT_GGUF_Q4_0 ? 32u : 256u;
}
ATLAS_QD uint32_t atlas_qd_gguf_bytes(uint32_t layout) {
  switch (layout) {
    case ATLAS_QUANT_LAYOUT_GGUF_Q8_0:
      return 34u;
    case ATLAS_QUANT_LAYOUT_GGUF_Q4_0:
      return 18u;
    case ATLAS_QUANT_LAYOUT_GGUF_Q4_K:
      return 144u;
    case ATLAS_QUANT_LAYOUT_GGUF_Q5_K:
      return 176u;
    default:
      return 210u;
  }
}

// W[n][k], dequantized in f32: (q - zero) * scale, or fp8(q) * scale (one
// f32 rounding of exact operands), or a GGUF block's element.
ATLAS_QD float atlas_qd_weight(const atlas_qd_matrix *m, uint32_t n,
                               uint32_t k) {
  if (m->layout >= ATLAS_QUANT_LAYOUT_GGUF_Q8_0) {
    const uint32_t block = atlas_qd_gguf_block(m->layout);
    const size_t at = ((size_t)n * (m->cols / block) + k / block) *
                      atlas_qd_gguf_bytes(m->layout);
    return atlas_qd_gguf(m->layout, (const uint8_t *)m->w + at, k % block);
  }
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
