// The one-token step's elementwise kernels (module "token"): the embedding
// lookup, RMSNorm (whole vector, per head), SiLU and the adds.
#ifndef ATLAS_KERNELS_ELEMENTWISE_CUH_
#define ATLAS_KERNELS_ELEMENTWISE_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

template <typename T>
__device__ void embed(float *out, const T *table, const uint32_t *step,
                      uint32_t dim) {
  atlas_overlap_begin();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < dim) out[i] = load_w(table, (size_t)step[0] * dim + i);
}

extern "C" __global__ void embed_f32(float *out, const float *t,
                                     const uint32_t *step, uint32_t dim) {
  embed(out, t, step, dim);
}
extern "C" __global__ void embed_f16(float *out, const __half *t,
                                     const uint32_t *step, uint32_t dim) {
  embed(out, t, step, dim);
}
extern "C" __global__ void embed_bf16(float *out, const __nv_bfloat16 *t,
                                      const uint32_t *step, uint32_t dim) {
  embed(out, t, step, dim);
}

// Up to kNormHeld elements a thread are held in registers: the weights
// read before the wait (nothing writes them), x in one round of loads, not
// one load's latency per element; longer vectors take the loop below.
constexpr uint32_t kNormHeld = 8;

extern "C" __global__ void rmsnorm(float *out, const float *x, const float *w,
                                   uint32_t dim, float eps) {
  __shared__ float shared[32];
  const bool held = dim <= kNormHeld * blockDim.x;
  float wr[kNormHeld];
  if (held) {
#pragma unroll
    for (uint32_t r = 0; r < kNormHeld; ++r) {
      const uint32_t i = threadIdx.x + r * blockDim.x;
      wr[r] = i < dim ? __ldg(w + i) : 0.0f;
    }
  }
  atlas_overlap_begin();
  if (held) {
    float xr[kNormHeld];
#pragma unroll
    for (uint32_t r = 0; r < kNormHeld; ++r) {
      const uint32_t i = threadIdx.x + r * blockDim.x;
      xr[r] = i < dim ? x[i] : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (uint32_t r = 0; r < kNormHeld; ++r) ss += xr[r] * xr[r];
    ss = block_sum(ss, shared);
    const float scale = rsqrtf(ss / dim + eps);
#pragma unroll
    for (uint32_t r = 0; r < kNormHeld; ++r) {
      const uint32_t i = threadIdx.x + r * blockDim.x;
      if (i < dim) out[i] = wr[r] * (xr[r] * scale);
    }
    return;
  }
  float ss = 0.0f;
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) ss += x[i] * x[i];
  ss = block_sum(ss, shared);
  float scale = rsqrtf(ss / dim + eps);
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) {
    out[i] = w[i] * (x[i] * scale);
  }
}

extern "C" __global__ void silu_mul(float *a, const float *b, uint32_t n) {
  atlas_overlap_begin();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = a[i];
    a[i] = x / (1.0f + expf(-x)) * b[i];
  }
}

extern "C" __global__ void add(float *x, const float *y, uint32_t n) {
  atlas_overlap_begin();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

extern "C" __global__ void add_bias(float *x, const float *bias, uint32_t n) {
  atlas_overlap_begin();
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += bias[i];
}

// One warp per head, in place: RMSNorm over head_dim (Qwen3 q_norm, k_norm).
extern "C" __global__ void head_rmsnorm(float *x, const float *w,
                                        uint32_t n_heads, uint32_t head_dim,
                                        float eps) {
  atlas_overlap_begin();
  uint32_t h = blockIdx.x;
  if (h >= n_heads) return;
  float *v = x + (size_t)h * head_dim;
  float ss = 0.0f;
  for (uint32_t i = threadIdx.x; i < head_dim; i += 32) ss += v[i] * v[i];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  float scale = rsqrtf(ss / head_dim + eps);
  __syncwarp();
  for (uint32_t i = threadIdx.x; i < head_dim; i += 32)
    v[i] = w[i] * (v[i] * scale);
}

#endif  // ATLAS_KERNELS_ELEMENTWISE_CUH_
