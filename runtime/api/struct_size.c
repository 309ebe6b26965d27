// Checking a caller's struct_size against a struct's layout: see
// struct_size.h.
#include "atlas/runtime/api/struct_size.h"

#include <stdint.h>

static atlas_status refuse(const atlas_struct_layout *l, size_t n,
                           const char *why) {
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "%s.struct_size is %zu: %s (fill the struct with "
                           "%s_init first)",
                           l->name, n, why, l->name);
}

atlas_status atlas_struct_size_check(const atlas_struct_layout *l,
                                     size_t struct_size, const void *src,
                                     size_t *out_bytes) {
  *out_bytes = 0;
  const atlas_struct_field *f = l->fields;
  const atlas_struct_field *first_last = &f[l->first_version_fields - 1];
  size_t first_end = first_last->offset + first_last->size;
  if (struct_size < first_end) {
    return refuse(l, struct_size,
                  "smaller than the first version of the struct");
  }
  if (struct_size > l->current_size) {
    if (src != NULL) {
      const unsigned char *b = src;
      for (size_t i = l->current_size; i < struct_size; ++i) {
        if (b[i] != 0) {
          return atlas_status_make(
              ATLAS_STATUS_INVALID_ARGUMENT,
              "%s.struct_size is %zu, larger than this build's %zu, and byte "
              "%zu is set: the caller uses a field this build does not have",
              l->name, struct_size, l->current_size, i);
        }
      }
    }
    *out_bytes = l->current_size;
    return ATLAS_OK;
  }
  for (size_t i = 0; i < l->field_count; ++i) {
    size_t end = f[i].offset + f[i].size;
    size_t next = i + 1 < l->field_count ? f[i + 1].offset : l->current_size;
    if (struct_size > f[i].offset && struct_size < end) {
      return refuse(l, struct_size, "it ends inside a field");
    }
    if (struct_size >= end && struct_size <= next) {
      *out_bytes = end;
      return ATLAS_OK;
    }
  }
  return refuse(l, struct_size, "it matches no version of the struct");
}
