// atlas serve: an OpenAI-compatible HTTP server on the scheduler, with hot
// swaps under load (docs/SERVING.md).
//
// Lifecycle: open the model and start the scheduler's driving thread, then
// listen; the main thread waits for SIGTERM or SIGINT (the lifecycle
// flag). Then: stop accepting connections, refuse new requests (503), let
// running requests finish for the drain time and cut the rest (abort), wait
// for open connections to end, stop the HTTP server, tear the model down
// and print the sweep ("leaked: N bytes"). Exit 0 when all of that worked.
#define _POSIX_C_SOURCE 200809L  // nanosleep, strdup
#include "atlas/tools/serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/lifecycle/shutdown_signal.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/serve/serve_cli.h"
#include "atlas/tools/serve/serve_state.h"

enum {
  SERVE_HOST = ATLAS_SERVE_CLI_SHARED,
  SERVE_PORT,
  SERVE_API_KEY,
  SERVE_API_KEY_FILE,
  SERVE_NAME,
  SERVE_MAX_RUNNING,
  SERVE_MAX_WAITING,
  SERVE_KV_BUDGET,
  SERVE_TIMEOUT,
  SERVE_DRAIN,
  SERVE_BUDGET,
  SERVE_FAIL_SWAPS,
};

static const atlas_cli_option kServeOptions[] = {
    ATLAS_SERVE_CLI_OPTIONS("checkpoint folder with tokenizer.json (and "
                            "tokenizer_config.json's chat_template for chat)"),
    [SERVE_HOST] = {"host", "ADDR", false, "127.0.0.1",
                    "address to listen on (0.0.0.0 or :: for every "
                    "interface: mind --api-key)"},
    [SERVE_PORT] = {"port", "N", false, "8080",
                    "TCP port; 0 picks a free one (printed on stdout)"},
    [SERVE_API_KEY] = {"api-key", "KEY", false, "none",
                       "require \"Authorization: Bearer KEY\" on /v1 and "
                       "/admin (never logged)"},
    [SERVE_API_KEY_FILE] = {"api-key-file", "FILE", false, "none",
                            "as --api-key, the key being FILE's first line "
                            "(keeps it out of the process list)"},
    [SERVE_NAME] = {"served-model-name", "NAME", false, "the folder's name",
                    "the model's name in the API"},
    [SERVE_MAX_RUNNING] = {"max-running", "N", false, "64",
                           "sequences generating at once"},
    [SERVE_MAX_WAITING] = {"max-waiting", "N", false, "1024",
                           "requests open at once; past it 429"},
    [SERVE_KV_BUDGET] = {"kv-budget-mb", "MB", false,
                         "what fits beside the weights",
                         "the KV pool's size in MiB"},
    [SERVE_TIMEOUT] = {"timeout-s", "S", false, "0 (none)",
                       "cut a request after S seconds (504; a stream ends "
                       "with finish_reason \"abort\" and an error event)"},
    [SERVE_DRAIN] = {"drain-s", "S", false, "10",
                     "a swap or shutdown lets running requests finish for "
                     "S seconds, then aborts them"},
    [SERVE_BUDGET] = {"budget-mb", "MB", false, "0 (the whole device)",
                      "most device MB (1e6 bytes) the model may hold; a swap "
                      "whose new model fits only without the old one "
                      "replaces it (restored if the new one fails)"},
    [SERVE_FAIL_SWAPS] = {"fail-swaps", "K:KIND:N,...", false, "none",
                          "tests only: the K-th /admin/swap fails its new "
                          "model's N-th allocation (KIND alloc), and also its "
                          "restore (KIND lost)"},
};

const atlas_cli_command atlas_cli_serve_command = {
    "atlas serve",
    "--model DIR [--host 127.0.0.1] [--port 8080] [opts]",
    "Serves the checkpoint over OpenAI's HTTP API: POST /v1/completions and\n"
    "/v1/chat/completions (streaming too), GET /v1/models, /health,\n"
    "/metrics; POST /admin/swap {\"model\": DIR} hot-swaps, GET\n"
    "/admin/report is the memory report. SIGTERM or SIGINT shuts it down\n"
    "cleanly. See docs/SERVING.md.",
    kServeOptions,
    sizeof(kServeOptions) / sizeof(kServeOptions[0]),
    0,
    NULL};

typedef struct serve_options {
  atlas_serve_cli_model m;  // first: the shared options
  const char *host;
  long port;
  const char *api_key;
  char key_file[ATLAS_CLI_PATH_MAX];
  const char *name;
  long max_running, max_waiting;
  double kv_budget_mb, timeout_s, drain_s, budget_mb;
  const char *fail_swaps;
} serve_options;

static atlas_status set_serve(void *opts, size_t index, const char *value) {
  serve_options *o = opts;
  switch (index) {
    case SERVE_HOST:
      o->host = value;
      return ATLAS_OK;
    case SERVE_PORT:
      return atlas_cli_parse_long("--port", value, 0, 65535, &o->port);
    case SERVE_API_KEY:
      if (value[0] == '\0') {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "--api-key: empty");
      }
      o->api_key = value;
      return ATLAS_OK;
    case SERVE_API_KEY_FILE:
      return atlas_cli_resolve_path("--api-key-file", value, o->key_file);
    case SERVE_NAME:
      o->name = value;
      return ATLAS_OK;
    case SERVE_MAX_RUNNING:
      return atlas_cli_parse_long("--max-running", value, 1, 4096,
                                  &o->max_running);
    case SERVE_MAX_WAITING:
      return atlas_cli_parse_long("--max-waiting", value, 1, 1L << 20,
                                  &o->max_waiting);
    case SERVE_KV_BUDGET:
      return atlas_cli_parse_double("--kv-budget-mb", value, 0,
                                    &o->kv_budget_mb);
    case SERVE_TIMEOUT:
      return atlas_cli_parse_double("--timeout-s", value, 0, &o->timeout_s);
    case SERVE_DRAIN:
      return atlas_cli_parse_double("--drain-s", value, 0, &o->drain_s);
    case SERVE_BUDGET:
      return atlas_cli_parse_double("--budget-mb", value, 0, &o->budget_mb);
    case SERVE_FAIL_SWAPS:
      o->fail_swaps = value;
      return ATLAS_OK;
  }
  return ATLAS_OK;
}

// --api-key-file's first line, without its newline and trailing blanks.
static atlas_status read_key(const char *path, char **out) {
  char *text = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_cli_read_all(path, 64 << 10, &text, &len),
                        "--api-key-file");
  size_t n = strcspn(text, "\r\n");
  while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t')) --n;
  text[n] = '\0';
  if (n == 0) {
    free(text);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "--api-key-file: the first line is empty");
  }
  *out = text;
  return ATLAS_OK;
}

static void wait_for_signal(atlas_server *s) {
  (void)s;
  struct timespec ts = {0, 50L * 1000 * 1000};
  while (!atlas_lifecycle_shutdown_requested()) nanosleep(&ts, NULL);
}

// Stops: no new connections, no new requests, running ones drained or cut,
// open connections given the drain time (plus 5 s) to end.
static void shut_down(atlas_server *s) {
  atlas_serve_http_quiesce(s);
  atlas_serve_engine_stop(s);
  double deadline = atlas_oai_now() + s->config.drain_s + 5;
  pthread_mutex_lock(&s->mu);
  while (s->connections > 0 && atlas_oai_now() < deadline) {
    pthread_mutex_unlock(&s->mu);
    struct timespec ts = {0, 20L * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  atlas_serve_http_stop(s);
}

static atlas_status serve(const serve_options *o) {
  atlas_server *s = calloc(1, sizeof *s);
  char *key = NULL;
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory");
  }
  atlas_status st = ATLAS_OK;
  if (o->key_file[0] != '\0') st = read_key(o->key_file, &key);
  s->config.api_key = key ? key : o->api_key;
  s->config.host = o->host;
  s->config.port = (int)o->port;
  s->config.timeout_s = o->timeout_s;
  s->config.drain_s = o->drain_s;
  s->config.max_waiting = (size_t)o->max_waiting;
  atlas_serve_model_config mc;
  atlas_serve_cli_model_config(&o->m, (size_t)o->max_running, &mc);
  mc.kv_budget_bytes = (uint64_t)(o->kv_budget_mb * 1048576.0);
  mc.device_budget_bytes = (uint64_t)(o->budget_mb * 1e6 + 0.5);
  mc.fail_swaps = o->fail_swaps;
  s->served_name =
      strdup(o->name ? o->name : atlas_serve_cli_base_name(o->m.model));
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  atomic_init(&s->swapping, false);
  atlas_serve_metrics_init(&s->metrics);
  if (st == ATLAS_OK) st = atlas_lifecycle_shutdown_install();
  bool opened = false, engine = false;
  if (st == ATLAS_OK) {
    st = atlas_serve_model_open(&mc, &s->sm);
    opened = st == ATLAS_OK;
  }
  if (st == ATLAS_OK) {
    st = atlas_serve_engine_start(s);
    engine = st == ATLAS_OK;
  }
  if (st == ATLAS_OK) st = atlas_serve_http_start(s);
  if (st == ATLAS_OK) {
    printf("atlas serve: serving %s as \"%s\" on http://%s%s%s:%u\n",
           o->m.model, s->served_name, strchr(o->host, ':') ? "[" : "", o->host,
           strchr(o->host, ':') ? "]" : "", (unsigned)s->bound_port);
    fflush(stdout);
    wait_for_signal(s);
    fprintf(stderr, "atlas serve: signal %d: shutting down\n",
            atlas_lifecycle_shutdown_signal());
  }
  if (engine) shut_down(s);
  if (opened) st = atlas_status_join(st, atlas_serve_model_close(&s->sm, true));
  atlas_serve_metrics_destroy(&s->metrics);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->served_name);
  free(key);
  free(s);
  return st;
}

static void serve_defaults(void *opts) {
  serve_options *o = opts;
  o->host = "127.0.0.1";
  o->port = 8080;
  o->max_running = 64;
  o->max_waiting = 1024;
  o->drain_s = ATLAS_SERVE_DRAIN_S_DEFAULT;
}

static atlas_status run_serve(void *opts, bool *out_usage) {
  const serve_options *o = opts;
  *out_usage = o->api_key != NULL && o->key_file[0] != '\0';
  if (*out_usage) {
    atlas_cli_usage_error("atlas serve",
                          "give --api-key or --api-key-file, not both");
    return ATLAS_OK;
  }
  return serve(o);
}

int atlas_cli_serve_main(int argc, char **argv) {
  return atlas_serve_cli_main(&atlas_cli_serve_command, argc, argv,
                              sizeof(serve_options), serve_defaults, set_serve,
                              run_serve);
}
