// Command-line options for the Atlas tools (atlas, make_checkpoint, bench):
// one table per command drives both getopt_long and the --help text, so an
// option cannot exist without being documented with its default.
//
// Conventions every tool shares:
//   --opt value and --opt=value; -h/--help prints the help on stdout, exit 0;
//   a usage error prints one line ("... ; see `PROG --help`") on stderr,
//   exit 2; a failure while working (a bad file, ...) exits 1.
#ifndef ATLAS_TOOLS_CLI_OPTIONS_H_
#define ATLAS_TOOLS_CLI_OPTIONS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  ATLAS_CLI_EXIT_OK = 0,
  ATLAS_CLI_EXIT_FAILURE = 1,  // the work failed (input files, devices, ...)
  ATLAS_CLI_EXIT_USAGE = 2,    // the command line was wrong
};

enum { ATLAS_CLI_PATH_MAX = 4096 };

typedef struct atlas_cli_option {
  const char *name;     // long name without "--"
  const char *metavar;  // "DIR", "N"; NULL for a flag that takes no value
  bool required;
  const char *fallback;  // the default as the help shows it (NULL: none)
  const char *help;      // one line
} atlas_cli_option;

typedef struct atlas_cli_command {
  const char *program;   // "atlas run", "make_checkpoint", "bench ledger"
  const char *synopsis;  // what follows the program on the usage line
  const char *summary;   // a paragraph under the usage line
  const atlas_cli_option *options;
  size_t option_count;
  size_t max_positionals;  // arguments that are not options (0: none)
  const char *version;     // non-NULL: --version prints "PROGRAM VERSION"
} atlas_cli_command;

// Called once per option found, with its index in the command's table and
// its value (NULL for flags). A returned status is a usage error.
typedef atlas_status (*atlas_cli_set_fn)(void *opts, size_t index,
                                         const char *value);

typedef enum atlas_cli_parse_result {
  ATLAS_CLI_PARSED = 0,   // options set; positionals at argv[*out_next..]
  ATLAS_CLI_HELP,         // --help (or --version) printed its text: exit 0
  ATLAS_CLI_USAGE_ERROR,  // a one-line error was printed: exit 2
} atlas_cli_parse_result;

// Parses argv[1..argc) (argv[0] is the command's name) with getopt_long.
atlas_cli_parse_result atlas_cli_parse(const atlas_cli_command *command,
                                       int argc, char **argv,
                                       atlas_cli_set_fn set, void *opts,
                                       int *out_next);

// Every option with its metavariable, help and default.
void atlas_cli_print_help(const atlas_cli_command *command, FILE *out);

// "PROG: MESSAGE; see `PROG --help`" on stderr. Returns ATLAS_CLI_EXIT_USAGE.
// The message is escaped and cut as atlas_cli_print_error's.
// "PROG: MESSAGE" and then `tail` ("" for none) and a newline on stderr, the
// message escaped by atlas_escape (runtime/base/escape.h: no control bytes
// other than newlines, nothing that is not UTF-8) and cut after
// ATLAS_CLI_MESSAGE_SHOWN bytes: every message a tool prints goes through it.
#define ATLAS_CLI_MESSAGE_SHOWN 16384
void atlas_cli_print_error(const char *program, const char *message,
                           const char *tail);

int atlas_cli_usage_error(const char *program, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Value parsers: INVALID_ARGUMENT naming the option on a bad value.
ATLAS_MUST_USE atlas_status atlas_cli_parse_long(const char *option,
                                                 const char *value, long min,
                                                 long max, long *out_value);
ATLAS_MUST_USE atlas_status atlas_cli_parse_u64(const char *option,
                                                const char *value,
                                                unsigned long long max,
                                                unsigned long long *out_value);
ATLAS_MUST_USE atlas_status atlas_cli_parse_double(const char *option,
                                                   const char *value,
                                                   double min,
                                                   double *out_value);
// A finite number in [lo, hi], or (lo, hi] when lo_open.
ATLAS_MUST_USE atlas_status atlas_cli_parse_interval(const char *option,
                                                     const char *value,
                                                     double lo, bool lo_open,
                                                     double hi,
                                                     double *out_value);

// A path the user typed, made absolute against BUILD_WORKING_DIRECTORY when
// Bazel ran the tool (`bazel run` starts tools inside the runfiles tree, but
// the user meant paths relative to where they typed the command). Absolute
// paths and paths outside `bazel run` are kept as they are. `out_path` holds
// ATLAS_CLI_PATH_MAX bytes.
ATLAS_MUST_USE atlas_status atlas_cli_resolve_path(const char *option,
                                                   const char *value,
                                                   char *out_path);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CLI_OPTIONS_H_
