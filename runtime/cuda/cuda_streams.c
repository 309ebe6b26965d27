// The CUDA backend's streams, events, capture and graphs.
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_backend_internal.h"

atlas_stream *atlas_cuda_default_stream(atlas_backend *b) {
  return (atlas_stream *)as_cuda(b)->stream;
}

atlas_status atlas_cuda_track_stream(cuda_backend *cb, CUstream s) {
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

atlas_status atlas_cuda_stream_create(atlas_backend *b,
                                      atlas_stream **out_stream) {
  cuda_backend *cb = as_cuda(b);
  *out_stream = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUstream s = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_cuda_check(cb, cb->cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate"));
  atlas_status status = atlas_cuda_track_stream(cb, s);
  if (status != ATLAS_OK) {
    cb->cu->cuStreamDestroy(s);
    return status;
  }
  *out_stream = (atlas_stream *)s;
  return ATLAS_OK;
}

atlas_status atlas_cuda_stream_destroy(atlas_backend *b, atlas_stream *stream) {
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
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_check(cb, cb->cu->cuStreamDestroy(s), "cuStreamDestroy");
}

atlas_status atlas_cuda_stream_synchronize(atlas_backend *b,
                                           atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_is_capturing(cb, s, &capturing));
  if (capturing) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "%s: cannot synchronise stream %p while it is "
        "capturing a graph; end or abort the capture first",
        b->name, (void *)s);
  }
  return atlas_cuda_check(cb, cb->cu->cuStreamSynchronize(s),
                          "cuStreamSynchronize");
}

atlas_status atlas_cuda_synchronize(atlas_backend *b) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  ATLAS_RETURN_IF_ERROR(atlas_cuda_refuse_if_capturing(cb, "synchronize"));
  return atlas_cuda_sync_all_streams(cb);
}

atlas_status atlas_cuda_event_create(atlas_backend *b,
                                     atlas_event **out_event) {
  cuda_backend *cb = as_cuda(b);
  *out_event = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  CUevent e = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_check(
      cb, cb->cu->cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  *out_event = (atlas_event *)e;
  return ATLAS_OK;
}

atlas_status atlas_cuda_event_record(atlas_backend *b, atlas_event *event,
                                     atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_check(
      cb, cb->cu->cuEventRecord((CUevent)event, stream_of(cb, stream)),
      "cuEventRecord");
}

atlas_status atlas_cuda_event_wait(atlas_backend *b, atlas_stream *stream,
                                   atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_check(
      cb, cb->cu->cuStreamWaitEvent(stream_of(cb, stream), (CUevent)event, 0),
      "cuStreamWaitEvent");
}

atlas_status atlas_cuda_event_synchronize(atlas_backend *b,
                                          atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_check(cb, cb->cu->cuEventSynchronize((CUevent)event),
                          "cuEventSynchronize");
}

atlas_status atlas_cuda_event_destroy(atlas_backend *b, atlas_event *event) {
  cuda_backend *cb = as_cuda(b);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_check(cb, cb->cu->cuEventDestroy((CUevent)event),
                          "cuEventDestroy");
}

// ---- capture and graphs ---------------------------------------------------------

atlas_status atlas_cuda_stream_is_capturing(atlas_backend *b,
                                            atlas_stream *stream,
                                            bool *out_capturing) {
  cuda_backend *cb = as_cuda(b);
  *out_capturing = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  return atlas_cuda_is_capturing(cb, stream_of(cb, stream), out_capturing);
}

atlas_status atlas_cuda_begin_capture(atlas_backend *b, atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  // cuBLASLt's start, if still running, ends first: its runtime's own set-up
  // never meets a capture.
  if (cb->blas != NULL) (void)atlas_cuda_blas_ready(cb->blas);
  // Before the capture: pinned allocations are refused while a stream
  // captures.
  ATLAS_RETURN_IF_ERROR(atlas_cuda_staging_capture_begin(cb->staging, s));
  // Thread-local: only this thread's unsafe calls break the capture, so other
  // models' threads may keep allocating meanwhile.
  atlas_status status = atlas_cuda_check(
      cb, cb->cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "cuStreamBeginCapture");
  if (status != ATLAS_OK) atlas_cuda_staging_capture_end(cb->staging, s, true);
  return status;
}

atlas_status atlas_cuda_end_capture(atlas_backend *b, atlas_stream *stream,
                                    atlas_graph **out_graph) {
  cuda_backend *cb = as_cuda(b);
  *out_graph = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
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
    return atlas_cuda_check(cb, r, "cuGraphInstantiateWithFlags");
  }
  *out_graph = (atlas_graph *)g;
  return ATLAS_OK;
}

atlas_status atlas_cuda_abort_capture_if_active(atlas_backend *b,
                                                atlas_stream *stream,
                                                bool *out_aborted) {
  cuda_backend *cb = as_cuda(b);
  CUstream s = stream_of(cb, stream);
  *out_aborted = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  bool capturing = false;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_is_capturing(cb, s, &capturing));
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
  ATLAS_RETURN_IF_ERROR(atlas_cuda_is_capturing(cb, s, &capturing));
  if (capturing) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: stream %p still reports a capture after "
                             "cuStreamEndCapture",
                             b->name, (void *)s);
  }
  *out_aborted = true;
  return ATLAS_OK;
}

atlas_status atlas_cuda_launch_graph(atlas_backend *b, atlas_graph *graph,
                                     atlas_stream *stream) {
  cuda_backend *cb = as_cuda(b);
  cuda_graph *g = (cuda_graph *)graph;
  CUstream s = stream_of(cb, stream);
  CUresult r = cb->cu->cuGraphLaunch(g->exec, s);
  if (r == CUDA_ERROR_INVALID_CONTEXT) {
    ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
    r = cb->cu->cuGraphLaunch(g->exec, s);
  }
  if (r != CUDA_SUCCESS) return atlas_cuda_check(cb, r, "cuGraphLaunch");
  if (cb->base.debug_sync)
    return atlas_cuda_after_launch(cb, s, "graph", "", "");
  return ATLAS_OK;
}

atlas_status atlas_cuda_destroy_graph(atlas_backend *b, atlas_graph *graph) {
  cuda_backend *cb = as_cuda(b);
  cuda_graph *g = (cuda_graph *)graph;
  ATLAS_RETURN_IF_ERROR(atlas_cuda_bind(cb));
  atlas_status status = atlas_cuda_check(
      cb, cb->cu->cuGraphExecDestroy(g->exec), "cuGraphExecDestroy");
  status = atlas_status_join(
      status,
      atlas_cuda_check(cb, cb->cu->cuGraphDestroy(g->graph), "cuGraphDestroy"));
  if (g->staging != NULL) {
    // Replays already launched may still read it.
    status = atlas_status_join(status, atlas_cuda_sync_idle_streams(cb));
    status = atlas_status_join(status, atlas_cuda_staging_release_graph_arena(
                                           cb->staging, g->staging));
  }
  free(g);
  return status;
}
