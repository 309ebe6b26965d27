// The NCCL communicator: libnccl.so.2 opened with dlopen when a model asks
// for more than one CUDA device, so Atlas builds and runs without NCCL.
// One ncclComm_t per rank, made together (ncclCommInitAll: one process, a
// thread per GPU); each rank's collectives are queued on its backend's
// stream and so can be captured into its decode graph.
#ifndef ATLAS_RUNTIME_PARALLEL_COMM_NCCL_H_
#define ATLAS_RUNTIME_PARALLEL_COMM_NCCL_H_

#include "atlas/runtime/parallel/communicator.h"

#ifdef __cplusplus
extern "C" {
#endif

// The library the communicator opens unless told otherwise.
#define ATLAS_NCCL_LIBRARY "libnccl.so.2"

// A communicator over the CUDA backends[0..ranks), on CUDA devices
// devices[0..ranks). `library` NULL: ATLAS_NCCL_LIBRARY. Where the library
// does not open: UNAVAILABLE naming it, why, and where it comes from; a
// backend that is not a CUDA backend: INVALID_ARGUMENT naming the rank.
ATLAS_MUST_USE atlas_status atlas_comm_nccl_create(
    int ranks, atlas_backend *const *backends, const int *devices,
    const char *library, atlas_comm **out_comm);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_PARALLEL_COMM_NCCL_H_
