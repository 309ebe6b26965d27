// cuBLASLt for the CUDA backend's matmul, loaded at run time.
//
// Like the driver, cuBLASLt is dlopen'ed (libcublasLt.so.13, then .so.12), so
// nothing links against it and Atlas runs where it is absent: the backend's
// matmul then answers UNIMPLEMENTED and callers use their own kernels. Unlike
// the driver it is per backend, not per process: the library handle, the
// cublasLt handle, the workspace and the algorithm cache live in one
// atlas_cuda_blas that the backend owns and destroys.
//
// Memory: the workspace (ATLAS_CUDA_BLAS_WORKSPACE_BYTES, allocated on the
// first product whose algorithm needs one) is a ledgered allocation of the
// backend, site "cublasLt_workspace", freed when the backend is destroyed.
// What cuBLASLt allocates for itself (its handle's internal state, kernels it
// loads) goes through the CUDA runtime, outside the ledger: the ledger cannot
// see it and the sweep cannot free it; cublasLtDestroy releases it.
#ifndef ATLAS_RUNTIME_CUDA_CUDA_BLAS_H_
#define ATLAS_RUNTIME_CUDA_CUDA_BLAS_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/cuda/cuda_driver.h"
#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_CUDA_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)

typedef struct atlas_cuda_blas atlas_cuda_blas;

// Loads cuBLASLt for `backend` (its context must be current on this thread)
// and makes its handle. `setting` is ATLAS_CUBLASLT as read at backend
// creation (NULL when unset): "0" disables cuBLASLt; "1", "" and NULL look
// for it where it is usually installed; a value with a '/' is the library's
// path; anything else is INVALID_ARGUMENT naming the variable. When the
// library is absent or disabled, *out_blas is NULL, the status is OK and one
// INFO line on the backend's sink says that Atlas uses its own kernels; a
// library that loads but will not start (symbols missing, cublasLtCreate
// failing) is treated the same, with one WARNING line.
// With `background` the start (the library, its handle and a first
// heuristic query: 0.1-0.3 s, most of it once a process) is deferred:
// *out_blas is set unless cuBLASLt is disabled, atlas_cuda_blas_start_
// background runs the start on a thread of its own, and atlas_cuda_blas_ready
// waits for it (or runs it) and says the lines above; so does destroy,
// silently.
// Otherwise fails only when the host is out of memory.
ATLAS_MUST_USE atlas_status atlas_cuda_blas_create(atlas_backend *backend,
                                                   const char *setting,
                                                   bool background,
                                                   atlas_cuda_blas **out_blas);
// Starts a deferred start on its own thread (binding the backend's context
// there); no-op when it has run or is running, or for NULL. Without a thread
// to spare, the next atlas_cuda_blas_ready runs it.
void atlas_cuda_blas_start_background(atlas_cuda_blas *blas);
// Waits for the start (or runs it, the first time) and returns whether
// products can go through cuBLASLt; false: the caller's own kernels.
bool atlas_cuda_blas_ready(atlas_cuda_blas *blas);

// Only after atlas_cuda_blas_ready returned true:
// out (m x n, f32) = x (m x k) times w (n x k) transposed, both `type`,
// row-major, on `stream` (arguments checked by the front door; m, n, k > 0);
// ATLAS_MATMUL_ACCUMULATE: out += the product (beta = 1, C = D = out, which
// cuBLASLt allows in place).
ATLAS_MUST_USE atlas_status atlas_cuda_blas_matmul(atlas_cuda_blas *blas,
                                                   CUstream stream, float *out,
                                                   const void *w, const void *x,
                                                   atlas_matmul_type type,
                                                   size_t m, size_t n, size_t k,
                                                   atlas_matmul_out mode);

// Frees the workspace through the backend, destroys the handle and closes
// the library. The streams that used it must be idle. NULL is fine.
// Frees the workspace (the backend's release_caches, before a sweep); the
// next product that needs it allocates it again. NULL: nothing to do.
ATLAS_MUST_USE atlas_status
atlas_cuda_blas_release_workspace(atlas_cuda_blas *blas);
ATLAS_MUST_USE atlas_status atlas_cuda_blas_destroy(atlas_cuda_blas *blas);

// The library that was loaded ("libcublasLt.so.13"), for messages.
const char *atlas_cuda_blas_library(const atlas_cuda_blas *blas);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_BLAS_H_
