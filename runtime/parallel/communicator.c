// The communicator's front door: argument checks, the `collective` fault
// point of the rank's backend, the abort latch; then the implementation.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "atlas/runtime/parallel/comm_impl.h"

size_t atlas_comm_type_size(atlas_comm_type type) {
  return type == ATLAS_COMM_F32 ? 4 : 2;
}

const char *atlas_comm_type_name(atlas_comm_type type) {
  switch (type) {
    case ATLAS_COMM_F32:
      return "f32";
    case ATLAS_COMM_F16:
      return "f16";
    case ATLAS_COMM_BF16:
      return "bf16";
  }
  return "?";
}

int atlas_comm_ranks(const atlas_comm *c) { return c->ranks; }
const char *atlas_comm_name(const atlas_comm *c) { return c->name; }

atlas_backend *atlas_comm_backend(const atlas_comm *c, int rank) {
  return rank >= 0 && rank < c->ranks ? c->backends[rank] : NULL;
}

bool atlas_comm_aborted(const atlas_comm *c) {
  return __atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE);
}

atlas_status atlas_comm_base_init(atlas_comm *c, const atlas_comm_vtable *vt,
                                  const char *name, int ranks,
                                  atlas_backend *const *backends) {
  memset(c, 0, sizeof(*c));
  if (ranks < 1 || ranks > ATLAS_COMM_MAX_RANKS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s communicator: %d ranks (1 to %d)", name, ranks,
                             ATLAS_COMM_MAX_RANKS);
  }
  for (int r = 0; r < ranks; ++r) {
    if (backends == NULL || backends[r] == NULL) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s communicator: rank %d has no backend", name,
                               r);
    }
    c->backends[r] = backends[r];
  }
  c->vtable = vt;
  c->name = name;
  c->ranks = ranks;
  pthread_mutex_init(&c->abort_mutex, NULL);
  return ATLAS_OK;
}

void atlas_comm_base_deinit(atlas_comm *c) {
  pthread_mutex_destroy(&c->abort_mutex);
}

atlas_status atlas_comm_aborted_status(atlas_comm *c, const char *what,
                                       int rank) {
  pthread_mutex_lock(&c->abort_mutex);
  atlas_status s = atlas_status_make(
      ATLAS_STATUS_ABORTED,
      "%s on rank %d of %d: the %s communicator was aborted (%s)", what, rank,
      c->ranks, c->name, c->why);
  pthread_mutex_unlock(&c->abort_mutex);
  return s;
}

void atlas_comm_abort(atlas_comm *c, int rank, const char *why) {
  if (c == NULL) return;
  pthread_mutex_lock(&c->abort_mutex);
  bool first = !c->aborted;
  if (first) {
    snprintf(c->why, sizeof(c->why), "rank %d: %s", rank,
             why != NULL ? why : "no reason given");
    __atomic_store_n(&c->aborted, true, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&c->abort_mutex);
  if (first && c->vtable->on_abort != NULL) c->vtable->on_abort(c);
}

// The checks every collective shares; on an injected fault the
// communicator is aborted, so the peers waiting for this rank fail too.
static atlas_status enter(atlas_comm *c, int rank, const char *what,
                          size_t count, atlas_comm_type type) {
  if (c == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: no communicator", what);
  }
  if (rank < 0 || rank >= c->ranks) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: rank %d of a communicator of %d ranks", what,
                             rank, c->ranks);
  }
  if (count == 0 || (int)type < 0 || type > ATLAS_COMM_BF16) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s on rank %d: %zu elements of type %d", what,
                             rank, count, (int)type);
  }
  if (atlas_comm_aborted(c)) return atlas_comm_aborted_status(c, what, rank);
  atlas_status fault = atlas_backend_fault_point(c->backends[rank],
                                                 ATLAS_FAULT_COLLECTIVE, what);
  if (fault != ATLAS_OK) {
    atlas_comm_abort(c, rank, atlas_status_message(fault));
    return fault;
  }
  return ATLAS_OK;
}

// An implementation's failure aborts the communicator as well: the peers
// would otherwise wait for a contribution that never comes.
static atlas_status leave(atlas_comm *c, int rank, atlas_status s) {
  if (s != ATLAS_OK && !atlas_comm_aborted(c)) {
    atlas_comm_abort(c, rank, atlas_status_message(s));
  }
  return s;
}

atlas_status atlas_comm_all_reduce_sum(atlas_comm *c, int rank,
                                       atlas_stream *stream, void *buf,
                                       size_t count, atlas_comm_type type) {
  ATLAS_RETURN_IF_ERROR(enter(c, rank, "all_reduce", count, type));
  if (buf == NULL) {
    return leave(c, rank,
                 atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                   "all_reduce on rank %d: NULL buffer", rank));
  }
  return leave(c, rank,
               c->vtable->all_reduce_sum(c, rank, stream, buf, count, type));
}

atlas_status atlas_comm_all_gather(atlas_comm *c, int rank,
                                   atlas_stream *stream, const void *send,
                                   void *recv, size_t count,
                                   atlas_comm_type type) {
  ATLAS_RETURN_IF_ERROR(enter(c, rank, "all_gather", count, type));
  if (send == NULL || recv == NULL) {
    return leave(c, rank,
                 atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                   "all_gather on rank %d: NULL %s", rank,
                                   send == NULL ? "send buffer"
                                                : "receive "
                                                  "buffer"));
  }
  return leave(c, rank,
               c->vtable->all_gather(c, rank, stream, send, recv, count, type));
}

atlas_status atlas_comm_broadcast(atlas_comm *c, int rank, atlas_stream *stream,
                                  void *buf, size_t count, atlas_comm_type type,
                                  int root) {
  ATLAS_RETURN_IF_ERROR(enter(c, rank, "broadcast", count, type));
  if (buf == NULL || root < 0 || root >= c->ranks) {
    return leave(c, rank,
                 atlas_status_make(
                     ATLAS_STATUS_INVALID_ARGUMENT,
                     "broadcast on rank %d: %s (root %d of %d)", rank,
                     buf == NULL ? "NULL buffer" : "no root", root, c->ranks));
  }
  return leave(c, rank,
               c->vtable->broadcast(c, rank, stream, buf, count, type, root));
}

atlas_status atlas_comm_argmax(atlas_comm *c, int rank, atlas_stream *stream,
                               float value, uint32_t index, float *out_value,
                               uint32_t *out_index) {
  ATLAS_RETURN_IF_ERROR(enter(c, rank, "argmax", 1, ATLAS_COMM_F32));
  if (out_value == NULL || out_index == NULL || isnan(value)) {
    return leave(c, rank,
                 atlas_status_make(
                     ATLAS_STATUS_INVALID_ARGUMENT, "argmax on rank %d: %s",
                     rank, isnan(value) ? "its value is NaN" : "NULL output"));
  }
  return leave(
      c, rank,
      c->vtable->argmax(c, rank, stream, value, index, out_value, out_index));
}

atlas_status atlas_comm_destroy(atlas_comm *c) {
  if (c == NULL) return ATLAS_OK;
  return c->vtable->destroy(c);
}
