// How much HBM bandwidth can one SM pull, and is it fungible? (a lab for
// issue 13, not part of the runtime):
//   nvcc -O3 -arch=sm_90 -o sm_stream_lab experiments/sm_stream_lab.cu &&
//   ./sm_stream_lab
// A dataflow decode kernel (persistent_lab.cu's C, D) stalls an SM's weight
// stream whenever that SM waits on a step it cannot start. Whether such a
// stall costs the whole device depends on whether the other SMs can take the
// idle SM's share: if one SM can stream only a little more than 1/132 of the
// device's rate, every stall is time lost; if it can stream much more, the
// others absorb it. This streams 1 GiB from HBM with S blocks, one an SM
// (each block asks for more than half an SM's shared memory), S from 132
// down to 8, two ways:
//   LDG: 1024 threads a block, 16-byte loads, 8 in flight a thread;
//   TMA: one thread issuing bulk copies (cp.async.bulk) of 32 KiB into a
//        ring of N slots, one consumer warp releasing each slot as it lands
//        (no compute), N = 2, 4, 6.
// Prints the device's GB/s and each SM's share for every S. Then what a
// step's all-to-all wait costs by itself: one block an SM, each step every
// block adds 1 to the step's counter (red.release.gpu) and spins until it
// reads all of them (ld.acquire.gpu): 2000 steps idle, and 300 while the
// same blocks' TMA rings stream their share of 4 GiB (4 slots), which lasts
// longer than the waits. The same with a flag that one block sets a step
// (block k % S, as a chunk's producer would) in place of the counter.
#include <stdint.h>
#include <stdio.h>

#include <vector>

#include "lab_check.cuh"
#include "lab_sync.cuh"
#include "lab_tma.cuh"

constexpr uint32_t kOneSmShared = 120u << 10;  // more than half of 228 KiB
constexpr uint32_t kSlot = 32u << 10;

__global__ void __launch_bounds__(1024, 1)
    stream_ldg(const uint4 *buf, size_t words_a_block, uint32_t *sink) {
  extern __shared__ uint4 pad[];  // only to keep one block an SM
  const uint4 *p = buf + words_a_block * blockIdx.x;
  uint32_t acc = 0;
  constexpr int U = 8;
  for (size_t i0 = threadIdx.x; i0 < words_a_block;
       i0 += (size_t)U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const size_t i = i0 + (size_t)u * blockDim.x;
      v[u] = i < words_a_block ? __ldg(p + i) : uint4{0, 0, 0, 0};
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u)
    sink[blockIdx.x] = acc + (uint32_t)pad[0].x;  // keeps the loads
}

__global__ void __launch_bounds__(64, 1)
    stream_tma(const unsigned char *buf, size_t bytes_a_block, uint32_t slots) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[8], empty[8];
  ring_init(full, empty, slots, 1);
  stream_share(ring, full, empty, slots, kSlot,
               buf + bytes_a_block * blockIdx.x,
               (uint32_t)(bytes_a_block / kSlot));
}

// Warp 2 (thread 64) runs `steps` all-to-all waits on ctr[0..steps); with
// `bytes_a_block` > 0, warps 0 and 1 stream the block's share meanwhile
// (as stream_tma, 4 slots). Block 0 writes the waits' span in ns to *ns.
__global__ void __launch_bounds__(96, 1)
    sync_steps(uint32_t *ctr, uint32_t steps, const unsigned char *buf,
               size_t bytes_a_block, unsigned long long *ns,
               uint32_t one_producer) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[4], empty[4];
  constexpr uint32_t slots = 4;
  ring_init(full, empty, slots, 1);
  stream_share(ring, full, empty, slots, kSlot,
               buf + bytes_a_block * blockIdx.x,
               (uint32_t)(bytes_a_block / kSlot));
  if (threadIdx.x == 64) {
    const uint64_t t0 = global_ns();
    for (uint32_t k = 0; k < steps; ++k) {
      if (one_producer) {
        // A flag one block sets (block k % S), as a chunk's producer would: a
        // chain of hand-offs.
        if (blockIdx.x == k % gridDim.x) {
          asm volatile("st.release.gpu.global.u32 [%0], 1;" ::"l"(ctr + k)
                       : "memory");
        }
        while (ld_acquire(ctr + k) == 0) {
        }
      } else {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr + k)
                     : "memory");
        while (ld_acquire(ctr + k) < gridDim.x) {
        }
      }
    }
    if (blockIdx.x == 0) *ns = global_ns() - t0;
  }
}

int main() {
  const size_t total = 1ull << 30;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // Four copies of the stream, so a run never finds its bytes in L2.
  unsigned char *buf = nullptr;
  CK(cudaMalloc(&buf, 4 * total));
  CK(cudaMemset(buf, 1, 4 * total));
  uint32_t *sink = nullptr;
  CK(cudaMalloc(&sink, 1024 * 4));
  CK(cudaFuncSetAttribute(stream_ldg,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)kOneSmShared));
  CK(cudaFuncSetAttribute(stream_tma,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)(6 * kSlot)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<int> counts = {sms, sms * 3 / 4, sms / 2, sms / 4, 16, 8};
  printf("%-14s %6s %12s %14s\n", "how", "SMs", "device GB/s", "GB/s an SM");
  for (int mode = 0; mode < 4; ++mode) {
    const uint32_t slots = mode == 0 ? 0 : mode == 1 ? 2 : mode == 2 ? 4 : 6;
    for (int s : counts) {
      // Each block's share, a whole number of slots.
      const size_t share = total / (size_t)s / kSlot * kSlot;
      float best = 1e30f;
      for (int rep = 0; rep < 5; ++rep) {
        const unsigned char *base = buf + (size_t)(rep % 4) * total;
        CK(cudaEventRecord(a));
        if (mode == 0) {
          stream_ldg<<<s, 1024, kOneSmShared>>>(
              reinterpret_cast<const uint4 *>(base), share / 16, sink);
        } else {
          // At least kOneSmShared, so two rings never share an SM.
          const uint32_t smem =
              slots * kSlot > kOneSmShared ? slots * kSlot : kOneSmShared;
          stream_tma<<<s, 64, smem>>>(base, share, slots);
        }
        CK(cudaGetLastError());
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (rep > 0 && ms < best) best = ms;
      }
      const double gbs = (double)share * s / (best * 1e-3) / 1e9;
      char how[32];
      if (mode == 0) {
        snprintf(how, sizeof(how), "LDG");
      } else {
        snprintf(how, sizeof(how), "TMA %u x 32K", slots);
      }
      printf("%-14s %6d %12.0f %14.1f\n", how, s, gbs, gbs / s);
    }
  }
  const uint32_t steps = 2000;
  uint32_t *ctr = nullptr;
  unsigned long long *ns = nullptr;
  CK(cudaMalloc(&ctr, steps * 4));
  CK(cudaMalloc(&ns, 8));
  // Four ring slots: 128 KiB, more than half an SM's shared memory.
  const uint32_t sync_smem = 4 * kSlot;
  CK(cudaFuncSetAttribute(
      sync_steps, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sync_smem));
  printf("\n%-40s %6s %12s\n", "step waits", "SMs", "us a step");
  for (int mode = 0; mode < 4; ++mode) {
    const int loaded = mode % 2, one = mode / 2;
    for (int s : {sms, sms / 2, 16}) {
      // Loaded: all 4 GiB (about 1 ms at the device's rate) against 300 steps,
      // so the waits end before the stream does.
      const size_t share = loaded ? 4 * total / (size_t)s / kSlot * kSlot : 0;
      const uint32_t n = loaded ? 300 : steps;
      unsigned long long best = ~0ull;
      for (int rep = 0; rep < 4; ++rep) {
        CK(cudaMemset(ctr, 0, steps * 4));
        sync_steps<<<s, 96, sync_smem>>>(ctr, n, buf, share, ns, one);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long h = 0;
        CK(cudaMemcpy(&h, ns, 8, cudaMemcpyDeviceToHost));
        if (h < best) best = h;
      }
      char how[48];
      snprintf(how, sizeof(how), "%s, %s",
               one ? "one block's flag" : "all blocks' counter",
               loaded ? "while the rings stream" : "idle");
      printf("%-40s %6d %12.3f\n", how, s, best / 1e3 / n);
    }
  }
  return 0;
}
