// Matrix-vector products over quantized weights (module "quant"): the weights
// stay in the layout their checkpoint stores them in and are dequantized in
// registers, element by element, inside the product (no dequantized copy).
//
//   quant_matvec(out, x, w, scales, zeros, g_idx, rows, cols, layout, bits,
//                group_k, block_n, flags, accumulate)    "ppppppuuuuuuuu"
//       out[n] = sum_k W[n][k] * x[k] for n < rows, k < cols (accumulate
//       != 0: out[n] += that sum); out and x f32. W[n][k] is what
//       kernels/quant_decode.h's atlas_qd_weight reads from w, scales,
//       zeros and g_idx (NULL where the layout has none) for `layout`
//       (ATLAS_QUANT_LAYOUT_*), `bits` (4 or 8), the scale block group_k
//       columns by block_n rows (0: the whole dimension) and `flags`
//       (ATLAS_QUANT_FLAG_*). CUDA launch: block 256 (8 warps, a warp per
//       row), grid ceil(rows / 8); the host runs the grid in one call and
//       sums each row in column order.
//   quant_matmul(out, x, w, scales, zeros, g_idx, m, rows, cols, layout,
//                bits, group_k, block_n, flags, accumulate)
//                                                       "ppppppuuuuuuuuu"
//       out[i][n] = sum_k W[n][k] * x[i][k] for i < m (x: m x cols, out:
//       m x rows, row-major f32); the rest as quant_matvec. CUDA launch:
//       block 256, grid (ceil(rows / 8), ceil(m / 8)): each warp reads one
//       row of W once for 8 rows of x. Host: each output summed in column
//       order, so row i equals quant_matvec on x[i] bit for bit.
#ifndef ATLAS_KERNELS_QUANT_KERNELS_H_
#define ATLAS_KERNELS_QUANT_KERNELS_H_

#include "atlas/kernels/quant_decode.h"
#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_QUANT_MODULE "quant"
#define ATLAS_QUANT_MATVEC_KERNEL "quant_matvec"
#define ATLAS_QUANT_MATVEC_SIGNATURE "ppppppuuuuuuuu"
#define ATLAS_QUANT_MATMUL_KERNEL "quant_matmul"
#define ATLAS_QUANT_MATMUL_SIGNATURE "ppppppuuuuuuuuu"
// Rows of x (and of out) one warp takes in quant_matmul.
#define ATLAS_QUANT_MATMUL_X_ROWS 8
#define ATLAS_QUANT_MATVEC_BLOCK 256
#define ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK 8

// Host C twin and the CUDA fatbin under one definition.
extern const atlas_module_def atlas_quant_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_QUANT_KERNELS_H_
