// Host twin of module "quant" (quant_kernels.h): the reference the CUDA
// kernel is compared with. Each row is summed in column order in f32, each
// weight dequantized as it is read (quant_decode.h).
#include <stdint.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/kernels/quant_fatbin.h"
#include "atlas/kernels/quant_kernels.h"

static void quant_matvec_host(const atlas_launch_config *config, void **args) {
  (void)config;
  float *out = *(float **)args[0];
  const float *x = *(const float **)args[1];
  atlas_qd_matrix m = {
      .w = *(const void **)args[2],
      .scales = *(const void **)args[3],
      .zeros = *(const int32_t **)args[4],
      .g_idx = *(const int32_t **)args[5],
      .rows = *(const uint32_t *)args[6],
      .cols = *(const uint32_t *)args[7],
      .layout = *(const uint32_t *)args[8],
      .bits = *(const uint32_t *)args[9],
      .group_k = *(const uint32_t *)args[10],
      .block_n = *(const uint32_t *)args[11],
      .flags = *(const uint32_t *)args[12],
  };
  for (uint32_t n = 0; n < m.rows; ++n) {
    float acc = 0.0f;
    for (uint32_t k = 0; k < m.cols; ++k) {
      acc += atlas_qd_weight(&m, n, k) * x[k];
    }
    out[n] = acc;
  }
}

static const atlas_kernel_def kQuantKernels[] = {
    {ATLAS_QUANT_MATVEC_KERNEL, ATLAS_QUANT_MATVEC_SIGNATURE,
     quant_matvec_host},
};

static const atlas_module_image kQuantImages[] = {
    {"cuda", atlas_fatbin_quant, ATLAS_FATBIN_QUANT_SIZE},
};

const atlas_module_def atlas_quant_module = {ATLAS_QUANT_MODULE, kQuantImages,
                                             1, kQuantKernels, 1};
