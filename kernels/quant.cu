// CUDA kernels of module "quant" (quant_kernels.h): matrix-vector products
// that read quantized weights where they are stored and dequantize each one
// in registers (quant_decode.h, shared with the host twin quant_host.c).
//
// quant_matvec: a warp per row, lanes striding the columns; the 8 warps of a
// block take 8 neighbouring rows, which share the words of the layouts that
// pack down the rows (GPTQ's, AWQ's) in the cache. A first, correct form:
// nothing here is tuned for bandwidth yet.
#include <stdint.h>

#include "quant_decode.h"

extern "C" __global__ void quant_matvec(float *out, const float *x,
                                        const void *w, const void *scales,
                                        const int32_t *zeros,
                                        const int32_t *g_idx, uint32_t rows,
                                        uint32_t cols, uint32_t layout,
                                        uint32_t bits, uint32_t group_k,
                                        uint32_t block_n, uint32_t flags) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t n = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (n >= rows) return;
  atlas_qd_matrix m;
  m.w = w, m.scales = scales, m.zeros = zeros, m.g_idx = g_idx;
  m.rows = rows, m.cols = cols, m.layout = layout, m.bits = bits;
  m.group_k = group_k, m.block_n = block_n, m.flags = flags;
  float acc = 0.0f;
  for (uint32_t k = lane; k < cols; k += 32u) {
    acc += atlas_qd_weight(&m, n, k) * __ldg(x + k);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[n] = acc;
}
