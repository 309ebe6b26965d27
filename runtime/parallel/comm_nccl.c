// The NCCL communicator (comm_nccl.h): the library opened per communicator
// (no process-wide handle), its entry points in a table it owns.
#include "atlas/runtime/parallel/comm_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/parallel/comm_impl.h"
#include "atlas/runtime/parallel/nccl_api.h"

typedef struct nccl_comm {
  atlas_comm base;  // first
  void *library;
  char library_name[256];
  atlas_nccl_api api;
  ncclComm_t comms[ATLAS_COMM_MAX_RANKS];
  // Per rank: (value, index) pairs for argmax, (1 + ranks) of them, on the
  // rank's backend (ledgered), made at the first argmax.
  void *pairs[ATLAS_COMM_MAX_RANKS];
} nccl_comm;

typedef struct pair {
  float value;
  uint32_t index;
} pair;

static atlas_status check(const nccl_comm *n, ncclResult_t r, const char *what,
                          int rank) {
  if (r == ncclSuccess) return ATLAS_OK;
  const char *text = n->api.error_string ? n->api.error_string(r) : NULL;
  return atlas_status_make(
      ATLAS_STATUS_INTERNAL, "%s on rank %d of %d failed: %s (NCCL %d) [%s]",
      what, rank, n->base.ranks, text != NULL ? text : "NCCL error", r,
      n->library_name);
}

static ncclDataType_t nccl_type(atlas_comm_type t) {
  return t == ATLAS_COMM_F32   ? ncclFloat32
         : t == ATLAS_COMM_F16 ? ncclFloat16
                               : ncclBfloat16;
}

static CUstream stream_of(atlas_comm *c, int rank, atlas_stream *s) {
  return atlas_cuda_backend_raw_stream(c->backends[rank], s);
}

static atlas_status nccl_all_reduce(atlas_comm *c, int rank, atlas_stream *s,
                                    void *buf, size_t count,
                                    atlas_comm_type t) {
  nccl_comm *n = (nccl_comm *)c;
  return check(n,
               n->api.all_reduce(buf, buf, count, nccl_type(t), ncclSum,
                                 n->comms[rank], stream_of(c, rank, s)),
               "ncclAllReduce", rank);
}

static atlas_status nccl_all_gather(atlas_comm *c, int rank, atlas_stream *s,
                                    const void *send, void *recv, size_t count,
                                    atlas_comm_type t) {
  nccl_comm *n = (nccl_comm *)c;
  return check(n,
               n->api.all_gather(send, recv, count, nccl_type(t),
                                 n->comms[rank], stream_of(c, rank, s)),
               "ncclAllGather", rank);
}

static atlas_status nccl_broadcast(atlas_comm *c, int rank, atlas_stream *s,
                                   void *buf, size_t count, atlas_comm_type t,
                                   int root) {
  nccl_comm *n = (nccl_comm *)c;
  return check(n,
               n->api.broadcast(buf, buf, count, nccl_type(t), root,
                                n->comms[rank], stream_of(c, rank, s)),
               "ncclBroadcast", rank);
}

// NCCL has no argmax: every rank's (value, index) pair is gathered on every
// rank, read back, and the best picked on the host in rank order.
static atlas_status nccl_argmax(atlas_comm *c, int rank, atlas_stream *s,
                                float value, uint32_t index, float *out_value,
                                uint32_t *out_index) {
  nccl_comm *n = (nccl_comm *)c;
  atlas_backend *b = c->backends[rank];
  size_t bytes = sizeof(pair) * (size_t)(1 + c->ranks);
  if (n->pairs[rank] == NULL) {
    ATLAS_RETURN_IF_ERROR(atlas_backend_alloc(b, bytes, &n->pairs[rank]));
  }
  pair mine = {value, index};
  pair all[ATLAS_COMM_MAX_RANKS];
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_h2d_async(b, n->pairs[rank], &mine, sizeof(mine), s));
  ATLAS_RETURN_IF_ERROR(
      check(n,
            n->api.all_gather(n->pairs[rank], (pair *)n->pairs[rank] + 1,
                              sizeof(pair), ncclUint8, n->comms[rank],
                              stream_of(c, rank, s)),
            "ncclAllGather (argmax)", rank));
  ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(
      b, all, (pair *)n->pairs[rank] + 1, sizeof(pair) * (size_t)c->ranks, s));
  pair best = all[0];
  for (int r = 1; r < c->ranks; ++r) {
    if (all[r].value > best.value ||
        (all[r].value == best.value && all[r].index < best.index)) {
      best = all[r];
    }
  }
  *out_value = best.value;
  *out_index = best.index;
  return ATLAS_OK;
}

// A rank failed: the others may be blocked in a collective on the device
// that will never complete; ncclCommAbort releases them.
static void nccl_on_abort(atlas_comm *c) {
  nccl_comm *n = (nccl_comm *)c;
  for (int r = 0; r < c->ranks; ++r) {
    if (n->comms[r] != NULL) {
      (void)n->api.comm_abort(n->comms[r]);
      n->comms[r] = NULL;
    }
  }
}

static atlas_status nccl_destroy(atlas_comm *c) {
  nccl_comm *n = (nccl_comm *)c;
  atlas_status status = ATLAS_OK;
  for (int r = 0; r < c->ranks; ++r) {
    if (n->pairs[r] != NULL) {
      status = atlas_status_join(
          status, atlas_backend_free(c->backends[r], n->pairs[r]));
    }
    if (n->comms[r] != NULL) {
      status = atlas_status_join(
          status,
          check(n, n->api.comm_destroy(n->comms[r]), "ncclCommDestroy", r));
    }
  }
  if (n->library != NULL) dlclose(n->library);
  atlas_comm_base_deinit(c);
  free(n);
  return status;
}

static const atlas_comm_vtable kNcclVtable = {
    .all_reduce_sum = nccl_all_reduce,
    .all_gather = nccl_all_gather,
    .broadcast = nccl_broadcast,
    .argmax = nccl_argmax,
    .on_abort = nccl_on_abort,
    .destroy = nccl_destroy,
};

static atlas_status open_library(nccl_comm *n, const char *library, int ranks) {
  snprintf(n->library_name, sizeof(n->library_name), "%s", library);
  dlerror();
  n->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (n->library == NULL) {
    const char *e = dlerror();
    return atlas_status_make(
        ATLAS_STATUS_UNAVAILABLE,
        "tensor parallel %d on CUDA needs NCCL, and %s does not open (%s): "
        "install it (Debian/Ubuntu: libnccl2 from NVIDIA's CUDA repository; "
        "pip: nvidia-nccl-cu12, whose lib/ goes on LD_LIBRARY_PATH)",
        ranks, library, e != NULL ? e : "dlopen failed");
  }
#define ATLAS_NCCL_RESOLVE_(ret, field, symbol, params)                        \
  {                                                                            \
    void *sym_ = dlsym(n->library, symbol);                                    \
    if (sym_ == NULL) {                                                        \
      return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,                       \
                               "%s does not export %s: not an NCCL 2.x Atlas " \
                               "can use",                                      \
                               library, symbol);                               \
    }                                                                          \
    memcpy(&n->api.field, &sym_, sizeof(sym_));                                \
  }
  ATLAS_NCCL_ENTRY_POINTS(ATLAS_NCCL_RESOLVE_)
#undef ATLAS_NCCL_RESOLVE_
  return ATLAS_OK;
}

atlas_status atlas_comm_nccl_create(int ranks, atlas_backend *const *backends,
                                    const int *devices, const char *library,
                                    atlas_comm **out_comm) {
  *out_comm = NULL;
  nccl_comm *n = calloc(1, sizeof(*n));
  if (n == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "NCCL communicator of %d ranks", ranks);
  }
  atlas_status s =
      atlas_comm_base_init(&n->base, &kNcclVtable, "nccl", ranks, backends);
  if (s != ATLAS_OK) {
    free(n);
    return s;
  }
  // The library first: its absence is what a user most often meets.
  s = open_library(n, library != NULL ? library : ATLAS_NCCL_LIBRARY, ranks);
  for (int r = 0; s == ATLAS_OK && r < ranks; ++r) {
    const atlas_cuda_driver *driver = NULL;
    CUcontext context = NULL;
    atlas_status raw = atlas_cuda_backend_raw(backends[r], &driver, &context);
    if (raw != ATLAS_OK) {
      atlas_status_free(raw);
      s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                            "NCCL communicator: rank %d's backend %s is not a "
                            "CUDA backend",
                            r, atlas_backend_name(backends[r]));
    }
  }
  if (s == ATLAS_OK && devices == NULL) {
    s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                          "NCCL communicator: no device list");
  }
  if (s == ATLAS_OK) {
    s = check(n, n->api.comm_init_all(n->comms, ranks, devices),
              "ncclCommInitAll", 0);
    // A failed init leaves nothing to destroy.
    if (s != ATLAS_OK) memset(n->comms, 0, sizeof(n->comms));
  }
  if (s != ATLAS_OK) {
    atlas_status_free(nccl_destroy(&n->base));
    return s;
  }
  *out_comm = &n->base;
  return ATLAS_OK;
}
