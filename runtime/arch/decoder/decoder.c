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
  ATLAS_RETURN_IF_ERROR(
      check_max_seq(config, max_seq, atlas_checkpoint_dir(checkpoint)));
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
  uint64_t padding = 255u * (uint64_t)atlas_checkpoint_tensor_count(checkpoint);
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

// ---- weights ---------------------------------------------------------------

// Room for `bytes` in the arena (256-byte aligned, as the driver aligns), or
// in the sizing pass just counted.
static atlas_status weight_alloc(atlas_decoder_weights *w, size_t bytes,
                                 void **out) {
  size_t need = (bytes + 255) / 256 * 256;
  *out = NULL;
  if (w->sizing) {
    if (need < bytes || w->arena_bytes + need < w->arena_bytes) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "the weights' sizes overflow");
    }
    w->arena_bytes += need;
    return ATLAS_OK;
  }
  if (w->arena_bytes - w->arena_used < need) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "weight arena: %zu bytes asked past its %zu", need,
                             w->arena_bytes);
  }
  *out = w->arena + w->arena_used;
  w->arena_used += need;
  return ATLAS_OK;
}

typedef struct load_progress {
  const atlas_decoder_load_options *options;
  uint64_t done, total;
  double plan_ms, upload_ms, check_ms;  // phases, for the DEBUG load line
} load_progress;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static atlas_status find_tensor(const atlas_decoder_config *config,
                                const atlas_checkpoint *ck,
                                atlas_decoder_weight weight, int layer,
                                atlas_checkpoint_tensor *out) {
  char name[256];
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_weight_name(config, weight, layer, name, sizeof(name)));
  return atlas_checkpoint_find(ck, name, out);
}

// Allocates a weight matrix as stored (F32/F16/BF16) and queues its upload.
typedef struct upload_plan {
  atlas_upload_job *jobs;
  size_t count;
  // The norms and vectors converted to f32 on the host, copied by the same
  // upload as the matrices (one copy each used to wait in the plan).
  float *vectors;
  uint64_t vector_floats, vectors_used;
} upload_plan;

static atlas_status plan_matrix(atlas_decoder_weights *w,
                                const atlas_checkpoint *ck,
                                atlas_decoder_weight weight, int layer,
                                upload_plan *plan, atlas_decoder_matrix *out) {
  atlas_checkpoint_tensor t;
  ATLAS_RETURN_IF_ERROR(find_tensor(w->config, ck, weight, layer, &t));
  void *dst = NULL;
  ATLAS_RETURN_IF_ERROR(weight_alloc(w, t.tensor->bytes, &dst));
  if (w->sizing) {
    plan->count++;
    return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(
      atlas_checkpoint_upload_job(&t, dst, &plan->jobs[plan->count]));
  plan->count++;
  out->data = dst;
  out->dtype = t.tensor->dtype;
  return ATLAS_OK;
}

// Norm weights are small and read every token: convert to f32 once, into
// the plan's host buffer, and upload them with the matrices.
static atlas_status upload_vector(atlas_decoder_weights *w,
                                  const atlas_checkpoint *ck,
                                  atlas_decoder_weight weight, int layer,
                                  bool norm_one_plus, upload_plan *plan,
                                  float **out) {
  atlas_checkpoint_tensor t;
  ATLAS_RETURN_IF_ERROR(find_tensor(w->config, ck, weight, layer, &t));
  uint64_t n = t.tensor->elements;
  void *dst = NULL;
  if (w->sizing) {
    plan->vector_floats += n;
    plan->count++;
    return weight_alloc(w, n * sizeof(float), &dst);
  }
  if (plan->jobs == NULL || plan->vectors == NULL ||
      plan->vector_floats - plan->vectors_used < n) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: %llu floats past the planned vectors",
                             t.tensor->name, (unsigned long long)n);
  }
  float *host = plan->vectors + plan->vectors_used;
  ATLAS_RETURN_IF_ERROR(atlas_safetensors_tensor_to_f32(t.tensor, 0, n, host));
  if (norm_one_plus) {
    // (1 + w) RMSNorm (Gemma): the kernels scale by the stored weights.
    for (uint64_t i = 0; i < n; ++i) host[i] += 1.0f;
  }
  ATLAS_RETURN_IF_ERROR(weight_alloc(w, n * sizeof(float), &dst));
  plan->vectors_used += n;
  atlas_upload_job *job = &plan->jobs[plan->count++];
  memset(job, 0, sizeof(*job));
  job->dst = dst;
  job->src = host;
  job->bytes = n * sizeof(float);
  job->what = t.tensor->name;
  job->fd = -1;
  job->file = t.path;
  *out = dst;
  return ATLAS_OK;
}

// A norm's weights: as stored, or 1 + w where the descriptor says so.
static atlas_status upload_norm(atlas_decoder_weights *w,
                                const atlas_checkpoint *ck,
                                atlas_decoder_weight weight, int layer,
                                upload_plan *plan, float **out) {
  return upload_vector(w, ck, weight, layer, w->config->norm_one_plus, plan,
                       out);
}

// A fused tensor's parts are views of it: rows [0, rows_a) and the rest
// (q, then k and v; gate, then up), each row `cols` elements.
static void split_rows(const atlas_decoder_matrix *whole, int64_t rows_a,
                       int64_t cols, atlas_decoder_matrix *a,
                       atlas_decoder_matrix *b) {
  size_t off = (size_t)rows_a * (size_t)cols * atlas_dtype_size(whole->dtype);
  *a = *whole;
  *b = *whole;
  if (whole->data != NULL) b->data = (char *)whole->data + off;
}

// q, k and v: three tensors, or views of one qkv_proj.
static atlas_status plan_qkv(atlas_decoder_weights *w,
                             const atlas_checkpoint *ck, int layer,
                             upload_plan *plan, atlas_decoder_layer *L) {
  const atlas_decoder_config *c = w->config;
  if (!c->fused_qkv) {
    ATLAS_RETURN_IF_ERROR(
        plan_matrix(w, ck, ATLAS_DECODER_Q_PROJ, layer, plan, &L->wq));
    ATLAS_RETURN_IF_ERROR(
        plan_matrix(w, ck, ATLAS_DECODER_K_PROJ, layer, plan, &L->wk));
    return plan_matrix(w, ck, ATLAS_DECODER_V_PROJ, layer, plan, &L->wv);
  }
  atlas_decoder_matrix qkv = {0}, kv = {0};
  ATLAS_RETURN_IF_ERROR(
      plan_matrix(w, ck, ATLAS_DECODER_QKV_PROJ, layer, plan, &qkv));
  int64_t q_rows = c->num_attention_heads * c->head_dim;
  int64_t kv_rows = c->num_key_value_heads * c->head_dim;
  split_rows(&qkv, q_rows, c->hidden_size, &L->wq, &kv);
  split_rows(&kv, kv_rows, c->hidden_size, &L->wk, &L->wv);
  return ATLAS_OK;
}

// gate and up: two tensors, or views of one gate_up_proj.
static atlas_status plan_gate_up(atlas_decoder_weights *w,
                                 const atlas_checkpoint *ck, int layer,
                                 upload_plan *plan, atlas_decoder_layer *L) {
  const atlas_decoder_config *c = w->config;
  if (!c->fused_gate_up) {
    ATLAS_RETURN_IF_ERROR(
        plan_matrix(w, ck, ATLAS_DECODER_GATE_PROJ, layer, plan, &L->w_gate));
    return plan_matrix(w, ck, ATLAS_DECODER_UP_PROJ, layer, plan, &L->w_up);
  }
  atlas_decoder_matrix both = {0};
  ATLAS_RETURN_IF_ERROR(
      plan_matrix(w, ck, ATLAS_DECODER_GATE_UP_PROJ, layer, plan, &both));
  split_rows(&both, c->intermediate_size, c->hidden_size, &L->w_gate, &L->w_up);
  return ATLAS_OK;
}

static atlas_status plan_weights(atlas_decoder_weights *w,
                                 const atlas_checkpoint *ck,
                                 const atlas_decoder_config *c,
                                 bool lm_head_is_embedding, upload_plan *plan) {
  // model.embed_tokens.weight, or a tied checkpoint's lone lm_head.weight.
  ATLAS_RETURN_IF_ERROR(plan_matrix(
      w, ck, atlas_decoder_embedding_weight(c, ck), 0, plan, &w->embed));
  for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
    atlas_decoder_layer *L = &w->layers[l];
    int i = (int)l;
    ATLAS_RETURN_IF_ERROR(
        upload_norm(w, ck, ATLAS_DECODER_INPUT_NORM, i, plan, &L->attn_norm));
    ATLAS_RETURN_IF_ERROR(plan_qkv(w, ck, i, plan, L));
    ATLAS_RETURN_IF_ERROR(
        plan_matrix(w, ck, ATLAS_DECODER_O_PROJ, i, plan, &L->wo));
    ATLAS_RETURN_IF_ERROR(
        upload_norm(w, ck, ATLAS_DECODER_FFN_NORM, i, plan, &L->ffn_norm));
    ATLAS_RETURN_IF_ERROR(plan_gate_up(w, ck, i, plan, L));
    ATLAS_RETURN_IF_ERROR(
        plan_matrix(w, ck, ATLAS_DECODER_DOWN_PROJ, i, plan, &L->w_down));
    // Optional vectors (biases, q/k norms, sandwich norms), f32 like the
    // norms.
    struct {
      float **dst;
      atlas_decoder_weight weight;
      bool norm;  // (1 + w) where the descriptor says so; a bias never
    } vectors[] = {
        {&L->attn_out_norm, ATLAS_DECODER_ATTN_OUT_NORM, true},
        {&L->ffn_out_norm, ATLAS_DECODER_FFN_OUT_NORM, true},
        {&L->q_bias, ATLAS_DECODER_Q_BIAS, false},
        {&L->k_bias, ATLAS_DECODER_K_BIAS, false},
        {&L->v_bias, ATLAS_DECODER_V_BIAS, false},
        {&L->o_bias, ATLAS_DECODER_O_BIAS, false},
        {&L->gate_bias, ATLAS_DECODER_GATE_BIAS, false},
        {&L->up_bias, ATLAS_DECODER_UP_BIAS, false},
        {&L->down_bias, ATLAS_DECODER_DOWN_BIAS, false},
        {&L->q_norm, ATLAS_DECODER_Q_NORM, true},
        {&L->k_norm, ATLAS_DECODER_K_NORM, true},
    };
    for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); ++v) {
      if (!atlas_decoder_weight_used(c, vectors[v].weight)) continue;
      ATLAS_RETURN_IF_ERROR(upload_vector(w, ck, vectors[v].weight, i,
                                          vectors[v].norm && c->norm_one_plus,
                                          plan, vectors[v].dst));
    }
  }
  ATLAS_RETURN_IF_ERROR(
      upload_norm(w, ck, ATLAS_DECODER_FINAL_NORM, 0, plan, &w->final_norm));
  if (lm_head_is_embedding) {
    w->lm_head = w->embed;
    return ATLAS_OK;
  }
  return plan_matrix(w, ck, ATLAS_DECODER_LM_HEAD, 0, plan, &w->lm_head);
}

// Copies the jobs[0..n) that `bare` strips, into w's backend.
static atlas_status upload_part(atlas_backend *b, const atlas_checkpoint *ck,
                                const load_progress *progress, uint64_t base,
                                const atlas_upload_job *bare, size_t n) {
  if (n == 0) return ATLAS_OK;
  atlas_upload_options o;
  memset(&o, 0, sizeof(o));
  o.progress = progress->options->progress;
  o.progress_ctx = progress->options->progress_ctx;
  o.progress_base = base;
  o.progress_total = progress->total;
  atlas_uploader *u = progress->options->uploader;
  return atlas_status_annotate(u != NULL ? atlas_uploader_run(u, bare, n)
                                         : atlas_upload_run(b, bare, n, &o),
                               "reading %s", atlas_checkpoint_source(ck));
}

// The copies go unscanned and the backend scans what landed, in two parts
// with a kept uploader: the scan of the first (7/8 of the bytes) runs on the
// device while the rest copies, so only the last part's scan adds to the
// load.
static atlas_status upload_and_check(atlas_backend *b,
                                     const atlas_checkpoint *ck,
                                     const load_progress *progress,
                                     const atlas_upload_job *jobs,
                                     const atlas_upload_job *bare, size_t n,
                                     double *out_upload_ms) {
  uint64_t total = 0, head = 0;
  for (size_t i = 0; i < n; ++i) total += jobs[i].bytes;
  size_t split = 0;
  // A load without a kept uploader makes its staging per upload (pinning
  // costs milliseconds): one upload, then the scan.
  uint64_t first_part =
      progress->options->uploader != NULL ? total - total / 8 : total;
  while (split < n && head < first_part) head += jobs[split++].bytes;
  double t0 = now_ms();
  atlas_status status =
      upload_part(b, ck, progress, progress->done, bare, split);
  *out_upload_ms = now_ms() - t0;
  atlas_weight_check first, rest;
  if (status != ATLAS_OK) return status;
  ATLAS_RETURN_IF_ERROR(atlas_weight_check_begin(b, jobs, split, &first));
  double t1 = now_ms();
  status = upload_part(b, ck, progress, progress->done + head, bare + split,
                       n - split);
  *out_upload_ms += now_ms() - t1;
  if (status == ATLAS_OK) {
    status = atlas_weight_check_begin(b, jobs + split, n - split, &rest);
    if (status != ATLAS_OK) {
      atlas_status_free(atlas_weight_check_finish(&first, false));
      return status;
    }
    // The lowest job first: a bad element in the first part wins.
    status = atlas_weight_check_finish(&first, true);
    return atlas_status_join(
        status, atlas_weight_check_finish(&rest, status == ATLAS_OK));
  }
  atlas_status_free(atlas_weight_check_finish(&first, false));
  return status;
}

// Allocates every weight, then uploads the matrices in one staged,
// multi-threaded pass (the norms, small and converted, went directly).
static atlas_status load_weights(atlas_decoder_weights *w,
                                 const atlas_checkpoint *ck,
                                 const atlas_decoder_config *c,
                                 bool lm_head_is_embedding,
                                 load_progress *progress) {
  upload_plan plan = {NULL, 0, NULL, 0, 0};
  double t0 = now_ms();
  // Pass one sizes the arena, the jobs and the vectors; pass two carves the
  // arena, converts the vectors and plans the copies.
  w->sizing = true;
  atlas_status status = plan_weights(w, ck, c, lm_head_is_embedding, &plan);
  w->sizing = false;
  size_t jobs = plan.count;
  plan.count = 0;
  if (status == ATLAS_OK) {
    plan.jobs = calloc(jobs ? jobs : 1, sizeof(atlas_upload_job));
    plan.vectors =
        malloc(plan.vector_floats ? plan.vector_floats * sizeof(float) : 1);
    if (plan.jobs == NULL || plan.vectors == NULL) {
      status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "cannot plan the weight upload (%zu tensors)",
                                 jobs);
    }
  }
  if (status == ATLAS_OK && w->arena_bytes != 0) {
    status =
        atlas_backend_alloc(w->backend, w->arena_bytes, (void **)&w->arena);
  }
  // The modules' code lands after the weights, the same way every time, and
  // loads while they upload.
  atlas_backend_modules_start(w->backend);
  if (status == ATLAS_OK) {
    status = plan_weights(w, ck, c, lm_head_is_embedding, &plan);
  }
  // The copies go without a host scan; the backend scans what landed.
  atlas_upload_job *bare = calloc(plan.count ? plan.count : 1, sizeof(*bare));
  if (status == ATLAS_OK && bare == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "cannot plan the weight upload");
  }
  double t1 = now_ms();
  progress->plan_ms = t1 - t0;
  double upload_ms = 0;
  if (status == ATLAS_OK) {
    // Progress counts the bytes that land on the backend, norms (converted
    // to f32) with the matrices: it ends exactly at its total.
    progress->done = 0;
    progress->total = 0;
    for (size_t i = 0; i < plan.count; ++i)
      progress->total += plan.jobs[i].bytes;
    atlas_weight_check_strip(plan.jobs, plan.count, bare);
    status = upload_and_check(w->backend, ck, progress, plan.jobs, bare,
                              plan.count, &upload_ms);
  }
  progress->upload_ms = upload_ms;
  progress->check_ms = now_ms() - t1 - upload_ms;
  free(bare);
  free(plan.vectors);
  free(plan.jobs);
  return status;
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
  double t0 = now_ms();
  load_progress progress = {options, 0, 0, 0, 0, 0};
  ATLAS_RETURN_IF_ERROR(load_weights(m->weights, ck, c, tied, &progress));

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
  ATLAS_RETURN_IF_ERROR(make_ahead(m));
  // Last: the graph is released first, before the buffers it launches on.
  m->graph = calloc(1, sizeof(*m->graph));
  if (m->graph == NULL) goto oom;
  m->graph->backend = m->backend;
  m->graph->disabled = options->eager_decode;
  ATLAS_RETURN_IF_ERROR(
      adopt(m->teardown, "decode_graph", release_graph, m->graph));
  m->rot_dim = atlas_rope_rot_dim(&c->rope, c->head_dim);
  m->rope_seq_len = -1;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_rope_update(m, 1));
  atlas_log(atlas_backend_log_sink(m->backend), ATLAS_LOG_DEBUG,
            "load: %.1f ms: weights allocated and norms copied %.1f ms, "
            "uploaded %.1f ms, scanned %.1f ms; the rest %.1f ms",
            now_ms() - t0, progress.plan_ms, progress.upload_ms,
            progress.check_ms,
            now_ms() - t0 - progress.plan_ms - progress.upload_ms -
                progress.check_ms);
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
