// Typed reads of a GGUF file's metadata (gguf.h).
#include <string.h>

#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_internal.h"

static atlas_status lookup(const atlas_gguf *g, const char *key,
                           const atlas_gguf_kv **out) {
  *out = atlas_gguf_find_kv(g, key);
  if (*out != NULL) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                           "%s: metadata key \"%s\" is missing", g->name, key);
}

static atlas_status wrong_type(const atlas_gguf *g, const atlas_gguf_kv *kv,
                               const char *want) {
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT, "%s: metadata key \"%s\" is %s%s, not %s",
      g->name, kv->key, atlas_gguf_value_type_name(kv->type),
      kv->type == ATLAS_GGUF_ARRAY ? " (an array)" : "", want);
}

// A number of `type` at byte `at` as a double; *is_int / *neg describe it.
static double number_at(const atlas_gguf *g, uint32_t type, uint64_t at,
                        bool *is_int, int64_t *as_int, uint64_t *as_uint) {
  const uint8_t *p = g->buf + at;
  uint64_t u = 0;
  int64_t i = 0;
  double d = 0;
  *is_int = true;
  switch (type) {
    case ATLAS_GGUF_U8:
      u = p[0];
      break;
    case ATLAS_GGUF_I8:  // two's complement, without a signed char
      i = p[0] < 128 ? (int64_t)p[0] : (int64_t)p[0] - 256;
      break;
    case ATLAS_GGUF_U16: {
      uint16_t v;
      memcpy(&v, p, 2);
      u = v;
      break;
    }
    case ATLAS_GGUF_I16: {
      int16_t v;
      memcpy(&v, p, 2);
      i = v;
      break;
    }
    case ATLAS_GGUF_U32: {
      uint32_t v;
      memcpy(&v, p, 4);
      u = v;
      break;
    }
    case ATLAS_GGUF_I32: {
      int32_t v;
      memcpy(&v, p, 4);
      i = v;
      break;
    }
    case ATLAS_GGUF_U64:
      memcpy(&u, p, 8);
      break;
    case ATLAS_GGUF_I64:
      memcpy(&i, p, 8);
      break;
    case ATLAS_GGUF_F32: {
      float v;
      memcpy(&v, p, 4);
      d = v;
      *is_int = false;
      break;
    }
    case ATLAS_GGUF_F64:
      memcpy(&d, p, 8);
      *is_int = false;
      break;
    default:
      *is_int = false;
      return 0;
  }
  bool signed_type = type == ATLAS_GGUF_I8 || type == ATLAS_GGUF_I16 ||
                     type == ATLAS_GGUF_I32 || type == ATLAS_GGUF_I64;
  if (*is_int) {
    if (signed_type) {
      *as_int = i;
      *as_uint = i < 0 ? UINT64_MAX : (uint64_t)i;
      d = (double)i;
    } else {
      *as_int = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
      *as_uint = u;
      d = (double)u;
    }
  }
  return d;
}

static bool is_number(uint32_t type) {
  return type <= ATLAS_GGUF_F32 || type == ATLAS_GGUF_U64 ||
         type == ATLAS_GGUF_I64 || type == ATLAS_GGUF_F64;
}

atlas_status atlas_gguf_get_u64(const atlas_gguf *g, const char *key,
                                uint64_t *out) {
  const atlas_gguf_kv *kv = NULL;
  ATLAS_RETURN_IF_ERROR(lookup(g, key, &kv));
  bool is_int = false;
  int64_t i = 0;
  uint64_t u = 0;
  if (is_number(kv->type))
    number_at(g, kv->type, kv->value_at, &is_int, &i, &u);
  if (!is_int) return wrong_type(g, kv, "an integer");
  if (i < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: metadata key \"%s\" is %lld, not a count",
                             g->name, key, (long long)i);
  }
  *out = u;
  return ATLAS_OK;
}

atlas_status atlas_gguf_get_f64(const atlas_gguf *g, const char *key,
                                double *out) {
  const atlas_gguf_kv *kv = NULL;
  ATLAS_RETURN_IF_ERROR(lookup(g, key, &kv));
  if (!is_number(kv->type) || kv->type == ATLAS_GGUF_BOOL) {
    return wrong_type(g, kv, "a number");
  }
  bool is_int = false;
  int64_t i = 0;
  uint64_t u = 0;
  *out = number_at(g, kv->type, kv->value_at, &is_int, &i, &u);
  return ATLAS_OK;
}

atlas_status atlas_gguf_get_bool(const atlas_gguf *g, const char *key,
                                 bool *out) {
  const atlas_gguf_kv *kv = NULL;
  ATLAS_RETURN_IF_ERROR(lookup(g, key, &kv));
  if (kv->type != ATLAS_GGUF_BOOL) return wrong_type(g, kv, "a bool");
  *out = g->buf[kv->value_at] != 0;
  return ATLAS_OK;
}

static void string_at(const atlas_gguf *g, uint64_t at, const char **out,
                      size_t *out_len) {
  uint64_t len = 0;
  memcpy(&len, g->buf + at, 8);
  *out = (const char *)g->buf + at + 8;
  *out_len = (size_t)len;
}

atlas_status atlas_gguf_get_string(const atlas_gguf *g, const char *key,
                                   const char **out, size_t *out_len) {
  const atlas_gguf_kv *kv = NULL;
  ATLAS_RETURN_IF_ERROR(lookup(g, key, &kv));
  if (kv->type != ATLAS_GGUF_STRING) return wrong_type(g, kv, "a string");
  string_at(g, kv->value_at, out, out_len);
  return ATLAS_OK;
}

static atlas_status check_element(const atlas_gguf *g, const atlas_gguf_kv *kv,
                                  uint64_t i, bool string) {
  if (kv->type != ATLAS_GGUF_ARRAY ||
      (string
           ? kv->elem_type != ATLAS_GGUF_STRING
           : !is_number(kv->elem_type) || kv->elem_type == ATLAS_GGUF_BOOL)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT, "%s: metadata key \"%s\" is not %s",
        g->name, kv->key,
        string ? "an array of strings" : "an array of numbers");
  }
  if (i >= kv->count) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: metadata key \"%s\" has %llu elements, not "
                             "%llu",
                             g->name, kv->key, (unsigned long long)kv->count,
                             (unsigned long long)i + 1);
  }
  return ATLAS_OK;
}

atlas_status atlas_gguf_array_string(const atlas_gguf *g,
                                     const atlas_gguf_kv *kv, uint64_t i,
                                     const char **out, size_t *out_len) {
  ATLAS_RETURN_IF_ERROR(check_element(g, kv, i, true));
  string_at(g, g->str_offsets[kv - g->kvs][i], out, out_len);
  return ATLAS_OK;
}

atlas_status atlas_gguf_array_number(const atlas_gguf *g,
                                     const atlas_gguf_kv *kv, uint64_t i,
                                     double *out) {
  ATLAS_RETURN_IF_ERROR(check_element(g, kv, i, false));
  bool is_int = false;
  int64_t s = 0;
  uint64_t u = 0;
  *out = number_at(g, kv->elem_type,
                   kv->value_at + i * atlas_gguf_value_size(kv->elem_type),
                   &is_int, &s, &u);
  return ATLAS_OK;
}
