// A snapshot of a view (a GGUF file's, gguf_checkpoint.c): its tensors'
// bytes in one host buffer, the viewed file first, the view's own tensors
// (reordered rows, dequantized blocks) after it.
#define _POSIX_C_SOURCE 200809L  // strdup
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/weight_scan.h"
#include "atlas/runtime/formats/safetensors_internal.h"

static int compare_by_name(const void *a, const void *b) {
  const atlas_safetensors_tensor *const *x = a;
  const atlas_safetensors_tensor *const *y = b;
  return strcmp((*x)->name, (*y)->name);
}

// A snapshot: the file and the view's own tensors in one owned buffer.
static bool is_copy(const atlas_safetensors *file) {
  return file->base != NULL && file->owned == (const void *)file->base;
}

// The copy's object over `bytes` (taken), tensors pointing into it.
static atlas_status copy_object(const atlas_safetensors *file, uint8_t *bytes,
                                atlas_safetensors **out) {
  atlas_safetensors *c = calloc(1, sizeof(*c));
  const size_t n = file->count;
  if (c == NULL) {
    free(bytes);
    return atlas_safetensors_oom(file->path);
  }
  c->fd = -1;
  c->owned = bytes;
  c->base = bytes;
  c->size = file->size;
  c->owned_bytes = file->owned_bytes;
  c->identity = file->identity;
  c->data_start = file->data_start;
  c->data_bytes = file->data_bytes;
  c->flags = file->flags;
  c->path = strdup(file->path);
  c->tensors = calloc(n ? n : 1, sizeof(*c->tensors));
  c->by_name = calloc(n ? n : 1, sizeof(const atlas_safetensors_tensor *));
  c->digests = calloc(n ? n : 1, sizeof(*c->digests));
  c->digested = calloc(n ? n : 1, 1);
  if (c->path == NULL || c->tensors == NULL || c->by_name == NULL ||
      c->digests == NULL || c->digested == NULL) {
    atlas_safetensors_close(c);
    return atlas_safetensors_oom(file->path);
  }
  // The view's own tensors: its owned buffer, or (a copy's) past the file.
  const uint8_t *own =
      is_copy(file) ? file->base + file->size : (const uint8_t *)file->owned;
  for (size_t i = 0; i < n; ++i) {
    const atlas_safetensors_tensor *t = &file->tensors[i];
    atlas_safetensors_tensor *d = &c->tensors[i];
    *d = *t;
    d->name = strdup(t->name);
    if (d->name == NULL) {
      atlas_safetensors_close(c);
      return atlas_safetensors_oom(file->path);
    }
    c->count = i + 1;
    d->file = c;
    // The view's own tensors lie in its own region; the rest in the file.
    const uint8_t *at = t->data;
    const bool mine = at != NULL && own != NULL && at >= own &&
                      (uint64_t)(at - own) < file->owned_bytes;
    d->data = mine ? bytes + file->size + (at - own) : bytes + t->file_offset;
    c->by_name[i] = d;
  }
  qsort(c->by_name, n, sizeof(const atlas_safetensors_tensor *),
        compare_by_name);
  *out = c;
  return ATLAS_OK;
}

atlas_status atlas_safetensors_view_snapshot(const atlas_safetensors *file,
                                             atlas_safetensors **out_copy) {
  *out_copy = NULL;
  const uint64_t total = file->size + file->owned_bytes;
  if (total < file->size || total > (uint64_t)SIZE_MAX) {
    return atlas_safetensors_oom(file->path);
  }
  uint8_t *bytes = malloc(total > 0 ? (size_t)total : 1);
  if (bytes == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: no host memory for a %llu-byte copy",
                             file->path, (unsigned long long)total);
  }
  atlas_status status = ATLAS_OK;
  if (is_copy(file)) {  // all of it in one buffer already
    memcpy(bytes, file->base, (size_t)total);
  } else if (file->base != NULL) {  // a view of a file held in memory
    memcpy(bytes, file->base, (size_t)file->size);
    if (file->owned_bytes > 0) {
      memcpy(bytes + file->size, file->owned, (size_t)file->owned_bytes);
    }
  } else {
    status = atlas_safetensors_check_unchanged(file);
    if (status == ATLAS_OK) {
      status = atlas_file_pread_exact(file->fd, file->path, bytes,
                                      (size_t)file->size, 0);
    }
    if (status == ATLAS_OK) status = atlas_safetensors_check_unchanged(file);
    if (status == ATLAS_OK && file->owned_bytes > 0) {
      memcpy(bytes + file->size, file->owned, (size_t)file->owned_bytes);
    }
  }
  if (status != ATLAS_OK) {
    free(bytes);
    return status;
  }
  atlas_safetensors *copy = NULL;
  ATLAS_RETURN_IF_ERROR(copy_object(file, bytes, &copy));
  // The copy must hold the very bytes the loads digested.
  for (size_t i = 0; status == ATLAS_OK && i < file->count; ++i) {
    if (!file->digested[i]) continue;
    const atlas_safetensors_tensor *t = &copy->tensors[i];
    uint64_t d = atlas_weight_scan(t->data, (size_t)t->bytes, 0,
                                   ATLAS_SCAN_FINITE_NONE, NULL);
    if (d != file->digests[i]) {
      char qn[ATLAS_QUOTE_BYTES];
      status = atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "%s: tensor \"%s\" no longer holds the bytes that were loaded "
          "(the file was changed after the load)",
          file->path, atlas_quote(t->name, qn, sizeof(qn)));
    }
  }
  if (status != ATLAS_OK) {
    atlas_safetensors_close(copy);
    return status;
  }
  *out_copy = copy;
  return ATLAS_OK;
}
