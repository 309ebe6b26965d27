// atlas serve's engine: the driving thread, admission of jobs, and hot
// swaps under load (serve_state.h).
//
// A swap drains: new requests wait (queued, not refused) while it runs; the
// scheduler stops admitting, and sequences already generating get
// config.drain_s seconds to finish on the old model. Those still running
// then are ended with finish_reason "abort" (a stream also gets an error
// event). Requests that never produced a token are submitted again on
// whatever model serves after the swap (the new one, or the old one after a
// refused / restored / kept swap); if none does (LOST) they get 503.
#define _POSIX_C_SOURCE 200809L  // clock_gettime, strdup
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/serve/openai/oai_response.h"
#include "atlas/tools/serve/serve_state.h"

static void timed_wait(atlas_server *s, double deadline) {
  if (deadline <= 0) {
    pthread_cond_wait(&s->cv, &s->mu);
    return;
  }
  double left = deadline - atlas_oai_now();
  if (left <= 0) return;
  if (left > 0.25) left = 0.25;  // recheck the flags now and then
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + left;
  ts.tv_sec = (time_t)t;
  ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
  pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

// Runs the scheduler while there is one; sleeps while a swap replaces it.
static void *driver_main(void *arg) {
  atlas_server *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->driver_exit &&
           (s->sm.sched == NULL || atomic_load(&s->swapping))) {
      pthread_cond_wait(&s->cv, &s->mu);
    }
    if (s->driver_exit) break;
    atlas_scheduler *sched = s->sm.sched;
    s->driver_running = true;
    pthread_mutex_unlock(&s->mu);
    atlas_status st = atlas_scheduler_run(sched);
    if (st != ATLAS_OK) {
      fprintf(stderr, "atlas serve: the scheduler stopped: %s\n",
              atlas_status_message(st));
      atlas_status_free(st);
    }
    pthread_mutex_lock(&s->mu);
    s->driver_running = false;
    pthread_cond_broadcast(&s->cv);
    // run returned because of a shutdown: wait for a swap to install the
    // next scheduler (a new generation), or for the end
    uint64_t gen = s->sched_gen;
    while (!s->driver_exit && s->sched_gen == gen) {
      pthread_cond_wait(&s->cv, &s->mu);
    }
    if (s->driver_exit) break;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

atlas_status atlas_serve_engine_start(atlas_server *s) {
  s->jobs.next = s->jobs.prev = &s->jobs;
  if (pthread_create(&s->driver, NULL, driver_main, s) != 0) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "could not start the driving thread");
  }
  return ATLAS_OK;
}

static bool is_swapping(void *ctx) {
  atlas_server *s = ctx;
  return atomic_load(&s->swapping);
}

static void env_of(atlas_server *s, atlas_oai_env *env) {
  atlas_serve_model_env(&s->sm, env);
  env->model_name = s->served_name;
  env->swapping = is_swapping;
  env->swapping_ctx = s;
  env->observe = atlas_serve_metrics_observe;
  env->observe_ctx = &s->metrics;
}

// Stops the scheduler's admissions and waits for the driving thread to
// leave run: at most drain_s for the running sequences, then they are
// cancelled (server locked on entry and exit).
static void drain(atlas_server *s, double drain_s, const char *why) {
  if (s->sm.sched == NULL) return;
  atlas_scheduler_shutdown(s->sm.sched);
  double deadline = atlas_oai_now() + drain_s;
  bool cut = false;
  while (s->driver_running) {
    if (!cut && atlas_oai_now() >= deadline) {
      cut = true;
      for (atlas_serve_job_link *l = s->jobs.next; l != &s->jobs; l = l->next) {
        atlas_oai_job_cancel(l->job, 503, why);
      }
    }
    timed_wait(s, cut ? 0 : deadline);
  }
}

// Submits the jobs a swap aborted before their first token (server locked).
static void requeue(atlas_server *s) {
  atlas_oai_env env;
  env_of(s, &env);
  for (atlas_serve_job_link *l = s->jobs.next; l != &s->jobs; l = l->next) {
    if (atlas_oai_job_state_get(l->job) != ATLAS_OAI_JOB_REQUEUE) continue;
    if (s->stopping) {
      // A shutdown came during the swap: nothing will drive this job.
      atlas_oai_job_fail(l->job, 503, "the server is shutting down",
                         "model_unavailable");
      continue;
    }
    if (env.sched == NULL) {
      atlas_oai_job_fail(l->job, 503, s->lost_why, "model_unavailable");
      continue;
    }
    atlas_oai_error err;
    int http = 500;
    atlas_status st = atlas_oai_job_submit(l->job, &env, &err, &http);
    if (st != ATLAS_OK &&
        atlas_oai_job_state_get(l->job) == ATLAS_OAI_JOB_REQUEUE) {
      atlas_oai_job_fail(l->job, http, atlas_status_message(st), NULL);
    }
    atlas_status_free(st);
  }
}

static const char *outcome_name(atlas_swap_outcome o) {
  switch (o) {
    case ATLAS_SWAP_OUTCOME_SWAPPED:
      return "swapped";
    case ATLAS_SWAP_OUTCOME_REFUSED:
      return "refused";
    case ATLAS_SWAP_OUTCOME_RESTORED:
      return "restored";
    case ATLAS_SWAP_OUTCOME_LOST:
      return "lost";
    case ATLAS_SWAP_OUTCOME_KEPT:
      return "kept";
  }
  return "unknown";
}

static char *swap_body(const atlas_swap_info *info, atlas_status st,
                       const char *serving) {
  json_t *o = json_pack(
      "{s:s s:b s:I s:I s:I s:f s:f s:f}", "outcome",
      outcome_name(info->outcome), "side_by_side", info->side_by_side,
      "needed_bytes", (json_int_t)info->needed_bytes, "free_bytes",
      (json_int_t)info->free_bytes, "releasable_bytes",
      (json_int_t)info->releasable_bytes, "teardown_ms", info->teardown_ms,
      "load_ms", info->load_ms, "total_ms", info->total_ms);
  if (o != NULL) {
    char *msg = st ? atlas_oai_utf8_lossy(atlas_status_message(st),
                                          strlen(atlas_status_message(st)))
                   : NULL;
    json_object_set_new(o, "error", msg ? json_string(msg) : json_null());
    free(msg);
    char *dir = serving ? atlas_oai_utf8_lossy(serving, strlen(serving)) : NULL;
    json_object_set_new(o, "serving", dir ? json_string(dir) : json_null());
    free(dir);
  }
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

void atlas_serve_swap(atlas_server *s, const char *dir, int *out_http,
                      char **out_body) {
  *out_body = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->swap_busy || s->stopping) {
    pthread_mutex_unlock(&s->mu);
    *out_http = s->stopping ? 503 : 409;
    atlas_status_free(atlas_oai_error_body(
        *out_http,
        s->stopping ? "the server is shutting down"
                    : "a swap is already under way; try again after it",
        NULL, NULL, NULL, out_body));
    return;
  }
  s->swap_busy = true;
  atomic_store(&s->swapping, true);
  // Prompts being encoded with the old tokenizer finish first (admissions
  // start no new ones while `swapping` is set).
  while (s->encoders > 0) pthread_cond_wait(&s->cv, &s->mu);
  drain(s, s->config.drain_s,
        "the model was swapped while this request ran; it was cut after the "
        "swap's drain (--drain-s)");
  atlas_status st = atlas_serve_model_stop(&s->sm);  // nothing left in it
  // The swap works on a copy: readers under the lock see no half-swapped
  // bundle (and refuse what needs the model while `swapping` is set).
  atlas_serve_model work = s->sm;
  pthread_mutex_unlock(&s->mu);
  atlas_swap_info info;
  st = atlas_status_join(st, atlas_serve_model_swap(&work, dir, &info));
  pthread_mutex_lock(&s->mu);
  s->sm = work;
  s->sched_gen++;
  if (s->sm.model == NULL || s->sm.sched == NULL) {
    snprintf(s->lost_why, sizeof s->lost_why,
             "no model is serving: the swap to %.200s left none (%.200s); "
             "POST /admin/swap to load one",
             dir, st ? atlas_status_message(st) : "no scheduler");
  }
  atlas_serve_metrics_swap(&s->metrics, (int)info.outcome);
  atomic_store(&s->swapping, false);
  s->swap_busy = false;
  requeue(s);
  pthread_cond_broadcast(&s->cv);
  *out_body = swap_body(&info, st, s->sm.model ? s->sm.dir : NULL);
  pthread_mutex_unlock(&s->mu);
  // SWAPPED 200; a refusal (bad directory, over budget) 400; a failed load
  // that kept or restored the old model 500; none left 503.
  *out_http = st == ATLAS_OK                               ? 200
              : info.outcome == ATLAS_SWAP_OUTCOME_REFUSED ? 400
              : s->sm.model == NULL || s->sm.sched == NULL ? 503
                                                           : 500;
  atlas_status_free(st);
}

int atlas_serve_health(atlas_server *s, char **out_body) {
  pthread_mutex_lock(&s->mu);
  bool swapping = atomic_load(&s->swapping);
  bool serving = s->sm.sched != NULL && !s->stopping;
  json_t *o = NULL;
  if (swapping) {
    o = json_pack("{s:s}", "status", "swapping");
  } else if (serving) {
    o = json_pack("{s:s s:s}", "status", "ok", "model", s->served_name);
  } else {
    o = json_pack("{s:s s:s}", "status", "unavailable", "reason",
                  s->stopping ? "shutting down" : s->lost_why);
  }
  pthread_mutex_unlock(&s->mu);
  *out_body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return swapping || serving ? 200 : 503;
}

// Why a request cannot be admitted now (server locked), or OK.
static atlas_status refusal(atlas_server *s, int *http) {
  if (s->stopping) {
    *http = 503;
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "the server is shutting down");
  }
  if (atomic_load(&s->swapping)) {
    *http = 503;
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "a swap outlasted --timeout-s");
  }
  if (s->sm.sched == NULL) {
    *http = 503;
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE, "%s", s->lost_why);
  }
  if (s->config.max_waiting > 0 && s->job_count >= s->config.max_waiting) {
    *http = 429;
    return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                             "the queue is full (%zu requests); retry later",
                             s->job_count);
  }
  return ATLAS_OK;
}

static void list_add(atlas_server *s, atlas_oai_job *job) {
  atlas_serve_job_link *l = calloc(1, sizeof *l);
  if (l == NULL) {
    atlas_oai_job_cancel(job, 500, "no memory");
    return;
  }
  l->job = job;
  l->next = &s->jobs;
  l->prev = s->jobs.prev;
  s->jobs.prev->next = l;
  s->jobs.prev = l;
  s->job_count++;
}

// The prompt is encoded (and the chat template rendered) outside the lock,
// so a long prompt holds up no other request: `encoders` counts those under
// way, and a swap waits for them before it replaces the tokenizer. Should a
// swap start meanwhile, the job is prepared again for what serves after it.
atlas_status atlas_serve_admit(atlas_server *s, atlas_oai_job *job,
                               double deadline, atlas_oai_error *err,
                               int *http) {
  err->param[0] = '\0';
  pthread_mutex_lock(&s->mu);
  atlas_status st = ATLAS_OK;
  for (int tries = 0;; ++tries) {
    while (atomic_load(&s->swapping) && !s->stopping &&
           (deadline <= 0 || atlas_oai_now() < deadline)) {
      timed_wait(s, deadline);
    }
    st = refusal(s, http);
    if (st != ATLAS_OK) break;
    atlas_oai_env env;
    env_of(s, &env);
    uint64_t gen = s->sched_gen;
    s->encoders++;
    pthread_mutex_unlock(&s->mu);
    st = atlas_oai_job_prepare(job, &env, err, http);
    pthread_mutex_lock(&s->mu);
    s->encoders--;
    pthread_cond_broadcast(&s->cv);
    if (st != ATLAS_OK) break;
    if (!atomic_load(&s->swapping) && s->sched_gen == gen) {
      st = atlas_oai_job_enqueue(job, &env, http);
      // On the list even when refused part-way: release waits for it.
      if (st == ATLAS_OK || atlas_oai_job_state_get(job) != ATLAS_OAI_JOB_NEW) {
        list_add(s, job);
      }
      break;
    }
    if (tries >= 100) {  // swaps back to back, a hundred times
      *http = 503;
      st = atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "the model kept being swapped; retry later");
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

void atlas_serve_release(atlas_server *s, atlas_oai_job *job) {
  pthread_mutex_lock(&s->mu);
  for (atlas_serve_job_link *l = s->jobs.next; l != &s->jobs; l = l->next) {
    if (l->job == job) {
      l->prev->next = l->next;
      l->next->prev = l->prev;
      s->job_count--;
      free(l);
      break;
    }
  }
  pthread_mutex_unlock(&s->mu);
  // Off the list, a swap no longer requeues it: a cancel ends it.
  atlas_oai_job_cancel(job, 499, "the client went away");
  atlas_oai_job_wait_end(job);
  uint64_t prompt = 0, completion = 0;
  atlas_oai_job_usage(job, &prompt, &completion);
  atlas_serve_metrics_tokens(&s->metrics, prompt, completion);
  atlas_oai_job_free(job);
}

void atlas_serve_engine_stop(atlas_server *s) {
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  // Running streams finish; new work was refused already. Bounded by the
  // drain time, then cut. (A swap under way finishes on its own thread; its
  // requeued requests then get 503.)
  drain(s, s->config.drain_s,
        "the server is shutting down; the request was cut after the drain "
        "(--drain-s)");
  s->driver_exit = true;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->driver, NULL);
}
