// The atlas command line.
//
//   atlas demo [--backend B]
//   atlas run --model DIR --tokens 1,2,3 --steps N [options]
//   atlas report --model DIR [options]
//   atlas swap --model DIR --to DIR2 --tokens 1,2 --steps N [options]
//   atlas tokenize --tokenizer FILE [--add-special] < TEXT
//   atlas detokenize --tokenizer FILE --ids 1,2,3 [--skip-special]
//   atlas batch --model DIR --input FILE.jsonl --output FILE.jsonl
//   atlas serve --model DIR [--port 8080] [--api-key KEY]
//   atlas help [CMD] | atlas --help | atlas CMD --help | atlas --version
//
// This file dispatches; each command is a file of its own (cmd_*.c), which
// parses its options with getopt_long (cli_options.h) into its own options
// struct, then does the work with that struct.
// Exit status: 0 done; 1 the work failed (message on stderr); 2 usage error.
// It uses only the public API (atlas/atlas.h; atlas/atlas_testing.h for
// swap --fail-alloc): that proves the API is enough. The one exception is
// --version's list of the CUDA images built in (kernels/images_report.h).
#define _POSIX_C_SOURCE 200809L  // setenv
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/kernels/images_report.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/atlas/cmd_run.h"
#include "atlas/tools/atlas/commands.h"
#include "atlas/tools/serve/batch.h"
#include "atlas/tools/serve/serve.h"

typedef struct command_entry {
  const char *name;
  const atlas_cli_command *command;
  const char *summary;
} command_entry;

static const command_entry kCommands[] = {
    {"demo", &atlas_cli_demo_command,
     "load a built-in model, generate, hot-swap, tear down"},
    {"run", &atlas_cli_run_command,
     "load a checkpoint and generate token ids or text"},
    {"report", &atlas_cli_report_command,
     "a checkpoint's live memory by call site (text, JSON, SVG)"},
    {"swap", &atlas_cli_swap_command,
     "run one checkpoint, hot-swap to another, run it"},
    {"tokenize", &atlas_cli_tokenize_command, "text on stdin -> token ids"},
    {"detokenize", &atlas_cli_detokenize_command, "token ids -> text"},
    {"batch", &atlas_cli_batch_command,
     "run an OpenAI Batch file (JSON Lines), many requests at once"},
    {"serve", &atlas_cli_serve_command,
     "an OpenAI-compatible HTTP server with hot swap"},
};
enum { kCommandCount = sizeof(kCommands) / sizeof(kCommands[0]) };

static const command_entry *find_command(const char *name) {
  for (size_t i = 0; i < kCommandCount; ++i) {
    if (strcmp(kCommands[i].name, name) == 0) return &kCommands[i];
  }
  return NULL;
}

static void print_top_help(FILE *out) {
  fprintf(out,
          "usage: atlas COMMAND [options]\n"
          "       atlas help COMMAND | atlas COMMAND --help | atlas --version\n"
          "\nAtlas %s: a minimal GPU model runtime with hot swap.\n"
          "\ncommands:\n",
          atlas_version());
  for (size_t i = 0; i < kCommandCount; ++i) {
    fprintf(out, "  %-10s %s\n", kCommands[i].name, kCommands[i].summary);
  }
  fputs(
      "  help       this text, or a command's options: atlas help COMMAND\n"
      "\noptions:\n"
      "  -h, --help     print this help and exit\n"
      "  --version      print the version and exit\n"
      "\nUnder `bazel run`, relative paths are taken from the folder Bazel was "
      "run in.\n"
      "Exit status: 0 done, 1 failed, 2 usage error.\n",
      out);
}

static int run_command(int argc, char **argv) {
  if (argc < 2) {
    return atlas_cli_usage_error("atlas", "a command is needed");
  }
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
    print_top_help(stdout);
    return ATLAS_CLI_EXIT_OK;
  }
  if (strcmp(first, "--version") == 0) {
    printf("atlas %s\n", atlas_version());
    // The CUDA images built in, and the GPUs they serve.
    if (atlas_kernel_images_report(stdout, &atlas_decoder_module_set) != 0)
      return ATLAS_CLI_EXIT_FAILURE;
    return ATLAS_CLI_EXIT_OK;
  }
  if (strcmp(first, "help") == 0) {
    if (argc == 2) {
      print_top_help(stdout);
      return ATLAS_CLI_EXIT_OK;
    }
    if (argc > 3) {
      return atlas_cli_usage_error("atlas",
                                   "help takes one command, not "
                                   "also '%s'",
                                   argv[3]);
    }
    const command_entry *e = find_command(argv[2]);
    if (e == NULL) {
      return atlas_cli_usage_error("atlas", "help: unknown command '%s'",
                                   argv[2]);
    }
    atlas_cli_print_help(e->command, stdout);
    return ATLAS_CLI_EXIT_OK;
  }
  // The command's own getopt_long parse sees argv[1] as its argv[0].
  if (strcmp(first, "demo") == 0)
    return atlas_cli_demo_main(argc - 1, argv + 1);
  if (strcmp(first, "run") == 0)
    return atlas_cli_run_main(argc - 1, argv + 1, false);
  if (strcmp(first, "swap") == 0)
    return atlas_cli_run_main(argc - 1, argv + 1, true);
  if (strcmp(first, "report") == 0)
    return atlas_cli_report_main(argc - 1, argv + 1);
  if (strcmp(first, "tokenize") == 0)
    return atlas_cli_text_main(argc - 1, argv + 1, true);
  if (strcmp(first, "detokenize") == 0) {
    return atlas_cli_text_main(argc - 1, argv + 1, false);
  }
  if (strcmp(first, "batch") == 0) {
    return atlas_cli_batch_main(argc - 1, argv + 1);
  }
  if (strcmp(first, "serve") == 0) {
    return atlas_cli_serve_main(argc - 1, argv + 1);
  }
  if (first[0] == '-') {
    return atlas_cli_usage_error("atlas", "unknown option '%s'", first);
  }
  return atlas_cli_usage_error("atlas", "unknown command '%s'", first);
}

// The driver keeps what it JIT-compiles from PTX (the committed kernel
// images of a build without nvcc: tens of seconds the first time) in
// CUDA_CACHE_PATH. Unless the user chose a place, the CLI's goes under the
// user's cache folder, ${XDG_CACHE_HOME:-$HOME/.cache}/atlas/cuda, before
// anything starts the driver (kernels/images/README.md).
static void default_cuda_cache(void) {
  if (getenv("CUDA_CACHE_PATH") != NULL) return;
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char path[4096];
  int n = -1;
  if (xdg != NULL && xdg[0] == '/') {
    n = snprintf(path, sizeof(path), "%s/atlas/cuda", xdg);
  } else if (home != NULL && home[0] == '/') {
    n = snprintf(path, sizeof(path), "%s/.cache/atlas/cuda", home);
  }
  if (n > 0 && (size_t)n < sizeof(path)) setenv("CUDA_CACHE_PATH", path, 0);
}

int main(int argc, char **argv) {
  atlas_cli_keep_standard_fds();
  default_cuda_cache();
  return atlas_cli_finish_stdout("atlas", run_command(argc, argv));
}
