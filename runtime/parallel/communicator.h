// A communicator: the collectives of N ranks (one backend each) that a
// model split over devices needs. One per model, created with it and
// destroyed by its teardown; nothing about it is global.
//
// The contract is NCCL's: every rank calls the same collectives in the same
// order, each from its own thread, on buffers of its own backend; a
// collective returns when every rank has contributed (on the host) or is
// queued on the rank's stream (NCCL). Implementations: comm_host.h (N ranks
// in one process, buffers of any backend staged through the host) and
// comm_nccl.h (NCCL, loaded at run time).
//
// A rank that fails (an injected `collective` fault, a kernel before the
// collective) aborts the communicator: every rank waiting in a collective,
// and every later collective, fails with ABORTED naming the first failure.
// An aborted communicator is only good for destroy.
#ifndef ATLAS_RUNTIME_PARALLEL_COMMUNICATOR_H_
#define ATLAS_RUNTIME_PARALLEL_COMMUNICATOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_comm atlas_comm;

// The most ranks a communicator (and a model's split) has.
enum { ATLAS_COMM_MAX_RANKS = 64 };

// Element types of a collective: f32 and the decoder's 16-bit types.
// Sums of 16-bit values are formed in f32 and rounded once (host) or as
// NCCL does.
typedef enum atlas_comm_type {
  ATLAS_COMM_F32 = 0,
  ATLAS_COMM_F16,
  ATLAS_COMM_BF16,
} atlas_comm_type;

size_t atlas_comm_type_size(atlas_comm_type type);
const char *atlas_comm_type_name(atlas_comm_type type);

// Ranks, the implementation's name ("host", "nccl") and rank r's backend.
int atlas_comm_ranks(const atlas_comm *c);
const char *atlas_comm_name(const atlas_comm *c);
atlas_backend *atlas_comm_backend(const atlas_comm *c, int rank);
// Whether a rank aborted it (then every collective fails).
bool atlas_comm_aborted(const atlas_comm *c);

// buf[0..count) = the sum over ranks of every rank's buf, in place, on
// rank's backend, ordered on `stream` (NULL: the backend's default).
ATLAS_MUST_USE atlas_status atlas_comm_all_reduce_sum(atlas_comm *c, int rank,
                                                      atlas_stream *stream,
                                                      void *buf, size_t count,
                                                      atlas_comm_type type);
// recv[r * count .. (r + 1) * count) = rank r's send[0..count), on every rank.
ATLAS_MUST_USE atlas_status atlas_comm_all_gather(atlas_comm *c, int rank,
                                                  atlas_stream *stream,
                                                  const void *send, void *recv,
                                                  size_t count,
                                                  atlas_comm_type type);
// buf[0..count) = rank root's buf, on every rank.
ATLAS_MUST_USE atlas_status atlas_comm_broadcast(atlas_comm *c, int rank,
                                                 atlas_stream *stream,
                                                 void *buf, size_t count,
                                                 atlas_comm_type type,
                                                 int root);
// The greatest `value` over ranks and its `index` (a tie: the lowest index,
// as an argmax over the whole vector picks the first), from every rank's
// (value, index) on the host. Synchronous: the rank's stream is waited for.
// A NaN value is INVALID_ARGUMENT naming the rank.
ATLAS_MUST_USE atlas_status atlas_comm_argmax(atlas_comm *c, int rank,
                                              atlas_stream *stream, float value,
                                              uint32_t index, float *out_value,
                                              uint32_t *out_index);

// Marks the communicator aborted by `rank` because of `why` (copied) and
// wakes every rank waiting in a collective. The first abort's reason wins.
void atlas_comm_abort(atlas_comm *c, int rank, const char *why);

// Releases the communicator (NCCL: aborted communicators with
// ncclCommAbort, so a peer stuck in a collective cannot hang it) and every
// buffer it made on the ranks' backends. The backends stay. NULL is OK.
ATLAS_MUST_USE atlas_status atlas_comm_destroy(atlas_comm *c);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_PARALLEL_COMMUNICATOR_H_
