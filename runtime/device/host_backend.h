// Host backend: the backend contract implemented on the CPU.
//
// Every operation is real: memory is ledgered with red zones, streams run
// work in order (synchronously), events record, and a capturing stream
// records launches, memsets and async copies into a graph that replays them.
// Kernels are the C functions of the model's module set. It is what CI tests
// everything on, and a test double users can run their own code against.
#ifndef ATLAS_RUNTIME_HOST_BACKEND_H_
#define ATLAS_RUNTIME_HOST_BACKEND_H_

#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// `options` may be NULL (no kernels, unlimited capacity).
ATLAS_MUST_USE atlas_status atlas_host_backend_create(
    const atlas_backend_options *options, atlas_backend **out_backend);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_HOST_BACKEND_H_
