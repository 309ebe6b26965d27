// The decode step's greedy choice on the device (module "token").
#ifndef ATLAS_KERNELS_ARGMAX_CUH_
#define ATLAS_KERNELS_ARGMAX_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

// Greedy choice on the device: result[0] = the first index of the largest
// logit (as the host's argmax), result[1] = the first non-finite logit's
// index, or 0xFFFFFFFF when every logit is finite. With `next` (the decode
// step's token and position; may be NULL) the last block also writes the
// chosen id to next[0] and adds 1 to next[1], so the next step can run
// before the host has seen this one's answer. result[2..5] is state,
// zero before the first launch and left zero: the best (value, index) key
// so far (u64, atomicMax), the first bad index inverted (atomicMax) and the
// count of blocks done; the last block writes the answer and clears it.
// Grid ceil(n / 2048), block 256 (one block of 1024 took 54 us for a
// 128K vocabulary on the H200).
__device__ __forceinline__ unsigned long long argmax_key(float v, uint32_t i) {
  uint32_t bits = v == 0.0f ? 0u : __float_as_uint(v);  // -0 ties with +0
  uint32_t ord = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
  return (unsigned long long)ord << 32 | (unsigned long long)(~i);
}

extern "C" __global__ void argmax(uint32_t *result, const float *logits,
                                  uint32_t n, uint32_t *next) {
  __shared__ unsigned long long keys[8];
  __shared__ uint32_t bads[8];
  atlas_overlap_begin();
  unsigned long long *best = reinterpret_cast<unsigned long long *>(result + 2);
  uint32_t *bad_inv = result + 4, *done = result + 5;
  unsigned long long key = 0;  // below every finite logit's key
  uint32_t bad = 0xFFFFFFFFu;
  const uint32_t base = blockIdx.x * 2048u;
#pragma unroll
  for (uint32_t k = 0; k < 8; ++k) {
    uint32_t i = base + k * 256u + threadIdx.x;
    if (i < n) {
      float v = logits[i];
      if (!isfinite(v)) {
        bad = min(bad, i);
      } else {
        unsigned long long kv = argmax_key(v, i);
        if (kv > key) key = kv;
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long ok = __shfl_xor_sync(0xffffffffu, key, o);
    key = ok > key ? ok : key;
    bad = min(bad, __shfl_xor_sync(0xffffffffu, bad, o));
  }
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    keys[warp] = key;
    bads[warp] = bad;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (uint32_t w = 1; w < blockDim.x / 32; ++w) {
      key = keys[w] > key ? keys[w] : key;
      bad = min(bad, bads[w]);
    }
    if (key != 0) atomicMax(best, key);
    if (bad != 0xFFFFFFFFu) atomicMax(bad_inv, ~bad);
    __threadfence();
    if (atomicAdd(done, 1u) == gridDim.x - 1) {
      unsigned long long k = atomicExch(best, 0ull);
      uint32_t b = atomicExch(bad_inv, 0u);
      result[0] = k == 0 ? 0 : ~(uint32_t)k;
      result[1] = ~b;
      *done = 0;
      if (next != nullptr) {
        next[0] = result[0];
        next[1] += 1;
      }
    }
  }
}

#endif  // ATLAS_KERNELS_ARGMAX_CUH_
