// Loading and tearing down a Llama model.
//
// The model is built as teardown resources in build order: weights, buffers
// (one allocation carved into the KV cache, scratch and prefill scratch),
// kv_cache, scratch, prefill_scratch, kernel registry, decode_ahead, decode
// graph. Each resource is registered before it is filled, so a load that
// fails part-way releases exactly what it allocated by running the teardown
// built so far.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/arch/decoder/decoder.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/arch/decoder/decoder_load.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/arch/weight_check.h"
#include "atlas/runtime/base/checked_math.h"
#include "atlas/runtime/base/log.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/safetensors_convert.h"

// ---- resources -------------------------------------------------------------

static atlas_status release_weights(void *p) {
  atlas_decoder_weights *w = p;
  atlas_status status = ATLAS_OK;
  if (w->arena != NULL) status = atlas_backend_free(w->backend, w->arena);
  for (size_t i = 0; i < w->quant_count; ++i) {
    status = atlas_status_join(
        status, atlas_quant_linear_free(w->backend, &w->quant[i]));
  }
  free(w->quant);
  free(w->layers);
  free(w);
  return status;
}

// The KV cache and the scratch are carved from the model's buffers
// (released by "buffers", after these): only their host structs go here.
static atlas_status release_host_struct(void *p) {
  free(p);
  return ATLAS_OK;
}

static atlas_status release_kernels(void *p) {
  atlas_decoder_kernels *k = p;
  atlas_status status = atlas_kernel_registry_release(k->registry);
  free(k);
  return status;
}

static atlas_status release_graph(void *p) {
  atlas_decoder_graph *g = p;
  atlas_status status = ATLAS_OK;
  if (g->graph != NULL)
    status = atlas_backend_destroy_graph(g->backend, g->graph);
  free(g);
  return status;
}

static atlas_status release_ahead(void *p) {
  atlas_decoder_ahead *a = p;
  atlas_status status = ATLAS_OK;
  for (int i = 0; i < ATLAS_DECODER_AHEAD; ++i) {
    if (a->done[i] != NULL) {
      status = atlas_status_join(
          status, atlas_backend_event_destroy(a->backend, a->done[i]));
    }
  }
  if (a->ring != NULL) {
    status = atlas_status_join(status,
                               atlas_backend_pinned_free(a->backend, a->ring));
  }
  free(a);
  return status;
}

static atlas_status sweep_backend(void *ctx, atlas_sweep_result *out) {
  return atlas_backend_sweep_unreleased(ctx, out);
}

// ---- sizes -----------------------------------------------------------------

// KV cache and scratch bytes with every multiply and add checked: a crafted
// config must not wrap the figure the swap budgets with (2·L·seq·kv·4 can
// reach 2^64). Once these pass, the unchecked sizes below are bounded by
// them.
static atlas_status checked_sizes(const atlas_decoder_config *c,
                                  int64_t max_seq, uint64_t *out_kv,
                                  uint64_t *out_scratch) {
  const int64_t kv[] = {
      2, c->num_hidden_layers, max_seq, c->num_key_value_heads, c->head_dim, 4};
  const int64_t q_dim[] = {c->num_attention_heads, c->head_dim};
  const int64_t kv_dim[] = {2, c->num_key_value_heads, c->head_dim};
  const int64_t att[] = {c->num_attention_heads, max_seq};
  uint64_t kvb = 0, q = 0, a = 0, s = 0, kv2 = 0;
  bool ok = atlas_product_u64(kv, 6, &kvb) && atlas_product_u64(q_dim, 2, &q) &&
            atlas_product_u64(kv_dim, 3, &kv2) &&
            atlas_product_u64(att, 2, &a) && c->hidden_size >= 0 &&
            c->intermediate_size >= 0 && c->vocab_size >= 0;
  if (ok) {
    s = (uint64_t)c->hidden_size;
    ok = atlas_mul_u64(&s, 3) && atlas_add_u64(&s, q);
  }
  if (ok) {
    uint64_t inter = (uint64_t)c->intermediate_size;
    ok = atlas_mul_u64(&inter, 2) && atlas_add_u64(&s, inter) &&
         atlas_add_u64(&s, a) && atlas_add_u64(&s, (uint64_t)c->vocab_size) &&
         c->head_dim >= 0 && atlas_add_u64(&s, (uint64_t)c->head_dim / 2) &&
         // this step's key and value, its token/position and argmax words
         atlas_add_u64(&s, kv2) && atlas_add_u64(&s, 8) && atlas_mul_u64(&s, 4);
  }
  // Norms: hidden * (2 * layers + 1) floats.
  uint64_t norms =
      (uint64_t)(c->num_hidden_layers < 0 ? 0 : c->num_hidden_layers);
  ok = ok && atlas_mul_u64(&norms, 2) && atlas_add_u64(&norms, 1) &&
       atlas_mul_u64(&norms, (uint64_t)c->hidden_size) &&
       atlas_mul_u64(&norms, 4);
  uint64_t total = kvb;
  ok = ok && atlas_add_u64(&total, s) && atlas_add_u64(&total, norms) &&
       total <= (uint64_t)SIZE_MAX;
  if (!ok) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "the config's sizes overflow 64 bits when multiplied out (layers "
        "%" PRId64 " x positions %" PRId64 " x kv heads %" PRId64
        " x head_dim %" PRId64 ", hidden %" PRId64 ", intermediate %" PRId64
        ", vocab %" PRId64 ")",
        c->num_hidden_layers, max_seq, c->num_key_value_heads, c->head_dim,
        c->hidden_size, c->intermediate_size, c->vocab_size);
  }
  *out_kv = kvb;
  *out_scratch = s;
  return ATLAS_OK;
}

static uint64_t kv_bytes(const atlas_decoder_config *c, int64_t max_seq) {
  return 2ull * (uint64_t)c->num_hidden_layers * (uint64_t)max_seq *
         (uint64_t)(c->num_key_value_heads * c->head_dim) * 4u;
}

// A requested length is honoured even past max_position_embeddings, as
// transformers does (dynamic RoPE exists for exactly that); the default is
// min(context, 2048).
static int64_t resolve_max_seq(const atlas_decoder_config *c,
                               int64_t requested) {
  int64_t limit = atlas_decoder_context(c, NULL);
  if (requested > 0) return requested;
  return limit < 2048 ? limit : 2048;
}

// model_type llama's sliding_window bounds every length: past it
// transformers' generate (its cache keeps the last sliding_window - 1 keys)
// and its forward (every position) disagree, and Atlas attends to all.
static atlas_status check_max_seq(const atlas_decoder_config *c,
                                  int64_t requested, const char *where) {
  if (c->context_window <= 0 || requested <= c->context_window) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "%s: a KV cache of %lld positions is past config.json \"sliding_window\" "
      "%lld: model_type llama attends to every position (as transformers' "
      "LlamaForCausalLM does in one forward), but transformers' generate "
      "keeps only the last sliding_window - 1 keys, so past the window the "
      "two disagree; Atlas runs such a model up to %lld positions",
      where, (long long)requested, (long long)c->context_window,
      (long long)c->context_window);
}

// ---- KV cache and scratch ----------------------------------------------------

// Both take their pieces from the model's buffers (decoder_buffers.h): in the
// sizing pass they only count, in the carving pass they get addresses.
static atlas_status take_kv(atlas_decoder_kv_cache *kv,
                            atlas_decoder_buffers *b,
                            const atlas_decoder_config *c, int64_t max_seq) {
  // kv_bytes counts 4-byte elements (the swap budgets for the largest type).
  size_t half =
      (size_t)(kv_bytes(c, max_seq) / 2 / 4 * atlas_dtype_size(kv->dtype));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, half, &kv->keys));
  return atlas_decoder_buffers_take(b, half, &kv->values);
}

static atlas_status take_scratch(atlas_decoder_scratch *s,
                                 atlas_decoder_buffers *b,
                                 const atlas_decoder_config *c,
                                 int64_t max_seq) {
  size_t f = sizeof(float);
  size_t hidden = (size_t)c->hidden_size * f;
  size_t q_dim = (size_t)(c->num_attention_heads * c->head_dim) * f;
  size_t inter = (size_t)c->intermediate_size * f;
  // xb and xb2 hold either a hidden vector or an attention output.
  size_t wide = hidden > q_dim ? hidden : q_dim;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, hidden, &s->x));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, wide, &s->xb));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, wide, &s->xb2));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, q_dim, &s->q));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, inter, &s->hb));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, inter, &s->hb2));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(
      b, (size_t)(c->num_attention_heads * max_seq) * f, &s->att));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_buffers_take(b, (size_t)c->vocab_size * f, &s->logits));
  size_t half = (size_t)atlas_rope_rot_dim(&c->rope, c->head_dim) / 2;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_buffers_take(b, (half ? half : 1) * f, &s->inv_freq));
  if (c->local_rope) {
    ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, (half ? half : 1) * f,
                                                     &s->inv_freq_local));
  }
  size_t kv_dim = (size_t)(c->num_key_value_heads * c->head_dim) * f;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, kv_dim, &s->k));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_take(b, kv_dim, &s->v));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_take(&s->moe, b, c, 1));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_buffers_take(b, 2 * sizeof(uint32_t), &s->step));
  // The argmax's answer (2 words) and its cross-block state (4, zeroed).
  return atlas_decoder_buffers_take_zeroed(b, 6 * sizeof(uint32_t), &s->result);
}

// Every piece of the model's buffers, in one order for both passes.
static atlas_status take_buffers(atlas_decoder_model *m) {
  atlas_decoder_buffers *b = m->buffers;
  ATLAS_RETURN_IF_ERROR(take_kv(m->kv, b, &m->config, m->max_seq));
  ATLAS_RETURN_IF_ERROR(take_scratch(m->scratch, b, &m->config, m->max_seq));
  if (m->prefill == NULL) return ATLAS_OK;
  return atlas_decoder_prefill_take(m->prefill, b, &m->config, m->max_seq);
}

// The KV cache (at 4-byte elements, the largest type) and the scratch as a
// load carves them, alignment included: the sizing pass itself. Call after
// checked_sizes, which bounds every product.
static uint64_t kv_and_scratch_bytes(const atlas_decoder_config *c,
                                     int64_t max_seq) {
  atlas_decoder_kv_cache kv;
  atlas_decoder_scratch scratch;
  atlas_decoder_buffers b;
  memset(&kv, 0, sizeof(kv));
  memset(&scratch, 0, sizeof(scratch));
  memset(&b, 0, sizeof(b));
  kv.dtype = ATLAS_DTYPE_F32;
  b.sizing = true;
  atlas_status status = take_kv(&kv, &b, c, max_seq);
  if (status == ATLAS_OK) status = take_scratch(&scratch, &b, c, max_seq);
  if (status != ATLAS_OK) {
    atlas_status_free(status);
    return UINT64_MAX;  // overflows the caller's sum: refused there
  }
  return atlas_decoder_buffers_bytes(&b);
}

atlas_status atlas_decoder_required_bytes(const atlas_decoder_config *config,
                                          const atlas_checkpoint *checkpoint,
                                          int64_t max_seq,
                                          uint64_t *out_bytes) {
  *out_bytes = 0;
  uint64_t weights = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_weight_bytes(config, checkpoint, &weights));
  return atlas_decoder_required_bytes_of(
      config, weights, atlas_checkpoint_tensor_count(checkpoint), max_seq,
      atlas_checkpoint_dir(checkpoint), out_bytes);
}

atlas_status atlas_decoder_required_bytes_of(const atlas_decoder_config *config,
                                             uint64_t weights,
                                             size_t tensor_count,
                                             int64_t max_seq, const char *where,
                                             uint64_t *out_bytes) {
  *out_bytes = 0;
  ATLAS_RETURN_IF_ERROR(check_max_seq(config, max_seq, where));
  max_seq = resolve_max_seq(config, max_seq);
  uint64_t kv = 0, scratch = 0, total = weights;
  // Bounds every product below (heads x head_dim, intermediate, ...); the
  // KV cache and scratch are then counted as a load carves them.
  ATLAS_RETURN_IF_ERROR(checked_sizes(config, max_seq, &kv, &scratch));
  // Norms and biases are held as f32; count them at 4 bytes per element
  // (weight_bytes counted them at their checkpoint size, at most 4).
  uint64_t per_layer =
      (config->sandwich ? 4ull : 2ull) * (uint64_t)config->hidden_size;
  uint64_t q_dim = (uint64_t)(config->num_attention_heads * config->head_dim);
  uint64_t kv_dim = (uint64_t)(config->num_key_value_heads * config->head_dim);
  if (config->qkv_bias) per_layer += q_dim + 2 * kv_dim;
  if (config->o_bias) per_layer += (uint64_t)config->hidden_size;
  if (config->mlp_bias) {
    per_layer += 2ull * (uint64_t)config->intermediate_size +
                 (uint64_t)config->hidden_size;
  }
  if (config->qk_norm) per_layer += 2ull * (uint64_t)config->head_dim;
  uint64_t norm_bytes = per_layer;
  // The weight arena starts each tensor 256-byte aligned: at most 255
  // bytes of padding per tensor (every tensor it holds is one of these).
  uint64_t padding = 255u * (uint64_t)tensor_count;
  // A mixture-of-experts layer's table of expert addresses, in the arena.
  for (int64_t l = 0; l < config->num_hidden_layers; ++l) {
    if (atlas_decoder_layer_moe(config, l)) {
      padding += (3u * (uint64_t)config->num_experts + 3u) * 8u + 255u;
    }
  }
  if (!atlas_add_u64(&total, padding) ||
      !atlas_mul_u64(&norm_bytes, (uint64_t)config->num_hidden_layers) ||
      !atlas_add_u64(&norm_bytes, (uint64_t)config->hidden_size) ||
      !atlas_mul_u64(&norm_bytes, 4) || !atlas_add_u64(&total, norm_bytes) ||
      !atlas_add_u64(&total, kv_and_scratch_bytes(config, max_seq)) ||
      !atlas_add_u64(&total,
                     atlas_decoder_prefill_bytes(
                         config, atlas_decoder_prefill_rows(config, max_seq, 0),
                         max_seq))) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the model's required bytes overflow 64 bits");
  }
  *out_bytes = total;
  return ATLAS_OK;
}

// ---- load / unload -----------------------------------------------------------

// Registers `resource` or releases it on the spot when registration fails
// (the registration failure is the error worth reporting).
static atlas_status adopt(atlas_teardown *t, const char *name,
                          atlas_release_fn release, void *resource) {
  atlas_status status = atlas_teardown_register(t, name, release, resource);
  if (status == ATLAS_OK) return ATLAS_OK;
  atlas_status_free(release(resource));
  return status;
}

// The ring and events of greedy decoding a step ahead (decoder_model.h).
static atlas_status make_ahead(atlas_decoder_model *m) {
  m->ahead = calloc(1, sizeof(*m->ahead));
  if (m->ahead == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory while building the model");
  }
  m->ahead->backend = m->backend;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "decode_ahead", release_ahead, m->ahead));
  // The report names what it holds (pinned host memory, not the device's).
  atlas_site site = ATLAS_SITE;
  site.func = "make_ahead (decode_ahead ring, pinned host memory)";
  ATLAS_RETURN_IF_ERROR(atlas_backend_pinned_alloc_at(
      m->backend, sizeof(uint32_t) * 2 * ATLAS_DECODER_AHEAD, site,
      (void **)&m->ahead->ring));
  for (int i = 0; i < ATLAS_DECODER_AHEAD; ++i) {
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_event_create(m->backend, &m->ahead->done[i]));
  }
  return ATLAS_OK;
}

static atlas_status build(atlas_decoder_model *m, const atlas_checkpoint *ck,
                          const atlas_decoder_load_options *options) {
  const atlas_decoder_config *c = &m->config;
  bool tied = false;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_check_checkpoint(c, ck, &tied));
  uint64_t kv_total = 0, scratch_total = 0;
  ATLAS_RETURN_IF_ERROR(
      checked_sizes(c, m->max_seq, &kv_total, &scratch_total));

  m->weights = calloc(1, sizeof(*m->weights));
  if (m->weights == NULL) goto oom;
  m->weights->backend = m->backend;
  m->weights->config = &m->config;
  m->weights->layer_count = c->num_hidden_layers;
  m->weights->layers =
      calloc((size_t)c->num_hidden_layers, sizeof(atlas_decoder_layer));
  if (m->weights->layers == NULL) {
    free(m->weights);
    m->weights = NULL;
    goto oom;
  }
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "weights", release_weights, m->weights));
  double t0 = atlas_decoder_now_ms();
  atlas_decoder_load_progress progress = {options, 0, 0, 0, 0, 0};
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_load_weights(m->weights, ck, c, tied, &progress));

  // The KV cache, scratch and prefill scratch: one allocation (the
  // "buffers", registered first so that it outlives what borrows from it),
  // sized by a first pass over the same layout and carved by a second.
  m->buffers = calloc(1, sizeof(*m->buffers));
  if (m->buffers == NULL) goto oom;
  m->buffers->backend = m->backend;
  m->buffers->sizing = true;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "buffers", atlas_decoder_buffers_release, m->buffers));

  m->kv = calloc(1, sizeof(*m->kv));
  if (m->kv == NULL) goto oom;
  m->kv->backend = m->backend;
  m->kv->dtype = options->kv_dtype;
  if (options->kv_dtype_auto) {
    // A 16-bit model keeps its keys and values in its own type (what
    // transformers does): half the cache and half the bytes attention reads.
    atlas_dtype w = c->num_hidden_layers > 0 ? m->weights->layers[0].wq.dtype
                                             : ATLAS_DTYPE_F32;
    m->kv->dtype =
        w == ATLAS_DTYPE_F16 || w == ATLAS_DTYPE_BF16 ? w : ATLAS_DTYPE_F32;
  }
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "kv_cache", release_host_struct, m->kv));

  m->scratch = calloc(1, sizeof(*m->scratch));
  if (m->scratch == NULL) goto oom;
  m->scratch->backend = m->backend;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "scratch", release_host_struct, m->scratch));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_prefill_setup(
      m, atlas_decoder_prefill_rows(c, m->max_seq, options->prefill_rows)));
  ATLAS_RETURN_IF_ERROR(take_buffers(m));  // sizing
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_commit(m->buffers));
  ATLAS_RETURN_IF_ERROR(take_buffers(m));  // carving
  ATLAS_RETURN_IF_ERROR(atlas_decoder_buffers_zero(m->buffers));

  ATLAS_RETURN_IF_ERROR(atlas_backend_modules_ready(m->backend));
  atlas_kernel_registry *registry = atlas_backend_kernel_registry(m->backend);
  if (registry == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "backend %s has no kernels: create it with "
                             "atlas_decoder_module_set",
                             atlas_backend_name(m->backend));
  }
  m->kernels = calloc(1, sizeof(*m->kernels));
  if (m->kernels == NULL) goto oom;
  atlas_kernel_registry_retain(registry);
  m->kernels->registry = registry;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "kernel_registry", release_kernels, m->kernels));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_ctx_make(m->backend, NULL, &m->config,
                                               m->scratch, &m->ctx));
  m->ctx.shard = options->shard;
  ATLAS_RETURN_IF_ERROR(make_ahead(m));
  // Last: the graph is released first, before the buffers it launches on.
  m->graph = calloc(1, sizeof(*m->graph));
  if (m->graph == NULL) goto oom;
  m->graph->backend = m->backend;
  // A shard's collectives run on the host between launches: never captured.
  m->graph->disabled = options->eager_decode || options->shard != NULL;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "decode_graph", release_graph, m->graph));
  m->rot_dim = atlas_rope_rot_dim(&c->rope, c->head_dim);
  m->rope_seq_len = -1;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_rope_update(m, 1));
  atlas_log(atlas_backend_log_sink(m->backend), ATLAS_LOG_DEBUG,
            "load: %.1f ms: weights allocated and norms copied %.1f ms, "
            "uploaded %.1f ms, scanned %.1f ms; the rest %.1f ms",
            atlas_decoder_now_ms() - t0, progress.plan_ms, progress.upload_ms,
            progress.check_ms,
            atlas_decoder_now_ms() - t0 - progress.plan_ms -
                progress.upload_ms - progress.check_ms);
  return ATLAS_OK;

oom:
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "out of host memory while building the model");
}

atlas_status atlas_decoder_model_load(atlas_backend *backend,
                                      const atlas_checkpoint *checkpoint,
                                      const atlas_decoder_config *config,
                                      const atlas_decoder_load_options *options,
                                      atlas_decoder_model **out_model) {
  *out_model = NULL;
  atlas_decoder_load_options defaults = {0};
  if (options == NULL) options = &defaults;
  if (atlas_dtype_size(options->kv_dtype) == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "KV cache type %d is none of F32, F16, BF16",
                             (int)options->kv_dtype);
  }
  ATLAS_RETURN_IF_ERROR(check_max_seq(config, options->max_seq,
                                      atlas_checkpoint_dir(checkpoint)));
  if (config->context_window > 0) {
    atlas_log(atlas_backend_log_sink(backend), ATLAS_LOG_WARNING,
              "%s: config.json sliding_window %lld: model_type llama attends "
              "to every position, as LlamaForCausalLM does; the context is "
              "held to %lld positions",
              atlas_checkpoint_dir(checkpoint),
              (long long)config->context_window,
              (long long)atlas_decoder_context(config, NULL));
  }
  atlas_decoder_model *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory while loading %s",
                             atlas_checkpoint_dir(checkpoint));
  }
  m->backend = backend;
  m->config = *config;
  m->max_seq = resolve_max_seq(config, options->max_seq);
  atlas_status status = atlas_teardown_create(&m->teardown);
  if (status == ATLAS_OK) {
    atlas_teardown_set_log(m->teardown, atlas_backend_log_sink(backend));
    status = build(m, checkpoint, options);
  }
  if (status != ATLAS_OK) {
    status = atlas_status_annotate(status, "loading the model in %s",
                                   atlas_checkpoint_dir(checkpoint));
    if (m->teardown != NULL) {
      // Release what was built. A release that fails leaves memory behind
      // (on the ledger until the backend's sweep): the caller must hear of
      // it, and only here (a teardown without a sweep logs nothing).
      atlas_status cleanup = atlas_teardown_run(m->teardown, NULL, NULL, NULL);
      status = atlas_status_join(
          status,
          atlas_status_annotate(cleanup,
                                "then releasing what the failed load had "
                                "built failed too; what it could not release "
                                "stays on the backend until its sweep"));
    }
    free(m);
    return status;
  }
  *out_model = m;
  return ATLAS_OK;
}

atlas_status atlas_decoder_model_unload(atlas_decoder_model *model,
                                        atlas_teardown_report *out_report) {
  if (model == NULL) return ATLAS_OK;
  atlas_status status = atlas_teardown_run(model->teardown, sweep_backend,
                                           model->backend, out_report);
  free(model);
  return status;
}

const atlas_decoder_config *atlas_decoder_config_of(
    const atlas_decoder_model *model) {
  return &model->config;
}

int64_t atlas_decoder_max_seq(const atlas_decoder_model *model) {
  return model->max_seq;
}

bool atlas_decoder_has_prefill(const atlas_decoder_model *model) {
  return model->prefill != NULL;
}
