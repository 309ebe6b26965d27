// The CUDA backend over the raw driver API (see cuda_backend.h): memory,
// copies, launches, device facts, create and destroy, and the vtable. Its
// streams and capture are in cuda_streams.c, its context in cuda_context.c.
#include "atlas/runtime/cuda/cuda_backend.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_backend_internal.h"
#include "atlas/runtime/cuda/cuda_blas.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "atlas/runtime/cuda/cuda_module_loader.h"
#include "atlas/runtime/cuda/cuda_staging.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/backend_modules.h"

static const atlas_backend_vtable cuda_vtable;

// ---- raw memory primitives for the shared base -------------------------------

static atlas_status raw_alloc(atlas_backend *b, size_t bytes,
                              atlas_mem_kind kind, void **out_ptr) {
  cuda_backend *cb = as_cuda(b);
  *out_ptr = NULL;
  CUresult r;
  if (kind == ATLAS_MEM_PINNED_HOST) {
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
    r = cb->cu->cuMemAllocHost(out_ptr, bytes);
    if (r != CUDA_SUCCESS) *out_ptr = NULL;
    return atlas_cuda_check(cb, r, "cuMemAllocHost");
  }
  CUdeviceptr p = 0;
  // Hot path: bind only when the driver says this thread has no context.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (kind == ATLAS_MEM_MANAGED) {
      r = cb->cu->cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
    } else {
      r = cb->cu->cuMemAlloc(&p, bytes);
    }
    if (r != CUDA_ERROR_INVALID_CONTEXT || attempt > 0) break;
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  }
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_check(
        cb, r, kind == ATLAS_MEM_MANAGED ? "cuMemAllocManaged" : "cuMemAlloc");
  }
  *out_ptr = (void *)(uintptr_t)p;
  return ATLAS_OK;
}

static atlas_status raw_free(atlas_backend *b, void *ptr, size_t bytes,
                             atlas_mem_kind kind) {
  (void)bytes;
  cuda_backend *cb = as_cuda(b);
  if (kind == ATLAS_MEM_PINNED_HOST) {
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
    return atlas_cuda_check(cb, cb->cu->cuMemFreeHost(ptr), "cuMemFreeHost");
  }
  CUresult r = cb->cu->cuMemFree(dptr(ptr));
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
    r = cb->cu->cuMemFree(dptr(ptr));
  }
  return atlas_cuda_check(cb, r, "cuMemFree");
}

// ---- memory ----------------------------------------------------------------------

static atlas_status cuda_host_ptr_to_device(atlas_backend *b, void *host_ptr,
                                            void **out_device_ptr) {
  cuda_backend *cb = as_cuda(b);
  *out_device_ptr = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUdeviceptr d = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_cuda_check(cb, cb->cu->cuMemHostGetDevicePointer(&d, host_ptr, 0),
                       "cuMemHostGetDevicePointer"));
  *out_device_ptr = (void *)(uintptr_t)d;
  return ATLAS_OK;
}

// Red-zone scans and poisoning and the sweep read, fill and free memory from
// the host: nothing may be capturing, and queued work must be done first.
static atlas_status cuda_quiesce(atlas_backend *b, const char *what) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_refuse_if_capturing(cb, what));
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_sync_all_streams(cb);
}

// ---- copies ----------------------------------------------------------------------

// A copy enqueued on `s`, then (sync) waited for.
static atlas_status copy_on(cuda_backend *cb, const char *what, void *dst,
                            const void *src, size_t bytes, CUstream s,
                            bool sync) {
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUresult r = cb->cu->cuMemcpyAsync(dptr(dst), dptr(src), bytes, s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r, "%s: %s of %zu bytes (%p -> %p)",
                            cb->base.name, what, bytes, src, dst);
  }
  if (!sync) return ATLAS_OK;
  r = cb->cu->cuStreamSynchronize(s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r, "%s: %s of %zu bytes: waiting for it",
                            cb->base.name, what, bytes);
  }
  return ATLAS_OK;
}

static atlas_status memset_on(cuda_backend *cb, void *dst, uint8_t value,
                              size_t bytes, CUstream s, bool sync) {
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUresult r = cb->cu->cuMemsetD8Async(dptr(dst), value, bytes, s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r, "%s: memset of %zu bytes at %p",
                            cb->base.name, bytes, dst);
  }
  if (!sync) return ATLAS_OK;
  return atlas_cuda_check(cb, cb->cu->cuStreamSynchronize(s),
                          "memset: waiting for it");
}

// An h2d whose source may go at return goes through the staging buffers
// (inside a capture, through ones the graph keeps).
static atlas_status staged_h2d(cuda_backend *cb, const atlas_copy_op *op,
                               CUstream s) {
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_is_capturing(cb, s, &capturing));
  size_t bytes = op->width_bytes;
  if (capturing) {
    return atlas_cuda_staging_h2d_captured(cb->staging, op->dst, op->src, bytes,
                                           s);
  }
  return atlas_cuda_staging_h2d(cb->staging, op->dst, op->src, bytes, s);
}

// Rows of a pitched copy; unified addressing finds each side's memory.
static atlas_status copy_2d(cuda_backend *cb, const atlas_copy_op *op,
                            CUstream s) {
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUDA_MEMCPY2D copy;
  memset(&copy, 0, sizeof(copy));
  copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;  // device, managed or pinned
  copy.srcDevice = dptr(op->src);
  copy.srcPitch = op->src_pitch;
  copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  copy.dstDevice = dptr(op->dst);
  copy.dstPitch = op->dst_pitch;
  copy.WidthInBytes = op->width_bytes;
  copy.Height = op->height;
  CUresult r = cb->cu->cuMemcpy2DAsync(&copy, s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r,
                            "%s: 2D copy of %zu rows x %zu bytes (pitches %zu "
                            "-> %zu)",
                            cb->base.name, op->height, op->width_bytes,
                            op->src_pitch, op->dst_pitch);
  }
  return ATLAS_OK;
}

// Synchronous forms run on their stream (the red zones' and the plain ones
// on the default stream) and wait for it; asynchronous ones only queue.
static atlas_status cuda_copy(atlas_backend *b, const atlas_copy_op *op) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, op->stream);
  bool sync = op->when == ATLAS_XFER_HOST_NOW || op->when == ATLAS_XFER_SYNC;
  bool plain = op->height == 1;
  if (!plain) {
    if (sync) return atlas_backend_unimplemented(b, op->name);
    return copy_2d(cb, op, s);
  }
  if (op->kind == ATLAS_COPY_H2D && op->when == ATLAS_XFER_ASYNC) {
    return staged_h2d(cb, op, s);
  }
  return copy_on(cb, op->name, op->dst, op->src, op->width_bytes, s, sync);
}

static atlas_status cuda_fill(atlas_backend *b, const atlas_fill_op *op) {
  cuda_backend *cb = as_cuda(b);
  return memset_on(cb, op->dst, op->value, op->bytes, stream_of(cb, op->stream),
                   op->when != ATLAS_XFER_ASYNC);
}

// ---- kernels ---------------------------------------------------------------------

static CUresult launch_kernel(cuda_backend *cb, CUfunction fn,
                              const atlas_launch_config *config, CUstream s,
                              void **args) {
  if (!config->overlap_prior || !cb->overlap) {
    return cb->cu->cuLaunchKernel(
        fn, config->grid.x, config->grid.y, config->grid.z, config->block.x,
        config->block.y, config->block.z, config->shared_bytes, s, args, NULL);
  }
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof(attr));
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig c = {config->grid.x,
                      config->grid.y,
                      config->grid.z,
                      config->block.x,
                      config->block.y,
                      config->block.z,
                      config->shared_bytes,
                      s,
                      &attr,
                      1};
  return cb->cu->cuLaunchKernelEx(&c, fn, args, NULL);
}

static atlas_status cuda_launch(atlas_backend *b, const atlas_kernel *kernel,
                                const atlas_launch_config *config,
                                void **args) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, config->stream);
  CUfunction fn = (CUfunction)kernel->fn;
  CUresult r = launch_kernel(cb, fn, config, s, args);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    // First launch from a thread the backend was never bound to.
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
    r = launch_kernel(cb, fn, config, s, args);
  }
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(
        cb->cu, r,
        "%s: launching kernel %s.%s with grid (%u,%u,%u), block (%u,%u,%u), "
        "%u shared bytes",
        b->name, kernel->module->name, kernel->def->name, config->grid.x,
        config->grid.y, config->grid.z, config->block.x, config->block.y,
        config->block.z, config->shared_bytes);
  }
  if (b->debug_sync) {
    return atlas_cuda_after_launch(cb, s, "kernel", kernel->module->name,
                                   kernel->def->name);
  }
  return ATLAS_OK;
}

static atlas_status cuda_release_caches(atlas_backend *b) {
  return atlas_cuda_blas_release_workspace(as_cuda(b)->blas);
}

static void cuda_start_background(atlas_backend *b) {
  atlas_cuda_blas_start_background(as_cuda(b)->blas);
}

static atlas_status cuda_matmul(atlas_backend *b, atlas_stream *stream,
                                float *out, const void *w, const void *x,
                                atlas_matmul_type type, size_t m, size_t n,
                                size_t k, atlas_matmul_out mode) {
  cuda_backend *cb = as_cuda(b);
  // Bound first: a deferred cuBLASLt start may run here, on this thread.
  if (cb->blas != NULL) ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  if (cb->blas == NULL || !atlas_cuda_blas_ready(cb->blas)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "backend %s does not implement matmul (cuBLASLt "
                             "is absent, unusable or ATLAS_CUBLASLT=0)",
                             b->name);
  }
  if (m == 0) return ATLAS_OK;  // the question: yes
  CUstream s = stream_of(cb, stream);
  ATLAS_RETURN_IF_ERROR(
      atlas_cuda_blas_matmul(cb->blas, s, out, w, x, type, m, n, k, mode));
  if (b->debug_sync) {
    return atlas_cuda_after_launch(cb, s, "cuBLASLt matmul", "", "");
  }
  return ATLAS_OK;
}

// ---- device facts ----------------------------------------------------------------

static atlas_status mem_info(cuda_backend *cb, size_t *out_free,
                             size_t *out_total) {
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  size_t free_bytes = 0, total = 0;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_check(
      cb, cb->cu->cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo"));
  if (out_free) *out_free = free_bytes;
  if (out_total) *out_total = total;
  return ATLAS_OK;
}

static atlas_status cuda_device_facts(atlas_backend *b,
                                      atlas_device_facts *out) {
  cuda_backend *cb = as_cuda(b);
  out->sm_count = cb->sm_count;
  return mem_info(cb, &out->free_bytes, &out->total_bytes);
}

static atlas_status cuda_bind_to_thread(atlas_backend *b) {
  cuda_backend *cb = as_cuda(b);
  return atlas_cuda_check(cb, cb->cu->cuCtxSetCurrent(cb->context),
                          "cuCtxSetCurrent");
}

// ---- lifetime --------------------------------------------------------------------

// Releases what create made beyond the base, in reverse order; reports all.
static atlas_status release_device_state(cuda_backend *cb) {
  atlas_status status = atlas_cuda_staging_destroy(cb->staging);
  cb->staging = NULL;
  for (size_t i = cb->stream_count; i-- > 0;) {
    status = atlas_status_join(
        status, atlas_cuda_check(cb, cb->cu->cuStreamDestroy(cb->streams[i]),
                                 i == 0 ? "destroying the default stream"
                                        : "destroying a stream left open"));
  }
  free(cb->streams);
  cb->streams = NULL;
  cb->stream_count = cb->stream_capacity = 0;
  pthread_mutex_destroy(&cb->mutex);
  return status;
}

static atlas_status cuda_destroy(atlas_backend *b) {
  cuda_backend *cb = as_cuda(b);
  atlas_status status = atlas_cuda_bind(cb);
  // Never unload modules or free memory under a capture: abort any capture
  // an error path left open, and say so.
  for (size_t i = 0; i < cb->stream_count; ++i) {
    bool aborted = false;
    atlas_status s = atlas_cuda_abort_capture_if_active(
        b, (atlas_stream *)cb->streams[i], &aborted);
    if (s == ATLAS_OK && aborted) {
      s = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                            "%s: destroyed while stream %p was capturing; the "
                            "capture was aborted",
                            b->name, (void *)cb->streams[i]);
    }
    status = atlas_status_join(status, s);
  }
  status = atlas_status_join(status, atlas_cuda_sync_all_streams(cb));
  // cuBLASLt's workspace is on the ledger: free it before the sweep.
  status = atlas_status_join(status, atlas_cuda_blas_destroy(cb->blas));
  cb->blas = NULL;
  // Sweep, then drop the registry (the last holder unloads the modules).
  status = atlas_status_join(status, atlas_backend_base_deinit(b));
  status = atlas_status_join(status, release_device_state(cb));
  free(cb);
  return status;
}

// A module built without nvcc is UNAVAILABLE at create (so `auto` falls
// back to the host): such a set is never loaded in the background.
static bool all_images_built(const atlas_module_set *set) {
  for (size_t i = 0; i < set->count; ++i) {
    const atlas_module_image *image =
        atlas_module_def_image(set->modules[i], "cuda");
    if (image == NULL || image->size == 0) return false;
  }
  return true;
}

atlas_status atlas_cuda_backend_create(const atlas_backend_options *options,
                                       atlas_backend **out_backend) {
  *out_backend = NULL;
  atlas_backend_options defaults;
  memset(&defaults, 0, sizeof(defaults));
  if (options == NULL) options = &defaults;
  const atlas_cuda_driver *cu = NULL;
  CUcontext context = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_cuda_host_acquire(options->device, &cu, &context));

  cuda_backend *cb = calloc(1, sizeof(*cb));
  if (cb == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for a CUDA backend");
  }
  cb->cu = cu;
  cb->context = context;
  cb->ordinal = options->device;
  pthread_mutex_init(&cb->mutex, NULL);
  char name[32];
  snprintf(name, sizeof(name), "cuda:%d", options->device);
  atlas_status status = atlas_backend_base_init(&cb->base, &cuda_vtable, name);
  if (status != ATLAS_OK) {
    pthread_mutex_destroy(&cb->mutex);
    free(cb);
    return atlas_status_annotate(status, "creating CUDA backend %s", name);
  }
  cb->base.log = options->log;
  status = atlas_cuda_bind(cb);
  CUdevice dev = 0;
  if (status == ATLAS_OK) {
    status = atlas_cuda_check(cb, cu->cuDeviceGet(&dev, options->device),
                              "cuDeviceGet");
  }
  if (status == ATLAS_OK) {
    status = atlas_cuda_check(
        cb,
        cu->cuDeviceGetAttribute(&cb->sm_count,
                                 CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  }
  int major = 0;
  if (status == ATLAS_OK) {
    status = atlas_cuda_check(
        cb,
        cu->cuDeviceGetAttribute(
            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  }
  bool overlap_on = true;  // ATLAS_LAUNCH_OVERLAP, read once, here
  if (status == ATLAS_OK) {
    status = atlas_backend_read_switch_env("ATLAS_LAUNCH_OVERLAP", &overlap_on);
  }
  cb->overlap = major >= 9 && overlap_on;
  if (status == ATLAS_OK) {
    status = atlas_cuda_staging_create(cu, name, &cb->staging);
  }
  if (status == ATLAS_OK) {
    CUstream s = NULL;
    status =
        atlas_cuda_check(cb, cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                         "creating the default stream");
    if (status == ATLAS_OK) {
      cb->stream = s;
      status = atlas_cuda_track_stream(cb, s);
      if (status != ATLAS_OK) cu->cuStreamDestroy(s);
    }
  }
  if (status == ATLAS_OK) {
    if (options->share_registry != NULL) {
      atlas_kernel_registry_retain(options->share_registry);
      cb->base.registry = options->share_registry;
    } else if (options->modules != NULL) {
      atlas_module_loader loader;
      status = atlas_cuda_module_loader_make(cu, context, &loader);
      if (status == ATLAS_OK && options->background_modules &&
          all_images_built(options->modules)) {
        // Last step of create: nothing after it can fail.
        status = atlas_backend_modules_load_async(
            &cb->base, options->modules, loader, options->fail_module_load_at);
      } else if (status == ATLAS_OK) {
        status = atlas_kernel_registry_create(options->modules, loader,
                                              options->fail_module_load_at,
                                              &cb->base.registry);
      }
    }
  }
  if (status == ATLAS_OK) {
    // Read once here, as ATLAS_REDZONE is: hot paths never call getenv.
    status = atlas_cuda_blas_create(&cb->base, getenv("ATLAS_CUBLASLT"),
                                    options->background_modules, &cb->blas);
  }
  if (status != ATLAS_OK) {
    status = atlas_status_join(status, atlas_backend_base_deinit(&cb->base));
    status = atlas_status_join(status, release_device_state(cb));
    free(cb);
    return atlas_status_annotate(status, "creating CUDA backend %s", name);
  }
  *out_backend = &cb->base;
  return ATLAS_OK;
}

atlas_status atlas_cuda_backend_raw(atlas_backend *b,
                                    const atlas_cuda_driver **out_driver,
                                    CUcontext *out_context) {
  if (b == NULL || b->vtable != &cuda_vtable) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s is not a CUDA backend",
                             b != NULL ? b->name : "(null)");
  }
  *out_driver = as_cuda(b)->cu;
  *out_context = as_cuda(b)->context;
  return ATLAS_OK;
}

CUstream atlas_cuda_backend_raw_stream(atlas_backend *b, atlas_stream *stream) {
  return stream_of(as_cuda(b), stream);
}

static const atlas_backend_vtable cuda_vtable = {
    .destroy = cuda_destroy,
    .raw_alloc = raw_alloc,
    .raw_free = raw_free,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .quiesce = cuda_quiesce,
    .host_ptr_to_device = cuda_host_ptr_to_device,
    .default_stream = atlas_cuda_default_stream,
    .stream_create = atlas_cuda_stream_create,
    .stream_destroy = atlas_cuda_stream_destroy,
    .stream_synchronize = atlas_cuda_stream_synchronize,
    .synchronize = atlas_cuda_synchronize,
    .event_create = atlas_cuda_event_create,
    .event_record = atlas_cuda_event_record,
    .event_wait = atlas_cuda_event_wait,
    .event_synchronize = atlas_cuda_event_synchronize,
    .event_destroy = atlas_cuda_event_destroy,
    .stream_is_capturing = atlas_cuda_stream_is_capturing,
    .begin_capture = atlas_cuda_begin_capture,
    .end_capture = atlas_cuda_end_capture,
    .abort_capture_if_active = atlas_cuda_abort_capture_if_active,
    .launch_graph = atlas_cuda_launch_graph,
    .destroy_graph = atlas_cuda_destroy_graph,
    .launch = cuda_launch,
    .matmul = cuda_matmul,
    .release_caches = cuda_release_caches,
    .device_facts = cuda_device_facts,
    .start_background = cuda_start_background,
    .bind_to_thread = cuda_bind_to_thread,
};
