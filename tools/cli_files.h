// Command-line helpers that keep the CLI honest: output files that appear
// only when complete, finite numbers, and --steps checked against the
// model's context before anything is allocated or loaded.
#ifndef ATLAS_TOOLS_CLI_FILES_H_
#define ATLAS_TOOLS_CLI_FILES_H_

#include <stddef.h>
#include <stdio.h>

#include "atlas/runtime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// An output written to a temporary name beside `path` and renamed over it
// only on success: a failed run leaves no partial file.
typedef struct atlas_cli_output {
  FILE *f;     // NULL when no output was asked for
  char *path;  // the final name
  char *tmp;   // the temporary name
} atlas_cli_output;

// Opens the temporary file (before any load, so a bad path fails fast).
// `path` NULL: no output, *out zeroed.
atlas_status atlas_cli_output_open(const char *path, atlas_cli_output *out);
// Flushes, closes and renames onto the final name.
atlas_status atlas_cli_output_commit(atlas_cli_output *out);
// Closes and removes the temporary file. Safe on a zeroed output.
void atlas_cli_output_abort(atlas_cli_output *out);

// A finite number >= min for `flag`: "nan", "inf" and friends are refused.
atlas_status atlas_cli_parse_finite(const char *flag, const char *text,
                                    double min, double *out);

// Reads only DIR/config.json and checks that prompt_len tokens and `steps`
// generated tokens fit in its context (max_position_embeddings), so a bad
// --steps fails before the load and before any buffer is sized from it.
atlas_status atlas_cli_check_steps(const char *model_dir, size_t prompt_len,
                                   long steps);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_FILES_H_
