// Kernels of the `test` module: launch benchmarks, red-zone tests and the
// backend contract suite. Host twins live in test_kernels_host.c; the module
// definition that pairs them is test_module.c.
#include <stdint.h>

// Does nothing: measures launch overhead.
extern "C" __global__ void empty(void) {}

// Writes k bytes of 0xAB just past a buffer of `bytes` bytes: a deliberate
// overrun for red-zone tests.
extern "C" __global__ void write_past(unsigned char *buf, uint32_t bytes,
                                      uint32_t k) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < k;
       i += gridDim.x * blockDim.x) {
    buf[bytes + i] = 0xAB;
  }
}

// out[i] = value for i < n.
extern "C" __global__ void fill_u32(uint32_t *out, uint32_t n, uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    out[i] = value;
  }
}

// out[i] = a[i] + b[i].
extern "C" __global__ void add_f32(const float *a, const float *b, float *out,
                                   uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

// x[i] = x[i] * s + (float)delta: exercises float and int32 arguments.
extern "C" __global__ void axpb_f32(float *x, float s, int32_t delta,
                                    uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    x[i] = x[i] * s + (float)delta;
  }
}

// out[i] = base + i: exercises int64 arguments.
extern "C" __global__ void iota_i64(int64_t *out, int64_t base, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    out[i] = base + (int64_t)i;
  }
}
