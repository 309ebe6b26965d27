// The public step API (atlas.h, "sequences and the batch step") over
// runtime/serve/batch.h: the model's engine is its attachment, made at
// atlas_kv_open (or the first sequence) and released when the model closes.
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"

#include "atlas/runtime/api/struct_size.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/batch.h"

// atlas_seq is the step API's sequence under its public name.
static atlas_batch_seq *seq_of(atlas_seq *s) { return (atlas_batch_seq *)s; }
static const atlas_batch_seq *const_seq_of(const atlas_seq *s) {
  return (const atlas_batch_seq *)s;
}

void atlas_kv_options_init(atlas_kv_options *o) {
  memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->block_tokens = 16;
  o->prefix_cache = true;
}

// At close: the sequences go with the model (atlas.h), not a leak.
static atlas_status release_engine(void *engine) {
  atlas_batch_seq_free_all(engine);
  return atlas_batch_engine_destroy(engine);
}

static atlas_batch_engine *engine_of(const atlas_model *model) {
  return atlas_model_attachment(model);
}

atlas_status atlas_kv_open(atlas_model *model,
                           const atlas_kv_options *options) {
  if (model == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_kv_open: NULL model");
  }
  if (engine_of(model) != NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "atlas_kv_open: %s has a KV pool already "
                             "(atlas_kv_close it first)",
                             atlas_model_name(model));
  }
  atlas_kv_options o;
  atlas_kv_options_init(&o);
  if (options != NULL) {
    size_t n = 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_struct_size_check(atlas_api_struct_layout("atlas_kv_options"),
                                options->struct_size, options, &n));
    memcpy(&o, options, n);
    o.struct_size = sizeof(o);
  }
  atlas_batch_engine_options eo;
  memset(&eo, 0, sizeof(eo));
  eo.kv_budget_bytes = o.budget_bytes;
  eo.block_tokens = o.block_tokens;
  eo.prefix_cache = o.prefix_cache;
  atlas_batch_engine *e = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_batch_engine_create(model, &eo, &e));
  atlas_model_attach(model, e, release_engine);
  return ATLAS_OK;
}

atlas_status atlas_kv_close(atlas_model *model) {
  if (model == NULL || engine_of(model) == NULL) return ATLAS_OK;
  atlas_batch_engine *e = engine_of(model);
  atlas_model_attach(model, NULL, NULL);
  return release_engine(e);
}

atlas_status atlas_kv_stats_get(atlas_model *model, atlas_kv_stats *out) {
  if (model == NULL || out == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_kv_stats_get: NULL model or stats");
  }
  atlas_kv_stats st;
  memset(&st, 0, sizeof(st));
  st.struct_size = sizeof(st);
  atlas_batch_engine *e = engine_of(model);
  if (e != NULL) {
    atlas_kv_pool_stats ps;
    atlas_kv_pool_stats_get(atlas_batch_engine_pool(e), &ps);
    st.blocks_total = ps.total;
    st.blocks_used = ps.used;
    st.blocks_cached = ps.cached;
    st.blocks_free = ps.free;
    st.bytes = ps.bytes;
    st.block_tokens = atlas_kv_pool_block_tokens(atlas_batch_engine_pool(e));
    st.sequences = atlas_batch_engine_live(e);
  }
  size_t n = out->struct_size, bytes = 0;
  ATLAS_RETURN_IF_ERROR(atlas_struct_size_check(
      atlas_api_struct_layout("atlas_kv_stats"), n, NULL, &bytes));
  memcpy(out, &st, bytes);
  out->struct_size = n;
  return ATLAS_OK;
}

static atlas_status engine_or_open(atlas_model *model,
                                   atlas_batch_engine **out) {
  if (model == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "sequences need a model (NULL)");
  }
  if (engine_of(model) == NULL)
    ATLAS_RETURN_IF_ERROR(atlas_kv_open(model, NULL));
  *out = engine_of(model);
  return ATLAS_OK;
}

atlas_status atlas_seq_create(atlas_model *model, atlas_seq **out_seq) {
  *out_seq = NULL;
  atlas_batch_engine *e = NULL;
  ATLAS_RETURN_IF_ERROR(engine_or_open(model, &e));
  atlas_batch_seq *s = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_batch_seq_create(e, &s));
  *out_seq = (atlas_seq *)s;
  return ATLAS_OK;
}

atlas_status atlas_seq_fork(atlas_model *model, const atlas_seq *parent,
                            atlas_seq **out_seq) {
  *out_seq = NULL;
  if (parent == NULL || model == NULL || engine_of(model) == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_seq_fork: no parent sequence");
  }
  atlas_batch_seq *s = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_batch_seq_fork(engine_of(model), const_seq_of(parent), &s));
  *out_seq = (atlas_seq *)s;
  return ATLAS_OK;
}

void atlas_seq_free(atlas_model *model, atlas_seq *seq) {
  if (seq == NULL || model == NULL || engine_of(model) == NULL) return;
  atlas_batch_seq_free(engine_of(model), seq_of(seq));
}

size_t atlas_seq_length(const atlas_seq *seq) {
  return seq != NULL ? atlas_batch_seq_length(const_seq_of(seq)) : 0;
}

atlas_status atlas_seq_reuse_prefix(atlas_model *model, atlas_seq *seq,
                                    const uint32_t *prompt, size_t prompt_len,
                                    size_t *out_reused) {
  *out_reused = 0;
  if (seq == NULL || model == NULL || engine_of(model) == NULL ||
      (prompt == NULL && prompt_len > 0)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_seq_reuse_prefix: no sequence or prompt");
  }
  return atlas_batch_seq_reuse_prefix(engine_of(model), seq_of(seq), prompt,
                                      prompt_len, out_reused);
}

atlas_status atlas_decode(atlas_model *model, atlas_batch_entry *entries,
                          size_t count) {
  if (model == NULL || engine_of(model) == NULL || entries == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_decode: no model, pool or entries");
  }
  atlas_batch_engine *e = engine_of(model);
  if (count > atlas_batch_engine_max_seqs(e)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_decode: %zu sequences, at most %zu a step",
                             count, atlas_batch_engine_max_seqs(e));
  }
  atlas_batch_item *items = calloc(count ? count : 1, sizeof(*items));
  if (items == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_decode: no host memory");
  }
  for (size_t i = 0; i < count; ++i) {
    items[i].seq = seq_of(entries[i].seq);
    items[i].tokens = entries[i].tokens;
    items[i].count = entries[i].count;
    items[i].out_logits = entries[i].logits;
    items[i].out_id = entries[i].argmax;
  }
  atlas_status s = atlas_batch_step(e, items, count);
  free(items);
  return s;
}
