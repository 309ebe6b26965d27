// The paged KV pool and its prefix cache (kv_pool.h).
#include "atlas/runtime/serve/kv_pool.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/checked_math.h"

enum { kDefaultBlockTokens = 16 };

typedef struct kv_block {
  uint32_t refs;
  uint32_t children;  // cached blocks whose parent this is (each holds a ref)
  bool cached;        // in the prefix table (key: parent + tokens)
  uint32_t parent;    // cached only: the block before it (held by a ref)
  uint64_t key;       // cached only: hash of parent and tokens
  // The least recently released cached blocks first (refs == 1: the
  // cache's own reference), for eviction.
  uint32_t lru_prev, lru_next;
  bool in_lru;
  uint32_t next_free;
} kv_block;

struct atlas_kv_pool {
  atlas_backend *backend;
  atlas_kv_pool_options options;
  size_t blocks;
  uint64_t bytes;
  void *base;  // keys, then values
  size_t layer_elements;
  kv_block *info;
  uint32_t *tokens;  // block_tokens ids per block (cached blocks' keys)
  uint32_t free_head;
  size_t free_count;
  uint32_t lru_head, lru_tail;  // evictable cached blocks, oldest first
  size_t lru_count;
  // Open addressing: slots hold block ids (ATLAS_KV_NO_BLOCK: empty).
  uint32_t *table;
  size_t table_size;  // a power of two, >= 2 * blocks
  size_t cached_count;
  uint64_t hits;
};

uint64_t atlas_kv_pool_block_bytes(const atlas_kv_pool_options *o) {
  uint64_t bt = o->block_tokens ? o->block_tokens : kDefaultBlockTokens;
  return 2 * (uint64_t)o->layers * bt * (uint64_t)o->kv_dim *
         atlas_dtype_size(o->dtype);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

static uint64_t key_of(const atlas_kv_pool *p, uint32_t parent,
                       const uint32_t *tokens) {
  uint64_t h = mix(0x243f6a8885a308d3ull, parent);
  for (uint32_t i = 0; i < p->options.block_tokens; ++i) h = mix(h, tokens[i]);
  return h;
}

atlas_status atlas_kv_pool_create(atlas_backend *backend,
                                  const atlas_kv_pool_options *options,
                                  atlas_kv_pool **out_pool) {
  *out_pool = NULL;
  atlas_kv_pool_options o = *options;
  if (o.block_tokens == 0) o.block_tokens = kDefaultBlockTokens;
  if (o.layers <= 0 || o.kv_dim <= 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "KV pool: %lld layers of %lld elements",
                             (long long)o.layers, (long long)o.kv_dim);
  }
  uint64_t per = atlas_kv_pool_block_bytes(&o);
  uint64_t blocks = per ? o.budget_bytes / per : 0;
  if (blocks > UINT32_MAX - 1) blocks = UINT32_MAX - 1;
  if (blocks == 0 || blocks < o.min_blocks) {
    return atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "KV pool: a budget of %llu bytes holds %llu blocks of %llu bytes "
        "(%u positions each); one sequence of the model's positions needs "
        "%zu (raise the KV budget or lower max_seq)",
        (unsigned long long)o.budget_bytes, (unsigned long long)blocks,
        (unsigned long long)per, o.block_tokens, o.min_blocks);
  }
  atlas_kv_pool *p = calloc(1, sizeof(*p));
  if (p == NULL) goto oom;
  p->backend = backend;
  p->options = o;
  p->blocks = (size_t)blocks;
  p->bytes = per * blocks;
  p->layer_elements = p->blocks * o.block_tokens * (size_t)o.kv_dim;
  p->info = calloc(p->blocks, sizeof(kv_block));
  p->tokens = calloc(p->blocks * o.block_tokens, sizeof(uint32_t));
  p->table_size = 16;
  while (p->table_size < 2 * p->blocks) p->table_size *= 2;
  p->table = malloc(p->table_size * sizeof(uint32_t));
  if (p->info == NULL || p->tokens == NULL || p->table == NULL) goto oom;
  for (size_t i = 0; i < p->table_size; ++i) p->table[i] = ATLAS_KV_NO_BLOCK;
  for (size_t i = 0; i < p->blocks; ++i) {
    p->info[i].next_free =
        i + 1 < p->blocks ? (uint32_t)i + 1 : ATLAS_KV_NO_BLOCK;
    p->info[i].parent = ATLAS_KV_NO_BLOCK;
  }
  p->free_head = 0;
  p->free_count = p->blocks;
  p->lru_head = p->lru_tail = ATLAS_KV_NO_BLOCK;
  atlas_status s = atlas_backend_alloc(backend, (size_t)p->bytes, &p->base);
  if (s != ATLAS_OK) {
    free(p->table);
    free(p->tokens);
    free(p->info);
    free(p);
    return atlas_status_annotate(s, "KV pool of %llu blocks (%llu bytes)",
                                 (unsigned long long)blocks,
                                 (unsigned long long)(per * blocks));
  }
  *out_pool = p;
  return ATLAS_OK;
oom:
  if (p != NULL) {
    free(p->table);
    free(p->tokens);
    free(p->info);
    free(p);
  }
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "KV pool: no host memory for the bookkeeping of "
                           "%llu blocks",
                           (unsigned long long)blocks);
}

atlas_status atlas_kv_pool_destroy(atlas_kv_pool *p) {
  if (p == NULL) return ATLAS_OK;
  // Only the cache's references (its own, and cached children's on their
  // parents) may remain; anything more is a sequence never freed.
  size_t held = 0;
  uint32_t *children = calloc(p->blocks, sizeof(uint32_t));
  if (children != NULL) {
    for (size_t i = 0; i < p->blocks; ++i) {
      if (p->info[i].cached && p->info[i].parent != ATLAS_KV_NO_BLOCK) {
        children[p->info[i].parent]++;
      }
    }
    for (size_t i = 0; i < p->blocks; ++i) {
      uint32_t cache_refs = (p->info[i].cached ? 1u : 0u) + children[i];
      if (p->info[i].refs > cache_refs) held++;
    }
    free(children);
  }
  atlas_status s = atlas_backend_free(p->backend, p->base);
  free(p->table);
  free(p->tokens);
  free(p->info);
  free(p);
  if (s == ATLAS_OK && held > 0) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "KV pool destroyed while sequences held %zu of "
                             "its blocks (a sequence was never freed)",
                             held);
  }
  return s;
}

uint32_t atlas_kv_pool_block_tokens(const atlas_kv_pool *p) {
  return p->options.block_tokens;
}
size_t atlas_kv_pool_block_count(const atlas_kv_pool *p) { return p->blocks; }
void *atlas_kv_pool_keys(const atlas_kv_pool *p) { return p->base; }
void *atlas_kv_pool_values(const atlas_kv_pool *p) {
  return (char *)p->base + p->bytes / 2;
}
size_t atlas_kv_pool_layer_elements(const atlas_kv_pool *p) {
  return p->layer_elements;
}

static void lru_remove(atlas_kv_pool *p, uint32_t b) {
  kv_block *k = &p->info[b];
  if (!k->in_lru) return;
  if (k->lru_prev != ATLAS_KV_NO_BLOCK) {
    p->info[k->lru_prev].lru_next = k->lru_next;
  } else {
    p->lru_head = k->lru_next;
  }
  if (k->lru_next != ATLAS_KV_NO_BLOCK) {
    p->info[k->lru_next].lru_prev = k->lru_prev;
  } else {
    p->lru_tail = k->lru_prev;
  }
  k->in_lru = false;
  p->lru_count--;
}

static void lru_push(atlas_kv_pool *p, uint32_t b) {
  kv_block *k = &p->info[b];
  k->lru_prev = p->lru_tail;
  k->lru_next = ATLAS_KV_NO_BLOCK;
  if (p->lru_tail != ATLAS_KV_NO_BLOCK) {
    p->info[p->lru_tail].lru_next = b;
  } else {
    p->lru_head = b;
  }
  p->lru_tail = b;
  k->in_lru = true;
  p->lru_count++;
}

static void push_free(atlas_kv_pool *p, uint32_t b) {
  p->info[b].next_free = p->free_head;
  p->free_head = b;
  p->free_count++;
}

// The table slot holding `b`, or the table size when it is not there.
static size_t table_find_block(const atlas_kv_pool *p, uint32_t b) {
  size_t mask = p->table_size - 1;
  for (size_t i = p->info[b].key & mask, n = 0; n < p->table_size;
       i = (i + 1) & mask, ++n) {
    if (p->table[i] == ATLAS_KV_NO_BLOCK) return p->table_size;
    if (p->table[i] == b) return i;
  }
  return p->table_size;
}

// Removes slot i, moving later entries of its run back (linear probing).
static void table_erase(atlas_kv_pool *p, size_t i) {
  size_t mask = p->table_size - 1;
  p->table[i] = ATLAS_KV_NO_BLOCK;
  for (size_t j = (i + 1) & mask; p->table[j] != ATLAS_KV_NO_BLOCK;
       j = (j + 1) & mask) {
    uint32_t b = p->table[j];
    p->table[j] = ATLAS_KV_NO_BLOCK;
    size_t k = p->info[b].key & mask;
    while (p->table[k] != ATLAS_KV_NO_BLOCK) k = (k + 1) & mask;
    p->table[k] = b;
  }
}

void atlas_kv_pool_ref(atlas_kv_pool *p, uint32_t b) {
  kv_block *k = &p->info[b];
  if (k->in_lru) lru_remove(p, b);
  k->refs++;
}

static void release(atlas_kv_pool *p, uint32_t b);

// Drops a cached block from the cache (its last reference is the cache's):
// out of the table, its parent released.
static void evict(atlas_kv_pool *p, uint32_t b) {
  kv_block *k = &p->info[b];
  lru_remove(p, b);
  size_t i = table_find_block(p, b);
  if (i < p->table_size) table_erase(p, i);
  k->cached = false;
  p->cached_count--;
  uint32_t parent = k->parent;
  k->parent = ATLAS_KV_NO_BLOCK;
  k->refs = 0;
  push_free(p, b);
  if (parent != ATLAS_KV_NO_BLOCK) {
    p->info[parent].children--;
    release(p, parent);
  }
}

static void release(atlas_kv_pool *p, uint32_t b) {
  kv_block *k = &p->info[b];
  if (k->refs == 0) return;  // a caller's double release: ignored
  k->refs--;
  if (k->cached && k->refs == 1) {
    lru_push(p, b);  // only the cache holds it: evictable
  } else if (!k->cached && k->refs == 0) {
    push_free(p, b);
  }
}

void atlas_kv_pool_unref(atlas_kv_pool *p, uint32_t b) { release(p, b); }

uint32_t atlas_kv_pool_refs(const atlas_kv_pool *p, uint32_t b) {
  return p->info[b].refs;
}

size_t atlas_kv_pool_available(const atlas_kv_pool *p) {
  return p->free_count + p->lru_count;
}

atlas_status atlas_kv_pool_alloc(atlas_kv_pool *p, uint32_t *out_block) {
  *out_block = ATLAS_KV_NO_BLOCK;
  if (p->free_count == 0 && p->lru_head != ATLAS_KV_NO_BLOCK) {
    evict(p, p->lru_head);
  }
  if (p->free_count == 0) {
    return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                             "KV pool: all %zu blocks (%u positions each) "
                             "are held by running sequences",
                             p->blocks, p->options.block_tokens);
  }
  uint32_t b = p->free_head;
  p->free_head = p->info[b].next_free;
  p->free_count--;
  p->info[b].refs = 1;
  p->info[b].next_free = ATLAS_KV_NO_BLOCK;
  *out_block = b;
  return ATLAS_OK;
}

atlas_status atlas_kv_pool_copy(atlas_kv_pool *p, uint32_t from, uint32_t to) {
  size_t elt = atlas_dtype_size(p->options.dtype);
  size_t rows = p->options.block_tokens;
  size_t block_bytes = rows * (size_t)p->options.kv_dim * elt;
  char *keys = atlas_kv_pool_keys(p), *values = atlas_kv_pool_values(p);
  for (int64_t l = 0; l < p->options.layers; ++l) {
    size_t layer = (size_t)l * p->layer_elements * elt;
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_d2d(p->backend, keys + layer + to * block_bytes,
                          keys + layer + from * block_bytes, block_bytes));
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_d2d(p->backend, values + layer + to * block_bytes,
                          values + layer + from * block_bytes, block_bytes));
  }
  return ATLAS_OK;
}

static bool same_key(const atlas_kv_pool *p, uint32_t b, uint32_t parent,
                     const uint32_t *tokens) {
  uint32_t bt = p->options.block_tokens;
  return p->info[b].parent == parent &&
         memcmp(p->tokens + (size_t)b * bt, tokens, bt * sizeof(uint32_t)) == 0;
}

static uint32_t find(const atlas_kv_pool *p, uint64_t key, uint32_t parent,
                     const uint32_t *tokens) {
  size_t mask = p->table_size - 1;
  for (size_t i = key & mask, n = 0; n < p->table_size;
       i = (i + 1) & mask, ++n) {
    uint32_t b = p->table[i];
    if (b == ATLAS_KV_NO_BLOCK) return ATLAS_KV_NO_BLOCK;
    if (p->info[b].key == key && same_key(p, b, parent, tokens)) return b;
  }
  return ATLAS_KV_NO_BLOCK;
}

uint32_t atlas_kv_pool_lookup(atlas_kv_pool *p, uint32_t parent,
                              const uint32_t *tokens) {
  if (!p->options.prefix_cache) return ATLAS_KV_NO_BLOCK;
  uint32_t b = find(p, key_of(p, parent, tokens), parent, tokens);
  if (b == ATLAS_KV_NO_BLOCK) return b;
  atlas_kv_pool_ref(p, b);
  p->hits++;
  return b;
}

atlas_status atlas_kv_pool_publish(atlas_kv_pool *p, uint32_t b,
                                   uint32_t parent, const uint32_t *tokens,
                                   uint32_t *out_block) {
  *out_block = b;
  if (!p->options.prefix_cache || p->info[b].cached) return ATLAS_OK;
  // Only a chain from a prompt's first block is found again.
  if (parent != ATLAS_KV_NO_BLOCK && !p->info[parent].cached) return ATLAS_OK;
  uint64_t key = key_of(p, parent, tokens);
  uint32_t have = find(p, key, parent, tokens);
  if (have != ATLAS_KV_NO_BLOCK) {
    // The same prefix is cached already: the caller takes that block (the
    // same keys and values) and lets its own copy go.
    atlas_kv_pool_ref(p, have);
    *out_block = have;
    return ATLAS_OK;
  }
  uint32_t bt = p->options.block_tokens;
  kv_block *k = &p->info[b];
  memcpy(p->tokens + (size_t)b * bt, tokens, bt * sizeof(uint32_t));
  k->key = key;
  k->parent = parent;
  k->cached = true;
  k->refs++;  // the cache's own reference
  if (parent != ATLAS_KV_NO_BLOCK) {
    atlas_kv_pool_ref(p, parent);
    p->info[parent].children++;
  }
  size_t mask = p->table_size - 1, i = key & mask;
  while (p->table[i] != ATLAS_KV_NO_BLOCK) i = (i + 1) & mask;
  p->table[i] = b;
  p->cached_count++;
  return ATLAS_OK;
}

void atlas_kv_pool_stats_get(const atlas_kv_pool *p, atlas_kv_pool_stats *out) {
  memset(out, 0, sizeof(*out));
  out->total = p->blocks;
  out->free = p->free_count;
  // Cached: held by the cache alone (its own reference and those of its
  // cached children), whether evictable now (a leaf) or later.
  for (size_t i = 0; i < p->blocks; ++i) {
    const kv_block *k = &p->info[i];
    if (k->cached && k->refs == 1 + k->children) out->cached++;
  }
  out->used = p->blocks - p->free_count - out->cached;
  out->bytes = p->bytes;
  out->hits = p->hits;
}
