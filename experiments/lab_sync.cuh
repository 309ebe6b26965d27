// The labs' memory-model helpers: an acquire load of a counter, relaxed
// 8-byte loads and stores (the LL words of handoff_lab and persistent_lab's
// L), and the global timer. Included by the lab programs
// (`#include "lab_sync.cuh"`, found beside them).
#ifndef ATLAS_EXPERIMENTS_LAB_SYNC_CUH_
#define ATLAS_EXPERIMENTS_LAB_SYNC_CUH_

#include <stdint.h>

__device__ __forceinline__ uint32_t ld_acquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
               : "=r"(v)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ld_relaxed64(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}
// Two 8-byte words at once; each is read whole (single-copy atomic).
__device__ __forceinline__ ulonglong2 ld_relaxed64x2(const uint64_t *p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(v.x), "=l"(v.y)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed64(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

#endif  // ATLAS_EXPERIMENTS_LAB_SYNC_CUH_
