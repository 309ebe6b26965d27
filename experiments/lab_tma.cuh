// The labs' shared-memory barriers and bulk copies (TMA, sm_90): an
// mbarrier's init, wait (by phase parity), arrive, the transaction count a
// copy will complete, and a bulk copy from global memory into shared memory
// that completes on a barrier. Included by the lab programs
// (`#include "lab_tma.cuh"`, found beside them).
#ifndef ATLAS_EXPERIMENTS_LAB_TMA_CUH_
#define ATLAS_EXPERIMENTS_LAB_TMA_CUH_

#include <stdint.h>

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)),
               "r"(count));
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(b)), "r"(parity)
        : "memory");
  }
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b))
               : "memory");
}
// Arrives and tells the barrier that `bytes` more will land on it.
__device__ __forceinline__ void mbar_expect(uint64_t *b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smem_addr(b)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_copy(void *dst, const void *src,
                                          uint32_t bytes, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
      "[%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// A ring's barriers: `full` completes when a slot's bytes are in, `empty`
// when its `consumers` arrivals are in. Every thread of the block calls this
// (it syncs the block).
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty,
                                          uint32_t slots, uint32_t consumers) {
  if (threadIdx.x == 0) {
    for (uint32_t i = 0; i < slots; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], consumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
}

// A ring with nothing computed: thread 0 streams `n` slots of `slot` bytes
// of `p` into it (every slot in flight); thread 32 takes each slot as it
// lands and gives it back.
__device__ __forceinline__ void stream_share(unsigned char *ring,
                                             uint64_t *full, uint64_t *empty,
                                             uint32_t slots, uint32_t slot,
                                             const unsigned char *p,
                                             uint32_t n) {
  if (threadIdx.x == 0) {
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t s = t % slots, round = t / slots;
      if (round > 0) mbar_wait(&empty[s], (round - 1) & 1);
      mbar_expect(&full[s], slot);
      bulk_copy(ring + (size_t)s * slot, p + (size_t)t * slot, slot, &full[s]);
    }
  } else if (threadIdx.x == 32) {
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t s = t % slots;
      mbar_wait(&full[s], (t / slots) & 1);
      mbar_arrive(&empty[s]);
    }
  }
}

#endif  // ATLAS_EXPERIMENTS_LAB_TMA_CUH_
