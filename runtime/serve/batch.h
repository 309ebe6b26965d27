// The step API: sequences over a model's paged KV pool, and one forward
// over any mix of them.
//
// An engine is made per model (it owns the pool, kv_pool.h). A sequence owns
// its block table, its length and its tokens; it can be forked (sharing
// every block, copied on the first write into a shared one) and freed while
// others run. A step takes, per sequence, a chunk of new tokens (a prompt
// chunk or one generated token) and runs ONE forward over all of them
// (atlas_arch.forward_batch), returning each sequence's last row's logits
// and/or the argmax computed on the device.
//
// Not thread-safe: one thread drives an engine (the scheduler's driving
// thread, or an embedder's).
#ifndef ATLAS_RUNTIME_SERVE_BATCH_H_
#define ATLAS_RUNTIME_SERVE_BATCH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/kv_pool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_batch_engine atlas_batch_engine;
typedef struct atlas_batch_seq atlas_batch_seq;

typedef struct atlas_batch_engine_options {
  // Bytes of the KV pool; 0: what fits beside the weights (CUDA: the
  // device's free memory less a margin, within the model's device budget;
  // host: max_running sequences of max_seq positions).
  uint64_t kv_budget_bytes;
  uint32_t block_tokens;  // 0: 16
  bool prefix_cache;
  // For the host default budget: sequences of max_seq positions (0: 8).
  size_t default_sequences;
} atlas_batch_engine_options;

// UNIMPLEMENTED when the model's architecture has no batch step;
// RESOURCE_EXHAUSTED when the budget holds less than one sequence of the
// model's positions.
ATLAS_MUST_USE atlas_status atlas_batch_engine_create(
    atlas_model *model, const atlas_batch_engine_options *options,
    atlas_batch_engine **out_engine);
// Frees every sequence still alive (their handles go).
void atlas_batch_seq_free_all(atlas_batch_engine *e);
// Frees the pool. Sequences still alive are freed first (their handles are
// then invalid); the status names them as a caller's leak.
ATLAS_MUST_USE atlas_status atlas_batch_engine_destroy(atlas_batch_engine *e);

atlas_model *atlas_batch_engine_model(const atlas_batch_engine *e);
atlas_kv_pool *atlas_batch_engine_pool(atlas_batch_engine *e);
// Most rows (tokens) and sequences one step takes.
size_t atlas_batch_engine_max_rows(const atlas_batch_engine *e);
size_t atlas_batch_engine_max_seqs(const atlas_batch_engine *e);
// Sequences alive.
size_t atlas_batch_engine_live(const atlas_batch_engine *e);

ATLAS_MUST_USE atlas_status atlas_batch_seq_create(atlas_batch_engine *e,
                                                   atlas_batch_seq **out_seq);
// A new sequence with the parent's tokens, sharing its blocks.
ATLAS_MUST_USE atlas_status atlas_batch_seq_fork(atlas_batch_engine *e,
                                                 const atlas_batch_seq *parent,
                                                 atlas_batch_seq **out_seq);
// Releases its blocks (NULL: no-op).
void atlas_batch_seq_free(atlas_batch_engine *e, atlas_batch_seq *seq);
// Positions computed (tokens whose keys and values are in the pool).
size_t atlas_batch_seq_length(const atlas_batch_seq *seq);
const uint32_t *atlas_batch_seq_tokens(const atlas_batch_seq *seq);
// Blocks the sequence holds.
size_t atlas_batch_seq_blocks(const atlas_batch_seq *seq);

// For an empty sequence about to take `prompt`: takes the prefix cache's
// blocks for the longest run of its full blocks that are cached, leaving at
// least one token to compute. *out_reused: the positions it now has
// (a multiple of the block size).
ATLAS_MUST_USE atlas_status atlas_batch_seq_reuse_prefix(atlas_batch_engine *e,
                                                         atlas_batch_seq *seq,
                                                         const uint32_t *prompt,
                                                         size_t prompt_len,
                                                         size_t *out_reused);

// Blocks a sequence of `length` positions needs to grow by `more`
// (including a copy of a shared last block): what a step would allocate.
size_t atlas_batch_seq_blocks_needed(const atlas_batch_engine *e,
                                     const atlas_batch_seq *seq, size_t more);

typedef struct atlas_batch_item {
  atlas_batch_seq *seq;
  const uint32_t *tokens;  // the chunk (positions length..length+count-1)
  size_t count;            // > 0
  float *out_logits;       // vocab floats of its last row (may be NULL)
  uint32_t *out_id;        // the device argmax of its last row (may be NULL)
} atlas_batch_item;

// One forward over the items (distinct sequences). Blocks are reserved for
// every item first: when the pool cannot hold them RESOURCE_EXHAUSTED comes
// back with nothing run and no block taken. On success each sequence's
// length grows by its count and its newly full blocks join the prefix
// cache. On a failure of the forward itself no length changes (the step
// may be retried).
ATLAS_MUST_USE atlas_status atlas_batch_step(atlas_batch_engine *e,
                                             atlas_batch_item *items,
                                             size_t count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_BATCH_H_
