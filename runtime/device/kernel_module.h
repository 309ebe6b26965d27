// Kernel modules: the compile-time description of one model's kernels.
//
// A module names its kernels once; the CUDA backend finds them by name in the
// module's embedded fatbin, the host backend calls the C function given here.
// Both check typed launches against `signature`. Definitions are const tables
// all the way down, so they are not mutable statics.
#ifndef ATLAS_RUNTIME_KERNEL_MODULE_H_
#define ATLAS_RUNTIME_KERNEL_MODULE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_stream atlas_stream;

typedef struct atlas_dim3 {
  uint32_t x, y, z;
} atlas_dim3;

typedef struct atlas_launch_config {
  atlas_dim3 grid;
  atlas_dim3 block;
  uint32_t shared_bytes;
  atlas_stream *stream;  // NULL: the backend's default stream
  // The kernel may start while the launch before it on the stream finishes
  // (CUDA: programmatic dependent launch, sm_90+); it must wait before it
  // reads or writes what earlier launches touch (kernels/cuda_common.cuh,
  // atlas_overlap_begin). Backends that cannot overlap ignore it.
  bool overlap_prior;
} atlas_launch_config;

// A host kernel runs the whole grid in one call. `args[i]` points to the
// value of argument i, exactly as cuLaunchKernel's kernelParams.
typedef void (*atlas_host_kernel_fn)(const atlas_launch_config *config,
                                     void **args);

// Signature letters: p pointer, i int32, u uint32, l int64, f float.
typedef struct atlas_kernel_def {
  const char *name;
  const char *signature;
  atlas_host_kernel_fn host_fn;  // NULL when the kernel exists only on CUDA
} atlas_kernel_def;

// One compiled image of a module for one backend kind (e.g. "cuda": a
// fatbin). Backends that run host_fn need none.
typedef struct atlas_module_image {
  const char *backend;
  const unsigned char *data;
  size_t size;  // 0: the image could not be built here (e.g. no nvcc)
} atlas_module_image;

typedef struct atlas_module_def {
  const char *name;
  const atlas_module_image *images;
  size_t image_count;
  const atlas_kernel_def *kernels;
  size_t kernel_count;
} atlas_module_def;

// The image `def` carries for `backend`, or NULL.
const atlas_module_image *atlas_module_def_image(const atlas_module_def *def,
                                                 const char *backend);

// The kernels one model needs. A backend is created with exactly one set.
typedef struct atlas_module_set {
  const atlas_module_def *const *modules;
  size_t count;
} atlas_module_set;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_KERNEL_MODULE_H_
