// A stand-in for the CUDA toolkit's headers, force-included when the statics
// gate parses .cu/.cuh files in clang's CUDA mode (-x cuda --cuda-host-only
// -nocudainc): clang 14 knows the CUDA attributes but not the toolkit, which
// may be absent (CI) or newer than clang 14 accepts. It declares what kernels
// use; the check reads declarations, so nothing here is ever compiled to code.
// __managed__ is a device global for the check (clang 14 knows `managed` only
// for HIP).
#ifndef ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_
#define ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_

// nvcc and clang's CUDA wrapper (left out by -nocudainc) both define it;
// headers shared by C and CUDA test it to pick their attributes.
#define __CUDACC__ 1
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
#define ATLAS_LINT_VEC2(T, N) \
  struct N {                  \
    T x, y;                   \
  };                          \
  typedef struct N N;
#define ATLAS_LINT_VEC3(T, N) \
  struct N {                  \
    T x, y, z;                \
  };                          \
  typedef struct N N;
#define ATLAS_LINT_VEC4(T, N) \
  struct N {                  \
    T x, y, z, w;             \
  };                          \
  typedef struct N N;
#define ATLAS_LINT_VECS(T, P) \
  ATLAS_LINT_VEC2(T, P##2)    \
  ATLAS_LINT_VEC3(T, P##3)    \
  ATLAS_LINT_VEC4(T, P##4)
ATLAS_LINT_VECS(signed char, char)
ATLAS_LINT_VECS(unsigned char, uchar)
ATLAS_LINT_VECS(short, short)
ATLAS_LINT_VECS(unsigned short, ushort)
ATLAS_LINT_VECS(int, int)
ATLAS_LINT_VECS(long long, longlong)
ATLAS_LINT_VECS(unsigned long long, ulonglong)
ATLAS_LINT_VECS(float, float)
ATLAS_LINT_VECS(double, double)
ATLAS_LINT_VEC2(unsigned int, uint2)
ATLAS_LINT_VEC4(unsigned int, uint4)
#undef ATLAS_LINT_VECS
#undef ATLAS_LINT_VEC2
#undef ATLAS_LINT_VEC3
#undef ATLAS_LINT_VEC4

// uint3 and dim3 complete the types <__clang_cuda_builtin_vars.h> declares
// (threadIdx converts to both); dim3 is what a launch configuration takes.
struct uint3 {
  unsigned int x, y, z;
};
typedef struct uint3 uint3;
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1,
                                     unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return {x, y, z}; }
};
typedef struct dim3 dim3;

// The runtime API a host file that launches kernels uses.
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorUnknown = 999 } cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
extern "C" {
__host__ cudaError_t cudaMalloc(void **ptr, size_t size);
__host__ cudaError_t cudaFree(void *ptr);
__host__ cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                enum cudaMemcpyKind kind);
__host__ cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                     enum cudaMemcpyKind kind,
                                     cudaStream_t stream = 0);
__host__ cudaError_t cudaMemset(void *ptr, int value, size_t count);
__host__ cudaError_t cudaDeviceSynchronize(void);
__host__ cudaError_t cudaStreamSynchronize(cudaStream_t stream);
__host__ cudaError_t cudaStreamCreate(cudaStream_t *stream);
__host__ cudaError_t cudaStreamDestroy(cudaStream_t stream);
__host__ __device__ cudaError_t cudaGetLastError(void);
__host__ __device__ cudaError_t cudaPeekAtLastError(void);
__host__ const char *cudaGetErrorString(cudaError_t error);
__host__ cudaError_t cudaSetDevice(int device);
__host__ cudaError_t cudaGetDevice(int *device);
__host__ cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                                      void **args, size_t shared_mem,
                                      cudaStream_t stream);
// What clang turns `kernel<<<grid, block, shared, stream>>>(args)` into: the
// first before CUDA 9.2, the second after (clang picks by the toolkit version,
// and without a toolkit it may pick either).
__host__ int cudaConfigureCall(dim3 grid, dim3 block, size_t shared_mem = 0,
                               cudaStream_t stream = 0);
__host__ unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block,
                                              size_t shared_mem = 0,
                                              void *stream = 0);
}
#define warpSize 32

__device__ float4 make_float4(float, float, float, float);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ size_t __cvta_generic_to_shared(const void *);
template <typename T>
__device__ T __ldcg(const T *);
template <typename T>
__device__ T __ldg(const T *);
__device__ float2 make_float2(float, float);
__device__ int2 make_int2(int, int);
__device__ int4 make_int4(int, int, int, int);
__device__ uint2 make_uint2(unsigned, unsigned);
__device__ uint4 make_uint4(unsigned, unsigned, unsigned, unsigned);
__host__ __device__ dim3 make_dim3(unsigned, unsigned, unsigned);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ unsigned __float2uint_rn(float);
__device__ float __int2float_rn(int);
__device__ long long __double_as_longlong(double);
__device__ double __longlong_as_double(long long);
template <typename T>
__device__ void __stcg(T *, T);
template <typename T>
__device__ void __stcs(T *, T);
template <typename T>
__device__ T __ldca(const T *);
template <typename T>
__device__ T __ldcs(const T *);
template <typename T>
__device__ T __ldlu(const T *);

__device__ int min(int, int);
__device__ unsigned min(unsigned, unsigned);
__device__ long long min(long long, long long);
__device__ int max(int, int);
__device__ unsigned max(unsigned, unsigned);
__device__ long long max(long long, long long);
__device__ float rsqrtf(float);
__device__ double rsqrt(double);
__device__ float __fdividef(float, float);
// glibc declares some of these: host and device, as math.h is above.
__host__ __device__ float __expf(float);
__host__ __device__ float __exp10f(float);
__host__ __device__ float __logf(float);
__host__ __device__ float __log2f(float);
__host__ __device__ float __powf(float, float);
__host__ __device__ float __sinf(float);
__host__ __device__ float __cosf(float);
__host__ __device__ float __tanf(float);
__host__ __device__ void __sincosf(float, float *, float *);
__device__ float __saturatef(float);
__device__ float __frcp_rn(float);
__device__ float __fsqrt_rn(float);
__device__ float __fmaf_rn(float, float, float);
__device__ float __fadd_rn(float, float);
__device__ float __fmul_rn(float, float);
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __clzll(long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned __brev(unsigned);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ int __mul24(int, int);
__device__ int __mulhi(int, int);
__device__ unsigned __umulhi(unsigned, unsigned);
__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffffu);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
__device__ void __threadfence_system(void);
__device__ void __nanosleep(unsigned);
__device__ long long clock64(void);
__device__ long long clock(void);
__device__ unsigned __activemask(void);
__device__ unsigned __lanemask_lt(void);
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
__device__ int __any_sync(unsigned mask, int pred);
__device__ int __all_sync(unsigned mask, int pred);
template <typename T>
__device__ unsigned __match_any_sync(unsigned mask, T v);
template <typename T>
__device__ T __reduce_add_sync(unsigned mask, T v);
template <typename T>
__device__ T atomicAdd(T *address, T val);
template <typename T>
__device__ T atomicSub(T *address, T val);
template <typename T>
__device__ T atomicMax(T *address, T val);
template <typename T>
__device__ T atomicMin(T *address, T val);
template <typename T>
__device__ T atomicAnd(T *address, T val);
template <typename T>
__device__ T atomicOr(T *address, T val);
template <typename T>
__device__ T atomicXor(T *address, T val);
template <typename T>
__device__ T atomicExch(T *address, T val);
template <typename T>
__device__ T atomicCAS(T *address, T compare, T val);
__device__ unsigned atomicInc(unsigned *address, unsigned val);
__device__ unsigned atomicDec(unsigned *address, unsigned val);

#endif  // ATLAS_LINT_CUDA_ATLAS_CUDA_LINT_H_
