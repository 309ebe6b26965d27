// Kernels of the `other` module: a second model's module set, used to check
// that one model's backend cannot see another model's kernels.
#include <stdint.h>

// x[i] += 1 for i < n.
extern "C" __global__ void inc_u32(uint32_t *x, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    x[i] += 1;
  }
}
