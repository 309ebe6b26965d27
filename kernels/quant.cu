// CUDA kernels of module "quant" (quant_kernels.h): products that read
// quantized weights where they are stored and dequantize each one in
// registers (quant_decode.h, shared with the host twin quant_host.c).
//
// A warp per row of W, lanes striding the columns; the 8 warps of a block
// take 8 neighbouring rows, which share the words of the layouts that pack
// down the rows (GPTQ's, AWQ's) in the cache. A first, correct form:
// nothing here is tuned for bandwidth yet.
#include <stdint.h>

#include "quant_decode.h"

__device__ __forceinline__ atlas_qd_matrix
make_matrix(const void *w, const void *scales, const int32_t *zeros,
            const int32_t *g_idx, uint32_t rows, uint32_t cols, uint32_t layout,
            uint32_t bits, uint32_t group_k, uint32_t block_n, uint32_t flags) {
  atlas_qd_matrix m;
  m.w = w, m.scales = scales, m.zeros = zeros, m.g_idx = g_idx;
  m.rows = rows, m.cols = cols, m.layout = layout, m.bits = bits;
  m.group_k = group_k, m.block_n = block_n, m.flags = flags;
  return m;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void quant_matvec(
    float *out, const float *x, const void *w, const void *scales,
    const int32_t *zeros, const int32_t *g_idx, uint32_t rows, uint32_t cols,
    uint32_t layout, uint32_t bits, uint32_t group_k, uint32_t block_n,
    uint32_t flags, uint32_t accumulate) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t n = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (n >= rows) return;
  const atlas_qd_matrix m = make_matrix(w, scales, zeros, g_idx, rows, cols,
                                        layout, bits, group_k, block_n, flags);
  float acc = 0.0f;
  for (uint32_t k = lane; k < cols; k += 32u) {
    acc += atlas_qd_weight(&m, n, k) * __ldg(x + k);
  }
  acc = warp_sum(acc);
  if (lane == 0) out[n] = accumulate ? out[n] + acc : acc;
}

#define X_ROWS 8

extern "C" __global__ void quant_matmul(
    float *out, const float *x, const void *w, const void *scales,
    const int32_t *zeros, const int32_t *g_idx, uint32_t count, uint32_t rows,
    uint32_t cols, uint32_t layout, uint32_t bits, uint32_t group_k,
    uint32_t block_n, uint32_t flags, uint32_t accumulate) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t n = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  const uint32_t i0 = blockIdx.y * X_ROWS;
  if (n >= rows) return;
  const atlas_qd_matrix m = make_matrix(w, scales, zeros, g_idx, rows, cols,
                                        layout, bits, group_k, block_n, flags);
  float acc[X_ROWS];
#pragma unroll
  for (int j = 0; j < X_ROWS; ++j) acc[j] = 0.0f;
  for (uint32_t k = lane; k < cols; k += 32u) {
    const float wk = atlas_qd_weight(&m, n, k);
#pragma unroll
    for (uint32_t j = 0; j < X_ROWS; ++j) {
      if (i0 + j < count) acc[j] += wk * __ldg(x + (size_t)(i0 + j) * cols + k);
    }
  }
#pragma unroll
  for (uint32_t j = 0; j < X_ROWS; ++j) {
    const float s = warp_sum(acc[j]);
    if (lane == 0 && i0 + j < count) {
      float *o = out + (size_t)(i0 + j) * rows + n;
      *o = accumulate ? *o + s : s;
    }
  }
}
