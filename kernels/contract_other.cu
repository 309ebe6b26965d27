// The contract's second module (another model's kernels): its names differ
// from the contract module's, for isolation tests.
#include <stdint.h>

// dst[i] = value for i < n.
extern "C" __global__ void other_fill_u32(uint32_t *dst, uint32_t n,
                                          uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    dst[i] = value;
  }
}
