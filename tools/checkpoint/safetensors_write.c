// safetensors writer: header through jansson, data copied verbatim.
#include "atlas/tools/checkpoint/safetensors_write.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"

static atlas_status tensor_bytes(const char *path,
                                 const atlas_safetensors_write_tensor *t,
                                 uint64_t *out_bytes) {
  if (t->rank < 0 || t->rank > ATLAS_SAFETENSORS_MAX_RANK ||
      atlas_dtype_size(t->dtype) == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: tensor \"%s\" has a bad rank or dtype", path,
                             t->name);
  }
  uint64_t n = atlas_dtype_size(t->dtype);
  for (int i = 0; i < t->rank; ++i) {
    if (t->shape[i] < 0 ||
        __builtin_mul_overflow(n, (uint64_t)t->shape[i], &n)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: tensor \"%s\" has a bad shape", path,
                               t->name);
    }
  }
  *out_bytes = n;
  return ATLAS_OK;
}

// Builds the header object; offsets follow the order of `tensors`.
static atlas_status build_header(const char *path,
                                 const atlas_safetensors_write_tensor *tensors,
                                 size_t count, const char *const *metadata,
                                 size_t metadata_count, json_t **out_root) {
  json_t *root = json_object();
  if (root == NULL) goto oom;
  if (metadata_count > 0) {
    json_t *meta = json_object();
    if (meta == NULL || json_object_set_new(root, "__metadata__", meta) != 0) {
      goto oom;
    }
    for (size_t i = 0; i < metadata_count; ++i) {
      if (json_object_set_new(meta, metadata[2 * i],
                              json_string(metadata[2 * i + 1])) != 0) {
        goto oom;
      }
    }
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    const atlas_safetensors_write_tensor *t = &tensors[i];
    uint64_t bytes = 0;
    atlas_status status = tensor_bytes(path, t, &bytes);
    if (status != ATLAS_OK) {
      json_decref(root);
      return status;
    }
    if (json_object_get(root, t->name) != NULL) {
      json_decref(root);
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: tensor \"%s\" given twice", path, t->name);
    }
    json_t *shape = json_array();
    json_t *offsets = json_array();
    json_t *entry = json_object();
    int failed = shape == NULL || offsets == NULL || entry == NULL;
    for (int d = 0; !failed && d < t->rank; ++d) {
      failed = json_array_append_new(shape, json_integer(t->shape[d])) != 0;
    }
    uint64_t end = 0;
    if (__builtin_add_overflow(offset, bytes, &end) || end > INT64_MAX) {
      json_decref(shape);
      json_decref(offsets);
      json_decref(entry);
      json_decref(root);
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: tensors exceed 2^63 bytes", path);
    }
    failed = failed ||
             json_array_append_new(offsets, json_integer((json_int_t)offset)) ||
             json_array_append_new(offsets, json_integer((json_int_t)end));
    offset = end;
    failed = failed ||
             json_object_set_new(entry, "dtype",
                                 json_string(atlas_dtype_name(t->dtype))) ||
             json_object_set(entry, "shape", shape) ||
             json_object_set(entry, "data_offsets", offsets);
    json_decref(shape);
    json_decref(offsets);
    if (failed || json_object_set_new(root, t->name, entry) != 0) {
      goto oom;
    }
  }
  *out_root = root;
  return ATLAS_OK;
oom:
  json_decref(root);
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "%s: out of memory building the header", path);
}

atlas_status atlas_safetensors_write(
    const char *path, const atlas_safetensors_write_tensor *tensors,
    size_t count, const char *const *metadata, size_t metadata_count) {
  json_t *root = NULL;
  ATLAS_RETURN_IF_ERROR(
      build_header(path, tensors, count, metadata, metadata_count, &root));
  char *header = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (header == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of memory serialising the header", path);
  }
  size_t len = strlen(header);
  size_t padded = (len + 7) / 8 * 8;
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    int err = errno;
    free(header);
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot create: %s", path,
                             atlas_strerror(err, text, sizeof(text)));
  }
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i)
    prefix[i] = (uint8_t)((uint64_t)padded >> (8 * i));
  int ok = fwrite(prefix, 1, 8, f) == 8 && fwrite(header, 1, len, f) == len;
  for (size_t i = len; ok && i < padded; ++i) ok = fputc(' ', f) != EOF;
  free(header);
  for (size_t i = 0; ok && i < count; ++i) {
    uint64_t bytes = 0;
    atlas_status_consume(tensor_bytes(path, &tensors[i], &bytes));
    ok = bytes == 0 || fwrite(tensors[i].data, 1, (size_t)bytes, f) == bytes;
  }
  int err = ok ? 0 : errno;
  if (fclose(f) != 0 && ok) {
    ok = 0;
    err = errno;
  }
  if (!ok) {
    remove(path);
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: write failed: %s", path,
                             atlas_strerror(err, text, sizeof(text)));
  }
  return ATLAS_OK;
}
