// GGUF header parsing and checks (gguf.h).
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/formats/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/gguf_internal.h"

// Longest key and string value read (a chat template is a few kilobytes;
// keys are dotted names).
#define MAX_KEY_BYTES ((uint64_t)1024)
#define MAX_STRING_BYTES ((uint64_t)1 << 28)

typedef struct type_info {
  const char *name;
  uint32_t block, bytes;  // 0 bytes: not a type (removed or unused number)
} type_info;

// ggml's types by number: elements and bytes per block (ggml-common.h).
static const type_info kTypes[] = {
    {"F32", 1, 4},        {"F16", 1, 2},        {"Q4_0", 32, 18},
    {"Q4_1", 32, 20},     {"Q4_2", 0, 0},       {"Q4_3", 0, 0},
    {"Q5_0", 32, 22},     {"Q5_1", 32, 24},     {"Q8_0", 32, 34},
    {"Q8_1", 32, 36},     {"Q2_K", 256, 84},    {"Q3_K", 256, 110},
    {"Q4_K", 256, 144},   {"Q5_K", 256, 176},   {"Q6_K", 256, 210},
    {"Q8_K", 256, 292},   {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74},
    {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},   {"IQ4_NL", 32, 18},
    {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},   {"IQ4_XS", 256, 136},
    {"I8", 1, 1},         {"I16", 1, 2},        {"I32", 1, 4},
    {"I64", 1, 8},        {"F64", 1, 8},        {"IQ1_M", 256, 56},
    {"BF16", 1, 2},       {"Q4_0_4_4", 0, 0},   {"Q4_0_4_8", 0, 0},
    {"Q4_0_8_8", 0, 0},   {"TQ1_0", 256, 54},   {"TQ2_0", 256, 66},
    {"IQ4_NL_4_4", 0, 0}, {"IQ4_NL_4_8", 0, 0}, {"IQ4_NL_8_8", 0, 0},
    {"MXFP4", 32, 17},
};
#define TYPE_COUNT (sizeof(kTypes) / sizeof(kTypes[0]))

static const char *const kValueTypes[] = {
    "u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
    "bool", "string", "array", "u64", "i64", "f64"};
static const uint32_t kValueSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
#define VALUE_TYPE_COUNT (sizeof(kValueSizes) / sizeof(kValueSizes[0]))

uint32_t atlas_gguf_value_size(uint32_t type) {
  return type < VALUE_TYPE_COUNT ? kValueSizes[type] : 0;
}

const char *atlas_gguf_type_name(uint32_t type) {
  return type < TYPE_COUNT && kTypes[type].bytes ? kTypes[type].name : "?";
}

const char *atlas_gguf_value_type_name(uint32_t type) {
  return type < VALUE_TYPE_COUNT ? kValueTypes[type] : "?";
}

bool atlas_gguf_type_block(uint32_t type, uint32_t *out_elements,
                           uint32_t *out_bytes) {
  if (type >= TYPE_COUNT || kTypes[type].bytes == 0) return false;
  *out_elements = kTypes[type].block;
  *out_bytes = kTypes[type].bytes;
  return true;
}

bool atlas_gguf_type_supported(uint32_t type) {
  switch (type) {
    case ATLAS_GGUF_TYPE_F32:
    case ATLAS_GGUF_TYPE_F16:
    case ATLAS_GGUF_TYPE_BF16:
    case ATLAS_GGUF_TYPE_Q8_0:
    case ATLAS_GGUF_TYPE_Q4_0:
    case ATLAS_GGUF_TYPE_Q4_K:
    case ATLAS_GGUF_TYPE_Q5_K:
    case ATLAS_GGUF_TYPE_Q6_K:
      return true;
    default:
      return false;
  }
}

// A reading position over the bytes at hand. `more` is set (and the read
// refused) where the bytes exist in the file but were not read yet.
typedef struct cursor {
  const atlas_gguf *g;
  uint64_t pos;
  bool more;
  uint64_t needed;  // with `more`: the bytes to read before trying again
} cursor;

static atlas_status truncated(cursor *c, uint64_t n, const char *what) {
  return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "%s: %s at byte %llu needs %llu bytes, but the "
                           "file has %llu",
                           c->g->name, what, (unsigned long long)c->pos,
                           (unsigned long long)n,
                           (unsigned long long)(c->g->file_size - c->pos));
}

// Makes n bytes at the cursor available (or says why not).
static atlas_status need(cursor *c, uint64_t n, const char *what) {
  if (n > c->g->file_size - c->pos) return truncated(c, n, what);
  if (n > c->g->buf_size - c->pos) {
    c->more = true;
    c->needed = c->pos + n;
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE, "more header bytes");
  }
  return ATLAS_OK;
}

static atlas_status read_bytes(cursor *c, void *dst, uint64_t n,
                               const char *what) {
  ATLAS_RETURN_IF_ERROR(need(c, n, what));
  memcpy(dst, c->g->buf + c->pos, (size_t)n);
  c->pos += n;
  return ATLAS_OK;
}

static atlas_status read_u32(cursor *c, uint32_t *out, const char *what) {
  return read_bytes(c, out, 4, what);
}
static atlas_status read_u64(cursor *c, uint64_t *out, const char *what) {
  return read_bytes(c, out, 8, what);
}

// A string: u64 length then the bytes; *out points into the buffer.
static atlas_status read_string(cursor *c, uint64_t max, const char *what,
                                const char **out, uint64_t *out_len) {
  uint64_t at = c->pos, len = 0;
  ATLAS_RETURN_IF_ERROR(read_u64(c, &len, what));
  if (len > max) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: %s at byte %llu is %llu bytes long; the "
                             "limit is %llu",
                             c->g->name, what, (unsigned long long)at,
                             (unsigned long long)len, (unsigned long long)max);
  }
  ATLAS_RETURN_IF_ERROR(need(c, len, what));
  *out = (const char *)c->g->buf + c->pos;
  *out_len = len;
  c->pos += len;
  return ATLAS_OK;
}

static char *copy_name(const char *s, uint64_t len) {
  char *p = malloc((size_t)len + 1);
  if (p != NULL) {
    memcpy(p, s, (size_t)len);
    p[len] = '\0';
  }
  return p;
}

static atlas_status oom(const atlas_gguf *g) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "%s: out of host memory reading the GGUF header",
                           g->name);
}

// A key or tensor name: not empty, no NUL inside, copied.
static atlas_status read_name(cursor *c, uint64_t max, const char *what,
                              char **out) {
  uint64_t at = c->pos, len = 0;
  const char *s = NULL;
  ATLAS_RETURN_IF_ERROR(read_string(c, max, what, &s, &len));
  if (len == 0 || memchr(s, '\0', (size_t)len) != NULL) {
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS, "%s: %s at byte %llu is %s", c->g->name, what,
        (unsigned long long)at, len == 0 ? "empty" : "holds a NUL byte");
  }
  *out = copy_name(s, len);
  return *out == NULL ? oom(c->g) : ATLAS_OK;
}

// Skips one value of `type` (not an array), checking it.
static atlas_status skip_value(cursor *c, uint32_t type, const char *key) {
  char what[96];
  snprintf(what, sizeof(what), "the value of a %s key",
           atlas_gguf_value_type_name(type));
  if (type == ATLAS_GGUF_STRING) {
    const char *s = NULL;
    uint64_t len = 0;
    return read_string(c, MAX_STRING_BYTES, what, &s, &len);
  }
  ATLAS_RETURN_IF_ERROR(need(c, kValueSizes[type], what));
  if (type == ATLAS_GGUF_BOOL && c->g->buf[c->pos] > 1) {
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS,
        "%s: key \"%s\" is a bool of value %u at byte "
        "%llu (a bool is 0 or 1)",
        c->g->name, atlas_quote_n(key, strlen(key), q, sizeof(q)),
        (unsigned)c->g->buf[c->pos], (unsigned long long)c->pos);
  }
  c->pos += kValueSizes[type];
  return ATLAS_OK;
}

static atlas_status bad_type(cursor *c, uint64_t at, const char *what,
                             uint32_t type) {
  return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "%s: %s at byte %llu has value type %u, which "
                           "GGUF does not define",
                           c->g->name, what, (unsigned long long)at,
                           (unsigned)type);
}

static atlas_status read_kv(cursor *c, size_t i) {
  atlas_gguf *g = (atlas_gguf *)c->g;
  atlas_gguf_kv *kv = &g->kvs[i];
  char *key = NULL;
  ATLAS_RETURN_IF_ERROR(read_name(c, MAX_KEY_BYTES, "a metadata key", &key));
  kv->key = key;
  uint64_t at = c->pos;
  ATLAS_RETURN_IF_ERROR(read_u32(c, &kv->type, "a value type"));
  if (kv->type >= VALUE_TYPE_COUNT) {
    return bad_type(c, at, "a metadata value", kv->type);
  }
  kv->count = 1;
  if (kv->type != ATLAS_GGUF_ARRAY) {
    kv->value_at = c->pos;
    return skip_value(c, kv->type, key);
  }
  at = c->pos;
  ATLAS_RETURN_IF_ERROR(read_u32(c, &kv->elem_type, "an array's type"));
  if (kv->elem_type >= VALUE_TYPE_COUNT || kv->elem_type == ATLAS_GGUF_ARRAY) {
    return kv->elem_type == ATLAS_GGUF_ARRAY
               ? atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                                   "%s: an array of arrays at byte %llu "
                                   "(not read)",
                                   g->name, (unsigned long long)at)
               : bad_type(c, at, "an array", kv->elem_type);
  }
  ATLAS_RETURN_IF_ERROR(read_u64(c, &kv->count, "an array's length"));
  kv->value_at = c->pos;
  // Every element takes at least one byte (a string eight): a count past
  // the bytes that remain is refused before anything is allocated.
  const uint64_t min =
      kv->elem_type == ATLAS_GGUF_STRING ? 8 : kValueSizes[kv->elem_type];
  if (kv->count > (g->file_size - c->pos) / min) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: an array of %llu %s elements at byte %llu "
                             "does not fit the %llu bytes left in the file",
                             g->name, (unsigned long long)kv->count,
                             atlas_gguf_value_type_name(kv->elem_type),
                             (unsigned long long)c->pos,
                             (unsigned long long)(g->file_size - c->pos));
  }
  if (kv->elem_type != ATLAS_GGUF_STRING) {
    ATLAS_RETURN_IF_ERROR(need(c, kv->count * min, "an array"));
    if (kv->elem_type == ATLAS_GGUF_BOOL) {
      for (uint64_t e = 0; e < kv->count; ++e) {
        ATLAS_RETURN_IF_ERROR(skip_value(c, ATLAS_GGUF_BOOL, key));
      }
    } else {
      c->pos += kv->count * min;
    }
    return ATLAS_OK;
  }
  uint64_t *offsets = malloc((size_t)(kv->count ? kv->count : 1) * 8);
  if (offsets == NULL) return oom(g);
  g->str_offsets[i] = offsets;
  for (uint64_t e = 0; e < kv->count; ++e) {
    offsets[e] = c->pos;
    ATLAS_RETURN_IF_ERROR(skip_value(c, ATLAS_GGUF_STRING, key));
  }
  return ATLAS_OK;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

// DATA_LOSS naming the first name that appears twice among `n`.
static atlas_status check_unique(const atlas_gguf *g, const char **names,
                                 size_t n, const char *what) {
  qsort(names, n, sizeof(*names), compare_names);
  for (size_t i = 1; i < n; ++i) {
    if (strcmp(names[i - 1], names[i]) == 0) {
      char q[ATLAS_QUOTE_BYTES];
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS, "%s: %s \"%s\" appears twice", g->name, what,
          atlas_quote_n(names[i], strlen(names[i]), q, sizeof(q)));
    }
  }
  return ATLAS_OK;
}

static atlas_status read_alignment(atlas_gguf *g) {
  g->alignment = ATLAS_GGUF_DEFAULT_ALIGNMENT;
  const atlas_gguf_kv *kv = atlas_gguf_find_kv(g, "general.alignment");
  if (kv == NULL) return ATLAS_OK;
  uint32_t a = 0;
  if (kv->type == ATLAS_GGUF_U32) memcpy(&a, g->buf + kv->value_at, 4);
  if (kv->type != ATLAS_GGUF_U32 || a == 0 || (a & (a - 1)) != 0) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: general.alignment must be a u32 power of "
                             "two (it is %s %u)",
                             g->name, atlas_gguf_value_type_name(kv->type),
                             (unsigned)a);
  }
  g->alignment = a;
  return ATLAS_OK;
}

static atlas_status tensor_error(const atlas_gguf *g, const char *name,
                                 const char *why) {
  char q[ATLAS_QUOTE_BYTES];
  return atlas_status_make(
      ATLAS_STATUS_DATA_LOSS, "%s: tensor \"%s\": %s", g->name,
      name != NULL ? atlas_quote_n(name, strlen(name), q, sizeof(q)) : "?",
      why);
}

static atlas_status read_tensor(cursor *c, atlas_gguf_tensor *t) {
  const atlas_gguf *g = c->g;
  char *name = NULL;
  ATLAS_RETURN_IF_ERROR(
      read_name(c, ATLAS_GGUF_MAX_NAME - 1, "a tensor name", &name));
  t->name = name;
  ATLAS_RETURN_IF_ERROR(read_u32(c, &t->n_dims, "a tensor's rank"));
  char why[160];
  if (t->n_dims < 1 || t->n_dims > ATLAS_GGUF_MAX_DIMS) {
    snprintf(why, sizeof(why), "%u dimensions (1 to %d)", (unsigned)t->n_dims,
             ATLAS_GGUF_MAX_DIMS);
    return tensor_error(g, name, why);
  }
  t->elements = 1;
  for (uint32_t d = 0; d < ATLAS_GGUF_MAX_DIMS; ++d) t->ne[d] = 1;
  for (uint32_t d = 0; d < t->n_dims; ++d) {
    ATLAS_RETURN_IF_ERROR(read_u64(c, &t->ne[d], "a tensor dimension"));
    if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX / t->elements) {
      snprintf(why, sizeof(why), "dimension %u is %llu (%s)", (unsigned)d,
               (unsigned long long)t->ne[d],
               t->ne[d] == 0 ? "empty" : "the element count overflows");
      return tensor_error(g, name, why);
    }
    t->elements *= t->ne[d];
  }
  ATLAS_RETURN_IF_ERROR(read_u32(c, &t->type, "a tensor type"));
  uint32_t block = 0, bytes = 0;
  if (!atlas_gguf_type_block(t->type, &block, &bytes)) {
    snprintf(why, sizeof(why), "type %u is not a ggml type", (unsigned)t->type);
    return tensor_error(g, name, why);
  }
  if (t->ne[0] % block != 0) {
    snprintf(why, sizeof(why),
             "type %s holds blocks of %u elements, but its first dimension "
             "is %llu",
             atlas_gguf_type_name(t->type), (unsigned)block,
             (unsigned long long)t->ne[0]);
    return tensor_error(g, name, why);
  }
  t->bytes = t->elements / block * bytes;  // < 2^63 / block * 292: fits
  ATLAS_RETURN_IF_ERROR(read_u64(c, &t->file_offset, "a tensor offset"));
  if (t->file_offset % g->alignment != 0) {
    snprintf(why, sizeof(why),
             "its data offset %llu is not a multiple of the alignment %llu",
             (unsigned long long)t->file_offset,
             (unsigned long long)g->alignment);
    return tensor_error(g, name, why);
  }
  return ATLAS_OK;
}

// A tensor's bytes in the file, for the overlap check.
typedef struct span {
  uint64_t begin, end;
  size_t tensor;
} span;

static int compare_spans(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

// Absolute offsets: inside the file, no two overlapping.
static atlas_status place_tensors(atlas_gguf *g) {
  char why[400];
  for (size_t i = 0; i < g->tensor_count; ++i) {
    atlas_gguf_tensor *t = &g->tensors[i];
    uint64_t rel = t->file_offset;
    if (rel > g->file_size || g->data_offset > g->file_size - rel ||
        t->bytes > g->file_size - g->data_offset - rel) {
      snprintf(why, sizeof(why),
               "its %llu bytes at data offset %llu end past the file's %llu "
               "bytes (data starts at %llu)",
               (unsigned long long)t->bytes, (unsigned long long)rel,
               (unsigned long long)g->file_size,
               (unsigned long long)g->data_offset);
      return tensor_error(g, t->name, why);
    }
    t->file_offset = g->data_offset + rel;
  }
  if (g->tensor_count < 2) return ATLAS_OK;
  span *spans = malloc(g->tensor_count * sizeof(span));
  if (spans == NULL) return oom(g);
  for (size_t i = 0; i < g->tensor_count; ++i) {
    const atlas_gguf_tensor *t = &g->tensors[i];
    spans[i] = (span){t->file_offset, t->file_offset + t->bytes, i};
  }
  qsort(spans, g->tensor_count, sizeof(span), compare_spans);
  atlas_status status = ATLAS_OK;
  for (size_t i = 1; i < g->tensor_count && status == ATLAS_OK; ++i) {
    if (spans[i - 1].end > spans[i].begin) {
      const char *a = g->tensors[spans[i - 1].tensor].name;
      char q[ATLAS_QUOTE_BYTES];
      snprintf(why, sizeof(why), "its bytes overlap those of \"%s\"",
               a != NULL ? atlas_quote_n(a, strlen(a), q, sizeof(q)) : "?");
      status = tensor_error(g, g->tensors[spans[i].tensor].name, why);
    }
  }
  free(spans);
  return status;
}

static atlas_status read_header(cursor *c, uint64_t *n_tensors,
                                uint64_t *n_kv) {
  atlas_gguf *g = (atlas_gguf *)c->g;
  char magic[4];
  ATLAS_RETURN_IF_ERROR(read_bytes(c, magic, 4, "the magic"));
  if (memcmp(magic, "GGUF", 4) != 0) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: not a GGUF file (it does not start with "
                             "\"GGUF\")",
                             g->name);
  }
  ATLAS_RETURN_IF_ERROR(read_u32(c, &g->version, "the version"));
  if (g->version != 2 && g->version != 3) {
    bool swapped = (g->version & 0xffffu) == 0 && g->version != 0;
    return atlas_status_make(
        ATLAS_STATUS_DATA_LOSS, "%s: GGUF version %u is not read (%s)", g->name,
        (unsigned)g->version,
        g->version == 1 ? "version 1 has 32-bit counts; convert the file again"
        : swapped       ? "a big-endian file"
                        : "Atlas reads versions 2 and 3");
  }
  ATLAS_RETURN_IF_ERROR(read_u64(c, n_tensors, "the tensor count"));
  ATLAS_RETURN_IF_ERROR(read_u64(c, n_kv, "the metadata count"));
  // A key-value takes at least 13 bytes, a tensor's entry 29.
  const uint64_t left = g->file_size - c->pos;
  if (*n_kv > left / 13 || *n_tensors > left / 29) {
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: %llu metadata entries and %llu tensors "
                             "cannot fit the %llu bytes left in the file",
                             g->name, (unsigned long long)*n_kv,
                             (unsigned long long)*n_tensors,
                             (unsigned long long)left);
  }
  return ATLAS_OK;
}

// The header from g->buf; `more` and `needed` are set when more of the file
// must be read first (the status then only says so).
static atlas_status parse(atlas_gguf *g, bool *more, uint64_t *needed) {
  cursor c = {g, 0, false, 0};
  uint64_t n_tensors = 0, n_kv = 0;
  atlas_status status = read_header(&c, &n_tensors, &n_kv);
  if (status == ATLAS_OK) {
    g->kvs = calloc((size_t)(n_kv ? n_kv : 1), sizeof(*g->kvs));
    g->str_offsets = calloc((size_t)(n_kv ? n_kv : 1), sizeof(uint64_t *));
    g->tensors =
        calloc((size_t)(n_tensors ? n_tensors : 1), sizeof(*g->tensors));
    if (g->kvs == NULL || g->str_offsets == NULL || g->tensors == NULL) {
      status = oom(g);
    } else {
      g->kv_alloc = (size_t)n_kv;
    }
  }
  for (uint64_t i = 0; status == ATLAS_OK && i < n_kv; ++i) {
    status = read_kv(&c, (size_t)i);
    if (g->kvs[i].key != NULL) g->kv_count = (size_t)i + 1;
  }
  if (status == ATLAS_OK) status = read_alignment(g);
  for (uint64_t i = 0; status == ATLAS_OK && i < n_tensors; ++i) {
    status = read_tensor(&c, &g->tensors[i]);
    if (g->tensors[i].name != NULL) g->tensor_count = (size_t)i + 1;
  }
  if (status == ATLAS_OK) {
    uint64_t pad = (g->alignment - c.pos % g->alignment) % g->alignment;
    g->data_offset = c.pos + pad;
    if (g->tensor_count > 0 && g->data_offset > g->file_size) {
      status = atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                                 "%s: the data section would start at byte "
                                 "%llu, past the end of the file",
                                 g->name, (unsigned long long)g->data_offset);
    }
  }
  const char **names = NULL;
  size_t n = g->kv_count > g->tensor_count ? g->kv_count : g->tensor_count;
  if (status == ATLAS_OK && n > 1) {
    names = malloc(n * sizeof(*names));
    if (names == NULL) status = oom(g);
  }
  if (status == ATLAS_OK && names != NULL && g->kv_count > 1) {
    for (size_t i = 0; i < g->kv_count; ++i) names[i] = g->kvs[i].key;
    status = check_unique(g, names, g->kv_count, "metadata key");
  }
  if (status == ATLAS_OK && names != NULL && g->tensor_count > 1) {
    for (size_t i = 0; i < g->tensor_count; ++i) names[i] = g->tensors[i].name;
    status = check_unique(g, names, g->tensor_count, "tensor");
  }
  free(names);
  if (status == ATLAS_OK) status = place_tensors(g);
  *more = c.more;
  *needed = c.needed;
  return status;
}

// Frees what a parse made (kept: the name, the bytes and the file).
static void clear_parsed(atlas_gguf *g) {
  for (size_t i = 0; i < g->kv_count; ++i) free((char *)g->kvs[i].key);
  for (size_t i = 0; g->str_offsets != NULL && i < g->kv_alloc; ++i) {
    free(g->str_offsets[i]);
  }
  for (size_t i = 0; i < g->tensor_count; ++i) free((char *)g->tensors[i].name);
  free(g->kvs);
  free(g->str_offsets);
  free(g->tensors);
  g->kvs = NULL, g->str_offsets = NULL, g->tensors = NULL;
  g->kv_count = g->kv_alloc = g->tensor_count = 0;
}

void atlas_gguf_close(atlas_gguf *g) {
  if (g == NULL) return;
  clear_parsed(g);
  if (g->fd >= 0) close(g->fd);
  free(g->owned);
  free(g->name);
  free(g);
}

static atlas_gguf *new_gguf(const char *name) {
  atlas_gguf *g = calloc(1, sizeof(*g));
  if (g == NULL) return NULL;
  g->fd = -1;
  g->name = strdup(name);
  if (g->name == NULL) {
    free(g);
    return NULL;
  }
  return g;
}

atlas_status atlas_gguf_parse_buffer(const void *data, size_t size,
                                     const char *name, atlas_gguf **out) {
  *out = NULL;
  atlas_gguf *g = new_gguf(name);
  if (g == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory", name);
  }
  g->buf = data;
  g->buf_size = g->file_size = size;
  bool more = false;
  uint64_t needed = 0;
  atlas_status status = parse(g, &more, &needed);
  if (status != ATLAS_OK) {
    atlas_gguf_close(g);
    return status;
  }
  *out = g;
  return ATLAS_OK;
}

atlas_status atlas_gguf_open(const char *path, atlas_gguf **out) {
  *out = NULL;
  atlas_gguf *g = new_gguf(path);
  if (g == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory", path);
  }
  atlas_status status =
      atlas_file_open_regular(path, "GGUF file", &g->fd, &g->identity);
  g->file_size = g->identity.size;
  // Read the first megabyte, and more while the header says it goes on.
  uint64_t want =
      g->file_size < ((uint64_t)1 << 20) ? g->file_size : (uint64_t)1 << 20;
  while (status == ATLAS_OK) {
    uint8_t *grown = realloc(g->owned, (size_t)(want ? want : 1));
    if (grown == NULL) {
      status = oom(g);
      break;
    }
    g->owned = grown;
    status = atlas_file_pread_exact(g->fd, path, g->owned + g->buf_size,
                                    (size_t)(want - g->buf_size), g->buf_size);
    if (status != ATLAS_OK) break;
    g->buf = g->owned;
    g->buf_size = want;
    bool more = false;
    uint64_t needed = 0;
    clear_parsed(g);
    status = parse(g, &more, &needed);
    if (status == ATLAS_OK || !more) break;
    atlas_status_free(status);
    status = ATLAS_OK;
    want = needed > 2 * want ? needed : 2 * want;
    if (want > g->file_size) want = g->file_size;
    if (want > ATLAS_GGUF_MAX_HEADER_BYTES) {
      status = atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: the GGUF header goes on past %llu bytes, the limit", path,
          (unsigned long long)ATLAS_GGUF_MAX_HEADER_BYTES);
    }
  }
  if (status != ATLAS_OK) {
    atlas_gguf_close(g);
    return status;
  }
  *out = g;
  return ATLAS_OK;
}

uint32_t atlas_gguf_version(const atlas_gguf *g) { return g->version; }
uint64_t atlas_gguf_alignment(const atlas_gguf *g) { return g->alignment; }
uint64_t atlas_gguf_data_offset(const atlas_gguf *g) { return g->data_offset; }
uint64_t atlas_gguf_file_bytes(const atlas_gguf *g) { return g->file_size; }
size_t atlas_gguf_kv_count(const atlas_gguf *g) { return g->kv_count; }
size_t atlas_gguf_tensor_count(const atlas_gguf *g) { return g->tensor_count; }

const atlas_gguf_kv *atlas_gguf_kv_at(const atlas_gguf *g, size_t i) {
  return i < g->kv_count ? &g->kvs[i] : NULL;
}

const atlas_gguf_tensor *atlas_gguf_tensor_at(const atlas_gguf *g, size_t i) {
  return i < g->tensor_count ? &g->tensors[i] : NULL;
}

const atlas_gguf_kv *atlas_gguf_find_kv(const atlas_gguf *g, const char *key) {
  for (size_t i = 0; i < g->kv_count; ++i) {
    if (g->kvs[i].key != NULL && strcmp(g->kvs[i].key, key) == 0) {
      return &g->kvs[i];
    }
  }
  return NULL;
}

const atlas_gguf_tensor *atlas_gguf_find_tensor(const atlas_gguf *g,
                                                const char *name) {
  for (size_t i = 0; i < g->tensor_count; ++i) {
    if (g->tensors[i].name != NULL && strcmp(g->tensors[i].name, name) == 0) {
      return &g->tensors[i];
    }
  }
  return NULL;
}

atlas_status atlas_gguf_read(const atlas_gguf *g, const atlas_gguf_tensor *t,
                             uint64_t offset, uint64_t bytes, void *dst) {
  if (offset > t->bytes || bytes > t->bytes - offset) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: read of %llu bytes at %llu past tensor "
                             "\"%s\" (%llu bytes)",
                             g->name, (unsigned long long)bytes,
                             (unsigned long long)offset, t->name,
                             (unsigned long long)t->bytes);
  }
  if (g->fd < 0) {
    memcpy(dst, g->buf + t->file_offset + offset, (size_t)bytes);
    return ATLAS_OK;
  }
  return atlas_file_pread_exact(g->fd, g->name, dst, (size_t)bytes,
                                t->file_offset + offset);
}
