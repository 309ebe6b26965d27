// Op cache: per-backend memo of kernel handles and named scratch buffers.
//
// Dispatch sites ask for a kernel by name on every call; the cache makes that
// a short scan instead of a registry search, and keeps scratch buffers alive
// between calls. Everything is released with the backend, never global.
#ifndef ATLAS_RUNTIME_OP_CACHE_H_
#define ATLAS_RUNTIME_OP_CACHE_H_

#include <stddef.h>

#include "atlas/runtime/device/backend_types.h"

#ifdef __cplusplus
extern "C" {
#endif

ATLAS_MUST_USE atlas_status atlas_op_cache_create(atlas_backend *backend,
                                                  atlas_op_cache **out_cache);
// Frees every scratch buffer through the backend; reports failures.
ATLAS_MUST_USE atlas_status atlas_op_cache_destroy(atlas_op_cache *cache);

// The kernel `module`.`function` of the backend's registry, memoised.
ATLAS_MUST_USE atlas_status
atlas_op_cache_kernel(atlas_op_cache *cache, const char *module,
                      const char *function, const atlas_kernel **out_kernel);

// A scratch buffer named `name` of at least `bytes`; grows (contents lost)
// when asked for more. Allocated through the backend, so it is ledgered.
ATLAS_MUST_USE atlas_status atlas_op_cache_scratch(atlas_op_cache *cache,
                                                   const char *name,
                                                   size_t bytes,
                                                   void **out_ptr);

size_t atlas_op_cache_kernel_count(const atlas_op_cache *cache);
size_t atlas_op_cache_scratch_bytes(const atlas_op_cache *cache);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_OP_CACHE_H_
