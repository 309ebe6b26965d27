// atlas batch: an OpenAI Batch file (JSON Lines) through the scheduler.
//
// Every line is parsed first; a bad one gets its own 400 line naming the
// field and the others still run. All good lines are queued at once on one
// scheduler (--parallel caps how many run together) and the main thread
// steps it until every request has ended. The output is written in input
// order to a temporary name and renamed into place only when complete.
#define _GNU_SOURCE  // getrandom
#include "atlas/tools/serve/batch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "atlas/atlas.h"
#include "atlas/runtime/serve/openai/oai_batch.h"
#include "atlas/runtime/serve/openai/oai_job.h"
#include "atlas/runtime/serve/openai/oai_response.h"
#include "atlas/runtime/serve/scheduler.h"
#include "atlas/tools/serve/serve_cli.h"
#include "atlas/tools/serve/serve_model.h"

enum {
  BATCH_INPUT = ATLAS_SERVE_CLI_SHARED,
  BATCH_OUTPUT,
  BATCH_PARALLEL,
};

static const atlas_cli_option kBatchOptions[] = {
    ATLAS_SERVE_CLI_OPTIONS("checkpoint folder with tokenizer.json (and "
                            "tokenizer_config.json's chat_template for chat "
                            "lines)"),
    [BATCH_INPUT] = {"input", "FILE", true, NULL,
                     "OpenAI Batch input: one request a line, {\"custom_id\", "
                     "\"method\": \"POST\", \"url\", \"body\"} (- for stdin)"},
    [BATCH_OUTPUT] = {"output", "FILE", true, NULL,
                      "one line a request, in input order: {\"id\", "
                      "\"custom_id\", \"response\": {\"status_code\", "
                      "\"request_id\", \"body\"}, \"error\"}; written to a "
                      "temporary name, renamed when complete"},
    [BATCH_PARALLEL] = {"parallel", "N", false, "64",
                        "requests (choices) running at once"},
};

const atlas_cli_command atlas_cli_batch_command = {
    "atlas batch",
    "--model DIR --input FILE.jsonl --output FILE.jsonl [opts]",
    "Runs every request of an OpenAI Batch file (/v1/completions and\n"
    "/v1/chat/completions lines) on one model, many at once, and writes one\n"
    "output line each. A bad line gets a 400 line naming the field; the\n"
    "others still run. Exit 0 when the output was written, whatever the\n"
    "lines' statuses (a summary goes to stderr).",
    kBatchOptions,
    sizeof(kBatchOptions) / sizeof(kBatchOptions[0]),
    0,
    NULL};

typedef struct batch_options {
  atlas_serve_cli_model m;  // first: the shared options
  char input[ATLAS_CLI_PATH_MAX];
  char output[ATLAS_CLI_PATH_MAX];
  long parallel;
} batch_options;

static atlas_status set_batch(void *opts, size_t index, const char *value) {
  batch_options *o = opts;
  switch (index) {
    case BATCH_INPUT:
      if (strcmp(value, "-") == 0) {
        snprintf(o->input, sizeof o->input, "-");
        return ATLAS_OK;
      }
      return atlas_cli_resolve_path("--input", value, o->input);
    case BATCH_OUTPUT:
      return atlas_cli_resolve_path("--output", value, o->output);
    case BATCH_PARALLEL:
      return atlas_cli_parse_long("--parallel", value, 1, 4096, &o->parallel);
  }
  return ATLAS_OK;
}

// One input line and what became of it.
typedef struct batch_item {
  atlas_oai_batch_line line;
  atlas_oai_job *job;  // NULL when the line was refused
  int http;            // refused: its status
  char *error;         // refused: the message
  char param[ATLAS_OAI_MAX_PARAM];
} batch_item;

static void random_hex(char *out, size_t bytes) {
  unsigned char r[16] = {0};
  if (bytes > sizeof r) bytes = sizeof r;
  if (getrandom(r, bytes, 0) != (ssize_t)bytes) {
    // No entropy source: a clock-derived id still tells lines apart.
    uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out;
    memcpy(r, &t, bytes < sizeof t ? bytes : sizeof t);
  }
  for (size_t i = 0; i < bytes; ++i) sprintf(out + 2 * i, "%02x", r[i]);
}

static void refuse(batch_item *it, int http, atlas_status s,
                   const char *param) {
  it->http = http;
  it->error = strdup(atlas_status_message(s));
  // A path longer than the field is cut (the message keeps it whole).
  if (snprintf(it->param, sizeof it->param, "%s", param ? param : "") < 0) {
    it->param[0] = '\0';
  }
  atlas_status_free(s);
}

// Parses a line and, if it is good, submits it.
static void start_item(batch_item *it, const char *text, size_t len,
                       const atlas_oai_env *env) {
  atlas_oai_error err;
  atlas_status s = atlas_oai_batch_line_parse(text, len, &it->line, &err);
  if (s != ATLAS_OK) {
    refuse(it, 400, s, err.param);
    return;
  }
  char id[64], hex[17];
  random_hex(hex, 8);
  snprintf(id, sizeof id, "%s-%s",
           it->line.endpoint == ATLAS_OAI_CHAT ? "chatcmpl" : "cmpl", hex);
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = 0;
  s = atlas_oai_job_create(it->line.request, id, (int64_t)time(NULL), seed,
                           &it->job);
  it->line.request = NULL;  // the job has it
  if (s != ATLAS_OK) {
    refuse(it, 500, s, NULL);
    return;
  }
  int http = 500;
  s = atlas_oai_job_submit(it->job, env, &err, &http);
  if (s != ATLAS_OK) {
    char param[ATLAS_OAI_MAX_PARAM + 8];
    snprintf(param, sizeof param, "body.%s", err.param);
    if (atlas_oai_job_state_get(it->job) == ATLAS_OAI_JOB_NEW) {
      atlas_oai_job_free(it->job);
      it->job = NULL;
      refuse(it, http, s, err.param[0] ? param : NULL);
    } else {
      atlas_status_free(s);  // the job ends with the refusal as its result
    }
  }
}

// The output line of one item, with its newline.
static atlas_status item_line(batch_item *it, FILE *out, size_t *answered) {
  char id[40], req[40], hex[17];
  random_hex(hex, 8);
  snprintf(id, sizeof id, "batch_req_%s", hex);
  random_hex(hex, 8);
  snprintf(req, sizeof req, "req_%s", hex);
  char *body = NULL, *line = NULL;
  int http = it->http;
  atlas_status s = ATLAS_OK;
  if (it->job != NULL) {
    s = atlas_oai_job_result(it->job, &http, &body);
  } else {
    s = atlas_oai_error_body(http, it->error, NULL, it->param, NULL, &body);
  }
  if (s == ATLAS_OK && http == 200) {
    ++*answered;
    s = atlas_oai_batch_output_line(id, it->line.custom_id, 200, req, body,
                                    NULL, NULL, &line);
  } else if (s == ATLAS_OK) {
    // The error's message is the body's; the code names the field.
    // A job's own failure (a refused submit, a failed step) is in its body.
    json_t *root = it->error ? NULL : json_loads(body, JSON_ALLOW_NUL, NULL);
    const char *from_body = json_string_value(
        json_object_get(json_object_get(root, "error"), "message"));
    const char *msg = it->error   ? it->error
                      : from_body ? from_body
                                  : "the request failed";
    s = atlas_oai_batch_output_line(id, it->line.custom_id, http, req, body,
                                    it->param[0] ? it->param : NULL, msg,
                                    &line);
    json_decref(root);
  }
  if (s == ATLAS_OK && (fputs(line, out) < 0 || fputc('\n', out) < 0)) {
    s = atlas_status_make(ATLAS_STATUS_IO, "--output: a write failed");
  }
  free(body);
  free(line);
  return s;
}

// Steps the scheduler until every job has ended.
static atlas_status drive(atlas_scheduler *sched, batch_item *items,
                          size_t count) {
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < count && !pending; ++i) {
      pending = items[i].job != NULL &&
                atlas_oai_job_state_get(items[i].job) != ATLAS_OAI_JOB_DONE;
    }
    if (!pending) return ATLAS_OK;
    bool worked = false;
    // A failed step is delivered to its requests (ERROR lines); go on.
    atlas_status_free(atlas_scheduler_step(sched, &worked));
    if (!worked) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "the scheduler stopped with requests still "
                               "open (nothing left to step)");
    }
  }
}

// Splits the input into lines (blank ones skipped) and runs them.
static atlas_status run_lines(char *text, size_t len, const atlas_oai_env *env,
                              atlas_scheduler *sched, FILE *out,
                              size_t *out_count, size_t *out_answered) {
  size_t cap = 1;
  for (size_t i = 0; i < len; ++i) cap += text[i] == '\n';
  batch_item *items = calloc(cap, sizeof *items);
  if (items == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for %zu "
                             "lines",
                             cap);
  }
  size_t count = 0;
  for (char *p = text, *end = text + len; p < end;) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - p);
    if (n > 0 && p[n - 1] == '\r') --n;
    bool blank = strspn(p, " \t\r") >= n;
    if (!blank) start_item(&items[count++], p, n, env);
    p = stop + 1;
  }
  atlas_status s = drive(sched, items, count);
  size_t answered = 0;
  for (size_t i = 0; s == ATLAS_OK && i < count; ++i) {
    s = item_line(&items[i], out, &answered);
  }
  for (size_t i = 0; i < count; ++i) {
    if (items[i].job != NULL &&
        atlas_oai_job_state_get(items[i].job) == ATLAS_OAI_JOB_RUNNING) {
      continue;  // still owned by the scheduler: destroy aborts it
    }
    atlas_oai_job_free(items[i].job);
    atlas_oai_batch_line_clear(&items[i].line);
    free(items[i].error);
  }
  free(items);
  *out_count = count;
  *out_answered = answered;
  return s;
}

static atlas_status batch(const batch_options *o) {
  atlas_cli_output out;
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_open("--output", o->output, &out));
  atlas_status s = atlas_cli_output_check_input(&out, "--input", o->input);
  if (s == ATLAS_OK) {
    s = atlas_cli_output_check_input(&out, "--model", o->m.model);
  }
  char *text = NULL;
  size_t len = 0;
  if (s == ATLAS_OK) {
    s = atlas_cli_read_all(o->input, (size_t)1 << 32, &text, &len);
  }
  atlas_serve_model sm;
  memset(&sm, 0, sizeof sm);
  if (s == ATLAS_OK) {
    atlas_serve_model_config cfg;
    atlas_serve_cli_model_config(&o->m, (size_t)o->parallel, &cfg);
    s = atlas_serve_model_open(&cfg, &sm);
  }
  size_t count = 0, answered = 0;
  if (s == ATLAS_OK) {
    atlas_oai_env env;
    atlas_serve_model_env(&sm, &env);
    env.model_name = atlas_serve_cli_base_name(o->m.model);
    s = run_lines(text, len, &env, sm.sched, out.f, &count, &answered);
  }
  free(text);
  s = atlas_status_join(s, atlas_serve_model_close(&sm, true));
  if (s == ATLAS_OK) s = atlas_cli_output_commit(&out);
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(&out);
    return s;
  }
  fprintf(stderr,
          "atlas batch: %zu requests: %zu answered, %zu refused or "
          "failed\n",
          count, answered, count - answered);
  return ATLAS_OK;
}

static void batch_defaults(void *opts) {
  ((batch_options *)opts)->parallel = 64;
}

static atlas_status run_batch(void *opts, bool *out_usage) {
  *out_usage = false;
  return batch(opts);
}

int atlas_cli_batch_main(int argc, char **argv) {
  return atlas_serve_cli_main(&atlas_cli_batch_command, argc, argv,
                              sizeof(batch_options), batch_defaults, set_batch,
                              run_batch);
}
