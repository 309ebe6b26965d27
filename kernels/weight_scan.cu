// CUDA weight scan (module "weight_scan"): the content digest and first
// non-finite element of a tensor already on the device, the same values
// runtime/base/weight_scan.c computes on the host (its constants and lane
// layout are repeated here; tests/cuda/weight_scan_cuda_test.cc compares the
// two).
//
// weight_scan(data, bytes, finite, result): result[0] += the digest,
// result[1] = min(result[1], first non-finite element index). The caller
// sets result[0] = 0 and result[1] = UINT64_MAX first.
// Launch: block 256 (8 warps), any grid: warps stride over 4 KiB blocks,
// one warp per block, lane j reading 16-byte units j, j + 32, ...
#include <stdint.h>

#define LANES 32
#define BLOCK_BYTES 4096u
#define WARPS 8

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// The lowest element index in `w` (16 bytes at element `base`) that is NaN
// or Inf, or UINT64_MAX. finite: 1 F32, 2 F16, 3 BF16.
__device__ __forceinline__ uint64_t first_bad(const uint32_t w[4],
                                              uint32_t finite, uint64_t base) {
  for (int k = 0; k < 4; ++k) {
    uint32_t v = w[k];
    if (finite == 1) {
      if ((v & 0x7f800000u) == 0x7f800000u) return base + k;
    } else {
      uint32_t mask = finite == 2 ? 0x7c00u : 0x7f80u;
      if ((v & mask) == mask) return base + 2 * k;
      if (((v >> 16) & mask) == mask) return base + 2 * k + 1;
    }
  }
  return UINT64_MAX;
}

extern "C" __global__ void weight_scan(const unsigned char *data,
                                       long long bytes_signed, uint32_t finite,
                                       unsigned long long *result) {
  __shared__ unsigned long long sums[WARPS];
  __shared__ unsigned long long firsts[WARPS];
  const uint64_t bytes = (uint64_t)bytes_signed;
  const uint32_t lane = threadIdx.x % LANES, warp = threadIdx.x / LANES;
  const uint64_t blocks = (bytes + BLOCK_BYTES - 1) / BLOCK_BYTES;
  const bool aligned = ((uintptr_t)data % 16) == 0;
  const uint32_t elem = finite == 1 ? 4 : 2;
  uint64_t sum = 0, first = UINT64_MAX;
  for (uint64_t b = (uint64_t)blockIdx.x * WARPS + warp; b < blocks;
       b += (uint64_t)gridDim.x * WARPS) {
    const unsigned char *p = data + b * BLOCK_BYTES;
    const uint64_t left = bytes - b * BLOCK_BYTES;
    const uint32_t n = left < BLOCK_BYTES ? (uint32_t)left : BLOCK_BYTES;
    const uint32_t units = (n + 15) / 16;
    uint64_t a = 0x243f6a8885a308d3ull + lane, c = 0x13198a2e03707344ull + lane;
    for (uint32_t u = lane; u < units; u += LANES) {
      uint32_t w[4] = {0, 0, 0, 0};
      if (aligned && 16 * (u + 1) <= n) {
        uint4 v = __ldg(reinterpret_cast<const uint4 *>(p) + u);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
      } else {
        for (uint32_t k = 0; k < 16 && 16 * u + k < n; ++k) {
          w[k / 4] |= (uint32_t)p[16 * u + k] << (8 * (k % 4));
        }
      }
      a = (a ^ ((uint64_t)w[1] << 32 | w[0])) * 0x9e3779b97f4a7c15ull;
      c = (c ^ ((uint64_t)w[3] << 32 | w[2])) * 0x9e3779b97f4a7c15ull;
      if (finite != 0) {
        uint64_t i = first_bad(w, finite, (b * BLOCK_BYTES + 16 * u) / elem);
        if (i < first) first = i;
      }
    }
    uint64_t h = mix64(a) ^ mix64(c + 0x1234567ull);
    for (int o = 16; o > 0; o >>= 1) h ^= __shfl_xor_sync(0xffffffffu, h, o);
    h ^= mix64((uint64_t)n ^ 0xa4093822299f31d0ull);
    if (lane == 0) sum += mix64(h ^ (b * 0xd6e8feb86659fd93ull));
  }
  for (int o = 16; o > 0; o >>= 1) {
    uint64_t other = __shfl_xor_sync(0xffffffffu, first, o);
    if (other < first) first = other;
  }
  if (lane == 0) {
    sums[warp] = sum;
    firsts[warp] = first;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long s = 0, f = UINT64_MAX;
    for (int k = 0; k < WARPS; ++k) {
      s += sums[k];
      if (firsts[k] < f) f = firsts[k];
    }
    if (s != 0) atomicAdd(result, s);
    if (f != UINT64_MAX) atomicMin(result + 1, f);
  }
}
