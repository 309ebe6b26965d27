#include "atlas/runtime/text/json_util.h"

#include <stdio.h>
#include <string.h>

// A path too long for the buffer ends in "..." rather than silently.
static void mark_truncated(atlas_tj_at *r, int n) {
  if (n < 0 || (size_t)n >= sizeof(r->path)) {
    memcpy(r->path + sizeof(r->path) - 4, "...", 4);
  }
}

atlas_tj_at atlas_tj_key(const atlas_tj_at *at, const char *key) {
  atlas_tj_at r;
  r.file = at->file;
  int n;
  if (at->path[0]) {
    n = snprintf(r.path, sizeof(r.path), "%s.%s", at->path, key);
  } else {
    n = snprintf(r.path, sizeof(r.path), "%s", key);
  }
  mark_truncated(&r, n);
  return r;
}

atlas_tj_at atlas_tj_index(const atlas_tj_at *at, size_t index) {
  atlas_tj_at r;
  r.file = at->file;
  int n = snprintf(r.path, sizeof(r.path), "%s[%zu]", at->path, index);
  mark_truncated(&r, n);
  return r;
}

atlas_status atlas_tj_annotate(const atlas_tj_at *at, atlas_status status) {
  return atlas_status_annotate(status, "%s: %s", at->file,
                               at->path[0] ? at->path : "(top level)");
}

json_t *atlas_tj_member(json_t *obj, const char *key) {
  json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
  return json_is_null(v) ? NULL : v;
}

atlas_status atlas_tj_opt_string(json_t *obj, const atlas_tj_at *at,
                                 const char *key, const char **out,
                                 size_t *out_len) {
  json_t *v = atlas_tj_member(obj, key);
  *out = NULL;
  if (out_len) *out_len = 0;
  if (!v) return ATLAS_OK;
  if (!json_is_string(v)) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_error(&k, "expected a string");
  }
  *out = json_string_value(v);
  if (out_len) *out_len = json_string_length(v);
  return ATLAS_OK;
}

atlas_status atlas_tj_string(json_t *obj, const atlas_tj_at *at,
                             const char *key, const char **out,
                             size_t *out_len) {
  ATLAS_RETURN_IF_ERROR(atlas_tj_opt_string(obj, at, key, out, out_len));
  if (!*out) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_error(&k, "missing (a string is required)");
  }
  return ATLAS_OK;
}

atlas_status atlas_tj_bool(json_t *obj, const atlas_tj_at *at, const char *key,
                           bool dflt, bool *out) {
  json_t *v = atlas_tj_member(obj, key);
  *out = dflt;
  if (!v) return ATLAS_OK;
  if (!json_is_boolean(v)) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_error(&k, "expected true or false");
  }
  *out = json_is_true(v);
  return ATLAS_OK;
}

atlas_status atlas_tj_uint(json_t *obj, const atlas_tj_at *at, const char *key,
                           uint64_t max, uint64_t *out) {
  json_t *v = atlas_tj_member(obj, key);
  atlas_tj_at k = atlas_tj_key(at, key);
  if (!v) return atlas_tj_error(&k, "missing (an integer is required)");
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      (uint64_t)json_integer_value(v) > max) {
    return atlas_tj_error(&k, "expected an integer from 0 to %llu",
                          (unsigned long long)max);
  }
  *out = (uint64_t)json_integer_value(v);
  return ATLAS_OK;
}

atlas_status atlas_tj_array(json_t *obj, const atlas_tj_at *at, const char *key,
                            json_t **out) {
  json_t *v = atlas_tj_member(obj, key);
  if (!json_is_array(v)) {
    atlas_tj_at k = atlas_tj_key(at, key);
    return atlas_tj_error(&k, v ? "expected an array"
                                : "missing (an array "
                                  "is required)");
  }
  *out = v;
  return ATLAS_OK;
}

atlas_status atlas_tj_type(json_t *obj, const atlas_tj_at *at,
                           const char **out) {
  if (!json_is_object(obj)) return atlas_tj_error(at, "expected an object");
  return atlas_tj_string(obj, at, "type", out, NULL);
}
