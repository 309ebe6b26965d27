// Device helpers the CUDA kernel modules share (token.cu, prefill.cu):
// element loads and stores by dtype and a block-wide sum. Included into each
// .cu (atlas_cuda_fatbin's `hdrs`), so every fatbin carries its own copy.
//
// Kernel code uses no anonymous namespaces: nvcc names what they hold with a
// hash of the source's absolute path, so the PTX would differ from one
// checkout to the next (kernels/images/ is compared byte for byte).
#ifndef ATLAS_KERNELS_CUDA_COMMON_CUH_
#define ATLAS_KERNELS_CUDA_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// The largest head_dim the attention kernels take (prefill_kernels.h).
constexpr int kMaxD = 128;

// Weights and KV cache entries: F32, F16 or BF16, read as f32.
__device__ __forceinline__ float load_w(const float *w, size_t i) {
  return w[i];
}
__device__ __forceinline__ float load_w(const __half *w, size_t i) {
  return __half2float(w[i]);
}
__device__ __forceinline__ float load_w(const __nv_bfloat16 *w, size_t i) {
  return __bfloat162float(w[i]);
}

// v into element i of an F32, F16 or BF16 array (the KV cache, 16-bit
// product inputs), rounded to nearest even.
__device__ __forceinline__ void store_rn(float *p, size_t i, float v) {
  p[i] = v;
}
__device__ __forceinline__ void store_rn(__half *p, size_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void store_rn(__nv_bfloat16 *p, size_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// Programmatic dependent launch (atlas_launch_config.overlap_prior): a
// kernel so launched may start while the launch before it finishes. It calls
// this before it reads or writes anything an earlier launch touches (loading
// weights, which nothing writes, may come first); then it lets the next
// launch start, so at most one kernel waits ahead. A grid must end only
// after a wait: every block calls it, early-exiting ones too, unless another
// block of the grid always does. A no-op below sm_90 and without the
// attribute.
__device__ __forceinline__ void atlas_overlap_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// The sum of `v` over the block (blockDim.x a multiple of 32, at most 1024),
// returned to every thread; `shared` holds 32 floats.
__device__ float block_sum(float v, float *shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  v = (threadIdx.x < (unsigned)warps) ? shared[threadIdx.x] : 0.0f;
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  float total = shared[0];
  __syncthreads();
  return total;
}

#endif  // ATLAS_KERNELS_CUDA_COMMON_CUH_
