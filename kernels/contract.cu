// CUDA C twins of the backend contract kernels
// (tests/runtime/contract_kernels.h has the host versions): same names,
// signatures and meaning. Grid-stride loops, so any grid covers n; the suite
// launches ceil(n / 256) x 256.
#include <stdint.h>

// Does nothing: launch overhead.
extern "C" __global__ void empty(void) {}

// dst[i] = value for i < n.
extern "C" __global__ void fill_u32(uint32_t *dst, uint32_t n, uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    dst[i] = value;
  }
}

// x[i] = x[i] * a + b for i < n.
extern "C" __global__ void scale_add_f32(float *x, uint32_t n, float a,
                                         float b) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    x[i] = x[i] * a + b;
  }
}

// Bytes [n, n + k) of buf = value: a deliberate overrun for red-zone tests.
extern "C" __global__ void write_past(unsigned char *buf, uint32_t n,
                                      uint32_t k, uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < k;
       i += gridDim.x * blockDim.x) {
    buf[n + i] = (unsigned char)value;
  }
}
