// A command-line tool's output folder, written under a temporary name and
// renamed into place only when complete: a failed run leaves no partial
// folder, and neither does one stopped by SIGINT, SIGTERM or SIGHUP (a
// thread waits for those while the folder is open, removes the temporary
// folder and ends the process with the same signal).
#ifndef ATLAS_TOOLS_CLI_OUTPUT_DIR_H_
#define ATLAS_TOOLS_CLI_OUTPUT_DIR_H_

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_cli_dir_watch atlas_cli_dir_watch;

// The temporary folder is `<path>.tmp-XXXXXX` beside `path` (made with
// mkdtemp), or `.atlas-tmp-XXXXXX` in the same folder when that name would be
// too long. `path` must be missing or an empty folder: a rename cannot replace
// a full one, and what was in it is not ours to remove. A symbolic link to an
// empty folder is written through (its target is replaced, as for file
// outputs); a link to nothing, `.` and `..` are refused.
typedef struct atlas_cli_output_dir {
  char *path;                  // the final name (links resolved)
  char *tmp;                   // the temporary folder: write here
  atlas_cli_dir_watch *watch;  // the signal watcher (NULL: none started)
} atlas_cli_output_dir;

// Checks `path` and makes the temporary folder (mode as mkdir(path, 0755)
// would give it), before any work, so a bad path fails fast. The calling
// thread's SIGINT, SIGTERM and SIGHUP (those not ignored) stay blocked
// until the commit or the abort; threads started meanwhile inherit that.
ATLAS_MUST_USE atlas_status
atlas_cli_output_dir_open(const char *path, atlas_cli_output_dir *out);
// Renames the temporary folder onto the final name.
ATLAS_MUST_USE atlas_status
atlas_cli_output_dir_commit(atlas_cli_output_dir *out);
// Removes the temporary folder and all in it. Safe on a zeroed output.
void atlas_cli_output_dir_abort(atlas_cli_output_dir *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_OUTPUT_DIR_H_
