// Fault injection: make the k-th operation of a kind fail with ABORTED, so
// tests and the fault sweep reach every error path. Per backend, never
// global: the counters live in the atlas_fault_state each backend carries.
#ifndef ATLAS_RUNTIME_DEVICE_FAULT_H_
#define ATLAS_RUNTIME_DEVICE_FAULT_H_

#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// From the outside: ATLAS_FAULT=kind:n[,kind:n...] (kinds: alloc, copy,
// stream, event, launch, host-alloc, free, collective), read once when a
// backend is built, fails the n-th operation of that kind on every backend
// built while it is set.
typedef enum atlas_fault_kind {
  ATLAS_FAULT_ALLOC = 0,   // alloc, alloc_managed (device memory)
  ATLAS_FAULT_COPY,        // every h2d/d2h/d2d copy, sync or async
  ATLAS_FAULT_STREAM,      // stream_create
  ATLAS_FAULT_EVENT,       // event_create
  ATLAS_FAULT_LAUNCH,      // launch, launch_typed, launch_graph, matmul
  ATLAS_FAULT_HOST_ALLOC,  // pinned_alloc (host memory)
  // free, pinned_free of a live allocation: the device's release is not
  // called (as if it refused), so the allocation stays live on the ledger.
  ATLAS_FAULT_FREE,
  // all_reduce, all_gather, broadcast, argmax of a communicator
  // (runtime/parallel), counted on the rank's backend.
  ATLAS_FAULT_COLLECTIVE,
  ATLAS_FAULT_KIND_COUNT,
} atlas_fault_kind;

// "alloc", "copy", "stream", "event", "launch", "host-alloc", "free",
// "collective".
const char *atlas_fault_kind_name(atlas_fault_kind kind);

// Counters and armed points of one backend; updated with atomics.
typedef struct atlas_fault_state {
  uint64_t count[ATLAS_FAULT_KIND_COUNT];    // operations attempted so far
  uint64_t fail_at[ATLAS_FAULT_KIND_COUNT];  // op number to fail (0: none)
} atlas_fault_state;

// Clears `faults` and arms what ATLAS_FAULT asks for; INVALID_ARGUMENT
// quoting the variable when it does not parse.
ATLAS_MUST_USE atlas_status atlas_fault_read_env(atlas_fault_state *faults);
// Counts one operation of `kind`; ABORTED naming `what` and `owner` (the
// backend) if it is the armed one. Lock-free, thread-safe.
ATLAS_MUST_USE atlas_status atlas_fault_check(atlas_fault_state *faults,
                                              atlas_fault_kind kind,
                                              const char *what,
                                              const char *owner);
// Arms the k-th operation of `kind` from now (k >= 1); k == 0 disarms.
void atlas_fault_arm(atlas_fault_state *faults, atlas_fault_kind kind,
                     uint64_t k);
// Operations of `kind` attempted so far.
uint64_t atlas_fault_count(const atlas_fault_state *faults,
                           atlas_fault_kind kind);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_FAULT_H_
