// The `weight_scan` module: the host twin calls runtime/base/weight_scan.c;
// CUDA loads weight_scan.cu's fatbin and finds the same name.
#include <stdint.h>

#include "atlas/kernels/weight_scan_fatbin.h"
#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/base/weight_scan.h"

static void weight_scan_host(const atlas_launch_config *config, void **args) {
  (void)config;
  const void *data = *(const void **)args[0];
  uint64_t bytes = (uint64_t) * (const int64_t *)args[1];
  atlas_scan_finite finite = (atlas_scan_finite) * (const uint32_t *)args[2];
  uint64_t *result = *(uint64_t **)args[3];
  uint64_t first = UINT64_MAX;
  result[0] += atlas_weight_scan(data, (size_t)bytes, 0, finite, &first);
  if (first < result[1]) result[1] = first;
}

static const atlas_kernel_def kScanKernels[] = {
    {ATLAS_WEIGHT_SCAN_KERNEL, "plup", weight_scan_host},
};

static const atlas_module_image kScanImages[] = {
    {"cuda", atlas_fatbin_weight_scan, ATLAS_FATBIN_WEIGHT_SCAN_SIZE},
};

const atlas_module_def atlas_weight_scan_module = {
    ATLAS_WEIGHT_SCAN_MODULE, kScanImages, 1, kScanKernels, 1};
