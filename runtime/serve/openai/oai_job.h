// One OpenAI request in flight on a scheduler: its prompt encoded (the chat
// template for chat), its n choices submitted as one group of scheduler
// requests (forked from one prefill), their events gathered into a
// response body or a stream of SSE events.
// `atlas serve` and `atlas batch` both run requests through it.
//
// Threading: a job is created and submitted by one thread (a connection, or
// batch's main thread); scheduler events arrive on the driving thread; the
// consumer waits for and takes output from any one thread. All of a job's
// state is under its own mutex. Lock order: job, then scheduler (cancel);
// scheduler callbacks take only the job's.
#ifndef ATLAS_RUNTIME_SERVE_OPENAI_OAI_JOB_H_
#define ATLAS_RUNTIME_SERVE_OPENAI_OAI_JOB_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/chat_template.h"
#include "atlas/runtime/serve/openai/oai_request.h"
#include "atlas/runtime/serve/scheduler.h"
#include "atlas/runtime/text/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

// What a job runs on: the model serving now, through its scheduler.
typedef struct atlas_oai_env {
  atlas_scheduler *sched;
  atlas_tokenizer *tokenizer;       // the model's tokenizer.json (required)
  const atlas_chat_template *chat;  // NULL: chat requests are refused
  size_t vocab_size;
  int64_t max_seq;         // positions a sequence may use
  const char *model_name;  // answered in "model"
  // While it says true, a job whose choices were all aborted before their
  // first token (the scheduler was shut down for a swap) waits to be
  // submitted again (ATLAS_OAI_JOB_REQUEUE) instead of failing. May be
  // NULL (never). Called on the driving thread, with the job's lock held.
  bool (*swapping)(void *ctx);
  void *swapping_ctx;
  // Latency observations (may be NULL): the first token's delay after
  // submit (first = true), then each gap between tokens, in seconds.
  void (*observe)(void *ctx, bool first, double seconds);
  void *observe_ctx;
} atlas_oai_env;

typedef enum atlas_oai_job_state {
  ATLAS_OAI_JOB_NEW = 0,  // created, not submitted
  ATLAS_OAI_JOB_RUNNING,  // submitted; choices still generating
  ATLAS_OAI_JOB_REQUEUE,  // aborted by a swap before any token: submit again
  ATLAS_OAI_JOB_DONE,     // every choice ended; output complete
} atlas_oai_job_state;

typedef struct atlas_oai_job atlas_oai_job;

// Makes a job for `request` (the job takes it). `id` names the response
// ("cmpl-..." / "chatcmpl-..."); `default_seed` seeds a request without
// "seed" (choice i draws with seed + i).
ATLAS_MUST_USE atlas_status atlas_oai_job_create(atlas_oai_request *request,
                                                 const char *id,
                                                 int64_t created,
                                                 uint64_t default_seed,
                                                 atlas_oai_job **out_job);

// Encodes the prompt and submits every choice on env (copied: its pointers
// must outlive the job's requests). On failure *out_http says which status
// the client gets. A bad field (400: the prompt's length against the
// model's context, a token id, the chat template; named in out_error and
// the message) leaves the job as it was. The n choices are submitted as
// one group (atlas_scheduler_submit_n: the prompt is prefilled once and
// each choice forked from it). A refusal by the scheduler (429: the queue
// is full; 503: shut down) refuses them all:
// the job is then DONE with the refusal as its result.
ATLAS_MUST_USE atlas_status atlas_oai_job_submit(atlas_oai_job *job,
                                                 const atlas_oai_env *env,
                                                 atlas_oai_error *out_error,
                                                 int *out_http);

// atlas_oai_job_submit in two steps, so that a server can encode (the slow
// part) outside its own lock: prepare encodes the prompt and plans the
// tokens against env (failures as submit's 400s, the job left as it was);
// enqueue then submits the prepared job on the same env (its refusals as
// submit's). Prepare again when the env changed in between.
ATLAS_MUST_USE atlas_status atlas_oai_job_prepare(atlas_oai_job *job,
                                                  const atlas_oai_env *env,
                                                  atlas_oai_error *out_error,
                                                  int *out_http);
ATLAS_MUST_USE atlas_status atlas_oai_job_enqueue(atlas_oai_job *job,
                                                  const atlas_oai_env *env,
                                                  int *out_http);

atlas_oai_job_state atlas_oai_job_state_get(atlas_oai_job *job);

// Waits until the job has output to take or changes state, at most until
// `deadline` (CLOCK_MONOTONIC seconds; 0: no deadline). Returns the state.
atlas_oai_job_state atlas_oai_job_wait(atlas_oai_job *job, double deadline);

// Waits until the job is no longer RUNNING (whatever output it holds), or
// until `deadline` (as atlas_oai_job_wait; 0: none). Returns the state.
atlas_oai_job_state atlas_oai_job_wait_end_by(atlas_oai_job *job,
                                              double deadline);
atlas_oai_job_state atlas_oai_job_wait_end(atlas_oai_job *job);

// Streams: moves the SSE bytes produced so far into *out (malloc'd, the
// caller's; NULL when none) and says whether the stream is complete (its
// [DONE] among them).
ATLAS_MUST_USE atlas_status atlas_oai_job_take_stream(atlas_oai_job *job,
                                                      char **out,
                                                      size_t *out_len,
                                                      bool *out_complete);

// A job that did not stream, once DONE: the HTTP status (200, or 500 when
// the step failed) and the body (a completion, or OpenAI's error object);
// the caller's.
ATLAS_MUST_USE atlas_status atlas_oai_job_result(atlas_oai_job *job,
                                                 int *out_http,
                                                 char **out_body);

// Ends the job's choices now (a disconnect, a timeout, a swap's drain
// running out): each ends with finish_reason "abort" at the next step; a
// stream gets an error event saying `why` (http_status for its type). A job
// waiting for REQUEUE is finished at once.
void atlas_oai_job_cancel(atlas_oai_job *job, int http_status, const char *why);

// Finishes a job that cannot be submitted again (the model was lost):
// non-streamed, the error body; streamed, an error event and [DONE].
void atlas_oai_job_fail(atlas_oai_job *job, int http_status, const char *why,
                        const char *code);

// Tokens of the prompt (after encoding) and generated so far.
void atlas_oai_job_usage(atlas_oai_job *job, uint64_t *out_prompt,
                         uint64_t *out_completion);

const atlas_oai_request *atlas_oai_job_request(const atlas_oai_job *job);

// Frees a job that is NEW, REQUEUE or DONE (never one still RUNNING: cancel
// and wait first).
void atlas_oai_job_free(atlas_oai_job *job);

// Seconds on CLOCK_MONOTONIC (deadlines for atlas_oai_job_wait).
double atlas_oai_now(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_OPENAI_OAI_JOB_H_
