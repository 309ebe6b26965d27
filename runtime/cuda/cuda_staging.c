#include "atlas/runtime/cuda/cuda_staging.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/cuda/cuda_host.h"

// One pinned buffer of the pool; `done` is recorded after its copy.
typedef struct staging_buffer {
  unsigned char *host;
  size_t capacity;
  CUevent done;
  bool pending;
} staging_buffer;

// The bytes set aside for the h2d_async copies of one capture.
typedef struct capture_arena {
  CUstream stream;
  unsigned char *host;
  size_t used;
} capture_arena;

enum {
  STAGING_MAX = 16,  // pooled buffers kept at most
  STAGING_MIN_BYTES = 64 << 10,
  ARENA_BYTES = 1 << 20,  // h2d_async bytes per capture
  MAX_CAPTURES = 16,      // concurrent captures per backend
};

struct atlas_cuda_staging {
  const atlas_cuda_driver *cu;
  char owner[32];
  pthread_mutex_t mutex;  // guards everything below
  staging_buffer *buffers;
  size_t count, capacity;
  capture_arena arenas[MAX_CAPTURES];
  size_t arena_count;
  unsigned char *spare_arena;  // an unused arena kept for the next capture
};

static inline CUdeviceptr dptr(const void *p) {
  return (CUdeviceptr)(uintptr_t)p;
}

atlas_status atlas_cuda_staging_create(const atlas_cuda_driver *driver,
                                       const char *owner,
                                       atlas_cuda_staging **out_staging) {
  *out_staging = NULL;
  atlas_cuda_staging *st = calloc(1, sizeof(*st));
  if (st == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: no memory for h2d staging", owner);
  }
  st->cu = driver;
  snprintf(st->owner, sizeof(st->owner), "%s", owner);
  pthread_mutex_init(&st->mutex, NULL);
  *out_staging = st;
  return ATLAS_OK;
}

static void buffer_release(atlas_cuda_staging *st, staging_buffer *b) {
  if (b->done != NULL) st->cu->cuEventDestroy(b->done);
  if (b->host != NULL) st->cu->cuMemFreeHost(b->host);
  memset(b, 0, sizeof(*b));
}

atlas_status atlas_cuda_staging_destroy(atlas_cuda_staging *st) {
  if (st == NULL) return ATLAS_OK;
  atlas_status status = ATLAS_OK;
  for (size_t i = 0; i < st->count; ++i) {
    staging_buffer *b = &st->buffers[i];
    CUresult r =
        b->pending ? st->cu->cuEventSynchronize(b->done) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
      status = atlas_status_join(
          status,
          atlas_cuda_error(st->cu, r, "%s: waiting for an h2d staging buffer",
                           st->owner));
    }
    buffer_release(st, b);
  }
  free(st->buffers);
  for (size_t i = 0; i < st->arena_count; ++i) {
    st->cu->cuMemFreeHost(st->arenas[i].host);
  }
  if (st->spare_arena != NULL) st->cu->cuMemFreeHost(st->spare_arena);
  pthread_mutex_destroy(&st->mutex);
  free(st);
  return status;
}

static atlas_status buffer_alloc(atlas_cuda_staging *st, size_t bytes,
                                 staging_buffer *b) {
  size_t capacity = STAGING_MIN_BYTES;
  while (capacity < bytes && capacity <= SIZE_MAX / 2) capacity *= 2;
  if (capacity < bytes) capacity = bytes;
  memset(b, 0, sizeof(*b));
  void *host = NULL;
  CUresult r = st->cu->cuMemAllocHost(&host, capacity);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(st->cu, r,
                            "%s: allocating a %zu-byte pinned staging buffer "
                            "for an async h2d copy",
                            st->owner, capacity);
  }
  r = st->cu->cuEventCreate(&b->done, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    st->cu->cuMemFreeHost(host);
    return atlas_cuda_error(st->cu, r, "%s: cuEventCreate (staging)",
                            st->owner);
  }
  b->host = host;
  b->capacity = capacity;
  return ATLAS_OK;
}

// A buffer of at least `bytes` whose last copy has finished: a free one, else
// a new one, else (pool full) the first one once its copy is done. Locked.
static atlas_status buffer_acquire(atlas_cuda_staging *st, size_t bytes,
                                   staging_buffer **out) {
  *out = NULL;
  for (size_t i = 0; i < st->count; ++i) {
    staging_buffer *b = &st->buffers[i];
    if (b->capacity < bytes) continue;
    if (!b->pending || st->cu->cuEventQuery(b->done) == CUDA_SUCCESS) {
      b->pending = false;
      *out = b;
      return ATLAS_OK;
    }
  }
  if (st->count >= STAGING_MAX) {
    // Bounded: wait for a buffer rather than pin ever more host memory.
    staging_buffer *victim = &st->buffers[0];
    if (victim->pending) {
      CUresult r = st->cu->cuEventSynchronize(victim->done);
      if (r != CUDA_SUCCESS) {
        return atlas_cuda_error(
            st->cu, r, "%s: waiting for an h2d staging buffer", st->owner);
      }
      victim->pending = false;
    }
    if (victim->capacity < bytes) {
      buffer_release(st, victim);
      ATLAS_RETURN_IF_ERROR(buffer_alloc(st, bytes, victim));
    }
    *out = victim;
    return ATLAS_OK;
  }
  if (st->count == st->capacity) {
    size_t cap = st->capacity ? st->capacity * 2 : 8;
    staging_buffer *grown = realloc(st->buffers, cap * sizeof(*grown));
    if (grown == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: no memory for the staging table",
                               st->owner);
    }
    st->buffers = grown;
    st->capacity = cap;
  }
  staging_buffer *b = &st->buffers[st->count];
  ATLAS_RETURN_IF_ERROR(buffer_alloc(st, bytes, b));
  st->count++;
  *out = b;
  return ATLAS_OK;
}

atlas_status atlas_cuda_staging_h2d(atlas_cuda_staging *st, void *dst,
                                    const void *src, size_t bytes,
                                    CUstream stream) {
  pthread_mutex_lock(&st->mutex);
  staging_buffer *b = NULL;
  atlas_status status = buffer_acquire(st, bytes, &b);
  if (status == ATLAS_OK) {
    // `b` is set: buffer_acquire fails with a made status, never OK, which
    // the LLVM 14 analyzer cannot see across files.
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
    memcpy(b->host, src, bytes);
    CUresult r = st->cu->cuMemcpyAsync(dptr(dst), dptr(b->host), bytes, stream);
    if (r != CUDA_SUCCESS) {
      status = atlas_cuda_error(st->cu, r, "%s: async h2d copy of %zu bytes",
                                st->owner, bytes);
    } else {
      r = st->cu->cuEventRecord(b->done, stream);
      b->pending = r == CUDA_SUCCESS;
      if (r != CUDA_SUCCESS) {
        // Without the event we cannot tell when the buffer is free: wait now.
        r = st->cu->cuStreamSynchronize(stream);
        if (r != CUDA_SUCCESS) {
          status = atlas_cuda_error(st->cu, r,
                                    "%s: async h2d copy (waiting after "
                                    "cuEventRecord failed)",
                                    st->owner);
        }
      }
    }
  }
  pthread_mutex_unlock(&st->mutex);
  return status;
}

// Takes the arena of the capture on `stream` out of the table. Locked.
static unsigned char *arena_take(atlas_cuda_staging *st, CUstream stream,
                                 size_t *out_used) {
  *out_used = 0;
  for (size_t i = 0; i < st->arena_count; ++i) {
    if (st->arenas[i].stream == stream) {
      unsigned char *host = st->arenas[i].host;
      *out_used = st->arenas[i].used;
      st->arenas[i] = st->arenas[--st->arena_count];
      return host;
    }
  }
  return NULL;
}

atlas_status atlas_cuda_staging_capture_begin(atlas_cuda_staging *st,
                                              CUstream stream) {
  pthread_mutex_lock(&st->mutex);
  void *host = st->spare_arena;
  st->spare_arena = NULL;
  bool full = st->arena_count == MAX_CAPTURES;
  pthread_mutex_unlock(&st->mutex);
  if (full) {
    if (host != NULL) {
      pthread_mutex_lock(&st->mutex);
      st->spare_arena = host;
      pthread_mutex_unlock(&st->mutex);
    }
    return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                             "%s: %d captures are already open", st->owner,
                             MAX_CAPTURES);
  }
  if (host == NULL) {
    CUresult r = st->cu->cuMemAllocHost(&host, ARENA_BYTES);
    if (r != CUDA_SUCCESS) {
      return atlas_cuda_error(st->cu, r,
                              "%s: allocating a capture's pinned staging "
                              "arena (cuMemAllocHost)",
                              st->owner);
    }
  }
  pthread_mutex_lock(&st->mutex);
  st->arenas[st->arena_count++] = (capture_arena){stream, host, 0};
  pthread_mutex_unlock(&st->mutex);
  return ATLAS_OK;
}

atlas_status atlas_cuda_staging_h2d_captured(atlas_cuda_staging *st, void *dst,
                                             const void *src, size_t bytes,
                                             CUstream stream) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&st->mutex);
  capture_arena *arena = NULL;
  for (size_t i = 0; i < st->arena_count; ++i) {
    if (st->arenas[i].stream == stream) arena = &st->arenas[i];
  }
  size_t offset = arena ? (arena->used + 255) & ~(size_t)255 : 0;
  if (arena == NULL) {
    status = atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                               "%s: async h2d copy into a capture this backend "
                               "did not begin (stream %p); begin it with "
                               "atlas_backend_begin_capture",
                               st->owner, (void *)stream);
  } else if (offset > ARENA_BYTES || bytes > ARENA_BYTES - offset) {
    status = atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "%s: async h2d copy of %zu bytes inside a capture: a capture stages "
        "at most %d bytes (%zu used); copy from memory that outlives the "
        "graph with atlas_backend_h2d_async_retained",
        st->owner, bytes, ARENA_BYTES, arena->used);
  } else {
    memcpy(arena->host + offset, src, bytes);
    CUresult r = st->cu->cuMemcpyAsync(dptr(dst), dptr(arena->host + offset),
                                       bytes, stream);
    if (r != CUDA_SUCCESS) {
      status = atlas_cuda_error(st->cu, r,
                                "%s: async h2d copy of %zu bytes in a capture",
                                st->owner, bytes);
    } else {
      arena->used = offset + bytes;
    }
  }
  pthread_mutex_unlock(&st->mutex);
  return status;
}

unsigned char *atlas_cuda_staging_capture_end(atlas_cuda_staging *st,
                                              CUstream stream, bool discard) {
  size_t used = 0;
  pthread_mutex_lock(&st->mutex);
  unsigned char *arena = arena_take(st, stream, &used);
  if (arena != NULL && (discard || used == 0) && st->spare_arena == NULL) {
    st->spare_arena = arena;  // no graph reads it: keep it for the next one
    arena = NULL;
  }
  pthread_mutex_unlock(&st->mutex);
  if (arena != NULL && (discard || used == 0)) {
    st->cu->cuMemFreeHost(arena);
    arena = NULL;
  }
  return arena;
}

atlas_status atlas_cuda_staging_release_graph_arena(atlas_cuda_staging *st,
                                                    unsigned char *arena) {
  if (arena == NULL) return ATLAS_OK;
  CUresult r = st->cu->cuMemFreeHost(arena);
  if (r != CUDA_SUCCESS) {
    return atlas_cuda_error(st->cu, r, "%s: freeing a graph's staging arena",
                            st->owner);
  }
  return ATLAS_OK;
}
