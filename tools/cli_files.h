// Command-line output files that appear only when complete.
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
ATLAS_MUST_USE atlas_status atlas_cli_output_open(const char *path, atlas_cli_output *out);
// Flushes, closes and renames onto the final name.
ATLAS_MUST_USE atlas_status atlas_cli_output_commit(atlas_cli_output *out);
// Closes and removes the temporary file. Safe on a zeroed output.
void atlas_cli_output_abort(atlas_cli_output *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_FILES_H_
