// Our own declarations of the slice of NCCL's API that Atlas uses, so that
// nothing needs NCCL's headers: the library is opened at run time. Values
// and signatures are copied from nccl.h (NCCL 2.x, whose ABI is stable
// across 2.x: libnccl.so.2).
#ifndef ATLAS_RUNTIME_PARALLEL_NCCL_API_H_
#define ATLAS_RUNTIME_PARALLEL_NCCL_API_H_

#include <stddef.h>

#include "atlas/runtime/cuda/cuda_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;  // ncclSuccess = 0
enum { ncclSuccess = 0, ncclInProgress = 7 };

typedef int ncclDataType_t;
enum {
  ncclUint8 = 1,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclBfloat16 = 9,
};
typedef int ncclRedOp_t;
enum { ncclSum = 0 };

// X(return, field, "symbol", (parameters))
#define ATLAS_NCCL_ENTRY_POINTS(X)                                           \
  X(ncclResult_t, get_version, "ncclGetVersion", (int *version))             \
  X(const char *, error_string, "ncclGetErrorString", (ncclResult_t result)) \
  X(ncclResult_t, comm_init_all, "ncclCommInitAll",                          \
    (ncclComm_t * comms, int ndev, const int *devlist))                      \
  X(ncclResult_t, comm_destroy, "ncclCommDestroy", (ncclComm_t comm))        \
  X(ncclResult_t, comm_abort, "ncclCommAbort", (ncclComm_t comm))            \
  X(ncclResult_t, all_reduce, "ncclAllReduce",                               \
    (const void *send, void *recv, size_t count, ncclDataType_t type,        \
     ncclRedOp_t op, ncclComm_t comm, CUstream stream))                      \
  X(ncclResult_t, all_gather, "ncclAllGather",                               \
    (const void *send, void *recv, size_t count, ncclDataType_t type,        \
     ncclComm_t comm, CUstream stream))                                      \
  X(ncclResult_t, broadcast, "ncclBroadcast",                                \
    (const void *send, void *recv, size_t count, ncclDataType_t type,        \
     int root, ncclComm_t comm, CUstream stream))

// X-macro: `ret` is a type, `params` a parenthesized parameter list and
// `field` a declarator name; none can take the extra parentheses
// bugprone-macro-parentheses asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ATLAS_NCCL_FIELD_(ret, field, symbol, params) ret(*field) params;
// NOLINTEND(bugprone-macro-parentheses)
typedef struct atlas_nccl_api {
  ATLAS_NCCL_ENTRY_POINTS(ATLAS_NCCL_FIELD_)
} atlas_nccl_api;
#undef ATLAS_NCCL_FIELD_

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_PARALLEL_NCCL_API_H_
