// What `atlas serve` and `atlas batch` share on the command line: the
// options that open the model (the first four of each command's table,
// in this order), the model's name in responses, and the command's main.
#ifndef ATLAS_TOOLS_SERVE_SERVE_CLI_H_
#define ATLAS_TOOLS_SERVE_SERVE_CLI_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/atlas/cli_limits.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/serve/serve_model.h"

#ifdef __cplusplus
extern "C" {
#endif

// Indices of the shared options in a command's table.
enum {
  ATLAS_SERVE_CLI_MODEL = 0,
  ATLAS_SERVE_CLI_BACKEND,
  ATLAS_SERVE_CLI_KV_DTYPE,
  ATLAS_SERVE_CLI_MAX_SEQ,
  ATLAS_SERVE_CLI_TENSOR_PARALLEL,
  ATLAS_SERVE_CLI_DEVICES,
  ATLAS_SERVE_CLI_LIMITS,  // ATLAS_CLI_LIMIT_COUNT options (cli_limits.h)
  // the command's own options start here
  ATLAS_SERVE_CLI_SHARED = ATLAS_SERVE_CLI_LIMITS + ATLAS_CLI_LIMIT_COUNT,
};

// The table's first entries; `model_help` says what the folder holds.
#define ATLAS_SERVE_CLI_OPTIONS(model_help)                                 \
  [ATLAS_SERVE_CLI_MODEL] = {"model", "DIR", true, NULL, model_help},       \
  [ATLAS_SERVE_CLI_BACKEND] = {"backend", "KIND", false, "auto",            \
                               "host, cuda, or auto (cuda when a GPU is "   \
                               "usable)"},                                  \
  [ATLAS_SERVE_CLI_KV_DTYPE] = {"kv-dtype", "TYPE", false, "auto",          \
                                "the KV cache's element type: auto, f32, "  \
                                "f16, bf16"},                               \
  [ATLAS_SERVE_CLI_MAX_SEQ] = {"max-seq", "N", false, "min(context, 2048)", \
                               "positions one sequence may use (prompt + "  \
                               "output)"},                                  \
  [ATLAS_SERVE_CLI_TENSOR_PARALLEL] =                                       \
      {"tensor-parallel", "N", false, "1",                                  \
       "split the model over N devices (docs/PARALLELISM.md): --backend "   \
       "host simulates them in one process, --backend cuda needs NCCL "     \
       "(libnccl.so.2); N must divide the heads, KV heads, intermediate "   \
       "size and vocabulary"},                                              \
  [ATLAS_SERVE_CLI_DEVICES] = {"devices", "LIST", false, "0,1,...",         \
                               "with --tensor-parallel N: the N CUDA "      \
                               "devices, comma-separated, e.g. 0,1"},       \
  ATLAS_CLI_TEXT_LIMIT_OPTIONS(ATLAS_SERVE_CLI_LIMITS),                     \
  ATLAS_CLI_CHAT_LIMIT_OPTIONS(ATLAS_SERVE_CLI_LIMITS +                     \
                               ATLAS_CLI_TOKENIZER_LIMIT_COUNT)

typedef struct atlas_serve_cli_model {
  char model[ATLAS_CLI_PATH_MAX];
  const char *backend;   // "auto" unless given
  const char *kv_dtype;  // NULL: auto
  long max_seq;          // 0: the open default
  long tensor_parallel;  // devices to split over (1: one)
  int devices[64];       // --devices (device_count of them)
  size_t device_count;
  atlas_cli_limits limits;  // the tokenizer's and the chat template's
} atlas_serve_cli_model;

// Sets shared option `index` (< ATLAS_SERVE_CLI_SHARED).
ATLAS_MUST_USE atlas_status atlas_serve_cli_set(atlas_serve_cli_model *m,
                                                size_t index,
                                                const char *value);

// The model's configuration from the shared options (the rest zero).
void atlas_serve_cli_model_config(const atlas_serve_cli_model *m,
                                  size_t max_running,
                                  atlas_serve_model_config *out);

// The checkpoint folder's name (its last component): the model's name in
// responses unless the command names it.
const char *atlas_serve_cli_base_name(const char *dir);

// A command's main: allocates `opts_size` zeroed bytes of options (the
// shared ones first, an atlas_serve_cli_model), lets `init` set defaults,
// parses argv (the shared options itself, the command's own with `set`),
// then `run`s and turns its status into the exit
// status, printing a failure as "PROGRAM: message". `run` may return a
// usage error itself (*out_usage set: exit 2, message printed by it).
typedef atlas_status (*atlas_serve_cli_run_fn)(void *opts, bool *out_usage);
int atlas_serve_cli_main(const atlas_cli_command *command, int argc,
                         char **argv, size_t opts_size,
                         void (*init)(void *opts), atlas_cli_set_fn set,
                         atlas_serve_cli_run_fn run);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_SERVE_SERVE_CLI_H_
