// The public C API over the serving layer (runtime/model): options structs
// with a size field, opaque handles, reports as caller-owned text.
#define _POSIX_C_SOURCE 200809L  // open_memstream, for the SVG report
#include "atlas/atlas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/api/memory_json.h"
#include "atlas/runtime/api/memory_svg.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/ledger_report.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/model/swap.h"

// An options struct from a caller built against an older header is shorter:
// copy what it has over the defaults.
#define ATLAS_COPY_SIZED_(dst, src)                                      \
  do {                                                                   \
    size_t n_ = (src)->struct_size;                                      \
    if (n_ > sizeof(*(dst))) n_ = sizeof(*(dst));                        \
    if (n_ >= sizeof(size_t)) memcpy((dst), (src), n_);                  \
    (dst)->struct_size = sizeof(*(dst));                                 \
  } while (0)

void atlas_open_options_init(atlas_open_options *options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->backend = "auto";
}

void atlas_generate_options_init(atlas_generate_options *options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->max_new_tokens = 16;
}

void atlas_report_options_init(atlas_report_options *options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

const char *atlas_backend_names(void) { return "cuda,host,auto"; }

void atlas_free(void *ptr) { free(ptr); }

static atlas_status spec_from(const atlas_open_options *in,
                              atlas_model_spec *spec) {
  atlas_open_options o;
  atlas_open_options_init(&o);
  if (in != NULL) ATLAS_COPY_SIZED_(&o, in);
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(o.backend),
                        "atlas_open_options.backend");
  if (o.max_seq < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open_options.max_seq is negative (%lld)",
                             (long long)o.max_seq);
  }
  memset(spec, 0, sizeof(*spec));
  spec->backend = o.backend;
  spec->device = o.device;
  spec->device_budget_bytes = o.device_budget_bytes;
  spec->max_seq = o.max_seq;
  spec->log = o.log;
  spec->progress = o.progress;
  spec->progress_ctx = o.progress_ctx;
  return ATLAS_OK;
}

atlas_status atlas_open(const char *dir, const atlas_open_options *options,
                        atlas_model **out_model) {
  *out_model = NULL;
  if (dir == NULL || dir[0] == '\0') {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open: no checkpoint directory given");
  }
  atlas_model_spec spec;
  ATLAS_RETURN_IF_ERROR(spec_from(options, &spec));
  spec.dir = dir;
  return atlas_model_open(&spec, out_model);
}

// The model spec keeps a pointer to its embedded checkpoint: one that lives
// as long as the model, freed with it (see atlas_close).
typedef struct embedded_holder {
  atlas_embedded_checkpoint checkpoint;
  char name[];
} embedded_holder;

atlas_status atlas_open_memory(const char *name, const char *config_json,
                               size_t config_size, const void *safetensors,
                               size_t safetensors_size,
                               const atlas_open_options *options,
                               atlas_model **out_model) {
  *out_model = NULL;
  if (name == NULL || config_json == NULL || safetensors == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open_memory: name, config and weights are "
                             "all required");
  }
  atlas_model_spec spec;
  ATLAS_RETURN_IF_ERROR(spec_from(options, &spec));
  size_t len = strlen(name);
  embedded_holder *h = malloc(sizeof(*h) + len + 1);
  if (h == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_open_memory: out of host memory");
  }
  memcpy(h->name, name, len + 1);
  h->checkpoint = (atlas_embedded_checkpoint){h->name, config_json, config_size,
                                              safetensors, safetensors_size};
  spec.embedded = &h->checkpoint;
  atlas_status s = atlas_model_open(&spec, out_model);
  if (s != ATLAS_OK) free(h);
  return s;
}

// The holder behind an in-memory model (NULL for a directory model).
static embedded_holder *holder_of(const atlas_model *model) {
  const atlas_model_spec *spec = atlas_model_spec_of(model);
  if (spec->embedded == NULL) return NULL;
  return (embedded_holder *)((char *)spec->embedded -
                             offsetof(embedded_holder, checkpoint));
}

atlas_status atlas_close(atlas_model *model, atlas_close_report *out_report) {
  if (out_report != NULL) memset(out_report, 0, sizeof(*out_report));
  if (model == NULL) return ATLAS_OK;
  embedded_holder *h = holder_of(model);
  atlas_teardown_report report;
  memset(&report, 0, sizeof(report));
  atlas_status s = atlas_model_close(model, &report);
  if (out_report != NULL) {
    out_report->leaked_bytes = report.sweep.bytes;
    out_report->leaked_allocations = report.sweep.count;
  }
  atlas_sweep_result_free(&report.sweep);
  free(h);
  return s;
}

atlas_status atlas_model_info_get(const atlas_model *model,
                                  atlas_model_info *out_info) {
  if (model == NULL || out_info == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_model_info_get: NULL model or info");
  }
  size_t size = out_info->struct_size;
  if (size < sizeof(size_t)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_model_info_get: struct_size is not set");
  }
  atlas_model_info info;
  memset(&info, 0, sizeof(info));
  atlas_model *m = (atlas_model *)model;
  info.struct_size = size < sizeof(info) ? size : sizeof(info);
  info.name = atlas_model_name(model);
  info.architecture = atlas_model_arch_name(model);
  info.backend = atlas_backend_name(atlas_model_backend(m));
  info.vocab_size = (size_t)atlas_model_vocab_size(model);
  info.max_seq = atlas_model_max_seq(model);
  info.live_bytes = atlas_backend_live_bytes(atlas_model_backend(m));
  memcpy(out_info, &info, info.struct_size);
  return ATLAS_OK;
}

typedef struct generate_bridge {
  const atlas_generate_options *options;
} generate_bridge;

static atlas_status bridge_logits(void *ctx, const float *logits,
                                  size_t vocab_size) {
  const generate_bridge *b = ctx;
  return b->options->on_logits(b->options->ctx, logits, vocab_size);
}

static bool bridge_token(void *ctx, uint32_t token) {
  const generate_bridge *b = ctx;
  return b->options->on_token(b->options->ctx, token);
}

atlas_status atlas_generate(atlas_model *model, const uint32_t *prompt,
                            size_t prompt_len,
                            const atlas_generate_options *options,
                            uint32_t *out_tokens, size_t *out_count) {
  if (out_count != NULL) *out_count = 0;
  if (model == NULL || prompt == NULL || out_tokens == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_generate: NULL model, prompt or output");
  }
  atlas_generate_options o;
  atlas_generate_options_init(&o);
  if (options != NULL) ATLAS_COPY_SIZED_(&o, options);
  int64_t vocab = atlas_model_vocab_size(model);
  for (size_t i = 0; i < prompt_len; ++i) {
    if ((int64_t)prompt[i] >= vocab) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "prompt token %zu is id %u, outside the "
                               "vocabulary of %s (%lld ids)",
                               i, prompt[i], atlas_model_name(model),
                               (long long)vocab);
    }
  }
  // ignore_eos lives in the model's spec (the CLI sets it at open); the
  // per-call option overrides it for this call only.
  atlas_model_spec *spec = (atlas_model_spec *)atlas_model_spec_of(model);
  bool saved = spec->ignore_eos;
  spec->ignore_eos = o.ignore_eos;
  generate_bridge bridge = {&o};
  size_t count = 0;
  atlas_status s = atlas_model_generate_stream(
      model, prompt, prompt_len, o.max_new_tokens,
      o.on_token != NULL ? bridge_token : NULL, &bridge, out_tokens, &count,
      o.on_logits != NULL ? bridge_logits : NULL, &bridge);
  spec->ignore_eos = saved;
  if (out_count != NULL) *out_count = count;
  return s;
}

atlas_status atlas_swap(atlas_model **model, const char *dir,
                        const atlas_open_options *options,
                        atlas_swap_info *out_info) {
  if (out_info != NULL) memset(out_info, 0, sizeof(*out_info));
  if (model == NULL || *model == NULL || dir == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_swap: NULL model or directory");
  }
  atlas_model_spec next;
  if (options != NULL) {
    ATLAS_RETURN_IF_ERROR(spec_from(options, &next));
  } else {
    next = *atlas_model_spec_of(*model);
    next.embedded = NULL;
    next.fault_at = 0;
    next.fail_module_load_at = 0;
  }
  next.dir = dir;
  embedded_holder *old_holder = holder_of(*model);
  atlas_swap_report r;
  memset(&r, 0, sizeof(r));
  atlas_status s = atlas_model_swap(model, &next, &r);
  if (r.swapped) free(old_holder);  // the old model is gone
  if (out_info != NULL) {
    out_info->side_by_side = r.path == ATLAS_SWAP_SIDE_BY_SIDE;
    out_info->needed_bytes = r.needed_bytes;
    out_info->free_bytes = r.free_bytes;
    out_info->releasable_bytes = r.releasable_bytes;
    out_info->teardown_ms = r.teardown_ms;
    out_info->load_ms = r.load_ms;
    out_info->total_ms = r.total_ms;
    if (r.swapped) {
      out_info->outcome = ATLAS_SWAP_OUTCOME_SWAPPED;
    } else if (r.restored) {
      out_info->outcome = ATLAS_SWAP_OUTCOME_RESTORED;
    } else if (*model != NULL) {
      out_info->outcome = ATLAS_SWAP_OUTCOME_REFUSED;
    } else {
      out_info->outcome = ATLAS_SWAP_OUTCOME_LOST;
    }
  }
  return s;
}

static atlas_status svg_text(const atlas_model *model,
                             const atlas_site_report *sites, char **out_text) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_report: cannot open a memory stream");
  }
  char title[512];
  snprintf(title, sizeof(title), "Live memory of %s on %s",
           atlas_model_name(model),
           atlas_backend_name(atlas_model_backend((atlas_model *)model)));
  atlas_status s = atlas_memory_svg_write(sites, title, f);
  if (fclose(f) != 0 && s == ATLAS_OK) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "atlas_report: writing the SVG failed");
  }
  if (s != ATLAS_OK) {
    free(buf);
    return s;
  }
  *out_text = buf;
  return ATLAS_OK;
}

atlas_status atlas_report(const atlas_model *model, atlas_report_format format,
                          const atlas_report_options *options,
                          char **out_text) {
  *out_text = NULL;
  if (model == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report: NULL model");
  }
  atlas_report_options o;
  atlas_report_options_init(&o);
  if (options != NULL) ATLAS_COPY_SIZED_(&o, options);
  if (!isfinite(o.min_mb) || o.min_mb < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report_options.min_mb must be a finite "
                             "number >= 0 (got %g)",
                             o.min_mb);
  }
  atlas_backend *b = atlas_model_backend((atlas_model *)model);
  if (format == ATLAS_REPORT_TEXT) {
    return atlas_backend_alloc_report(b, o.top, o.min_mb, out_text);
  }
  if (format != ATLAS_REPORT_JSON && format != ATLAS_REPORT_SVG) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report: unknown format %d", (int)format);
  }
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_snapshot(atlas_backend_ledger(b), &entries,
                                              &count));
  atlas_site_report sites;
  atlas_status s = atlas_site_report_build(entries, count, o.top, o.min_mb,
                                           &sites);
  free(entries);
  if (s != ATLAS_OK) return s;
  if (format == ATLAS_REPORT_JSON) {
    s = atlas_memory_json(&sites, o.top, o.min_mb, out_text);
  } else {
    s = svg_text(model, &sites, out_text);
  }
  atlas_site_report_free(&sites);
  return s;
}
