// A stand-in for the CUDA toolkit's headers, force-included when the statics
// gate parses .cu/.cuh files in clang's CUDA mode (-x cuda --cuda-host-only
// -nocudainc): clang 14 knows the CUDA attributes but not the toolkit, which
// may be absent (CI) or newer than clang 14 accepts. It declares what kernels
// use; the check reads declarations, so nothing here is ever compiled to code.
// __managed__ is a device global for the check (clang 14 knows `managed` only
// for HIP).
#ifndef ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_
#define ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_

#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __host__ __attribute__((host))
#define __constant__ __attribute__((constant))
#define __shared__ __attribute__((shared))
#define __managed__ __attribute__((device))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))

#include <__clang_cuda_builtin_vars.h>
#include <stddef.h>
#include <stdint.h>

// The C math library, callable from host and device code as CUDA's is.
#pragma clang force_cuda_host_device begin
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <math.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#pragma clang force_cuda_host_device end

// The vector types and the intrinsics kernels use (declarations only).
struct uint2 {
  unsigned int x, y;
};
struct uint4 {
  unsigned int x, y, z, w;
};
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
typedef struct uint2 uint2;
typedef struct uint4 uint4;
typedef struct float2 float2;
typedef struct float4 float4;
__device__ float4 make_float4(float, float, float, float);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ size_t __cvta_generic_to_shared(const void *);
template <typename T>
__device__ T __ldcg(const T *);
template <typename T>
__device__ T __ldg(const T *);

__device__ int min(int, int);
__device__ unsigned min(unsigned, unsigned);
__device__ int max(int, int);
__device__ unsigned max(unsigned, unsigned);
__device__ float rsqrtf(float);
__device__ double rsqrt(double);
__device__ float __fdividef(float, float);
__device__ void __syncthreads(void);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence(void);
template <typename T>
__device__ T __shfl_sync(unsigned mask, T v, int lane, int width = 32);
template <typename T>
__device__ T __shfl_xor_sync(unsigned mask, T v, int lane, int width = 32);
template <typename T>
__device__ T __shfl_down_sync(unsigned mask, T v, unsigned delta,
                              int width = 32);
template <typename T>
__device__ T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32);
__device__ unsigned __ballot_sync(unsigned mask, int pred);
template <typename T>
__device__ T atomicAdd(T *address, T val);
template <typename T>
__device__ T atomicMax(T *address, T val);
template <typename T>
__device__ T atomicMin(T *address, T val);
template <typename T>
__device__ T atomicExch(T *address, T val);
template <typename T>
__device__ T atomicCAS(T *address, T compare, T val);

#endif  // ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_
