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
// Each command parses its options with getopt_long (tools/atlas/cli_options.h)
// into its own options struct, then a function does the work with that struct.
// Exit status: 0 done; 1 the work failed (message on stderr); 2 usage error.
// It uses only the public API (atlas/atlas.h; atlas/atlas_testing.h for
// swap --fail-alloc): that proves the API is enough.
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "atlas/atlas.h"
#include "atlas/atlas_testing.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/atlas/progress.h"
#include "atlas/tools/checkpoint/make_checkpoint_demo_models.h"
#include "atlas/tools/serve/batch.h"
#include "atlas/tools/serve/serve.h"

// ---- shared option values ----------------------------------------------------

static const char kBackendHelp[] =
    "host, cuda, or auto (cuda when a GPU is usable, else host)";

// One of atlas_backend_names() ("cuda,host,auto").
static atlas_status parse_backend(const char *value, const char **out) {
  const char *names = atlas_backend_names();
  size_t len = strlen(value);
  for (const char *p = names; len > 0 && *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, value, n) == 0) {
      *out = value;
      return ATLAS_OK;
    }
    p += n + (end != NULL);
  }
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "unknown backend '%s' (expected one of: %s)", value,
                           names);
}

// "1,2,3" -> token ids (the caller frees *out).
static atlas_status parse_ids(const char *flag, const char *text,
                              uint32_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 1;
  for (const char *p = text; *p; ++p) cap += *p == ',';
  uint32_t *ids = malloc(cap * sizeof(uint32_t));
  if (ids == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many tokens");
  }
  const char *p = text;
  while (*p) {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    // Each id starts with a digit (no sign, no space) and a comma is
    // followed by one ("1,,2" and "1,2," are refused).
    if (!(*p >= '0' && *p <= '9') || end == p || errno != 0 || v > UINT32_MAX ||
        (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0')) {
      free(ids);
      *n = 0;
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s wants comma-separated ids, not '%s'", flag,
                               text);
    }
    ids[(*n)++] = (uint32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (*n == 0) {
    free(ids);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s needs at least one id", flag);
  }
  *out = ids;
  return ATLAS_OK;
}

// ---- per-command options ------------------------------------------------------

typedef struct demo_options {
  const char *backend;
} demo_options;

enum { kMaxStops = 16 };

typedef struct run_options {
  char model[ATLAS_CLI_PATH_MAX];
  char to[ATLAS_CLI_PATH_MAX];      // swap only
  char logits[ATLAS_CLI_PATH_MAX];  // "" when not asked for
  const char *backend;
  uint32_t *prompt;  // owned
  size_t prompt_len;
  long steps;
  long max_seq;       // 0: prompt + steps
  double budget_mb;   // swap only; 0: the whole device
  long fail_alloc;    // swap only; testing
  bool fail_restore;  // swap only; testing
  bool ignore_eos;
  const char *kv_dtype;  // "auto" (NULL), "f32", "f16", "bf16"
  // run only: text in, text out; sampling.
  const char *text;  // --prompt (argv's) or --prompt-file's
                     // bytes; NULL: --tokens
  size_t text_len;
  char prompt_file[ATLAS_CLI_PATH_MAX];  // "" when not given; "-": stdin
  char *file_text;                       // owned: what prompt_file held
  bool chat;
  const char *system;  // --system (argv's); NULL: none
  bool stats;
  double temperature, top_p, min_p, repetition_penalty;
  long top_k;
  unsigned long long seed;
  const char *stops[kMaxStops];  // --stop (argv's)
  size_t stop_count;
} run_options;

typedef struct report_options {
  char model[ATLAS_CLI_PATH_MAX];
  char json[ATLAS_CLI_PATH_MAX];
  char svg[ATLAS_CLI_PATH_MAX];
  const char *backend;
  long top;
  double min_mb;
  long max_seq;  // 0: the runtime's default (the model's context, <= 2048)
  double kv_budget_mb;  // > 0: open the paged KV pool of this size first
} report_options;

enum { kMaxSteps = 1 << 20, kMaxSeq = 1 << 24 };
// Far past any context a prompt could fill; what ends an endless source.
enum { kMaxPromptFileBytes = 256 << 20 };

// ---- demo ----------------------------------------------------------------------

static const atlas_cli_option kDemoOptions[] = {
    {"backend", "KIND", false, "host", kBackendHelp},
};

static const atlas_cli_command kDemoCommand = {
    "atlas demo",
    "[options]",
    "Loads tiny-a, a Llama model built into this binary, generates 8 tokens\n"
    "after the prompt 1,2,3, hot-swaps to tiny-b in the same process,\n"
    "generates again, tears everything down and reports what leaked "
    "(nothing).\n"
    "Both models have random weights: the token ids are not text, and a\n"
    "random model often repeats an id; that is expected.",
    kDemoOptions,
    sizeof(kDemoOptions) / sizeof(kDemoOptions[0]),
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_demo(void *opts, size_t index, const char *value) {
  demo_options *o = opts;
  (void)index;  // only --backend
  return parse_backend(value, &o->backend);
}

// ---- run and swap ---------------------------------------------------------------

// The options run and swap share, then swap's own, then run's own. Each
// command's table holds the shared ones and its own: kRunOptions holds run's
// own at RUN_ONLY(RUN_PROMPT) onwards, right after the shared ones.
enum {
  RUN_MODEL,
  RUN_TOKENS,
  RUN_STEPS,
  RUN_BACKEND,
  RUN_MAX_SEQ,
  RUN_LOGITS,
  RUN_IGNORE_EOS,
  RUN_KV_DTYPE,
  RUN_OPTION_COUNT,
  SWAP_BUDGET_MB = RUN_OPTION_COUNT,
  SWAP_TO,
  SWAP_FAIL_ALLOC,
  SWAP_FAIL_RESTORE,
  SWAP_OPTION_COUNT,
  RUN_PROMPT = SWAP_OPTION_COUNT,
  RUN_PROMPT_FILE,
  RUN_CHAT,
  RUN_SYSTEM,
  RUN_TEMPERATURE,
  RUN_TOP_K,
  RUN_TOP_P,
  RUN_MIN_P,
  RUN_REPETITION_PENALTY,
  RUN_SEED,
  RUN_STOP,
  RUN_STATS
};
#define RUN_ONLY(option) (RUN_OPTION_COUNT + (option)-RUN_PROMPT)

static const atlas_cli_option kRunOptions[] = {
    [RUN_MODEL] = {"model", "DIR", true, NULL,
                   "checkpoint folder: config.json + model.safetensors (or "
                   "model.safetensors.index.json and its shards)"},
    [RUN_TOKENS] = {"tokens", "IDS", false, "none: --prompt",
                    "prompt token ids, comma-separated, e.g. 1,2,3; prints "
                    "the generated ids"},
    [RUN_STEPS] = {"steps", "N", true, NULL,
                   "tokens to generate (0 runs the prompt only); the prompt "
                   "and N - 1 must fit the model's context "
                   "(max_position_embeddings), checked before the load"},
    [RUN_BACKEND] = {"backend", "KIND", false, "auto", kBackendHelp},
    [RUN_MAX_SEQ] = {"max-seq", "N", false, "prompt length + steps",
                     "positions the KV cache and scratch are sized for"},
    [RUN_LOGITS] =
        {"logits", "FILE", false, "none",
         "write every step's logits: little-endian float32, one "
         "row of vocab per forward step: len(tokens) + generated - 1 "
         "(fewer than steps when EOS stops early; len(tokens) for "
         "--steps 0); written to a "
         "temporary name opened before the load, renamed on "
         "success, removed on failure"},
    [RUN_IGNORE_EOS] = {"ignore-eos", NULL, false, "off",
                        "keep generating past the model's EOS ids"},
    [RUN_KV_DTYPE] = {"kv-dtype", "TYPE", false, "auto",
                      "the KV cache's element type: auto (the weights' type "
                      "for f16 and bf16 models, else f32), f32 (the faithful "
                      "mode: f32 activations throughout), f16 or bf16 (half "
                      "the cache memory; the fast mode)"},
    // run only (after swap's own options in set_run's numbering)
    [RUN_ONLY(RUN_PROMPT)] = {"prompt", "TEXT", false, "none: --tokens",
                              "prompt text, encoded with DIR/tokenizer.json; "
                              "streams the generated text"},
    [RUN_ONLY(RUN_PROMPT_FILE)] = {"prompt-file", "FILE", false, "none",
                                   "as --prompt, the text every byte of FILE "
                                   "(- for stdin), a final newline included"},
    [RUN_ONLY(RUN_CHAT)] = {"chat", NULL, false, "off",
                            "wrap the prompt as a user message with "
                            "DIR/tokenizer_config.json's chat_template"},
    [RUN_ONLY(RUN_SYSTEM)] = {"system", "TEXT", false, "none",
                              "with --chat: a system message before the "
                              "user's"},
    [RUN_ONLY(RUN_TEMPERATURE)] = {"temperature", "T", false, "0 (greedy)",
                                   "sample with this temperature (>= 0)"},
    [RUN_ONLY(RUN_TOP_K)] = {"top-k", "K", false, "0 (off)",
                             "sample among the K most likely ids"},
    [RUN_ONLY(RUN_TOP_P)] = {"top-p", "P", false, "1 (off)",
                             "sample among the most likely ids whose "
                             "probability reaches P, in (0, 1]"},
    [RUN_ONLY(
        RUN_MIN_P)] = {"min-p", "P", false, "0 (off)",
                       "drop ids below P x the top probability; P in [0, 1]"},
    [RUN_ONLY(RUN_REPETITION_PENALTY)] = {"repetition-penalty", "R", false,
                                          "1 (off)",
                                          "penalise ids already in the "
                                          "sequence (> 0)"},
    [RUN_ONLY(RUN_SEED)] = {"seed", "N", false, "0",
                            "the sampler's seed: the same seed, the same "
                            "text"},
    [RUN_ONLY(RUN_STOP)] = {"stop", "STR", false, "none",
                            "stop before STR appears in the text (with a "
                            "text prompt; may be repeated)"},
    [RUN_ONLY(RUN_STATS)] = {"stats", NULL, false, "off",
                             "print to stderr the prompt's length and time "
                             "to the first token, then the tokens a second "
                             "of the rest"},
};

static const atlas_cli_command kRunCommand = {
    "atlas run",
    "--model DIR --steps N PROMPT [opts]",
    "Loads the checkpoint in DIR, runs the PROMPT (--tokens IDS, --prompt\n"
    "TEXT or --prompt-file FILE) and generates up to N tokens (greedy unless\n"
    "--temperature is given). With --tokens it prints the generated ids on\n"
    "one line; with a text prompt it streams the text.",
    kRunOptions,
    sizeof(kRunOptions) / sizeof(kRunOptions[0]),
    0,
    ATLAS_VERSION_STRING};

static const atlas_cli_option kSwapOptions[] = {
    [RUN_MODEL] = {"model", "DIR", true, NULL,
                   "the checkpoint folder to load first"},
    [RUN_TOKENS] = {"tokens", "IDS", true, NULL,
                    "prompt token ids, comma-separated, e.g. 1,2,3"},
    [RUN_STEPS] = {"steps", "N", true, NULL,
                   "tokens each model generates greedily"},
    [RUN_BACKEND] = {"backend", "KIND", false, "auto", kBackendHelp},
    [RUN_MAX_SEQ] = {"max-seq", "N", false, "prompt length + steps",
                     "positions the KV cache and scratch are sized for"},
    [RUN_LOGITS] = {"logits", "FILE", false, "none",
                    "write every step's logits, float32: the first model's, "
                    "then those of the model serving after the swap (the "
                    "old one again when the swap failed); renamed into "
                    "place only when both generations completed: a swap "
                    "that leaves no model writes no file (an existing one "
                    "stays as it was)"},
    [RUN_IGNORE_EOS] = {"ignore-eos", NULL, false, "off",
                        "keep generating past the model's EOS ids"},
    [RUN_KV_DTYPE] = {"kv-dtype", "TYPE", false, "auto",
                      "the KV cache's element type: auto (the weights' type "
                      "for f16 and bf16 models, else f32), f32 (the faithful "
                      "mode: f32 activations throughout), f16 or bf16 (half "
                      "the cache memory; the fast mode)"},
    [SWAP_BUDGET_MB] = {"budget-mb", "MB", false, "0 (the whole device)",
                        "most device memory the models may hold, in MB "
                        "(1e6 bytes); the swap is refused up front when the "
                        "new model cannot fit"},
    [SWAP_TO] = {"to", "DIR2", true, NULL, "the checkpoint folder to swap to"},
    [SWAP_FAIL_ALLOC] = {"fail-alloc", "N", false, "0 (none)",
                         "testing: make the N-th allocation of the new model "
                         "fail, to see the old model restored"},
    [SWAP_FAIL_RESTORE] = {"fail-restore", NULL, false, "off",
                           "testing, with --fail-alloc: make the restore of "
                           "the old model fail too (when only one model "
                           "fits), to see a swap that leaves no model"},
};

static const atlas_cli_command kSwapCommand = {
    "atlas swap",
    "--model DIR --to DIR2 --tokens IDS --steps N [options]",
    "Loads DIR, generates, prints its memory report, hot-swaps to DIR2 in the\n"
    "same process, then the model serving (DIR2, or DIR when the swap failed)\n"
    "generates and reports again; the close prints `leaked: N bytes`. A swap\n"
    "either succeeds, is refused before anything changed, fails loading the\n"
    "new model beside the old one (never unloaded), or fails part-way and\n"
    "restores the old model: in those three the old model keeps serving and\n"
    "the exit status is 1, as when the restore fails too (then nothing\n"
    "serves, and no --logits file is written: it would hold the first\n"
    "model's rows alone). A DIR2 that cannot take the prompt (an id past\n"
    "its vocab_size, a context too short for it) is refused before\n"
    "anything changed. ATLAS_FAULT=kind:n (testing) fails the n-th operation\n"
    "of that kind inside the swap: DIR loads without it\n"
    "(tools/fuzz/fault_sweep.sh).",
    kSwapOptions,
    SWAP_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_run_swap(run_options *o, size_t index, const char *name,
                                 const char *value) {
  char flag[64];
  snprintf(flag, sizeof(flag), "--%s", name);
  switch (index) {
    case RUN_MODEL:
      return atlas_cli_resolve_path(flag, value, o->model);
    case SWAP_TO:
      return atlas_cli_resolve_path(flag, value, o->to);
    case RUN_LOGITS:
      return atlas_cli_resolve_path(flag, value, o->logits);
    case RUN_TOKENS:
      free(o->prompt);
      return parse_ids(flag, value, &o->prompt, &o->prompt_len);
    case RUN_STEPS:
      return atlas_cli_parse_long(flag, value, 0, kMaxSteps, &o->steps);
    case RUN_MAX_SEQ:
      return atlas_cli_parse_long(flag, value, 1, kMaxSeq, &o->max_seq);
    case RUN_BACKEND:
      return parse_backend(value, &o->backend);
    case RUN_IGNORE_EOS:
      o->ignore_eos = true;
      return ATLAS_OK;
    case RUN_KV_DTYPE:
      if (strcasecmp(value, "auto") != 0 && strcasecmp(value, "f32") != 0 &&
          strcasecmp(value, "f16") != 0 && strcasecmp(value, "bf16") != 0) {
        return atlas_status_make(
            ATLAS_STATUS_INVALID_ARGUMENT,
            "%s: \"%.32s\" is none of auto, f32, f16, bf16", flag, value);
      }
      o->kv_dtype = value;
      return ATLAS_OK;
    case SWAP_BUDGET_MB:
      // 0 is the whole device; anything else must be a byte at least and
      // fit the API's 64-bit byte count (rounding to 0 would mean "all").
      ATLAS_RETURN_IF_ERROR(
          atlas_cli_parse_double(flag, value, 0.0, &o->budget_mb));
      if (o->budget_mb != 0.0 &&
          (o->budget_mb < 1e-6 || o->budget_mb > 1.8e13)) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "%s wants 0 (the whole device) or a number "
                                 "from 1e-06 (one byte) to 1.8e+13, not '%s'",
                                 flag, value);
      }
      return ATLAS_OK;
    case SWAP_FAIL_ALLOC:
      return atlas_cli_parse_long(flag, value, 0, 1L << 30, &o->fail_alloc);
    case SWAP_FAIL_RESTORE:
      o->fail_restore = true;
      return ATLAS_OK;
    case RUN_PROMPT:
      o->text = value;
      o->text_len = strlen(value);
      return ATLAS_OK;
    case RUN_PROMPT_FILE:
      if (strcmp(value, "-") == 0) {
        snprintf(o->prompt_file, sizeof(o->prompt_file), "-");
        return ATLAS_OK;
      }
      return atlas_cli_resolve_path(flag, value, o->prompt_file);
    case RUN_CHAT:
      o->chat = true;
      return ATLAS_OK;
    case RUN_SYSTEM:
      o->system = value;
      return ATLAS_OK;
    case RUN_STATS:
      o->stats = true;
      return ATLAS_OK;
    // The ranges atlas_generate checks, here as usage errors; each value
    // must also be a finite float, the type the API takes.
    case RUN_TEMPERATURE:
      return atlas_cli_parse_interval(flag, value, 0.0, false, FLT_MAX,
                                      &o->temperature);
    case RUN_TOP_K:
      return atlas_cli_parse_long(flag, value, 0, INT32_MAX, &o->top_k);
    case RUN_TOP_P:
      return atlas_cli_parse_interval(flag, value, 0.0, true, 1.0, &o->top_p);
    case RUN_MIN_P:
      return atlas_cli_parse_interval(flag, value, 0.0, false, 1.0, &o->min_p);
    case RUN_REPETITION_PENALTY:
      return atlas_cli_parse_interval(flag, value, 0.0, true, FLT_MAX,
                                      &o->repetition_penalty);
    case RUN_SEED:
      return atlas_cli_parse_u64(flag, value, UINT64_MAX, &o->seed);
    case RUN_STOP:
      if (o->stop_count == kMaxStops) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "at most %d --stop strings", kMaxStops);
      }
      if (value[0] == '\0') {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "--stop wants a non-empty string");
      }
      o->stops[o->stop_count++] = value;
      return ATLAS_OK;
    default:
      return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                               flag);
  }
}

static atlas_status set_swap(void *opts, size_t index, const char *value) {
  return set_run_swap(opts, index, kSwapOptions[index].name, value);
}

// kRunOptions: swap's numbering, run's own options after swap's.
static atlas_status set_run(void *opts, size_t index, const char *value) {
  size_t i =
      index < RUN_OPTION_COUNT ? index : index - RUN_OPTION_COUNT + RUN_PROMPT;
  return set_run_swap(opts, i, kRunOptions[index].name, value);
}

// ---- report --------------------------------------------------------------------

enum {
  REPORT_MODEL,
  REPORT_BACKEND,
  REPORT_MAX_SEQ,
  REPORT_TOP,
  REPORT_MIN_MB,
  REPORT_JSON,
  REPORT_SVG,
  REPORT_KV_BUDGET,
  REPORT_OPTION_COUNT
};

static const atlas_cli_option kReportOptions[] = {
    [REPORT_MODEL] = {"model", "DIR", true, NULL, "checkpoint folder"},
    [REPORT_BACKEND] = {"backend", "KIND", false, "auto", kBackendHelp},
    [REPORT_MAX_SEQ] = {"max-seq", "N", false,
                        "the model's max_position_embeddings, at most 2048",
                        "positions the KV cache and scratch are sized for; "
                        "give run's prompt length + steps to see what run "
                        "holds"},
    [REPORT_TOP] = {"top", "N", false, "10",
                    "at most N call sites (0: all); the rest fold into one "
                    "row, in the text, the JSON and the SVG"},
    [REPORT_MIN_MB] = {"min-mb", "MB", false, "0",
                       "fold sites holding less than MB (1e6 bytes) into the "
                       "remainder row, in the text, the JSON and the SVG"},
    [REPORT_JSON] = {"json", "FILE", false, "none",
                     "also write the report as JSON to FILE"},
    [REPORT_SVG] = {"svg", "FILE", false, "none",
                    "also draw the report as an SVG bar chart in FILE"},
    [REPORT_KV_BUDGET] = {"kv-budget-mb", "MB", false, "none",
                          "also make the paged KV pool that serving uses, of "
                          "MB (1e6 bytes): its allocation is a site, and a "
                          "last line counts its blocks used, cached and "
                          "free"},
};

static const atlas_cli_command kReportCommand = {
    "atlas report",
    "--model DIR [options]",
    "Loads the checkpoint in DIR and prints the live memory by call site:\n"
    "weights, KV cache and scratch, biggest first.",
    kReportOptions,
    REPORT_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_report(void *opts, size_t index, const char *value) {
  report_options *o = opts;
  char flag[64];
  snprintf(flag, sizeof(flag), "--%s", kReportOptions[index].name);
  switch (index) {
    case REPORT_MODEL:
      return atlas_cli_resolve_path(flag, value, o->model);
    case REPORT_JSON:
      return atlas_cli_resolve_path(flag, value, o->json);
    case REPORT_SVG:
      return atlas_cli_resolve_path(flag, value, o->svg);
    case REPORT_BACKEND:
      return parse_backend(value, &o->backend);
    case REPORT_MAX_SEQ:
      return atlas_cli_parse_long(flag, value, 1, kMaxSeq, &o->max_seq);
    case REPORT_TOP:
      return atlas_cli_parse_long(flag, value, 0, 1L << 30, &o->top);
    case REPORT_MIN_MB:
      return atlas_cli_parse_double(flag, value, 0.0, &o->min_mb);
    case REPORT_KV_BUDGET:
      return atlas_cli_parse_double(flag, value, 0.0, &o->kv_budget_mb);
    default:
      return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                               flag);
  }
}

// ---- the work --------------------------------------------------------------------

typedef struct logits_file {
  FILE *f;
  const char *path;
} logits_file;

// What one generation's callbacks share: the logits file and, for --stats,
// when the call began and when the first and last tokens came.
typedef struct generation_ctx {
  logits_file *lf;
  size_t tokens;
  double start_ms, first_ms, last_ms;
} generation_ctx;

static atlas_status write_logits(void *ctx, const float *logits, size_t n) {
  logits_file *lf = ((generation_ctx *)ctx)->lf;
  if (lf == NULL || lf->f == NULL) return ATLAS_OK;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "--logits writes the host's floats as little-endian; port this first"
#endif
  if (fwrite(logits, sizeof(float), n, lf->f) != n) {
    char reason[ATLAS_CLI_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "writing logits to %s: %s",
                             lf->path,
                             atlas_cli_strerror(errno, reason, sizeof(reason)));
  }
  return ATLAS_OK;
}

static bool time_token(void *ctx, uint32_t token) {
  (void)token;
  generation_ctx *g = ctx;
  g->last_ms = atlas_progress_now_ms();
  if (g->tokens++ == 0) g->first_ms = g->last_ms;
  return true;
}

// run --stats, on stderr: the prompt (its forward pass and the first token's
// choice) and the rest of the tokens, timed around atlas_generate.
static void print_stats(const generation_ctx *g, size_t prompt_len,
                        double end_ms) {
  if (g->tokens == 0) {
    fprintf(stderr, "stats: prompt %zu tokens in %.2f ms, no token generated\n",
            prompt_len, end_ms - g->start_ms);
    return;
  }
  fprintf(stderr, "stats: prompt %zu tokens, first token after %.2f ms",
          prompt_len, g->first_ms - g->start_ms);
  if (g->tokens > 1) {
    double ms = g->last_ms - g->first_ms;
    fprintf(stderr, "; %zu more tokens in %.2f ms (%.1f tokens/s)",
            g->tokens - 1, ms,
            ms > 0 ? (double)(g->tokens - 1) * 1e3 / ms : 0.0);
  }
  fputc('\n', stderr);
}

static void open_options_for(const char *backend, int64_t max_seq,
                             atlas_progress *progress,
                             atlas_open_options *out) {
  atlas_open_options_init(out);
  out->backend = backend;
  out->max_seq = max_seq;
  out->progress = atlas_progress_update;
  out->progress_ctx = progress;
}

static atlas_status print_report(const atlas_model *m, size_t top,
                                 double min_mb) {
  atlas_model_info info = {.struct_size = sizeof(info)};
  ATLAS_RETURN_IF_ERROR(atlas_model_info_get(m, &info));
  atlas_report_options ro;
  atlas_report_options_init(&ro);
  ro.top = top;
  ro.min_mb = min_mb;
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_report(m, ATLAS_REPORT_TEXT, &ro, &text));
  printf("memory report (%s on %s, KV cache for %lld positions):\n%s",
         info.name, info.backend, (long long)info.max_seq, text);
  atlas_free(text);
  return ATLAS_OK;
}

// Streams generated text to stdout as it arrives.
static bool print_text(void *ctx, const char *text, size_t len) {
  (void)ctx;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

// The KV cache positions a generation uses: every prompt token and every
// generated token but the last (which is never fed back).
static long positions_needed(size_t prompt_len, long steps) {
  return (long)prompt_len + (steps > 0 ? steps - 1 : 0);
}

// Generates and prints the ids on one line, or (with a tokenizer) streams
// the text and ends it with a newline. `run` (may be NULL: greedy) brings
// the sampling options and stop strings.
static atlas_status generate(atlas_model *m, const uint32_t *prompt, size_t n,
                             size_t steps, bool ignore_eos, logits_file *lf,
                             const run_options *run,
                             const atlas_tokenizer *tokenizer) {
  uint32_t *out = calloc(steps ? steps : 1, sizeof(uint32_t));
  if (out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many steps");
  }
  atlas_generate_options go;
  atlas_generate_options_init(&go);
  go.max_new_tokens = steps;
  go.ignore_eos = ignore_eos;
  generation_ctx g = {.lf = lf};
  go.ctx = &g;
  if (lf != NULL && lf->f != NULL) go.on_logits = write_logits;
  if (run != NULL && run->stats) go.on_token = time_token;
  if (run != NULL) {
    go.temperature = (float)run->temperature;
    go.top_k = (int32_t)run->top_k;
    go.top_p = (float)run->top_p;
    go.min_p = (float)run->min_p;
    go.repetition_penalty = (float)run->repetition_penalty;
    go.seed = run->seed;
    go.stop_strings = run->stops;
    go.stop_count = run->stop_count;
  }
  if (tokenizer != NULL) {
    go.tokenizer = tokenizer;
    go.on_text = print_text;
  }
  size_t count = 0;
  g.start_ms = atlas_progress_now_ms();
  atlas_status s = atlas_generate(m, prompt, n, &go, out, &count);
  double end_ms = atlas_progress_now_ms();
  if (s == ATLAS_OK && tokenizer == NULL) {
    for (size_t i = 0; i < count; ++i) printf("%s%u", i ? "," : "", out[i]);
  }
  if (s == ATLAS_OK || tokenizer != NULL) printf("\n");
  if (s == ATLAS_OK && go.on_token != NULL) {
    fflush(stdout);
    print_stats(&g, n, end_ms);
  }
  free(out);
  return s;
}

// "DIR/NAME" into out (ATLAS_CLI_PATH_MAX bytes).
static atlas_status path_in(const char *dir, const char *name, char *out) {
  int n = snprintf(out, ATLAS_CLI_PATH_MAX, "%s/%s", dir, name);
  if (n < 0 || n >= ATLAS_CLI_PATH_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the path %s/%s is too long", dir, name);
  }
  return ATLAS_OK;
}

// --prompt / --prompt-file: DIR/tokenizer.json encodes the text (with the
// tokenizer's special tokens), or with --chat the text rendered as a user
// message (after --system's, if given) by DIR/tokenizer_config.json's chat
// template (the template writes them).
// The model's tokenizer.json, loaded before any prompt is read (a wrong
// --model fails before stdin is consumed).
static atlas_status load_tokenizer(const run_options *o,
                                   atlas_tokenizer **out_t) {
  char path[ATLAS_CLI_PATH_MAX];
  ATLAS_RETURN_IF_ERROR(path_in(o->model, "tokenizer.json", path));
  return atlas_tokenizer_load(path, out_t);
}

// Where the prompt text came from, for messages.
static const char *prompt_source(const run_options *o) {
  if (o->file_text == NULL) return "--prompt";
  return o->prompt_file[0] == '-' ? "stdin" : o->prompt_file;
}

static atlas_status encode_prompt(const run_options *o, atlas_tokenizer *t,
                                  uint32_t **out_ids, size_t *out_len) {
  if (!o->chat) {
    return atlas_status_annotate(
        atlas_tokenizer_encode(t, o->text, o->text_len, true, out_ids, out_len),
        "the prompt (%s)", prompt_source(o));
  }
  // A chat message is a C string: a NUL would cut it short unseen.
  const char *nul = memchr(o->text, '\0', o->text_len);
  if (nul != NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: a NUL byte at offset %zu; a chat message "
                             "is text without NUL bytes",
                             prompt_source(o), (size_t)(nul - o->text));
  }
  char path[ATLAS_CLI_PATH_MAX];
  ATLAS_RETURN_IF_ERROR(path_in(o->model, "tokenizer_config.json", path));
  atlas_chat_template *tmpl = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_chat_template_load(path, &tmpl));
  atlas_chat_message messages[2] = {{"system", o->system}, {"user", o->text}};
  bool system = o->system != NULL;
  char *text = NULL;
  atlas_status s =
      atlas_status_annotate(atlas_chat_template_apply(tmpl, messages + !system,
                                                      1 + system, true, &text),
                            "the chat prompt (%s%s)", prompt_source(o),
                            system ? " and --system" : "");
  atlas_chat_template_free(tmpl);
  if (s == ATLAS_OK) {
    s = atlas_tokenizer_encode(t, text, strlen(text), false, out_ids, out_len);
  }
  atlas_free(text);
  return s;
}

// Says which of a swap's outcomes happened, on stderr, first and in capitals
// when it failed (never a timing line for a swap that did not happen).
static atlas_status report_swap(atlas_status s, const atlas_swap_info *r,
                                const char *old_name, const char *new_name) {
  if (s == ATLAS_OK) {
    fprintf(stderr,
            "swap: now serving %s (%s path: teardown %.2f ms, load %.2f ms, "
            "total %.2f ms)\n",
            new_name, r->side_by_side ? "side-by-side" : "replace",
            r->teardown_ms, r->load_ms, r->total_ms);
    return ATLAS_OK;
  }
  switch (r->outcome) {
    case ATLAS_SWAP_OUTCOME_SWAPPED:
      return atlas_status_annotate(s,
                                   "swapped to %s, but tearing down %s "
                                   "reported an error",
                                   new_name, old_name);
    case ATLAS_SWAP_OUTCOME_RESTORED:
      fprintf(stderr,
              "swap: FAILED part-way; the old model %s was restored "
              "and is serving again\n",
              old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_REFUSED:
      if (r->needed_bytes == 0) {
        // Refused before the budget check: the new model could not be sized.
        fprintf(stderr,
                "swap: REFUSED before anything changed: the new model could "
                "not be read, or cannot take this prompt (reason below). The "
                "old model %s is still serving.\n",
                old_name);
        return s;
      }
      fprintf(stderr,
              "swap: REFUSED before anything changed: the new model needs "
              "%llu bytes; %llu bytes could be made available (%llu free + "
              "%llu held by the old model). The old model %s is still "
              "serving.\n",
              (unsigned long long)r->needed_bytes,
              (unsigned long long)r->free_bytes +
                  (unsigned long long)r->releasable_bytes,
              (unsigned long long)r->free_bytes,
              (unsigned long long)r->releasable_bytes, old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_KEPT:
      fprintf(stderr,
              "swap: FAILED loading the new model beside the old one; "
              "the old model %s was never unloaded and is still "
              "serving\n",
              old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_LOST:
    default:
      fprintf(stderr,
              "swap: FAILED, and the old model %s could not be "
              "restored; no model is loaded\n",
              old_name);
      return s;
  }
}

// What the close's sweep released after the device had refused to free it:
// not a leak (the status says which free was refused), but said, so that
// the bytes are accounted for.
static void print_refused(const atlas_close_report *td) {
  if (td->refused_allocations == 0) return;
  printf("released after a refused free: %llu bytes in %zu allocation%s\n",
         (unsigned long long)td->refused_bytes, td->refused_allocations,
         td->refused_allocations == 1 ? "" : "s");
}

// Closes the model and, for `swap`, says what the close found: the ordered
// teardown's count and the sweep's leaked bytes (nonzero is an error).
static atlas_status close_model(atlas_model *m, bool say) {
  if (m == NULL) return ATLAS_OK;
  atlas_close_report td;
  atlas_status s = atlas_close(m, &td);
  if (!say) return s;
  printf("teardown: %zu resources released in reverse order, %zu failed\n",
         td.released, td.failed);
  printf("leaked: %llu bytes\n", (unsigned long long)td.leaked_bytes);
  print_refused(&td);
  if (td.leaked_allocations > 0) {
    s = atlas_status_join(
        s, atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "the sweep found %zu unreleased allocations "
                             "(%llu bytes)",
                             td.leaked_allocations,
                             (unsigned long long)td.leaked_bytes));
  }
  return s;
}

// The swap and what follows it: the model serving afterwards (the new one,
// or the old one when the swap was refused, kept it or restored it)
// generates again, so its ids and logits show what is serving. Returns the
// swap's own error in *out_swap_error; the status is everything else.
static atlas_status swap_and_rerun(atlas_model **m, run_options *o,
                                   const atlas_open_options *oo,
                                   logits_file *lf,
                                   atlas_status *out_swap_error) {
  *out_swap_error = ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(print_report(*m, 10, 0.0));
  atlas_progress progress;
  atlas_progress_init(&progress, "swapping");
  atlas_open_options next = *oo;
  next.progress_ctx = &progress;
  // The budget is the swap's: the first model opens without it.
  next.device_budget_bytes = (uint64_t)(o->budget_mb * 1e6 + 0.5);
  atlas_swap_info r;
  atlas_testing_fault fault = ATLAS_TESTING_FAULT_NONE;
  if (o->fail_alloc > 0) {
    fault = o->fail_restore ? ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE
                            : ATLAS_TESTING_FAULT_ALLOC;
  }
  atlas_status swapped =
      atlas_testing_swap(m, o->to, &next, fault, (uint64_t)o->fail_alloc, &r);
  atlas_progress_finish(&progress);
  *out_swap_error = report_swap(swapped, &r, o->model, o->to);
  if (*m == NULL) return ATLAS_OK;  // lost: nothing serves
  ATLAS_RETURN_IF_ERROR(generate(*m, o->prompt, o->prompt_len, (size_t)o->steps,
                                 o->ignore_eos, lf, NULL, NULL));
  return print_report(*m, 10, 0.0);
}

// `atlas run` (swap false) and `atlas swap`.
//
// --logits goes to a temporary file opened before anything loads (a path
// that cannot be written fails first) and is renamed into place only when
// every generation the command ran completed; otherwise it is removed. A
// swap that failed with the old model still serving is such a case: the
// old model generates again and the file holds its logits twice, which is
// how tools/fuzz/fault_sweep.sh proves the old model serves bit for bit. A swap
// that left no model is not: only the first generation ran. Under
// `swap`, ATLAS_FAULT applies to the swap only: the first model loads
// without it (atlas_testing_open_unfaulted).
static atlas_status run_or_swap(run_options *o, bool swap) {
  atlas_cli_output out;
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_open(
      "--logits", o->logits[0] != '\0' ? o->logits : NULL, &out));
  atlas_status s = atlas_cli_output_check_input(&out, "--model", o->model);
  if (s == ATLAS_OK && swap)
    s = atlas_cli_output_check_input(&out, "--to", o->to);
  if (s == ATLAS_OK) {
    s = atlas_cli_output_check_input(&out, "--prompt-file", o->prompt_file);
  }
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(&out);
    return s;
  }
  atlas_tokenizer *tokenizer = NULL;
  if (o->prompt_file[0] != '\0' || o->text != NULL) {
    s = load_tokenizer(o, &tokenizer);
  }
  if (s == ATLAS_OK && o->prompt_file[0] != '\0') {
    s = atlas_cli_read_all(o->prompt_file, kMaxPromptFileBytes, &o->file_text,
                           &o->text_len);
    o->text = o->file_text;
  }
  if (s == ATLAS_OK && o->text != NULL) {
    s = encode_prompt(o, tokenizer, &o->prompt, &o->prompt_len);
    if (s == ATLAS_OK && o->prompt_len == 0) {
      s = atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT, "%s encodes to no tokens",
          o->file_text != NULL ? "--prompt-file" : "--prompt");
    }
    if (s == ATLAS_OK && o->max_seq != 0 &&
        o->max_seq < positions_needed(o->prompt_len, o->steps)) {
      s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                            "--max-seq %ld is less than the %ld positions the "
                            "prompt's %zu tokens and --steps %ld need",
                            o->max_seq,
                            positions_needed(o->prompt_len, o->steps),
                            o->prompt_len, o->steps);
    }
  }
  int64_t max_seq = o->max_seq;
  if (max_seq == 0) max_seq = (int64_t)o->prompt_len + o->steps;
  if (max_seq == 0) max_seq = 1;
  logits_file lf = {out.f, o->logits};
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_open_options oo;
  open_options_for(o->backend, max_seq, &progress, &oo);
  oo.kv_cache_type = o->kv_dtype;
  // --steps against the model's context, checked while opening, before
  // anything is allocated: forward steps are every prompt token and every
  // generated token but the last.
  oo.context_needed = positions_needed(o->prompt_len, o->steps);
  // The prompt's ids against the vocabulary, checked the same way: a swap
  // to a model that cannot read this prompt is refused while the old model
  // still serves, instead of swapping and then failing.
  for (size_t i = 0; o->prompt != NULL && i < o->prompt_len; ++i) {
    if ((int64_t)o->prompt[i] >= oo.vocab_needed) {
      oo.vocab_needed = (int64_t)o->prompt[i] + 1;
    }
  }
  atlas_model *m = NULL;
  if (s == ATLAS_OK) {
    s = swap ? atlas_testing_open_unfaulted(o->model, &oo, &m)
             : atlas_open(o->model, &oo, &m);
  }
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK) {
    s = generate(m, o->prompt, o->prompt_len, (size_t)o->steps, o->ignore_eos,
                 &lf, o, tokenizer);
  }
  atlas_status swap_error = ATLAS_OK;
  if (s == ATLAS_OK && swap) {
    s = swap_and_rerun(&m, o, &oo, &lf, &swap_error);
  }
  // A swap that left no model ran one generation of the two: its file
  // would hold the first model's rows alone and look whole. It goes.
  bool whole = swap_error == ATLAS_OK || m != NULL;
  atlas_tokenizer_free(tokenizer);
  s = atlas_status_join(s, close_model(m, swap));
  if (s == ATLAS_OK && whole) {
    s = atlas_cli_output_commit(&out);
  } else {
    atlas_cli_output_abort(&out);
  }
  // The swap's own failure first: it says which model served.
  return atlas_status_join(swap_error, s);
}

// One report format into an output opened before the load.
static atlas_status write_report_file(const atlas_model *m,
                                      atlas_report_format format,
                                      const report_options *o,
                                      atlas_cli_output *out) {
  atlas_report_options ro;
  atlas_report_options_init(&ro);
  ro.top = (size_t)o->top;
  ro.min_mb = o->min_mb;
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_report(m, format, &ro, &text));
  size_t len = strlen(text);
  bool ok = fwrite(text, 1, len, out->f) == len;
  int err = errno;  // before atlas_free, which may change it
  atlas_free(text);
  if (!ok) {
    char reason[ATLAS_CLI_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", out->path,
                             atlas_cli_strerror(err, reason, sizeof(reason)));
  }
  return ATLAS_OK;
}

// `atlas report`. --json and --svg are opened (as temporary files) before the
// load, so a path that cannot be written fails first, and renamed into place
// only when the whole report succeeded; on failure neither file appears.
static atlas_status report(const report_options *o) {
  atlas_cli_output json, svg;
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_open(
      "--json", o->json[0] != '\0' ? o->json : NULL, &json));
  atlas_status s =
      atlas_cli_output_open("--svg", o->svg[0] != '\0' ? o->svg : NULL, &svg);
  if (s == ATLAS_OK) s = atlas_cli_output_check_pair(&json, &svg);
  if (s == ATLAS_OK)
    s = atlas_cli_output_check_input(&json, "--model", o->model);
  if (s == ATLAS_OK)
    s = atlas_cli_output_check_input(&svg, "--model", o->model);
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(&json);
    atlas_cli_output_abort(&svg);
    return s;
  }
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_open_options oo;
  open_options_for(o->backend, o->max_seq, &progress, &oo);
  atlas_model *m = NULL;
  s = atlas_open(o->model, &oo, &m);
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK && o->kv_budget_mb > 0) {
    atlas_kv_options ko;
    atlas_kv_options_init(&ko);
    ko.budget_bytes = (uint64_t)(o->kv_budget_mb * 1e6);
    s = atlas_kv_open(m, &ko);
  }
  // The JSON and the SVG come from the same rows as the text (--top,
  // --min-mb).
  if (s == ATLAS_OK) s = print_report(m, (size_t)o->top, o->min_mb);
  if (s == ATLAS_OK && json.f != NULL) {
    s = write_report_file(m, ATLAS_REPORT_JSON, o, &json);
  }
  if (s == ATLAS_OK && svg.f != NULL) {
    s = write_report_file(m, ATLAS_REPORT_SVG, o, &svg);
  }
  s = atlas_status_join(s, atlas_close(m, NULL));
  // Both written out before either is renamed: they appear together.
  if (s == ATLAS_OK) s = atlas_cli_output_close(&json);
  if (s == ATLAS_OK) s = atlas_cli_output_close(&svg);
  if (s == ATLAS_OK) s = atlas_cli_output_commit(&json);
  if (s == ATLAS_OK) s = atlas_cli_output_commit(&svg);
  atlas_cli_output_abort(&json);  // no-ops after a commit
  atlas_cli_output_abort(&svg);
  if (s == ATLAS_OK && o->json[0] != '\0') {
    printf("wrote the JSON report to %s\n", o->json);
  }
  if (s == ATLAS_OK && o->svg[0] != '\0') {
    printf("wrote the SVG chart to %s\n", o->svg);
  }
  return s;
}

static atlas_status print_model_line(const atlas_model *m) {
  atlas_model_info info = {.struct_size = sizeof(info)};
  ATLAS_RETURN_IF_ERROR(atlas_model_info_get(m, &info));
  printf("model %s on %s\n", info.name, info.backend);
  return ATLAS_OK;
}

// The README's main job: load an embedded model, generate, swap to the
// second embedded model in the same process, generate, tear down, report.
static atlas_status demo(const demo_options *o) {
  const atlas_demo_model *a = atlas_demo_model_find("tiny-a");
  const atlas_demo_model *b = atlas_demo_model_find("tiny-b");
  if (a == NULL || b == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_NOT_FOUND,
        "the embedded demo models are missing from this build");
  }
  atlas_open_options oo;
  atlas_open_options_init(&oo);
  oo.backend = o->backend;
  oo.max_seq = 64;
  const uint32_t prompt[] = {1, 2, 3};
  const size_t steps = 8;

  printf(
      "demo: two tiny Llama models built into this binary, tiny-a and "
      "tiny-b, with RANDOM weights:\n"
      "their token ids are not text, and repeated ids are expected, not a "
      "bug.\nprompt 1,2,3; %zu tokens each, greedy.\n\n",
      steps);
  atlas_model *m = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_open_memory(a->name, a->config_json,
                                          a->config_bytes, a->weights,
                                          a->weights_bytes, &oo, &m));
  atlas_status s = print_model_line(m);
  if (s == ATLAS_OK) {
    printf("generated: ");
    s = generate(m, prompt, 3, steps, false, NULL, NULL, NULL);
  }
  if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  if (s == ATLAS_OK) {
    atlas_swap_info r;
    s = atlas_swap_memory(&m, b->name, b->config_json, b->config_bytes,
                          b->weights, b->weights_bytes, &oo, &r);
    if (s == ATLAS_OK) {
      atlas_model_info info = {.struct_size = sizeof(info)};
      s = atlas_model_info_get(m, &info);
      if (s == ATLAS_OK) {
        printf(
            "\nswapped to %s in %.2f ms (%s; teardown %.2f ms, load %.2f "
            "ms)\n",
            info.name, r.total_ms, r.side_by_side ? "side by side" : "replace",
            r.teardown_ms, r.load_ms);
        printf("generated: ");
        s = generate(m, prompt, 3, steps, false, NULL, NULL, NULL);
      }
    } else {
      s = report_swap(s, &r, a->name, b->name);
    }
  }
  if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  if (m == NULL) return s;
  atlas_close_report td;
  atlas_status closed = atlas_close(m, &td);
  if (closed == ATLAS_OK) {
    printf("\nteardown: %zu resources released in reverse order, %zu failed\n",
           td.released, td.failed);
    printf("leaked: %llu bytes\n", (unsigned long long)td.leaked_bytes);
    print_refused(&td);
    if (td.leaked_allocations > 0 && s == ATLAS_OK) {
      s = atlas_status_make(ATLAS_STATUS_INTERNAL,
                            "the sweep found %zu unreleased allocations "
                            "(%llu bytes)",
                            td.leaked_allocations,
                            (unsigned long long)td.leaked_bytes);
    }
  }
  return atlas_status_join(s, closed);
}

// ---- tokenize and detokenize ----------------------------------------------------

typedef struct text_options {
  char tokenizer[ATLAS_CLI_PATH_MAX];
  bool special;   // tokenize: --add-special; detokenize: --skip-special
  uint32_t *ids;  // detokenize; owned
  size_t id_count;
} text_options;

enum { TOK_TOKENIZER, TOK_SPECIAL, TOK_OPTION_COUNT };
enum { DETOK_TOKENIZER, DETOK_IDS, DETOK_SPECIAL, DETOK_OPTION_COUNT };

static const atlas_cli_option kTokenizeOptions[] = {
    [TOK_TOKENIZER] = {"tokenizer", "FILE", true, NULL,
                       "a Hugging Face tokenizer.json"},
    [TOK_SPECIAL] = {"add-special", NULL, false, "off",
                     "add the tokenizer's special tokens (BOS, ...) as its "
                     "post-processor says"},
};

static const atlas_cli_command kTokenizeCommand = {
    "atlas tokenize",
    "--tokenizer FILE [options] < TEXT",
    "Reads UTF-8 text on stdin (every byte, a final newline included) and\n"
    "prints its token ids, comma-separated, on one line.",
    kTokenizeOptions,
    TOK_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static const atlas_cli_option kDetokenizeOptions[] = {
    [DETOK_TOKENIZER] = {"tokenizer", "FILE", true, NULL,
                         "a Hugging Face tokenizer.json"},
    [DETOK_IDS] = {"ids", "IDS", true, NULL,
                   "token ids, comma-separated, e.g. 1,2,3"},
    [DETOK_SPECIAL] = {"skip-special", NULL, false, "off",
                       "leave out special tokens (BOS, EOS, ...)"},
};

static const atlas_cli_command kDetokenizeCommand = {
    "atlas detokenize",
    "--tokenizer FILE --ids IDS [options]",
    "Prints the text of the token ids, followed by a newline.",
    kDetokenizeOptions,
    DETOK_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_tokenize(void *opts, size_t index, const char *value) {
  text_options *o = opts;
  if (index == TOK_TOKENIZER) {
    return atlas_cli_resolve_path("--tokenizer", value, o->tokenizer);
  }
  o->special = true;
  return ATLAS_OK;
}

static atlas_status set_detokenize(void *opts, size_t index,
                                   const char *value) {
  text_options *o = opts;
  switch (index) {
    case DETOK_TOKENIZER:
      return atlas_cli_resolve_path("--tokenizer", value, o->tokenizer);
    case DETOK_IDS:
      free(o->ids);
      return parse_ids("--ids", value, &o->ids, &o->id_count);
    default:
      o->special = true;
      return ATLAS_OK;
  }
}

static atlas_status tokenize(const text_options *o) {
  // The tokenizer first: a wrong --tokenizer fails before stdin is read.
  atlas_tokenizer *t = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_tokenizer_load(o->tokenizer, &t));
  char *text = NULL;
  size_t len = 0;
  atlas_status s = atlas_cli_read_all("-", SIZE_MAX, &text, &len);
  uint32_t *ids = NULL;
  size_t count = 0;
  if (s == ATLAS_OK) {
    s = atlas_status_annotate(
        atlas_tokenizer_encode(t, text, len, o->special, &ids, &count),
        "stdin");
  }
  if (s == ATLAS_OK) {
    for (size_t i = 0; i < count; ++i) printf("%s%u", i ? "," : "", ids[i]);
    printf("\n");
  }
  atlas_free(ids);
  atlas_tokenizer_free(t);
  free(text);
  return s;
}

static atlas_status detokenize(const text_options *o) {
  atlas_tokenizer *t = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_tokenizer_load(o->tokenizer, &t));
  char *text = NULL;
  size_t len = 0;
  atlas_status s =
      atlas_tokenizer_decode(t, o->ids, o->id_count, o->special, &text, &len);
  if (s == ATLAS_OK) {
    fwrite(text, 1, len, stdout);
    fputc('\n', stdout);
  }
  atlas_free(text);
  atlas_tokenizer_free(t);
  return s;
}

// ---- dispatch ----------------------------------------------------------------------

static int finish(const char *program, atlas_status s) {
  if (s == ATLAS_OK) return ATLAS_CLI_EXIT_OK;
  fprintf(stderr, "%s: %s\n", program, atlas_status_message(s));
  atlas_status_free(s);
  return ATLAS_CLI_EXIT_FAILURE;
}

static int parsed_exit(atlas_cli_parse_result r) {
  return r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
}

static int main_demo(int argc, char **argv) {
  demo_options o = {"host"};
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(&kDemoCommand, argc, argv, set_demo, &o, &next);
  if (r != ATLAS_CLI_PARSED) return parsed_exit(r);
  return finish(kDemoCommand.program, demo(&o));
}

static int main_run(int argc, char **argv, bool swap) {
  const atlas_cli_command *c = swap ? &kSwapCommand : &kRunCommand;
  run_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return finish(c->program,
                  atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  o->backend = "auto";
  o->top_p = 1.0;
  o->repetition_penalty = 1.0;
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(c, argc, argv, swap ? set_swap : set_run, o, &next);
  int rc;
  if (r != ATLAS_CLI_PARSED) {
    rc = parsed_exit(r);
  } else if (!swap && (o->prompt != NULL) + (o->text != NULL) +
                              (o->prompt_file[0] != '\0') !=
                          1) {
    rc = atlas_cli_usage_error(
        c->program, o->prompt == NULL && o->text == NULL
                        ? "--tokens IDS is required (or --prompt TEXT, or "
                          "--prompt-file FILE)"
                        : "give one of --tokens, --prompt, --prompt-file");
  } else if (o->prompt != NULL && (o->chat || o->stop_count > 0)) {
    rc = atlas_cli_usage_error(c->program, "%s needs --prompt or --prompt-file",
                               o->chat ? "--chat" : "--stop");
  } else if (o->system != NULL && !o->chat) {
    rc = atlas_cli_usage_error(c->program, "--system needs --chat");
  } else if (o->fail_restore && o->fail_alloc == 0) {
    rc = atlas_cli_usage_error(c->program,
                               "--fail-restore needs --fail-alloc N");
  } else if (o->max_seq != 0 &&
             o->max_seq < positions_needed(o->prompt_len, o->steps)) {
    // (Not "prompt length + steps - 1": --steps 0 needs the prompt's.)
    rc = atlas_cli_usage_error(c->program,
                               "--max-seq %ld is less than the %ld positions "
                               "the prompt's %zu tokens and --steps %ld need",
                               o->max_seq,
                               positions_needed(o->prompt_len, o->steps),
                               o->prompt_len, o->steps);
  } else {
    rc = finish(c->program, run_or_swap(o, swap));
  }
  free(o->prompt);
  free(o->file_text);
  free(o);
  return rc;
}

static int main_report(int argc, char **argv) {
  report_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return finish(kReportCommand.program,
                  atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  o->backend = "auto";
  o->top = 10;
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(&kReportCommand, argc, argv, set_report, o, &next);
  int rc = r != ATLAS_CLI_PARSED ? parsed_exit(r)
                                 : finish(kReportCommand.program, report(o));
  free(o);
  return rc;
}

static int main_text(int argc, char **argv, bool encode) {
  const atlas_cli_command *c = encode ? &kTokenizeCommand : &kDetokenizeCommand;
  text_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return finish(c->program,
                  atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  int next = 0;
  atlas_cli_parse_result r = atlas_cli_parse(
      c, argc, argv, encode ? set_tokenize : set_detokenize, o, &next);
  int rc = r != ATLAS_CLI_PARSED
               ? parsed_exit(r)
               : finish(c->program, encode ? tokenize(o) : detokenize(o));
  free(o->ids);
  free(o);
  return rc;
}

typedef struct command_entry {
  const char *name;
  const atlas_cli_command *command;
  const char *summary;
} command_entry;

static const command_entry kCommands[] = {
    {"demo", &kDemoCommand,
     "load a built-in model, generate, hot-swap, tear down"},
    {"run", &kRunCommand, "load a checkpoint and generate token ids or text"},
    {"report", &kReportCommand,
     "a checkpoint's live memory by call site (text, JSON, SVG)"},
    {"swap", &kSwapCommand, "run one checkpoint, hot-swap to another, run it"},
    {"tokenize", &kTokenizeCommand, "text on stdin -> token ids"},
    {"detokenize", &kDetokenizeCommand, "token ids -> text"},
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
  if (strcmp(first, "demo") == 0) return main_demo(argc - 1, argv + 1);
  if (strcmp(first, "run") == 0) return main_run(argc - 1, argv + 1, false);
  if (strcmp(first, "swap") == 0) return main_run(argc - 1, argv + 1, true);
  if (strcmp(first, "report") == 0) return main_report(argc - 1, argv + 1);
  if (strcmp(first, "tokenize") == 0)
    return main_text(argc - 1, argv + 1, true);
  if (strcmp(first, "detokenize") == 0) {
    return main_text(argc - 1, argv + 1, false);
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

int main(int argc, char **argv) {
  atlas_cli_keep_standard_fds();
  return atlas_cli_finish_stdout("atlas", run_command(argc, argv));
}
