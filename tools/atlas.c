// The atlas command line.
//
//   atlas demo [--backend B]
//   atlas run --model DIR --tokens 1,2,3 --steps N [options]
//   atlas report --model DIR [options]
//   atlas swap --model DIR --to DIR2 --tokens 1,2 --steps N [options]
//   atlas help [CMD] | atlas --help | atlas CMD --help | atlas --version
//
// Each command parses its options with getopt_long (tools/cli_options.h) into
// its own options struct, then a function does the work with that struct.
// Exit status: 0 done; 1 the work failed (message on stderr); 2 usage error.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/ledger_report.h"
#include "atlas/runtime/model/swap.h"
#include "atlas/runtime/version.h"
#include "atlas/tools/cli_files.h"
#include "atlas/tools/cli_options.h"
#include "atlas/tools/make_checkpoint_demo_models.h"
#include "atlas/runtime/api/memory_json.h"
#include "atlas/runtime/api/memory_svg.h"
#include "atlas/tools/progress.h"

// ---- shared option values ----------------------------------------------------

static const char kBackendHelp[] =
    "host, cuda, or auto (cuda when a GPU is usable, else host)";

static atlas_status parse_backend(const char *value, const char **out) {
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(value));
  *out = value;
  return ATLAS_OK;
}

// "1,2,3" -> token ids (the caller frees *out).
static atlas_status parse_tokens(const char *text, uint32_t **out, size_t *n) {
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
    if (end == p || errno != 0 || v > UINT32_MAX || *p == '-' ||
        (*end != ',' && *end != '\0')) {
      free(ids);
      *n = 0;
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "--tokens wants comma-separated ids, not '%s'",
                               text);
    }
    ids[(*n)++] = (uint32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (*n == 0) {
    free(ids);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "--tokens needs at least one id");
  }
  *out = ids;
  return ATLAS_OK;
}

// ---- per-command options ------------------------------------------------------

typedef struct demo_options {
  const char *backend;
} demo_options;

typedef struct run_options {
  char model[ATLAS_CLI_PATH_MAX];
  char to[ATLAS_CLI_PATH_MAX];      // swap only
  char logits[ATLAS_CLI_PATH_MAX];  // "" when not asked for
  const char *backend;
  uint32_t *prompt;                 // owned
  size_t prompt_len;
  long steps;
  long max_seq;                     // 0: prompt + steps
  double budget_mb;                 // swap only; 0: the whole device
  long fail_alloc;                  // swap only; testing
  bool ignore_eos;
} run_options;

typedef struct report_options {
  char model[ATLAS_CLI_PATH_MAX];
  char json[ATLAS_CLI_PATH_MAX];
  char svg[ATLAS_CLI_PATH_MAX];
  const char *backend;
  long top;
  double min_mb;
  long max_seq;  // 0: the runtime's default (the model's context, <= 2048)
} report_options;

enum { kMaxSteps = 1 << 20, kMaxSeq = 1 << 24 };

// ---- demo ----------------------------------------------------------------------

static const atlas_cli_option kDemoOptions[] = {
    {"backend", "KIND", false, "host", kBackendHelp},
};

static const atlas_cli_command kDemoCommand = {
    "atlas demo", "[options]",
    "Loads tiny-a, a Llama model built into this binary, generates 8 tokens\n"
    "after the prompt 1,2,3, hot-swaps to tiny-b in the same process,\n"
    "generates again, tears everything down and reports what leaked (nothing).\n"
    "Both models have random weights: the token ids are not text, and a\n"
    "random model often repeats an id; that is expected.",
    kDemoOptions, sizeof(kDemoOptions) / sizeof(kDemoOptions[0]), 0, ATLAS_VERSION_STRING};

static atlas_status set_demo(void *opts, size_t index, const char *value) {
  demo_options *o = opts;
  (void)index;  // only --backend
  return parse_backend(value, &o->backend);
}

// ---- run and swap ---------------------------------------------------------------

enum {
  RUN_MODEL, RUN_TOKENS, RUN_STEPS, RUN_BACKEND, RUN_MAX_SEQ, RUN_LOGITS,
  RUN_IGNORE_EOS, RUN_OPTION_COUNT
};

static const atlas_cli_option kRunOptions[] = {
    [RUN_MODEL] = {"model", "DIR", true, NULL,
                   "checkpoint folder: config.json + model.safetensors (or "
                   "model.safetensors.index.json and its shards)"},
    [RUN_TOKENS] = {"tokens", "IDS", true, NULL,
                    "prompt token ids, comma-separated, e.g. 1,2,3"},
    [RUN_STEPS] = {"steps", "N", true, NULL,
                   "tokens to generate greedily (0 runs the prompt only)"},
    [RUN_BACKEND] = {"backend", "KIND", false, "auto", kBackendHelp},
    [RUN_MAX_SEQ] = {"max-seq", "N", false,
                     "prompt length + steps",
                     "positions the KV cache and scratch are sized for"},
    [RUN_LOGITS] = {"logits", "FILE", false, "none",
                    "write every step's logits: little-endian float32, one "
                    "row of vocab per forward step: len(tokens) + generated - 1 "
                    "(fewer than steps when EOS stops early)"},
    [RUN_IGNORE_EOS] = {"ignore-eos", NULL, false, "off",
                        "keep generating past the model's EOS ids"},
};

static const atlas_cli_command kRunCommand = {
    "atlas run", "--model DIR --tokens IDS --steps N [options]",
    "Loads the checkpoint in DIR, runs the prompt, generates N tokens greedily\n"
    "and prints their ids on one line.",
    kRunOptions, RUN_OPTION_COUNT, 0, ATLAS_VERSION_STRING};

enum {
  SWAP_BUDGET_MB = RUN_OPTION_COUNT, SWAP_TO, SWAP_FAIL_ALLOC,
  SWAP_OPTION_COUNT
};

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
                    "write every step's logits of both models, float32"},
    [RUN_IGNORE_EOS] = {"ignore-eos", NULL, false, "off",
                        "keep generating past the model's EOS ids"},
    [SWAP_BUDGET_MB] = {"budget-mb", "MB", false, "0 (the whole device)",
                        "most device memory the models may hold, in MB "
                        "(1e6 bytes); the swap is refused up front when the "
                        "new model cannot fit"},
    [SWAP_TO] = {"to", "DIR2", true, NULL,
                 "the checkpoint folder to swap to"},
    [SWAP_FAIL_ALLOC] = {"fail-alloc", "N", false, "0 (none)",
                         "testing: make the N-th allocation of the new model "
                         "fail, to see the old model restored"},
};

static const atlas_cli_command kSwapCommand = {
    "atlas swap", "--model DIR --to DIR2 --tokens IDS --steps N [options]",
    "Loads DIR, generates, prints its memory report, hot-swaps to DIR2 in the\n"
    "same process, generates and reports again. A swap either succeeds, is\n"
    "refused before anything changed (the old model keeps serving), or fails\n"
    "part-way and restores the old model; the last two exit 1.",
    kSwapOptions, SWAP_OPTION_COUNT, 0, ATLAS_VERSION_STRING};

static atlas_status set_run(void *opts, size_t index, const char *value) {
  run_options *o = opts;
  const char *name = kSwapOptions[index].name;
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
      return parse_tokens(value, &o->prompt, &o->prompt_len);
    case RUN_STEPS:
      return atlas_cli_parse_long(flag, value, 0, kMaxSteps, &o->steps);
    case RUN_MAX_SEQ:
      return atlas_cli_parse_long(flag, value, 1, kMaxSeq, &o->max_seq);
    case RUN_BACKEND:
      return parse_backend(value, &o->backend);
    case RUN_IGNORE_EOS:
      o->ignore_eos = true;
      return ATLAS_OK;
    case SWAP_BUDGET_MB:
      return atlas_cli_parse_double(flag, value, 0.0, &o->budget_mb);
    case SWAP_FAIL_ALLOC:
      return atlas_cli_parse_long(flag, value, 0, 1L << 30, &o->fail_alloc);
    default:
      return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                               flag);
  }
}

// ---- report --------------------------------------------------------------------

enum {
  REPORT_MODEL, REPORT_BACKEND, REPORT_MAX_SEQ, REPORT_TOP, REPORT_MIN_MB,
  REPORT_JSON, REPORT_SVG, REPORT_OPTION_COUNT
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
};

static const atlas_cli_command kReportCommand = {
    "atlas report", "--model DIR [options]",
    "Loads the checkpoint in DIR and prints the live memory by call site:\n"
    "weights, KV cache and scratch, biggest first.",
    kReportOptions, REPORT_OPTION_COUNT, 0, ATLAS_VERSION_STRING};

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

static atlas_status write_logits(void *ctx, const float *logits, size_t n) {
  logits_file *lf = ctx;
  if (lf->f == NULL) return ATLAS_OK;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "--logits writes the host's floats as little-endian; port this first"
#endif
  if (fwrite(logits, sizeof(float), n, lf->f) != n) {
    return atlas_status_make(ATLAS_STATUS_IO, "writing logits to %s: %s",
                             lf->path, strerror(errno));
  }
  return ATLAS_OK;
}

static void spec_for(const char *backend, const char *dir,
                     int64_t max_seq, atlas_progress *progress,
                     atlas_model_spec *out) {
  memset(out, 0, sizeof(*out));
  out->dir = dir;
  out->backend = backend;
  out->max_seq = max_seq;
  out->progress = atlas_progress_update;
  out->progress_ctx = progress;
}

static atlas_status print_report(atlas_model *m, size_t top, double min_mb) {
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_alloc_report(atlas_model_backend(m), top, min_mb, &text));
  printf("memory report (%s on %s, KV cache for %lld positions):\n%s",
         atlas_model_name(m), atlas_backend_name(atlas_model_backend(m)),
         (long long)atlas_model_max_seq(m), text);
  free(text);
  return ATLAS_OK;
}

static atlas_status generate(atlas_model *m, const uint32_t *prompt, size_t n,
                             size_t steps, logits_file *lf) {
  uint32_t *out = calloc(steps ? steps : 1, sizeof(uint32_t));
  if (out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many steps");
  }
  size_t count = 0;
  atlas_status s =
      atlas_model_generate(m, prompt, n, steps, out, &count, write_logits, lf);
  if (s == ATLAS_OK) {
    for (size_t i = 0; i < count; ++i) printf("%s%u", i ? "," : "", out[i]);
    printf("\n");
  }
  free(out);
  return s;
}

// Says which of a swap's outcomes happened, on stderr, first and in capitals
// when it failed (never a timing line for a swap that did not happen).
static atlas_status report_swap(atlas_status s, const atlas_swap_report *r,
                                const char *old_name, const char *new_name) {
  if (s == ATLAS_OK) {
    fprintf(stderr,
            "swap: now serving %s (%s path: teardown %.2f ms, load %.2f ms, "
            "total %.2f ms)\n",
            new_name,
            r->path == ATLAS_SWAP_SIDE_BY_SIDE ? "side-by-side" : "replace",
            r->teardown_ms, r->load_ms, r->total_ms);
    return ATLAS_OK;
  }
  if (r->swapped) {
    return atlas_status_annotate(s, "swapped to %s, but tearing down %s "
                                    "reported an error", new_name, old_name);
  }
  if (r->restored) {
    fprintf(stderr, "swap: FAILED part-way; the old model %s was restored "
                    "and is serving again\n", old_name);
    return s;  // the runtime's reason, which names the outcome too
  }
  if (r->path == ATLAS_SWAP_REFUSED && r->needed_bytes == 0) {
    // Refused before the budget check: the new model could not be sized.
    fprintf(stderr,
            "swap: REFUSED before anything changed: the new model could not "
            "be read (reason below). The old model %s is still serving.\n",
            old_name);
    return s;
  }
  if (r->path == ATLAS_SWAP_REFUSED) {
    fprintf(stderr,
            "swap: REFUSED before anything changed: the new model needs %llu "
            "bytes; %llu bytes could be made available (%llu free + %llu held "
            "by the old model). The old model %s is still serving.\n",
            (unsigned long long)r->needed_bytes,
            (unsigned long long)r->free_bytes +
                (unsigned long long)r->releasable_bytes,
            (unsigned long long)r->free_bytes,
            (unsigned long long)r->releasable_bytes, old_name);
    return s;  // the runtime's reason, which names the outcome too
  }
  if (r->path == ATLAS_SWAP_SIDE_BY_SIDE) {
    fprintf(stderr, "swap: FAILED loading the new model beside the old one; "
                    "the old model %s was never unloaded and is still "
                    "serving\n", old_name);
    return s;  // the runtime's reason, which names the outcome too
  }
  fprintf(stderr, "swap: FAILED, and the old model %s could not be restored; "
                  "no model is loaded\n", old_name);
  return s;
}

// Reads only DIR's config and checkpoint header and sizes the model for
// max_seq positions (prompt + --steps by default): a bad --steps or a bad
// folder fails before anything loads or is allocated from it.
static atlas_status check_sizes(const char *backend, const char *dir,
                                int64_t max_seq) {
  atlas_model_spec spec;
  spec_for(backend, dir, max_seq, NULL, &spec);
  uint64_t bytes = 0;
  return atlas_model_required_bytes(&spec, &bytes);
}

// `atlas run` (to == NULL) and `atlas swap`.
static atlas_status run_or_swap(const run_options *o, bool swap) {
  int64_t max_seq = o->max_seq;
  if (max_seq == 0) max_seq = (int64_t)o->prompt_len + o->steps;
  if (max_seq == 0) max_seq = 1;
  // (The swap sizes --to itself before touching the old model, and says
  // so as a refused swap.)
  ATLAS_RETURN_IF_ERROR(check_sizes(o->backend, o->model, max_seq));
  // The output exists only once complete: a temp name, renamed on success.
  atlas_cli_output out;
  ATLAS_RETURN_IF_ERROR(
      atlas_cli_output_open(o->logits[0] != '\0' ? o->logits : NULL, &out));
  logits_file lf = {out.f, o->logits};
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_model_spec spec;
  spec_for(o->backend, o->model, max_seq, &progress, &spec);
  spec.ignore_eos = o->ignore_eos;
  spec.device_budget_bytes = (uint64_t)(o->budget_mb * 1e6 + 0.5);
  // ATLAS_FAULT targets the swap: the model swapped from loads clean.
  spec.ignore_env_fault = swap;
  atlas_model *m = NULL;
  atlas_status s = atlas_model_open(&spec, &m);
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK) {
    s = generate(m, o->prompt, o->prompt_len, (size_t)o->steps, &lf);
  }
  if (s == ATLAS_OK && swap) {
    s = print_report(m, 10, 0.0);
    atlas_model_spec next;
    atlas_progress_init(&progress, "swapping");
    spec_for(o->backend, o->to, max_seq, &progress, &next);
    next.ignore_eos = o->ignore_eos;
    next.device_budget_bytes = spec.device_budget_bytes;
    if (o->fail_alloc > 0) {
      next.fault_kind = ATLAS_FAULT_ALLOC;
      next.fault_at = (uint64_t)o->fail_alloc;
    }
    if (s == ATLAS_OK) {
      atlas_swap_report r;
      s = atlas_model_swap(&m, &next, &r);
      atlas_progress_finish(&progress);
      s = report_swap(s, &r, o->model, o->to);
    }
    if (s == ATLAS_OK) {
      s = generate(m, o->prompt, o->prompt_len, (size_t)o->steps, &lf);
    }
    if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  }
  s = atlas_status_join(s, m != NULL ? atlas_model_close(m, NULL) : ATLAS_OK);
  if (s == ATLAS_OK) {
    s = atlas_cli_output_commit(&out);
  } else {
    atlas_cli_output_abort(&out);
  }
  return s;
}

static atlas_status write_file_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    return atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                             strerror(errno));
  }
  fputs(text, f);
  if (fclose(f) != 0) {
    return atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", path,
                             strerror(errno));
  }
  return ATLAS_OK;
}

static atlas_status write_svg(atlas_model *m, const atlas_site_report *report,
                              const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    return atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                             strerror(errno));
  }
  char title[512];
  snprintf(title, sizeof(title), "Live memory of %s on %s",
           atlas_model_name(m), atlas_backend_name(atlas_model_backend(m)));
  atlas_status s = atlas_memory_svg_write(report, title, f);
  if (fclose(f) != 0 && s == ATLAS_OK) {
    s = atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", path,
                          strerror(errno));
  }
  return s;
}

// The JSON and the SVG, from the same rows as the text (--top, --min-mb).
static atlas_status write_report_files(atlas_model *m, const report_options *o) {
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(
      atlas_backend_ledger(atlas_model_backend(m)), &entries, &count));
  atlas_site_report sites;
  atlas_status s = atlas_site_report_build(entries, count, (size_t)o->top,
                                           o->min_mb, &sites);
  free(entries);
  if (s != ATLAS_OK) return s;
  if (o->json[0] != '\0') {
    char *json = NULL;
    s = atlas_memory_json(&sites, (size_t)o->top, o->min_mb, &json);
    if (s == ATLAS_OK) s = write_file_text(o->json, json);
    free(json);
    if (s == ATLAS_OK) printf("wrote the JSON report to %s\n", o->json);
  }
  if (s == ATLAS_OK && o->svg[0] != '\0') {
    s = write_svg(m, &sites, o->svg);
    if (s == ATLAS_OK) printf("wrote the SVG chart to %s\n", o->svg);
  }
  atlas_site_report_free(&sites);
  return s;
}

static atlas_status report(const report_options *o) {
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_model_spec spec;
  spec_for(o->backend, o->model, o->max_seq, &progress, &spec);
  atlas_model *m = NULL;
  atlas_status s = atlas_model_open(&spec, &m);
  atlas_progress_finish(&progress);
  if (s != ATLAS_OK) return s;
  s = print_report(m, (size_t)o->top, o->min_mb);
  if (s == ATLAS_OK) s = write_report_files(m, o);
  return atlas_status_join(s, atlas_model_close(m, NULL));
}

// The README's main job: load an embedded model, generate, swap to the
// second embedded model in the same process, generate, tear down, report.
static atlas_status demo(const demo_options *o) {
  const atlas_demo_model *a = atlas_demo_model_find("tiny-a");
  const atlas_demo_model *b = atlas_demo_model_find("tiny-b");
  if (a == NULL || b == NULL) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "the embedded demo models are missing from this build");
  }
  atlas_embedded_checkpoint ea = {a->name, a->config_json, a->config_bytes,
                                  a->weights, a->weights_bytes};
  atlas_embedded_checkpoint eb = {b->name, b->config_json, b->config_bytes,
                                  b->weights, b->weights_bytes};
  atlas_model_spec sa, sb;
  memset(&sa, 0, sizeof(sa));
  sa.backend = o->backend;
  sa.embedded = &ea;
  sa.max_seq = 64;
  sb = sa;
  sb.embedded = &eb;
  const uint32_t prompt[] = {1, 2, 3};
  const size_t steps = 8;
  logits_file none = {NULL, NULL};

  printf("demo: two tiny Llama models built into this binary, tiny-a and "
         "tiny-b, with RANDOM weights:\n"
         "their token ids are not text, and repeated ids are expected, not a "
         "bug.\nprompt 1,2,3; %zu tokens each, greedy.\n\n", steps);
  atlas_model *m = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_model_open(&sa, &m));
  printf("model %s on %s\ngenerated: ", atlas_model_name(m),
         atlas_backend_name(atlas_model_backend(m)));
  atlas_status s = generate(m, prompt, 3, steps, &none);
  if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  atlas_swap_report r;
  if (s == ATLAS_OK) {
    s = atlas_model_swap(&m, &sb, &r);
    if (s == ATLAS_OK) {
      printf("\nswapped to %s in %.2f ms (%s; teardown %.2f ms, load %.2f ms)\n",
             atlas_model_name(m), r.total_ms,
             r.path == ATLAS_SWAP_SIDE_BY_SIDE ? "side by side" : "replace",
             r.teardown_ms, r.load_ms);
      printf("generated: ");
      s = generate(m, prompt, 3, steps, &none);
    } else {
      s = report_swap(s, &r, ea.name, eb.name);
    }
  }
  if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  if (m == NULL) return s;
  atlas_teardown_report td;
  atlas_status closed = atlas_model_close(m, &td);
  if (closed == ATLAS_OK) {
    printf("\nteardown: %zu resources released in reverse order, %zu failed\n",
           td.released, td.failed);
    printf("leaked: %zu bytes\n", td.sweep.bytes);
    if (td.sweep.count > 0 && s == ATLAS_OK) {
      s = atlas_status_make(ATLAS_STATUS_INTERNAL,
                            "the sweep found %zu unreleased allocations:\n%s",
                            td.sweep.count, td.sweep.sites);
    }
  }
  atlas_sweep_result_free(&td.sweep);
  return atlas_status_join(s, closed);
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
  if (o == NULL) return finish(c->program, atlas_status_make(
                                   ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  o->backend = "auto";
  int next = 0;
  atlas_cli_parse_result r = atlas_cli_parse(c, argc, argv, set_run, o, &next);
  int rc;
  if (r != ATLAS_CLI_PARSED) {
    rc = parsed_exit(r);
  } else if (o->max_seq != 0 &&
             o->max_seq < (long)o->prompt_len + o->steps) {
    rc = atlas_cli_usage_error(c->program,
                               "--max-seq %ld is less than the prompt length + "
                               "steps (%ld)",
                               o->max_seq, (long)o->prompt_len + o->steps);
  } else {
    rc = finish(c->program, run_or_swap(o, swap));
  }
  free(o->prompt);
  free(o);
  return rc;
}

static int main_report(int argc, char **argv) {
  report_options *o = calloc(1, sizeof(*o));
  if (o == NULL) return finish(kReportCommand.program, atlas_status_make(
                                   ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
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

typedef struct command_entry {
  const char *name;
  const atlas_cli_command *command;
  const char *summary;
} command_entry;

static const command_entry kCommands[] = {
    {"demo", &kDemoCommand,
     "load a built-in model, generate, hot-swap, tear down"},
    {"run", &kRunCommand, "load a checkpoint and generate token ids"},
    {"report", &kReportCommand,
     "a checkpoint's live memory by call site (text, JSON, SVG)"},
    {"swap", &kSwapCommand, "run one checkpoint, hot-swap to another, run it"},
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
    fprintf(out, "  %-8s %s\n", kCommands[i].name, kCommands[i].summary);
  }
  fputs("  help     this text, or a command's options: atlas help COMMAND\n"
        "\noptions:\n"
        "  -h, --help     print this help and exit\n"
        "  --version      print the version and exit\n"
        "\nUnder `bazel run`, relative paths are taken from the folder Bazel was "
        "run in.\n"
        "Exit status: 0 done, 1 failed, 2 usage error.\n",
        out);
}

int main(int argc, char **argv) {
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
    const command_entry *e = find_command(argv[2]);
    if (e == NULL || argc > 3) {
      return atlas_cli_usage_error("atlas", "help: unknown command '%s'",
                                   argv[argc > 3 ? 3 : 2]);
    }
    atlas_cli_print_help(e->command, stdout);
    return ATLAS_CLI_EXIT_OK;
  }
  // The command's own getopt_long parse sees argv[1] as its argv[0].
  if (strcmp(first, "demo") == 0) return main_demo(argc - 1, argv + 1);
  if (strcmp(first, "run") == 0) return main_run(argc - 1, argv + 1, false);
  if (strcmp(first, "swap") == 0) return main_run(argc - 1, argv + 1, true);
  if (strcmp(first, "report") == 0) return main_report(argc - 1, argv + 1);
  if (first[0] == '-') {
    return atlas_cli_usage_error("atlas", "unknown option '%s'", first);
  }
  return atlas_cli_usage_error("atlas", "unknown command '%s'", first);
}
