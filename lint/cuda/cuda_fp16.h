// Stand-in for the CUDA toolkit's cuda_fp16.h (see atlas_cuda_lint.h).
#ifndef ATLAS_LINT_CUDA_FP16_H_
#define ATLAS_LINT_CUDA_FP16_H_
struct __half {
  unsigned short x;
};
struct __half2 {
  __half x, y;
};
__host__ __device__ float __half2float(__half);
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__device__ __half __ushort_as_half(unsigned short);
#endif  // ATLAS_LINT_CUDA_FP16_H_
