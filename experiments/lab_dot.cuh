// The labs' BF16 dot product: eight weights in one 16-byte word against
// eight f32 entries of x (two float4 loads). Included by the lab programs
// (`#include "lab_dot.cuh"`, found beside them).
#ifndef ATLAS_EXPERIMENTS_LAB_DOT_CUH_
#define ATLAS_EXPERIMENTS_LAB_DOT_CUH_

#include <cuda_bf16.h>
#include <stdint.h>

// x's eight entries as two float4 (a, b).
__device__ __forceinline__ float dot8x(uint4 p, float4 a, float4 b) {
  const __nv_bfloat16 *e = reinterpret_cast<const __nv_bfloat16 *>(&p);
  return __bfloat162float(e[0]) * a.x + __bfloat162float(e[1]) * a.y +
         __bfloat162float(e[2]) * a.z + __bfloat162float(e[3]) * a.w +
         __bfloat162float(e[4]) * b.x + __bfloat162float(e[5]) * b.y +
         __bfloat162float(e[6]) * b.z + __bfloat162float(e[7]) * b.w;
}

__device__ __forceinline__ float dot8(uint4 p, const float *x) {
  return dot8x(p, *reinterpret_cast<const float4 *>(x),
               *reinterpret_cast<const float4 *>(x + 4));
}

#endif  // ATLAS_EXPERIMENTS_LAB_DOT_CUH_
