// Op cache: small arrays scanned linearly; a model has tens of kernels.
// Built on the shared memory and module code (backend_memory.h,
// backend_modules.h), not the front door: the backend's lifecycle owns the
// cache, and the front door sits above both.
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/device/op_cache.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/device/backend_memory.h"
#include "atlas/runtime/device/backend_modules.h"

typedef struct kernel_memo {
  char *module;
  char *function;
  const atlas_kernel *kernel;
} kernel_memo;

typedef struct scratch_buf {
  char *name;
  void *ptr;
  size_t bytes;
} scratch_buf;

struct atlas_op_cache {
  atlas_backend *backend;
  kernel_memo *kernels;
  size_t kernel_count, kernel_cap;
  scratch_buf *scratch;
  size_t scratch_count, scratch_cap;
};

atlas_status atlas_op_cache_create(atlas_backend *backend,
                                   atlas_op_cache **out_cache) {
  *out_cache = calloc(1, sizeof(**out_cache));
  if (*out_cache == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "op cache: cannot allocate");
  }
  (*out_cache)->backend = backend;
  return ATLAS_OK;
}

atlas_status atlas_op_cache_destroy(atlas_op_cache *cache) {
  if (cache == NULL) return ATLAS_OK;
  atlas_status status = ATLAS_OK;
  for (size_t i = 0; i < cache->scratch_count; ++i) {
    scratch_buf *s = &cache->scratch[i];
    if (s->ptr != NULL) {
      status = atlas_status_join(
          status,
          atlas_status_annotate(atlas_backend_memory_free(
                                    cache->backend, s->ptr, ATLAS_MEM_DEVICE),
                                "op cache: freeing scratch '%s'", s->name));
    }
    free(s->name);
  }
  for (size_t i = 0; i < cache->kernel_count; ++i) {
    free(cache->kernels[i].module);
    free(cache->kernels[i].function);
  }
  free(cache->scratch);
  free(cache->kernels);
  free(cache);
  return status;
}

static bool grow(void **items, size_t *cap, size_t count, size_t item_size) {
  if (count < *cap) return true;
  size_t new_cap = *cap ? *cap * 2 : 16;
  void *p = realloc(*items, new_cap * item_size);
  if (p == NULL) return false;
  *items = p;
  *cap = new_cap;
  return true;
}

atlas_status atlas_op_cache_kernel(atlas_op_cache *cache, const char *module,
                                   const char *function,
                                   const atlas_kernel **out_kernel) {
  for (size_t i = 0; i < cache->kernel_count; ++i) {
    kernel_memo *m = &cache->kernels[i];
    if (strcmp(m->function, function) == 0 && strcmp(m->module, module) == 0) {
      *out_kernel = m->kernel;
      return ATLAS_OK;
    }
  }
  *out_kernel = NULL;
  const atlas_kernel *kernel = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_modules_lookup(cache->backend, module, function, &kernel));
  if (!grow((void **)&cache->kernels, &cache->kernel_cap, cache->kernel_count,
            sizeof(kernel_memo))) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "op cache: cannot memoise %s.%s", module,
                             function);
  }
  kernel_memo m = {strdup(module), strdup(function), kernel};
  if (m.module == NULL || m.function == NULL) {
    free(m.module);
    free(m.function);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "op cache: cannot memoise %s.%s", module,
                             function);
  }
  cache->kernels[cache->kernel_count++] = m;
  *out_kernel = kernel;
  return ATLAS_OK;
}

atlas_status atlas_op_cache_scratch(atlas_op_cache *cache, const char *name,
                                    size_t bytes, void **out_ptr) {
  *out_ptr = NULL;
  scratch_buf *s = NULL;
  for (size_t i = 0; i < cache->scratch_count; ++i) {
    if (strcmp(cache->scratch[i].name, name) == 0) s = &cache->scratch[i];
  }
  if (s != NULL && s->bytes >= bytes) {
    *out_ptr = s->ptr;
    return ATLAS_OK;
  }
  if (s == NULL) {
    if (!grow((void **)&cache->scratch, &cache->scratch_cap,
              cache->scratch_count, sizeof(scratch_buf))) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "op cache: cannot track scratch '%s'", name);
    }
    char *copy = strdup(name);
    if (copy == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "op cache: cannot track scratch '%s'", name);
    }
    s = &cache->scratch[cache->scratch_count++];
    *s = (scratch_buf){copy, NULL, 0};
  }
  if (s->ptr != NULL) {
    // A failed free has either released the buffer anyway (a red-zone
    // overrun) or left it live on the ledger for the sweep (the device
    // refused): forget it first either way, or destroy frees it twice.
    void *old = s->ptr;
    s->ptr = NULL;
    s->bytes = 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_memory_free(cache->backend, old, ATLAS_MEM_DEVICE),
        "op cache: growing scratch '%s'", name);
  }
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      atlas_backend_memory_alloc(cache->backend, bytes, ATLAS_MEM_DEVICE,
                                 ATLAS_SITE, &s->ptr),
      "op cache: scratch '%s'", name));
  s->bytes = bytes;
  *out_ptr = s->ptr;
  return ATLAS_OK;
}

size_t atlas_op_cache_kernel_count(const atlas_op_cache *cache) {
  return cache->kernel_count;
}

size_t atlas_op_cache_scratch_bytes(const atlas_op_cache *cache) {
  size_t total = 0;
  for (size_t i = 0; i < cache->scratch_count; ++i) {
    total += cache->scratch[i].bytes;
  }
  return total;
}
