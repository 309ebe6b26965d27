#define _GNU_SOURCE  // getrandom, clock_gettime
#include "atlas/runtime/text/hash_map.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static atlas_status oom(const char *what, size_t n) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory growing %s to %zu", what,
                           n);
}

uint64_t atlas_hash_seed(const void *map) {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec ^
           (uint64_t)(uintptr_t)map;
  }
  return seed;
}

uint32_t atlas_hash_bytes(uint64_t seed, const void *data, size_t len) {
  const unsigned char *p = data;
  uint64_t h = seed ^ 0x243F6A8885A308D3ull ^ (len * 0x9E3779B97F4A7C15ull);
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9ull;
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
    p += 8;
    len -= 8;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < len; i++) w |= (uint64_t)p[i] << (8 * i);
  h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 29;
  h *= 0x9E3779B97F4A7C15ull;
  h ^= seed >> 17;
  h = (h ^ (h >> 29)) * 0x94D049BB133111EBull;
  return (uint32_t)(h >> 32);
}

static atlas_status strmap_grow_slots(atlas_strmap *m) {
  if (!m->slots && m->count == 0) m->seed = atlas_hash_seed(m);
  size_t n = m->slots ? (m->slot_mask + 1) * 2 : 64;
  uint32_t *slots = calloc(n, sizeof(*slots));
  if (!slots) return oom("a hash table", n);
  for (size_t i = 0; i < m->count; i++) {
    size_t j = m->entries[i].hash & (n - 1);
    while (slots[j]) j = (j + 1) & (n - 1);
    slots[j] = (uint32_t)(i + 1);
  }
  free(m->slots);
  m->slots = slots;
  m->slot_mask = n - 1;
  return ATLAS_OK;
}

const atlas_strmap_entry *atlas_strmap_get(const atlas_strmap *m,
                                           const char *key, size_t len) {
  if (!m->slots) return NULL;
  uint32_t h = atlas_hash_bytes(m->seed, key, len);
  size_t i = h & m->slot_mask;
  for (;;) {
    uint32_t s = m->slots[i];
    if (!s) return NULL;
    const atlas_strmap_entry *e = &m->entries[s - 1];
    if (e->hash == h && e->key_len == len &&
        memcmp(m->keys + e->key_off, key, len) == 0) {
      return e;
    }
    i = (i + 1) & m->slot_mask;
  }
}

atlas_status atlas_strmap_put(atlas_strmap *m, const char *key, size_t len,
                              uint32_t a, uint32_t b) {
  if (len > UINT32_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tokenizer: a %zu-byte key is too long", len);
  }
  atlas_strmap_entry *found =
      (atlas_strmap_entry *)atlas_strmap_get(m, key, len);
  if (found) {
    found->a = a;
    found->b = b;
    return ATLAS_OK;
  }
  if (!m->slots || (m->count + 1) * 4 > (m->slot_mask + 1) * 3) {
    ATLAS_RETURN_IF_ERROR(strmap_grow_slots(m));
  }
  if (m->count == m->entries_cap) {
    size_t n = m->entries_cap ? m->entries_cap * 2 : 64;
    atlas_strmap_entry *e = realloc(m->entries, n * sizeof(*e));
    if (!e) return oom("a hash table's entries", n);
    m->entries = e;
    m->entries_cap = n;
  }
  if (m->keys_len + len + 1 > m->keys_cap) {
    size_t n = m->keys_cap ? m->keys_cap : 1024;
    while (n < m->keys_len + len + 1) n *= 2;
    char *k = realloc(m->keys, n);
    if (!k) return oom("a hash table's keys", n);
    m->keys = k;
    m->keys_cap = n;
  }
  memcpy(m->keys + m->keys_len, key, len);
  m->keys[m->keys_len + len] = '\0';
  uint32_t h = atlas_hash_bytes(m->seed, key, len);
  atlas_strmap_entry *e = &m->entries[m->count];
  e->key_off = m->keys_len;
  e->key_len = (uint32_t)len;
  e->hash = h;
  e->a = a;
  e->b = b;
  m->keys_len += len + 1;
  size_t i = h & m->slot_mask;
  while (m->slots[i]) i = (i + 1) & m->slot_mask;
  m->slots[i] = (uint32_t)(m->count + 1);
  m->count++;
  return ATLAS_OK;
}

void atlas_strmap_clear(atlas_strmap *m) {
  if (m->slots) memset(m->slots, 0, (m->slot_mask + 1) * sizeof(*m->slots));
  m->count = 0;
  m->keys_len = 0;
}

void atlas_strmap_free(atlas_strmap *m) {
  free(m->slots);
  free(m->entries);
  free(m->keys);
  memset(m, 0, sizeof(*m));
}

static atlas_status pairmap_grow(atlas_pairmap *m) {
  if (!m->keys) m->seed = atlas_hash_seed(m);
  size_t n = m->keys ? (m->mask + 1) * 2 : 1024;
  uint64_t *keys = malloc(n * sizeof(*keys));
  uint32_t *a = malloc(n * sizeof(*a));
  uint32_t *b = malloc(n * sizeof(*b));
  if (!keys || !a || !b) {
    free(keys);
    free(a);
    free(b);
    return oom("the merge table", n);
  }
  for (size_t i = 0; i < n; i++) keys[i] = UINT64_MAX;
  if (m->keys) {
    for (size_t i = 0; i <= m->mask; i++) {
      if (m->keys[i] == UINT64_MAX) continue;
      size_t j = atlas_pairmap_slot(m, m->keys[i]) & (n - 1);
      while (keys[j] != UINT64_MAX) j = (j + 1) & (n - 1);
      keys[j] = m->keys[i];
      a[j] = m->a[i];
      b[j] = m->b[i];
    }
  }
  free(m->keys);
  free(m->a);
  free(m->b);
  m->keys = keys;
  m->a = a;
  m->b = b;
  m->mask = n - 1;
  return ATLAS_OK;
}

atlas_status atlas_pairmap_put(atlas_pairmap *m, uint32_t x, uint32_t y,
                               uint32_t a, uint32_t b) {
  if (!m->keys || (m->count + 1) * 2 > m->mask + 1) {
    ATLAS_RETURN_IF_ERROR(pairmap_grow(m));
  }
  uint64_t key = ((uint64_t)x << 32) | y;
  size_t i = atlas_pairmap_slot(m, key) & m->mask;
  while (m->keys[i] != UINT64_MAX && m->keys[i] != key) i = (i + 1) & m->mask;
  if (m->keys[i] == UINT64_MAX) m->count++;
  m->keys[i] = key;
  m->a[i] = a;
  m->b[i] = b;
  return ATLAS_OK;
}

void atlas_pairmap_free(atlas_pairmap *m) {
  free(m->keys);
  free(m->a);
  free(m->b);
  memset(m, 0, sizeof(*m));
}
