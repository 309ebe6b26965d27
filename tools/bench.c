// Benchmarks, one command each: `bench ledger`, `bench cuda`,
// `bench load FILE|DIR`. Options are parsed here with getopt_long
// (tools/cli_options.h) into each benchmark's options struct.
//
// Exit status: 0 done; 1 the benchmark failed; 2 usage error.
#include <stdio.h>
#include <string.h>

#include "atlas/runtime/version.h"
#include "atlas/tools/bench_cuda.h"
#include "atlas/tools/bench_ledger.h"
#include "atlas/tools/bench_load.h"
#include "atlas/tools/cli_options.h"

// ---- bench ledger ----

enum { LEDGER_ITERS, LEDGER_ROUNDS, LEDGER_COUNT };

static const atlas_cli_option kLedgerOptions[] = {
    [LEDGER_ITERS] = {"iters", "N", false, "200000",
                      "alloc+free pairs per timed round"},
    [LEDGER_ROUNDS] = {"rounds", "N", false, "7",
                       "timed rounds, 1 to 15; the median is printed"},
};

static const atlas_cli_command kLedger = {
    "bench ledger", "[options]",
    "alloc+free through the ledgered host backend against plain malloc+free,\n"
    "with 1k and 100k allocations live, and alloc_report over 100k; ratios are\n"
    "taken in the same run.",
    kLedgerOptions, LEDGER_COUNT, 0, ATLAS_VERSION_STRING};

static atlas_status set_ledger(void *opts, size_t index, const char *value) {
  atlas_bench_ledger_options *o = opts;
  long v = 0;
  if (index == LEDGER_ITERS) {
    ATLAS_RETURN_IF_ERROR(atlas_cli_parse_long("--iters", value, 1, 1L << 30, &v));
    o->iters = (size_t)v;
  } else {
    ATLAS_RETURN_IF_ERROR(atlas_cli_parse_long("--rounds", value, 1, 15, &v));
    o->rounds = (int)v;
  }
  return ATLAS_OK;
}

// ---- bench cuda ----

enum { CUDA_DEVICE, CUDA_ROUNDS, CUDA_QUICK, CUDA_COUNT };

static const atlas_cli_option kCudaOptions[] = {
    [CUDA_DEVICE] = {"device", "N", false, "0", "CUDA device ordinal"},
    [CUDA_ROUNDS] = {"rounds", "N", false, "15",
                     "timed rounds per case; the median is printed"},
    [CUDA_QUICK] = {"quick", NULL, false, "off",
                    "fewer iterations: a smoke run, not a measurement"},
};

static const atlas_cli_command kCuda = {
    "bench cuda", "[options]",
    "The CUDA backend against the raw driver API, side by side in one run:\n"
    "launch, graph replay, alloc+free, module load, red-zone scan. Needs a GPU.",
    kCudaOptions, CUDA_COUNT, 0, ATLAS_VERSION_STRING};

static atlas_status set_cuda(void *opts, size_t index, const char *value) {
  atlas_bench_cuda_options *o = opts;
  long v = 0;
  switch (index) {
    case CUDA_DEVICE:
      ATLAS_RETURN_IF_ERROR(atlas_cli_parse_long("--device", value, 0, 1024, &v));
      o->device = (int)v;
      return ATLAS_OK;
    case CUDA_ROUNDS:
      ATLAS_RETURN_IF_ERROR(
          atlas_cli_parse_long("--rounds", value, 1, 100000, &v));
      o->rounds = (int)v;
      return ATLAS_OK;
    default:
      o->quick = true;
      return ATLAS_OK;
  }
}

// ---- bench load ----

static const atlas_cli_command kLoad = {
    "bench load", "FILE.safetensors|DIR",
    "Page cache to device: our staged upload over threads x chunk sizes,\n"
    "against a pinned copy of the same bytes (the ceiling), a naive pageable\n"
    "copy and PyTorch's load_file (when python3 has torch); for a checkpoint\n"
    "DIR also the end-to-end swap time. Needs a GPU. No options.",
    NULL, 0, 1, ATLAS_VERSION_STRING};

static atlas_status set_nothing(void *opts, size_t index, const char *value) {
  (void)opts;
  (void)index;
  (void)value;
  return ATLAS_OK;
}

// ---- dispatch ----

typedef struct bench_entry {
  const char *name;
  const atlas_cli_command *command;
} bench_entry;

static const bench_entry kBenches[] = {
    {"ledger", &kLedger}, {"cuda", &kCuda}, {"load", &kLoad}};
enum { kBenchCount = sizeof(kBenches) / sizeof(kBenches[0]) };

static void print_top_help(void) {
  printf("usage: bench COMMAND [options]\n"
         "       bench help COMMAND | bench COMMAND --help | bench --version\n"
         "\nAtlas %s benchmarks; each prints ratios against a baseline timed "
         "in the same run.\n\ncommands:\n"
         "  ledger   ledgered alloc+free vs malloc+free; alloc_report over 100k\n"
         "  cuda     the CUDA backend vs the raw driver (needs a GPU)\n"
         "  load     FILE|DIR to the device: ours vs pinned, pageable, PyTorch\n"
         "\nExit status: 0 done, 1 failed, 2 usage error.\n",
         atlas_version());
}

static const atlas_cli_command *find_bench(const char *name) {
  for (size_t i = 0; i < kBenchCount; ++i) {
    if (strcmp(kBenches[i].name, name) == 0) return kBenches[i].command;
  }
  return NULL;
}

static int parsed_exit(atlas_cli_parse_result r) {
  return r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
  if (argc < 2) return atlas_cli_usage_error("bench", "a command is needed");
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 ||
      (strcmp(first, "help") == 0 && argc == 2)) {
    print_top_help();
    return ATLAS_CLI_EXIT_OK;
  }
  if (strcmp(first, "--version") == 0) {
    printf("bench (atlas) %s\n", atlas_version());
    return ATLAS_CLI_EXIT_OK;
  }
  if (strcmp(first, "help") == 0) {
    const atlas_cli_command *c = argc == 3 ? find_bench(argv[2]) : NULL;
    if (c == NULL) {
      return atlas_cli_usage_error("bench", "help: unknown command '%s'",
                                   argv[argc > 3 ? 3 : 2]);
    }
    atlas_cli_print_help(c, stdout);
    return ATLAS_CLI_EXIT_OK;
  }
  int next = 0;
  if (strcmp(first, "ledger") == 0) {
    atlas_bench_ledger_options o = {200000, 7};
    atlas_cli_parse_result r =
        atlas_cli_parse(&kLedger, argc - 1, argv + 1, set_ledger, &o, &next);
    return r != ATLAS_CLI_PARSED ? parsed_exit(r) : atlas_bench_ledger(&o);
  }
  if (strcmp(first, "cuda") == 0) {
    atlas_bench_cuda_options o = {0, 15, false};
    atlas_cli_parse_result r =
        atlas_cli_parse(&kCuda, argc - 1, argv + 1, set_cuda, &o, &next);
    return r != ATLAS_CLI_PARSED ? parsed_exit(r) : atlas_bench_cuda(&o);
  }
  if (strcmp(first, "load") == 0) {
    atlas_cli_parse_result r =
        atlas_cli_parse(&kLoad, argc - 1, argv + 1, set_nothing, NULL, &next);
    if (r != ATLAS_CLI_PARSED) return parsed_exit(r);
    // next indexes argv + 1.
    if (next >= argc - 1) {
      return atlas_cli_usage_error("bench load",
                                   "FILE.safetensors or DIR is required");
    }
    char path[ATLAS_CLI_PATH_MAX];
    atlas_status s = atlas_cli_resolve_path("FILE|DIR", argv[1 + next], path);
    if (s != ATLAS_OK) {
      atlas_cli_usage_error("bench load", "%s", atlas_status_message(s));
      atlas_status_free(s);
      return ATLAS_CLI_EXIT_USAGE;
    }
    atlas_bench_load_options o = {path};
    return atlas_bench_load(&o);
  }
  if (first[0] == '-') {
    return atlas_cli_usage_error("bench", "unknown option '%s'", first);
  }
  return atlas_cli_usage_error("bench", "unknown command '%s'", first);
}
