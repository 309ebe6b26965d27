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

// Rehashes into n slots (a power of two) from the entries' stored hashes.
static atlas_status strmap_rehash(atlas_strmap *m, size_t n) {
  if (!m->slots && m->count == 0) m->seed = atlas_hash_seed(m);
  atlas_strmap_slot *slots = calloc(n, sizeof(*slots));
  if (!slots) return oom("a hash table", n);
  for (size_t i = 0; i < m->count; i++) {
    const uint32_t h = m->entries[i].hash;
    size_t j = h & (n - 1);
    while (slots[j].entry) j = (j + 1) & (n - 1);
    slots[j].entry = (uint32_t)(i + 1);
    slots[j].hash = h;
  }
  free(m->slots);
  m->slots = slots;
  m->slot_mask = n - 1;
  return ATLAS_OK;
}

static atlas_status strmap_grow_entries(atlas_strmap *m, size_t n) {
  atlas_strmap_entry *e = realloc(m->entries, n * sizeof(*e));
  if (!e) return oom("a hash table's entries", n);
  m->entries = e;
  m->entries_cap = n;
  return ATLAS_OK;
}

static atlas_status strmap_grow_keys(atlas_strmap *m, size_t n) {
  char *k = realloc(m->keys, n);
  if (!k) return oom("a hash table's keys", n);
  m->keys = k;
  m->keys_cap = n;
  return ATLAS_OK;
}

atlas_status atlas_strmap_reserve(atlas_strmap *m, size_t count,
                                  size_t key_bytes) {
  if (count > UINT32_MAX - 1) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tokenizer: %zu keys are too many for a table",
                             count);
  }
  size_t n = m->slots ? m->slot_mask + 1 : 64;
  while (count * 4 > n * 3) n *= 2;  // at most 3/4 full, as put keeps it
  if (!m->slots || n > m->slot_mask + 1) {
    ATLAS_RETURN_IF_ERROR(strmap_rehash(m, n));
  }
  if (count > m->entries_cap) {
    ATLAS_RETURN_IF_ERROR(strmap_grow_entries(m, count));
  }
  if (m->keys_len + key_bytes > m->keys_cap) {
    ATLAS_RETURN_IF_ERROR(strmap_grow_keys(m, m->keys_len + key_bytes));
  }
  return ATLAS_OK;
}

// The slot holding key, or the empty slot where it would go.
static size_t strmap_find(const atlas_strmap *m, const char *key, size_t len,
                          uint32_t h) {
  size_t i = h & m->slot_mask;
  for (;;) {
    const atlas_strmap_slot s = m->slots[i];
    if (!s.entry) return i;
    if (s.hash == h) {
      const atlas_strmap_entry *e = &m->entries[s.entry - 1];
      if (e->key_len == len && memcmp(m->keys + e->key_off, key, len) == 0) {
        return i;
      }
    }
    i = (i + 1) & m->slot_mask;
  }
}

const atlas_strmap_entry *atlas_strmap_get(const atlas_strmap *m,
                                           const char *key, size_t len) {
  if (!m->slots) return NULL;
  const uint32_t h = atlas_hash_bytes(m->seed, key, len);
  const atlas_strmap_slot s = m->slots[strmap_find(m, key, len, h)];
  return s.entry ? &m->entries[s.entry - 1] : NULL;
}

atlas_status atlas_strmap_put(atlas_strmap *m, const char *key, size_t len,
                              uint32_t a, uint32_t b) {
  if (len > UINT32_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tokenizer: a %zu-byte key is too long", len);
  }
  if (!m->slots || (m->count + 1) * 4 > (m->slot_mask + 1) * 3) {
    ATLAS_RETURN_IF_ERROR(
        strmap_rehash(m, m->slots ? (m->slot_mask + 1) * 2 : 64));
  }
  const uint32_t h = atlas_hash_bytes(m->seed, key, len);
  const size_t i = strmap_find(m, key, len, h);
  if (m->slots[i].entry) {
    atlas_strmap_entry *found = &m->entries[m->slots[i].entry - 1];
    found->a = a;
    found->b = b;
    return ATLAS_OK;
  }
  if (m->count == m->entries_cap) {
    ATLAS_RETURN_IF_ERROR(
        strmap_grow_entries(m, m->entries_cap ? m->entries_cap * 2 : 64));
  }
  if (m->keys_len + len + 1 > m->keys_cap) {
    size_t n = m->keys_cap ? m->keys_cap : 1024;
    while (n < m->keys_len + len + 1) n *= 2;
    ATLAS_RETURN_IF_ERROR(strmap_grow_keys(m, n));
  }
  memcpy(m->keys + m->keys_len, key, len);
  m->keys[m->keys_len + len] = '\0';
  atlas_strmap_entry *e = &m->entries[m->count];
  e->key_off = m->keys_len;
  e->key_len = (uint32_t)len;
  e->hash = h;
  e->a = a;
  e->b = b;
  m->keys_len += len + 1;
  m->slots[i].entry = (uint32_t)(m->count + 1);
  m->slots[i].hash = h;
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

// Rehashes into n slots (a power of two).
static atlas_status pairmap_rehash(atlas_pairmap *m, size_t n) {
  if (!m->slots) m->seed = atlas_hash_seed(m);
  atlas_pairmap_cell *slots = malloc(n * sizeof(*slots));
  if (!slots) return oom("the merge table", n);
  // All-ones bytes make every key UINT64_MAX (empty), and every cell is
  // written, which the analyzer sees (it stops following a loop early).
  memset(slots, 0xff, n * sizeof(*slots));
  if (m->slots) {
    for (size_t i = 0; i <= m->mask; i++) {
      if (m->slots[i].key == UINT64_MAX) continue;
      size_t j = atlas_pairmap_slot(m, m->slots[i].key) & (n - 1);
      while (slots[j].key != UINT64_MAX) j = (j + 1) & (n - 1);
      slots[j] = m->slots[i];
    }
  }
  free(m->slots);
  m->slots = slots;
  m->mask = n - 1;
  return ATLAS_OK;
}

atlas_status atlas_pairmap_reserve(atlas_pairmap *m, size_t count) {
  if (count > (SIZE_MAX / sizeof(atlas_pairmap_cell)) / 4) {
    return oom("the merge table", count);
  }
  size_t n = m->slots ? m->mask + 1 : 16;
  while (count * 2 > n) n *= 2;  // at most half full, as put keeps it
  if (!m->slots || n > m->mask + 1) return pairmap_rehash(m, n);
  return ATLAS_OK;
}

atlas_status atlas_pairmap_put(atlas_pairmap *m, uint32_t x, uint32_t y,
                               uint32_t a, uint32_t b) {
  if (!m->slots || (m->count + 1) * 2 > m->mask + 1) {
    ATLAS_RETURN_IF_ERROR(pairmap_rehash(m, m->slots ? (m->mask + 1) * 2 : 16));
  }
  uint64_t key = ((uint64_t)x << 32) | y;
  size_t i = atlas_pairmap_slot(m, key) & m->mask;
  while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key) {
    i = (i + 1) & m->mask;
  }
  if (m->slots[i].key == UINT64_MAX) m->count++;
  m->slots[i].key = key;
  m->slots[i].a = a;
  m->slots[i].b = b;
  return ATLAS_OK;
}

void atlas_pairmap_free(atlas_pairmap *m) {
  free(m->slots);
  memset(m, 0, sizeof(*m));
}
