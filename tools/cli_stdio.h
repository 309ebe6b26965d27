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

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_STDIO_H_
