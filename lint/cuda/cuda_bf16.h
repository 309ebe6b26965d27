// Stand-in for the CUDA toolkit's cuda_bf16.h (see atlas_cuda_lint.h).
#ifndef ATLAS_LINT_CUDA_BF16_H_
#define ATLAS_LINT_CUDA_BF16_H_
struct __nv_bfloat16 {
  unsigned short x;
};
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
#endif  // ATLAS_LINT_CUDA_BF16_H_
