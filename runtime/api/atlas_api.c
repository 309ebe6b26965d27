// The public C API over the serving layer (runtime/model): options structs
// with a size field, opaque handles (reports: report_api.c).
#define _POSIX_C_SOURCE 200809L  // strcasecmp
#include "atlas/atlas.h"
#include "atlas/atlas_testing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "atlas/runtime/api/struct_size.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/generate/gen_state.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/model/swap.h"
// atlas.h repeats its tokenizer declarations: including both checks they agree.
#include "atlas/runtime/chat/chat_template.h"
#include "atlas/runtime/sampling/sampler.h"
#include "atlas/runtime/sampling/stop.h"
#include "atlas/runtime/text/tokenizer.h"

// The public structs' layouts, for atlas_struct_size_check: every field in
// order, and how many the first version of atlas.h had. Appending a field
// means appending it here too (tests/hostile/struct_size_test.cc checks that
// the last field ends the struct).
// sizeof of a pointer member (backend, tokenizer, ...) is the field's size
// here, not a mistaken sizeof of what it points to.
// NOLINTBEGIN(bugprone-sizeof-expression)
#define F_(type, member) ATLAS_STRUCT_FIELD(type, member)
static const atlas_struct_field kOpenFields[] = {
    F_(atlas_open_options, struct_size),
    F_(atlas_open_options, backend),
    F_(atlas_open_options, device),
    F_(atlas_open_options, device_budget_bytes),
    F_(atlas_open_options, max_seq),
    F_(atlas_open_options, log),
    F_(atlas_open_options, progress),
    F_(atlas_open_options, progress_ctx),  // the first version ends here
    F_(atlas_open_options, context_needed),
    F_(atlas_open_options, kv_cache_type),
    F_(atlas_open_options, vocab_needed),
    F_(atlas_open_options, tensor_parallel),
    F_(atlas_open_options, devices),
};
static const atlas_struct_field kGenerateFields[] = {
    F_(atlas_generate_options, struct_size),
    F_(atlas_generate_options, max_new_tokens),
    F_(atlas_generate_options, ignore_eos),
    F_(atlas_generate_options, on_logits),
    F_(atlas_generate_options, on_token),
    F_(atlas_generate_options, ctx),  // the first version ends here
    F_(atlas_generate_options, temperature),
    F_(atlas_generate_options, top_k),
    F_(atlas_generate_options, top_p),
    F_(atlas_generate_options, min_p),
    F_(atlas_generate_options, repetition_penalty),
    F_(atlas_generate_options, seed),
    F_(atlas_generate_options, tokenizer),
    F_(atlas_generate_options, on_text),
    F_(atlas_generate_options, stop_strings),
    F_(atlas_generate_options, stop_count),
};
static const atlas_struct_field kKvOptionsFields[] = {
    F_(atlas_kv_options, struct_size),
    F_(atlas_kv_options, budget_bytes),
    F_(atlas_kv_options, block_tokens),
    F_(atlas_kv_options, prefix_cache),
};
static const atlas_struct_field kKvStatsFields[] = {
    F_(atlas_kv_stats, struct_size), F_(atlas_kv_stats, blocks_total),
    F_(atlas_kv_stats, blocks_used), F_(atlas_kv_stats, blocks_cached),
    F_(atlas_kv_stats, blocks_free), F_(atlas_kv_stats, block_tokens),
    F_(atlas_kv_stats, bytes),       F_(atlas_kv_stats, sequences),
};
static const atlas_struct_field kInfoFields[] = {
    F_(atlas_model_info, struct_size),  F_(atlas_model_info, name),
    F_(atlas_model_info, architecture), F_(atlas_model_info, backend),
    F_(atlas_model_info, vocab_size),   F_(atlas_model_info, max_seq),
    F_(atlas_model_info, live_bytes),
};
#undef F_
// NOLINTEND(bugprone-sizeof-expression)
#define LAYOUT_(type, fields, first)                                \
  {                                                                 \
#type, (fields), sizeof(fields) / sizeof((fields)[0]), (first), \
        sizeof(type)                                                \
  }
static const atlas_struct_layout kOpenLayout =
    LAYOUT_(atlas_open_options, kOpenFields, 8);
static const atlas_struct_layout kGenerateLayout =
    LAYOUT_(atlas_generate_options, kGenerateFields, 6);
static const atlas_struct_layout kInfoLayout =
    LAYOUT_(atlas_model_info, kInfoFields, 7);
static const atlas_struct_layout kKvOptionsLayout =
    LAYOUT_(atlas_kv_options, kKvOptionsFields, 4);
static const atlas_struct_layout kKvStatsLayout =
    LAYOUT_(atlas_kv_stats, kKvStatsFields, 8);
#undef LAYOUT_

// An options struct from a caller built against an older header is shorter:
// copy what it has over the defaults. A struct_size no version of the struct
// has (0: the caller skipped the init function; torn; too small; too large
// with fields set this build does not know) is refused.
#define ATLAS_COPY_SIZED_(dst, src, layout)                                  \
  do {                                                                       \
    size_t n_ = 0;                                                           \
    ATLAS_RETURN_IF_ERROR(                                                   \
        atlas_struct_size_check(&(layout), (src)->struct_size, (src), &n_)); \
    memcpy((dst), (src), n_);                                                \
    (dst)->struct_size = sizeof(*(dst));                                     \
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
  options->top_p = 1.0f;
  options->repetition_penalty = 1.0f;
}

const char *atlas_backend_names(void) { return "cuda,host,auto"; }

void atlas_free(void *ptr) { free(ptr); }

static atlas_status spec_from(const atlas_open_options *in,
                              atlas_model_spec *spec) {
  atlas_open_options o;
  atlas_open_options_init(&o);
  if (in != NULL) ATLAS_COPY_SIZED_(&o, in, kOpenLayout);
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(o.backend),
                        "atlas_open_options.backend");
  if (o.tensor_parallel < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open_options.tensor_parallel (%d) is "
                             "negative",
                             o.tensor_parallel);
  }
  if (o.max_seq < 0 || o.context_needed < 0 || o.vocab_needed < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open_options.max_seq (%lld), "
                             "context_needed (%lld) or vocab_needed (%lld) "
                             "is negative",
                             (long long)o.max_seq, (long long)o.context_needed,
                             (long long)o.vocab_needed);
  }
  atlas_dtype kv = ATLAS_DTYPE_F32;
  bool kv_auto =
      o.kv_cache_type == NULL || strcasecmp(o.kv_cache_type, "auto") == 0;
  if (!kv_auto && !atlas_dtype_from_name(o.kv_cache_type, &kv)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_open_options.kv_cache_type \"%.32s\" is "
                             "none of auto, f32, f16, bf16",
                             o.kv_cache_type);
  }
  // Every other field of the spec starts at zero.
  *spec = (atlas_model_spec){.kv_dtype = kv,
                             .kv_dtype_auto = kv_auto,
                             .backend = o.backend,
                             .device = o.device,
                             .device_budget_bytes = o.device_budget_bytes,
                             .max_seq = o.max_seq,
                             .context_needed = o.context_needed,
                             .vocab_needed = o.vocab_needed,
                             .log = o.log,
                             .progress = o.progress,
                             .progress_ctx = o.progress_ctx,
                             .tensor_parallel = o.tensor_parallel,
                             .devices = o.devices};
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

atlas_status atlas_testing_open_unfaulted(const char *dir,
                                          const atlas_open_options *options,
                                          atlas_model **out_model) {
  *out_model = NULL;
  if (dir == NULL || dir[0] == '\0') {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_testing_open_unfaulted: no checkpoint "
                             "directory given");
  }
  atlas_model_spec spec;
  ATLAS_RETURN_IF_ERROR(spec_from(options, &spec));
  spec.dir = dir;
  spec.ignore_env_fault = true;
  return atlas_model_open(&spec, out_model);
}

// The model spec keeps a pointer to its embedded checkpoint: one that lives
// as long as the model, freed with it (see atlas_close).
typedef struct embedded_holder {
  atlas_embedded_checkpoint checkpoint;
  char name[];
} embedded_holder;

static atlas_status holder_make(const char *name, const char *config_json,
                                size_t config_size, const void *safetensors,
                                size_t safetensors_size,
                                embedded_holder **out) {
  *out = NULL;
  if (name == NULL || config_json == NULL || safetensors == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "an in-memory checkpoint needs a name, a config "
                             "and weights");
  }
  size_t len = strlen(name);
  embedded_holder *h = malloc(sizeof(*h) + len + 1);
  if (h == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "in-memory checkpoint %s: out of host memory",
                             name);
  }
  memcpy(h->name, name, len + 1);
  h->checkpoint = (atlas_embedded_checkpoint){h->name, config_json, config_size,
                                              safetensors, safetensors_size};
  *out = h;
  return ATLAS_OK;
}

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
  embedded_holder *h = NULL;
  ATLAS_RETURN_IF_ERROR(holder_make(name, config_json, config_size, safetensors,
                                    safetensors_size, &h),
                        "atlas_open_memory");
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
    out_report->leaked_bytes = report.sweep.bytes - report.sweep.refused_bytes;
    out_report->leaked_allocations =
        report.sweep.count - report.sweep.refused_count;
    out_report->refused_bytes = report.sweep.refused_bytes;
    out_report->refused_allocations = report.sweep.refused_count;
    out_report->released = report.released;
    out_report->failed = report.failed;
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
  size_t size = 0;
  ATLAS_RETURN_IF_ERROR(atlas_struct_size_check(
      &kInfoLayout, out_info->struct_size, NULL, &size));
  atlas_model_info info;
  memset(&info, 0, sizeof(info));
  atlas_model *m = (atlas_model *)model;
  info.struct_size = size < sizeof(info) ? size : sizeof(info);
  info.name = atlas_model_name(model);
  info.architecture = atlas_model_arch_name(model);
  info.backend = atlas_backend_name(atlas_model_backend(m));
  info.vocab_size = (size_t)atlas_model_vocab_size(model);
  info.max_seq = atlas_model_max_seq(model);
  // Every device's, for a model split over several.
  for (int r = 0; r < atlas_model_tensor_parallel(model); ++r) {
    info.live_bytes += atlas_backend_live_bytes(atlas_model_rank_backend(m, r));
  }
  memcpy(out_info, &info, info.struct_size);
  return ATLAS_OK;
}

// The state of one atlas_generate: the caller's options and the sequence's
// decisions (runtime/generate/gen_state.h: sampling, EOS, stop strings,
// text), fed by the model's one-sequence loop.
typedef struct generate_state {
  const atlas_generate_options *options;
  atlas_gen_state g;
  bool stopped;        // on_token, on_text or a stop ended it
  atlas_status error;  // from a callback that can only return bool
} generate_state;

static atlas_status bridge_logits(void *ctx, const float *logits,
                                  size_t vocab_size) {
  const generate_state *g = ctx;
  return g->options->on_logits(g->options->ctx, logits, vocab_size);
}

static atlas_status choose_token(void *ctx, const float *logits,
                                 size_t vocab_size, uint32_t *out_token) {
  generate_state *g = ctx;
  return atlas_gen_state_choose(&g->g, logits, vocab_size, out_token, NULL);
}

static bool emit_text(generate_state *g, const char *text, size_t len) {
  if (len == 0 || g->options->on_text == NULL) return true;
  return g->options->on_text(g->options->ctx, text, len);
}

static bool bridge_token(void *ctx, uint32_t token) {
  generate_state *g = ctx;
  const char *text = "";
  size_t len = 0;
  g->error = atlas_gen_state_accept(&g->g, token, &text, &len);
  if (g->error != ATLAS_OK) return false;
  if (!emit_text(g, text, len) || g->g.finish == ATLAS_GEN_EOS ||
      g->g.finish == ATLAS_GEN_STRING) {
    g->stopped = true;
  }
  // The token is in out_tokens either way: on_token sees it too.
  const atlas_generate_options *o = g->options;
  bool go_on = o->on_token == NULL || o->on_token(o->ctx, token);
  return go_on && g->g.finish == ATLAS_GEN_RUNNING && !g->stopped;
}

static atlas_status generate_state_init(generate_state *g, atlas_model *model,
                                        const atlas_generate_options *o,
                                        const uint32_t *prompt,
                                        size_t prompt_len) {
  memset(g, 0, sizeof(*g));
  g->options = o;
  const atlas_eos *eos = atlas_model_eos(model);
  // The sampling comes whole from the options (atlas.h states their
  // defaults); at least one token, so that max_new_tokens 0 runs as before
  // (no token).
  atlas_gen_config c = {
      .max_tokens = o->max_new_tokens > 0 ? o->max_new_tokens : 1,
      .sampling = {.temperature = o->temperature,
                   .top_k = o->top_k,
                   .top_p = o->top_p,
                   .min_p = o->min_p,
                   .repetition_penalty = o->repetition_penalty,
                   .seed = o->seed},
      .eos = eos->ids,
      .eos_count = eos->count,
      .ignore_eos = o->ignore_eos,
      .tokenizer = o->tokenizer,
      .stop_strings = (const char *const *)o->stop_strings,
      .stop_count = o->stop_count};
  return atlas_status_annotate(
      atlas_gen_state_init(&g->g, &c, prompt, prompt_len,
                           (size_t)atlas_model_vocab_size(model)),
      "atlas_generate_options");
}

static void generate_state_deinit(generate_state *g) {
  atlas_gen_state_deinit(&g->g);
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
  if (options != NULL) ATLAS_COPY_SIZED_(&o, options, kGenerateLayout);
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
  // The positions first: the sampler's history is sized by them, and a
  // count near SIZE_MAX would wrap its size.
  int64_t max_seq = atlas_model_max_seq(model);
  size_t later = o.max_new_tokens > 0 ? o.max_new_tokens - 1 : 0;
  if (prompt_len > (uint64_t)max_seq ||
      later > (uint64_t)max_seq - prompt_len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%zu prompt tokens and max_new_tokens %zu need "
                             "more positions than the KV cache of %s holds "
                             "(%lld)",
                             prompt_len, o.max_new_tokens,
                             atlas_model_name(model), (long long)max_seq);
  }
  generate_state g;
  atlas_status s = generate_state_init(&g, model, &o, prompt, prompt_len);
  if (s != ATLAS_OK) {
    generate_state_deinit(&g);
    return s;
  }
  atlas_model_generate_hooks hooks;
  memset(&hooks, 0, sizeof(hooks));
  // The generation state decides every end but max_new_tokens (EOS, stop
  // strings, the callbacks); the loop only runs.
  hooks.ignore_eos = true;
  hooks.on_token = bridge_token;
  hooks.token_ctx = &g;
  if (o.on_logits != NULL) {
    hooks.sink = bridge_logits;
    hooks.sink_ctx = &g;
  }
  if (!atlas_gen_state_greedy(&g.g)) {
    hooks.choose = choose_token;
    hooks.choose_ctx = &g;
  }
  size_t count = 0;
  s = atlas_model_generate_hooked(model, prompt, prompt_len, o.max_new_tokens,
                                  &hooks, out_tokens, &count);
  s = atlas_status_join(s, g.error);
  // Text held back as a possible stop string start is the user's after all
  // when generation ended some other way (max_new_tokens, a callback).
  if (s == ATLAS_OK && !g.stopped && g.g.finish == ATLAS_GEN_RUNNING &&
      count > 0) {
    const char *text = "";
    size_t len = 0;
    s = atlas_gen_state_end(&g.g, ATLAS_GEN_LENGTH, &text, &len);
    if (s == ATLAS_OK) emit_text(&g, text, len);
  }
  generate_state_deinit(&g);
  if (out_count != NULL) *out_count = count;
  return s;
}

static const atlas_struct_field kChatLimitsFields[] = {
    ATLAS_STRUCT_FIELD(atlas_chat_limits, struct_size),
    ATLAS_STRUCT_FIELD(atlas_chat_limits, max_steps),
    ATLAS_STRUCT_FIELD(atlas_chat_limits, max_output_bytes),
    ATLAS_STRUCT_FIELD(atlas_chat_limits, max_string_bytes),
    ATLAS_STRUCT_FIELD(atlas_chat_limits, max_depth),
};
static const atlas_struct_layout kChatLimitsLayout = {
    "atlas_chat_limits", kChatLimitsFields,
    sizeof(kChatLimitsFields) / sizeof(kChatLimitsFields[0]), 5,
    sizeof(atlas_chat_limits)};

const atlas_struct_layout *atlas_api_struct_layout(const char *name) {
  const atlas_struct_layout *all[] = {&kOpenLayout,
                                      &kGenerateLayout,
                                      &atlas_report_options_layout,
                                      &kInfoLayout,
                                      &kChatLimitsLayout,
                                      &kKvOptionsLayout,
                                      &kKvStatsLayout,
                                      &atlas_tokenizer_limits_layout};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    if (strcmp(all[i]->name, name) == 0) return all[i];
  }
  return NULL;
}

void atlas_chat_limits_init(atlas_chat_limits *limits) {
  memset(limits, 0, sizeof(*limits));
  limits->struct_size = sizeof(*limits);
  atlas_chat_budget b = atlas_chat_budget_default();
  limits->max_steps = b.max_steps;
  limits->max_output_bytes = b.max_output;
  limits->max_string_bytes = b.max_string;
  limits->max_depth = (uint32_t)b.max_depth;
}

atlas_status atlas_chat_template_set_limits(atlas_chat_template *tmpl,
                                            const atlas_chat_limits *limits) {
  if (tmpl == NULL || limits == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_template_set_limits: NULL template or "
                             "limits");
  }
  atlas_chat_limits l;
  atlas_chat_limits_init(&l);
  ATLAS_COPY_SIZED_(&l, limits, kChatLimitsLayout);
  if (l.max_output_bytes > SIZE_MAX || l.max_string_bytes > SIZE_MAX ||
      l.max_depth > INT32_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_chat_limits: a limit is out of range");
  }
  atlas_chat_budget b = {l.max_steps, (size_t)l.max_output_bytes,
                         (size_t)l.max_string_bytes, (int)l.max_depth};
  return atlas_chat_template_set_budget(tmpl, &b);
}

// What an out_info says before anything happened: zeroed, and REFUSED (the
// zero outcome is SWAPPED).
static void swap_info_refused(atlas_swap_info *out_info) {
  if (out_info == NULL) return;
  memset(out_info, 0, sizeof(*out_info));
  out_info->outcome = ATLAS_SWAP_OUTCOME_REFUSED;
}

// One swap for atlas_swap, atlas_swap_memory and atlas_testing_swap:
// `holder` (may be NULL) is the new in-memory checkpoint, owned from here on.
// What a swap came to, from the swap's own report and what serves now.
static atlas_swap_outcome swap_outcome(const atlas_swap_report *r,
                                       const atlas_model *now) {
  if (r->swapped) return ATLAS_SWAP_OUTCOME_SWAPPED;
  if (r->restored) return ATLAS_SWAP_OUTCOME_RESTORED;
  if (now == NULL) return ATLAS_SWAP_OUTCOME_LOST;
  if (r->path == ATLAS_SWAP_SIDE_BY_SIDE) return ATLAS_SWAP_OUTCOME_KEPT;
  return ATLAS_SWAP_OUTCOME_REFUSED;
}

static atlas_status swap_impl(atlas_model **model, const char *dir,
                              embedded_holder *holder,
                              const atlas_open_options *options,
                              atlas_fault_kind fault_kind,
                              uint64_t fault_at,  // 0: no fault
                              bool fail_restore,  // tests: LOST on purpose
                              atlas_swap_info *out_info) {
  swap_info_refused(out_info);
  if (model == NULL || *model == NULL || (dir == NULL && holder == NULL)) {
    free(holder);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_swap: NULL model or directory");
  }
  if (atlas_model_attachment(*model) != NULL) {
    free(holder);
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "atlas_swap: %s has a KV pool and sequences "
                             "(atlas_kv_close first)",
                             atlas_model_name(*model));
  }
  atlas_model_spec next;
  if (options != NULL) {
    atlas_status s = spec_from(options, &next);
    if (s != ATLAS_OK) {
      free(holder);
      return s;
    }
  } else {
    next = *atlas_model_spec_of(*model);
    next.fault_at = 0;
    next.fail_module_load_at = 0;
    // A model opened unfaulted passes none of that on: ATLAS_FAULT is
    // meant for the swap.
    next.ignore_env_fault = false;
  }
  next.dir = holder != NULL ? NULL : dir;
  next.embedded = holder != NULL ? &holder->checkpoint : NULL;
  next.fault_kind = fault_kind;
  next.fault_at = fault_at;
  next.fail_restore = fail_restore;
  embedded_holder *old_holder = holder_of(*model);
  atlas_swap_report r;
  memset(&r, 0, sizeof(r));
  atlas_status s = atlas_model_swap(model, &next, &r);
  if (r.swapped) {
    free(old_holder);  // the old model is gone
  } else {
    free(holder);  // the new one never served
    // LOST: the old one is gone too (a restore keeps serving from it).
    if (*model == NULL) free(old_holder);
  }
  if (out_info != NULL) {
    *out_info =
        (atlas_swap_info){.outcome = swap_outcome(&r, *model),
                          .side_by_side = r.path == ATLAS_SWAP_SIDE_BY_SIDE,
                          .needed_bytes = r.needed_bytes,
                          .free_bytes = r.free_bytes,
                          .releasable_bytes = r.releasable_bytes,
                          .teardown_ms = r.teardown_ms,
                          .load_ms = r.load_ms,
                          .total_ms = r.total_ms};
  }
  return s;
}

atlas_status atlas_swap(atlas_model **model, const char *dir,
                        const atlas_open_options *options,
                        atlas_swap_info *out_info) {
  return swap_impl(model, dir, NULL, options, ATLAS_FAULT_ALLOC, 0, false,
                   out_info);
}

atlas_status atlas_testing_swap(atlas_model **model, const char *dir,
                                const struct atlas_open_options *options,
                                atlas_testing_fault fault, uint64_t at,
                                struct atlas_swap_info *out_info) {
  if (fault != ATLAS_TESTING_FAULT_NONE && fault != ATLAS_TESTING_FAULT_ALLOC &&
      fault != ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE) {
    swap_info_refused(out_info);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_testing_swap: unknown fault kind %d",
                             (int)fault);
  }
  return swap_impl(model, dir, NULL, options, ATLAS_FAULT_ALLOC,
                   fault == ATLAS_TESTING_FAULT_NONE ? 0 : at,
                   fault == ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE, out_info);
}

atlas_status atlas_swap_memory(atlas_model **model, const char *name,
                               const char *config_json, size_t config_size,
                               const void *safetensors, size_t safetensors_size,
                               const atlas_open_options *options,
                               atlas_swap_info *out_info) {
  swap_info_refused(out_info);
  embedded_holder *h = NULL;
  ATLAS_RETURN_IF_ERROR(holder_make(name, config_json, config_size, safetensors,
                                    safetensors_size, &h),
                        "atlas_swap_memory");
  return swap_impl(model, NULL, h, options, ATLAS_FAULT_ALLOC, 0, false,
                   out_info);
}
