// Host implementations of the contract kernels (see contract_kernels.h).
#include <stdint.h>
#include <string.h>

#include "tests/runtime/contract_kernels.h"

static void empty(const atlas_launch_config *config, void **args) {
  (void)config;
  (void)args;
}

static void fill_u32(const atlas_launch_config *config, void **args) {
  (void)config;
  uint32_t *dst = *(uint32_t **)args[0];
  uint32_t n = *(uint32_t *)args[1];
  uint32_t value = *(uint32_t *)args[2];
  for (uint32_t i = 0; i < n; ++i) dst[i] = value;
}

static void scale_add_f32(const atlas_launch_config *config, void **args) {
  (void)config;
  float *x = *(float **)args[0];
  uint32_t n = *(uint32_t *)args[1];
  float a = *(float *)args[2];
  float b = *(float *)args[3];
  for (uint32_t i = 0; i < n; ++i) x[i] = x[i] * a + b;
}

static void write_past(const atlas_launch_config *config, void **args) {
  (void)config;
  unsigned char *buf = *(unsigned char **)args[0];
  uint32_t n = *(uint32_t *)args[1];
  uint32_t k = *(uint32_t *)args[2];
  uint32_t value = *(uint32_t *)args[3];
  memset(buf + n, (int)value, k);  // deliberately out of bounds
}

static const atlas_kernel_def kContractKernels[] = {
    {"empty", "", empty},
    {"fill_u32", "puu", fill_u32},
    {"scale_add_f32", "puff", scale_add_f32},
    {"write_past", "puuu", write_past},
};

const atlas_module_def atlas_contract_host_module = {
    ATLAS_CONTRACT_MODULE, NULL, 0, kContractKernels,
    sizeof(kContractKernels) / sizeof(kContractKernels[0])};

static const atlas_kernel_def kOtherKernels[] = {
    {"other_fill_u32", "puu", fill_u32},
};

const atlas_module_def atlas_contract_other_module = {
    "other", NULL, 0, kOtherKernels,
    sizeof(kOtherKernels) / sizeof(kOtherKernels[0])};
