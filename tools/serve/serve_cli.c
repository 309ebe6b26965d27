// The command line `atlas serve` and `atlas batch` share (serve_cli.h).
#include "atlas/tools/serve/serve_cli.h"

#include "atlas/tools/atlas/cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atlas_status atlas_serve_cli_set(atlas_serve_cli_model *m, size_t index,
                                 const char *value) {
  if (index == ATLAS_SERVE_CLI_MODEL) {
    return atlas_cli_resolve_path("--model", value, m->model);
  }
  if (index == ATLAS_SERVE_CLI_MAX_SEQ) {
    return atlas_cli_parse_long("--max-seq", value, 1, 1L << 30, &m->max_seq);
  }
  if (index == ATLAS_SERVE_CLI_TENSOR_PARALLEL) {
    return atlas_cli_parse_long("--tensor-parallel", value, 1, 64,
                                &m->tensor_parallel);
  }
  if (index == ATLAS_SERVE_CLI_DEVICES) {
    return atlas_cli_parse_devices("--devices", value, m->devices,
                                   &m->device_count);
  }
  if (index >= ATLAS_SERVE_CLI_LIMITS) {
    return atlas_cli_limits_set(&m->limits, index - ATLAS_SERVE_CLI_LIMITS,
                                NULL, value);
  }
  // --backend and --kv-dtype: names the open checks.
  *(index == ATLAS_SERVE_CLI_BACKEND ? &m->backend : &m->kv_dtype) = value;
  return ATLAS_OK;
}

void atlas_serve_cli_model_config(const atlas_serve_cli_model *m,
                                  size_t max_running,
                                  atlas_serve_model_config *out) {
  memset(out, 0, sizeof *out);
  out->dir = m->model;
  out->backend = m->backend;
  out->kv_dtype = m->kv_dtype;
  out->max_seq = m->max_seq;
  out->max_running = max_running;
  out->tensor_parallel = (int)m->tensor_parallel;
  out->devices = m->device_count > 0 ? m->devices : NULL;
  out->tokenizer_limits = &m->limits.tokenizer;
  out->chat_limits = &m->limits.chat;
}

// The shared options, then the command's own.
typedef struct set_both {
  atlas_cli_set_fn own;
  void *opts;
} set_both;

static atlas_status set_any(void *ctx, size_t index, const char *value) {
  set_both *b = ctx;
  return index < ATLAS_SERVE_CLI_SHARED
             ? atlas_serve_cli_set((atlas_serve_cli_model *)b->opts, index,
                                   value)
             : b->own(b->opts, index, value);
}

const char *atlas_serve_cli_base_name(const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') --n;
  const char *p = dir + n;
  while (p > dir && p[-1] != '/') --p;
  return p;
}

int atlas_serve_cli_main(const atlas_cli_command *command, int argc,
                         char **argv, size_t opts_size,
                         void (*init)(void *opts), atlas_cli_set_fn set,
                         atlas_serve_cli_run_fn run) {
  void *o = calloc(1, opts_size);
  if (o == NULL) {
    fprintf(stderr, "%s: no memory\n", command->program);
    return ATLAS_CLI_EXIT_FAILURE;
  }
  ((atlas_serve_cli_model *)o)->backend = "auto";
  ((atlas_serve_cli_model *)o)->tensor_parallel = 1;
  atlas_cli_limits_init(&((atlas_serve_cli_model *)o)->limits);
  init(o);
  int next = 0;
  set_both both = {set, o};
  atlas_cli_parse_result r =
      atlas_cli_parse(command, argc, argv, set_any, &both, &next);
  int rc = r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
  const atlas_serve_cli_model *sm = o;
  if (r == ATLAS_CLI_PARSED && sm->device_count != 0 &&
      sm->device_count != (size_t)sm->tensor_parallel) {
    rc = atlas_cli_usage_error(command->program,
                               "--devices names %zu devices but "
                               "--tensor-parallel is %ld",
                               sm->device_count, sm->tensor_parallel);
  } else if (r == ATLAS_CLI_PARSED) {
    bool usage = false;
    atlas_status s = run(o, &usage);
    rc = usage ? ATLAS_CLI_EXIT_USAGE : ATLAS_CLI_EXIT_OK;
    if (s != ATLAS_OK) {
      atlas_cli_print_error(command->program, atlas_status_message(s), "");
      atlas_status_free(s);
      rc = ATLAS_CLI_EXIT_FAILURE;
    }
  }
  free(o);
  return rc;
}
