// atlas run and atlas swap: their option tables and how each value is read.
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "atlas/tools/atlas/cli_common.h"
#include "atlas/tools/atlas/cli_limits.h"
#include "atlas/tools/atlas/cmd_run.h"

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
  RUN_TENSOR_PARALLEL,
  RUN_DEVICES,
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
  RUN_STATS,
  RUN_LIMITS,  // ATLAS_CLI_LIMIT_COUNT options from here (cli_limits.h)
};
#define RUN_ONLY(option) (RUN_OPTION_COUNT + (option)-RUN_PROMPT)

// The shared options that read the same in run's table and swap's.
#define MAX_SEQ_OPTION                                     \
  {                                                        \
    "max-seq", "N", false, "prompt length + steps",        \
        "positions the KV cache and scratch are sized for" \
  }
#define IGNORE_EOS_OPTION                          \
  {                                                \
    "ignore-eos", NULL, false, "off",              \
        "keep generating past the model's EOS ids" \
  }
#define KV_DTYPE_OPTION                                                     \
  {                                                                         \
    "kv-dtype", "TYPE", false, "auto",                                      \
        "the KV cache's element type: auto (the weights' type for f16 and " \
        "bf16 "                                                             \
        "models, else f32), f32 (the faithful mode: f32 activations "       \
        "throughout), f16 or bf16 (half the cache memory; the fast mode)"   \
  }

// A swap keeps the split: both models are split over the same devices.
#define TENSOR_PARALLEL_OPTION                                             \
  {                                                                        \
    "tensor-parallel", "N", false, "1",                                    \
        "split the model over N devices (docs/PARALLELISM.md): --backend " \
        "host simulates them in one process, --backend cuda needs NCCL "   \
        "(libnccl.so.2); N must divide the heads, KV heads, intermediate " \
        "size and vocabulary"                                              \
  }
#define DEVICES_OPTION                                                    \
  {                                                                       \
    "devices", "LIST", false, "0,1,...",                                  \
        "with --tensor-parallel N: the N CUDA devices, comma-separated, " \
        "e.g. 0,1"                                                        \
  }

static const atlas_cli_option kRunOptions[] = {
    [RUN_MODEL] = {"model", "DIR", true, NULL,
                   "checkpoint folder: config.json + model.safetensors (or "
                   "model.safetensors.index.json and its shards), or a "
                   "llama.cpp GGUF file (FILE.gguf: weights, tokenizer and "
                   "chat template in one)"},
    [RUN_TOKENS] = {"tokens", "IDS", false, "none: --prompt",
                    "prompt token ids, comma-separated, e.g. 1,2,3; prints "
                    "the generated ids"},
    [RUN_STEPS] = {"steps", "N", true, NULL,
                   "tokens to generate (0 runs the prompt only); the prompt "
                   "and N - 1 must fit the model's context "
                   "(max_position_embeddings), checked before the load"},
    [RUN_BACKEND] = {"backend", "KIND", false, "auto", atlas_cli_backend_help},
    [RUN_MAX_SEQ] = MAX_SEQ_OPTION,
    [RUN_LOGITS] =
        {"logits", "FILE", false, "none",
         "write every step's logits: little-endian float32, one "
         "row of vocab per forward step: len(tokens) + generated - 1 "
         "(fewer than steps when EOS stops early; len(tokens) for "
         "--steps 0); written to a "
         "temporary name opened before the load, renamed on "
         "success, removed on failure"},
    [RUN_IGNORE_EOS] = IGNORE_EOS_OPTION,
    [RUN_KV_DTYPE] = KV_DTYPE_OPTION,
    [RUN_TENSOR_PARALLEL] = TENSOR_PARALLEL_OPTION,
    [RUN_DEVICES] = DEVICES_OPTION,
    // run only (after swap's own options in atlas_cli_set_run's numbering)
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
    ATLAS_CLI_TEXT_LIMIT_OPTIONS(RUN_ONLY(RUN_LIMITS)),
    ATLAS_CLI_CHAT_LIMIT_OPTIONS(RUN_ONLY(RUN_LIMITS) +
                                 ATLAS_CLI_TOKENIZER_LIMIT_COUNT),
};

const atlas_cli_command atlas_cli_run_command = {
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
    [RUN_BACKEND] = {"backend", "KIND", false, "auto", atlas_cli_backend_help},
    [RUN_MAX_SEQ] = MAX_SEQ_OPTION,
    [RUN_LOGITS] = {"logits", "FILE", false, "none",
                    "write every step's logits, float32: the first model's, "
                    "then those of the model serving after the swap (the "
                    "old one again when the swap failed); renamed into "
                    "place only when both generations completed: a swap "
                    "that leaves no model writes no file (an existing one "
                    "stays as it was)"},
    [RUN_IGNORE_EOS] = IGNORE_EOS_OPTION,
    [RUN_KV_DTYPE] = KV_DTYPE_OPTION,
    [RUN_TENSOR_PARALLEL] = TENSOR_PARALLEL_OPTION,
    [RUN_DEVICES] = DEVICES_OPTION,
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

const atlas_cli_command atlas_cli_swap_command = {
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
      return atlas_cli_parse_ids(flag, value, &o->prompt, &o->prompt_len);
    case RUN_STEPS:
      return atlas_cli_parse_long(flag, value, 0, ATLAS_CLI_MAX_STEPS,
                                  &o->steps);
    case RUN_MAX_SEQ:
      return atlas_cli_parse_long(flag, value, 1, ATLAS_CLI_MAX_SEQ,
                                  &o->max_seq);
    case RUN_BACKEND:
      return atlas_cli_parse_backend(value, &o->backend);
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
    case RUN_TENSOR_PARALLEL:
      return atlas_cli_parse_long(flag, value, 1, 64, &o->tensor_parallel);
    case RUN_DEVICES:
      return atlas_cli_parse_devices(flag, value, o->devices, &o->device_count);
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
      if (index >= RUN_LIMITS && index < RUN_LIMITS + ATLAS_CLI_LIMIT_COUNT) {
        return atlas_cli_limits_set(&o->limits, index - RUN_LIMITS, name,
                                    value);
      }
      return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                               flag);
  }
}

atlas_status atlas_cli_set_swap(void *opts, size_t index, const char *value) {
  return set_run_swap(opts, index, kSwapOptions[index].name, value);
}

// kRunOptions: swap's numbering, run's own options after swap's.
atlas_status atlas_cli_set_run(void *opts, size_t index, const char *value) {
  size_t i =
      index < RUN_OPTION_COUNT ? index : index - RUN_OPTION_COUNT + RUN_PROMPT;
  return set_run_swap(opts, i, kRunOptions[index].name, value);
}
