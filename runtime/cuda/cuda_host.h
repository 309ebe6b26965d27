// The CUDA host: the driver loaded once per process and one primary context
// per device, retained for the life of the process and shared by every backend
// on that device (not recreating it is what in-process model swapping buys).
#ifndef ATLAS_RUNTIME_CUDA_CUDA_HOST_H_
#define ATLAS_RUNTIME_CUDA_CUDA_HOST_H_

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/cuda/cuda_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

// Loads libcuda.so.1 and runs cuInit, once per process (thread-safe). Fails
// with UNAVAILABLE "CUDA driver not found: <dlerror>" when there is no driver.
ATLAS_MUST_USE atlas_status
atlas_cuda_host_driver(const atlas_cuda_driver **out_driver);

// Number of CUDA devices (loads the driver first).
ATLAS_MUST_USE atlas_status atlas_cuda_host_device_count(int *out_count);

// Loads the driver and retains `device`'s primary context (first call only;
// later calls return the same context). UNAVAILABLE "no CUDA device 3; this
// machine has 1" when the ordinal does not exist.
ATLAS_MUST_USE atlas_status atlas_cuda_host_acquire(
    int device, const atlas_cuda_driver **out_driver, CUcontext *out_context);

// A status for a failed driver call: "<what>: CUDA_ERROR_X (description)",
// with a code chosen from the CUresult. `what` is printf-style.
ATLAS_MUST_USE atlas_status atlas_cuda_error(const atlas_cuda_driver *driver,
                                             CUresult result, const char *fmt,
                                             ...)
    __attribute__((format(printf, 3, 4)));

// Modules loaded through Atlas and not yet unloaded, across the process:
// after a swap only the new model's modules should remain.
long atlas_cuda_host_loaded_modules(void);
// Called by the module loader on each load (+1) and unload (-1).
void atlas_cuda_host_note_modules(long delta);

// The driver's name for a result ("CUDA_ERROR_OUT_OF_MEMORY").
const char *atlas_cuda_result_name(const atlas_cuda_driver *driver,
                                   CUresult result);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_HOST_H_
