// safetensors files and buffers: opening, reading tensors, snapshots,
// lookups. The header is parsed in safetensors_header.c; see safetensors.h
// for the rules.
#define _POSIX_C_SOURCE 200809L  // O_CLOEXEC
#include "atlas/runtime/formats/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>  // strcasecmp
#include <sys/stat.h>
#include <unistd.h>
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/weight_scan.h"
#include "atlas/runtime/formats/safetensors_internal.h"

void atlas_safetensors_close(atlas_safetensors *file) {
  if (file == NULL) return;
  for (size_t i = 0; i < file->count; ++i) {
    free((char *)file->tensors[i].name);
  }
  free(file->tensors);
  free(file->by_name);
  for (size_t i = 0; i < file->meta_count; ++i) {
    free(file->meta_keys[i]);
    free(file->meta_values[i]);
  }
  free(file->meta_keys);
  free(file->meta_values);
  if (file->fd >= 0) close(file->fd);
  free(file->owned);
  free(file->digests);
  free(file->digested);
  free(file->path);
  free(file);
}

atlas_status atlas_safetensors_parse_buffer(const void *data, size_t size,
                                            const char *name_for_errors,
                                            atlas_safetensors **out_file) {
  return atlas_safetensors_parse_buffer_with(data, size, name_for_errors, 0,
                                             out_file);
}

atlas_status atlas_safetensors_parse_buffer_with(const void *data, size_t size,
                                                 const char *name_for_errors,
                                                 unsigned flags,
                                                 atlas_safetensors **out_file) {
  if (out_file == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "atlas_safetensors_parse_buffer: out_file is NULL");
  }
  *out_file = NULL;
  const char *path = name_for_errors != NULL ? name_for_errors : "<buffer>";
  char qpath[ATLAS_QUOTE_PATH_BYTES];
  atlas_quote_path(path, qpath, sizeof(qpath));
  if (data == NULL && size != 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: buffer is NULL", qpath);
  }
  const uint8_t *base = data != NULL ? data : (const uint8_t *)"";
  uint64_t header_len = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_safetensors_header_length(qpath, base, size, &header_len));
  return atlas_safetensors_parse_header(path, base + 8, header_len, size, base,
                                        flags, out_file);
}

atlas_status atlas_safetensors_open(const char *path,
                                    atlas_safetensors **out_file) {
  return atlas_safetensors_open_with(path, 0, out_file);
}

atlas_status atlas_safetensors_open_with(const char *path, unsigned flags,
                                         atlas_safetensors **out_file) {
  if (out_file == NULL || path == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "atlas_safetensors_open: path or out_file is NULL");
  }
  *out_file = NULL;
  int fd = -1;
  atlas_file_identity id;
  ATLAS_RETURN_IF_ERROR(
      atlas_file_open_regular(path, "safetensors file", &fd, &id));
  char qpath[ATLAS_QUOTE_PATH_BYTES];
  atlas_quote_path(path, qpath, sizeof(qpath));
  // Only the header is read now; tensor data is read with pread when used.
  uint8_t prefix[8] = {0};
  size_t got = id.size < 8 ? (size_t)id.size : 8;
  atlas_status status = atlas_file_pread_exact(fd, path, prefix, got, 0);
  uint64_t header_len = 0;
  if (status == ATLAS_OK) {
    status =
        atlas_safetensors_header_length(qpath, prefix, id.size, &header_len);
  }
  uint8_t *header = NULL;
  if (status == ATLAS_OK) {
    header = malloc((size_t)header_len);
    if (header == NULL) status = atlas_safetensors_oom(qpath);
  }
  if (status == ATLAS_OK) {
    status = atlas_file_pread_exact(fd, path, header, (size_t)header_len, 8);
  }
  atlas_safetensors *file = NULL;
  if (status == ATLAS_OK) {
    status = atlas_safetensors_parse_header(path, header, header_len, id.size,
                                            NULL, flags, &file);
  }
  free(header);
  if (status != ATLAS_OK) {
    close(fd);
    return status;
  }
  file->fd = fd;
  file->identity = id;
  *out_file = file;
  return ATLAS_OK;
}

int atlas_safetensors_fd(const atlas_safetensors *file) { return file->fd; }

atlas_status atlas_safetensors_read(const atlas_safetensors_tensor *tensor,
                                    uint64_t offset, uint64_t bytes,
                                    void *dst) {
  const atlas_safetensors *file = tensor->file;
  if (offset > tensor->bytes || bytes > tensor->bytes - offset) {
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "tensor \"%s\": bytes [%llu, +%llu) are out of "
        "range (it has %llu)",
        atlas_quote(tensor->name, q, sizeof(q)), (unsigned long long)offset,
        (unsigned long long)bytes, (unsigned long long)tensor->bytes);
  }
  if (tensor->data != NULL || file == NULL || file->fd < 0) {
    if (tensor->data == NULL) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "tensor has neither data nor a file");
    }
    memcpy(dst, (const uint8_t *)tensor->data + offset, (size_t)bytes);
    return ATLAS_OK;
  }
  return atlas_file_pread_exact(file->fd, file->path, dst, (size_t)bytes,
                                tensor->file_offset + offset);
}

uint64_t *atlas_safetensors_digest_slot(
    const atlas_safetensors_tensor *tensor) {
  const atlas_safetensors *file = tensor->file;
  if (file == NULL || file->digests == NULL) return NULL;
  size_t i = (size_t)(tensor - file->tensors);
  if (i >= file->count) return NULL;
  // Each slot is written by one load at a time (a reload starts it over).
  file->digested[i] = 1;
  file->digests[i] = 0;
  return &file->digests[i];
}

atlas_status atlas_safetensors_check_unchanged(const atlas_safetensors *file) {
  if (file->fd < 0) return ATLAS_OK;
  return atlas_file_check_unchanged(file->fd, file->path, &file->identity);
}

atlas_status atlas_safetensors_snapshot(const atlas_safetensors *file,
                                        atlas_safetensors **out_copy) {
  *out_copy = NULL;
  char qpath[ATLAS_QUOTE_PATH_BYTES];
  atlas_quote_path(file->path, qpath, sizeof(qpath));
  if (file->flags & ATLAS_SAFETENSORS_VIEW) {
    return atlas_safetensors_view_snapshot(file, out_copy);
  }
  if (file->size > (uint64_t)SIZE_MAX) return atlas_safetensors_oom(qpath);
  uint8_t *bytes = malloc(file->size > 0 ? (size_t)file->size : 1);
  if (bytes == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: no host memory for a %llu-byte copy", qpath,
                             (unsigned long long)file->size);
  }
  atlas_status status = ATLAS_OK;
  if (file->fd >= 0) {
    status = atlas_safetensors_check_unchanged(file);
    if (status == ATLAS_OK) {
      status = atlas_file_pread_exact(file->fd, file->path, bytes,
                                      (size_t)file->size, 0);
    }
    if (status == ATLAS_OK) status = atlas_safetensors_check_unchanged(file);
  } else {
    memcpy(bytes, file->base, (size_t)file->size);
  }
  atlas_safetensors *copy = NULL;
  if (status == ATLAS_OK) {
    status = atlas_safetensors_parse_buffer_with(
        bytes, (size_t)file->size, file->path, file->flags, &copy);
  }
  // The copy must hold the very bytes the loads digested.
  for (size_t i = 0; status == ATLAS_OK && i < file->count; ++i) {
    if (!file->digested[i]) continue;
    const atlas_safetensors_tensor *t = &file->tensors[i];
    const atlas_safetensors_tensor *c = atlas_safetensors_lookup(copy, t->name);
    uint64_t d =
        c == NULL || c->file_offset != t->file_offset
            ? ~file->digests[i]
            : atlas_weight_scan(bytes + t->file_offset, (size_t)t->bytes, 0,
                                ATLAS_SCAN_FINITE_NONE, NULL);
    if (d != file->digests[i]) {
      char qn[ATLAS_QUOTE_BYTES];
      status = atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "%s: tensor \"%s\" no longer holds the bytes that were loaded "
          "(the file was changed after the load)",
          qpath, atlas_quote(t->name, qn, sizeof(qn)));
    }
  }
  if (status != ATLAS_OK) {
    atlas_safetensors_close(copy);
    free(bytes);
    return status;
  }
  copy->owned = bytes;
  *out_copy = copy;
  return ATLAS_OK;
}

const char *atlas_safetensors_path(const atlas_safetensors *file) {
  return file->path;
}

uint64_t atlas_safetensors_file_bytes(const atlas_safetensors *file) {
  return file->size + file->owned_bytes;
}

uint64_t atlas_safetensors_data_bytes(const atlas_safetensors *file) {
  return file->data_bytes;
}

size_t atlas_safetensors_count(const atlas_safetensors *file) {
  return file->count;
}

const atlas_safetensors_tensor *atlas_safetensors_at(
    const atlas_safetensors *file, size_t index) {
  return index < file->count ? &file->tensors[index] : NULL;
}

const atlas_safetensors_tensor *atlas_safetensors_lookup(
    const atlas_safetensors *file, const char *name) {
  size_t lo = 0;
  size_t hi = file->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(file->by_name[mid]->name, name);
    if (c == 0) return file->by_name[mid];
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return NULL;
}

atlas_status atlas_safetensors_find(
    const atlas_safetensors *file, const char *name,
    const atlas_safetensors_tensor **out_tensor) {
  const atlas_safetensors_tensor *t = atlas_safetensors_lookup(file, name);
  *out_tensor = t;
  if (t == NULL) {
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "%s: no tensor named \"%s\"", file->path, name);
  }
  return ATLAS_OK;
}

size_t atlas_safetensors_metadata_count(const atlas_safetensors *file) {
  return file->meta_count;
}

const char *atlas_safetensors_metadata_key(const atlas_safetensors *file,
                                           size_t index) {
  return index < file->meta_count ? file->meta_keys[index] : NULL;
}

const char *atlas_safetensors_metadata_value(const atlas_safetensors *file,
                                             size_t index) {
  return index < file->meta_count ? file->meta_values[index] : NULL;
}

const char *atlas_safetensors_metadata_get(const atlas_safetensors *file,
                                           const char *key) {
  size_t lo = 0;
  size_t hi = file->meta_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(file->meta_keys[mid], key);
    if (c == 0) return file->meta_values[mid];
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return NULL;
}
