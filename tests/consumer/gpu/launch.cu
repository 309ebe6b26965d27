// CUDA host code that launches a kernel, compiled by nvcc in a genrule (simulated here: the gate only
// parses it). It uses a header of this workspace's own CUDA library, for which the gate gets a stand-in
// (stand_ins/consumer_math.h) through cuda_stand_ins.
#include <cuda_runtime.h>
#include <consumer_math.h>

__global__ void scale(float *out, float by) {
  out[threadIdx.x] = consumer_scale(out[threadIdx.x], by);
  __syncthreads();
}

#ifdef __CUDA_ARCH__
// Device-side only: the host parse skips this branch; the device-side parse sees and checks it (a
// straggler, baselined).
__device__ unsigned g_device_launches;
#endif

int launch_scale(float *out, float by, cudaStream_t stream) {
  dim3 grid(1), block(32);
  scale<<<grid, block, 0, stream>>>(out, by);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
