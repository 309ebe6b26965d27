// The paged KV pool: one device allocation per model, cut into blocks of
// `block_tokens` positions, and the prefix cache over them.
//
// Layout (one ledgered allocation, site kv_pool.c): keys then values, each
// [layer][block * block_tokens + offset][kv_dim] in the pool's dtype. A
// position p of a sequence lives in block table[p / block_tokens] at row
// table[p / block_tokens] * block_tokens + p % block_tokens of every
// layer: the "slot" the forward's kernels index.
//
// Blocks are reference-counted: a sequence holds one reference on each
// block of its table (forks share blocks); the prefix cache holds full
// blocks by key (the parent block and the block's tokens, compared exactly:
// a hit never depends on a hash being unique), and each cached block holds a
// reference on its parent, so a chain is evicted leaf first. A block whose
// only holder is the cache is "cached": reusable by a prefix hit, and
// reclaimed (least recently used first) when the free list runs dry.
//
// Not thread-safe: the driving thread owns the pool (scheduler.h).
#ifndef ATLAS_RUNTIME_SERVE_KV_POOL_H_
#define ATLAS_RUNTIME_SERVE_KV_POOL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_KV_NO_BLOCK UINT32_MAX

typedef struct atlas_kv_pool atlas_kv_pool;

typedef struct atlas_kv_pool_options {
  int64_t layers;
  int64_t kv_dim;  // key (and value) elements per position and layer
  atlas_dtype dtype;
  uint32_t block_tokens;  // positions a block (0: 16)
  uint64_t budget_bytes;  // the allocation's size; blocks = what fits
  // Fewest blocks worth making (a sequence of max_seq positions):
  // RESOURCE_EXHAUSTED naming both figures below it.
  size_t min_blocks;
  bool prefix_cache;
} atlas_kv_pool_options;

// Makes the pool on `backend` (which must outlive it).
ATLAS_MUST_USE atlas_status atlas_kv_pool_create(
    atlas_backend *backend, const atlas_kv_pool_options *options,
    atlas_kv_pool **out_pool);

// Frees the allocation and the bookkeeping. Blocks still held by sequences
// are a caller's bug: the status names how many (everything is freed).
ATLAS_MUST_USE atlas_status atlas_kv_pool_destroy(atlas_kv_pool *pool);

// Bytes one block takes (keys and values of every layer).
uint64_t atlas_kv_pool_block_bytes(const atlas_kv_pool_options *options);

uint32_t atlas_kv_pool_block_tokens(const atlas_kv_pool *pool);
size_t atlas_kv_pool_block_count(const atlas_kv_pool *pool);
void *atlas_kv_pool_keys(const atlas_kv_pool *pool);
void *atlas_kv_pool_values(const atlas_kv_pool *pool);
// Elements between layers in keys (and values): blocks * block_tokens *
// kv_dim.
size_t atlas_kv_pool_layer_elements(const atlas_kv_pool *pool);

// A block for a sequence (one reference): a free one, else the least
// recently used cached one (dropped from the cache). RESOURCE_EXHAUSTED
// when every block is held.
ATLAS_MUST_USE atlas_status atlas_kv_pool_alloc(atlas_kv_pool *pool,
                                                uint32_t *out_block);
// Blocks alloc could hand out now (free + cached).
size_t atlas_kv_pool_available(const atlas_kv_pool *pool);

void atlas_kv_pool_ref(atlas_kv_pool *pool, uint32_t block);
void atlas_kv_pool_unref(atlas_kv_pool *pool, uint32_t block);
uint32_t atlas_kv_pool_refs(const atlas_kv_pool *pool, uint32_t block);

// Copies every layer's keys and values of block `from` into `to` (copy on
// write), on the backend's default stream.
ATLAS_MUST_USE atlas_status atlas_kv_pool_copy(atlas_kv_pool *pool,
                                               uint32_t from, uint32_t to);

// The prefix cache. `parent` is the block before (ATLAS_KV_NO_BLOCK for a
// prompt's first block); `tokens` its block_tokens ids.
// Lookup: the cached block for exactly that prefix, with a new reference
// for the caller, or ATLAS_KV_NO_BLOCK.
uint32_t atlas_kv_pool_lookup(atlas_kv_pool *pool, uint32_t parent,
                              const uint32_t *tokens);
// Publish: `block` (full, its contents computed) becomes the cached block
// for that prefix. When one is cached already, *out_block is that one, with
// a new reference for the caller (who then drops its own block: the same
// keys and values); else *out_block is `block`. Nothing happens without
// prefix caching or when `parent` is not cached itself.
ATLAS_MUST_USE atlas_status atlas_kv_pool_publish(atlas_kv_pool *pool,
                                                  uint32_t block,
                                                  uint32_t parent,
                                                  const uint32_t *tokens,
                                                  uint32_t *out_block);

typedef struct atlas_kv_pool_stats {
  size_t total, used, cached, free;
  uint64_t bytes;
  uint64_t hits;  // lookups that found a block
} atlas_kv_pool_stats;
void atlas_kv_pool_stats_get(const atlas_kv_pool *pool,
                             atlas_kv_pool_stats *out_stats);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SERVE_KV_POOL_H_
