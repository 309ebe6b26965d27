// The scheduler (scheduler.h): the queue, cancellation and events under one
// mutex; the driving thread runs the model with no lock held.
#include "atlas/runtime/serve/scheduler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/generate/gen_state.h"
#include "atlas/runtime/log.h"

enum { kDefaultRunning = 64, kDefaultStepTokens = 2048 };

typedef struct sched_request {
  uint64_t id;
  uint32_t *prompt;
  size_t prompt_len;
  atlas_request_options options;
  char **stops;  // copies of options.stop_strings
  atomic_bool cancelled;
  struct sched_request *next;
} sched_request;

struct atlas_scheduler {
  atlas_model *model;
  atlas_scheduler_options options;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  sched_request *head, *tail;  // waiting, FCFS
  size_t waiting;
  sched_request *current;  // running (driving thread owns it)
  uint64_t next_id;
  bool shutdown;
  uint64_t steps, tokens;
};

void atlas_scheduler_options_init(atlas_scheduler_options *o) {
  memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->max_running = kDefaultRunning;
  o->max_step_tokens = kDefaultStepTokens;
  o->prefix_cache = true;
}

void atlas_request_options_init(atlas_request_options *o) {
  memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->max_tokens = 16;
  o->top_p = 1.0f;
  o->repetition_penalty = 1.0f;
}

const char *atlas_sched_finish_name(atlas_sched_finish finish) {
  switch (finish) {
    case ATLAS_SCHED_STOP:
      return "stop";
    case ATLAS_SCHED_LENGTH:
      return "length";
    case ATLAS_SCHED_ABORT:
      return "abort";
    case ATLAS_SCHED_ERROR:
      return "error";
  }
  return "error";
}

// Copies the caller's options struct, however old its layout (struct_size).
static atlas_status copy_sized(void *dst, size_t dst_size, const void *src,
                               const char *what) {
  size_t n = *(const size_t *)src;
  if (n < sizeof(size_t)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s.struct_size is %zu: fill it with %s_init",
                             what, n, what);
  }
  memcpy(dst, src, n < dst_size ? n : dst_size);
  *(size_t *)dst = dst_size;
  return ATLAS_OK;
}

atlas_status atlas_scheduler_create(atlas_model *model,
                                    const atlas_scheduler_options *options,
                                    atlas_scheduler **out_scheduler) {
  *out_scheduler = NULL;
  if (model == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_scheduler_create: NULL model");
  }
  atlas_scheduler_options o;
  atlas_scheduler_options_init(&o);
  if (options != NULL) {
    ATLAS_RETURN_IF_ERROR(
        copy_sized(&o, sizeof(o), options, "atlas_scheduler_options"));
  }
  if (o.max_running == 0) o.max_running = kDefaultRunning;
  if (o.max_step_tokens == 0) o.max_step_tokens = kDefaultStepTokens;
  atlas_scheduler *s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_scheduler_create: no memory");
  }
  s->model = model;
  s->options = o;
  s->next_id = 1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  *out_scheduler = s;
  return ATLAS_OK;
}

static void request_free(sched_request *r) {
  if (r == NULL) return;
  for (size_t i = 0; i < r->options.stop_count; ++i) free(r->stops[i]);
  free(r->stops);
  free(r->prompt);
  free(r);
}

static void emit(sched_request *r, atlas_sched_event *e) {
  e->request_id = r->id;
  e->prompt_tokens = r->prompt_len;
  if (r->options.on_event != NULL) r->options.on_event(r->options.ctx, e);
}

// The final event of a request that produced no token in this call.
static void finish_request(sched_request *r, atlas_sched_finish why,
                           atlas_status status, const char *text, size_t len,
                           size_t generated) {
  atlas_sched_event e;
  memset(&e, 0, sizeof(e));
  e.text = text != NULL ? text : "";
  e.text_len = len;
  e.finished = true;
  e.finish = why;
  e.status = status;
  e.completion_tokens = generated;
  emit(r, &e);
}

atlas_status atlas_scheduler_destroy(atlas_scheduler *sched) {
  if (sched == NULL) return ATLAS_OK;
  sched_request *r = sched->head;
  while (r != NULL) {
    sched_request *next = r->next;
    finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
    request_free(r);
    r = next;
  }
  pthread_cond_destroy(&sched->cv);
  pthread_mutex_destroy(&sched->mu);
  free(sched);
  return ATLAS_OK;
}

static atlas_status check_request(atlas_scheduler *sched,
                                  const uint32_t *prompt, size_t prompt_len,
                                  const atlas_request_options *o) {
  atlas_model *m = sched->model;
  if (prompt == NULL || prompt_len == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "request: the prompt is empty");
  }
  int64_t vocab = atlas_model_vocab_size(m);
  for (size_t i = 0; i < prompt_len; ++i) {
    if ((int64_t)prompt[i] >= vocab) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "request: prompt token %zu is id %u, outside "
                               "the vocabulary of %s (%lld ids)",
                               i, prompt[i], atlas_model_name(m),
                               (long long)vocab);
    }
  }
  if (o->max_tokens == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "request: max_tokens is 0");
  }
  uint64_t max_seq = (uint64_t)atlas_model_max_seq(m);
  if (prompt_len > max_seq || o->max_tokens - 1 > max_seq - prompt_len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "request: %zu prompt tokens and max_tokens %zu "
                             "need more positions than %s holds (%llu)",
                             prompt_len, o->max_tokens, atlas_model_name(m),
                             (unsigned long long)max_seq);
  }
  // The rest (sampling ranges, stop strings) as generation will check them.
  atlas_gen_config c;
  memset(&c, 0, sizeof(c));
  c.max_tokens = o->max_tokens;
  c.sampling = atlas_sampler_config_default();
  c.sampling.temperature = o->temperature;
  c.sampling.top_k = o->top_k;
  c.sampling.top_p = o->top_p;
  c.sampling.min_p = o->min_p;
  c.sampling.repetition_penalty = o->repetition_penalty;
  c.sampling.seed = o->seed;
  c.tokenizer = o->tokenizer;
  c.stop_strings = o->stop_strings;
  c.stop_count = o->stop_count;
  atlas_gen_state g;
  atlas_status s = atlas_gen_state_init(&g, &c, prompt, 0,
                                        (size_t)atlas_model_vocab_size(m));
  atlas_gen_state_deinit(&g);
  return s == ATLAS_OK ? ATLAS_OK
                       : atlas_status_join(
                             s, atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                                  "request options refused"));
}

static char *copy_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p != NULL) memcpy(p, s, n);
  return p;
}

static atlas_status request_make(const uint32_t *prompt, size_t prompt_len,
                                 const atlas_request_options *o,
                                 sched_request **out) {
  sched_request *r = calloc(1, sizeof(*r));
  if (r == NULL) goto oom;
  r->options = *o;
  r->prompt = malloc(prompt_len * sizeof(uint32_t));
  if (r->prompt == NULL) goto oom;
  memcpy(r->prompt, prompt, prompt_len * sizeof(uint32_t));
  r->prompt_len = prompt_len;
  if (o->stop_count > 0) {
    r->stops = calloc(o->stop_count, sizeof(char *));
    if (r->stops == NULL) goto oom;
    for (size_t i = 0; i < o->stop_count; ++i) {
      r->stops[i] = copy_string(o->stop_strings[i]);
      if (r->stops[i] == NULL) goto oom;
    }
  }
  r->options.stop_strings = (const char *const *)r->stops;
  atomic_init(&r->cancelled, false);
  *out = r;
  return ATLAS_OK;
oom:
  if (r != NULL) {
    r->options.stop_count = o->stop_count;
    request_free(r);
  }
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "request: no memory to queue %zu prompt tokens",
                           prompt_len);
}

atlas_status atlas_scheduler_submit(atlas_scheduler *sched,
                                    const uint32_t *prompt, size_t prompt_len,
                                    const atlas_request_options *options,
                                    uint64_t *out_id) {
  if (out_id != NULL) *out_id = 0;
  if (sched == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_scheduler_submit: NULL scheduler");
  }
  atlas_request_options o;
  atlas_request_options_init(&o);
  if (options != NULL) {
    ATLAS_RETURN_IF_ERROR(
        copy_sized(&o, sizeof(o), options, "atlas_request_options"));
  }
  ATLAS_RETURN_IF_ERROR(check_request(sched, prompt, prompt_len, &o));
  sched_request *r = NULL;
  ATLAS_RETURN_IF_ERROR(request_make(prompt, prompt_len, &o, &r));
  pthread_mutex_lock(&sched->mu);
  atlas_status s = ATLAS_OK;
  if (sched->shutdown) {
    s = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                          "atlas_scheduler_submit: the scheduler is shutting "
                          "down");
  } else if (sched->options.max_waiting > 0 &&
             sched->waiting >= sched->options.max_waiting) {
    s = atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                          "atlas_scheduler_submit: %zu requests are waiting "
                          "(max_waiting)",
                          sched->waiting);
  } else {
    r->id = sched->next_id++;
    if (sched->tail != NULL) {
      sched->tail->next = r;
    } else {
      sched->head = r;
    }
    sched->tail = r;
    sched->waiting++;
    if (out_id != NULL) *out_id = r->id;
    pthread_cond_broadcast(&sched->cv);
  }
  pthread_mutex_unlock(&sched->mu);
  if (s != ATLAS_OK) request_free(r);
  return s;
}

atlas_status atlas_scheduler_cancel(atlas_scheduler *sched,
                                    uint64_t request_id) {
  if (sched == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_scheduler_cancel: NULL scheduler");
  }
  bool found = false;
  pthread_mutex_lock(&sched->mu);
  for (sched_request *r = sched->head; r != NULL && !found; r = r->next) {
    if (r->id == request_id) {
      atomic_store(&r->cancelled, true);
      found = true;
    }
  }
  if (!found && sched->current != NULL && sched->current->id == request_id) {
    atomic_store(&sched->current->cancelled, true);
    found = true;
  }
  pthread_cond_broadcast(&sched->cv);
  pthread_mutex_unlock(&sched->mu);
  if (!found) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "atlas_scheduler_cancel: no request %llu is "
                             "queued or running",
                             (unsigned long long)request_id);
  }
  return ATLAS_OK;
}

// One request run to its end through the model's own generation loop (no
// batching yet): the generation state decides tokens, text and the end.
typedef struct serial_run {
  atlas_scheduler *sched;
  sched_request *r;
  atlas_gen_state g;
  float logprob;
  atlas_status error;
  bool aborted;
} serial_run;

static atlas_status serial_choose(void *ctx, const float *logits,
                                  size_t vocab_size, uint32_t *out_token) {
  serial_run *run = ctx;
  return atlas_gen_state_choose(&run->g, logits, vocab_size, out_token,
                                &run->logprob);
}

static bool serial_token(void *ctx, uint32_t token) {
  serial_run *run = ctx;
  if (atomic_load(&run->r->cancelled)) {
    run->aborted = true;
    return false;
  }
  const char *text = "";
  size_t len = 0;
  run->error = atlas_gen_state_accept(&run->g, token, &text, &len);
  if (run->error != ATLAS_OK) return false;
  atlas_sched_event e;
  memset(&e, 0, sizeof(e));
  e.has_token = true;
  e.token = token;
  e.logprob = run->logprob;
  e.text = text;
  e.text_len = len;
  e.completion_tokens = run->g.generated;
  if (run->g.finish != ATLAS_GEN_RUNNING) {
    e.finished = true;
    e.finish = run->g.finish == ATLAS_GEN_LENGTH ? ATLAS_SCHED_LENGTH
                                                 : ATLAS_SCHED_STOP;
  }
  pthread_mutex_lock(&run->sched->mu);
  run->sched->tokens++;
  pthread_mutex_unlock(&run->sched->mu);
  emit(run->r, &e);
  return !e.finished;
}

static atlas_status serial_request(atlas_scheduler *sched, sched_request *r) {
  serial_run run;
  memset(&run, 0, sizeof(run));
  run.sched = sched;
  run.r = r;
  const atlas_request_options *o = &r->options;
  atlas_gen_config c;
  memset(&c, 0, sizeof(c));
  c.max_tokens = o->max_tokens;
  c.sampling = atlas_sampler_config_default();
  c.sampling.temperature = o->temperature;
  c.sampling.top_k = o->top_k;
  c.sampling.top_p = o->top_p;
  c.sampling.min_p = o->min_p;
  c.sampling.repetition_penalty = o->repetition_penalty;
  c.sampling.seed = o->seed;
  const atlas_eos *eos = atlas_model_eos(sched->model);
  c.eos = eos->ids;
  c.eos_count = eos->count;
  c.ignore_eos = o->ignore_eos;
  c.tokenizer = o->tokenizer;
  c.stop_strings = o->stop_strings;
  c.stop_count = o->stop_count;
  c.logprobs = o->logprobs;
  atlas_status s =
      atlas_gen_state_init(&run.g, &c, r->prompt, r->prompt_len,
                           (size_t)atlas_model_vocab_size(sched->model));
  uint32_t *out = NULL;
  if (s == ATLAS_OK) {
    out = malloc(o->max_tokens * sizeof(uint32_t));
    if (out == NULL) {
      s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                            "request %llu: no memory for %zu tokens",
                            (unsigned long long)r->id, o->max_tokens);
    }
  }
  if (s == ATLAS_OK) {
    atlas_model_generate_hooks hooks;
    memset(&hooks, 0, sizeof(hooks));
    hooks.ignore_eos = true;  // the generation state decides the end
    hooks.on_token = serial_token;
    hooks.token_ctx = &run;
    if (!atlas_gen_state_greedy(&run.g)) {
      hooks.choose = serial_choose;
      hooks.choose_ctx = &run;
    }
    size_t count = 0;
    s = atlas_model_generate_hooked(sched->model, r->prompt, r->prompt_len,
                                    o->max_tokens, &hooks, out, &count);
    s = atlas_status_join(s, run.error);
    run.error = ATLAS_OK;
  }
  atlas_status step_failure = ATLAS_OK;
  if (s != ATLAS_OK) {
    finish_request(r, ATLAS_SCHED_ERROR, s, "", 0, run.g.generated);
    step_failure = s;
  } else if (run.g.finish == ATLAS_GEN_RUNNING) {
    // Cancelled (or the loop ended early): what was held back is the
    // caller's, then the end.
    const char *text = "";
    size_t len = 0;
    s = atlas_gen_state_end(&run.g, ATLAS_GEN_CALLER, &text, &len);
    finish_request(r, s == ATLAS_OK ? ATLAS_SCHED_ABORT : ATLAS_SCHED_ERROR, s,
                   text, len, run.g.generated);
    atlas_status_free(s);
  }
  free(out);
  atlas_gen_state_deinit(&run.g);
  return step_failure;
}

atlas_status atlas_scheduler_step(atlas_scheduler *sched, bool *out_worked) {
  if (out_worked != NULL) *out_worked = false;
  pthread_mutex_lock(&sched->mu);
  sched_request *r = sched->head;
  if (r != NULL) {
    sched->head = r->next;
    if (sched->head == NULL) sched->tail = NULL;
    sched->waiting--;
    r->next = NULL;
    sched->current = r;
  }
  pthread_mutex_unlock(&sched->mu);
  if (r == NULL) return ATLAS_OK;
  if (out_worked != NULL) *out_worked = true;
  atlas_status s = ATLAS_OK;
  if (atomic_load(&r->cancelled)) {
    finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
  } else {
    s = serial_request(sched, r);
  }
  pthread_mutex_lock(&sched->mu);
  sched->current = NULL;
  sched->steps++;
  pthread_mutex_unlock(&sched->mu);
  request_free(r);
  return s;
}

atlas_status atlas_scheduler_run(atlas_scheduler *sched) {
  for (;;) {
    pthread_mutex_lock(&sched->mu);
    while (!sched->shutdown && sched->head == NULL) {
      pthread_cond_wait(&sched->cv, &sched->mu);
    }
    bool stop = sched->shutdown;
    pthread_mutex_unlock(&sched->mu);
    if (stop) break;
    bool worked = false;
    atlas_status s = atlas_scheduler_step(sched, &worked);
    if (s != ATLAS_OK) {
      atlas_log(&atlas_model_spec_of(sched->model)->log, ATLAS_LOG_ERROR,
                "scheduler step: %s", atlas_status_message(s));
      atlas_status_free(s);
    }
  }
  // Queued requests end now; the caller destroys the scheduler.
  pthread_mutex_lock(&sched->mu);
  sched_request *r = sched->head;
  sched->head = sched->tail = NULL;
  sched->waiting = 0;
  pthread_mutex_unlock(&sched->mu);
  while (r != NULL) {
    sched_request *next = r->next;
    finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
    request_free(r);
    r = next;
  }
  return ATLAS_OK;
}

void atlas_scheduler_shutdown(atlas_scheduler *sched) {
  pthread_mutex_lock(&sched->mu);
  sched->shutdown = true;
  pthread_cond_broadcast(&sched->cv);
  pthread_mutex_unlock(&sched->mu);
}

void atlas_scheduler_stats_get(atlas_scheduler *sched,
                               atlas_scheduler_stats *out_stats) {
  memset(out_stats, 0, sizeof(*out_stats));
  pthread_mutex_lock(&sched->mu);
  out_stats->waiting = sched->waiting;
  out_stats->running = sched->current != NULL ? 1 : 0;
  out_stats->steps = sched->steps;
  out_stats->tokens = sched->tokens;
  pthread_mutex_unlock(&sched->mu);
}
