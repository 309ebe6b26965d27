// Pinned staging for asynchronous host-to-device copies whose source the
// caller may drop as soon as the call returns.
//
// Outside a capture, bytes go to a small pool of pinned buffers, each reused
// once an event says its copy finished. Inside a capture the driver refuses
// pinned allocations, so an arena is set aside when the capture begins; the
// bytes staged there belong to the graph (every replay copies them again) and
// are freed with it. The backend makes its context current before calling.
#ifndef ATLAS_RUNTIME_CUDA_CUDA_STAGING_H_
#define ATLAS_RUNTIME_CUDA_CUDA_STAGING_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/cuda/cuda_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_cuda_staging atlas_cuda_staging;

// `owner` names the backend in messages ("cuda:0").
ATLAS_MUST_USE atlas_status
atlas_cuda_staging_create(const atlas_cuda_driver *driver, const char *owner,
                          atlas_cuda_staging **out_staging);
// Waits for copies in flight, then frees every buffer and arena it holds
// (not those handed to graphs).
ATLAS_MUST_USE atlas_status
atlas_cuda_staging_destroy(atlas_cuda_staging *staging);

// Copies src into a pinned buffer and enqueues the copy to dst on `stream`.
ATLAS_MUST_USE atlas_status atlas_cuda_staging_h2d(atlas_cuda_staging *staging,
                                                   void *dst, const void *src,
                                                   size_t bytes,
                                                   CUstream stream);

// Sets an arena aside for a capture about to begin on `stream`.
ATLAS_MUST_USE atlas_status
atlas_cuda_staging_capture_begin(atlas_cuda_staging *staging, CUstream stream);
// Stages into the arena of the capture on `stream` and enqueues the copy.
ATLAS_MUST_USE atlas_status
atlas_cuda_staging_h2d_captured(atlas_cuda_staging *staging, void *dst,
                                const void *src, size_t bytes, CUstream stream);
// The capture on `stream` ended with a graph: returns the arena the graph
// must keep and later hand to release_graph_arena (NULL if nothing was
// staged). With `discard` (no graph: failed or aborted) it returns NULL and
// keeps the arena for reuse.
unsigned char *atlas_cuda_staging_capture_end(atlas_cuda_staging *staging,
                                              CUstream stream, bool discard);
// Frees a graph's arena once nothing replays the graph any more.
ATLAS_MUST_USE atlas_status atlas_cuda_staging_release_graph_arena(
    atlas_cuda_staging *staging, unsigned char *arena);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_CUDA_CUDA_STAGING_H_
