// Loads kernel modules' embedded fatbins into a CUDA context for the kernel
// registry (cuModuleLoadDataEx, with the JIT error log in the status).
#ifndef ATLAS_RUNTIME_CUDA_CUDA_MODULE_LOADER_H_
#define ATLAS_RUNTIME_CUDA_CUDA_MODULE_LOADER_H_

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/cuda/cuda_driver.h"
#include "atlas/runtime/device/kernel_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

// A loader bound to `context`. Its state is freed by the registry (destroy).
ATLAS_MUST_USE atlas_status atlas_cuda_module_loader_make(
    const atlas_cuda_driver *driver, CUcontext context,
    atlas_module_loader *out_loader);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_MODULE_LOADER_H_
