// The CUDA backend: every backend operation over the raw driver API.
//
// Built on the process's CUDA host (one primary context per device, shared by
// every backend on it). Memory is accounted by the shared base exactly as on
// the host backend; red zones live in device memory. The backend owns a
// non-blocking default stream; synchronous copies are ordered after it.
#ifndef ATLAS_RUNTIME_CUDA_CUDA_BACKEND_H_
#define ATLAS_RUNTIME_CUDA_CUDA_BACKEND_H_

#include "atlas/runtime/cuda/cuda_driver.h"
#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// Creates a backend on options->device (NULL options: device 0, no modules).
// Loads options->modules (or shares options->share_registry). UNAVAILABLE
// with "CUDA driver not found: ..." or "no CUDA device 3; this machine has 1"
// where there is no GPU; never crashes.
ATLAS_MUST_USE atlas_status atlas_cuda_backend_create(
    const atlas_backend_options *options, atlas_backend **out_backend);

// For benchmarks and tests that compare against the raw driver: the driver
// table, the context and the CUstream behind an atlas_stream (NULL: the
// backend's default stream). INVALID_ARGUMENT if `b` is not a CUDA backend.
ATLAS_MUST_USE atlas_status
atlas_cuda_backend_raw(atlas_backend *b, const atlas_cuda_driver **out_driver,
                       CUcontext *out_context);
CUstream atlas_cuda_backend_raw_stream(atlas_backend *b, atlas_stream *stream);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_BACKEND_H_
