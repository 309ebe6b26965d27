// atlas run and atlas swap: their options (cmd_run_options.c) and their
// work (cmd_run.c).
#ifndef ATLAS_TOOLS_ATLAS_CMD_RUN_H_
#define ATLAS_TOOLS_ATLAS_CMD_RUN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_limits.h"
#include "atlas/tools/atlas/cli_options.h"

enum { kMaxStops = 16 };

typedef struct run_options {
  char model[ATLAS_CLI_PATH_MAX];
  char to[ATLAS_CLI_PATH_MAX];      // swap only
  char logits[ATLAS_CLI_PATH_MAX];  // "" when not asked for
  const char *backend;
  uint32_t *prompt;  // owned
  size_t prompt_len;
  long steps;
  long max_seq;       // 0: prompt + steps
  double budget_mb;   // swap only; 0: the whole device
  long fail_alloc;    // swap only; testing
  bool fail_restore;  // swap only; testing
  bool ignore_eos;
  const char *kv_dtype;  // "auto" (NULL), "f32", "f16", "bf16"
  // run only: text in, text out; sampling.
  const char *text;  // --prompt (argv's) or --prompt-file's
                     // bytes; NULL: --tokens
  size_t text_len;
  char prompt_file[ATLAS_CLI_PATH_MAX];  // "" when not given; "-": stdin
  char *file_text;                       // owned: what prompt_file held
  bool chat;
  const char *system;  // --system (argv's); NULL: none
  bool stats;
  double temperature, top_p, min_p, repetition_penalty;
  long top_k;
  unsigned long long seed;
  const char *stops[kMaxStops];  // --stop (argv's)
  size_t stop_count;
  atlas_cli_limits limits;  // the tokenizer's and the chat template's;
                            // max_input_bytes also ends an endless source
  long tensor_parallel;     // run only: devices to split over (1: one)
  int devices[64];          // run only: --devices (device_count of them)
  size_t device_count;
} run_options;
// The KV cache positions a generation uses: every prompt token and every
// generated token but the last (which is never fed back).
static inline long atlas_cli_positions_needed(size_t prompt_len, long steps) {
  return (long)prompt_len + (steps > 0 ? steps - 1 : 0);
}

extern const atlas_cli_command atlas_cli_run_command;
extern const atlas_cli_command atlas_cli_swap_command;

// The option setters atlas_cli_parse calls for run and swap.
ATLAS_MUST_USE atlas_status atlas_cli_set_run(void *opts, size_t index,
                                              const char *value);
ATLAS_MUST_USE atlas_status atlas_cli_set_swap(void *opts, size_t index,
                                               const char *value);

// argv[0] is "run" or "swap"; returns the exit status.
int atlas_cli_run_main(int argc, char **argv, bool swap);

#endif  // ATLAS_TOOLS_ATLAS_CMD_RUN_H_
