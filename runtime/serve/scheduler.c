// The scheduler (scheduler.h): the queue, cancellation and events under one
// mutex; the driving thread runs the model with no lock held.
#include "atlas/runtime/serve/scheduler.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/log.h"
#include "atlas/runtime/serve/scheduler_impl.h"

enum { kDefaultRunning = 64, kDefaultStepTokens = 2048 };

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

// The step API's engine and the running set, sized by the engine's limits;
// a model without a batch step runs one request at a time (no engine).
static atlas_status engine_make(atlas_scheduler *s) {
  atlas_batch_engine_options eo;
  memset(&eo, 0, sizeof(eo));
  eo.kv_budget_bytes = s->options.kv_budget_bytes;
  eo.prefix_cache = s->options.prefix_cache;
  eo.default_sequences =
      s->options.max_running < 8 ? s->options.max_running : 8;
  atlas_status st = atlas_batch_engine_create(s->model, &eo, &s->engine);
  if (st != ATLAS_OK &&
      atlas_status_code_of(st) == ATLAS_STATUS_UNIMPLEMENTED) {
    atlas_log(&atlas_model_spec_of(s->model)->log, ATLAS_LOG_INFO,
              "scheduler: %s; requests run one at a time",
              atlas_status_message(st));
    atlas_status_free(st);
    s->engine = NULL;
    st = ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(st);
  size_t seqs = 1;
  if (s->engine != NULL) {
    seqs = atlas_batch_engine_max_seqs(s->engine);
    if (s->options.max_running > seqs) s->options.max_running = seqs;
    size_t rows = atlas_batch_engine_max_rows(s->engine);
    if (s->options.max_step_tokens > rows) s->options.max_step_tokens = rows;
    s->block_tokens =
        atlas_kv_pool_block_tokens(atlas_batch_engine_pool(s->engine));
    atlas_kv_pool_stats_get(atlas_batch_engine_pool(s->engine), &s->kv);
  } else {
    s->options.max_running = 1;
  }
  s->running = calloc(s->options.max_running, sizeof(sched_request *));
  s->items = calloc(seqs, sizeof(atlas_batch_item));
  s->item_req = calloc(seqs, sizeof(sched_request *));
  if (s->running == NULL || s->items == NULL || s->item_req == NULL) {
    atlas_status_free(atlas_batch_engine_destroy(s->engine));
    s->engine = NULL;
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_scheduler_create: no memory");
  }
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
  s->vocab = (size_t)atlas_model_vocab_size(model);
  atlas_status st = engine_make(s);
  if (st != ATLAS_OK) {
    free(s->running);
    free(s->items);
    free(s->item_req);
    free(s);
    return st;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  *out_scheduler = s;
  return ATLAS_OK;
}

void atlas_sched_request_free(sched_request *r) {
  if (r == NULL) return;
  if (r->g_ready) atlas_gen_state_deinit(&r->g);
  free(r->input);
  for (size_t i = 0; i < r->options.stop_count; ++i) free(r->stops[i]);
  free(r->stops);
  free(r->prompt);
  free(r->followers);
  free(r);
}

// A queued request ends with ABORT, and the group it leads with it.
static void finish_queued(sched_request *r) {
  for (size_t i = 0; i < r->follower_count; ++i) {
    atlas_sched_finish_request(r->followers[i], ATLAS_SCHED_ABORT, ATLAS_OK, "",
                               0, 0);
    atlas_sched_request_free(r->followers[i]);
  }
  r->follower_count = 0;
  atlas_sched_finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
  atlas_sched_request_free(r);
}

void atlas_sched_emit(sched_request *r, atlas_sched_event *e) {
  e->request_id = r->id;
  e->prompt_tokens = r->prompt_len;
  if (r->options.on_event != NULL) r->options.on_event(r->options.ctx, e);
}

// The final event of a request that produced no token in this call.
void atlas_sched_finish_request(sched_request *r, atlas_sched_finish why,
                                atlas_status status, const char *text,
                                size_t len, size_t generated) {
  atlas_sched_event e;
  memset(&e, 0, sizeof(e));
  e.text = text != NULL ? text : "";
  e.text_len = len;
  e.finished = true;
  e.finish = why;
  e.status = status;
  e.completion_tokens = generated;
  atlas_sched_emit(r, &e);
}

atlas_status atlas_scheduler_destroy(atlas_scheduler *sched) {
  if (sched == NULL) return ATLAS_OK;
  atlas_sched_batch_abort_all(sched);
  sched_request *r = sched->head;
  while (r != NULL) {
    sched_request *next = r->next;
    finish_queued(r);
    r = next;
  }
  atlas_status st = atlas_batch_engine_destroy(sched->engine);
  pthread_cond_destroy(&sched->cv);
  pthread_mutex_destroy(&sched->mu);
  free(sched->running);
  free(sched->items);
  free(sched->item_req);
  free(sched->logits);
  free(sched);
  return st;
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
  c.top_logprobs = o->top_logprobs;
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
    atlas_sched_request_free(r);
  }
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "request: no memory to queue %zu prompt tokens",
                           prompt_len);
}

atlas_status atlas_scheduler_submit(atlas_scheduler *sched,
                                    const uint32_t *prompt, size_t prompt_len,
                                    const atlas_request_options *options,
                                    uint64_t *out_id) {
  uint64_t id = 0;
  atlas_request_options o;
  if (options == NULL) {
    atlas_request_options_init(&o);
    options = &o;
  }
  atlas_status s =
      atlas_scheduler_submit_n(sched, prompt, prompt_len, options, 1, &id);
  if (out_id != NULL) *out_id = id;
  return s;
}

// The requests of a group, made and checked (all or none).
static atlas_status group_make(atlas_scheduler *sched, const uint32_t *prompt,
                               size_t prompt_len,
                               const atlas_request_options *options, size_t n,
                               sched_request **rs) {
  // The caller's array steps by the caller's struct size.
  size_t stride = *(const size_t *)options;
  for (size_t i = 0; i < n; ++i) {
    const atlas_request_options *in =
        (const atlas_request_options *)((const char *)options + i * stride);
    atlas_request_options o;
    atlas_request_options_init(&o);
    ATLAS_RETURN_IF_ERROR(
        copy_sized(&o, sizeof(o), in, "atlas_request_options"));
    ATLAS_RETURN_IF_ERROR(check_request(sched, prompt, prompt_len, &o));
    ATLAS_RETURN_IF_ERROR(request_make(prompt, prompt_len, &o, &rs[i]));
  }
  if (sched->engine == NULL) return ATLAS_OK;  // one after another
  // Linked: only a leader queues; the others wait for its fork. Groups of
  // at most max_running (they are admitted whole).
  size_t cap = sched->options.max_running;
  for (size_t g = 0; g < n; g += cap) {
    size_t end = g + cap < n ? g + cap : n;
    if (end - g < 2) break;
    sched_request *l = rs[g];
    l->followers = malloc((end - g - 1) * sizeof(sched_request *));
    if (l->followers == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "request: no memory for %zu choices", n);
    }
    for (size_t i = g + 1; i < end; ++i) {
      l->followers[l->follower_count++] = rs[i];
      rs[i]->leader = l;
    }
  }
  return ATLAS_OK;
}

static void queue_push(atlas_scheduler *sched, sched_request *r) {
  if (sched->tail != NULL) {
    sched->tail->next = r;
  } else {
    sched->head = r;
  }
  sched->tail = r;
}

atlas_status atlas_scheduler_submit_n(atlas_scheduler *sched,
                                      const uint32_t *prompt, size_t prompt_len,
                                      const atlas_request_options *options,
                                      size_t n, uint64_t *out_ids) {
  for (size_t i = 0; out_ids != NULL && i < n; ++i) out_ids[i] = 0;
  if (sched == NULL || options == NULL || n == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_scheduler_submit_n: NULL scheduler or "
                             "options, or n 0");
  }
  sched_request **rs = calloc(n, sizeof(sched_request *));
  if (rs == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "request: no memory for %zu choices", n);
  }
  atlas_status s = group_make(sched, prompt, prompt_len, options, n, rs);
  pthread_mutex_lock(&sched->mu);
  if (s == ATLAS_OK && sched->shutdown) {
    s = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                          "atlas_scheduler_submit: the scheduler is shutting "
                          "down");
  } else if (s == ATLAS_OK && sched->options.max_waiting > 0 &&
             sched->waiting + n > sched->options.max_waiting) {
    s = atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                          "atlas_scheduler_submit: %zu requests are waiting "
                          "(max_waiting)",
                          sched->waiting);
  } else if (s == ATLAS_OK) {
    for (size_t i = 0; i < n; ++i) {
      rs[i]->id = sched->next_id++;
      if (out_ids != NULL) out_ids[i] = rs[i]->id;
      if (rs[i]->leader == NULL) queue_push(sched, rs[i]);
    }
    sched->waiting += n;
    pthread_cond_broadcast(&sched->cv);
  }
  pthread_mutex_unlock(&sched->mu);
  if (s != ATLAS_OK) {
    for (size_t i = 0; i < n; ++i) {
      if (rs[i] != NULL) rs[i]->follower_count = 0;
      atlas_sched_request_free(rs[i]);
    }
  }
  free(rs);
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
    for (size_t i = 0; i < r->follower_count && !found; ++i) {
      if (r->followers[i]->id == request_id) {
        atomic_store(&r->followers[i]->cancelled, true);
        found = true;
      }
    }
  }
  for (size_t i = 0; i < sched->running_count && !found; ++i) {
    if (sched->running[i]->id == request_id) {
      atomic_store(&sched->running[i]->cancelled, true);
      found = true;
    }
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
  e.top_ids = run->g.top_ids;
  e.top_logprobs = run->g.top_logprobs;
  e.top_count = run->g.top_count;
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
  atlas_sched_emit(run->r, &e);
  return !e.finished;
}

void atlas_sched_gen_config(const atlas_scheduler *sched,
                            const sched_request *r, atlas_gen_config *c) {
  const atlas_request_options *o = &r->options;
  memset(c, 0, sizeof(*c));
  c->max_tokens = o->max_tokens;
  c->sampling = atlas_sampler_config_default();
  c->sampling.temperature = o->temperature;
  c->sampling.top_k = o->top_k;
  c->sampling.top_p = o->top_p;
  c->sampling.min_p = o->min_p;
  c->sampling.repetition_penalty = o->repetition_penalty;
  c->sampling.seed = o->seed;
  const atlas_eos *eos = atlas_model_eos(sched->model);
  c->eos = eos->ids;
  c->eos_count = eos->count;
  c->ignore_eos = o->ignore_eos;
  c->tokenizer = o->tokenizer;
  c->stop_strings = o->stop_strings;
  c->stop_count = o->stop_count;
  c->logprobs = o->logprobs;
  c->top_logprobs = o->logprobs ? o->top_logprobs : 0;
}

static atlas_status serial_request(atlas_scheduler *sched, sched_request *r) {
  serial_run run;
  memset(&run, 0, sizeof(run));
  run.sched = sched;
  run.r = r;
  const atlas_request_options *o = &r->options;
  atlas_gen_config c;
  atlas_sched_gen_config(sched, r, &c);
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
    atlas_sched_finish_request(r, ATLAS_SCHED_ERROR, s, "", 0, run.g.generated);
    step_failure = s;
  } else if (run.g.finish == ATLAS_GEN_RUNNING) {
    // Cancelled (or the loop ended early): what was held back is the
    // caller's, then the end.
    const char *text = "";
    size_t len = 0;
    s = atlas_gen_state_end(&run.g, ATLAS_GEN_CALLER, &text, &len);
    atlas_sched_finish_request(
        r, s == ATLAS_OK ? ATLAS_SCHED_ABORT : ATLAS_SCHED_ERROR, s, text, len,
        run.g.generated);
    atlas_status_free(s);
  }
  free(out);
  atlas_gen_state_deinit(&run.g);
  return step_failure;
}

// One request run to its end (a model without a batch step).
static atlas_status serial_step(atlas_scheduler *sched, bool *out_worked) {
  pthread_mutex_lock(&sched->mu);
  sched_request *r = sched->head;
  if (r != NULL) {
    sched->head = r->next;
    if (sched->head == NULL) sched->tail = NULL;
    sched->waiting--;
    r->next = NULL;
    sched->running[0] = r;
    sched->running_count = 1;
  }
  pthread_mutex_unlock(&sched->mu);
  if (r == NULL) return ATLAS_OK;
  *out_worked = true;
  atlas_status s = ATLAS_OK;
  if (atomic_load(&r->cancelled)) {
    atlas_sched_finish_request(r, ATLAS_SCHED_ABORT, ATLAS_OK, "", 0, 0);
  } else {
    s = serial_request(sched, r);
  }
  pthread_mutex_lock(&sched->mu);
  sched->running_count = 0;
  sched->steps++;
  pthread_mutex_unlock(&sched->mu);
  atlas_sched_request_free(r);
  return s;
}

atlas_status atlas_scheduler_step(atlas_scheduler *sched, bool *out_worked) {
  bool worked = false;
  atlas_status s = sched->engine != NULL
                       ? atlas_sched_batch_step(sched, &worked)
                       : serial_step(sched, &worked);
  if (out_worked != NULL) *out_worked = worked;
  return s;
}

// Every queued request ends with ABORT.
static void abort_waiting(atlas_scheduler *sched) {
  pthread_mutex_lock(&sched->mu);
  sched_request *r = sched->head;
  sched->head = sched->tail = NULL;
  sched->waiting = 0;
  pthread_mutex_unlock(&sched->mu);
  while (r != NULL) {
    sched_request *next = r->next;
    finish_queued(r);
    r = next;
  }
}

atlas_status atlas_scheduler_run(atlas_scheduler *sched) {
  for (;;) {
    pthread_mutex_lock(&sched->mu);
    while (!sched->shutdown && sched->head == NULL &&
           sched->running_count == 0) {
      pthread_cond_wait(&sched->cv, &sched->mu);
    }
    bool stop = sched->shutdown;
    pthread_mutex_unlock(&sched->mu);
    // After shutdown: the queue ends now, the running requests run out.
    if (stop) abort_waiting(sched);
    if (stop && sched->running_count == 0) break;
    bool worked = false;
    atlas_status s = atlas_scheduler_step(sched, &worked);
    if (s != ATLAS_OK) {
      atlas_log(&atlas_model_spec_of(sched->model)->log, ATLAS_LOG_ERROR,
                "scheduler step: %s", atlas_status_message(s));
      atlas_status_free(s);
    }
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
  out_stats->running = sched->running_count;
  out_stats->steps = sched->steps;
  out_stats->tokens = sched->tokens;
  out_stats->kv_blocks_total = sched->kv.total;
  out_stats->kv_blocks_used = sched->kv.used;
  out_stats->kv_blocks_cached = sched->kv.cached;
  out_stats->kv_blocks_free = sched->kv.free;
  out_stats->kv_block_tokens = sched->block_tokens;
  out_stats->kv_pool_bytes = sched->kv.bytes;
  out_stats->prefix_hit_tokens = sched->prefix_hits;
  out_stats->preempted = sched->preempted;
  out_stats->prompt_tokens_computed = sched->prompt_computed;
  pthread_mutex_unlock(&sched->mu);
}
