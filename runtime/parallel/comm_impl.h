// For communicator implementers: the vtable and the state every
// communicator shares. The front door (communicator.c) checks arguments,
// counts the `collective` fault point on the rank's backend and refuses an
// aborted communicator; an entry is reached only with checked arguments.
#ifndef ATLAS_RUNTIME_PARALLEL_COMM_IMPL_H_
#define ATLAS_RUNTIME_PARALLEL_COMM_IMPL_H_

#include <pthread.h>

#include "atlas/runtime/parallel/communicator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_comm_vtable {
  atlas_status (*all_reduce_sum)(atlas_comm *c, int rank, atlas_stream *s,
                                 void *buf, size_t count, atlas_comm_type t);
  atlas_status (*all_gather)(atlas_comm *c, int rank, atlas_stream *s,
                             const void *send, void *recv, size_t count,
                             atlas_comm_type t);
  atlas_status (*broadcast)(atlas_comm *c, int rank, atlas_stream *s, void *buf,
                            size_t count, atlas_comm_type t, int root);
  atlas_status (*argmax)(atlas_comm *c, int rank, atlas_stream *s, float value,
                         uint32_t index, float *out_value, uint32_t *out_index);
  // After the front door marked it aborted: wake waiters (host), abort the
  // library's communicators (NCCL). May be NULL.
  void (*on_abort)(atlas_comm *c);
  // Releases everything, then atlas_comm_base_deinit and free.
  atlas_status (*destroy)(atlas_comm *c);
} atlas_comm_vtable;

struct atlas_comm {
  const atlas_comm_vtable *vtable;
  const char *name;
  int ranks;
  atlas_backend *backends[ATLAS_COMM_MAX_RANKS];  // borrowed
  pthread_mutex_t abort_mutex;                    // guards why
  bool aborted;                                   // atomics
  char why[512];                                  // the first abort's reason
};

// Fills the shared part; INVALID_ARGUMENT naming the count or the rank
// whose backend is NULL.
ATLAS_MUST_USE atlas_status atlas_comm_base_init(
    atlas_comm *c, const atlas_comm_vtable *vt, const char *name, int ranks,
    atlas_backend *const *backends);
void atlas_comm_base_deinit(atlas_comm *c);

// ABORTED quoting the first abort's reason (for implementations whose
// waiters wake on an abort).
ATLAS_MUST_USE atlas_status atlas_comm_aborted_status(atlas_comm *c,
                                                      const char *what,
                                                      int rank);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_PARALLEL_COMM_IMPL_H_
