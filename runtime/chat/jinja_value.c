#include "atlas/runtime/chat/jinja_value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_error.h"

jv atlas_jv_undefined(const char *name) {
  jv v = {JV_UNDEFINED, NULL, NULL, name, JV_SEQ_LIST};
  return v;
}

jv atlas_jv_data(json_t *json) {
  jv v = {JV_DATA, json, NULL, NULL, JV_SEQ_LIST};
  return v;
}

void atlas_jinja_tuple_key(const json_t *arr, char out[32]) {
  snprintf(out, 32, "%p", (const void *)arr);
}

jv atlas_jv_copy(jv v) {
  if (v.json) json_incref(v.json);
  return v;
}

void atlas_jv_free(jv *v) {
  if (v->json) json_decref(v->json);
  v->json = NULL;
  v->kind = JV_UNDEFINED;
  v->name = "";
}

bool atlas_jv_ok_alloc(jv v) {
  return !((v.kind == JV_DATA || v.kind == JV_NAMESPACE) && v.json == NULL);
}

jv atlas_jv_string(const char *s, size_t n) {
  return atlas_jv_data(json_stringn_nocheck(s ? s : "", n));
}

atlas_status atlas_jv_string_of_buf(jinja_buf *b, jv *out) {
  atlas_status st = atlas_jinja_buf_status(b, "rendering");
  if (st == ATLAS_OK) {
    *out = atlas_jv_string(b->data, b->len);
    if (!atlas_jv_ok_alloc(*out)) st = atlas_jinja_oom("rendering");
  }
  atlas_jinja_buf_free(b);
  return st;
}

bool atlas_jv_is_string(jv v) {
  return v.kind == JV_DATA && json_is_string(v.json);
}

bool atlas_jv_is_number(jv v) {
  return v.kind == JV_DATA &&
         (json_is_number(v.json) || json_is_boolean(v.json));
}

bool atlas_jv_is_int(jv v) {
  return v.kind == JV_DATA &&
         (json_is_integer(v.json) || json_is_boolean(v.json));
}

const char *atlas_jv_type_article(const char *type_name) {
  return type_name[0] != '\0' && strchr("aeiouAEIOU", type_name[0]) != NULL
             ? "an"
             : "a";
}

const char *atlas_jv_type_name(jv v) {
  switch (v.kind) {
    case JV_UNDEFINED:
      return "Undefined";
    case JV_NAMESPACE:
      return "Namespace";
    case JV_LOOP:
      return "LoopContext";
    case JV_MACRO:
      return "Macro";
    case JV_FUNC:
      return "function";
    case JV_DATA:
      break;
  }
  switch (v.seq) {
    case JV_SEQ_GENERATOR:
      return "generator";
    case JV_SEQ_VIEW:
      return "dict_view";
    case JV_SEQ_RANGE:
      return "range";
    case JV_SEQ_LIST:
      break;
  }
  switch (json_typeof(v.json)) {
    case JSON_OBJECT:
      return "dict";
    case JSON_ARRAY:
      return "list";
    case JSON_STRING:
      return "str";
    case JSON_INTEGER:
      return "int";
    case JSON_REAL:
      return "float";
    case JSON_TRUE:
    case JSON_FALSE:
      return "bool";
    case JSON_NULL:
      return "NoneType";
  }
  return "?";
}

bool atlas_jv_truthy(jv v) {
  switch (v.kind) {
    case JV_UNDEFINED:
      return false;
    case JV_DATA:
      break;
    default:
      return true;
  }
  if (v.seq == JV_SEQ_GENERATOR)
    return true;  // a generator object is always true
  switch (json_typeof(v.json)) {
    case JSON_OBJECT:
      return json_object_size(v.json) > 0;
    case JSON_ARRAY:
      return json_array_size(v.json) > 0;
    case JSON_STRING:
      return json_string_length(v.json) > 0;
    case JSON_INTEGER:
      return json_integer_value(v.json) != 0;
    case JSON_REAL:
      return json_real_value(v.json) != 0.0;
    case JSON_TRUE:
      return true;
    case JSON_FALSE:
    case JSON_NULL:
      return false;
  }
  return false;
}

static double num(json_t *j) {
  if (json_is_boolean(j)) return json_is_true(j) ? 1.0 : 0.0;
  return json_number_value(j);
}

static bool json_num_like(json_t *j) {
  return json_is_number(j) || json_is_boolean(j);
}

static bool json_py_equal(json_t *a, json_t *b) {
  if (json_num_like(a) && json_num_like(b)) {
    if ((json_is_integer(a) || json_is_boolean(a)) &&
        (json_is_integer(b) || json_is_boolean(b))) {
      long long x =
          json_is_boolean(a) ? json_is_true(a) : json_integer_value(a);
      long long y =
          json_is_boolean(b) ? json_is_true(b) : json_integer_value(b);
      return x == y;
    }
    return num(a) == num(b);
  }
  if (json_typeof(a) != json_typeof(b)) return false;
  switch (json_typeof(a)) {
    case JSON_NULL:
      return true;
    case JSON_STRING:
      return json_string_length(a) == json_string_length(b) &&
             memcmp(json_string_value(a), json_string_value(b),
                    json_string_length(a)) == 0;
    case JSON_ARRAY: {
      if (json_array_size(a) != json_array_size(b)) return false;
      for (size_t i = 0; i < json_array_size(a); ++i) {
        if (!json_py_equal(json_array_get(a, i), json_array_get(b, i)))
          return false;
      }
      return true;
    }
    case JSON_OBJECT: {
      if (json_object_size(a) != json_object_size(b)) return false;
      const char *k;
      json_t *va;
      json_object_foreach(a, k, va) {
        json_t *vb = json_object_get(b, k);
        if (!vb || !json_py_equal(va, vb)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool atlas_jv_equal(jv a, jv b) {
  if (a.kind == JV_UNDEFINED || b.kind == JV_UNDEFINED) return a.kind == b.kind;
  if (a.kind != b.kind) return false;
  if (a.seq != b.seq) return false;  // range(2) != [0, 1] in Python
  if (a.seq == JV_SEQ_GENERATOR) return a.json == b.json;
  if (a.kind == JV_DATA) return json_py_equal(a.json, b.json);
  if (a.kind == JV_NAMESPACE) return a.json == b.json;
  return a.ptr == b.ptr && a.name == b.name;
}

static int cmp_json(json_t *a, json_t *b, bool *ok) {
  if (json_num_like(a) && json_num_like(b)) {
    if ((json_is_integer(a) || json_is_boolean(a)) &&
        (json_is_integer(b) || json_is_boolean(b))) {
      long long x =
          json_is_boolean(a) ? json_is_true(a) : json_integer_value(a);
      long long y =
          json_is_boolean(b) ? json_is_true(b) : json_integer_value(b);
      return (x > y) - (x < y);
    }
    double x = num(a), y = num(b);
    return (x > y) - (x < y);
  }
  if (json_is_string(a) && json_is_string(b)) {
    // UTF-8 byte order is code point order.
    size_t la = json_string_length(a), lb = json_string_length(b);
    int c =
        memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
    if (c != 0) return c < 0 ? -1 : 1;
    return (la > lb) - (la < lb);
  }
  if (json_is_array(a) && json_is_array(b)) {
    size_t la = json_array_size(a), lb = json_array_size(b);
    for (size_t i = 0; i < la && i < lb; ++i) {
      json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
      if (json_py_equal(x, y)) continue;
      return cmp_json(x, y, ok);
    }
    return (la > lb) - (la < lb);
  }
  *ok = false;
  return 0;
}

atlas_status atlas_jv_compare(jv a, jv b, int *out) {
  bool ok = a.kind == JV_DATA && b.kind == JV_DATA;
  *out = ok ? cmp_json(a.json, b.json, &ok) : 0;
  if (!ok) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "ordering comparison between '%s' and '%s' is not supported",
        atlas_jv_type_name(a), atlas_jv_type_name(b));
  }
  return ATLAS_OK;
}

void atlas_jinja_float_repr(double d, jinja_buf *out) {
  if (isnan(d)) {
    atlas_jinja_buf_puts(out, "nan");
    return;
  }
  if (isinf(d)) {
    atlas_jinja_buf_puts(out, d < 0 ? "-inf" : "inf");
    return;
  }
  if (d == 0) {
    atlas_jinja_buf_puts(out, signbit(d) ? "-0.0" : "0.0");
    return;
  }
  // Shortest digits that round-trip, then Python's layout: fixed notation for
  // exponents in [-4, 16), scientific otherwise.
  char e[40];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    snprintf(e, sizeof e, "%.*e", prec - 1, d);
    if (strtod(e, NULL) == d) break;
  }
  char digits[24] = {0};
  size_t nd = 0;
  const char *p = e;
  bool neg = false;
  if (*p == '-') {
    neg = true;
    ++p;
  }
  for (; *p && *p != 'e' && nd < sizeof digits; ++p) {
    if (*p != '.') digits[nd++] = *p;
  }
  const int exp10 = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
  while (nd > 1 && digits[nd - 1] == '0') --nd;
  if (neg) atlas_jinja_buf_putc(out, '-');
  if (exp10 >= -4 && exp10 < 16) {
    if (exp10 < 0) {
      atlas_jinja_buf_puts(out, "0.");
      for (int i = 0; i < -exp10 - 1; ++i) atlas_jinja_buf_putc(out, '0');
      atlas_jinja_buf_append(out, digits, nd);
    } else {
      for (int i = 0; i <= exp10; ++i) {
        char c = '0';
        if ((size_t)i < nd) c = digits[i];
        atlas_jinja_buf_putc(out, c);
      }
      atlas_jinja_buf_putc(out, '.');
      if ((size_t)exp10 + 1 < nd) {
        atlas_jinja_buf_append(out, digits + exp10 + 1, nd - (size_t)exp10 - 1);
      } else {
        atlas_jinja_buf_putc(out, '0');
      }
    }
  } else {
    atlas_jinja_buf_putc(out, digits[0]);
    if (nd > 1) {
      atlas_jinja_buf_putc(out, '.');
      atlas_jinja_buf_append(out, digits + 1, nd - 1);
    }
    atlas_jinja_buf_printf(out, "e%c%02d", exp10 < 0 ? '-' : '+',
                           exp10 < 0 ? -exp10 : exp10);
  }
}

static bool is_tuple(const json_t *tuples, const json_t *arr) {
  if (!tuples) return false;
  char key[32];
  atlas_jinja_tuple_key(arr, key);
  return json_object_get(tuples, key) != NULL;
}

static void str_json(json_t *j, const json_t *tuples, jinja_buf *out,
                     bool repr) {
  switch (json_typeof(j)) {
    case JSON_NULL:
      atlas_jinja_buf_puts(out, "None");
      break;
    case JSON_TRUE:
      atlas_jinja_buf_puts(out, "True");
      break;
    case JSON_FALSE:
      atlas_jinja_buf_puts(out, "False");
      break;
    case JSON_INTEGER:
      atlas_jinja_buf_printf(out, "%lld", (long long)json_integer_value(j));
      break;
    case JSON_REAL:
      atlas_jinja_float_repr(json_real_value(j), out);
      break;
    case JSON_STRING:
      if (repr) {
        atlas_jinja_repr_string(json_string_value(j), json_string_length(j),
                                out);
      } else {
        atlas_jinja_buf_append(out, json_string_value(j),
                               json_string_length(j));
      }
      break;
    case JSON_ARRAY: {
      const bool tuple = is_tuple(tuples, j);
      atlas_jinja_buf_putc(out, tuple ? '(' : '[');
      for (size_t i = 0; i < json_array_size(j); ++i) {
        if (i) atlas_jinja_buf_puts(out, ", ");
        str_json(json_array_get(j, i), tuples, out, true);
      }
      if (tuple && json_array_size(j) == 1) atlas_jinja_buf_putc(out, ',');
      atlas_jinja_buf_putc(out, tuple ? ')' : ']');
      break;
    }
    case JSON_OBJECT: {
      atlas_jinja_buf_putc(out, '{');
      const char *k;
      json_t *v;
      bool first = true;
      json_object_foreach(j, k, v) {
        if (!first) atlas_jinja_buf_puts(out, ", ");
        first = false;
        atlas_jinja_repr_string(k, strlen(k), out);
        atlas_jinja_buf_puts(out, ": ");
        str_json(v, tuples, out, true);
      }
      atlas_jinja_buf_putc(out, '}');
      break;
    }
  }
}

static atlas_status unprintable_kind(jv v) {
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "printing a %s object is not supported (Python would print %s)",
      atlas_jv_type_name(v),
      v.seq == JV_SEQ_RANGE || v.seq == JV_SEQ_VIEW ? "its own form"
                                                    : "its address");
}

atlas_status atlas_jv_str(jv v, const json_t *tuples, jinja_buf *out) {
  if (v.kind == JV_UNDEFINED) return ATLAS_OK;
  if (v.kind != JV_DATA || v.seq != JV_SEQ_LIST) return unprintable_kind(v);
  str_json(v.json, tuples, out, false);
  return ATLAS_OK;
}

atlas_status atlas_jv_repr(jv v, const json_t *tuples, jinja_buf *out) {
  if (v.kind == JV_UNDEFINED) return ATLAS_OK;
  if (v.kind != JV_DATA || v.seq != JV_SEQ_LIST) return unprintable_kind(v);
  str_json(v.json, tuples, out, true);
  return ATLAS_OK;
}

typedef struct dump_opts {
  bool ensure_ascii;
  int indent;
  const char *indent_str;
  const char *item_sep;
  const char *key_sep;
  bool sort_keys;
} dump_opts;

// Python json.dumps's two-character escapes, or NULL.
static const char *json_short_escape(uint32_t cp) {
  // Each character of kFrom is written as the two at its index * 2 in kTo.
  static const char kFrom[] = "\"\\\n\r\t\b\f";
  static const char kTo[] = "\\\"\\\\\\n\\r\\t\\b\\f";
  const char *hit = cp != 0 && cp < 0x80 ? strchr(kFrom, (int)cp) : NULL;
  return hit == NULL ? NULL : kTo + (hit - kFrom) * 2;
}

static void json_string_out(const char *s, size_t n, bool ensure_ascii,
                            jinja_buf *out) {
  atlas_jinja_buf_putc(out, '"');
  for (size_t i = 0; i < n;) {
    uint32_t cp = atlas_jinja_utf8_next(s, n, &i);
    const char *esc = json_short_escape(cp);
    if (esc != NULL) {
      atlas_jinja_buf_append(out, esc, 2);
      continue;
    }
    if (cp < 0x20 || (ensure_ascii && cp > 0x7e)) {
      if (cp >= 0x10000) {
        uint32_t c = cp - 0x10000;
        atlas_jinja_buf_printf(out, "\\u%04x\\u%04x", 0xd800 + (c >> 10),
                               0xdc00 + (c & 0x3ff));
      } else {
        atlas_jinja_buf_printf(out, "\\u%04x", cp);
      }
    } else {
      atlas_jinja_utf8_put(out, cp);
    }
  }
  atlas_jinja_buf_putc(out, '"');
}

static void newline_indent(const dump_opts *o, int level, jinja_buf *out) {
  atlas_jinja_buf_putc(out, '\n');
  for (int i = 0; i < level; ++i) atlas_jinja_buf_puts(out, o->indent_str);
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static atlas_status dump(json_t *j, const dump_opts *o, int level,
                         jinja_buf *out) {
  switch (json_typeof(j)) {
    case JSON_NULL:
      atlas_jinja_buf_puts(out, "null");
      return ATLAS_OK;
    case JSON_TRUE:
      atlas_jinja_buf_puts(out, "true");
      return ATLAS_OK;
    case JSON_FALSE:
      atlas_jinja_buf_puts(out, "false");
      return ATLAS_OK;
    case JSON_INTEGER:
      atlas_jinja_buf_printf(out, "%lld", (long long)json_integer_value(j));
      return ATLAS_OK;
    case JSON_REAL: {
      double d = json_real_value(j);
      if (isnan(d)) {
        atlas_jinja_buf_puts(out, "NaN");
      } else if (isinf(d)) {
        atlas_jinja_buf_puts(out, d < 0 ? "-Infinity" : "Infinity");
      } else {
        atlas_jinja_float_repr(d, out);
      }
      return ATLAS_OK;
    }
    case JSON_STRING:
      json_string_out(json_string_value(j), json_string_length(j),
                      o->ensure_ascii, out);
      return ATLAS_OK;
    case JSON_ARRAY: {
      if (json_array_size(j) == 0) {
        atlas_jinja_buf_puts(out, "[]");
        return ATLAS_OK;
      }
      atlas_jinja_buf_putc(out, '[');
      for (size_t i = 0; i < json_array_size(j); ++i) {
        if (i) atlas_jinja_buf_puts(out, o->item_sep);
        if (o->indent >= 0) newline_indent(o, level + 1, out);
        ATLAS_RETURN_IF_ERROR(dump(json_array_get(j, i), o, level + 1, out));
      }
      if (o->indent >= 0) newline_indent(o, level, out);
      atlas_jinja_buf_putc(out, ']');
      return ATLAS_OK;
    }
    case JSON_OBJECT: {
      size_t n = json_object_size(j);
      if (n == 0) {
        atlas_jinja_buf_puts(out, "{}");
        return ATLAS_OK;
      }
      const char **keys = calloc(n, sizeof(char *));
      if (!keys)
        return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "tojson: out of memory");
      size_t k = 0;
      const char *key;
      json_t *v;
      json_object_foreach(j, key, v) {
        if (k < n) keys[k++] = key;
      }
      n = k;
      if (o->sort_keys) qsort(keys, n, sizeof(char *), key_cmp);
      atlas_jinja_buf_putc(out, '{');
      atlas_status st = ATLAS_OK;
      for (size_t i = 0; i < n && st == ATLAS_OK; ++i) {
        if (i) atlas_jinja_buf_puts(out, o->item_sep);
        if (o->indent >= 0) newline_indent(o, level + 1, out);
        json_string_out(keys[i], strlen(keys[i]), o->ensure_ascii, out);
        atlas_jinja_buf_puts(out, o->key_sep);
        st = dump(json_object_get(j, keys[i]), o, level + 1, out);
      }
      free(keys);
      ATLAS_RETURN_IF_ERROR(st);
      if (o->indent >= 0) newline_indent(o, level, out);
      atlas_jinja_buf_putc(out, '}');
      return ATLAS_OK;
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_jv_tojson(jv v, bool ensure_ascii, int indent,
                             const char *indent_str, const char *item_sep,
                             const char *key_sep, bool sort_keys,
                             jinja_buf *out) {
  if (v.kind != JV_DATA || v.seq != JV_SEQ_LIST) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "tojson: Object of type %s is not JSON serializable",
        atlas_jv_type_name(v));
  }
  char spaces[64];
  if (indent_str == NULL) {
    int w = indent < 0 ? 0 : indent > 63 ? 63 : indent;
    memset(spaces, ' ', (size_t)w);
    spaces[w] = '\0';
    indent_str = spaces;
  }
  dump_opts o = {ensure_ascii,
                 indent,
                 indent_str,
                 item_sep ? item_sep : (indent >= 0 ? "," : ", "),
                 key_sep ? key_sep : ": ",
                 sort_keys};
  return dump(v.json, &o, 0, out);
}
