// Benchmarks, one command each: `bench ledger`, `bench cuda`,
// `bench load FILE|DIR`, `bench prefill DIR`, `bench decode DIR`. Options are
// parsed here with getopt_long (tools/atlas/cli_options.h) into each
// benchmark's options struct.
//
// Exit status: 0 done; 1 the benchmark failed; 2 usage error.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/base/version.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/bench/bench_cuda.h"
#include "atlas/tools/bench/bench_ledger.h"
#include "atlas/tools/bench/bench_llama.h"
#include "atlas/tools/bench/bench_load.h"

// ---- bench ledger ----

enum { LEDGER_ITERS, LEDGER_ROUNDS, LEDGER_COUNT };

static const atlas_cli_option kLedgerOptions[] = {
    [LEDGER_ITERS] = {"iters", "N", false, "200000",
                      "alloc+free pairs per timed round"},
    [LEDGER_ROUNDS] = {"rounds", "N", false, "7",
                       "timed rounds, 1 to 15; the median is printed"},
};

static const atlas_cli_command kLedger = {
    "bench ledger",
    "[options]",
    "alloc+free through the ledgered host backend against plain malloc+free,\n"
    "with 1k and 100k allocations live, and alloc_report over 100k; ratios "
    "are\n"
    "taken in the same run.",
    kLedgerOptions,
    LEDGER_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_ledger(void *opts, size_t index, const char *value) {
  atlas_bench_ledger_options *o = opts;
  long v = 0;
  if (index == LEDGER_ITERS) {
    ATLAS_RETURN_IF_ERROR(
        atlas_cli_parse_long("--iters", value, 1, 1L << 30, &v));
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
    "bench cuda",
    "[options]",
    "The CUDA backend against the raw driver API, side by side in one run:\n"
    "launch, graph replay, alloc+free, module load, red-zone scan. Needs a "
    "GPU.",
    kCudaOptions,
    CUDA_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_cuda(void *opts, size_t index, const char *value) {
  atlas_bench_cuda_options *o = opts;
  long v = 0;
  switch (index) {
    case CUDA_DEVICE:
      ATLAS_RETURN_IF_ERROR(
          atlas_cli_parse_long("--device", value, 0, 1024, &v));
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
    "bench load",
    "FILE.safetensors|DIR",
    "Page cache to device: our staged upload over threads x chunk sizes,\n"
    "against a pinned copy of the same bytes (the ceiling), a naive pageable\n"
    "copy and PyTorch's load_file (when python3 has torch); for a checkpoint\n"
    "DIR also the end-to-end swap time. Needs a GPU. No options.",
    NULL,
    0,
    1,
    ATLAS_VERSION_STRING};

static atlas_status set_nothing(void *opts, size_t index, const char *value) {
  (void)opts;
  (void)index;
  (void)value;
  return ATLAS_OK;
}

static int parsed_exit(atlas_cli_parse_result r) {
  return r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
}

// ---- bench prefill, bench decode ----

enum { LLAMA_SIZES, LLAMA_COUNT, LLAMA_BACKEND, LLAMA_KV, LLAMA_OPTIONS };

#define LLAMA_BACKEND_OPTION                            \
  {                                                     \
    "backend", "B", false, "cuda",                      \
        "cuda, host or auto (a device if there is one)" \
  }
#define LLAMA_KV_OPTION                                                      \
  {                                                                          \
    "kv-dtype", "T", false, "auto",                                          \
        "KV cache type: auto (as atlas run: the weights' type when 16-bit, " \
        "else f32), f32, f16 or bf16"                                        \
  }

static const atlas_cli_option kPrefillOptions[] = {
    [LLAMA_SIZES] = {"tokens", "LIST", false, "512,2048",
                     "prompt lengths to time, comma-separated (at most 8)"},
    [LLAMA_COUNT] =
        {"reps", "N", false, "5",
         "timed prefills a length after a warm-up; the median is printed"},
    [LLAMA_BACKEND] = LLAMA_BACKEND_OPTION,
    [LLAMA_KV] = LLAMA_KV_OPTION,
};

static const atlas_cli_command kPrefill = {
    "bench prefill",
    "DIR [options]",
    "Prompt processing of the Llama-family checkpoint in DIR (random token\n"
    "ids): the median wall time of a whole prompt's forward pass, with the\n"
    "last token's logits copied back. Prints the device's copy bandwidth\n"
    "too; tools/gpu/gpu_speed.py sets it beside transformers.",
    kPrefillOptions,
    LLAMA_OPTIONS,
    1,
    ATLAS_VERSION_STRING};

static const atlas_cli_option kDecodeOptions[] = {
    [LLAMA_SIZES] = {"context", "LIST", false, "128",
                     "context lengths before the timed steps, comma-separated "
                     "(at most 8)"},
    [LLAMA_COUNT] =
        {"steps", "N", false, "64",
         "timed decode steps a context and mode, after three warm-up steps"},
    [LLAMA_BACKEND] = LLAMA_BACKEND_OPTION,
    [LLAMA_KV] = LLAMA_KV_OPTION,
};

static const atlas_cli_command kDecode = {
    "bench decode",
    "DIR [options]",
    "Milliseconds a generated token (greedy, on the device) after a prompt\n"
    "of each context length, for the Llama-family checkpoint in DIR: the\n"
    "captured step with the device a step ahead, then the host reading each\n"
    "id, no launch overlap, eager launches, and a block a split of attention.",
    kDecodeOptions,
    LLAMA_OPTIONS,
    1,
    ATLAS_VERSION_STRING};

// `value`: comma-separated integers from 1 to 2^24 (at most 8).
static atlas_status parse_sizes(const char *option, const char *value,
                                atlas_bench_llama_options *o) {
  o->size_count = 0;
  const char *p = value;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    char item[32];
    if (o->size_count == ATLAS_BENCH_LLAMA_MAX_SIZES || len == 0 ||
        len >= sizeof(item)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s wants 1 to %d comma-separated integers, not "
                               "'%s'",
                               option, ATLAS_BENCH_LLAMA_MAX_SIZES, value);
    }
    memcpy(item, p, len);
    item[len] = '\0';
    long v = 0;
    ATLAS_RETURN_IF_ERROR(atlas_cli_parse_long(option, item, 1, 1L << 24, &v));
    o->sizes[o->size_count++] = v;
    if (comma == NULL) return ATLAS_OK;
    p = comma + 1;
  }
}

typedef struct llama_parse {
  const atlas_cli_command *command;
  atlas_bench_llama_options options;
} llama_parse;

static atlas_status set_llama(void *opts, size_t index, const char *value) {
  llama_parse *p = opts;
  atlas_bench_llama_options *o = &p->options;
  char option[32];
  snprintf(option, sizeof(option), "--%s", p->command->options[index].name);
  switch (index) {
    case LLAMA_SIZES:
      return parse_sizes(option, value, o);
    case LLAMA_COUNT:
      return atlas_cli_parse_long(option, value, 1, 1L << 20, &o->count);
    case LLAMA_BACKEND:
      ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(value));
      o->backend = value;
      return ATLAS_OK;
    default:
      o->kv_auto = strcmp(value, "auto") == 0;
      o->kv_dtype = ATLAS_DTYPE_F32;
      if (!o->kv_auto && !atlas_dtype_from_name(value, &o->kv_dtype)) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "--kv-dtype wants auto, f32, f16 or bf16, not "
                                 "'%s'",
                                 value);
      }
      return ATLAS_OK;
  }
}

// bench prefill / bench decode: argv[0] is the command's name.
static int run_llama(const atlas_cli_command *command, int argc, char **argv,
                     int (*bench)(const atlas_bench_llama_options *)) {
  llama_parse p = {command, {0}};
  p.options.program = command->program;
  p.options.backend = "cuda";
  p.options.kv_auto = true;
  p.options.kv_dtype = ATLAS_DTYPE_F32;
  p.options.count = strtol(command->options[LLAMA_COUNT].fallback, NULL, 10);
  atlas_status s =
      parse_sizes("", command->options[LLAMA_SIZES].fallback, &p.options);
  if (s != ATLAS_OK) {  // the tables' own defaults: a bug here
    fprintf(stderr, "%s: %s\n", command->program, atlas_status_message(s));
    atlas_status_free(s);
    return ATLAS_CLI_EXIT_FAILURE;
  }
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(command, argc, argv, set_llama, &p, &next);
  if (r != ATLAS_CLI_PARSED) return parsed_exit(r);
  if (next >= argc)
    return atlas_cli_usage_error(command->program, "DIR is required");
  char dir[ATLAS_CLI_PATH_MAX];
  s = atlas_cli_resolve_path("DIR", argv[next], dir);
  if (s != ATLAS_OK) {
    atlas_cli_usage_error(command->program, "%s", atlas_status_message(s));
    atlas_status_free(s);
    return ATLAS_CLI_EXIT_USAGE;
  }
  p.options.dir = dir;
  return bench(&p.options);
}

// ---- dispatch ----

typedef struct bench_entry {
  const char *name;
  const atlas_cli_command *command;
} bench_entry;

static const bench_entry kBenches[] = {{"ledger", &kLedger},
                                       {"cuda", &kCuda},
                                       {"load", &kLoad},
                                       {"prefill", &kPrefill},
                                       {"decode", &kDecode}};
enum { kBenchCount = sizeof(kBenches) / sizeof(kBenches[0]) };

static void print_top_help(void) {
  printf(
      "usage: bench COMMAND [options]\n"
      "       bench help COMMAND | bench COMMAND --help | bench --version\n"
      "\nAtlas %s benchmarks; each prints ratios against a baseline timed "
      "in the same run.\n\ncommands:\n"
      "  ledger   ledgered alloc+free vs malloc+free; alloc_report over 100k\n"
      "  cuda     the CUDA backend vs the raw driver (needs a GPU)\n"
      "  load     FILE|DIR to the device: ours vs pinned, pageable, PyTorch\n"
      "  prefill  DIR: batched prompt time, against transformers "
      "(docs/PERFORMANCE.md)\n"
      "  decode   DIR: ms per generated token after a context\n"
      "\nExit status: 0 done, 1 failed, 2 usage error.\n",
      atlas_version());
}

static const atlas_cli_command *find_bench(const char *name) {
  for (size_t i = 0; i < kBenchCount; ++i) {
    if (strcmp(kBenches[i].name, name) == 0) return kBenches[i].command;
  }
  return NULL;
}

static int run_bench(int argc, char **argv) {
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
    if (argc > 3) {
      return atlas_cli_usage_error("bench",
                                   "help takes one command, not "
                                   "also '%s'",
                                   argv[3]);
    }
    const atlas_cli_command *c = find_bench(argv[2]);
    if (c == NULL) {
      return atlas_cli_usage_error("bench", "help: unknown command '%s'",
                                   argv[2]);
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
  if (strcmp(first, "prefill") == 0) {
    return run_llama(&kPrefill, argc - 1, argv + 1, atlas_bench_prefill);
  }
  if (strcmp(first, "decode") == 0) {
    return run_llama(&kDecode, argc - 1, argv + 1, atlas_bench_decode);
  }
  if (first[0] == '-') {
    return atlas_cli_usage_error("bench", "unknown option '%s'", first);
  }
  return atlas_cli_usage_error("bench", "unknown command '%s'", first);
}

int main(int argc, char **argv) {
  atlas_cli_keep_standard_fds();
  return atlas_cli_finish_stdout("bench", run_bench(argc, argv));
}
