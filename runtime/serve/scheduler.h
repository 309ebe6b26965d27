// The scheduler: many requests on one model, continuous batching.
//
// One scheduler per model; it is a carrier like the model (no static state:
// the queue, the running set and the KV pool live in it). Requests join and
// leave between steps. Each step admits waiting requests first come, first
// served while there is room (a cap on running sequences, on tokens per
// step, and on KV blocks), runs one forward over every running sequence and
// hands each its next token.
//
// Threading contract
// - atlas_scheduler_submit, atlas_scheduler_cancel and atlas_scheduler_stats
//   may be called from any thread at any time, also from inside an event
//   callback, concurrently with each other and with the driving thread.
// - atlas_scheduler_step and atlas_scheduler_run are called by ONE thread
//   at a time (the driving thread: it alone touches the model and device).
// - atlas_scheduler_shutdown may be called from any thread; it makes run
//   return after the step in flight.
// - Event callbacks run on the driving thread, inside step/run, with no
//   scheduler lock held: a callback may submit or cancel. A callback must
//   not call step, run or destroy. Pointers in an event are valid only
//   during the callback.
// - atlas_scheduler_destroy is called once, when no other thread uses the
//   scheduler any more (run has returned). It finishes every request still
//   queued or running with ATLAS_SCHED_ABORT (their last callback runs on
//   the destroying thread) and releases everything it holds. The model must
//   outlive the scheduler, and while a scheduler exists the model is used
//   only through it (no atlas_generate, swap or close on the same model).
//
// Every request gets exactly one final event (finished = true), whatever
// happens: stop, length, cancel, a refused admission or a failed step.
#ifndef ATLAS_RUNTIME_SERVE_SCHEDULER_H_
#define ATLAS_RUNTIME_SERVE_SCHEDULER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/text/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_scheduler atlas_scheduler;

typedef struct atlas_scheduler_options {
  size_t struct_size;
  // Sequences running at once (default 64).
  size_t max_running;
  // Tokens one step feeds, prompt chunks and decode tokens together
  // (default 2048; a long prompt is fed in chunks of what is left).
  size_t max_step_tokens;
  // Requests waiting for admission (default 0: no cap); past it submit
  // refuses with RESOURCE_EXHAUSTED.
  size_t max_waiting;
  // Bytes of the KV pool (default 0: what fits beside the weights, see
  // atlas_scheduler_stats).
  uint64_t kv_budget_bytes;
  // Reuse the KV blocks of a prompt prefix another request computed
  // (default true).
  bool prefix_cache;
} atlas_scheduler_options;

void atlas_scheduler_options_init(atlas_scheduler_options *options);

// Why a request ended.
typedef enum atlas_sched_finish {
  ATLAS_SCHED_STOP = 0,  // an EOS id or a stop string (OpenAI "stop")
  ATLAS_SCHED_LENGTH,    // max_tokens generated (OpenAI "length")
  ATLAS_SCHED_ABORT,     // cancelled, or the scheduler was destroyed
  ATLAS_SCHED_ERROR,     // failed: the event's status says why
} atlas_sched_finish;

// "stop", "length", "abort" or "error".
const char *atlas_sched_finish_name(atlas_sched_finish finish);

typedef struct atlas_sched_event {
  uint64_t request_id;
  // A new token (has_token): its id and, when the request asked for
  // logprobs, log softmax of its step's logits at it (else 0).
  bool has_token;
  uint32_t token;
  float logprob;
  // With the request's top_logprobs: the most likely ids of the step by
  // logit (largest first) and log softmax at each; top_count of them.
  const uint32_t *top_ids;
  const float *top_logprobs;
  size_t top_count;
  // Text made visible by this event (whole UTF-8 characters, a stop string
  // and what follows it never shown); empty without a tokenizer. A final
  // event may carry text (held back until the end) and no token.
  const char *text;
  size_t text_len;
  // The last event of the request.
  bool finished;
  atlas_sched_finish finish;
  // ERROR only: what failed (owned by the scheduler; valid during the
  // callback; copy its message to keep it).
  atlas_status status;
  size_t prompt_tokens;      // the prompt's length
  size_t completion_tokens;  // tokens generated so far (this one included)
  size_t cached_tokens;      // prompt tokens the prefix cache supplied
} atlas_sched_event;

typedef void (*atlas_sched_callback)(void *ctx, const atlas_sched_event *event);

typedef struct atlas_request_options {
  size_t struct_size;
  size_t max_tokens;  // default 16; > 0
  // Sampling as atlas_generate_options (temperature 0: greedy, the default).
  float temperature;
  int32_t top_k;             // 0: off
  float top_p;               // 1: off
  float min_p;               // 0: off
  float repetition_penalty;  // 1: off
  uint64_t seed;
  // Default false: stop after one of the model's EOS ids.
  bool ignore_eos;
  // Text and stop strings (copied at submit). The tokenizer must outlive the
  // request (its final event).
  const atlas_tokenizer *tokenizer;
  const char *const *stop_strings;
  size_t stop_count;
  bool logprobs;  // compute each chosen token's log-probability
  // Called on the driving thread for each token and once at the end (may
  // be NULL: the request runs and its results are dropped).
  atlas_sched_callback on_event;
  void *ctx;
  // With logprobs: also the step's most likely ids (0..20), in the events.
  size_t top_logprobs;
} atlas_request_options;

void atlas_request_options_init(atlas_request_options *options);

// Makes a scheduler for `model` (which must outlive it). Allocates the KV
// pool from the budget (a ledgered allocation on the model's backend):
// RESOURCE_EXHAUSTED when even one sequence of max_seq positions would not
// fit.
ATLAS_MUST_USE atlas_status atlas_scheduler_create(
    atlas_model *model, const atlas_scheduler_options *options,
    atlas_scheduler **out_scheduler);

// See the threading contract above. NULL is a no-op. Returns the first
// failure releasing the pool (everything is released regardless).
ATLAS_MUST_USE atlas_status atlas_scheduler_destroy(atlas_scheduler *sched);

// Queues a request: the prompt (copied; non-empty, every id in the
// vocabulary) and its options (NULL: defaults). Checked here, so that a bad
// request is refused at once (INVALID_ARGUMENT naming the field; nothing
// queued, no event): an empty prompt, an id outside the vocabulary, prompt +
// max_tokens past the model's positions, an option out of range, stop
// strings without a tokenizer. RESOURCE_EXHAUSTED when the queue is full;
// FAILED_PRECONDITION after shutdown. *out_id (may be NULL) identifies it
// (never 0).
ATLAS_MUST_USE atlas_status atlas_scheduler_submit(
    atlas_scheduler *sched, const uint32_t *prompt, size_t prompt_len,
    const atlas_request_options *options, uint64_t *out_id);

// Queues `n` requests on one prompt (OpenAI's n choices): options[i] is
// request i's (its own seed, callback, ...; every option that decides the
// forward or the text the same: only seed, on_event and ctx may differ).
// The prompt is prefilled ONCE: the group is admitted together, the first
// request computes the prompt, and the others are forked from its sequence
// (sharing its KV blocks, copied on write) at its last prompt row, each
// drawing its first token from that row's logits (n past the running cap:
// groups of at most max_running, each prefilling once). Checks and
// refusals as atlas_scheduler_submit, for all or none; the n count against
// max_waiting. out_ids gets n ids (may be NULL). A model without a batch
// step runs them one after another.
ATLAS_MUST_USE atlas_status atlas_scheduler_submit_n(
    atlas_scheduler *sched, const uint32_t *prompt, size_t prompt_len,
    const atlas_request_options *options, size_t n, uint64_t *out_ids);

// Asks for a request to end: its final event (ABORT) comes from the driving
// thread at the next step, before any further token. NOT_FOUND when no such
// request is queued or running (it finished, or never was).
ATLAS_MUST_USE atlas_status atlas_scheduler_cancel(atlas_scheduler *sched,
                                                   uint64_t request_id);

// One step (driving thread): admit, forward once over every running
// sequence, deliver events. *out_worked (may be NULL) is false when there
// was nothing to do. A failure of the step itself (the device) finishes
// every request it touched with ERROR and that status, and is returned too;
// the scheduler stays usable.
ATLAS_MUST_USE atlas_status atlas_scheduler_step(atlas_scheduler *sched,
                                                 bool *out_worked);

// Steps until shutdown, sleeping while there is nothing to do (woken by
// submit, cancel and shutdown). Returns after shutdown once the running
// requests have ended (queued ones are finished with ABORT). A step's failure
// is delivered to the requests and logged, not returned.
ATLAS_MUST_USE atlas_status atlas_scheduler_run(atlas_scheduler *sched);

// Stops accepting requests and makes run return. Any thread.
void atlas_scheduler_shutdown(atlas_scheduler *sched);

typedef struct atlas_scheduler_stats {
  size_t waiting;   // queued, not admitted yet
  size_t running;   // admitted, generating
  uint64_t steps;   // forwards run so far
  uint64_t tokens;  // tokens generated so far
  // The KV pool: blocks of block_tokens positions each. used: held by a
  // live sequence; cached: held only by the prefix cache (reusable, and
  // reclaimed when the pool runs short); free: neither.
  size_t kv_blocks_total, kv_blocks_used, kv_blocks_cached, kv_blocks_free;
  size_t kv_block_tokens;
  uint64_t kv_pool_bytes;
  uint64_t prefix_hit_tokens;  // prompt tokens the cache supplied so far
  uint64_t preempted;          // sequences preempted to free blocks
  // Prompt positions computed by forwards so far (what a prefill cost:
  // the prefix cache's and a fork's shared positions are not computed).
  uint64_t prompt_tokens_computed;
} atlas_scheduler_stats;

void atlas_scheduler_stats_get(atlas_scheduler *sched,
                               atlas_scheduler_stats *out_stats);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_SCHEDULER_H_
