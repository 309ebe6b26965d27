// Host pool: a byte budget that several host backends draw from, standing in
// for one device's memory. With it CI exercises what a GPU swap meets: two
// models' backends competing for one capacity, out-of-memory part-way
// through a load, and a budget check against what is free.
#ifndef ATLAS_RUNTIME_HOST_POOL_H_
#define ATLAS_RUNTIME_HOST_POOL_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_host_pool atlas_host_pool;

ATLAS_MUST_USE atlas_status atlas_host_pool_create(size_t capacity_bytes,
                                                   atlas_host_pool **out_pool);
// The pool must outlive every backend drawing from it.
void atlas_host_pool_destroy(atlas_host_pool *pool);

// Takes `bytes` from the pool or fails with OUT_OF_MEMORY and the figures.
ATLAS_MUST_USE atlas_status atlas_host_pool_reserve(atlas_host_pool *pool,
                                                    size_t bytes);
void atlas_host_pool_release(atlas_host_pool *pool, size_t bytes);

size_t atlas_host_pool_capacity(const atlas_host_pool *pool);
size_t atlas_host_pool_used(atlas_host_pool *pool);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_HOST_POOL_H_
