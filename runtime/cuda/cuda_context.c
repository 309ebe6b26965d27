// The CUDA backend's context and streams: binding the context to a thread,
// driver errors, which streams are capturing, and waiting for them.
#include <pthread.h>

#include "atlas/runtime/cuda/cuda_backend_internal.h"

// Makes the backend's context current on this thread (a TLS read when it
// already is).
atlas_status atlas_cuda_bind(cuda_backend *cb) {
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

atlas_status atlas_cuda_check(cuda_backend *cb, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return ATLAS_OK;
  return atlas_cuda_error(cb->cu, r, "%s: %s", cb->base.name, what);
}

// ---- capture state -----------------------------------------------------------

atlas_status atlas_cuda_is_capturing(cuda_backend *cb, CUstream s, bool *out) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = cb->cu->cuStreamIsCapturing(s, &st);
  *out = r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
  return atlas_cuda_check(cb, r, "cuStreamIsCapturing");
}

// FAILED_PRECONDITION naming the capturing stream when any stream of this
// backend is capturing: `what` would synchronise and invalidate the capture.
atlas_status atlas_cuda_refuse_if_capturing(cuda_backend *cb,
                                            const char *what) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; status == ATLAS_OK && i < cb->stream_count; ++i) {
    bool capturing = false;
    status = atlas_cuda_is_capturing(cb, cb->streams[i], &capturing);
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

atlas_status atlas_cuda_sync_all_streams(cuda_backend *cb) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; i < cb->stream_count; ++i) {
    status = atlas_status_join(
        status,
        atlas_cuda_check(cb, cb->cu->cuStreamSynchronize(cb->streams[i]),
                         "cuStreamSynchronize"));
  }
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

// Waits for every stream of this backend that is not capturing (a capturing
// one has nothing running that a sync could wait for, and a sync would break
// its capture).
atlas_status atlas_cuda_sync_idle_streams(cuda_backend *cb) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&cb->mutex);
  for (size_t i = 0; i < cb->stream_count; ++i) {
    bool capturing = false;
    atlas_status s = atlas_cuda_is_capturing(cb, cb->streams[i], &capturing);
    if (s == ATLAS_OK && !capturing) {
      s = atlas_cuda_check(cb, cb->cu->cuStreamSynchronize(cb->streams[i]),
                           "cuStreamSynchronize");
    }
    status = atlas_status_join(status, s);
  }
  pthread_mutex_unlock(&cb->mutex);
  return status;
}

// ATLAS_DEBUG_SYNC: wait for the launch and name the kernel that failed.
// `what` is "kernel" (then module.name is named) or "graph".
atlas_status atlas_cuda_after_launch(cuda_backend *cb, CUstream s,
                                     const char *what, const char *module,
                                     const char *name) {
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_is_capturing(cb, s, &capturing));
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