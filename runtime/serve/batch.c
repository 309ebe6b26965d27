// The step API over the paged KV pool (batch.h).
#include "atlas/runtime/serve/batch.h"

#include <stdlib.h>
#include <string.h>

enum { kDefaultSequences = 8 };
// What the default CUDA budget leaves free beside the pool: the products'
// workspaces, graphs and other tenants' small allocations.
#define ATLAS_KV_DEVICE_MARGIN (768ull << 20)

struct atlas_batch_seq {
  uint32_t *table;  // block ids, one per bt positions
  size_t blocks, table_cap;
  uint32_t *tokens;  // every token whose position is computed
  size_t length, tokens_cap;
  atlas_batch_seq *prev, *next;  // the engine's live sequences
};

// Makes room for positions length..length+more-1: a private copy of a
// shared last block, and new blocks. Returns what it took in `undo` so the
// caller can give it back.
typedef struct reserve_undo {
  atlas_batch_seq *seq;
  size_t old_blocks;
  uint32_t cow_index, cow_old;  // cow_index UINT32_MAX: no copy made
} reserve_undo;

struct atlas_batch_engine {
  atlas_model *model;
  const atlas_arch *arch;
  // Rank 0's pool keeps the books (blocks, references, the prefix cache);
  // a split model's other ranks hold their heads' keys and values in pools
  // of the same blocks on their devices (one block table for all).
  atlas_kv_pool *pool;
  int ranks;
  atlas_kv_pool **rank_pools;  // ranks entries; [0] is `pool`
  atlas_arch_kv_pages *pages;  // ranks entries
  atlas_arch_batch_limits limits;
  uint32_t bt;
  size_t vocab;
  atlas_batch_seq *live;
  size_t live_count;
  // Host arrays of one step, sized by the limits.
  uint32_t *tokens, *positions, *slots, *row_seq, *tables, *last_row, *ids;
  reserve_undo *undo;  // seqs
  float *logits;  // seqs x vocab, allocated at the first step that wants them
  size_t logits_rows;
};

static atlas_status oom(const char *what) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "batch step: no host memory for %s", what);
}

static atlas_status default_budget(atlas_model *model,
                                   const atlas_batch_engine_options *o,
                                   uint64_t per_seq, uint64_t *out) {
  atlas_backend *b = atlas_model_backend(model);
  const char *name = atlas_backend_name(b);
  if (strncmp(name, "cuda", 4) == 0) {
    size_t free_bytes = 0;
    ATLAS_RETURN_IF_ERROR(atlas_backend_device_free_memory(b, &free_bytes),
                          "sizing the KV pool");
    uint64_t budget = atlas_model_spec_of(model)->device_budget_bytes;
    uint64_t live = atlas_backend_live_bytes(b);
    if (budget != 0) {
      uint64_t left = budget > live ? budget - live : 0;
      if (left < free_bytes) free_bytes = (size_t)left;
    }
    *out = free_bytes > ATLAS_KV_DEVICE_MARGIN
               ? (uint64_t)free_bytes - ATLAS_KV_DEVICE_MARGIN
               : 0;
    return ATLAS_OK;
  }
  size_t n = o->default_sequences ? o->default_sequences : kDefaultSequences;
  *out = per_seq * n;
  return ATLAS_OK;
}

// One pool per device, each of the same blocks (rank r's on rank r's
// backend, of its KV heads); rank 0's keeps the books.
static atlas_status make_pools(atlas_batch_engine *e,
                               const atlas_kv_pool_options *po,
                               atlas_dtype dtype) {
  for (int r = 0; r < e->ranks; ++r) {
    atlas_kv_pool *p = NULL;
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
        atlas_kv_pool_create(atlas_model_rank_backend(e->model, r), po, &p),
        "the KV pool of device %d of %d", r, e->ranks));
    e->rank_pools[r] = p;
    if (r == 0) e->pool = p;
    if (atlas_kv_pool_block_count(p) != atlas_kv_pool_block_count(e->pool)) {
      return atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "the KV pools of devices 0 and %d hold %zu and "
                               "%zu blocks (one block table needs the same)",
                               r, atlas_kv_pool_block_count(e->pool),
                               atlas_kv_pool_block_count(p));
    }
    e->pages[r].keys = atlas_kv_pool_keys(p);
    e->pages[r].values = atlas_kv_pool_values(p);
    e->pages[r].layer_elements = atlas_kv_pool_layer_elements(p);
    e->pages[r].dtype = dtype;
    e->pages[r].block_tokens = e->bt;
  }
  return ATLAS_OK;
}

atlas_status atlas_batch_engine_create(atlas_model *model,
                                       const atlas_batch_engine_options *o,
                                       atlas_batch_engine **out) {
  *out = NULL;
  const atlas_arch *arch = atlas_model_arch(model);
  if (!atlas_model_has_batch(model)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "the %s architecture has no batch step",
                             arch->name);
  }
  atlas_kv_pool_options po;
  memset(&po, 0, sizeof(po));
  atlas_arch_kv_shape shape;
  atlas_model_kv_shape(model, &shape);
  po.layers = shape.layers;
  po.kv_dim = shape.kv_dim;
  po.dtype = shape.dtype;
  po.block_tokens = o->block_tokens ? o->block_tokens : 16;
  po.prefix_cache = o->prefix_cache;
  atlas_arch_batch_limits lim;
  atlas_model_batch_limits(model, po.block_tokens, &lim);
  if (lim.rows == 0) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: this model has no batch step (loaded "
                             "without a prompt scratch, or a head size or "
                             "query group the paged kernels do not take)",
                             atlas_model_name(model));
  }
  po.min_blocks = lim.table_stride;
  uint64_t per_seq = atlas_kv_pool_block_bytes(&po) * lim.table_stride;
  po.budget_bytes = o->kv_budget_bytes;
  if (po.budget_bytes == 0) {
    ATLAS_RETURN_IF_ERROR(default_budget(model, o, per_seq, &po.budget_bytes));
  }
  atlas_batch_engine *e = calloc(1, sizeof(*e));
  if (e == NULL) return oom("the engine");
  e->model = model;
  e->arch = arch;
  e->limits = lim;
  e->bt = po.block_tokens;
  e->vocab = (size_t)atlas_model_vocab_size(model);
  size_t r = lim.rows, s = lim.seqs;
  e->tokens = malloc(r * sizeof(uint32_t));
  e->positions = malloc(r * sizeof(uint32_t));
  e->slots = malloc(r * sizeof(uint32_t));
  e->row_seq = malloc(r * sizeof(uint32_t));
  e->tables = calloc(s * lim.table_stride, sizeof(uint32_t));
  e->last_row = malloc(s * sizeof(uint32_t));
  e->ids = malloc(s * sizeof(uint32_t));
  e->undo = malloc(s * sizeof(reserve_undo));
  e->ranks = atlas_model_tensor_parallel(model);
  e->rank_pools = calloc((size_t)e->ranks, sizeof(atlas_kv_pool *));
  e->pages = calloc((size_t)e->ranks, sizeof(*e->pages));
  atlas_status st = ATLAS_OK;
  if (e->tokens == NULL || e->positions == NULL || e->slots == NULL ||
      e->row_seq == NULL || e->tables == NULL || e->last_row == NULL ||
      e->ids == NULL || e->undo == NULL || e->rank_pools == NULL ||
      e->pages == NULL) {
    st = oom("the step's arrays");
  }
  if (st == ATLAS_OK) st = make_pools(e, &po, shape.dtype);
  if (st != ATLAS_OK) {
    atlas_status_free(atlas_batch_engine_destroy(e));
    return st;
  }
  *out = e;
  return ATLAS_OK;
}

atlas_status atlas_batch_engine_destroy(atlas_batch_engine *e) {
  if (e == NULL) return ATLAS_OK;
  size_t left = e->live_count;
  while (e->live != NULL) atlas_batch_seq_free(e, e->live);
  atlas_status st = atlas_kv_pool_destroy(e->pool);
  for (int r = 1; e->rank_pools != NULL && r < e->ranks; ++r) {
    if (e->rank_pools[r] == NULL) continue;
    st = atlas_status_join(
        st, atlas_status_annotate(atlas_kv_pool_destroy(e->rank_pools[r]),
                                  "the KV pool of device %d", r));
  }
  free(e->rank_pools);
  free(e->pages);
  free(e->tokens);
  free(e->positions);
  free(e->slots);
  free(e->row_seq);
  free(e->tables);
  free(e->last_row);
  free(e->ids);
  free(e->undo);
  free(e->logits);
  free(e);
  if (left > 0) {
    st = atlas_status_join(
        st, atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                              "%zu sequences were still alive when the KV "
                              "pool was destroyed (freed now)",
                              left));
  }
  return st;
}

atlas_model *atlas_batch_engine_model(const atlas_batch_engine *e) {
  return e->model;
}
atlas_kv_pool *atlas_batch_engine_pool(atlas_batch_engine *e) {
  return e->pool;
}
size_t atlas_batch_engine_max_rows(const atlas_batch_engine *e) {
  return e->limits.rows;
}
size_t atlas_batch_engine_live(const atlas_batch_engine *e) {
  return e->live_count;
}
size_t atlas_batch_engine_max_seqs(const atlas_batch_engine *e) {
  return e->limits.seqs;
}

static void link_seq(atlas_batch_engine *e, atlas_batch_seq *s) {
  s->prev = NULL;
  s->next = e->live;
  if (e->live != NULL) e->live->prev = s;
  e->live = s;
  e->live_count++;
}

atlas_status atlas_batch_seq_create(atlas_batch_engine *e,
                                    atlas_batch_seq **out) {
  *out = NULL;
  atlas_batch_seq *s = calloc(1, sizeof(*s));
  if (s == NULL) return oom("a sequence");
  s->table_cap = e->limits.table_stride;
  s->table = malloc(s->table_cap * sizeof(uint32_t));
  if (s->table == NULL) {
    free(s);
    return oom("a block table");
  }
  link_seq(e, s);
  *out = s;
  return ATLAS_OK;
}

static atlas_status tokens_reserve(atlas_batch_seq *s, size_t n) {
  if (n <= s->tokens_cap) return ATLAS_OK;
  size_t cap = s->tokens_cap ? s->tokens_cap : 64;
  while (cap < n) cap *= 2;
  uint32_t *p = realloc(s->tokens, cap * sizeof(uint32_t));
  if (p == NULL) return oom("a sequence's tokens");
  s->tokens = p;
  s->tokens_cap = cap;
  return ATLAS_OK;
}

atlas_status atlas_batch_seq_fork(atlas_batch_engine *e,
                                  const atlas_batch_seq *parent,
                                  atlas_batch_seq **out) {
  ATLAS_RETURN_IF_ERROR(atlas_batch_seq_create(e, out));
  atlas_batch_seq *s = *out;
  atlas_status st = tokens_reserve(s, parent->length);
  if (st != ATLAS_OK) {
    atlas_batch_seq_free(e, s);
    *out = NULL;
    return st;
  }
  if (parent->length > 0) {
    memcpy(s->tokens, parent->tokens, parent->length * sizeof(uint32_t));
  }
  s->length = parent->length;
  for (size_t i = 0; i < parent->blocks; ++i) {
    s->table[i] = parent->table[i];
    atlas_kv_pool_ref(e->pool, parent->table[i]);
  }
  s->blocks = parent->blocks;
  return ATLAS_OK;
}

void atlas_batch_seq_free(atlas_batch_engine *e, atlas_batch_seq *s) {
  if (s == NULL) return;
  for (size_t i = 0; i < s->blocks; ++i)
    atlas_kv_pool_unref(e->pool, s->table[i]);
  if (s->prev != NULL) {
    s->prev->next = s->next;
  } else {
    e->live = s->next;
  }
  if (s->next != NULL) s->next->prev = s->prev;
  e->live_count--;
  free(s->table);
  free(s->tokens);
  free(s);
}

void atlas_batch_seq_free_all(atlas_batch_engine *e) {
  // Each free unlinks the head first (a head has no prev), which the
  // analyzer cannot see across the call.
  // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
  while (e->live != NULL) atlas_batch_seq_free(e, e->live);
}

size_t atlas_batch_seq_length(const atlas_batch_seq *s) { return s->length; }
const uint32_t *atlas_batch_seq_tokens(const atlas_batch_seq *s) {
  return s->tokens;
}
size_t atlas_batch_seq_blocks(const atlas_batch_seq *s) { return s->blocks; }

atlas_status atlas_batch_seq_reuse_prefix(atlas_batch_engine *e,
                                          atlas_batch_seq *s,
                                          const uint32_t *prompt, size_t n,
                                          size_t *out_reused) {
  *out_reused = 0;
  if (s->length != 0 || n == 0) return ATLAS_OK;
  size_t full = (n - 1) / e->bt;  // leave a token to compute
  if (full > s->table_cap) full = s->table_cap;
  ATLAS_RETURN_IF_ERROR(tokens_reserve(s, full * e->bt));
  uint32_t parent = ATLAS_KV_NO_BLOCK;
  size_t i = 0;
  for (; i < full; ++i) {
    uint32_t b = atlas_kv_pool_lookup(e->pool, parent, prompt + i * e->bt);
    if (b == ATLAS_KV_NO_BLOCK) break;
    s->table[i] = b;
    parent = b;
  }
  s->blocks = i;
  s->length = i * e->bt;
  if (s->length > 0) memcpy(s->tokens, prompt, s->length * sizeof(uint32_t));
  *out_reused = s->length;
  return ATLAS_OK;
}

size_t atlas_batch_seq_blocks_needed(const atlas_batch_engine *e,
                                     const atlas_batch_seq *s, size_t more) {
  size_t want = (s->length + more + e->bt - 1) / e->bt;
  size_t n = want > s->blocks ? want - s->blocks : 0;
  // The block the first new position falls in is shared: a copy.
  if (s->length % e->bt != 0 && s->blocks > 0 &&
      atlas_kv_pool_refs(e->pool, s->table[s->length / e->bt]) > 1) {
    n++;
  }
  return n;
}

// Copy on write, on every device.
static atlas_status copy_block(atlas_batch_engine *e, uint32_t from,
                               uint32_t to) {
  for (int r = 0; r < e->ranks; ++r) {
    ATLAS_RETURN_IF_ERROR(atlas_kv_pool_copy(e->rank_pools[r], from, to),
                          "copying a shared KV block on device %d", r);
  }
  return ATLAS_OK;
}

static atlas_status reserve(atlas_batch_engine *e, atlas_batch_seq *s,
                            size_t more, reserve_undo *u) {
  u->seq = s;
  u->old_blocks = s->blocks;
  u->cow_index = UINT32_MAX;
  size_t want = (s->length + more + e->bt - 1) / e->bt;
  if (want > s->table_cap) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step: %zu positions pass the model's %zu "
                             "(block table of %zu)",
                             s->length + more, s->table_cap * e->bt,
                             s->table_cap);
  }
  if (s->length % e->bt != 0) {
    size_t i = s->length / e->bt;
    uint32_t old = s->table[i];
    if (atlas_kv_pool_refs(e->pool, old) > 1) {
      uint32_t b = ATLAS_KV_NO_BLOCK;
      ATLAS_RETURN_IF_ERROR(atlas_kv_pool_alloc(e->pool, &b));
      atlas_status st = copy_block(e, old, b);
      if (st != ATLAS_OK) {
        atlas_kv_pool_unref(e->pool, b);
        return st;
      }
      s->table[i] = b;
      u->cow_index = (uint32_t)i;
      u->cow_old = old;  // still referenced by s until the step commits
    }
  }
  while (s->blocks < want) {
    uint32_t b = ATLAS_KV_NO_BLOCK;
    ATLAS_RETURN_IF_ERROR(atlas_kv_pool_alloc(e->pool, &b));
    s->table[s->blocks++] = b;
  }
  return ATLAS_OK;
}

static void undo_reserve(atlas_batch_engine *e, reserve_undo *u) {
  atlas_batch_seq *s = u->seq;
  while (s->blocks > u->old_blocks)
    atlas_kv_pool_unref(e->pool, s->table[--s->blocks]);
  if (u->cow_index != UINT32_MAX) {
    atlas_kv_pool_unref(e->pool, s->table[u->cow_index]);
    s->table[u->cow_index] = u->cow_old;
  }
}

// The copy is the sequence's now: its reference on the shared block goes.
static void commit_reserve(atlas_batch_engine *e, reserve_undo *u) {
  if (u->cow_index != UINT32_MAX) atlas_kv_pool_unref(e->pool, u->cow_old);
}

static atlas_status check_items(const atlas_batch_engine *e,
                                const atlas_batch_item *items, size_t count,
                                size_t *out_rows) {
  if (count == 0 || count > e->limits.seqs) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step of %zu sequences (1 to %zu)", count,
                             e->limits.seqs);
  }
  size_t rows = 0;
  for (size_t i = 0; i < count; ++i) {
    if (items[i].seq == NULL || items[i].tokens == NULL ||
        items[i].count == 0) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "batch item %zu: no sequence or no tokens", i);
    }
    for (size_t j = 0; j < i; ++j) {
      if (items[j].seq == items[i].seq) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "batch items %zu and %zu name the same "
                                 "sequence",
                                 j, i);
      }
    }
    for (size_t t = 0; t < items[i].count; ++t) {
      if (items[i].tokens[t] >= e->vocab) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "batch item %zu: token %zu is id %u, outside "
                                 "the vocabulary (%zu ids)",
                                 i, t, items[i].tokens[t], e->vocab);
      }
    }
    rows += items[i].count;
  }
  if (rows > e->limits.rows) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "batch step of %zu tokens: at most %zu", rows,
                             e->limits.rows);
  }
  *out_rows = rows;
  return ATLAS_OK;
}

// The step's host arrays, from the items and their (reserved) tables.
static void fill_arrays(atlas_batch_engine *e, const atlas_batch_item *items,
                        size_t count) {
  size_t r = 0, stride = e->limits.table_stride;
  for (size_t i = 0; i < count; ++i) {
    const atlas_batch_seq *s = items[i].seq;
    memcpy(e->tables + i * stride, s->table, s->blocks * sizeof(uint32_t));
    for (size_t t = 0; t < items[i].count; ++t, ++r) {
      size_t pos = s->length + t;
      e->tokens[r] = items[i].tokens[t];
      e->positions[r] = (uint32_t)pos;
      e->slots[r] = s->table[pos / e->bt] * e->bt + (uint32_t)(pos % e->bt);
      e->row_seq[r] = (uint32_t)i;
    }
    e->last_row[i] = (uint32_t)(r - 1);
  }
}

// After a step: the tokens join the sequence, and its newly full blocks the
// prefix cache (keyed by the block before and their tokens).
static atlas_status advance(atlas_batch_engine *e, atlas_batch_item *it) {
  atlas_batch_seq *s = it->seq;
  size_t old = s->length;
  ATLAS_RETURN_IF_ERROR(tokens_reserve(s, old + it->count));
  memcpy(s->tokens + old, it->tokens, it->count * sizeof(uint32_t));
  s->length = old + it->count;
  for (size_t b = old / e->bt; b < s->length / e->bt; ++b) {
    uint32_t parent = b > 0 ? s->table[b - 1] : ATLAS_KV_NO_BLOCK;
    uint32_t canon = s->table[b];
    ATLAS_RETURN_IF_ERROR(atlas_kv_pool_publish(e->pool, s->table[b], parent,
                                                s->tokens + b * e->bt, &canon));
    if (canon != s->table[b]) {
      atlas_kv_pool_unref(e->pool, s->table[b]);
      s->table[b] = canon;
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_batch_step(atlas_batch_engine *e, atlas_batch_item *items,
                              size_t count) {
  size_t rows = 0;
  ATLAS_RETURN_IF_ERROR(check_items(e, items, count, &rows));
  bool want_logits = false, want_ids = false;
  for (size_t i = 0; i < count; ++i) {
    want_logits = want_logits || items[i].out_logits != NULL;
    want_ids = want_ids || items[i].out_id != NULL;
  }
  if (want_logits && e->logits_rows < count) {
    float *p = realloc(e->logits, count * e->vocab * sizeof(float));
    if (p == NULL) return oom("the step's logits");
    e->logits = p;
    e->logits_rows = count;
  }
  reserve_undo *undo = e->undo;
  size_t reserved = 0;
  atlas_status st = ATLAS_OK;
  for (; reserved < count && st == ATLAS_OK; ++reserved) {
    st =
        reserve(e, items[reserved].seq, items[reserved].count, &undo[reserved]);
    if (st != ATLAS_OK) undo_reserve(e, &undo[reserved]);
  }
  if (st != ATLAS_OK) {
    for (size_t i = reserved - 1; i-- > 0;) undo_reserve(e, &undo[i]);
    return st;
  }
  for (size_t i = 0; i < count; ++i) commit_reserve(e, &undo[i]);
  fill_arrays(e, items, count);
  atlas_arch_batch b;
  memset(&b, 0, sizeof(b));
  b.rows = rows;
  b.tokens = e->tokens;
  b.positions = e->positions;
  b.slots = e->slots;
  b.row_seq = e->row_seq;
  b.seqs = count;
  b.tables = e->tables;
  b.table_stride = (uint32_t)e->limits.table_stride;
  b.last_row = e->last_row;
  // The status never points into `b` (cppcheck takes it for a pointer that
  // may).
  // cppcheck-suppress returnDanglingLifetime
  ATLAS_RETURN_IF_ERROR(atlas_model_forward_batch(
      e->model, &b, e->pages, want_logits ? e->logits : NULL,
      want_ids ? e->ids : NULL));
  for (size_t i = 0; i < count; ++i) {
    if (items[i].out_logits != NULL) {
      memcpy(items[i].out_logits, e->logits + i * e->vocab,
             e->vocab * sizeof(float));
    }
    if (items[i].out_id != NULL) *items[i].out_id = e->ids[i];
    st = atlas_status_join(st, advance(e, &items[i]));
  }
  return st;
}
