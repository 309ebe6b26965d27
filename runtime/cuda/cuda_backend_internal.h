// Inside the CUDA backend: its state, and what its files share. The
// backend is three files, lowest first: cuda_context.c (binding the context,
// driver errors, the streams' capture state and waits), cuda_streams.c
// (streams, events, capture and graphs: the vtable's stream entries) and
// cuda_backend.c (memory, copies, launches, facts, create and destroy, the
// vtable). Private to runtime/cuda.
#ifndef ATLAS_RUNTIME_CUDA_CUDA_BACKEND_INTERNAL_H_
#define ATLAS_RUNTIME_CUDA_CUDA_BACKEND_INTERNAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/cuda/cuda_blas.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "atlas/runtime/cuda/cuda_staging.h"
#include "atlas/runtime/device/backend_impl.h"

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

static inline cuda_backend *as_cuda(atlas_backend *b) {
  return (cuda_backend *)b;
}

static inline CUstream stream_of(cuda_backend *cb, atlas_stream *s) {
  return s != NULL ? (CUstream)s : cb->stream;
}

static inline CUdeviceptr dptr(const void *p) {
  return (CUdeviceptr)(uintptr_t)p;
}

// ---- cuda_context.c --------------------------------------------------------
atlas_status atlas_cuda_bind(cuda_backend *cb);
atlas_status atlas_cuda_check(cuda_backend *cb, CUresult r, const char *what);
atlas_status atlas_cuda_is_capturing(cuda_backend *cb, CUstream s, bool *out);
atlas_status atlas_cuda_refuse_if_capturing(cuda_backend *cb, const char *what);
atlas_status atlas_cuda_sync_all_streams(cuda_backend *cb);
atlas_status atlas_cuda_sync_idle_streams(cuda_backend *cb);
atlas_status atlas_cuda_after_launch(cuda_backend *cb, CUstream s,
                                     const char *what, const char *module,
                                     const char *name);

// ---- cuda_streams.c: the vtable's stream, event, capture and graph entries
atlas_stream *atlas_cuda_default_stream(atlas_backend *b);
atlas_status atlas_cuda_track_stream(cuda_backend *cb, CUstream s);
atlas_status atlas_cuda_stream_create(atlas_backend *b,
                                      atlas_stream **out_stream);
atlas_status atlas_cuda_stream_destroy(atlas_backend *b, atlas_stream *stream);
atlas_status atlas_cuda_stream_synchronize(atlas_backend *b,
                                           atlas_stream *stream);
atlas_status atlas_cuda_synchronize(atlas_backend *b);
atlas_status atlas_cuda_event_create(atlas_backend *b, atlas_event **out_event);
atlas_status atlas_cuda_event_record(atlas_backend *b, atlas_event *event,
                                     atlas_stream *stream);
atlas_status atlas_cuda_event_wait(atlas_backend *b, atlas_stream *stream,
                                   atlas_event *event);
atlas_status atlas_cuda_event_synchronize(atlas_backend *b, atlas_event *event);
atlas_status atlas_cuda_event_destroy(atlas_backend *b, atlas_event *event);
atlas_status atlas_cuda_stream_is_capturing(atlas_backend *b,
                                            atlas_stream *stream,
                                            bool *out_capturing);
atlas_status atlas_cuda_begin_capture(atlas_backend *b, atlas_stream *stream);
atlas_status atlas_cuda_end_capture(atlas_backend *b, atlas_stream *stream,
                                    atlas_graph **out_graph);
atlas_status atlas_cuda_abort_capture_if_active(atlas_backend *b,
                                                atlas_stream *stream,
                                                bool *out_aborted);
atlas_status atlas_cuda_launch_graph(atlas_backend *b, atlas_graph *graph,
                                     atlas_stream *stream);
atlas_status atlas_cuda_destroy_graph(atlas_backend *b, atlas_graph *graph);

#endif  // ATLAS_RUNTIME_CUDA_CUDA_BACKEND_INTERNAL_H_
