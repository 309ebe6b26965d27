// The in-process communicator: N ranks in one process, each calling from
// its own thread (docs/PARALLELISM.md says why a thread per rank). A
// collective stages the rank's buffer to the host (a synchronous copy
// ordered after the rank's stream), waits until every rank has arrived,
// and the last to arrive combines the contributions in rank order, so every
// rank gets the same bits whatever the arrival order; each rank then copies
// the result back to its buffer. It works over any backend's memory, and is
// what the host backend's simulated devices use in tests.
#ifndef ATLAS_RUNTIME_PARALLEL_COMM_HOST_H_
#define ATLAS_RUNTIME_PARALLEL_COMM_HOST_H_

#include "atlas/runtime/parallel/communicator.h"

#ifdef __cplusplus
extern "C" {
#endif

// A communicator over backends[0..ranks) (borrowed: they must outlive it).
// Ranks whose calls disagree (a different collective, count, type or root
// at the same step) abort it with INVALID_ARGUMENT naming both.
ATLAS_MUST_USE atlas_status atlas_comm_host_create(
    int ranks, atlas_backend *const *backends, atlas_comm **out_comm);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_PARALLEL_COMM_HOST_H_
