// The CUDA backend over the raw driver API (see cuda_backend.h).
#include "atlas/runtime/cuda/cuda_backend.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_blas.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "atlas/runtime/cuda/cuda_module_loader.h"
#include "atlas/runtime/cuda/cuda_staging.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/backend_modules.h"

typedef struct cuda_backend {
  atlas_backend base;  // first: atlas_backend* <-> cuda_backend*
  const atlas_cuda_driver *cu;
  CUcontext context;
  int ordinal;
  int sm_count;
  // sm_90+ and not ATLAS_LAUNCH_OVERLAP=0: overlap_prior launches overlap.
  bool overlap;
  CUstream stream;        // the default stream (non-blocking)
  pthread_mutex_t mutex;  // guards streams[]
  CUstream *streams;      // every stream of this backend, default first
  size_t stream_count, stream_capacity;
  atlas_cuda_staging *staging;  // for h2d_async
  // cuBLASLt for matmul; NULL where ATLAS_CUBLASLT=0 (read once at
  // creation) or, unless its start was deferred (background_modules), where
  // it is absent: matmul then answers UNIMPLEMENTED, as it does when a
  // deferred start finds it absent or unusable.
  atlas_cuda_blas *blas;
} cuda_backend;

// A captured graph and its executable instance.
typedef struct cuda_graph {
  CUgraph graph;
  CUgraphExec exec;
  unsigned char *staging;  // the capture's h2d_async arena (pinned), or NULL
} cuda_graph;

static const atlas_backend_vtable cuda_vtable;

static inline cuda_backend *as_cuda(atlas_backend *b) {
  return (cuda_backend *)b;
}

static inline CUstream stream_of(cuda_backend *cb, atlas_stream *s) {
  return s != NULL ? (CUstream)s : cb->stream;
}

static inline CUdeviceptr dptr(const void *p) {
  return (CUdeviceptr)(uintptr_t)p;
}

// Makes the backend's context current on this thread (a TLS read when it
// already is).
static atlas_status bind(cuda_backend *cb) {
  CUcontext current = NULL;
  if (cb->cu->cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
      current == cb->context) {
    return ATLAS_OK;
  }
  CUresult r = cb->cu->cuCtxSetCurrent(cb->context);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r, "%s: making the context current",
                            cb->base.name);
  }
  return ATLAS_OK;
}

static atlas_status check(cuda_backend *cb, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return ATLAS_OK;
  return atlas_cuda_error(cb->cu, r, "%s: %s", cb->base.name, what);
}

// ---- capture state -----------------------------------------------------------

static atlas_status is_capturing(cuda_backend *cb, CUstream s, bool *out) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = cb->cu->cuStreamIsCapturing(s, &st);
  *out = r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
  return check(cb, r, "cuStreamIsCapturing");
}

// FAILED_PRECONDITION naming the capturing stream when any stream of this
// backend is capturing: `what` would synchronise and invalidate the capture.
static atlas_status refuse_if_capturing(cuda_backend *cb, const char *what) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; status == ATLAS_OK && i < cb->stream_count; ++i) {
    bool capturing = false;
    status = is_capturing(cb, cb->streams[i], &capturing);
    if (status == ATLAS_OK && capturing) {
      status = atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "%s: %s refused: stream %p is capturing a graph, and %s would "
          "synchronise the device and invalidate the capture; end or abort "
          "the capture first",
          cb->base.name, what, (void *)cb->streams[i], what);
    }
  }
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

static atlas_status sync_all_streams(cuda_backend *cb) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; i < cb->stream_count; ++i) {
    status = atlas_status_join(
        status, check(cb, cb->cu->cuStreamSynchronize(cb->streams[i]),
                      "cuStreamSynchronize"));
  }
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

// Waits for every stream of this backend that is not capturing (a capturing
// one has nothing running that a sync could wait for, and a sync would break
// its capture).
static atlas_status sync_idle_streams(cuda_backend *cb) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; i < cb->stream_count; ++i) {
    bool capturing = false;
    atlas_status s = is_capturing(cb, cb->streams[i], &capturing);
    if (s == ATLAS_OK && !capturing) {
      s = check(cb, cb->cu->cuStreamSynchronize(cb->streams[i]),
                "cuStreamSynchronize");
    }
    status = atlas_status_join(status, s);
  }
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

// ---- raw memory primitives for the shared base -------------------------------

static atlas_status raw_alloc(atlas_backend *b, size_t bytes,
                              atlas_mem_kind kind, void **out_ptr) {
  cuda_backend *cb = as_cuda(b);
  *out_ptr = NULL;
  CUresult r;
  if (kind == ATLAS_MEM_PINNED_HOST) {
    ATLAS_RETURN_IF_ERROR(bind(cb));
    r = cb->cu->cuMemAllocHost(out_ptr, bytes);
    if (r != CUDA_SUCCESS) *out_ptr = NULL;
    return check(cb, r, "cuMemAllocHost");
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
    ATLAS_RETURN_IF_ERROR(bind(cb));
  }
  if (r != CUDA_SUCCESS) {
    return check(
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
    ATLAS_RETURN_IF_ERROR(bind(cb));
    return check(cb, cb->cu->cuMemFreeHost(ptr), "cuMemFreeHost");
  }
  CUresult r = cb->cu->cuMemFree(dptr(ptr));
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    ATLAS_RETURN_IF_ERROR(bind(cb));
    r = cb->cu->cuMemFree(dptr(ptr));
  }
  return check(cb, r, "cuMemFree");
}

// ---- memory ----------------------------------------------------------------------

static atlas_status cuda_host_ptr_to_device(atlas_backend *b, void *host_ptr,
                                            void **out_device_ptr) {
  cuda_backend *cb = as_cuda(b);
  *out_device_ptr = NULL;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  CUdeviceptr d = 0;
  ATLAS_RETURN_IF_ERROR(
      check(cb, cb->cu->cuMemHostGetDevicePointer(&d, host_ptr, 0),
            "cuMemHostGetDevicePointer"));
  *out_device_ptr = (void *)(uintptr_t)d;
  return ATLAS_OK;
}

// Red-zone scans and poisoning and the sweep read, fill and free memory from
// the host: nothing may be capturing, and queued work must be done first.
static atlas_status cuda_quiesce(atlas_backend *b, const char *what) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(refuse_if_capturing(cb, what));
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return sync_all_streams(cb);
}

// ---- copies ----------------------------------------------------------------------

// A copy enqueued on `s`, then (sync) waited for.
static atlas_status copy_on(cuda_backend *cb, const char *what, void *dst,
                            const void *src, size_t bytes, CUstream s,
                            bool sync) {
  ATLAS_RETURN_IF_ERROR(bind(cb));
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
  ATLAS_RETURN_IF_ERROR(bind(cb));
  CUresult r = cb->cu->cuMemsetD8Async(dptr(dst), value, bytes, s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r, "%s: memset of %zu bytes at %p",
                            cb->base.name, bytes, dst);
  }
  if (!sync) return ATLAS_OK;
  return check(cb, cb->cu->cuStreamSynchronize(s), "memset: waiting for it");
}

// An h2d whose source may go at return goes through the staging buffers
// (inside a capture, through ones the graph keeps).
static atlas_status staged_h2d(cuda_backend *cb, const atlas_copy_op *op,
                               CUstream s) {
  ATLAS_RETURN_IF_ERROR(bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(is_capturing(cb, s, &capturing));
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
  ATLAS_RETURN_IF_ERROR(bind(cb));
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

// ---- streams and events -----------------------------------------------------------

static atlas_stream *cuda_default_stream(atlas_backend *b) {
  return (atlas_stream *)as_cuda(b)->stream;
}

static atlas_status track_stream(cuda_backend *cb, CUstream s) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  if (cb->stream_count == cb->stream_capacity) {
    size_t cap = cb->stream_capacity ? cb->stream_capacity * 2 : 8;
    // CUstream is a handle (a pointer to an opaque struct): this is one
    // handle's size. NOLINTNEXTLINE(bugprone-sizeof-expression)
    CUstream *grown = realloc(cb->streams, cap * sizeof(*grown));
    if (grown == NULL) {
      status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "%s: no memory for the stream table",
                                 cb->base.name);
    } else {
      cb->streams = grown;
      cb->stream_capacity = cap;
    }
  }
  if (status == ATLAS_OK) cb->streams[cb->stream_count++] = s;
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

static atlas_status cuda_stream_create(atlas_backend *b,
                                       atlas_stream **out_stream) {
  cuda_backend *cb = as_cuda(b);
  *out_stream = NULL;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  CUstream s = NULL;
  ATLAS_RETURN_IF_ERROR(
      check(cb, cb->cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate"));
  atlas_status status = track_stream(cb, s);
  if (status != ATLAS_OK) {
    cb->cu->cuStreamDestroy(s);
    return status;
  }
  *out_stream = (atlas_stream *)s;
  return ATLAS_OK;
}

static atlas_status cuda_stream_destroy(atlas_backend *b,
                                        atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = (CUstream)stream;
  bool found = false;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 1; i < cb->stream_count; ++i) {
    if (cb->streams[i] == s) {
      cb->streams[i] = cb->streams[--cb->stream_count];
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&cb->mutex);
  if (!found) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: stream %p was not created by this backend "
                             "(or was already destroyed)",
                             b->name, (void *)s);
  }
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return check(cb, cb->cu->cuStreamDestroy(s), "cuStreamDestroy");
}

static atlas_status cuda_stream_synchronize(atlas_backend *b,
                                            atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(is_capturing(cb, s, &capturing));
  if (capturing) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "%s: cannot synchronise stream %p while it is "
        "capturing a graph; end or abort the capture first",
        b->name, (void *)s);
  }
  return check(cb, cb->cu->cuStreamSynchronize(s), "cuStreamSynchronize");
}

static atlas_status cuda_synchronize(atlas_backend *b) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  ATLAS_RETURN_IF_ERROR(refuse_if_capturing(cb, "synchronize"));
  return sync_all_streams(cb);
}

static atlas_status cuda_event_create(atlas_backend *b,
                                      atlas_event **out_event) {
  cuda_backend *cb = as_cuda(b);
  *out_event = NULL;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  CUevent e = NULL;
  ATLAS_RETURN_IF_ERROR(check(
      cb, cb->cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  *out_event = (atlas_event *)e;
  return ATLAS_OK;
}

static atlas_status cuda_event_record(atlas_backend *b, atlas_event *event,
                                      atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return check(cb, cb->cu->cuEventRecord((CUevent)event, stream_of(cb, stream)),
               "cuEventRecord");
}

static atlas_status cuda_event_wait(atlas_backend *b, atlas_stream *stream,
                                    atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return check(
      cb, cb->cu->cuStreamWaitEvent(stream_of(cb, stream), (CUevent)event, 0),
      "cuStreamWaitEvent");
}

static atlas_status cuda_event_synchronize(atlas_backend *b,
                                           atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return check(cb, cb->cu->cuEventSynchronize((CUevent)event),
               "cuEventSynchronize");
}

static atlas_status cuda_event_destroy(atlas_backend *b, atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return check(cb, cb->cu->cuEventDestroy((CUevent)event), "cuEventDestroy");
}

// ---- capture and graphs ---------------------------------------------------------

static atlas_status cuda_stream_is_capturing(atlas_backend *b,
                                             atlas_stream *stream,
                                             bool *out_capturing) {
  cuda_backend *cb = as_cuda(b);
  *out_capturing = false;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  return is_capturing(cb, stream_of(cb, stream), out_capturing);
}

static atlas_status cuda_begin_capture(atlas_backend *b, atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  ATLAS_RETURN_IF_ERROR(bind(cb));
  // cuBLASLt's start, if still running, ends first: its runtime's own set-up
  // never meets a capture.
  if (cb->blas != NULL) (void)atlas_cuda_blas_ready(cb->blas);
  // Before the capture: pinned allocations are refused while a stream
  // captures.
  ATLAS_RETURN_IF_ERROR(atlas_cuda_staging_capture_begin(cb->staging, s));
  // Thread-local: only this thread's unsafe calls break the capture, so other
  // models' threads may keep allocating meanwhile.
  atlas_status status = check(
      cb, cb->cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "cuStreamBeginCapture");
  if (status != ATLAS_OK) atlas_cuda_staging_capture_end(cb->staging, s, true);
  return status;
}

static atlas_status cuda_end_capture(atlas_backend *b, atlas_stream *stream,
                                     atlas_graph **out_graph) {
  cuda_backend *cb = as_cuda(b);
  *out_graph = NULL;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  CUstream s = stream_of(cb, stream);
  CUgraph graph = NULL;
  CUresult r = cb->cu->cuStreamEndCapture(s, &graph);
  unsigned char *arena =
      atlas_cuda_staging_capture_end(cb->staging, s, r != CUDA_SUCCESS);
  if (r != CUDA_SUCCESS) {
    if (graph != NULL) cb->cu->cuGraphDestroy(graph);
    return atlas_cuda_error(cb->cu, r,
                            "%s: ending the capture (an operation inside it "
                            "failed or was not capturable)",
                            b->name);
  }
  cuda_graph *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    cb->cu->cuGraphDestroy(graph);
    atlas_status_free(
        atlas_cuda_staging_release_graph_arena(cb->staging, arena));
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: no memory for a graph", b->name);
  }
  g->graph = graph;
  g->staging = arena;
  r = cb->cu->cuGraphInstantiateWithFlags(&g->exec, graph, 0);
  if (r != CUDA_SUCCESS) {
    cb->cu->cuGraphDestroy(graph);
    atlas_status_free(
        atlas_cuda_staging_release_graph_arena(cb->staging, arena));
    free(g);
    return check(cb, r, "cuGraphInstantiateWithFlags");
  }
  *out_graph = (atlas_graph *)g;
  return ATLAS_OK;
}

static atlas_status cuda_abort_capture_if_active(atlas_backend *b,
                                                 atlas_stream *stream,
                                                 bool *out_aborted) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  *out_aborted = false;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(is_capturing(cb, s, &capturing));
  if (!capturing) return ATLAS_OK;
  // Ending is what clears the capture state (also an invalidated one, which
  // reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED here: expected, not news).
  CUgraph graph = NULL;
  CUresult r = cb->cu->cuStreamEndCapture(s, &graph);
  if (graph != NULL) cb->cu->cuGraphDestroy(graph);
  atlas_cuda_staging_capture_end(cb->staging, s, true);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    return atlas_cuda_error(cb->cu, r, "%s: aborting the capture on stream %p",
                            b->name, (void *)s);
  }
  ATLAS_RETURN_IF_ERROR(is_capturing(cb, s, &capturing));
  if (capturing) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: stream %p still reports a capture after "
                             "cuStreamEndCapture",
                             b->name, (void *)s);
  }
  *out_aborted = true;
  return ATLAS_OK;
}

static atlas_status after_launch(cuda_backend *cb, CUstream s, const char *what,
                                 const char *module, const char *name);

static atlas_status cuda_launch_graph(atlas_backend *b, atlas_graph *graph,
                                      atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  cuda_graph *g = (cuda_graph *)graph;
  CUstream s = stream_of(cb, stream);
  CUresult r = cb->cu->cuGraphLaunch(g->exec, s);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    ATLAS_RETURN_IF_ERROR(bind(cb));
    r = cb->cu->cuGraphLaunch(g->exec, s);
  }
  if (r != CUDA_SUCCESS) return check(cb, r, "cuGraphLaunch");
  if (cb->base.debug_sync) return after_launch(cb, s, "graph", "", "");
  return ATLAS_OK;
}

static atlas_status cuda_destroy_graph(atlas_backend *b, atlas_graph *graph) {
  cuda_backend *cb = as_cuda(b);
  cuda_graph *g = (cuda_graph *)graph;
  ATLAS_RETURN_IF_ERROR(bind(cb));
  atlas_status status =
      check(cb, cb->cu->cuGraphExecDestroy(g->exec), "cuGraphExecDestroy");
  status = atlas_status_join(
      status, check(cb, cb->cu->cuGraphDestroy(g->graph), "cuGraphDestroy"));
  if (g->staging != NULL) {
    // Replays already launched may still read it.
    status = atlas_status_join(status, sync_idle_streams(cb));
    status = atlas_status_join(status, atlas_cuda_staging_release_graph_arena(
                                           cb->staging, g->staging));
  }
  free(g);
  return status;
}

// ---- kernels ---------------------------------------------------------------------

// ATLAS_DEBUG_SYNC: wait for the launch and name the kernel that failed.
// `what` is "kernel" (then module.name is named) or "graph".
static atlas_status after_launch(cuda_backend *cb, CUstream s, const char *what,
                                 const char *module, const char *name) {
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(is_capturing(cb, s, &capturing));
  if (capturing) return ATLAS_OK;  // nothing runs until the graph does
  CUresult r = cb->cu->cuStreamSynchronize(s);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(cb->cu, r,
                            "%s: %s %s%s%s failed (ATLAS_DEBUG_SYNC "
                            "synchronised after its launch)",
                            cb->base.name, what, module, module[0] ? "." : "",
                            name);
  }
  return ATLAS_OK;
}

// overlap_prior: a programmatic dependent launch. The kernel may start as
// the one before it ends (its prologue, e.g. weight loads, overlaps that
// one's tail) and waits in atlas_overlap_begin for the rest.
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
    ATLAS_RETURN_IF_ERROR(bind(cb));
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
    return after_launch(cb, s, "kernel", kernel->module->name,
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
  if (cb->blas != NULL) ATLAS_RETURN_IF_ERROR(bind(cb));
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
    return after_launch(cb, s, "cuBLASLt matmul", "", "");
  }
  return ATLAS_OK;
}

// ---- device facts ----------------------------------------------------------------

static atlas_status mem_info(cuda_backend *cb, size_t *out_free,
                             size_t *out_total) {
  ATLAS_RETURN_IF_ERROR(bind(cb));
  size_t free_bytes = 0, total = 0;
  ATLAS_RETURN_IF_ERROR(
      check(cb, cb->cu->cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo"));
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
  return check(cb, cb->cu->cuCtxSetCurrent(cb->context), "cuCtxSetCurrent");
}

// ---- lifetime --------------------------------------------------------------------

// Releases what create made beyond the base, in reverse order; reports all.
static atlas_status release_device_state(cuda_backend *cb) {
  atlas_status status = atlas_cuda_staging_destroy(cb->staging);
  cb->staging = NULL;
  for (size_t i = cb->stream_count; i-- > 0;) {
    status = atlas_status_join(
        status, check(cb, cb->cu->cuStreamDestroy(cb->streams[i]),
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
  atlas_status status = bind(cb);
  // Never unload modules or free memory under a capture: abort any capture
  // an error path left open, and say so.
  for (size_t i = 0; i < cb->stream_count; ++i) {
    bool aborted = false;
    atlas_status s = cuda_abort_capture_if_active(
        b, (atlas_stream *)cb->streams[i], &aborted);
    if (s == ATLAS_OK && aborted) {
      s = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                            "%s: destroyed while stream %p was capturing; the "
                            "capture was aborted",
                            b->name, (void *)cb->streams[i]);
    }
    status = atlas_status_join(status, s);
  }
  status = atlas_status_join(status, sync_all_streams(cb));
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
  status = bind(cb);
  CUdevice dev = 0;
  if (status == ATLAS_OK) {
    status = check(cb, cu->cuDeviceGet(&dev, options->device), "cuDeviceGet");
  }
  if (status == ATLAS_OK) {
    status =
        check(cb,
              cu->cuDeviceGetAttribute(
                  &cb->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
              "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  }
  int major = 0;
  if (status == ATLAS_OK) {
    status =
        check(cb,
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
    status = check(cb, cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                   "creating the default stream");
    if (status == ATLAS_OK) {
      cb->stream = s;
      status = track_stream(cb, s);
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
    .default_stream = cuda_default_stream,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .synchronize = cuda_synchronize,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_synchronize = cuda_event_synchronize,
    .event_destroy = cuda_event_destroy,
    .stream_is_capturing = cuda_stream_is_capturing,
    .begin_capture = cuda_begin_capture,
    .end_capture = cuda_end_capture,
    .abort_capture_if_active = cuda_abort_capture_if_active,
    .launch_graph = cuda_launch_graph,
    .destroy_graph = cuda_destroy_graph,
    .launch = cuda_launch,
    .matmul = cuda_matmul,
    .release_caches = cuda_release_caches,
    .device_facts = cuda_device_facts,
    .start_background = cuda_start_background,
    .bind_to_thread = cuda_bind_to_thread,
};
