// Host twin of module "quant" (quant_kernels.h): the reference the CUDA
// kernel is compared with. Each row is summed in column order in f32, each
// weight dequantized as it is read (quant_decode.h).
#include <stdint.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/kernels/quant_fatbin.h"
#include "atlas/kernels/quant_kernels.h"

// The matrix from the arguments at `first` (w, scales, zeros, g_idx) and
// `dims` (rows, cols, layout, bits, group_k, block_n, flags).
static atlas_qd_matrix matrix_at(void **args, int first, int dims) {
  atlas_qd_matrix m = {
      .w = *(const void **)args[first],
      .scales = *(const void **)args[first + 1],
      .zeros = *(const int32_t **)args[first + 2],
      .g_idx = *(const int32_t **)args[first + 3],
      .rows = *(const uint32_t *)args[dims],
      .cols = *(const uint32_t *)args[dims + 1],
      .layout = *(const uint32_t *)args[dims + 2],
      .bits = *(const uint32_t *)args[dims + 3],
      .group_k = *(const uint32_t *)args[dims + 4],
      .block_n = *(const uint32_t *)args[dims + 5],
      .flags = *(const uint32_t *)args[dims + 6],
  };
  return m;
}

// out[n] (+)= W[n] . x, summed in column order.
static void rows_times(const atlas_qd_matrix *m, const float *x, float *out,
                       uint32_t accumulate) {
  for (uint32_t n = 0; n < m->rows; ++n) {
    float acc = 0.0f;
    for (uint32_t k = 0; k < m->cols; ++k) {
      acc += atlas_qd_weight(m, n, k) * x[k];
    }
    out[n] = accumulate ? out[n] + acc : acc;
  }
}

static void quant_matvec_host(const atlas_launch_config *config, void **args) {
  (void)config;
  atlas_qd_matrix m = matrix_at(args, 2, 6);
  rows_times(&m, *(const float **)args[1], *(float **)args[0],
             *(const uint32_t *)args[13]);
}

static void quant_matmul_host(const atlas_launch_config *config, void **args) {
  (void)config;
  float *out = *(float **)args[0];
  const float *x = *(const float **)args[1];
  const uint32_t count = *(const uint32_t *)args[6];
  atlas_qd_matrix m = matrix_at(args, 2, 7);
  const uint32_t accumulate = *(const uint32_t *)args[14];
  for (uint32_t i = 0; i < count; ++i) {
    rows_times(&m, x + (size_t)i * m.cols, out + (size_t)i * m.rows,
               accumulate);
  }
}

static const atlas_kernel_def kQuantKernels[] = {
    {ATLAS_QUANT_MATVEC_KERNEL, ATLAS_QUANT_MATVEC_SIGNATURE,
     quant_matvec_host},
    {ATLAS_QUANT_MATMUL_KERNEL, ATLAS_QUANT_MATMUL_SIGNATURE,
     quant_matmul_host},
};

static const atlas_module_image kQuantImages[] = {
    {"cuda", atlas_fatbin_quant, ATLAS_FATBIN_QUANT_SIZE},
};

const atlas_module_def atlas_quant_module = {
    ATLAS_QUANT_MODULE, kQuantImages, 1, kQuantKernels,
    sizeof(kQuantKernels) / sizeof(kQuantKernels[0])};
