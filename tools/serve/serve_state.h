// atlas serve's carrier: everything the server holds lives in one struct
// (no statics; the shutdown signal's flag is runtime/lifecycle's). Shared by
// serve.c (the command), serve_http.c (routes), serve_engine.c (the
// driving thread, admission, swaps) and serve_metrics.c.
//
// Locking: `mu` guards the model bundle (sm), the job list, the swap state
// and the counters below it; a job's own state is under the job's mutex.
// Order: server mu, then a job's mu, then the scheduler's (inside its
// calls). Metrics have their own mutex, taken last.
#ifndef ATLAS_TOOLS_SERVE_SERVE_STATE_H_
#define ATLAS_TOOLS_SERVE_SERVE_STATE_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/serve/openai/oai_job.h"
#include "atlas/tools/serve/serve_model.h"

#ifdef __cplusplus
extern "C" {
#endif

// Limits (docs/SERVING.md).
enum {
  ATLAS_SERVE_BODY_MAX = 4 << 20,     // request body bytes (413 past it)
  ATLAS_SERVE_HEADER_MAX = 16 << 10,  // request line + headers (431)
  ATLAS_SERVE_CONNECTIONS = 256,      // open connections at once
  ATLAS_SERVE_PER_IP = 64,            // of them from one address
  ATLAS_SERVE_IDLE_S = 30,            // a silent connection is closed
  ATLAS_SERVE_DRAIN_S_DEFAULT = 10,   // a swap's drain before aborting
};

typedef struct atlas_serve_histogram {
  uint64_t counts[16];  // per bucket (le), the last is +Inf
  double sum;
  uint64_t count;
} atlas_serve_histogram;

// Requests by endpoint and HTTP status; latencies; swaps by outcome.
typedef struct atlas_serve_metrics {
  pthread_mutex_t mu;
  uint64_t endpoint_status[8][600];  // requests by endpoint and status
  uint64_t prompt_tokens, completion_tokens;
  atlas_serve_histogram ttft, itl;
  uint64_t swaps[5];  // by atlas_swap_outcome
} atlas_serve_metrics;

typedef struct atlas_serve_config {
  atlas_serve_model_config model;
  const char *host;
  int port;
  const char *api_key;  // NULL: none
  const char *served_name;
  double timeout_s;    // 0: none
  double drain_s;      // a swap's drain
  size_t max_waiting;  // requests queued beyond the running ones
} atlas_serve_config;

typedef struct atlas_server atlas_server;

// One live job, on the server's list (swaps requeue and drain through it).
typedef struct atlas_serve_job_link {
  atlas_oai_job *job;
  struct atlas_serve_job_link *prev, *next;
} atlas_serve_job_link;

struct atlas_server {
  atlas_serve_config config;
  char *served_name;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atlas_serve_model sm;  // sm.model NULL: lost; sm.sched NULL: none
  atomic_bool swapping;  // a swap is under way (jobs requeue)
  bool swap_busy;        // one swap at a time
  bool stopping;         // shutdown: no new work
  bool driver_running;   // the driving thread is inside atlas_scheduler_run
  bool driver_exit;      // the driving thread should end
  uint64_t sched_gen;    // bumped when a swap installs a scheduler
  size_t connections;    // open HTTP requests (shutdown waits for them)
  size_t encoders;       // admissions encoding a prompt outside the lock
  pthread_t driver;
  atlas_serve_job_link jobs;  // sentinel of the live jobs
  size_t job_count;
  char lost_why[512];  // why nothing serves (after a lost swap)
  atlas_serve_metrics metrics;
  struct MHD_Daemon *daemon;
  uint16_t bound_port;
};

// serve_engine.c
ATLAS_MUST_USE atlas_status atlas_serve_engine_start(atlas_server *s);
void atlas_serve_engine_stop(atlas_server *s);
// Admits a job: waits out a swap (until `deadline`, 0: none), checks the
// queue, submits. On failure *out_http and out_error say what the client
// gets, and the job is not on the list.
ATLAS_MUST_USE atlas_status atlas_serve_admit(atlas_server *s,
                                              atlas_oai_job *job,
                                              double deadline,
                                              atlas_oai_error *out_error,
                                              int *out_http);
// Takes a job off the list, cancelling it if it still runs, waits for its
// end and frees it.
void atlas_serve_release(atlas_server *s, atlas_oai_job *job);
// POST /admin/swap: *out_http and *out_body (JSON, the caller's).
void atlas_serve_swap(atlas_server *s, const char *dir, int *out_http,
                      char **out_body);
// 200 while a model serves (or a swap is under way), else 503.
int atlas_serve_health(atlas_server *s, char **out_body);

// serve_metrics.c
void atlas_serve_metrics_init(atlas_serve_metrics *m);
void atlas_serve_metrics_destroy(atlas_serve_metrics *m);
void atlas_serve_metrics_request(atlas_serve_metrics *m, int endpoint,
                                 int http_status);
void atlas_serve_metrics_tokens(atlas_serve_metrics *m, uint64_t prompt,
                                uint64_t completion);
void atlas_serve_metrics_observe(void *metrics, bool first, double seconds);
void atlas_serve_metrics_swap(atlas_serve_metrics *m, int outcome);
// The Prometheus text exposition; the caller's.
ATLAS_MUST_USE atlas_status atlas_serve_metrics_text(atlas_server *s,
                                                     char **out_text);

// serve_http.c
ATLAS_MUST_USE atlas_status atlas_serve_http_start(atlas_server *s);
void atlas_serve_http_quiesce(atlas_server *s);  // stop accepting
void atlas_serve_http_stop(atlas_server *s);

// Endpoints for metrics.
enum {
  ATLAS_SERVE_EP_COMPLETIONS = 0,
  ATLAS_SERVE_EP_CHAT,
  ATLAS_SERVE_EP_MODELS,
  ATLAS_SERVE_EP_HEALTH,
  ATLAS_SERVE_EP_METRICS,
  ATLAS_SERVE_EP_ADMIN,
  ATLAS_SERVE_EP_OTHER,
  ATLAS_SERVE_EP_COUNT
};

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_SERVE_SERVE_STATE_H_
