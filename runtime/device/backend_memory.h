// Ledgered backend memory: allocation and free on top of the vtable's
// raw_alloc / raw_free, with call sites, red zones and the alloc /
// host-alloc / free fault points; and the sweep of what nobody released.
// The front door's atlas_backend_alloc / _free / _sweep_unreleased and the
// op cache's scratch come here.
#ifndef ATLAS_RUNTIME_DEVICE_BACKEND_MEMORY_H_
#define ATLAS_RUNTIME_DEVICE_BACKEND_MEMORY_H_

#include <stddef.h>

#include "atlas/runtime/device/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

ATLAS_MUST_USE atlas_status atlas_backend_memory_alloc(atlas_backend *b,
                                                       size_t bytes,
                                                       atlas_mem_kind kind,
                                                       atlas_site site,
                                                       void **out_ptr);
// `kind` says which free the caller used: pinned and device memory must not
// be freed through each other's call.
ATLAS_MUST_USE atlas_status atlas_backend_memory_free(atlas_backend *b,
                                                      void *ptr,
                                                      atlas_mem_kind kind);
// Frees everything on the ledger, newest first (no quiesce: callers do it).
ATLAS_MUST_USE atlas_status
atlas_backend_memory_sweep(atlas_backend *b, atlas_sweep_result *out_result);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_BACKEND_MEMORY_H_
