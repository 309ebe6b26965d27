// The in-process communicator (comm_host.h): a rendezvous of N threads
// under one mutex; the last to arrive combines in rank order.
#include "atlas/runtime/parallel/comm_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/parallel/comm_impl.h"

typedef enum host_op {
  OP_ALL_REDUCE = 0,
  OP_ALL_GATHER,
  OP_BROADCAST,
  OP_ARGMAX,
} host_op;

static const char *op_name(host_op op) {
  static const char *const kNames[] = {"all_reduce", "all_gather", "broadcast",
                                       "argmax"};
  return kNames[op];
}

// What a rank brought to the current collective.
typedef struct host_slot {
  void *data;  // the staged input (count elements)
  size_t cap;
  host_op op;
  size_t count;
  atlas_comm_type type;
  int root;
  float value;
  uint32_t index;
} host_slot;

typedef struct host_comm {
  atlas_comm base;  // first
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int arrived;
  uint64_t generation;  // collectives completed
  host_slot slots[ATLAS_COMM_MAX_RANKS];
  void *result;  // the combined result, read by every rank after the wake
  size_t result_cap;
  float best_value;
  uint32_t best_index;
} host_comm;

static atlas_status grow(void **buf, size_t *cap, size_t bytes,
                         const char *what) {
  if (*cap >= bytes) return ATLAS_OK;
  void *p = realloc(*buf, bytes);
  if (p == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host communicator: %zu bytes for %s", bytes,
                             what);
  }
  *buf = p;
  *cap = bytes;
  return ATLAS_OK;
}

static float load(const void *p, size_t i, atlas_comm_type t) {
  if (t == ATLAS_COMM_F32) return ((const float *)p)[i];
  uint16_t bits = ((const uint16_t *)p)[i];
  return t == ATLAS_COMM_F16 ? atlas_f16_to_f32(bits) : atlas_bf16_to_f32(bits);
}

static void store(void *p, size_t i, atlas_comm_type t, float v) {
  if (t == ATLAS_COMM_F32) {
    ((float *)p)[i] = v;
  } else {
    ((uint16_t *)p)[i] =
        t == ATLAS_COMM_F16 ? atlas_f32_to_f16(v) : atlas_f32_to_bf16(v);
  }
}

// Whether every slot asks for what slot 0 asks for; else a message.
static bool agree(const host_comm *h, char *why, size_t why_size) {
  const host_slot *a = &h->slots[0];
  for (int r = 1; r < h->base.ranks; ++r) {
    const host_slot *b = &h->slots[r];
    if (b->op != a->op || b->count != a->count || b->type != a->type ||
        b->root != a->root) {
      snprintf(why, why_size,
               "ranks disagree: rank 0 called %s of %zu %s (root %d), rank %d "
               "%s of %zu %s (root %d)",
               op_name(a->op), a->count, atlas_comm_type_name(a->type), a->root,
               r, op_name(b->op), b->count, atlas_comm_type_name(b->type),
               b->root);
      return false;
    }
  }
  return true;
}

// The last rank to arrive: every slot is filled and nobody reads `result`.
static atlas_status combine(host_comm *h) {
  const host_slot *s0 = &h->slots[0];
  int n = h->base.ranks;
  size_t elem = atlas_comm_type_size(s0->type);
  size_t out = s0->op == OP_ALL_GATHER ? s0->count * (size_t)n : s0->count;
  if (s0->op == OP_ARGMAX) {
    h->best_value = s0->value;
    h->best_index = s0->index;
    for (int r = 1; r < n; ++r) {
      const host_slot *s = &h->slots[r];
      if (s->value > h->best_value ||
          (s->value == h->best_value && s->index < h->best_index)) {
        h->best_value = s->value;
        h->best_index = s->index;
      }
    }
    return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(grow(&h->result, &h->result_cap, out * elem, "result"));
  if (s0->op == OP_ALL_GATHER) {
    for (int r = 0; r < n; ++r) {
      memcpy((char *)h->result + (size_t)r * s0->count * elem, h->slots[r].data,
             s0->count * elem);
    }
  } else if (s0->op == OP_BROADCAST) {
    memcpy(h->result, h->slots[s0->root].data, out * elem);
  } else {
    // In rank order, in f32, rounded once: the same bits on every rank.
    for (size_t i = 0; i < out; ++i) {
      float sum = load(h->slots[0].data, i, s0->type);
      for (int r = 1; r < n; ++r) sum += load(h->slots[r].data, i, s0->type);
      store(h->result, i, s0->type, sum);
    }
  }
  return ATLAS_OK;
}

// Arrives with slot[rank] filled; returns once the collective completed
// (every rank's result ready in h->result) or the communicator aborted.
static atlas_status rendezvous(host_comm *h, int rank) {
  atlas_comm *c = &h->base;
  const char *what = op_name(h->slots[rank].op);
  pthread_mutex_lock(&h->mutex);
  if (atlas_comm_aborted(c)) {
    pthread_mutex_unlock(&h->mutex);
    return atlas_comm_aborted_status(c, what, rank);
  }
  uint64_t gen = h->generation;
  if (++h->arrived == c->ranks) {
    char why[400];
    atlas_status s = ATLAS_OK;
    if (!agree(h, why, sizeof(why))) {
      s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s on rank %d: %s",
                            what, rank, why);
    } else {
      s = combine(h);
    }
    if (s == ATLAS_OK) {
      h->arrived = 0;
      h->generation++;
      pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->mutex);
    return s;  // a failure aborts the communicator at the front door
  }
  while (h->generation == gen && !atlas_comm_aborted(c)) {
    pthread_cond_wait(&h->cond, &h->mutex);
  }
  bool done = h->generation != gen;
  pthread_mutex_unlock(&h->mutex);
  return done ? ATLAS_OK : atlas_comm_aborted_status(c, what, rank);
}

// Stages `count` elements of the rank's buffer and fills its slot.
static atlas_status arrive(host_comm *h, int rank, atlas_stream *s, host_op op,
                           const void *src, size_t count, atlas_comm_type t,
                           int root) {
  host_slot *slot = &h->slots[rank];
  size_t bytes = count * atlas_comm_type_size(t);
  ATLAS_RETURN_IF_ERROR(grow(&slot->data, &slot->cap, bytes, op_name(op)));
  ATLAS_RETURN_IF_ERROR(atlas_backend_d2h_on_stream(h->base.backends[rank],
                                                    slot->data, src, bytes, s));
  slot->op = op;
  slot->count = count;
  slot->type = t;
  slot->root = root;
  return rendezvous(h, rank);
}

static atlas_status host_all_reduce(atlas_comm *c, int rank, atlas_stream *s,
                                    void *buf, size_t count,
                                    atlas_comm_type t) {
  host_comm *h = (host_comm *)c;
  ATLAS_RETURN_IF_ERROR(arrive(h, rank, s, OP_ALL_REDUCE, buf, count, t, 0));
  return atlas_backend_h2d(c->backends[rank], buf, h->result,
                           count * atlas_comm_type_size(t));
}

static atlas_status host_all_gather(atlas_comm *c, int rank, atlas_stream *s,
                                    const void *send, void *recv, size_t count,
                                    atlas_comm_type t) {
  host_comm *h = (host_comm *)c;
  ATLAS_RETURN_IF_ERROR(arrive(h, rank, s, OP_ALL_GATHER, send, count, t, 0));
  return atlas_backend_h2d(c->backends[rank], recv, h->result,
                           count * (size_t)c->ranks * atlas_comm_type_size(t));
}

static atlas_status host_broadcast(atlas_comm *c, int rank, atlas_stream *s,
                                   void *buf, size_t count, atlas_comm_type t,
                                   int root) {
  host_comm *h = (host_comm *)c;
  ATLAS_RETURN_IF_ERROR(arrive(h, rank, s, OP_BROADCAST, buf, count, t, root));
  if (rank == root) return ATLAS_OK;
  return atlas_backend_h2d(c->backends[rank], buf, h->result,
                           count * atlas_comm_type_size(t));
}

static atlas_status host_argmax(atlas_comm *c, int rank, atlas_stream *s,
                                float value, uint32_t index, float *out_value,
                                uint32_t *out_index) {
  host_comm *h = (host_comm *)c;
  (void)s;  // the values are the host's already
  host_slot *slot = &h->slots[rank];
  slot->op = OP_ARGMAX;
  slot->count = 1;
  slot->type = ATLAS_COMM_F32;
  slot->root = 0;
  slot->value = value;
  slot->index = index;
  ATLAS_RETURN_IF_ERROR(rendezvous(h, rank));
  // Stable until every rank, this one included, arrives at the next one.
  *out_value = h->best_value;
  *out_index = h->best_index;
  return ATLAS_OK;
}

static void host_on_abort(atlas_comm *c) {
  host_comm *h = (host_comm *)c;
  pthread_mutex_lock(&h->mutex);
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->mutex);
}

static atlas_status host_destroy(atlas_comm *c) {
  host_comm *h = (host_comm *)c;
  for (int r = 0; r < c->ranks; ++r) free(h->slots[r].data);
  free(h->result);
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->mutex);
  atlas_comm_base_deinit(c);
  free(h);
  return ATLAS_OK;
}

static const atlas_comm_vtable kHostVtable = {
    .all_reduce_sum = host_all_reduce,
    .all_gather = host_all_gather,
    .broadcast = host_broadcast,
    .argmax = host_argmax,
    .on_abort = host_on_abort,
    .destroy = host_destroy,
};

atlas_status atlas_comm_host_create(int ranks, atlas_backend *const *backends,
                                    atlas_comm **out_comm) {
  *out_comm = NULL;
  host_comm *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host communicator of %d ranks", ranks);
  }
  atlas_status s =
      atlas_comm_base_init(&h->base, &kHostVtable, "host", ranks, backends);
  if (s != ATLAS_OK) {
    free(h);
    return s;
  }
  pthread_mutex_init(&h->mutex, NULL);
  pthread_cond_init(&h->cond, NULL);
  *out_comm = &h->base;
  return ATLAS_OK;
}
