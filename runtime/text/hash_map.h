// Open-addressing hash maps the tokenizer looks things up in on every token:
// byte string -> two u32 values (vocab, added tokens, the word cache) and
// (u32, u32) pair -> two u32 values (BPE merge ranks).
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

typedef struct atlas_strmap {
  uint32_t *slots;  // entry index + 1; 0 = empty
  size_t slot_mask;
  atlas_strmap_entry *entries;
  size_t count;
  size_t entries_cap;
  char *keys;  // every key, back to back
  size_t keys_len;
  size_t keys_cap;
} atlas_strmap;

uint32_t atlas_hash_bytes(const void *data, size_t len);

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

typedef struct atlas_pairmap {
  uint64_t *keys;  // UINT64_MAX = empty
  uint32_t *a;
  uint32_t *b;
  size_t mask;
  size_t count;
} atlas_pairmap;

ATLAS_MUST_USE atlas_status atlas_pairmap_put(atlas_pairmap *m, uint32_t x,
                                              uint32_t y, uint32_t a,
                                              uint32_t b);
// Returns false when (x, y) is absent.
static inline bool atlas_pairmap_get(const atlas_pairmap *m, uint32_t x,
                                     uint32_t y, uint32_t *out_a,
                                     uint32_t *out_b) {
  if (!m->keys) return false;
  uint64_t key = ((uint64_t)x << 32) | y;
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  size_t i = (size_t)(h >> 32) & m->mask;
  for (;;) {
    uint64_t k = m->keys[i];
    if (k == key) {
      *out_a = m->a[i];
      *out_b = m->b[i];
      return true;
    }
    if (k == UINT64_MAX) return false;
    i = (i + 1) & m->mask;
  }
}
void atlas_pairmap_free(atlas_pairmap *m);

#endif  // ATLAS_RUNTIME_TEXT_HASH_MAP_H_
