// Reading tokenizer.json with jansson: typed field access whose errors name
// the file and the key path ("tokenizer.json: pre_tokenizer.pretokenizers[1]
// .behavior: ..."), so a user knows exactly which part of the file is wrong.
#ifndef ATLAS_RUNTIME_TEXT_JSON_UTIL_H_
#define ATLAS_RUNTIME_TEXT_JSON_UTIL_H_

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#define ATLAS_TJ_PATH_MAX 256

// Where in which file: carried down the loaders.
typedef struct atlas_tj_at {
  const char *file;
  char path[ATLAS_TJ_PATH_MAX];
} atlas_tj_at;

// at.path + "." + key (or "[index]").
atlas_tj_at atlas_tj_key(const atlas_tj_at *at, const char *key);
atlas_tj_at atlas_tj_index(const atlas_tj_at *at, size_t index);

// Prefixes "file: path: " to a status (takes ownership).
ATLAS_MUST_USE atlas_status atlas_tj_annotate(const atlas_tj_at *at,
                                              atlas_status status);
// DATA_LOSS status "file: path: message".
#define atlas_tj_error(at, ...) \
  atlas_tj_annotate((at),       \
                    atlas_status_make(ATLAS_STATUS_DATA_LOSS, __VA_ARGS__))
// UNIMPLEMENTED status "file: path: message" for a construct we refuse.
#define atlas_tj_unsupported(at, ...) \
  atlas_tj_annotate(                  \
      (at), atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED, __VA_ARGS__))

// The object's member `key`; NULL when absent or JSON null.
json_t *atlas_tj_member(json_t *obj, const char *key);

// Required string member. The pointer is owned by the JSON document.
ATLAS_MUST_USE atlas_status atlas_tj_string(json_t *obj, const atlas_tj_at *at,
                                            const char *key, const char **out,
                                            size_t *out_len);
// Optional string member: *out = NULL when absent or null.
ATLAS_MUST_USE atlas_status atlas_tj_opt_string(json_t *obj,
                                                const atlas_tj_at *at,
                                                const char *key,
                                                const char **out,
                                                size_t *out_len);
// Optional bool member with a default.
ATLAS_MUST_USE atlas_status atlas_tj_bool(json_t *obj, const atlas_tj_at *at,
                                          const char *key, bool dflt,
                                          bool *out);
// Required unsigned integer member (<= max).
ATLAS_MUST_USE atlas_status atlas_tj_uint(json_t *obj, const atlas_tj_at *at,
                                          const char *key, uint64_t max,
                                          uint64_t *out);
// Required array member.
ATLAS_MUST_USE atlas_status atlas_tj_array(json_t *obj, const atlas_tj_at *at,
                                           const char *key, json_t **out);
// The object's "type" string; refuses a non-object.
ATLAS_MUST_USE atlas_status atlas_tj_type(json_t *obj, const atlas_tj_at *at,
                                          const char **out);

#endif  // ATLAS_RUNTIME_TEXT_JSON_UTIL_H_
