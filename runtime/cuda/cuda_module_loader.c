#include "atlas/runtime/cuda/cuda_module_loader.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_host.h"

typedef struct atlas_cuda_loader {
  const atlas_cuda_driver *cu;
  CUcontext context;
} atlas_cuda_loader;

enum { ATLAS_CUDA_JIT_LOG_BYTES = 8192 };

// Registry calls may come from any thread: make the context current first.
static atlas_status bind(atlas_cuda_loader *l) {
  CUcontext current = NULL;
  if (l->cu->cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
      current == l->context) {
    return ATLAS_OK;
  }
  CUresult r = l->cu->cuCtxSetCurrent(l->context);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(l->cu, r, "making the CUDA context current");
  }
  return ATLAS_OK;
}

// What to do when the driver cannot use an image (`atlas --version` lists
// what each holds): PTX newer than the driver, or no entry for the GPU.
static const char *load_advice(CUresult r) {
  switch (r) {
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return ": the driver is older than the PTX, which nvcc made for a "
             "newer CUDA (`atlas --version` names the PTX ISA and the "
             "nvcc). Update the NVIDIA driver (nvcc 13 needs 580 or newer), "
             "or build with an nvcc no newer than the CUDA version "
             "`nvidia-smi` shows";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_IMAGE:
      return ": it holds no code this GPU can run. Atlas's kernels need "
             "sm_80 (Ampere) or newer; `atlas --version` lists the "
             "architectures built in (ATLAS_CUDA_ARCHS chooses them)";
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
      return ": the driver's PTX compiler (libnvidia-ptxjitcompiler) is "
             "missing: install the driver's full package, or build with "
             "nvcc for this GPU";
    default:
      return "";
  }
}

static atlas_status load(void *ctx, const atlas_module_def *def,
                         void **out_handle) {
  atlas_cuda_loader *l = ctx;
  *out_handle = NULL;
  const atlas_module_image *image = atlas_module_def_image(def, "cuda");
  if (image == NULL) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "kernel module '%s' has no CUDA image (it is "
                             "host-only)",
                             def->name);
  }
  if (image->size == 0) {
    return atlas_status_make(
        ATLAS_STATUS_UNAVAILABLE,
        "kernel module '%s' was built without nvcc, and no committed image "
        "(kernels/images/) matched its sources, so its CUDA image is empty "
        "(the build printed a WARNING saying why). Install the CUDA toolkit "
        "(nvcc) or set ATLAS_NVCC, run `tools/bazel clean`, and build again; "
        "or remake the images with tools/dev/kernel_images.sh where nvcc is",
        def->name);
  }
  ATLAS_RETURN_IF_ERROR(bind(l));
  char *log = calloc(1, ATLAS_CUDA_JIT_LOG_BYTES);
  if (log == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "kernel module '%s': no memory for the JIT log",
                             def->name);
  }
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)ATLAS_CUDA_JIT_LOG_BYTES};
  CUmodule module = NULL;
  CUresult r =
      l->cu->cuModuleLoadDataEx(&module, image->data, 2, options, values);
  atlas_status status = ATLAS_OK;
  if (r == CUDA_SUCCESS) atlas_cuda_host_note_modules(1);
  if (r != CUDA_SUCCESS) {
    log[ATLAS_CUDA_JIT_LOG_BYTES - 1] = '\0';
    status = atlas_cuda_error(l->cu, r,
                              "loading kernel module '%s' (%zu-byte fatbin%s); "
                              "JIT log: %s",
                              def->name, image->size, load_advice(r),
                              log[0] ? log : "(empty)");
  }
  free(log);
  *out_handle = module;
  return status;
}

static atlas_status get_function(void *ctx, void *module_handle,
                                 const atlas_module_def *def,
                                 const atlas_kernel_def *kernel,
                                 void **out_fn) {
  atlas_cuda_loader *l = ctx;
  *out_fn = NULL;
  CUfunction fn = NULL;
  CUresult r =
      l->cu->cuModuleGetFunction(&fn, (CUmodule)module_handle, kernel->name);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(l->cu, r,
                            "kernel module '%s' has no function '%s' in its "
                            "CUDA image (is it extern \"C\" __global__?)",
                            def->name, kernel->name);
  }
  *out_fn = fn;
  return ATLAS_OK;
}

static atlas_status unload(void *ctx, void *module_handle) {
  atlas_cuda_loader *l = ctx;
  if (module_handle == NULL) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(bind(l));
  CUresult r = l->cu->cuModuleUnload((CUmodule)module_handle);
  if (r != CUDA_SUCCESS) return atlas_cuda_error(l->cu, r, "cuModuleUnload");
  atlas_cuda_host_note_modules(-1);
  return ATLAS_OK;
}

static void destroy(void *ctx) { free(ctx); }

atlas_status atlas_cuda_module_loader_make(const atlas_cuda_driver *driver,
                                           CUcontext context,
                                           atlas_module_loader *out_loader) {
  memset(out_loader, 0, sizeof(*out_loader));
  atlas_cuda_loader *l = calloc(1, sizeof(*l));
  if (l == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for a CUDA module loader");
  }
  l->cu = driver;
  l->context = context;
  *out_loader = (atlas_module_loader){l, load, get_function, unload, destroy};
  // cppcheck 2.10 does not see ownership move through a compound literal: the
  // loader owns `l` and frees it in destroy().
  // cppcheck-suppress memleak
  return ATLAS_OK;
}
