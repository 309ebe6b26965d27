// The scheduler's state, shared by its files: scheduler.c (the queue,
// submission, cancellation, events, the serial fallback) and
// scheduler_batch.c (continuous batching over the step API). Private.
#ifndef ATLAS_RUNTIME_SERVE_SCHEDULER_IMPL_H_
#define ATLAS_RUNTIME_SERVE_SCHEDULER_IMPL_H_

#include <pthread.h>
#include <stdatomic.h>

#include "atlas/runtime/generate/gen_state.h"
#include "atlas/runtime/serve/batch.h"
#include "atlas/runtime/serve/scheduler.h"

typedef struct sched_request {
  uint64_t id;
  uint32_t *prompt;
  size_t prompt_len;
  atlas_request_options options;
  char **stops;  // copies of options.stop_strings
  atomic_bool cancelled;
  struct sched_request *next;  // the waiting queue
  // The driving thread's, once admitted (batching):
  atlas_gen_state g;
  bool g_ready;
  atlas_batch_seq *seq;
  uint32_t *input;  // prompt, then every generated token (a re-prefill's)
  size_t input_len, input_cap;
  size_t fed;     // input tokens in the KV pool (the sequence's length)
  size_t cached;  // prompt tokens the prefix cache supplied
  uint32_t id_out;
  float logprob;
  // A group (atlas_scheduler_submit_n): the first request (the leader)
  // holds the others, queued and admitted with it; each waits, admitted
  // but with no sequence, for the fork at the leader's last prompt row.
  struct sched_request **followers;  // the leader's, still waiting to fork
  size_t follower_count;
  struct sched_request *leader;  // a follower's, until forked or released
} sched_request;

struct atlas_scheduler {
  atlas_model *model;
  atlas_scheduler_options options;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sched_request *head, *tail;  // waiting, FCFS
  size_t waiting;
  // Running: the driving thread changes the set under `mu` (cancel reads it
  // there) and reads it without.
  sched_request **running;
  size_t running_count;
  uint64_t next_id;
  bool shutdown;
  uint64_t steps, tokens, prefix_hits, preempted, prompt_computed;
  atlas_kv_pool_stats kv;  // as of the last step (the pool is the driver's)
  uint32_t block_tokens;
  // Batching (NULL: the model has no batch step; one request at a time).
  atlas_batch_engine *engine;
  atlas_batch_item *items;
  sched_request **item_req;
  float *logits;  // max seqs x vocab, made at the first step that samples
  size_t vocab;
};

void atlas_sched_request_free(sched_request *r);
void atlas_sched_emit(sched_request *r, atlas_sched_event *e);
// The final event of a request, carrying no token.
void atlas_sched_finish_request(sched_request *r, atlas_sched_finish why,
                                atlas_status status, const char *text,
                                size_t len, size_t generated);
// The generation state's configuration from a request's options.
void atlas_sched_gen_config(const atlas_scheduler *sched,
                            const sched_request *r, atlas_gen_config *c);

// One continuous-batching step (scheduler_batch.c).
ATLAS_MUST_USE atlas_status atlas_sched_batch_step(atlas_scheduler *sched,
                                                   bool *out_worked);
// Ends every admitted request with ABORT (destroy, shutdown).
void atlas_sched_batch_abort_all(atlas_scheduler *sched);

#endif  // ATLAS_RUNTIME_SERVE_SCHEDULER_IMPL_H_
