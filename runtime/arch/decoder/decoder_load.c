// The weights' load (decoder_load.h): the arena sized and carved in two
// passes over the tensor plan, norms and vectors converted to f32 on the
// host (1 + w where the descriptor says so), fused tensors split into
// views, one staged upload and the backend's scan of what landed.
#define _GNU_SOURCE  // clock_gettime
#include "atlas/runtime/arch/decoder/decoder_load.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/arch/decoder/decoder_moe_weights.h"
#include "atlas/runtime/arch/weight_check.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/safetensors_convert.h"

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

double atlas_decoder_now_ms(void) {
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
  // The experts' address tables, built on the host and uploaded the same way.
  uint64_t *tables;
  uint64_t table_entries, tables_used;
} upload_plan;

// A quantized projection: its own block (quant_linear), whose uploads join
// the plan; the sizing pass counts the most jobs one can take.
static atlas_status plan_quant(atlas_decoder_weights *w,
                               const atlas_checkpoint *ck,
                               atlas_decoder_weight weight, int layer,
                               upload_plan *plan, atlas_decoder_matrix *out) {
  if (w->sizing) {
    plan->count += 4;
    w->quant_cap++;
    return ATLAS_OK;
  }
  if (w->quant_count >= w->quant_cap) {
    return atlas_status_make(
        ATLAS_STATUS_INTERNAL,
        "layer %d: quantized matrices past the %zu planned", layer,
        w->quant_cap);
  }
  atlas_quant_matrix m;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_quant_find(w->config, ck, weight, layer, &m));
  atlas_quant_linear *l = &w->quant[w->quant_count];
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_quant_linear_alloc(w->backend, &m, l,
                                                 &plan->jobs[plan->count], &n));
  w->quant_count++;
  plan->count += n;
  out->data = NULL;
  out->dtype = ATLAS_DTYPE_F32;
  out->quant = l;
  return ATLAS_OK;
}

// A matrix as stored, into the arena, its upload queued.
static atlas_status plan_tensor(atlas_decoder_weights *w,
                                const atlas_checkpoint_tensor *t,
                                upload_plan *plan, atlas_decoder_matrix *out) {
  void *dst = NULL;
  ATLAS_RETURN_IF_ERROR(weight_alloc(w, t->tensor->bytes, &dst));
  if (w->sizing) {
    plan->count++;
    return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(
      atlas_checkpoint_upload_job(t, dst, &plan->jobs[plan->count]));
  plan->count++;
  out->data = dst;
  out->dtype = t->tensor->dtype;
  return ATLAS_OK;
}

static atlas_status plan_matrix(atlas_decoder_weights *w,
                                const atlas_checkpoint *ck,
                                atlas_decoder_weight weight, int layer,
                                upload_plan *plan, atlas_decoder_matrix *out) {
  if (atlas_decoder_weight_quantized(w->config, weight)) {
    return plan_quant(w, ck, weight, layer, plan, out);
  }
  atlas_checkpoint_tensor t;
  ATLAS_RETURN_IF_ERROR(find_tensor(w->config, ck, weight, layer, &t));
  return plan_tensor(w, &t, plan, out);
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

// Where a MoE tensor's address goes in the layer's table (-1: none).
static int64_t table_slot(const atlas_decoder_moe_tensor *t, int64_t experts) {
  switch (t->role) {
    case ATLAS_DECODER_MOE_GATE:
    case ATLAS_DECODER_MOE_UP:
    case ATLAS_DECODER_MOE_DOWN:
      return (t->role - ATLAS_DECODER_MOE_GATE) * experts + t->expert;
    case ATLAS_DECODER_MOE_SHARED_GATE:
    case ATLAS_DECODER_MOE_SHARED_UP:
    case ATLAS_DECODER_MOE_SHARED_DOWN:
      return 3 * experts + (t->role - ATLAS_DECODER_MOE_SHARED_GATE);
    default:
      return -1;
  }
}

// A fused 3-D tensor's experts, as views of it (no copy): gate_up's
// expert e is rows [e * 2I, e * 2I + I) (gate) then the next I (up); down's
// is its e-th [hidden, I] slice.
static void fused_slots(const atlas_decoder_moe_tensor *t,
                        const atlas_decoder_matrix *m, int64_t experts,
                        uint64_t *host) {
  uint64_t elt = atlas_dtype_size(m->dtype);
  uint64_t base = (uint64_t)(uintptr_t)m->data;
  uint64_t slice = (uint64_t)t->shape[1] * (uint64_t)t->shape[2] * elt;
  for (int64_t e = 0; e < experts; ++e) {
    if (t->role == ATLAS_DECODER_MOE_FUSED_GATE_UP) {
      host[e] = base + (uint64_t)e * slice;
      host[experts + e] = base + (uint64_t)e * slice + slice / 2;
    } else {
      host[2 * experts + e] = base + (uint64_t)e * slice;
    }
  }
}

// A mixture-of-experts layer: the router, every expert's tensors as
// stored, and the table of their addresses (decoder_model.h), uploaded
// from the plan's host tables.
static atlas_status plan_moe(atlas_decoder_weights *w,
                             const atlas_checkpoint *ck, int layer,
                             upload_plan *plan, atlas_decoder_moe_layer *moe) {
  const atlas_decoder_config *c = w->config;
  uint64_t entries = 3 * (uint64_t)c->num_experts + 3;
  void *tables = NULL;
  ATLAS_RETURN_IF_ERROR(weight_alloc(w, entries * sizeof(uint64_t), &tables));
  // Read once: host is NULL exactly when sizing, and the calls below take w
  // (the analyzer cannot tell that they leave w->sizing alone).
  const bool sizing = w->sizing;
  uint64_t *host = NULL;
  if (sizing) {
    plan->table_entries += entries;
  } else if (plan->tables == NULL ||
             plan->table_entries - plan->tables_used < entries) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "layer %d: expert tables past the planned", layer);
  } else {
    host = plan->tables + plan->tables_used;
    memset(host, 0, entries * sizeof(uint64_t));
  }
  size_t count = atlas_decoder_moe_tensor_count(c, ck, layer);
  for (size_t i = 0; i < count; ++i) {
    atlas_decoder_moe_tensor t;
    ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_tensor_at(c, ck, layer, i, &t));
    atlas_checkpoint_tensor ct;
    ATLAS_RETURN_IF_ERROR(atlas_checkpoint_find(ck, t.name, &ct));
    atlas_decoder_matrix m = {0};
    ATLAS_RETURN_IF_ERROR(plan_tensor(w, &ct, plan, &m));
    if (sizing) continue;
    int64_t slot = table_slot(&t, c->num_experts);
    if (slot >= 0) host[slot] = (uint64_t)(uintptr_t)m.data;
    if (t.role == ATLAS_DECODER_MOE_ROUTER) moe->router = m;
    if (t.role == ATLAS_DECODER_MOE_SHARED_EXPERT_GATE) {
      moe->shared_expert_gate = m;
    }
    if (t.role == ATLAS_DECODER_MOE_FUSED_GATE_UP ||
        t.role == ATLAS_DECODER_MOE_FUSED_DOWN) {
      fused_slots(&t, &m, c->num_experts, host);
    }
    if (t.expert >= 0 || t.role == ATLAS_DECODER_MOE_FUSED_GATE_UP) {
      moe->expert_dtype = m.dtype;
    }
    if (t.role == ATLAS_DECODER_MOE_SHARED_GATE) moe->shared_dtype = m.dtype;
  }
  plan->count++;  // the table's upload
  if (sizing) return ATLAS_OK;
  atlas_upload_job *job = &plan->jobs[plan->count - 1];
  memset(job, 0, sizeof(*job));
  job->dst = tables;
  job->src = host;
  job->bytes = entries * sizeof(uint64_t);
  job->what = "an expert address table";
  job->fd = -1;
  job->file = atlas_checkpoint_source(ck);
  job->finite = ATLAS_SCAN_FINITE_NONE;  // addresses, not numbers
  plan->tables_used += entries;
  moe->tables = tables;
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
    if (atlas_decoder_layer_moe(c, l)) {
      ATLAS_RETURN_IF_ERROR(plan_moe(w, ck, i, plan, &L->moe));
    } else {
      ATLAS_RETURN_IF_ERROR(plan_gate_up(w, ck, i, plan, L));
      ATLAS_RETURN_IF_ERROR(
          plan_matrix(w, ck, ATLAS_DECODER_DOWN_PROJ, i, plan, &L->w_down));
    }
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
      if (!atlas_decoder_weight_in_layer(c, vectors[v].weight, l)) continue;
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
                                const atlas_decoder_load_progress *progress,
                                uint64_t base, const atlas_upload_job *bare,
                                size_t n) {
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
static atlas_status upload_and_check(
    atlas_backend *b, const atlas_checkpoint *ck,
    const atlas_decoder_load_progress *progress, const atlas_upload_job *jobs,
    const atlas_upload_job *bare, size_t n, double *out_upload_ms) {
  uint64_t total = 0, head = 0;
  for (size_t i = 0; i < n; ++i) total += jobs[i].bytes;
  size_t split = 0;
  // A load without a kept uploader makes its staging per upload (pinning
  // costs milliseconds): one upload, then the scan.
  uint64_t first_part =
      progress->options->uploader != NULL ? total - total / 8 : total;
  while (split < n && head < first_part) head += jobs[split++].bytes;
  double t0 = atlas_decoder_now_ms();
  atlas_status status =
      upload_part(b, ck, progress, progress->done, bare, split);
  *out_upload_ms = atlas_decoder_now_ms() - t0;
  atlas_weight_check first, rest;
  if (status != ATLAS_OK) return status;
  ATLAS_RETURN_IF_ERROR(atlas_weight_check_begin(b, jobs, split, &first));
  double t1 = atlas_decoder_now_ms();
  status = upload_part(b, ck, progress, progress->done + head, bare + split,
                       n - split);
  *out_upload_ms += atlas_decoder_now_ms() - t1;
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
atlas_status atlas_decoder_load_weights(atlas_decoder_weights *w,
                                        const atlas_checkpoint *ck,
                                        const atlas_decoder_config *c,
                                        bool lm_head_is_embedding,
                                        atlas_decoder_load_progress *progress) {
  upload_plan plan = {NULL, 0, NULL, 0, 0, NULL, 0, 0};
  double t0 = atlas_decoder_now_ms();
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
    w->quant = calloc(w->quant_cap ? w->quant_cap : 1, sizeof(*w->quant));
    plan.tables =
        malloc(plan.table_entries ? plan.table_entries * sizeof(uint64_t) : 1);
    if (plan.jobs == NULL || plan.vectors == NULL || w->quant == NULL ||
        plan.tables == NULL) {
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
  double t1 = atlas_decoder_now_ms();
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
  progress->check_ms = atlas_decoder_now_ms() - t1 - upload_ms;
  free(bare);
  free(plan.tables);
  free(plan.vectors);
  free(plan.jobs);
  return status;
}
