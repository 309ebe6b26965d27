// The safetensors header: the 8-byte length, the JSON object, each tensor's
// dtype, shape and byte range, the metadata, and the check that the tensors
// tile the data region exactly. See safetensors.h for the rules.
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>  // strcasecmp

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/json_words.h"
#include "atlas/runtime/formats/safetensors_internal.h"

// Every dtype name the safetensors format defines, so that a valid file with
// an unsupported dtype gets "not supported" rather than "unknown".
typedef struct dtype_info {
  const char *name;
  bool supported;
  atlas_dtype dtype;  // meaningful when supported
} dtype_info;

static const dtype_info kDtypes[] = {
    {"F32", true, ATLAS_DTYPE_F32},
    {"F16", true, ATLAS_DTYPE_F16},
    {"BF16", true, ATLAS_DTYPE_BF16},
    {"F64", false, ATLAS_DTYPE_F32},
    {"I64", false, ATLAS_DTYPE_I64},
    {"U64", false, ATLAS_DTYPE_F32},
    {"I32", false, ATLAS_DTYPE_I32},
    {"U32", false, ATLAS_DTYPE_F32},
    {"I16", false, ATLAS_DTYPE_F32},
    {"U16", false, ATLAS_DTYPE_F32},
    {"I8", false, ATLAS_DTYPE_F32},
    {"U8", false, ATLAS_DTYPE_F32},
    {"BOOL", false, ATLAS_DTYPE_F32},
    {"F8_E4M3", false, ATLAS_DTYPE_F8_E4M3},
    {"F8_E5M2", false, ATLAS_DTYPE_F32},
    {"F8_E8M0", false, ATLAS_DTYPE_F32},
    {"F6_E2M3", false, ATLAS_DTYPE_F32},
    {"F6_E3M2", false, ATLAS_DTYPE_F32},
    {"F4", false, ATLAS_DTYPE_F32},
    {"C64", false, ATLAS_DTYPE_F32},
};

const char *atlas_dtype_name(atlas_dtype dtype) {
  switch (dtype) {
    case ATLAS_DTYPE_F32:
      return "F32";
    case ATLAS_DTYPE_F16:
      return "F16";
    case ATLAS_DTYPE_BF16:
      return "BF16";
    case ATLAS_DTYPE_I32:
      return "I32";
    case ATLAS_DTYPE_I64:
      return "I64";
    case ATLAS_DTYPE_F8_E4M3:
      return "F8_E4M3";
    case ATLAS_DTYPE_GGUF_Q8_0:
      return "Q8_0";
    case ATLAS_DTYPE_GGUF_Q4_0:
      return "Q4_0";
    case ATLAS_DTYPE_GGUF_Q4_K:
      return "Q4_K";
    case ATLAS_DTYPE_GGUF_Q5_K:
      return "Q5_K";
    case ATLAS_DTYPE_GGUF_Q6_K:
      return "Q6_K";
  }
  return "?";
}

bool atlas_dtype_is_float(atlas_dtype dtype) {
  return dtype == ATLAS_DTYPE_F32 || dtype == ATLAS_DTYPE_F16 ||
         dtype == ATLAS_DTYPE_BF16;
}

bool atlas_dtype_from_name(const char *name, atlas_dtype *out_dtype) {
  const atlas_dtype all[] = {ATLAS_DTYPE_F32, ATLAS_DTYPE_F16,
                             ATLAS_DTYPE_BF16};
  for (size_t i = 0; name != NULL && i < sizeof(all) / sizeof(all[0]); ++i) {
    if (strcasecmp(name, atlas_dtype_name(all[i])) == 0) {
      *out_dtype = all[i];
      return true;
    }
  }
  return false;
}

size_t atlas_dtype_size(atlas_dtype dtype) {
  switch (dtype) {
    case ATLAS_DTYPE_F32:
      return 4;
    case ATLAS_DTYPE_F16:
    case ATLAS_DTYPE_BF16:
      return 2;
    case ATLAS_DTYPE_I32:
      return 4;
    case ATLAS_DTYPE_I64:
      return 8;
    case ATLAS_DTYPE_F8_E4M3:
      return 1;
    case ATLAS_DTYPE_GGUF_Q8_0:
    case ATLAS_DTYPE_GGUF_Q4_0:
    case ATLAS_DTYPE_GGUF_Q4_K:
    case ATLAS_DTYPE_GGUF_Q5_K:
    case ATLAS_DTYPE_GGUF_Q6_K:
      return 0;  // blocks, not elements
  }
  return 0;
}

void atlas_shape_format(const int64_t *shape, int rank, char *buf,
                        size_t size) {
  if (size == 0) return;
  size_t used = 0;
  buf[0] = '\0';
  int n = snprintf(buf, size, "[");
  if (n < 0) return;
  used = (size_t)n;
  for (int i = 0; i < rank && used < size; ++i) {
    n = snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                 (long long)shape[i]);
    if (n < 0) return;
    used += (size_t)n;
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy != NULL) memcpy(copy, s, n);
  return copy;
}

// Reads a non-negative JSON integer.
static bool get_u64(const json_t *v, uint64_t *out) {
  if (!json_is_integer(v)) return false;
  json_int_t i = json_integer_value(v);
  if (i < 0) return false;
  *out = (uint64_t)i;
  return true;
}

// The stored types of quantized checkpoints (ATLAS_SAFETENSORS_QUANTIZED).
static bool quantized_dtype(atlas_dtype d) {
  return d == ATLAS_DTYPE_I32 || d == ATLAS_DTYPE_I64 ||
         d == ATLAS_DTYPE_F8_E4M3;
}

static atlas_status parse_dtype(const char *path, const char *tensor,
                                const json_t *v, unsigned flags,
                                atlas_dtype *out) {
  char qd[ATLAS_QUOTE_BYTES];
  if (!json_is_string(v)) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\": dtype is %s, not a string",
                             path, tensor, atlas_json_type_word(v));
  }
  const char *name = json_string_value(v);
  for (size_t i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    if (strcmp(kDtypes[i].name, name) != 0) continue;
    if ((flags & ATLAS_SAFETENSORS_QUANTIZED) &&
        quantized_dtype(kDtypes[i].dtype)) {
      *out = kDtypes[i].dtype;
      return ATLAS_OK;
    }
    if (!kDtypes[i].supported) {
      return atlas_status_make(
          ATLAS_STATUS_UNIMPLEMENTED,
          "%s: dtype %s of tensor \"%s\" is not supported (supported: F32, "
          "F16, BF16)",
          path, name, tensor);
    }
    *out = kDtypes[i].dtype;
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_DATA_LOSS,
      "%s: tensor \"%s\" has unknown dtype \"%s\" (not a "
      "safetensors dtype)",
      path, tensor, atlas_quote_n(name, json_string_length(v), qd, sizeof(qd)));
}

static atlas_status parse_shape(const char *path, const char *tensor,
                                const json_t *v, atlas_safetensors_tensor *t) {
  if (!json_is_array(v)) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\": shape is %s, not an array",
                             path, tensor, atlas_json_type_word(v));
  }
  size_t rank = json_array_size(v);
  if (rank > ATLAS_SAFETENSORS_MAX_RANK) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: tensor \"%s\" has rank %zu; at most %d dimensions are supported",
        path, tensor, rank, ATLAS_SAFETENSORS_MAX_RANK);
  }
  uint64_t elements = 1;
  bool overflow = false;
  for (size_t i = 0; i < rank; ++i) {
    uint64_t dim = 0;
    const json_t *d = json_array_get(v, i);
    if (!get_u64(d, &dim)) {
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "%s: tensor \"%s\": shape dimension %zu is not "
                               "a non-negative integer",
                               path, tensor, i);
    }
    t->shape[i] = (int64_t)dim;
    if (__builtin_mul_overflow(elements, dim, &elements)) overflow = true;
  }
  t->rank = (int)rank;
  // A zero dimension makes the product 0 whatever else overflowed.
  for (size_t i = 0; i < rank; ++i) {
    if (t->shape[i] == 0) {
      elements = 0;
      overflow = false;
    }
  }
  uint64_t bytes = 0;
  if (!overflow &&
      __builtin_mul_overflow(elements, (uint64_t)atlas_dtype_size(t->dtype),
                             &bytes)) {
    overflow = true;
  }
  if (overflow) {
    char shape[256];
    atlas_shape_format(t->shape, t->rank, shape, sizeof(shape));
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\": shape %s overflows 64 bits "
                             "when multiplied out",
                             path, tensor, shape);
  }
  t->elements = elements;
  t->bytes = bytes;
  return ATLAS_OK;
}

// Parses one tensor entry; sets begin/end (relative to the data region).
static atlas_status parse_tensor(const char *path, const char *raw_name,
                                 const json_t *v, unsigned flags,
                                 uint64_t data_size,
                                 atlas_safetensors_tensor *t, uint64_t *begin,
                                 uint64_t *end) {
  char name[ATLAS_QUOTE_BYTES];  // the name as messages show it
  atlas_quote(raw_name, name, sizeof(name));
  if (!json_is_object(v)) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\" is described by %s, not an "
                             "object with dtype, shape and data_offsets",
                             path, name, atlas_json_type_word(v));
  }
  const char *key;
  json_t *field;
  json_object_foreach((json_t *)v, key, field) {
    if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0 &&
        strcmp(key, "data_offsets") != 0) {
      char qk[ATLAS_QUOTE_BYTES];
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "%s: tensor \"%s\" has unexpected field \"%s\" "
                               "(expected dtype, shape, data_offsets)",
                               path, name, atlas_quote(key, qk, sizeof(qk)));
    }
  }
  static const char *const kFields[] = {"dtype", "shape", "data_offsets"};
  for (size_t i = 0; i < 3; ++i) {
    if (json_object_get(v, kFields[i]) == NULL) {
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "%s: tensor \"%s\" is missing field \"%s\"",
                               path, name, kFields[i]);
    }
  }
  ATLAS_RETURN_IF_ERROR(
      parse_dtype(path, name, json_object_get(v, "dtype"), flags, &t->dtype));
  ATLAS_RETURN_IF_ERROR(
      parse_shape(path, name, json_object_get(v, "shape"), t));

  const json_t *offsets = json_object_get(v, "data_offsets");
  if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
      !get_u64(json_array_get(offsets, 0), begin) ||
      !get_u64(json_array_get(offsets, 1), end)) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\": data_offsets must be two "
                             "non-negative integers [begin, end]",
                             path, name);
  }
  if (*begin > *end) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: tensor \"%s\": data_offsets [%llu, %llu] end "
                             "before they begin",
                             path, name, (unsigned long long)*begin,
                             (unsigned long long)*end);
  }
  if (*end > data_size) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: tensor \"%s\": data_offsets [%llu, %llu] run past the end of the "
        "file (the data region holds %llu bytes; truncated file?)",
        path, name, (unsigned long long)*begin, (unsigned long long)*end,
        (unsigned long long)data_size);
  }
  if (*end - *begin != t->bytes) {
    char shape[256];
    atlas_shape_format(t->shape, t->rank, shape, sizeof(shape));
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: tensor \"%s\": data_offsets [%llu, %llu] span %llu bytes but "
        "shape %s of %s needs %llu bytes",
        path, name, (unsigned long long)*begin, (unsigned long long)*end,
        (unsigned long long)(*end - *begin), shape, atlas_dtype_name(t->dtype),
        (unsigned long long)t->bytes);
  }
  return ATLAS_OK;
}

typedef struct meta_pair {
  char *key;
  char *value;
} meta_pair;

static int compare_meta(const void *a, const void *b) {
  return strcmp(((const meta_pair *)a)->key, ((const meta_pair *)b)->key);
}

// Sorts keys and values together: n log n (a header may hold a million keys
// within the size cap; an insertion sort took days on those).
static atlas_status sort_metadata(const char *path, atlas_safetensors *file) {
  size_t n = file->meta_count;
  if (n < 2) return ATLAS_OK;
  meta_pair *pairs = malloc(n * sizeof(*pairs));
  if (pairs == NULL) return atlas_safetensors_oom(path);
  for (size_t i = 0; i < n; ++i) {
    pairs[i] = (meta_pair){file->meta_keys[i], file->meta_values[i]};
  }
  qsort(pairs, n, sizeof(*pairs), compare_meta);
  for (size_t i = 0; i < n; ++i) {
    file->meta_keys[i] = pairs[i].key;
    file->meta_values[i] = pairs[i].value;
  }
  free(pairs);
  return ATLAS_OK;
}

static atlas_status parse_metadata(const char *path, const json_t *v,
                                   atlas_safetensors *file) {
  if (!json_is_object(v)) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: __metadata__ is %s, not an object of strings",
                             path, atlas_json_type_word(v));
  }
  size_t n = json_object_size(v);
  if (n == 0) return ATLAS_OK;
  file->meta_keys = calloc(n, sizeof(char *));
  file->meta_values = calloc(n, sizeof(char *));
  if (file->meta_keys == NULL || file->meta_values == NULL)
    return atlas_safetensors_oom(path);
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)v, key, value) {
    if (!json_is_string(value)) {
      char qk[ATLAS_QUOTE_BYTES];
      return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                               "%s: __metadata__ value for key \"%s\" is %s; "
                               "metadata must map strings to strings",
                               path, atlas_quote(key, qk, sizeof(qk)),
                               atlas_json_type_word(value));
    }
    size_t i = file->meta_count;
    file->meta_keys[i] = dup_string(key);
    file->meta_values[i] = dup_string(json_string_value(value));
    if (file->meta_keys[i] == NULL || file->meta_values[i] == NULL) {
      free(file->meta_keys[i]);
      free(file->meta_values[i]);
      return atlas_safetensors_oom(path);
    }
    file->meta_count = i + 1;
  }
  return sort_metadata(path, file);
}

typedef struct span {
  uint64_t begin;
  uint64_t end;
  const char *name;
  size_t index;  // into the array in header order
} span;

static int compare_spans(const void *a, const void *b) {
  const span *x = a;
  const span *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int compare_by_name(const void *a, const void *b) {
  const atlas_safetensors_tensor *const *x = a;
  const atlas_safetensors_tensor *const *y = b;
  return strcmp((*x)->name, (*y)->name);
}

// Checks that the spans, sorted, tile [0, data_size) exactly.
static atlas_status check_coverage(const char *path, const span *spans,
                                   size_t count, uint64_t data_size) {
  uint64_t expected = 0;
  char qa[ATLAS_QUOTE_BYTES], qb[ATLAS_QUOTE_BYTES];
  for (size_t i = 0; i < count; ++i) {
    const span *s = &spans[i];
    if (s->begin != expected) {
      atlas_quote(s->name, qa, sizeof(qa));
      atlas_quote(i > 0 ? spans[i - 1].name : "", qb, sizeof(qb));
    }
    if (s->begin < expected) {
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: tensor \"%s\" (bytes %llu..%llu) overlaps tensor \"%s\" "
          "(which ends at %llu)",
          path, qa, (unsigned long long)s->begin, (unsigned long long)s->end,
          qb, (unsigned long long)expected);
    }
    if (s->begin > expected) {
      if (i == 0) {
        return atlas_status_make(
            ATLAS_STATUS_DATA_LOSS,
            "%s: gap of %llu unused bytes at the start of the data region "
            "(the first tensor, \"%s\", begins at %llu, not 0)",
            path, (unsigned long long)s->begin, qa,
            (unsigned long long)s->begin);
      }
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: gap of %llu unused bytes between tensor \"%s\" (ends at %llu) "
          "and tensor \"%s\" (begins at %llu)",
          path, (unsigned long long)(s->begin - expected), qb,
          (unsigned long long)expected, qa, (unsigned long long)s->begin);
    }
    expected = s->end;
  }
  if (expected != data_size) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: %llu trailing bytes after the last tensor (tensors cover %llu of "
        "the %llu-byte data region)",
        path, (unsigned long long)(data_size - expected),
        (unsigned long long)expected, (unsigned long long)data_size);
  }
  return ATLAS_OK;
}

static bool is_json_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Reads the length prefix and checks it against the buffer.
atlas_status atlas_safetensors_header_length(const char *path,
                                             const uint8_t *base, uint64_t size,
                                             uint64_t *out_len) {
  if (size < 8) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: file is %llu bytes, too short to hold the "
                             "8-byte header length (truncated header)",
                             path, (unsigned long long)size);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base[i];
  if (n > ATLAS_SAFETENSORS_MAX_HEADER_BYTES) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: header length %llu exceeds the limit of %llu bytes (huge header "
        "length; not a safetensors file?)",
        path, (unsigned long long)n,
        (unsigned long long)ATLAS_SAFETENSORS_MAX_HEADER_BYTES);
  }
  if (n > size - 8) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: header length %llu is longer than the file, which has only %llu "
        "bytes after the length field (truncated file?)",
        path, (unsigned long long)n, (unsigned long long)(size - 8));
  }
  if (n < 2) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: header length %llu is too short to hold a "
                             "JSON object",
                             path, (unsigned long long)n);
  }
  *out_len = n;
  return ATLAS_OK;
}

static atlas_status load_header_json(const char *path, const uint8_t *header,
                                     uint64_t n, json_t **out_root) {
  uint64_t first = 0;
  while (first < n && is_json_space(header[first])) ++first;
  if (first == n || header[first] != '{') {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: header does not start with '{' (after "
                             "optional whitespace); not a safetensors file?",
                             path);
  }
  json_error_t error;
  json_t *root = json_loadb((const char *)header, (size_t)n,
                            JSON_REJECT_DUPLICATES, &error);
  if (root == NULL) {
    if (atlas_json_error_is_oom(&error)) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory while parsing the "
                               "%llu-byte JSON header",
                               path, (unsigned long long)n);
    }
    char qe[ATLAS_QUOTE_BYTES];
    atlas_quote_json_error(error.text, qe, sizeof(qe));
    const char *hint = "";
    if (strstr(error.text, "duplicate") != NULL) {
      hint = " (duplicate names are not allowed)";
    } else if (strstr(error.text, "decode") != NULL ||
               strstr(error.text, "UTF") != NULL) {
      hint = " (invalid UTF-8)";
    }
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: header is not valid JSON: %s at line %d, "
                             "column %d%s",
                             path, qe, error.line, error.column, hint);
  }
  if (!json_is_object(root)) {
    json_decref(root);
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: header is not a JSON object", path);
  }
  *out_root = root;
  return ATLAS_OK;
}

// Moves the parsed tensors into `file` in file order and indexes them by
// name. On failure `file` holds what it has, for atlas_safetensors_close.
static atlas_status adopt_tensors(const char *path,
                                  const atlas_safetensors_tensor *parsed,
                                  const span *spans, size_t count,
                                  atlas_safetensors *file) {
  file->tensors = calloc(count, sizeof(atlas_safetensors_tensor));
  file->by_name = calloc(count, sizeof(const atlas_safetensors_tensor *));
  file->digests = calloc(count, sizeof(uint64_t));
  file->digested = calloc(count, 1);
  if (file->tensors == NULL || file->by_name == NULL || file->digests == NULL ||
      file->digested == NULL) {
    return atlas_safetensors_oom(path);
  }
  for (size_t i = 0; i < count; ++i) {
    atlas_safetensors_tensor *t = &file->tensors[i];
    *t = parsed[spans[i].index];
    t->name = dup_string(spans[i].name);
    if (t->name == NULL) return atlas_safetensors_oom(path);
    file->count = i + 1;
    t->file_offset = file->data_start + spans[i].begin;
    t->data = file->base != NULL ? file->base + t->file_offset : NULL;
    t->file = file;
    file->by_name[i] = t;
  }
  qsort(file->by_name, count, sizeof(const atlas_safetensors_tensor *),
        compare_by_name);
  return ATLAS_OK;
}

// Fills file->tensors (in file order), by_name and metadata from the header.
static atlas_status parse_entries(const char *path, const json_t *root,
                                  atlas_safetensors *file) {
  size_t total = json_object_size(root);
  bool has_meta = json_object_get(root, "__metadata__") != NULL;
  size_t count = total - (has_meta ? 1 : 0);
  if (has_meta) {
    ATLAS_RETURN_IF_ERROR(
        parse_metadata(path, json_object_get(root, "__metadata__"), file));
  }
  if (count == 0) {
    return check_coverage(path, NULL, 0, file->data_bytes);
  }
  atlas_safetensors_tensor *parsed = calloc(count, sizeof(*parsed));
  span *spans = calloc(count, sizeof(*spans));
  if (parsed == NULL || spans == NULL) {
    free(parsed);
    free(spans);
    return atlas_safetensors_oom(path);
  }
  atlas_status status = ATLAS_OK;
  size_t n = 0;
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)root, key, value) {
    if (strcmp(key, "__metadata__") == 0) continue;
    uint64_t begin = 0;
    uint64_t end = 0;
    status = parse_tensor(path, key, value, file->flags, file->data_bytes,
                          &parsed[n], &begin, &end);
    if (status != ATLAS_OK) break;
    spans[n] = (span){begin, end, key, n};
    ++n;
  }
  if (status == ATLAS_OK) {
    qsort(spans, count, sizeof(*spans), compare_spans);
    status = check_coverage(path, spans, count, file->data_bytes);
  }
  if (status == ATLAS_OK)
    status = adopt_tensors(path, parsed, spans, count, file);
  free(parsed);
  free(spans);
  return status;
}

// Parses a header already read. `base` is the buffer holding the whole file
// (data is read from it) or NULL for a file read with pread.
atlas_status atlas_safetensors_parse_header(const char *path,
                                            const uint8_t *header,
                                            uint64_t header_len, uint64_t size,
                                            const uint8_t *base, unsigned flags,
                                            atlas_safetensors **out_file) {
  char qpath[ATLAS_QUOTE_PATH_BYTES];  // the path as messages show it
  atlas_quote_path(path, qpath, sizeof(qpath));
  json_t *root = NULL;
  ATLAS_RETURN_IF_ERROR(load_header_json(qpath, header, header_len, &root));
  atlas_safetensors *file = calloc(1, sizeof(*file));
  if (file == NULL || (file->path = dup_string(path)) == NULL) {
    free(file);
    json_decref(root);
    return atlas_safetensors_oom(qpath);
  }
  file->fd = -1;
  file->flags = flags;
  file->base = base;
  file->size = size;
  file->data_start = 8 + header_len;
  file->data_bytes = size - file->data_start;
  atlas_status status = parse_entries(qpath, root, file);
  json_decref(root);
  if (status != ATLAS_OK) {
    atlas_safetensors_close(file);
    return status;
  }
  *out_file = file;
  return ATLAS_OK;
}
