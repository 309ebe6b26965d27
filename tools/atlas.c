// The atlas command line.
//
//   atlas demo
//   atlas run --model DIR [--backend host|cuda|auto] --tokens 1,2,3 --steps N
//             [--logits FILE]
//   atlas report --model DIR [--backend B] [--top N] [--min-mb X]
//                [--json FILE] [--svg FILE]
//   atlas swap --model DIR --to DIR2 [--backend B] --tokens 1,2 --steps N
//
// Exit 0 on success; on any error a message on stderr and exit 1.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/ledger_report.h"
#include "atlas/runtime/model/swap.h"
#include "atlas/tools/make_checkpoint_demo_models.h"
#include "atlas/tools/memory_svg.h"
#include "atlas/tools/cli_files.h"
#include "atlas/tools/progress.h"

typedef struct cli {
  const char *model, *to, *backend, *tokens, *logits, *json, *svg;
  long steps;
  long top;
  double min_mb;
} cli;

static atlas_status parse_args(int argc, char **argv, cli *c) {
  memset(c, 0, sizeof(*c));
  c->backend = "auto";
  c->steps = -1;
  c->top = 10;
  c->min_mb = 0.0;
  for (int i = 0; i < argc; ++i) {
    const char *flag = argv[i];
    if (i + 1 >= argc) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s needs a value", flag);
    }
    const char *v = argv[++i];
    char *end = NULL;
    errno = 0;
    if (strcmp(flag, "--model") == 0) {
      c->model = v;
    } else if (strcmp(flag, "--to") == 0) {
      c->to = v;
    } else if (strcmp(flag, "--backend") == 0) {
      c->backend = v;
    } else if (strcmp(flag, "--tokens") == 0) {
      c->tokens = v;
    } else if (strcmp(flag, "--logits") == 0) {
      c->logits = v;
    } else if (strcmp(flag, "--json") == 0) {
      c->json = v;
    } else if (strcmp(flag, "--svg") == 0) {
      c->svg = v;
    } else if (strcmp(flag, "--steps") == 0 || strcmp(flag, "--top") == 0) {
      long n = strtol(v, &end, 10);
      if (errno != 0 || *end != '\0' || n < 0) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "%s wants a non-negative integer, not '%s'",
                                 flag, v);
      }
      *(strcmp(flag, "--steps") == 0 ? &c->steps : &c->top) = n;
    } else if (strcmp(flag, "--min-mb") == 0) {
      ATLAS_RETURN_IF_ERROR(atlas_cli_parse_finite(flag, v, 0.0, &c->min_mb));
    } else {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "unknown option %s", flag);
    }
  }
  return ATLAS_OK;
}

static atlas_status require(const char *value, const char *flag) {
  if (value != NULL) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s is required", flag);
}

// "1,2,3" -> token ids.
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

static atlas_status spec_for(const cli *c, const char *dir, size_t positions,
                             atlas_progress *progress, atlas_model_spec *out) {
  memset(out, 0, sizeof(*out));
  out->dir = dir;
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(c->backend));
  out->backend = c->backend;
  out->max_seq = (int64_t)positions;
  out->progress = atlas_progress_update;
  out->progress_ctx = progress;
  return ATLAS_OK;
}

static atlas_status print_report(atlas_model *m, size_t top, double min_mb) {
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_alloc_report(atlas_model_backend(m), top, min_mb, &text));
  printf("memory report (%s on %s):\n%s", atlas_model_name(m),
         atlas_backend_name(atlas_model_backend(m)), text);
  free(text);
  return ATLAS_OK;
}

static atlas_status generate(atlas_model *m, const uint32_t *prompt, size_t n,
                             size_t steps, logits_file *lf) {
  uint32_t *out = calloc(steps ? steps : 1, sizeof(uint32_t));
  if (out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many steps");
  }
  atlas_status s = atlas_llama_generate(atlas_model_llama(m), prompt, n, steps,
                                        out, write_logits, lf);
  if (s == ATLAS_OK) {
    for (size_t i = 0; i < steps; ++i) printf("%s%u", i ? "," : "", out[i]);
    printf("\n");
  }
  free(out);
  return s;
}

static atlas_status cmd_run(const cli *c, bool swap) {
  ATLAS_RETURN_IF_ERROR(require(c->model, "--model"));
  ATLAS_RETURN_IF_ERROR(require(c->tokens, "--tokens"));
  if (swap) ATLAS_RETURN_IF_ERROR(require(c->to, "--to"));
  if (c->steps < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "--steps is required");
  }
  uint32_t *prompt = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(parse_tokens(c->tokens, &prompt, &n));
  atlas_cli_output out;
  atlas_status early = atlas_cli_check_steps(c->model, n, c->steps);
  if (early == ATLAS_OK && swap) early = atlas_cli_check_steps(c->to, n, c->steps);
  // The output exists only once complete: a temp name, renamed on success.
  if (early == ATLAS_OK) early = atlas_cli_output_open(c->logits, &out);
  if (early != ATLAS_OK) {
    free(prompt);
    return early;
  }
  size_t positions = n + (size_t)c->steps;
  logits_file lf = {out.f, c->logits};
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_model_spec spec;
  atlas_model *m = NULL;
  atlas_status s = spec_for(c, c->model, positions, &progress, &spec);
  // ATLAS_FAULT targets the swap: the model swapped from loads clean.
  spec.ignore_env_fault = swap;
  if (s == ATLAS_OK) s = atlas_model_open(&spec, &m);
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK) s = generate(m, prompt, n, (size_t)c->steps, &lf);
  if (s == ATLAS_OK && swap) {
    s = print_report(m, 10, 0.0);
    atlas_model_spec next;
    atlas_progress_init(&progress, "swapping");
    if (s == ATLAS_OK) s = spec_for(c, c->to, positions, &progress, &next);
    atlas_swap_report r;
    if (s == ATLAS_OK) {
      s = atlas_model_swap(&m, &next, &r);
      atlas_progress_finish(&progress);
      fprintf(stderr,
              "swap: %s path, teardown %.2f ms, load %.2f ms, total %.2f ms\n",
              r.path == ATLAS_SWAP_SIDE_BY_SIDE ? "side-by-side" : "replace",
              r.teardown_ms, r.load_ms, r.total_ms);
    }
    if (s == ATLAS_OK) s = generate(m, prompt, n, (size_t)c->steps, &lf);
    if (s == ATLAS_OK) s = print_report(m, 10, 0.0);
  }
  s = atlas_status_join(s, atlas_model_close(m, NULL));
  if (s == ATLAS_OK) {
    s = atlas_cli_output_commit(&out);
  } else {
    atlas_cli_output_abort(&out);
  }
  free(prompt);
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

static atlas_status write_svg(atlas_model *m, const char *path) {
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(
      atlas_backend_ledger(atlas_model_backend(m)), &entries, &count));
  atlas_site_report report;
  atlas_status s = atlas_site_report_build(entries, count, 12, 0.0, &report);
  free(entries);
  if (s != ATLAS_OK) return s;
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    s = atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                          strerror(errno));
  } else {
    char title[512];
    snprintf(title, sizeof(title), "Live memory of %s on %s",
             atlas_model_name(m), atlas_backend_name(atlas_model_backend(m)));
    s = atlas_memory_svg_write(&report, title, f);
    if (fclose(f) != 0 && s == ATLAS_OK) {
      s = atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", path,
                            strerror(errno));
    }
  }
  atlas_site_report_free(&report);
  return s;
}

static atlas_status cmd_report(const cli *c) {
  ATLAS_RETURN_IF_ERROR(require(c->model, "--model"));
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_model_spec spec;
  atlas_model *m = NULL;
  ATLAS_RETURN_IF_ERROR(spec_for(c, c->model, 0, &progress, &spec));
  atlas_status s = atlas_model_open(&spec, &m);
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK) s = print_report(m, (size_t)c->top, c->min_mb);
  char *json = NULL;
  if (s == ATLAS_OK && c->json != NULL) {
    s = atlas_backend_alloc_report_json(atlas_model_backend(m), &json);
    if (s == ATLAS_OK) s = write_file_text(c->json, json);
    free(json);
  }
  if (s == ATLAS_OK && c->svg != NULL) s = write_svg(m, c->svg);
  return atlas_status_join(s, atlas_model_close(m, NULL));
}

// The README's main job: load an embedded model, generate, swap to the
// second embedded model in the same process, generate, tear down, report.
static atlas_status cmd_demo(const cli *c) {
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
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(c->backend));
  sa.backend = c->backend;
  sa.embedded = &ea;
  sa.max_seq = 64;
  sb = sa;
  sb.embedded = &eb;
  const uint32_t prompt[] = {1, 2, 3};
  const size_t steps = 8;
  logits_file none = {NULL, NULL};

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

static int usage(void) {
  fprintf(stderr,
          "usage:\n"
          "  atlas demo [--backend host|cuda|auto]\n"
          "  atlas run --model DIR [--backend host|cuda|auto] --tokens 1,2,3 "
          "--steps N [--logits FILE]\n"
          "  atlas report --model DIR [--backend B] [--top N] [--min-mb X] "
          "[--json FILE] [--svg FILE]\n"
          "  atlas swap --model DIR --to DIR2 [--backend B] --tokens 1,2,3 "
          "--steps N\n");
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *cmd = argv[1];
  cli c;
  atlas_status s = parse_args(argc - 2, argv + 2, &c);
  if (s == ATLAS_OK) {
    if (strcmp(cmd, "demo") == 0) {
      if (c.backend == NULL || strcmp(c.backend, "auto") == 0) c.backend = "host";
      s = cmd_demo(&c);
    } else if (strcmp(cmd, "run") == 0) {
      s = cmd_run(&c, false);
    } else if (strcmp(cmd, "swap") == 0) {
      s = cmd_run(&c, true);
    } else if (strcmp(cmd, "report") == 0) {
      s = cmd_report(&c);
    } else {
      fprintf(stderr, "atlas: unknown command '%s'\n", cmd);
      return usage();
    }
  }
  if (s != ATLAS_OK) {
    fprintf(stderr, "atlas %s: %s\n", cmd, atlas_status_message(s));
    atlas_status_free(s);
    return 1;
  }
  return 0;
}
