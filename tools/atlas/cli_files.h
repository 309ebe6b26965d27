// Command-line files: inputs read whole, and output files that
// appear only when complete.
#ifndef ATLAS_TOOLS_CLI_FILES_H_
#define ATLAS_TOOLS_CLI_FILES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "atlas/runtime/base/status.h"

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
// The same, naming the option that raises `max_bytes` (e.g.
// "--max-input-bytes") when the input is longer.
ATLAS_MUST_USE atlas_status atlas_cli_read_limited(const char *path,
                                                   size_t max_bytes,
                                                   const char *limit_flag,
                                                   char **out, size_t *out_len);

// An output written to a temporary name beside `path` and renamed over it
// only on success: a failed run leaves no partial file, nor does a killed
// one where the file system supports O_TMPFILE. A symbolic link is
// written through (its target is replaced); a pipe or a character device is
// written directly, and a path naming an open descriptor (/dev/stdout,
// /dev/fd/N) through a copy of it, as a shell redirection would; a folder,
// a socket or a link to nothing is refused when opening.
typedef struct atlas_cli_output {
  FILE *f;           // NULL when no output was asked for
  const char *flag;  // the option that named it, for messages
  char *path;        // the name as given
  char *target;      // what is replaced: `path` with links resolved
  char *tmp;         // the temporary name (NULL when written directly)
  bool unnamed;      // an O_TMPFILE file: tmp is linked only when closed
  bool exists;       // target existed when opened: dev, ino
  dev_t dev;
  ino_t ino;
} atlas_cli_output;

// Opens the temporary file (before any load, so a bad path fails fast).
// `path` NULL: no output, *out zeroed. Messages name `flag`.
ATLAS_MUST_USE atlas_status atlas_cli_output_open(const char *flag,
                                                  const char *path,
                                                  atlas_cli_output *out);
// Fails (naming both options) when the output would replace `input`, a file
// or any file in a folder (a checkpoint) that `input_flag` reads. "" and "-"
// are no file.
ATLAS_MUST_USE atlas_status atlas_cli_output_check_input(
    const atlas_cli_output *out, const char *input_flag, const char *input);
// Fails when two outputs name the same file.
ATLAS_MUST_USE atlas_status atlas_cli_output_check_pair(
    const atlas_cli_output *a, const atlas_cli_output *b);
// Flushes and closes, without the rename: what can fail, done for every
// output before any is renamed (a report's JSON and SVG appear together).
// On failure the output is aborted.
ATLAS_MUST_USE atlas_status atlas_cli_output_close(atlas_cli_output *out);
// Closes (if still open) and renames onto the final name.
ATLAS_MUST_USE atlas_status atlas_cli_output_commit(atlas_cli_output *out);
// Closes and removes the temporary file. Safe on a zeroed output.
void atlas_cli_output_abort(atlas_cli_output *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_FILES_H_
