// One OpenAI request on a scheduler (oai_job.h).
#define _POSIX_C_SOURCE 200809L  // clock_gettime, strdup
#include "atlas/runtime/serve/openai/oai_job.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/serve/openai/oai_lp_log.h"
#include "atlas/runtime/serve/openai/oai_response.h"

// A growable byte buffer.
typedef struct bytes {
  char *data;
  size_t len, cap;
} bytes;

static bool bytes_add(bytes *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *grown = realloc(b->data, cap);
    if (grown == NULL) return false;
    b->data = grown;
    b->cap = cap;
  }
  if (n > 0) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return true;
}

typedef struct choice {
  atlas_oai_job *job;
  size_t index;
  uint64_t rid;
  bool submitted, final, role_sent, final_sent;
  atlas_sched_finish finish;
  bytes text;
  size_t tokens;
  atlas_oai_lp_log lp;  // logprobs: each token's, with its alternatives
  double last_token_at;
} choice;

struct atlas_oai_job {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atlas_oai_request *req;
  char *id;
  int64_t created;
  uint64_t default_seed;
  atlas_oai_env env;
  uint32_t *prompt;
  size_t prompt_len;
  size_t max_tokens;  // planned by prepare for the env it was given
  bool prepared;
  choice *choices;
  size_t n, finals;
  size_t cached_tokens;  // choice 0's prompt tokens from the prefix cache
  atlas_oai_job_state state;
  double submitted_at;
  // Why it ended early: a cancel (http status and words), a failed step or
  // a failed submit (the error body's status and words).
  int error_http;
  char *error_why;
  const char *error_code;
  bool cancelled;
  bytes stream;  // SSE bytes not yet taken
  bool stream_complete;
  bool out_of_memory;  // an event could not be recorded: the job fails
};

double atlas_oai_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

atlas_status atlas_oai_job_create(atlas_oai_request *request, const char *id,
                                  int64_t created, uint64_t default_seed,
                                  atlas_oai_job **out_job) {
  *out_job = NULL;
  atlas_oai_job *j = calloc(1, sizeof *j);
  choice *c = j ? calloc((size_t)request->n, sizeof *c) : NULL;
  char *id_copy = c ? strdup(id) : NULL;
  if (id_copy == NULL) {
    free(c);
    free(j);
    atlas_oai_request_free(request);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for a job");
  }
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->req = request;
  j->id = id_copy;
  j->created = created;
  j->default_seed = default_seed;
  j->choices = c;
  j->n = (size_t)request->n;
  for (size_t i = 0; i < j->n; ++i) {
    c[i].job = j;
    c[i].index = i;
  }
  *out_job = j;
  return ATLAS_OK;
}

static atlas_oai_meta meta_of(const atlas_oai_job *j) {
  atlas_oai_meta m = {j->req->endpoint, j->id, j->env.model_name, j->created};
  return m;
}

// The choice as a response builder sees it; with `lps` (room for every
// token) and `alts` (for their alternatives), its logprobs too.
static void choice_view(const choice *c, const atlas_oai_request *r,
                        atlas_oai_logprob *lps, atlas_oai_alt *alts,
                        atlas_oai_choice *out) {
  memset(out, 0, sizeof *out);
  out->index = c->index;
  out->text = c->text.data;
  out->text_len = c->text.len;
  out->has_logprobs = r->logprobs;
  if (lps != NULL) {
    atlas_oai_lp_log_view(&c->lp, 0, c->lp.token_count, lps, alts);
    out->logprobs = lps;
    out->logprob_count = c->lp.token_count;
  }
}

// Appends an SSE event to the stream (job locked); takes `event`.
static void push_event(atlas_oai_job *j, atlas_status s, char *event) {
  if (s != ATLAS_OK || !bytes_add(&j->stream, event, strlen(event))) {
    j->out_of_memory = true;
  }
  atlas_status_free(s);
  free(event);
}

static void push_chunk(atlas_oai_job *j, choice *c, const char *text,
                       size_t text_len, const char *finish, size_t lp_from) {
  atlas_oai_meta m = meta_of(j);
  atlas_oai_choice view;
  choice_view(c, j->req, NULL, NULL, &view);
  view.text = text;
  view.text_len = text_len;
  view.finish_reason = finish;
  // An event carries at most one token. Its entry points into alts, so alts
  // lives as long as the view (cppcheck does not follow the pointer).
  atlas_oai_logprob lp[1];
  // cppcheck-suppress variableScope
  atlas_oai_alt alts[ATLAS_OAI_MAX_TOP_LOGPROBS];
  if (j->req->logprobs && lp_from < c->lp.token_count &&
      atlas_oai_lp_log_alts(&c->lp, lp_from, 1) <= ATLAS_OAI_MAX_TOP_LOGPROBS) {
    atlas_oai_lp_log_view(&c->lp, lp_from, 1, lp, alts);
    view.logprobs = lp;
    view.logprob_count = 1;
  }
  view.text_offset = c->text.len - text_len;
  char *event = NULL;
  bool first = !c->role_sent;
  c->role_sent = true;
  atlas_status s =
      atlas_oai_response_chunk(&m, &view, first, j->req->include_usage, &event);
  push_event(j, s, event);
}

static void push_final_chunk(atlas_oai_job *j, choice *c) {
  if (c->final_sent) return;
  c->final_sent = true;
  if (c->finish == ATLAS_SCHED_ERROR) return;  // the error event says it
  push_chunk(j, c, "", 0, atlas_sched_finish_name(c->finish), SIZE_MAX);
}

static void push_error_event(atlas_oai_job *j) {
  char *event = NULL;
  atlas_status s =
      atlas_oai_error_event(j->error_http ? j->error_http : 500,
                            j->error_why ? j->error_why : "the request failed",
                            NULL, j->error_code, &event);
  push_event(j, s, event);
}

static void set_error(atlas_oai_job *j, int http, const char *why,
                      const char *code) {
  if (j->error_why != NULL) return;  // the first reason stands
  j->error_http = http;
  j->error_why = strdup(why);
  j->error_code = code;
}

static uint64_t completion_tokens(const atlas_oai_job *j) {
  uint64_t t = 0;
  for (size_t i = 0; i < j->n; ++i) t += j->choices[i].tokens;
  return t;
}

// Every choice has ended (job locked): requeue after a swap's shutdown, or
// finish the output.
static void job_complete(atlas_oai_job *j) {
  bool all_abort = true;
  for (size_t i = 0; i < j->n; ++i) {
    all_abort = all_abort && j->choices[i].finish == ATLAS_SCHED_ABORT;
  }
  bool swapping =
      j->env.swapping != NULL && j->env.swapping(j->env.swapping_ctx);
  if (all_abort && swapping && !j->cancelled && completion_tokens(j) == 0) {
    j->state = ATLAS_OAI_JOB_REQUEUE;
    return;
  }
  if (j->req->stream) {
    for (size_t i = 0; i < j->n; ++i) push_final_chunk(j, &j->choices[i]);
    if (j->error_why != NULL) push_error_event(j);
    if (j->req->include_usage) {
      atlas_oai_meta m = meta_of(j);
      atlas_oai_usage u = {j->prompt_len, completion_tokens(j), true,
                           j->cached_tokens};
      char *event = NULL;
      atlas_status s = atlas_oai_response_usage_chunk(&m, &u, &event);
      push_event(j, s, event);
    }
    push_event(j, ATLAS_OK, strdup(atlas_oai_done_event));
    j->stream_complete = true;
  }
  j->state = ATLAS_OAI_JOB_DONE;
}

static void record_token(atlas_oai_job *j, choice *c,
                         const atlas_sched_event *e) {
  c->tokens++;
  double now = atlas_oai_now();
  if (j->env.observe != NULL) {
    bool first = c->tokens == 1;
    j->env.observe(j->env.observe_ctx, first,
                   now - (first ? j->submitted_at : c->last_token_at));
  }
  c->last_token_at = now;
  if (j->req->logprobs && !atlas_oai_lp_log_add(&c->lp, j->env.tokenizer, e)) {
    j->out_of_memory = true;
  }
}

static void on_event(void *ctx, const atlas_sched_event *e) {
  choice *c = ctx;
  atlas_oai_job *j = c->job;
  pthread_mutex_lock(&j->mu);
  size_t lp_before = c->lp.token_count;
  if (e->has_token) record_token(j, c, e);
  if (e->text_len > 0 && !bytes_add(&c->text, e->text, e->text_len)) {
    j->out_of_memory = true;
  }
  if (j->req->stream && (e->text_len > 0 || c->lp.token_count > lp_before)) {
    push_chunk(j, c, e->text, e->text_len, NULL, lp_before);
  }
  if (c->index == 0) j->cached_tokens = e->cached_tokens;
  if (e->finished) {
    c->final = true;
    c->finish = e->finish;
    j->finals++;
    if (e->finish == ATLAS_SCHED_ERROR) {
      set_error(j, 500, atlas_status_message(e->status), NULL);
    }
    if (j->out_of_memory) {
      set_error(j, 500, "no memory to record the response", NULL);
    }
    bool swapping =
        j->env.swapping != NULL && j->env.swapping(j->env.swapping_ctx);
    // A choice that may yet be requeued keeps its final chunk back.
    bool hold = swapping && e->finish == ATLAS_SCHED_ABORT && c->tokens == 0;
    if (j->req->stream && !hold) push_final_chunk(j, c);
    if (j->finals == j->n) job_complete(j);
  }
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

static atlas_status bad_field(atlas_oai_error *err, int *http,
                              const char *param, atlas_status why) {
  if (err != NULL) snprintf(err->param, sizeof err->param, "%s", param);
  *http = 400;
  return why;
}

// The chat template's rendering of the messages, encoded without special
// tokens (the template writes them).
static atlas_status encode_chat(atlas_oai_job *j, const atlas_oai_env *env,
                                atlas_oai_error *err, int *http) {
  const atlas_oai_request *r = j->req;
  if (env->chat == NULL) {
    return bad_field(err, http, "messages",
                     atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                       "messages: the model has no chat "
                                       "template (tokenizer_config.json's "
                                       "chat_template); use /v1/completions"));
  }
  json_t *list = json_array();
  for (size_t i = 0; list != NULL && i < r->message_count; ++i) {
    json_t *m = json_pack("{s:s, s:s}", "role", r->messages[i].role, "content",
                          r->messages[i].content);
    if (m == NULL || json_array_append_new(list, m) != 0) {
      json_decref(list);
      list = NULL;
    }
  }
  if (list == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for the chat messages");
  }
  atlas_chat_render_options ro;
  memset(&ro, 0, sizeof ro);
  ro.messages = list;
  ro.add_generation_prompt = true;
  char *text = NULL;
  size_t len = 0;
  atlas_status s = atlas_chat_template_render(env->chat, &ro, &text, &len);
  json_decref(list);
  if (s != ATLAS_OK) {
    return bad_field(err, http, "messages",
                     atlas_status_annotate(s, "messages: the chat template"));
  }
  s = atlas_tokenizer_encode(env->tokenizer, text, len, false, &j->prompt,
                             &j->prompt_len);
  free(text);
  return s == ATLAS_OK ? ATLAS_OK
                       : bad_field(err, http, "messages",
                                   atlas_status_annotate(s, "messages"));
}

static atlas_status encode_prompt(atlas_oai_job *j, const atlas_oai_env *env,
                                  atlas_oai_error *err, int *http) {
  const atlas_oai_request *r = j->req;
  free(j->prompt);
  j->prompt = NULL;
  j->prompt_len = 0;
  if (r->endpoint == ATLAS_OAI_CHAT) return encode_chat(j, env, err, http);
  if (r->prompt != NULL) {
    // As `atlas run --prompt`: with the tokenizer's special tokens.
    atlas_status s =
        atlas_tokenizer_encode(env->tokenizer, r->prompt, r->prompt_len, true,
                               &j->prompt, &j->prompt_len);
    return s == ATLAS_OK ? ATLAS_OK
                         : bad_field(err, http, "prompt",
                                     atlas_status_annotate(s, "prompt"));
  }
  for (size_t i = 0; i < r->prompt_id_count; ++i) {
    if (r->prompt_ids[i] >= env->vocab_size) {
      char param[ATLAS_OAI_MAX_PARAM];
      snprintf(param, sizeof param, "prompt[%zu]", i % 100000000);
      return bad_field(err, http, param,
                       atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                         "prompt[%zu]: token id %u is not in "
                                         "the model's vocabulary of %zu",
                                         i, r->prompt_ids[i], env->vocab_size));
    }
  }
  if (r->prompt_id_count == 0) {  // the parser refuses it; never malloc(0)
    return bad_field(err, http, "prompt",
                     atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                       "prompt: no token ids"));
  }
  j->prompt = malloc(r->prompt_id_count * sizeof *j->prompt);
  if (j->prompt == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for ids");
  }
  memcpy(j->prompt, r->prompt_ids, r->prompt_id_count * sizeof *j->prompt);
  j->prompt_len = r->prompt_id_count;
  return ATLAS_OK;
}

// max_tokens, or its default: completions OpenAI's 16, chat what is left of
// the context; the prompt and all but the last token must fit it.
static atlas_status plan_tokens(const atlas_oai_job *j,
                                const atlas_oai_env *env, atlas_oai_error *err,
                                int *http, size_t *out_max) {
  const atlas_oai_request *r = j->req;
  const char *what = r->endpoint == ATLAS_OAI_CHAT ? "messages" : "prompt";
  if (j->prompt_len == 0) {
    return bad_field(err, http, what,
                     atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                       "%s: encodes to no tokens", what));
  }
  size_t room = (size_t)env->max_seq + 1;  // the last token is not fed back
  if (j->prompt_len >= room - 1) {
    return bad_field(
        err, http, what,
        atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                          "%s: %zu tokens; the model's context "
                          "holds %lld positions, and at least "
                          "one is needed to answer",
                          what, j->prompt_len, (long long)env->max_seq));
  }
  size_t left = room - j->prompt_len;
  if (r->max_tokens == 0) {
    *out_max = r->endpoint == ATLAS_OAI_CHAT ? left : (left < 16 ? left : 16);
    return ATLAS_OK;
  }
  if ((uint64_t)r->max_tokens > left) {
    const char *param =
        r->endpoint == ATLAS_OAI_CHAT ? "max_completion_tokens" : "max_tokens";
    return bad_field(
        err, http, param,
        atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                          "%s: %lld tokens after a prompt of "
                          "%zu pass the model's context of %lld "
                          "positions (at most %zu)",
                          param, (long long)r->max_tokens, j->prompt_len,
                          (long long)env->max_seq, left));
  }
  *out_max = (size_t)r->max_tokens;
  return ATLAS_OK;
}

static void fill_options(const atlas_oai_job *j, choice *c, size_t max_tokens,
                         atlas_request_options *o) {
  const atlas_oai_request *r = j->req;
  atlas_request_options_init(o);
  o->max_tokens = max_tokens;
  o->temperature = (float)r->temperature;
  o->top_k = r->top_k;
  o->top_p = (float)r->top_p;
  o->min_p = (float)r->min_p;
  o->repetition_penalty = (float)r->repetition_penalty;
  o->seed = (r->has_seed ? r->seed : j->default_seed) + c->index;
  o->tokenizer = j->env.tokenizer;
  o->stop_strings = (const char *const *)r->stop;
  o->stop_count = r->stop_count;
  o->logprobs = r->logprobs;
  o->top_logprobs = r->logprobs ? (size_t)r->top_logprobs : 0;
  o->on_event = on_event;
  o->ctx = c;
}

// Submits the choices as one group (the prompt prefilled once, each
// choice forked from it); a refusal refuses them all, and the job ends
// with it.
static atlas_status submit_choices(atlas_oai_job *j, size_t max_tokens,
                                   int *http) {
  atlas_request_options *o = calloc(j->n, sizeof *o);
  uint64_t *rids = calloc(j->n, sizeof *rids);
  atlas_status s = ATLAS_OK;
  if (o == NULL || rids == NULL) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "no memory to submit %zu choices", j->n);
  }
  for (size_t i = 0; s == ATLAS_OK && i < j->n; ++i) {
    fill_options(j, &j->choices[i], max_tokens, &o[i]);
  }
  pthread_mutex_lock(&j->mu);
  for (size_t i = 0; i < j->n; ++i) {
    j->choices[i].final = j->choices[i].final_sent = false;
    j->choices[i].submitted = false;
  }
  pthread_mutex_unlock(&j->mu);
  if (s == ATLAS_OK) {
    s = atlas_scheduler_submit_n(j->env.sched, j->prompt, j->prompt_len, o,
                                 j->n, rids);
  }
  free(o);
  pthread_mutex_lock(&j->mu);  // a cancel from another thread reads them
  if (s == ATLAS_OK) {
    for (size_t i = 0; i < j->n; ++i) {
      j->choices[i].rid = rids[i];
      j->choices[i].submitted = true;
    }
    free(rids);
    pthread_mutex_unlock(&j->mu);
    return ATLAS_OK;
  }
  free(rids);
  atlas_status_code code = atlas_status_code_of(s);
  *http = code == ATLAS_STATUS_RESOURCE_EXHAUSTED    ? 429
          : code == ATLAS_STATUS_FAILED_PRECONDITION ? 503
          : code == ATLAS_STATUS_INVALID_ARGUMENT    ? 400
                                                     : 500;
  // No choice was queued: each ends now, and the job with the refusal.
  set_error(j, *http, atlas_status_message(s), NULL);
  j->cancelled = true;
  j->finals = j->n;
  for (size_t k = 0; k < j->n; ++k) {
    j->choices[k].final = j->choices[k].final_sent = true;
    j->choices[k].finish = ATLAS_SCHED_ABORT;
  }
  job_complete(j);
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return s;
}

atlas_status atlas_oai_job_prepare(atlas_oai_job *j, const atlas_oai_env *env,
                                   atlas_oai_error *err, int *http) {
  if (err != NULL) err->param[0] = '\0';
  *http = 500;
  j->prepared = false;
  if (atlas_oai_job_state_get(j) != ATLAS_OAI_JOB_NEW &&
      atlas_oai_job_state_get(j) != ATLAS_OAI_JOB_REQUEUE) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "a job is submitted once (or again after a "
                             "swap's requeue)");
  }
  ATLAS_RETURN_IF_ERROR(encode_prompt(j, env, err, http));
  ATLAS_RETURN_IF_ERROR(plan_tokens(j, env, err, http, &j->max_tokens));
  j->prepared = true;
  return ATLAS_OK;
}

atlas_status atlas_oai_job_submit(atlas_oai_job *j, const atlas_oai_env *env,
                                  atlas_oai_error *err, int *http) {
  ATLAS_RETURN_IF_ERROR(atlas_oai_job_prepare(j, env, err, http));
  return atlas_oai_job_enqueue(j, env, http);
}

atlas_status atlas_oai_job_enqueue(atlas_oai_job *j, const atlas_oai_env *env,
                                   int *http) {
  *http = 500;
  if (!j->prepared) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "a job is prepared before it is enqueued");
  }
  j->prepared = false;
  size_t max_tokens = j->max_tokens;
  pthread_mutex_lock(&j->mu);
  j->env = *env;
  j->finals = 0;
  j->submitted_at = atlas_oai_now();
  j->state = ATLAS_OAI_JOB_RUNNING;
  if (j->req->stream && j->req->endpoint == ATLAS_OAI_CHAT) {
    // The role first, as OpenAI's stream starts (once, whatever requeues).
    for (size_t i = 0; i < j->n; ++i) {
      if (!j->choices[i].role_sent)
        push_chunk(j, &j->choices[i], "", 0, NULL, SIZE_MAX);
    }
  }
  pthread_mutex_unlock(&j->mu);
  return submit_choices(j, max_tokens, http);
}

atlas_oai_job_state atlas_oai_job_state_get(atlas_oai_job *j) {
  pthread_mutex_lock(&j->mu);
  atlas_oai_job_state s = j->state;
  pthread_mutex_unlock(&j->mu);
  return s;
}

// Waits on the job's condition variable until `deadline` (job locked).
static void wait_until(atlas_oai_job *j, double deadline) {
  if (deadline <= 0) {
    pthread_cond_wait(&j->cv, &j->mu);
    return;
  }
  // The condition variable waits on CLOCK_REALTIME: convert the gap.
  double left = deadline - atlas_oai_now();
  if (left <= 0) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

atlas_oai_job_state atlas_oai_job_wait(atlas_oai_job *j, double deadline) {
  pthread_mutex_lock(&j->mu);
  while (j->state == ATLAS_OAI_JOB_RUNNING && j->stream.len == 0 &&
         (deadline <= 0 || atlas_oai_now() < deadline)) {
    wait_until(j, deadline);
  }
  atlas_oai_job_state s = j->state;
  pthread_mutex_unlock(&j->mu);
  return s;
}

atlas_oai_job_state atlas_oai_job_wait_end_by(atlas_oai_job *j,
                                              double deadline) {
  pthread_mutex_lock(&j->mu);
  while (j->state == ATLAS_OAI_JOB_RUNNING &&
         (deadline <= 0 || atlas_oai_now() < deadline)) {
    wait_until(j, deadline);
  }
  atlas_oai_job_state s = j->state;
  pthread_mutex_unlock(&j->mu);
  return s;
}

atlas_oai_job_state atlas_oai_job_wait_end(atlas_oai_job *j) {
  return atlas_oai_job_wait_end_by(j, 0);
}

atlas_status atlas_oai_job_take_stream(atlas_oai_job *j, char **out,
                                       size_t *out_len, bool *out_complete) {
  pthread_mutex_lock(&j->mu);
  *out = j->stream.data;
  *out_len = j->stream.len;
  *out_complete = j->stream_complete;
  memset(&j->stream, 0, sizeof j->stream);
  pthread_mutex_unlock(&j->mu);
  return ATLAS_OK;
}

static atlas_status result_body(atlas_oai_job *j, char **out_body) {
  size_t total_lps = 0, total_alts = 0;
  for (size_t i = 0; i < j->n; ++i) {
    const atlas_oai_lp_log *lp = &j->choices[i].lp;
    total_lps += lp->token_count;
    total_alts += atlas_oai_lp_log_alts(lp, 0, lp->token_count);
  }
  atlas_oai_choice *views = calloc(j->n ? j->n : 1, sizeof *views);
  atlas_oai_logprob *lps = calloc(total_lps + 1, sizeof *lps);
  atlas_oai_alt *alts = calloc(total_alts + 1, sizeof *alts);
  atlas_status s = ATLAS_OK;
  if (views == NULL || lps == NULL || alts == NULL) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for a body");
  } else {
    size_t at = 0, alt_at = 0;
    for (size_t i = 0; i < j->n; ++i) {
      choice *c = &j->choices[i];
      choice_view(c, j->req, lps + at, alts + alt_at, &views[i]);
      views[i].finish_reason = atlas_sched_finish_name(c->finish);
      at += c->lp.token_count;
      alt_at += atlas_oai_lp_log_alts(&c->lp, 0, c->lp.token_count);
    }
    atlas_oai_meta m = meta_of(j);
    atlas_oai_usage u = {j->prompt_len, completion_tokens(j), true,
                         j->cached_tokens};
    s = atlas_oai_response_body(&m, views, j->n, &u, out_body);
  }
  free(views);
  free(lps);
  free(alts);
  return s;
}

atlas_status atlas_oai_job_result(atlas_oai_job *j, int *out_http,
                                  char **out_body) {
  *out_body = NULL;
  pthread_mutex_lock(&j->mu);
  atlas_status s = ATLAS_OK;
  if (j->state != ATLAS_OAI_JOB_DONE) {
    s = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                          "the job has not finished");
  } else if (j->error_why != NULL) {
    *out_http = j->error_http;
    s = atlas_oai_error_body(j->error_http, j->error_why, NULL, NULL,
                             j->error_code, out_body);
  } else {
    *out_http = 200;
    s = result_body(j, out_body);
  }
  pthread_mutex_unlock(&j->mu);
  return s;
}

void atlas_oai_job_cancel(atlas_oai_job *j, int http_status, const char *why) {
  pthread_mutex_lock(&j->mu);
  if (j->state == ATLAS_OAI_JOB_RUNNING || j->state == ATLAS_OAI_JOB_REQUEUE) {
    j->cancelled = true;
    set_error(j, http_status, why, http_status == 504 ? "timeout" : NULL);
  }
  if (j->state == ATLAS_OAI_JOB_RUNNING) {
    for (size_t i = 0; i < j->n; ++i) {
      if (j->choices[i].submitted && !j->choices[i].final) {
        atlas_status_free(
            atlas_scheduler_cancel(j->env.sched, j->choices[i].rid));
      }
    }
  } else if (j->state == ATLAS_OAI_JOB_REQUEUE) {
    job_complete(j);
  }
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

void atlas_oai_job_fail(atlas_oai_job *j, int http_status, const char *why,
                        const char *code) {
  pthread_mutex_lock(&j->mu);
  if (j->state != ATLAS_OAI_JOB_DONE && j->state != ATLAS_OAI_JOB_RUNNING) {
    set_error(j, http_status, why, code);
    j->cancelled = true;
    for (size_t i = 0; i < j->n; ++i) {
      j->choices[i].finish = ATLAS_SCHED_ABORT;
      j->choices[i].final_sent = true;  // the error event says it
    }
    job_complete(j);
  }
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

void atlas_oai_job_usage(atlas_oai_job *j, uint64_t *out_prompt,
                         uint64_t *out_completion) {
  pthread_mutex_lock(&j->mu);
  *out_prompt = j->prompt_len;
  *out_completion = completion_tokens(j);
  pthread_mutex_unlock(&j->mu);
}

const atlas_oai_request *atlas_oai_job_request(const atlas_oai_job *j) {
  return j->req;
}

void atlas_oai_job_free(atlas_oai_job *j) {
  if (j == NULL) return;
  for (size_t i = 0; i < j->n; ++i) {
    free(j->choices[i].text.data);
    atlas_oai_lp_log_free(&j->choices[i].lp);
  }
  free(j->choices);
  free(j->stream.data);
  free(j->prompt);
  free(j->error_why);
  free(j->id);
  atlas_oai_request_free(j->req);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}
