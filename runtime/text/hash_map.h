// Open-addressing hash maps the tokenizer looks things up in on every token:
// byte string -> two u32 values (vocab, added tokens, the word cache) and
// (u32, u32) pair -> two u32 values (BPE merge ranks).
//
// The keys come from files and prompts an attacker may write, so each map
// hashes with its own random seed (getrandom, drawn when the map first
// grows): keys chosen to collide under one seed do not collide under another,
// and lookups stay O(1) expected whatever the tokenizer.json or the prompt.
#ifndef ATLAS_RUNTIME_TEXT_HASH_MAP_H_
#define ATLAS_RUNTIME_TEXT_HASH_MAP_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

typedef struct atlas_strmap_entry {
  size_t key_off;
  uint32_t key_len;
  uint32_t hash;
  uint32_t a;
  uint32_t b;
} atlas_strmap_entry;

// A slot holds its entry's hash too: a probe past other keys reads only the
// slot array, not their entries (a cache miss each in a large vocabulary).
typedef struct atlas_strmap_slot {
  uint32_t entry;  // entry index + 1; 0 = empty
  uint32_t hash;
} atlas_strmap_slot;

typedef struct atlas_strmap {
  atlas_strmap_slot *slots;
  size_t slot_mask;
  atlas_strmap_entry *entries;
  size_t count;
  size_t entries_cap;
  char *keys;  // every key, back to back
  size_t keys_len;
  size_t keys_cap;
  uint64_t seed;
} atlas_strmap;

uint32_t atlas_hash_bytes(uint64_t seed, const void *data, size_t len);
// A random seed for a map (getrandom; a mix of the clock and addresses if
// that fails).
uint64_t atlas_hash_seed(const void *map);

// Makes room for `count` entries in all (and key_bytes more bytes of keys)
// at once, instead of growing by doubling as a loader inserts them.
ATLAS_MUST_USE atlas_status atlas_strmap_reserve(atlas_strmap *m, size_t count,
                                                 size_t key_bytes);
// Inserts key -> (a, b), or overwrites the values of an existing key.
ATLAS_MUST_USE atlas_status atlas_strmap_put(atlas_strmap *m, const char *key,
                                             size_t len, uint32_t a,
                                             uint32_t b);
// Returns the entry for key, or NULL.
const atlas_strmap_entry *atlas_strmap_get(const atlas_strmap *m,
                                           const char *key, size_t len);
static inline const char *atlas_strmap_key(const atlas_strmap *m,
                                           const atlas_strmap_entry *e) {
  return m->keys + e->key_off;
}
void atlas_strmap_clear(atlas_strmap *m);
void atlas_strmap_free(atlas_strmap *m);

// A pair's key and values side by side: one cache line a probe.
typedef struct atlas_pairmap_cell {
  uint64_t key;  // UINT64_MAX = empty
  uint32_t a;
  uint32_t b;
} atlas_pairmap_cell;

typedef struct atlas_pairmap {
  atlas_pairmap_cell *slots;
  size_t mask;
  size_t count;
  uint64_t seed;
} atlas_pairmap;

// The slot a pair hashes to (murmur3's 64-bit finalizer over the seeded key:
// a bijection, so distinct pairs never share a full hash).
static inline size_t atlas_pairmap_slot(const atlas_pairmap *m, uint64_t key) {
  uint64_t h = key ^ m->seed;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return (size_t)h;
}

// Makes room for `count` pairs in all at once.
ATLAS_MUST_USE atlas_status atlas_pairmap_reserve(atlas_pairmap *m,
                                                  size_t count);
ATLAS_MUST_USE atlas_status atlas_pairmap_put(atlas_pairmap *m, uint32_t x,
                                              uint32_t y, uint32_t a,
                                              uint32_t b);
// Returns false when (x, y) is absent.
static inline bool atlas_pairmap_get(const atlas_pairmap *m, uint32_t x,
                                     uint32_t y, uint32_t *out_a,
                                     uint32_t *out_b) {
  if (!m->slots) return false;
  uint64_t key = ((uint64_t)x << 32) | y;
  size_t i = atlas_pairmap_slot(m, key) & m->mask;
  for (;;) {
    uint64_t k = m->slots[i].key;
    if (k == key) {
      *out_a = m->slots[i].a;
      *out_b = m->slots[i].b;
      return true;
    }
    if (k == UINT64_MAX) return false;
    i = (i + 1) & m->mask;
  }
}
void atlas_pairmap_free(atlas_pairmap *m);

#endif  // ATLAS_RUNTIME_TEXT_HASH_MAP_H_
