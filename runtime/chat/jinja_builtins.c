#define _GNU_SOURCE  // memmem, strncasecmp, localtime_r (glibc extensions)
#include "atlas/runtime/chat/jinja_builtins.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_builtin_util.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_render.h"

static const char *const kFilters[] = {
    "abs",     "capitalize", "count", "d",      "default",    "first",
    "float",   "int",        "items", "join",   "last",       "length",
    "list",    "lower",      "map",   "reject", "rejectattr", "replace",
    "reverse", "round",      "safe",  "select", "selectattr", "string",
    "title",   "tojson",     "trim",  "unique", "upper",      "wordcount",
    "indent",
};
static const char *const kTests[] = {
    "boolean", "callable", "defined",   "divisibleby", "eq",     "equalto",
    "even",    "false",    "float",     "ge",          "gt",     "in",
    "integer", "iterable", "le",        "lower",       "lt",     "mapping",
    "ne",      "none",     "number",    "odd",         "sameas", "sequence",
    "string",  "true",     "undefined", "upper",       "==",     "!=",
    "<",       "<=",       ">",         ">=",
};
// What a builtin may walk of `v`: its items, or a step per 64 bytes.
uint64_t atlas_jinja_walk_cost(jv v) {
  if (v.kind != JV_DATA || v.json == NULL) return 1;
  if (json_is_array(v.json)) return 1 + json_array_size(v.json);
  if (json_is_object(v.json)) return 1 + json_object_size(v.json);
  if (json_is_string(v.json)) return 1 + json_string_length(v.json) / 64;
  return 1;
}

uint64_t atlas_jinja_args_cost(const jinja_args *a) {
  uint64_t c = 0;
  for (size_t i = 0; i < a->n_pos; ++i) c += atlas_jinja_walk_cost(a->pos[i]);
  for (size_t i = 0; i < a->n_kw; ++i) c += atlas_jinja_walk_cost(a->kw[i]);
  return c;
}

static const char *const kGlobals[] = {"namespace", "range", "raise_exception",
                                       "strftime_now", "dict"};
static const char *const kDictMethods[] = {
    "clear", "copy",    "fromkeys",   "get",    "items", "keys",
    "pop",   "popitem", "setdefault", "update", "values"};
// Python attributes Jinja's immutable sandbox hands out (its mutating
// methods of dicts and lists give undefined instead; Jinja2 3.1.6).
static const char *const kDictSafeMethods[] = {"copy",  "fromkeys", "get",
                                               "items", "keys",     "values"};
static const char *const kListSafeMethods[] = {"copy", "count", "index"};
static const char *const kStrMethods[] = {
    "capitalize",   "casefold",     "center",    "count",     "encode",
    "endswith",     "expandtabs",   "find",      "format",    "format_map",
    "index",        "isalnum",      "isalpha",   "isascii",   "isdecimal",
    "isdigit",      "isidentifier", "islower",   "isnumeric", "isprintable",
    "isspace",      "istitle",      "isupper",   "join",      "ljust",
    "lower",        "lstrip",       "maketrans", "partition", "removeprefix",
    "removesuffix", "replace",      "rfind",     "rindex",    "rjust",
    "rpartition",   "rsplit",       "rstrip",    "split",     "splitlines",
    "startswith",   "strip",        "swapcase",  "title",     "translate",
    "upper",        "zfill"};
static const char *const kIntMethods[] = {"as_integer_ratio", "bit_count",
                                          "bit_length",       "conjugate",
                                          "from_bytes",       "to_bytes"};
static const char *const kFloatMethods[] = {"as_integer_ratio", "conjugate",
                                            "fromhex", "hex", "is_integer"};
static const char *const kIntParts[] = {"denominator", "imag", "numerator",
                                        "real"};
static const char *const kFloatParts[] = {"imag", "real"};

static bool in_list(const char *name, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(name, list[i]) == 0) return true;
  }
  return false;
}
#define IN(name, list) in_list((name), (list), sizeof(list) / sizeof((list)[0]))

bool atlas_jinja_filter_known(const char *name) { return IN(name, kFilters); }
bool atlas_jinja_test_known(const char *name) { return IN(name, kTests); }
bool atlas_jinja_global_known(const char *name) { return IN(name, kGlobals); }
bool atlas_jinja_is_dict_method(const char *name) {
  return IN(name, kDictMethods);
}

const char *atlas_jinja_python_attribute(json_t *v, const char *name) {
  if (json_is_object(v)) return IN(name, kDictSafeMethods) ? "method" : NULL;
  if (json_is_array(v)) return IN(name, kListSafeMethods) ? "method" : NULL;
  if (json_is_string(v)) return IN(name, kStrMethods) ? "method" : NULL;
  if (json_is_integer(v) || json_is_boolean(v)) {
    return IN(name, kIntMethods) ? "method"
           : IN(name, kIntParts) ? "number's attribute"
                                 : NULL;
  }
  if (json_is_real(v)) {
    return IN(name, kFloatMethods) ? "method"
           : IN(name, kFloatParts) ? "number's attribute"
                                   : NULL;
  }
  return NULL;
}

atlas_status atlas_jinja_err(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s", msg);
}

static atlas_status oom(void) { return atlas_jinja_oom("rendering"); }

// ---- arguments ----

// Parameter `index` (by position) or `name` (by keyword); NULL when not given.
const jv *atlas_jinja_arg(const jinja_args *a, size_t index, const char *name) {
  if (index < a->n_pos) return &a->pos[index];
  for (size_t i = 0; i < a->n_kw; ++i) {
    if (name && strcmp(a->kw_names[i], name) == 0) return &a->kw[i];
  }
  return NULL;
}

// Refuses arguments beyond the parameter list (names: the parameter names).
atlas_status atlas_jinja_check_args(const char *what, const jinja_args *a,
                                    const char *const *names, size_t n) {
  if (a->n_pos > n)
    return atlas_jinja_err("%s takes at most %zu argument(s), got %zu", what, n,
                           a->n_pos);
  for (size_t k = 0; k < a->n_kw; ++k) {
    bool ok = false;
    for (size_t i = 0; i < n; ++i)
      ok = ok || strcmp(names[i], a->kw_names[k]) == 0;
    if (!ok)
      return atlas_jinja_err("%s got an unsupported keyword argument '%s'",
                             what, a->kw_names[k]);
  }
  return ATLAS_OK;
}

atlas_status atlas_jinja_want_str(const char *what, const jv *v, const char **s,
                                  size_t *n) {
  *s = "";
  *n = 0;
  if (!v || !atlas_jv_is_string(*v)) {
    return atlas_jinja_err("%s expects a string, got '%s'", what,
                           v ? atlas_jv_type_name(*v) : "nothing");
  }
  *s = json_string_value(v->json);
  *n = json_string_length(v->json);
  return ATLAS_OK;
}

atlas_status atlas_jinja_want_int(const char *what, const jv *v,
                                  long long *out) {
  *out = 0;
  if (!v || !atlas_jv_is_int(*v))
    return atlas_jinja_err("%s expects an integer, got '%s'", what,
                           v ? atlas_jv_type_name(*v) : "nothing");
  *out = json_is_boolean(v->json) ? json_is_true(v->json)
                                  : json_integer_value(v->json);
  return ATLAS_OK;
}

atlas_status atlas_jinja_str_of(jinja_ctx *ctx, jv v, jinja_buf *b) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_str(ctx, v, b));
  return atlas_jinja_buf_status(b, "rendering");
}

static atlas_status strftime_now(jinja_ctx *ctx, const jinja_args *a, jv *out) {
  CHECK_ARGS("strftime_now", a, "format");
  const char *fmt = "";
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(
      "strftime_now", atlas_jinja_arg(a, 0, "format"), &fmt, &n));
  struct tm now;
  if (ctx->now) {
    now = *ctx->now;
  } else {
    time_t t = time(NULL);
    if (!localtime_r(&t, &now))
      return atlas_jinja_err("strftime_now: the local time is unavailable");
  }
  char buf[512];
  if (fmt[0] == '\0') {
    *out = atlas_jv_string("", 0);
    return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
  }
  size_t len = strftime(buf, sizeof buf, fmt, &now);
  if (len == 0)
    return atlas_jinja_err(
        "strftime_now: format '%s' gives no text or more than %zu bytes", fmt,
        sizeof buf);
  *out = atlas_jv_string(buf, len);
  return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
}

atlas_status atlas_jinja_global_call(jinja_ctx *ctx, const char *name,
                                     const jinja_args *a, jv *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, atlas_jinja_args_cost(a)));
  if (!strcmp(name, "raise_exception")) {
    const char *msg = "";
    size_t n = 0;
    const jv *m = atlas_jinja_arg(a, 0, "message");
    if (m && atlas_jv_is_string(*m)) {
      msg = json_string_value(m->json);
      n = json_string_length(m->json);
    }
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "raise_exception: %.*s", (int)n, msg);
  }
  if (!strcmp(name, "strftime_now")) return strftime_now(ctx, a, out);
  if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
    json_t *obj = json_object();
    if (!obj) return oom();
    if (a->n_pos > 1 || (a->n_pos == 1 && !(a->pos[0].kind == JV_DATA &&
                                            json_is_object(a->pos[0].json)))) {
      json_decref(obj);
      return atlas_jinja_err("%s() takes keyword arguments or one dict", name);
    }
    if (a->n_pos == 1 && json_object_update(obj, a->pos[0].json) != 0) {
      json_decref(obj);
      return oom();
    }
    for (size_t i = 0; i < a->n_kw; ++i) {
      if (a->kw[i].kind != JV_DATA || a->kw[i].seq != JV_SEQ_LIST) {
        json_decref(obj);
        return atlas_jinja_err("%s(): storing a %s value is not supported",
                               name, atlas_jv_type_name(a->kw[i]));
      }
      if (json_object_set(obj, a->kw_names[i], a->kw[i].json) != 0) {
        json_decref(obj);
        return oom();
      }
    }
    jv v = {name[0] == 'n' ? JV_NAMESPACE : JV_DATA, obj, NULL, NULL,
            JV_SEQ_LIST};
    *out = v;
    return ATLAS_OK;
  }
  if (!strcmp(name, "range")) {
    if (a->n_kw) return atlas_jinja_err("range() takes no keyword arguments");
    if (a->n_pos < 1 || a->n_pos > 3)
      return atlas_jinja_err("range() takes 1 to 3 arguments");
    long long p[3] = {0, 0, 1};
    for (size_t i = 0; i < a->n_pos; ++i)
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int("range", &a->pos[i], &p[i]));
    long long start = a->n_pos == 1 ? 0 : p[0],
              stop = a->n_pos == 1 ? p[0] : p[1];
    long long step = a->n_pos == 3 ? p[2] : 1;
    if (step == 0) return atlas_jinja_err("range() arg 3 must not be zero");
    // The item count in 128 bits: start + k * step never overflows, however
    // near INT64_MAX or INT64_MIN the bounds are.
    atlas_jinja_i128 span = step > 0 ? (atlas_jinja_i128)stop - start
                                     : (atlas_jinja_i128)start - stop;
    atlas_jinja_i128 stride =
        step > 0 ? (atlas_jinja_i128)step : -(atlas_jinja_i128)step;
    atlas_jinja_i128 count = span <= 0 ? 0 : (span - 1) / stride + 1;
    // Jinja's sandbox caps ranges at 100000 items.
    if (count > 100000) {
      return atlas_jinja_err(
          "range too big: the sandbox allows at most 100000 items");
    }
    ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, (uint64_t)count));
    json_t *arr = json_array();
    if (!arr) return oom();
    for (long long k = 0; k < (long long)count; ++k) {
      long long x =
          (long long)((atlas_jinja_i128)start + (atlas_jinja_i128)k * step);
      if (json_array_append_new(arr, json_integer(x)) != 0) {
        json_decref(arr);
        return oom();
      }
    }
    *out = atlas_jv_data(arr);
    out->seq = JV_SEQ_RANGE;
    return ATLAS_OK;
  }
  return atlas_jinja_err("function '%s' is not supported", name);
}
