#include "atlas/runtime/device/host_pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "atlas/runtime/base/ledger.h"

struct atlas_host_pool {
  pthread_mutex_t mutex;
  size_t capacity;
  size_t used;
};

atlas_status atlas_host_pool_create(size_t capacity_bytes,
                                    atlas_host_pool **out_pool) {
  *out_pool = calloc(1, sizeof(atlas_host_pool));
  if (*out_pool == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host pool: cannot allocate");
  }
  pthread_mutex_init(&(*out_pool)->mutex, NULL);
  (*out_pool)->capacity = capacity_bytes;
  return ATLAS_OK;
}

void atlas_host_pool_destroy(atlas_host_pool *pool) {
  if (pool == NULL) return;
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
}

atlas_status atlas_host_pool_reserve(atlas_host_pool *pool, size_t bytes) {
  pthread_mutex_lock(&pool->mutex);
  size_t used = pool->used;
  bool fits = bytes <= pool->capacity && used <= pool->capacity - bytes;
  if (fits) pool->used += bytes;
  pthread_mutex_unlock(&pool->mutex);
  if (fits) return ATLAS_OK;
  char want[32], left[32], cap[32];
  atlas_format_bytes(bytes, want, sizeof(want));
  atlas_format_bytes(pool->capacity - used, left, sizeof(left));
  atlas_format_bytes(pool->capacity, cap, sizeof(cap));
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "out of memory: %zu bytes (%s) requested but only "
                           "%s of the %s capacity remains",
                           bytes, want, left, cap);
}

void atlas_host_pool_release(atlas_host_pool *pool, size_t bytes) {
  pthread_mutex_lock(&pool->mutex);
  pool->used -= bytes;
  pthread_mutex_unlock(&pool->mutex);
}

size_t atlas_host_pool_capacity(const atlas_host_pool *pool) {
  return pool->capacity;
}

size_t atlas_host_pool_used(atlas_host_pool *pool) {
  pthread_mutex_lock(&pool->mutex);
  size_t used = pool->used;
  pthread_mutex_unlock(&pool->mutex);
  return used;
}
