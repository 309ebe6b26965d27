// A backend with the least a backend must fill (runtime/device/backend_impl.h),
// plus a few optional entries that count their calls. Tests use it to show that
// the front door does the shared work and every argument check before any
// entry is reached.
#ifndef ATLAS_TESTS_RUNTIME_MINIMAL_BACKEND_H_
#define ATLAS_TESTS_RUNTIME_MINIMAL_BACKEND_H_

#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// How often each optional entry was reached, and what the last launch got.
typedef struct atlas_minimal_calls {
  int h2d, d2d_2d, memset, stream_destroy, event_record, launch_graph,
      destroy_graph, launch;
  void *last_args[4];  // the argument pointers of the last launch
} atlas_minimal_calls;

// Memory is malloc'ed host memory; options->modules gives kernels whose
// launches are counted, never run. A copy form it lacks (d2h_async, for one)
// answers UNIMPLEMENTED naming it.
ATLAS_MUST_USE atlas_status atlas_minimal_backend_create(
    const atlas_backend_options *options, atlas_backend **out_backend);
const atlas_minimal_calls *atlas_minimal_backend_calls(atlas_backend *b);
// A stand-in graph and event (never dereferenced by the backend).
atlas_graph *atlas_minimal_backend_graph(atlas_backend *b);
atlas_event *atlas_minimal_backend_event(atlas_backend *b);
// The next n raw_frees fail (INTERNAL) and free nothing, as a device that
// refuses a release.
void atlas_minimal_backend_refuse_frees(atlas_backend *b, int n);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TESTS_RUNTIME_MINIMAL_BACKEND_H_
