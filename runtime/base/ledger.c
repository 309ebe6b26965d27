// Ledger: open-addressing hash table of live allocations keyed by address.
//
// Linear probing with backward-shift deletion keeps insert/remove O(1) on
// average without tombstones. A ring of recently freed entries turns a double
// free into a message that says where the block had been allocated.
#include "atlas/runtime/base/ledger.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kFreedRingSize = 1024, kInitialCapacity = 64 };

typedef struct slot {
  bool used;
  atlas_ledger_entry entry;
} slot;

struct atlas_ledger {
  pthread_mutex_t mutex;
  slot *slots;
  size_t capacity;  // power of two
  size_t count;
  size_t live_bytes;
  uint64_t next_index;
  atlas_ledger_entry freed[kFreedRingSize];  // most recent frees
  size_t freed_next;
  size_t freed_count;
};

static size_t hash_addr(uintptr_t addr, size_t capacity) {
  uint64_t x = (uint64_t)addr;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (capacity - 1);
}

atlas_status atlas_ledger_create(atlas_ledger **out_ledger) {
  *out_ledger = NULL;
  atlas_ledger *l = calloc(1, sizeof(*l));
  if (l == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "ledger: cannot allocate %zu bytes", sizeof(*l));
  }
  l->slots = calloc(kInitialCapacity, sizeof(slot));
  if (l->slots == NULL) {
    free(l);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "ledger: cannot allocate its table");
  }
  l->capacity = kInitialCapacity;
  l->next_index = 1;
  pthread_mutex_init(&l->mutex, NULL);
  *out_ledger = l;
  return ATLAS_OK;
}

void atlas_ledger_destroy(atlas_ledger *ledger) {
  if (ledger == NULL) return;
  pthread_mutex_destroy(&ledger->mutex);
  free(ledger->slots);
  free(ledger);
}

static slot *find_slot(atlas_ledger *l, uintptr_t addr) {
  size_t mask = l->capacity - 1;
  for (size_t i = hash_addr(addr, l->capacity);; i = (i + 1) & mask) {
    slot *s = &l->slots[i];
    if (!s->used) return NULL;
    if (s->entry.addr == addr) return s;
  }
}

static void place(slot *slots, size_t capacity, const atlas_ledger_entry *e) {
  size_t mask = capacity - 1;
  size_t i = hash_addr(e->addr, capacity);
  while (slots[i].used) i = (i + 1) & mask;
  slots[i].used = true;
  slots[i].entry = *e;
}

static bool grow(atlas_ledger *l) {
  size_t capacity = l->capacity * 2;
  slot *slots = calloc(capacity, sizeof(slot));
  if (slots == NULL) return false;
  for (size_t i = 0; i < l->capacity; ++i) {
    if (l->slots[i].used) place(slots, capacity, &l->slots[i].entry);
  }
  free(l->slots);
  l->slots = slots;
  l->capacity = capacity;
  return true;
}

// Puts `e` in the table (growing it first when it would be 3/4 full) and
// counts it live. The caller holds the mutex and has checked the address.
static atlas_status add_locked(atlas_ledger *ledger,
                               const atlas_ledger_entry *e) {
  if ((ledger->count + 1) * 4 > ledger->capacity * 3 && !grow(ledger)) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "ledger: cannot grow its table past %zu slots",
                             ledger->capacity);
  }
  place(ledger->slots, ledger->capacity, e);
  ledger->count++;
  ledger->live_bytes += e->bytes;
  return ATLAS_OK;
}

atlas_status atlas_ledger_insert(atlas_ledger *ledger, uintptr_t addr,
                                 size_t bytes, size_t redzone_bytes,
                                 atlas_mem_kind kind, atlas_site site,
                                 uint64_t *out_index) {
  return atlas_ledger_insert_banded(ledger, addr, bytes, 0, redzone_bytes, kind,
                                    site, out_index);
}

atlas_status atlas_ledger_insert_banded(atlas_ledger *ledger, uintptr_t addr,
                                        size_t bytes, size_t lead_bytes,
                                        size_t redzone_bytes,
                                        atlas_mem_kind kind, atlas_site site,
                                        uint64_t *out_index) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&ledger->mutex);
  slot *existing = find_slot(ledger, addr);
  if (existing != NULL) {
    status =
        atlas_status_make(ATLAS_STATUS_INTERNAL,
                          "ledger: address 0x%" PRIxPTR
                          " handed out twice: still live from "
                          "%s:%d (%s)",
                          addr, existing->entry.site.file,
                          existing->entry.site.line, existing->entry.site.func);
  } else {
    atlas_ledger_entry e = {
        addr, bytes, redzone_bytes, lead_bytes, ledger->next_index,
        kind, site,  false};
    status = add_locked(ledger, &e);
    if (status == ATLAS_OK) {
      ledger->next_index++;
      if (out_index != NULL) *out_index = e.index;
    }
  }
  pthread_mutex_unlock(&ledger->mutex);
  return status;
}

atlas_status atlas_ledger_restore(atlas_ledger *ledger,
                                  const atlas_ledger_entry *entry) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&ledger->mutex);
  if (find_slot(ledger, entry->addr) != NULL) {
    status = atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "ledger: cannot keep 0x%" PRIxPTR
                               " (allocated at %s:%d (%s)) live: "
                               "the address was handed out again",
                               entry->addr, entry->site.file, entry->site.line,
                               entry->site.func);
  } else {
    atlas_ledger_entry e = *entry;
    e.release_failed = true;
    status = add_locked(ledger, &e);
  }
  pthread_mutex_unlock(&ledger->mutex);
  return status;
}

// Backward-shift deletion: moves later members of the probe run into the hole
// so lookups never need tombstones.
static void erase_slot(atlas_ledger *l, slot *hole) {
  size_t mask = l->capacity - 1;
  size_t i = (size_t)(hole - l->slots);
  size_t j = i;
  for (;;) {
    j = (j + 1) & mask;
    if (!l->slots[j].used) break;
    size_t home = hash_addr(l->slots[j].entry.addr, l->capacity);
    // Move j into i unless its home lies cyclically in (i, j].
    bool stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      l->slots[i] = l->slots[j];
      i = j;
    }
  }
  l->slots[i].used = false;
}

static const atlas_ledger_entry *find_freed(const atlas_ledger *l,
                                            uintptr_t addr) {
  for (size_t k = 0; k < l->freed_count; ++k) {
    size_t at = (l->freed_next + kFreedRingSize - 1 - k) % kFreedRingSize;
    if (l->freed[at].addr == addr) return &l->freed[at];
  }
  return NULL;
}

// The live allocation whose bytes (or red zones) hold `addr`, if any: a
// walk of the whole table, only on the error path of a free.
static const atlas_ledger_entry *find_containing(const atlas_ledger *l,
                                                 uintptr_t addr) {
  for (size_t i = 0; i < l->capacity; ++i) {
    const atlas_ledger_entry *e = &l->slots[i].entry;
    if (!l->slots[i].used || addr == e->addr) continue;
    if (addr > e->addr ? addr - e->addr < e->bytes + e->redzone_bytes
                       : e->addr - addr <= e->lead_bytes) {
      return e;
    }
  }
  return NULL;
}

atlas_status atlas_ledger_remove(atlas_ledger *ledger, uintptr_t addr,
                                 atlas_ledger_entry *out_entry) {
  return atlas_ledger_remove_if(ledger, addr, NULL, NULL, out_entry);
}

atlas_status atlas_ledger_remove_if(atlas_ledger *ledger, uintptr_t addr,
                                    atlas_ledger_check check, void *check_ctx,
                                    atlas_ledger_entry *out_entry) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&ledger->mutex);
  slot *s = find_slot(ledger, addr);
  if (s != NULL && check != NULL) {
    status = check(check_ctx, &s->entry);
    if (status != ATLAS_OK) {
      pthread_mutex_unlock(&ledger->mutex);
      return status;
    }
  }
  if (s == NULL) {
    const atlas_ledger_entry *f = find_freed(ledger, addr);
    if (f != NULL) {
      status = atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "double free of 0x%" PRIxPTR ": its %zu bytes (allocation #%" PRIu64
          " at %s:%d (%s)) were already freed",
          addr, f->bytes, f->index, f->site.file, f->site.line, f->site.func);
    } else if ((f = find_containing(ledger, addr)) != NULL && addr < f->addr) {
      status = atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "free of 0x%" PRIxPTR
          ", which is %zu bytes before allocation #%" PRIu64 " (0x%" PRIxPTR
          ", %zu bytes, allocated at %s:%d (%s)), in its red "
          "zone; free the address the allocation returned",
          addr, (size_t)(f->addr - addr), f->index, f->addr, f->bytes,
          f->site.file, f->site.line, f->site.func);
    } else if (f != NULL) {
      status = atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "free of 0x%" PRIxPTR ", which is %zu bytes into allocation #%" PRIu64
          " (0x%" PRIxPTR
          ", %zu bytes, allocated at %s:%d (%s)); free the "
          "address the allocation returned",
          addr, (size_t)(addr - f->addr), f->index, f->addr, f->bytes,
          f->site.file, f->site.line, f->site.func);
    } else {
      status = atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "free of 0x%" PRIxPTR
          ", which this backend never allocated (or freed long ago)",
          addr);
    }
  } else {
    if (out_entry != NULL) *out_entry = s->entry;
    ledger->freed[ledger->freed_next] = s->entry;
    ledger->freed_next = (ledger->freed_next + 1) % kFreedRingSize;
    if (ledger->freed_count < kFreedRingSize) ledger->freed_count++;
    ledger->live_bytes -= s->entry.bytes;
    ledger->count--;
    erase_slot(ledger, s);
  }
  pthread_mutex_unlock(&ledger->mutex);
  return status;
}

atlas_status atlas_ledger_find(atlas_ledger *ledger, uintptr_t addr,
                               atlas_ledger_entry *out_entry) {
  pthread_mutex_lock(&ledger->mutex);
  slot *s = find_slot(ledger, addr);
  if (s != NULL && out_entry != NULL) *out_entry = s->entry;
  pthread_mutex_unlock(&ledger->mutex);
  if (s == NULL) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "0x%" PRIxPTR " is not a live allocation", addr);
  }
  return ATLAS_OK;
}

size_t atlas_ledger_live_bytes(atlas_ledger *ledger) {
  pthread_mutex_lock(&ledger->mutex);
  size_t n = ledger->live_bytes;
  pthread_mutex_unlock(&ledger->mutex);
  return n;
}

size_t atlas_ledger_live_count(atlas_ledger *ledger) {
  pthread_mutex_lock(&ledger->mutex);
  size_t n = ledger->count;
  pthread_mutex_unlock(&ledger->mutex);
  return n;
}

static int by_index(const void *a, const void *b) {
  uint64_t x = ((const atlas_ledger_entry *)a)->index;
  uint64_t y = ((const atlas_ledger_entry *)b)->index;
  return (x > y) - (x < y);
}

atlas_status atlas_ledger_snapshot_unordered(atlas_ledger *ledger,
                                             atlas_ledger_entry **out_entries,
                                             size_t *out_count) {
  *out_entries = NULL;
  *out_count = 0;
  pthread_mutex_lock(&ledger->mutex);
  size_t n = ledger->count;
  atlas_ledger_entry *entries = NULL;
  if (n > 0) {
    entries = malloc(n * sizeof(*entries));
    if (entries == NULL) {
      pthread_mutex_unlock(&ledger->mutex);
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "ledger: cannot snapshot %zu entries", n);
    }
    size_t k = 0;
    for (size_t i = 0; i < ledger->capacity; ++i) {
      if (ledger->slots[i].used) entries[k++] = ledger->slots[i].entry;
    }
  }
  pthread_mutex_unlock(&ledger->mutex);
  *out_entries = entries;
  *out_count = n;
  return ATLAS_OK;
}

atlas_status atlas_ledger_snapshot(atlas_ledger *ledger,
                                   atlas_ledger_entry **out_entries,
                                   size_t *out_count) {
  ATLAS_RETURN_IF_ERROR(
      atlas_ledger_snapshot_unordered(ledger, out_entries, out_count));
  if (*out_count > 1) {
    qsort(*out_entries, *out_count, sizeof(**out_entries), by_index);
  }
  return ATLAS_OK;
}

void atlas_sweep_result_free(atlas_sweep_result *result) {
  free(result->sites);
  result->sites = NULL;
}
