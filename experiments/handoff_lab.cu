// What does a dataflow decode step's hand-off cost while HBM streams, and can
// it be made cheaper? (a lab for issue 13, not part of the runtime):
//   nvcc -O3 -arch=sm_90 -o handoff_lab experiments/handoff_lab.cu &&
//   ./handoff_lab
// sm_stream_lab measured a step's all-to-all wait at 0.6-0.85 us on an idle
// H200 and 3.4-3.6 us while every SM's TMA ring streams (4 slots of 32 KiB):
// the bound PERFORMANCE.md gives for a megakernel rests on that figure. Two
// things could make it smaller, and this measures both:
//   - the hand-off's form. A step's consumers need every producer's share of
//     the output vector (2048 bf16 values: 4 KiB), so the real kernel waits
//     on a counter (a release add, acquire loads) and then loads the vector:
//     two round trips through L2. Written as NCCL's LL protocol does, each
//     8-byte word carries 4 bytes of data and the step's number, stored and
//     loaded relaxed: the consumer's loads of the data are its wait, one
//     round trip and no fence on either side.
//   - the bytes each SM keeps in flight. A wait's loads queue behind the
//     SM's own copies if the return path is the bottleneck; a shallower ring
//     (fewer or smaller slots) that still keeps HBM busy would shorten it.
// One block an SM: warps 0 and 1 stream the block's share of 4 GiB through a
// TMA ring (slots x slot size, nothing computed); warp 2 runs the steps,
// each step's writes depending on the last step's reads (a chain, as
// layers are). Modes:
//   counter       every block adds 1 (red.release.gpu), spins (ld.acquire);
//   counter+data  as counter, each block first writing its share of the
//                 vector and then reading all of it (__ldcg) after the wait;
//   LL            each block writes its share as LL words (st.relaxed.gpu
//                 .u64), then reads all 1024 words (ld.relaxed.gpu.u64), 32
//                 a lane in flight, again only the stale ones, until every
//                 word carries this step's number.
// Prints us a step idle and while the rings stream, and the stream's rate
// in each run (it must stay near the device's, or the wait is cheap only
// because HBM is idle).
#include <stdint.h>
#include <stdio.h>

#include "lab_check.cuh"
#include "lab_sync.cuh"
#include "lab_tma.cuh"

constexpr uint32_t kWords = 1024;  // LL words a step: 4 KiB of data
constexpr uint32_t kPerLane = kWords / 32;
constexpr uint32_t kMaxSlots = 8;

enum Mode : uint32_t { kCounter = 0, kCounterData = 1, kLL = 2 };

// ctr: steps counters; data: steps x kWords u32; ll: steps x kWords LL words
// (all zero at launch). out[0]: the steps' span (ns, block 0); out[1]: the
// stream's span (ns, block 0); sink keeps the data loads.
__global__ void __launch_bounds__(96, 1)
    handoff(uint32_t mode, uint32_t steps, uint32_t *ctr, uint32_t *data,
            uint64_t *ll, const unsigned char *buf, size_t bytes_a_block,
            uint32_t slots, uint32_t slot, unsigned long long *out,
            uint32_t *sink) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[kMaxSlots], empty[kMaxSlots];
  ring_init(full, empty, slots, 1);
  const uint64_t s0 = global_ns();
  stream_share(ring, full, empty, slots, slot, buf + bytes_a_block * blockIdx.x,
               (uint32_t)(bytes_a_block / slot));
  if (threadIdx.x == 32 && blockIdx.x == 0) out[1] = global_ns() - s0;
  if (threadIdx.x < 64) return;
  const uint32_t lane = threadIdx.x - 64, S = gridDim.x;
  const uint32_t per = (kWords + S - 1) / S, w0 = blockIdx.x * per;
  const uint32_t w1 = w0 + per < kWords ? w0 + per : kWords;
  uint32_t acc = blockIdx.x;  // carried from step to step: the chain
  const uint64_t t0 = global_ns();
  for (uint32_t k = 0; k < steps; ++k) {
    if (mode == kLL) {
      uint64_t *words = ll + (size_t)k * kWords;
      for (uint32_t w = w0 + lane; w < w1; w += 32) {
        st_relaxed64(words + w,
                     ((uint64_t)(k + 1) << 32) | (uint32_t)(acc + w));
      }
      uint64_t v[kPerLane];
#pragma unroll
      for (uint32_t j = 0; j < kPerLane; ++j)
        v[j] = ld_relaxed64(words + lane + 32 * j);
      for (;;) {
        bool stale = false;
#pragma unroll
        for (uint32_t j = 0; j < kPerLane; ++j) {
          if ((uint32_t)(v[j] >> 32) != k + 1) {
            stale = true;
            v[j] = ld_relaxed64(words + lane + 32 * j);
          }
        }
        if (!stale) break;
      }
      uint32_t x = 0;
#pragma unroll
      for (uint32_t j = 0; j < kPerLane; ++j) x += (uint32_t)v[j];
      acc = __reduce_add_sync(0xffffffffu, x);
    } else {
      if (mode == kCounterData) {
        uint32_t *d = data + (size_t)k * kWords;
        for (uint32_t w = w0 + lane; w < w1; w += 32) d[w] = acc + w;
        __syncwarp();
      }
      if (lane == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr + k)
                     : "memory");
        while (ld_acquire(ctr + k) < S) {
        }
      }
      __syncwarp();
      if (mode == kCounterData) {
        const uint32_t *d = data + (size_t)k * kWords;
        uint32_t v[kPerLane];
#pragma unroll
        for (uint32_t j = 0; j < kPerLane; ++j)
          v[j] = __ldcg(d + lane + 32 * j);
        uint32_t x = 0;
#pragma unroll
        for (uint32_t j = 0; j < kPerLane; ++j) x += v[j];
        acc = __reduce_add_sync(0xffffffffu, x);
      }
    }
  }
  if (blockIdx.x == 0 && lane == 0) out[0] = global_ns() - t0;
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;
}

int main() {
  const size_t total = 4ull << 30;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned char *buf = nullptr;
  CK(cudaMalloc(&buf, total));
  CK(cudaMemset(buf, 1, total));
  const uint32_t max_steps = 2000;
  uint32_t *ctr = nullptr, *data = nullptr, *sink = nullptr;
  uint64_t *ll = nullptr;
  unsigned long long *out = nullptr;
  CK(cudaMalloc(&ctr, max_steps * 4));
  CK(cudaMalloc(&data, (size_t)max_steps * kWords * 4));
  CK(cudaMalloc(&ll, (size_t)max_steps * kWords * 8));
  CK(cudaMalloc(&out, 16));
  CK(cudaMalloc(&sink, 1024 * 4));
  const uint32_t smem_max = 200u << 10;
  CK(cudaFuncSetAttribute(handoff, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)smem_max));
  // Rings: {slots, KiB a slot}. Dynamic shared memory is at least 120 KiB so
  // two blocks never share an SM.
  const uint32_t rings[][2] = {{4, 32}, {2, 32}, {4, 16}, {2, 16}, {4, 8}};
  const char *names[] = {"counter", "counter+data", "LL"};
  const int S = sms;
  printf("%-14s %-10s %10s %12s %16s\n", "hand-off", "ring", "us a step",
         "stream GB/s", "stream only GB/s");
  for (uint32_t mode = 0; mode < 3; ++mode) {
    for (int r = -1; r < (int)(sizeof(rings) / sizeof(rings[0])); ++r) {
      const bool loaded = r >= 0;
      const uint32_t slots = loaded ? rings[r][0] : 1,
                     slot = loaded ? rings[r][1] << 10 : 8192;
      const size_t share = loaded ? total / (size_t)S / slot * slot : 0;
      // Loaded: 120 steps, so that the steps end before the 4 GiB stream does
      // (checked: the stream's span is printed against the steps').
      const uint32_t steps = loaded ? 120 : max_steps;
      const uint32_t smem =
          slots * slot > (120u << 10) ? slots * slot : (120u << 10);
      unsigned long long best = ~0ull, stream_ns = 0, only_ns = ~0ull;
      for (int rep = 0; rep < 4; ++rep) {
        CK(cudaMemset(ctr, 0, max_steps * 4));
        CK(cudaMemset(ll, 0, (size_t)max_steps * kWords * 8));
        handoff<<<S, 96, smem>>>(mode, steps, ctr, data, ll, buf, share, slots,
                                 slot, out, sink);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long h[2];
        CK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
        if (h[0] < best) {
          best = h[0];
          stream_ns = h[1];
        }
        if (loaded) {  // the stream alone, for its rate without the steps
          handoff<<<S, 96, smem>>>(mode, 0, ctr, data, ll, buf, share, slots,
                                   slot, out, sink);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          CK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
          if (h[1] < only_ns) only_ns = h[1];
        }
      }
      char ring_name[16];
      if (loaded) {
        snprintf(ring_name, sizeof(ring_name), "%ux%uK", slots, slot >> 10);
      } else {
        snprintf(ring_name, sizeof(ring_name), "idle");
      }
      const double bytes = (double)share * S;
      printf("%-14s %-10s %10.3f", names[mode], ring_name, best / 1e3 / steps);
      if (loaded) {
        printf(" %12.0f %16.0f%s", bytes / stream_ns, bytes / only_ns,
               best > stream_ns ? "  (steps outlasted the stream)" : "");
      }
      printf("\n");
    }
  }
  return 0;
}
