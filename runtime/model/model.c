// A served model: checkpoint -> its architecture's row -> its own backend.
// Everything architecture-specific goes through the row (runtime/arch/).
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/model/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "atlas/runtime/arch/registry.h"
#include "atlas/runtime/arch/tensor_parallel/tp_model.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/ledger.h"
#include "atlas/runtime/base/log.h"
#include "atlas/runtime/formats/gguf_checkpoint.h"
#include "atlas/runtime/quant/quant_config.h"

// config.json is a few kilobytes; refuse anything absurd before reading it.
#define MAX_CONFIG_BYTES ((size_t)16 * 1024 * 1024)

struct atlas_model {
  atlas_model_spec spec;
  char *dir;           // owned copy of spec.dir
  char *backend_name;  // owned copy of spec.backend
  atlas_backend *backend;
  const atlas_arch *arch;  // the row of the model's architecture
  atlas_arch_model *impl;  // that row's model
  atlas_eos eos;
  atlas_arch_generate_options generate_options;  // points into eos
  // Kept while serving: the config the row parsed and the source of these
  // weights, with the digests the load recorded (what a swap snapshots to
  // restore them bit for bit).
  void *config;
  atlas_checkpoint *ck;
  // What a layer above keeps per model (the step API's KV pool), released
  // first at close.
  void *attachment;
  atlas_status (*release_attachment)(void *attachment);
  // A model split over devices (spec.tensor_parallel > 1) instead of impl:
  // it owns its backends; `backend` is rank 0's.
  atlas_tp_model *tp;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *spec_name(const atlas_model_spec *spec) {
  return spec->dir != NULL ? spec->dir
                           : (spec->embedded ? spec->embedded->name : "(none)");
}

// What a checkpoint is, before anything touches a device: its row, its
// parsed config (row->config_size bytes), its EOS ids and its tensors,
// checked against the row's tensor plan.
typedef struct opened {
  const atlas_arch *arch;
  void *config;
  atlas_eos eos;
  atlas_checkpoint *ck;
  bool ck_borrowed;  // an adopted checkpoint the caller still owns
  bool quantized;    // config.json has a quantization_config Atlas reads
} opened;

static void opened_close(opened *o) {
  if (!o->ck_borrowed) atlas_checkpoint_close(o->ck);
  free(o->config);
  memset(o, 0, sizeof(*o));
}

// A quantized checkpoint is named before anything else reads its config:
// formats Atlas does not read are refused there, naming the field. The ones
// it reads run through the decoder's quantized products (its config reader
// refuses what of them does not run), and their checkpoint is opened with
// the quantized dtypes allowed: never as plain weights.
static atlas_status check_quantization(const char *text, size_t len,
                                       const char *path, bool *out_quantized) {
  atlas_quant_config q;
  ATLAS_RETURN_IF_ERROR(atlas_quant_config_parse(text, len, path, &q));
  *out_quantized = q.method != ATLAS_QUANT_NONE;
  atlas_quant_config_free(&q);
  return ATLAS_OK;
}

static atlas_status parse_config(const char *text, size_t len, const char *path,
                                 opened *o) {
  ATLAS_RETURN_IF_ERROR(check_quantization(text, len, path, &o->quantized));
  ATLAS_RETURN_IF_ERROR(atlas_arch_select(text, len, path, &o->arch));
  o->config = calloc(1, o->arch->config_size);
  if (o->config == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory", path);
  }
  ATLAS_RETURN_IF_ERROR(o->arch->parse_config(text, len, path, o->config));
  bool found = false;
  return atlas_eos_parse(text, len, path, &o->eos, &found);
}

// Where generation_config.json exists, transformers' generate() takes its
// EOS ids and nothing of config.json's: a file without eos_token_id (or with
// null) means no EOS at all (transformers 5.x on the H200, 2026-12-04), so
// generation runs to the step limit. Atlas does the same, and says so
// through `log` (NULL: silent, for a look that sizes the model before the
// open that serves it, so a swap warns once).
static atlas_status read_generation_config(const char *dir,
                                           const atlas_log_sink *log,
                                           opened *o) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/generation_config.json", dir);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "model directory path is too long: %s", dir);
  }
  struct stat st;
  if (lstat(path, &st) != 0 && errno == ENOENT) return ATLAS_OK;  // optional
  // Regular files only, never waited on (a FIFO would block).
  char *text = NULL;
  size_t len = 0;
  atlas_status status = atlas_file_read_small(
      path, "generation_config.json", (uint64_t)MAX_CONFIG_BYTES, &text, &len);
  bool found = false;
  atlas_eos eos;
  memset(&eos, 0, sizeof(eos));
  if (status == ATLAS_OK)
    status = atlas_eos_parse(text, len, path, &eos, &found);
  if (status == ATLAS_OK && !found && o->eos.count > 0 && log != NULL) {
    atlas_log(log, ATLAS_LOG_WARNING,
              "%s names no eos_token_id, so generation stops only at the step "
              "limit, as transformers' generate() does: config.json's "
              "eos_token_id %u%s is not used",
              path, o->eos.ids[0], o->eos.count > 1 ? " (and the rest)" : "");
  }
  if (status == ATLAS_OK) o->eos = eos;
  free(text);
  return status;
}

// A swap's restore: everything comes from memory, nothing from the files.
// `take` says whether `o` now owns the adopted checkpoint.
static atlas_status open_adopted(const atlas_model_spec *spec, bool take,
                                 opened *o) {
  o->arch = spec->adopt_arch;
  o->ck = spec->adopt_checkpoint;
  o->ck_borrowed = !take;
  if (spec->adopt_eos != NULL) o->eos = *spec->adopt_eos;
  atlas_status status = ATLAS_OK;
  o->config = malloc(o->arch->config_size);
  if (o->config == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory", spec_name(spec));
  } else {
    memcpy(o->config, spec->adopt_config, o->arch->config_size);
    status = o->arch->check_tensors(o->config, o->ck);
  }
  if (status != ATLAS_OK) opened_close(o);
  return status;
}

// `log`: where generation_config.json's warning goes (NULL: nowhere).
static atlas_status open_checkpoint(const atlas_model_spec *spec, bool take,
                                    const atlas_log_sink *log, opened *o) {
  memset(o, 0, sizeof(*o));
  if (spec->adopt_checkpoint != NULL && spec->adopt_arch != NULL &&
      spec->adopt_config != NULL) {
    return open_adopted(spec, take, o);
  }
  atlas_status status = ATLAS_OK;
  if (spec->dir != NULL && atlas_gguf_is_path(spec->dir)) {
    // A GGUF file: its tensors and the config.json its metadata says.
    char *text = NULL;
    status = atlas_gguf_checkpoint_open(spec->dir, &o->ck, &text);
    if (status == ATLAS_OK) {
      status = parse_config(text, strlen(text), spec->dir, o);
    }
    free(text);
  } else if (spec->dir != NULL) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/config.json", spec->dir);
    if (n < 0 || (size_t)n >= sizeof(path)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "model directory path is too long: %s",
                               spec->dir);
    }
    char *text = NULL;
    size_t len = 0;
    status = atlas_file_read_small(path, "config.json",
                                   (uint64_t)MAX_CONFIG_BYTES, &text, &len);
    if (status == ATLAS_OK) status = parse_config(text, len, path, o);
    free(text);
    if (status == ATLAS_OK) status = read_generation_config(spec->dir, log, o);
    if (status == ATLAS_OK) {
      status = atlas_checkpoint_open_with(
          spec->dir, o->quantized ? ATLAS_SAFETENSORS_QUANTIZED : 0, &o->ck);
    }
  } else if (spec->embedded == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "model spec names neither a directory nor an "
                             "embedded checkpoint");
  } else {
    const atlas_embedded_checkpoint *e = spec->embedded;
    status = parse_config(e->config_json, e->config_size, e->name, o);
    if (status == ATLAS_OK) {
      status = atlas_checkpoint_open_buffer_with(
          e->safetensors, e->safetensors_size, e->name,
          o->quantized ? ATLAS_SAFETENSORS_QUANTIZED : 0, &o->ck);
    }
  }
  if (status == ATLAS_OK) status = o->arch->check_tensors(o->config, o->ck);
  const char *context_key = "max_position_embeddings";
  if (status == ATLAS_OK && spec->context_needed > 0 &&
      o->arch->context != NULL &&
      spec->context_needed > o->arch->context(o->config, &context_key)) {
    status = atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "the prompt and the tokens to generate need %lld positions, but %s "
        "has a context of %lld (config.json %s)",
        (long long)spec->context_needed, spec_name(spec),
        (long long)o->arch->context(o->config, NULL), context_key);
  }
  if (status == ATLAS_OK && spec->vocab_needed > 0 && o->arch->vocab != NULL &&
      spec->vocab_needed > o->arch->vocab(o->config)) {
    status = atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "the prompt's token id %lld is outside the vocabulary of %s: %lld "
        "ids, 0 to %lld (config.json vocab_size)",
        (long long)spec->vocab_needed - 1, spec_name(spec),
        (long long)o->arch->vocab(o->config),
        (long long)o->arch->vocab(o->config) - 1);
  }
  if (status != ATLAS_OK) opened_close(o);
  return status;
}

static atlas_status create_backend(const atlas_model_spec *spec,
                                   const atlas_arch *arch,
                                   atlas_backend **out) {
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.modules = arch->modules;
  o.device = spec->device;
  o.host_pool = spec->host_pool;
  o.fail_module_load_at = spec->fail_module_load_at;
  // The modules load while the weights upload (the load waits for them
  // before its first kernel).
  o.background_modules = true;
  o.log = spec->log;
  atlas_status status = atlas_backend_factory_create(spec->backend, &o, out);
  if (status == ATLAS_OK && spec->ignore_env_fault) {
    for (int k = 0; k < ATLAS_FAULT_KIND_COUNT; ++k) {
      atlas_backend_inject_fault(*out, (atlas_fault_kind)k, 0);
    }
  }
  if (status == ATLAS_OK && spec->fault_at != 0) {
    atlas_backend_inject_fault(*out, spec->fault_kind, spec->fault_at);
  }
  return status;
}

// One device's bytes: the whole model's, or for a split the busiest
// device's share.
static atlas_status device_bytes(const atlas_model_spec *spec, const opened *o,
                                 uint64_t *out_bytes) {
  if (spec->tensor_parallel > 1) {
    return atlas_tp_required_bytes(o->ck, o->arch, o->config,
                                   spec->tensor_parallel, spec->max_seq,
                                   out_bytes);
  }
  return o->arch->required_bytes(o->config, o->ck, spec->max_seq, out_bytes);
}

atlas_status atlas_model_required_bytes(const atlas_model_spec *spec,
                                        uint64_t *out_bytes) {
  *out_bytes = 0;
  opened o;
  ATLAS_RETURN_IF_ERROR(open_checkpoint(spec, false, NULL, &o));
  atlas_status status = device_bytes(spec, &o, out_bytes);
  opened_close(&o);
  return status;
}

// A budget holds at open as it does at a swap: the model's required bytes
// (an upper bound on what the load allocates) must fit, or nothing is
// allocated.
static atlas_status check_budget(const atlas_model_spec *spec,
                                 const opened *o) {
  uint64_t need = 0;
  ATLAS_RETURN_IF_ERROR(device_bytes(spec, o, &need), "sizing %s",
                        spec_name(spec));
  if (need <= spec->device_budget_bytes) return ATLAS_OK;
  char a[32], b[32];
  atlas_format_bytes(need, a, sizeof(a));
  atlas_format_bytes(spec->device_budget_bytes, b, sizeof(b));
  return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                           "%s needs %s (%llu bytes) but the device budget is "
                           "%s (%llu bytes); nothing was allocated",
                           spec_name(spec), a, (unsigned long long)need, b,
                           (unsigned long long)spec->device_budget_bytes);
}

// The model split over spec->tensor_parallel devices (tp_model.h), from
// the checkpoint and config open_checkpoint read (a directory, a buffer or
// a swap's snapshot).
static atlas_status open_split(const atlas_model_spec *spec,
                               const atlas_arch_load_options *lo,
                               const opened *src, atlas_model *m) {
  atlas_tp_options o;
  memset(&o, 0, sizeof(o));
  o.ranks = spec->tensor_parallel;
  o.backend = spec->backend;
  o.devices = spec->devices;
  o.load.max_seq = lo->max_seq;
  o.load.prefill_rows = lo->prefill_rows;
  o.load.kv_dtype = lo->kv_dtype;
  o.load.kv_dtype_auto = lo->kv_dtype_auto;
  o.fault_rank = spec->fault_rank;
  o.fault_kind = spec->fault_kind;
  o.fault_at = spec->fault_at;
  o.ignore_env_fault = spec->ignore_env_fault;
  ATLAS_RETURN_IF_ERROR(atlas_tp_model_open_checkpoint(
      src->ck, src->arch, src->config, &o, &m->tp));
  m->backend = atlas_tp_model_backend(m->tp, 0);
  return ATLAS_OK;
}

// A split model's unload, reported as one teardown: the ranks' counts
// added, their sweeps' sites one after another.
static atlas_status close_split(atlas_model *model,
                                atlas_teardown_report *out_report) {
  atlas_tp_unload_report r;
  atlas_status status = atlas_tp_model_unload(model->tp, &r);
  model->tp = NULL;
  if (out_report != NULL) {
    memset(out_report, 0, sizeof(*out_report));
    size_t sites = 0;
    for (int i = 0; i < r.ranks; ++i) {
      const atlas_teardown_report *t = &r.rank[i];
      out_report->released += t->released;
      out_report->failed += t->failed;
      out_report->sweep.count += t->sweep.count;
      out_report->sweep.bytes += t->sweep.bytes;
      out_report->sweep.unfreed_count += t->sweep.unfreed_count;
      out_report->sweep.unfreed_bytes += t->sweep.unfreed_bytes;
      out_report->sweep.refused_count += t->sweep.refused_count;
      out_report->sweep.refused_bytes += t->sweep.refused_bytes;
      if (t->sweep.sites != NULL) sites += strlen(t->sweep.sites) + 32;
    }
    if (sites > 0 && (out_report->sweep.sites = malloc(sites + 1)) != NULL) {
      size_t at = 0;
      out_report->sweep.sites[0] = '\0';
      for (int i = 0; i < r.ranks; ++i) {
        const char *part = r.rank[i].sweep.sites;
        if (part == NULL) continue;
        at += (size_t)snprintf(out_report->sweep.sites + at, sites + 1 - at,
                               "rank %d: %s", i, part);
      }
    }
  }
  atlas_tp_unload_report_free(&r);
  return status;
}

atlas_status atlas_model_open(const atlas_model_spec *spec,
                              atlas_model **out_model) {
  *out_model = NULL;
  atlas_model *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory opening %s", spec_name(spec));
  }
  m->spec = *spec;
  m->spec.adopt_checkpoint = NULL;  // adopted below; never reused
  m->spec.adopt_arch = NULL;
  m->spec.adopt_config = NULL;
  m->spec.adopt_eos = NULL;
  m->spec.after_teardown = NULL;
  m->spec.fail_restore = false;
  if (spec->dir != NULL) {
    m->dir = strdup(spec->dir);
    if (m->dir == NULL) {
      atlas_checkpoint_close(spec->adopt_checkpoint);
      free(m);
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "out of host memory opening %s", spec->dir);
    }
    m->spec.dir = m->dir;
  }
  if (spec->backend != NULL) {
    m->backend_name = strdup(spec->backend);
    if (m->backend_name == NULL) {
      atlas_checkpoint_close(spec->adopt_checkpoint);
      free(m->dir);
      free(m);
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "out of host memory opening %s",
                               spec_name(spec));
    }
    m->spec.backend = m->backend_name;
  }
  double t0 = now_ms();
  double t_backend = t0, t_load = t0, t_loaded = t0;
  opened o;
  atlas_arch_load_options lo = {
      spec->max_seq,      spec->progress, spec->progress_ctx, spec->uploader,
      spec->prefill_rows, spec->kv_dtype, spec->kv_dtype_auto};
  atlas_status status = open_checkpoint(spec, true, &spec->log, &o);
  if (status == ATLAS_OK) {
    m->arch = o.arch;
    m->eos = o.eos;
    m->generate_options =
        (atlas_arch_generate_options){.eos = m->eos.ids,
                                      .eos_count = m->eos.count,
                                      .ignore_eos = spec->ignore_eos};
    if (spec->device_budget_bytes != 0) status = check_budget(spec, &o);
  }
  bool split = spec->tensor_parallel > 1;
  if (status == ATLAS_OK && split) {
    t_backend = t_load = now_ms();
    status = open_split(spec, &lo, &o, m);
    t_loaded = now_ms();
  }
  if (status == ATLAS_OK && !split) {
    t_backend = now_ms();
    status = create_backend(spec, o.arch, &m->backend);
  }
  if (status == ATLAS_OK && !split) {
    t_load = now_ms();
    status = o.arch->load(m->backend, o.ck, o.config, &lo, &m->impl);
    t_loaded = now_ms();
  }
  if (status == ATLAS_OK) {
    // A file written while it was read may have given mixed bytes.
    status = atlas_checkpoint_check_unchanged(o.ck);
    if (status != ATLAS_OK) {
      status = atlas_status_join(
          atlas_status_annotate(status, "loading %s", spec_name(spec)),
          split ? atlas_tp_model_unload(m->tp, NULL)
                : o.arch->unload(m->impl, NULL));
      m->impl = NULL;
      m->tp = NULL;
      if (split) m->backend = NULL;  // went with the split model
    }
  }
  if (status != ATLAS_OK) {
    opened_close(&o);
    // The backend's destroy is the last resort for anything still on its
    // ledger; after a failed load there should be nothing.
    if (m->backend != NULL) {
      status = atlas_status_join(status, atlas_backend_destroy(m->backend));
    }
    free(m->dir);
    free(m->backend_name);
    free(m);
    return status;
  }
  // The weights now live on the backend; the checkpoint stays as their
  // source, the config as the row parsed it.
  m->ck = o.ck;
  m->config = o.config;
  atlas_log(&spec->log, ATLAS_LOG_DEBUG,
            "open %s: %.1f ms: checkpoint and config %.1f ms, backend %.1f ms, "
            "load %.1f ms, file check %.1f ms",
            spec_name(spec), now_ms() - t0, t_backend - t0, t_load - t_backend,
            t_loaded - t_load, now_ms() - t_loaded);
  *out_model = m;
  return ATLAS_OK;
}

atlas_status atlas_model_close(atlas_model *model,
                               atlas_teardown_report *out_report) {
  if (model == NULL) return ATLAS_OK;
  atlas_status status = ATLAS_OK;
  if (model->attachment != NULL) {
    status = model->release_attachment(model->attachment);
    model->attachment = NULL;
  }
  if (model->tp != NULL) {
    status = atlas_status_join(status, close_split(model, out_report));
  } else {
    status =
        atlas_status_join(status, model->arch->unload(model->impl, out_report));
    status = atlas_status_join(status, atlas_backend_destroy(model->backend));
  }
  atlas_checkpoint_close(model->ck);
  free(model->config);
  free(model->dir);
  free(model->backend_name);
  free(model);
  return status;
}

atlas_status atlas_model_generate(atlas_model *model, const uint32_t *prompt,
                                  size_t prompt_len, size_t steps,
                                  uint32_t *out_tokens, size_t *out_count,
                                  atlas_logits_sink sink, void *sink_ctx) {
  return atlas_model_generate_stream(model, prompt, prompt_len, steps, NULL,
                                     NULL, out_tokens, out_count, sink,
                                     sink_ctx);
}

atlas_status atlas_model_generate_stream(
    atlas_model *model, const uint32_t *prompt, size_t prompt_len, size_t steps,
    bool (*on_token)(void *ctx, uint32_t token), void *token_ctx,
    uint32_t *out_tokens, size_t *out_count, atlas_logits_sink sink,
    void *sink_ctx) {
  // The options live in the model (they outlive the call through the row);
  // the token callback is this call's only.
  model->generate_options.ignore_eos = model->spec.ignore_eos;
  model->generate_options.on_token = on_token;
  model->generate_options.token_ctx = token_ctx;
  atlas_status status =
      model->tp != NULL
          ? atlas_tp_model_generate_ex(model->tp, prompt, prompt_len, steps,
                                       &model->generate_options, out_tokens,
                                       out_count, sink, sink_ctx)
          : model->arch->generate(model->impl, prompt, prompt_len, steps,
                                  &model->generate_options, out_tokens,
                                  out_count, sink, sink_ctx);
  model->generate_options.on_token = NULL;
  model->generate_options.token_ctx = NULL;
  return status;
}

atlas_status atlas_model_generate_hooked(
    atlas_model *model, const uint32_t *prompt, size_t prompt_len, size_t steps,
    const atlas_model_generate_hooks *hooks, uint32_t *out_tokens,
    size_t *out_count) {
  // As above: the options live in the model; the hooks are this call's only.
  atlas_arch_generate_options *o = &model->generate_options;
  o->ignore_eos = hooks->ignore_eos;
  o->on_token = hooks->on_token;
  o->token_ctx = hooks->token_ctx;
  o->choose = hooks->choose;
  o->choose_ctx = hooks->choose_ctx;
  atlas_status status =
      model->tp != NULL
          ? atlas_tp_model_generate_ex(model->tp, prompt, prompt_len, steps, o,
                                       out_tokens, out_count, hooks->sink,
                                       hooks->sink_ctx)
          : model->arch->generate(model->impl, prompt, prompt_len, steps, o,
                                  out_tokens, out_count, hooks->sink,
                                  hooks->sink_ctx);
  o->ignore_eos = model->spec.ignore_eos;
  o->on_token = NULL;
  o->token_ctx = NULL;
  o->choose = NULL;
  o->choose_ctx = NULL;
  return status;
}

atlas_backend *atlas_model_backend(atlas_model *model) {
  return model->backend;
}
const atlas_checkpoint *atlas_model_checkpoint(const atlas_model *model) {
  return model->ck;
}
const atlas_arch *atlas_model_arch(const atlas_model *model) {
  return model->arch;
}
const void *atlas_model_config(const atlas_model *model) {
  return model->config;
}
const atlas_model_spec *atlas_model_spec_of(const atlas_model *model) {
  return &model->spec;
}
const char *atlas_model_name(const atlas_model *model) {
  return spec_name(&model->spec);
}
const char *atlas_model_arch_name(const atlas_model *model) {
  return model->arch->name;
}
int64_t atlas_model_vocab_size(const atlas_model *model) {
  if (model->tp != NULL) return atlas_tp_model_config(model->tp)->vocab_size;
  return model->arch->vocab_size(model->impl);
}
int64_t atlas_model_max_seq(const atlas_model *model) {
  if (model->tp != NULL) return atlas_tp_model_max_seq(model->tp);
  return model->arch->max_seq(model->impl);
}
int atlas_model_tensor_parallel(const atlas_model *model) {
  return model->tp != NULL ? atlas_tp_model_ranks(model->tp) : 1;
}
atlas_backend *atlas_model_rank_backend(atlas_model *model, int rank) {
  if (model->tp != NULL) return atlas_tp_model_backend(model->tp, rank);
  return rank == 0 ? model->backend : NULL;
}
const atlas_eos *atlas_model_eos(const atlas_model *model) {
  return &model->eos;
}
atlas_arch_model *atlas_model_impl(atlas_model *model) { return model->impl; }

bool atlas_model_has_batch(const atlas_model *model) {
  return model->tp != NULL || model->arch->forward_batch != NULL;
}
void atlas_model_kv_shape(atlas_model *model, atlas_arch_kv_shape *out) {
  if (model->tp != NULL) {
    atlas_tp_model_kv_shape(model->tp, out);
  } else {
    model->arch->kv_shape(model->impl, out);
  }
}
void atlas_model_batch_limits(atlas_model *model, uint32_t block_tokens,
                              atlas_arch_batch_limits *out) {
  if (model->tp != NULL) {
    atlas_tp_model_batch_limits(model->tp, block_tokens, out);
  } else {
    model->arch->batch_limits(model->impl, block_tokens, out);
  }
}
atlas_status atlas_model_forward_batch(atlas_model *model,
                                       const atlas_arch_batch *b,
                                       const atlas_arch_kv_pages *pages,
                                       float *out_logits, uint32_t *out_ids) {
  if (model->tp != NULL) {
    return atlas_tp_model_forward_batch(model->tp, b, pages, out_logits,
                                        out_ids);
  }
  atlas_arch_batch one = *b;
  one.kv = &pages[0];
  // The status never points into `one` (cppcheck takes it for a pointer that
  // may).
  // cppcheck-suppress returnDanglingLifetime
  return model->arch->forward_batch(model->impl, &one, out_logits, out_ids);
}

void atlas_model_attach(atlas_model *model, void *attachment,
                        atlas_status (*release)(void *attachment)) {
  model->attachment = attachment;
  model->release_attachment = release;
}

void *atlas_model_attachment(const atlas_model *model) {
  return model->attachment;
}
