// The standard streams of a command-line tool's process: descriptors the
// caller closed, and output that never arrived (a full disk, a closed pipe).
// Every tool's main starts with the first and ends with the second:
//
//   int main(int argc, char **argv) {
//     atlas_cli_keep_standard_fds();
//     return atlas_cli_finish_stdout("make_checkpoint", run(argc, argv));
//   }
#ifndef ATLAS_TOOLS_CLI_STDIO_H_
#define ATLAS_TOOLS_CLI_STDIO_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Descriptors 0-2 closed by the caller would be reused by the first files
// opened (an output's temporary file would receive what is printed): each
// closed one is pointed at /dev/null.
void atlas_cli_keep_standard_fds(void);

// Flushes and closes stdout. If that fails, says so on stderr ("PROGRAM:
// writing the standard output failed: REASON") and turns an exit status of
// 0 into 1; other statuses are returned as they are.
int atlas_cli_finish_stdout(const char *program, int status);

// strerror(err)'s text without strerror's buffer, which another thread's
// call may overwrite: the runtime's atlas_strerror, for the atlas CLI, which
// includes only the public API and these tools headers. The text goes to buf
// (ATLAS_CLI_STRERROR_BYTES hold every message) or is a constant string;
// returns it either way, valid while buf lives.
#define ATLAS_CLI_STRERROR_BYTES 128
const char *atlas_cli_strerror(int err, char *buf, size_t n);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_STDIO_H_
