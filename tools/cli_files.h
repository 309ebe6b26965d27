// Command-line files: inputs read whole, and output files and folders that
// appear only when complete.
#ifndef ATLAS_TOOLS_CLI_FILES_H_
#define ATLAS_TOOLS_CLI_FILES_H_

#include <stddef.h>
#include <stdio.h>

#include "atlas/runtime/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Reads every byte of `path` ("-": standard input) into *out (the caller
// frees it; NUL-terminated, *out_len not counting the NUL). A folder, a path
// that cannot be opened, a read error or more than `max_bytes` (an endless
// source such as /dev/zero) fails naming the path ("stdin").
ATLAS_MUST_USE atlas_status atlas_cli_read_all(const char *path,
                                               size_t max_bytes, char **out,
                                               size_t *out_len);

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

// A folder written under a temporary name beside `path` (`<path>.tmp-XXXXXX`,
// made with mkdtemp) and renamed onto it only on success: a failed run leaves
// no partial folder. `path` must be missing or an empty folder: a rename
// cannot replace a full one, and what was in it is not ours to remove.
typedef struct atlas_cli_output_dir {
  char *path;  // the final name (without trailing slashes)
  char *tmp;   // the temporary folder: write here
} atlas_cli_output_dir;

// Checks `path` and makes the temporary folder (mode as mkdir(path, 0755)
// would give it), before any work, so a bad path fails fast.
ATLAS_MUST_USE atlas_status atlas_cli_output_dir_open(const char *path,
                                                      atlas_cli_output_dir *out);
// Renames the temporary folder onto the final name.
ATLAS_MUST_USE atlas_status atlas_cli_output_dir_commit(atlas_cli_output_dir *out);
// Removes the temporary folder and all in it. Safe on a zeroed output.
void atlas_cli_output_dir_abort(atlas_cli_output_dir *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_FILES_H_
