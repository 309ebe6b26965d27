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
static uint64_t walk_cost(jv v) {
  if (v.kind != JV_DATA || v.json == NULL) return 1;
  if (json_is_array(v.json)) return 1 + json_array_size(v.json);
  if (json_is_object(v.json)) return 1 + json_object_size(v.json);
  if (json_is_string(v.json)) return 1 + json_string_length(v.json) / 64;
  return 1;
}

static uint64_t args_cost(const jinja_args *a) {
  uint64_t c = 0;
  for (size_t i = 0; i < a->n_pos; ++i) c += walk_cost(a->pos[i]);
  for (size_t i = 0; i < a->n_kw; ++i) c += walk_cost(a->kw[i]);
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

static atlas_status err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static atlas_status err(const char *fmt, ...) {
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
static const jv *arg(const jinja_args *a, size_t index, const char *name) {
  if (index < a->n_pos) return &a->pos[index];
  for (size_t i = 0; i < a->n_kw; ++i) {
    if (name && strcmp(a->kw_names[i], name) == 0) return &a->kw[i];
  }
  return NULL;
}

// Refuses arguments beyond the parameter list (names: the parameter names).
static atlas_status check_args(const char *what, const jinja_args *a,
                               const char *const *names, size_t n) {
  if (a->n_pos > n)
    return err("%s takes at most %zu argument(s), got %zu", what, n, a->n_pos);
  for (size_t k = 0; k < a->n_kw; ++k) {
    bool ok = false;
    for (size_t i = 0; i < n; ++i)
      ok = ok || strcmp(names[i], a->kw_names[k]) == 0;
    if (!ok)
      return err("%s got an unsupported keyword argument '%s'", what,
                 a->kw_names[k]);
  }
  return ATLAS_OK;
}
#define CHECK_ARGS(what, a, ...)                                              \
  do {                                                                        \
    static const char *const names_[] = {__VA_ARGS__};                        \
    ATLAS_RETURN_IF_ERROR(                                                    \
        check_args((what), (a), names_, sizeof(names_) / sizeof(names_[0]))); \
  } while (0)
#define NO_ARGS(what, a)                                                      \
  do {                                                                        \
    if ((a)->n_pos || (a)->n_kw) return err("%s takes no arguments", (what)); \
  } while (0)

static atlas_status want_str(const char *what, const jv *v, const char **s,
                             size_t *n) {
  *s = "";
  *n = 0;
  if (!v || !atlas_jv_is_string(*v)) {
    return err("%s expects a string, got '%s'", what,
               v ? atlas_jv_type_name(*v) : "nothing");
  }
  *s = json_string_value(v->json);
  *n = json_string_length(v->json);
  return ATLAS_OK;
}

static atlas_status want_int(const char *what, const jv *v, long long *out) {
  *out = 0;
  if (!v || !atlas_jv_is_int(*v))
    return err("%s expects an integer, got '%s'", what,
               v ? atlas_jv_type_name(*v) : "nothing");
  *out = json_is_boolean(v->json) ? json_is_true(v->json)
                                  : json_integer_value(v->json);
  return ATLAS_OK;
}

static atlas_status str_of(jinja_ctx *ctx, jv v, jinja_buf *b) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_str(ctx, v, b));
  return atlas_jinja_buf_status(b, "rendering");
}

// ---- strings ----

static bool is_ascii(const char *s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if ((unsigned char)s[i] >= 0x80) return false;
  }
  return true;
}

// Whether strip() removes code point cp: one of `chars` (its code points),
// or Python's whitespace when chars is NULL.
static bool strips(uint32_t cp, const char *chars, size_t n_chars) {
  if (!chars) return atlas_jinja_is_py_space(cp);
  for (size_t k = 0; k < n_chars;) {
    if (atlas_jinja_utf8_next(chars, n_chars, &k) == cp) return true;
  }
  return false;
}

// Python's str.strip/lstrip/rstrip; chars NULL strips whitespace.
static atlas_status py_strip(const char *s, size_t n, const char *chars,
                             size_t n_chars, bool left, bool right, jv *out) {
  size_t b = 0, e = n;
  // Strip by code points: walk forward for the left edge, backward for the
  // right.
  if (left) {
    while (b < e) {
      size_t i = b;
      uint32_t cp = atlas_jinja_utf8_next(s, n, &i);
      if (!strips(cp, chars, n_chars)) break;
      b = i;
    }
  }
  if (right) {
    while (e > b) {
      size_t start = e - 1;
      while (start > b && ((unsigned char)s[start] & 0xc0) == 0x80) --start;
      size_t i = start;
      uint32_t cp = atlas_jinja_utf8_next(s, n, &i);
      if (i != e) {  // not a clean code point: treat the byte alone
        start = e - 1;
        cp = (unsigned char)s[start];
      }
      if (!strips(cp, chars, n_chars)) break;
      e = start;
    }
  }
  *out = atlas_jv_string(s + b, e - b);
  return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
}

static atlas_status strip_method(const char *what, jv self, const jinja_args *a,
                                 bool l, bool r, jv *out) {
  CHECK_ARGS(what, a, "chars");
  const jv *c = arg(a, 0, "chars");
  const char *chars = NULL;
  size_t nc = 0;
  if (c && !(c->kind == JV_DATA && json_is_null(c->json)))
    ATLAS_RETURN_IF_ERROR(want_str(what, c, &chars, &nc));
  return py_strip(json_string_value(self.json), json_string_length(self.json),
                  chars, nc, l, r, out);
}

typedef enum {
  CASE_UPPER,
  CASE_LOWER,
  CASE_CAPITALIZE,
  CASE_TITLE_PY,
  CASE_TITLE_JINJA
} case_kind;

static atlas_status change_case(const char *what, const char *s, size_t n,
                                case_kind k, jv *out) {
  if (!is_ascii(s, n)) {
    return err(
        "%s of non-ASCII text is not supported (Python's Unicode case rules "
        "are not implemented)",
        what);
  }
  char *t = malloc(n + 1);
  if (!t) return oom();
  bool prev_cased = false;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = (unsigned char)s[i];
    switch (k) {
      case CASE_UPPER:
        t[i] = (char)toupper(c);
        break;
      case CASE_LOWER:
        t[i] = (char)tolower(c);
        break;
      case CASE_CAPITALIZE:
        t[i] = (char)(i == 0 ? toupper(c) : tolower(c));
        break;
      case CASE_TITLE_PY:
        t[i] = (char)(prev_cased ? tolower(c) : toupper(c));
        prev_cased = isalpha(c) != 0;
        break;
      case CASE_TITLE_JINJA: {
        // Jinja's title filter: words start after runs of [-\s({[<].
        bool boundary = i == 0 || strchr("-({[< \t\n\r\f\v", s[i - 1]) != NULL;
        t[i] = (char)(boundary ? toupper(c) : tolower(c));
        break;
      }
    }
  }
  *out = atlas_jv_string(t, n);
  free(t);
  return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
}

static atlas_status py_replace(const char *s, size_t n, const char *old,
                               size_t no, const char *nw, size_t nn,
                               long long count, jv *out) {
  jinja_buf b = {0};
  size_t i = 0;
  long long done = 0;
  if (no == 0) {
    // Python inserts `new` between every code point (and at both ends).
    while (count < 0 || done < count) {
      atlas_jinja_buf_append(&b, nw, nn);
      ++done;
      if (i >= n) break;
      size_t j = i;
      atlas_jinja_utf8_next(s, n, &j);
      atlas_jinja_buf_append(&b, s + i, j - i);
      i = j;
    }
    atlas_jinja_buf_append(&b, s + i, n - i);
    return atlas_jv_string_of_buf(&b, out);
  }
  while (i < n && (count < 0 || done < count)) {
    const char *hit = memmem(s + i, n - i, old, no);
    if (!hit) break;
    atlas_jinja_buf_append(&b, s + i, (size_t)(hit - (s + i)));
    atlas_jinja_buf_append(&b, nw, nn);
    i = (size_t)(hit - s) + no;
    ++done;
  }
  atlas_jinja_buf_append(&b, s + i, n - i);
  return atlas_jv_string_of_buf(&b, out);
}

static atlas_status py_split(const char *s, size_t n, const char *sep,
                             size_t ns, long long maxsplit, jv *out) {
  json_t *arr = json_array();
  if (!arr) return oom();
  size_t i = 0;
  long long splits = 0;
  bool ok = true;
  if (!sep) {
    // Runs of whitespace separate; leading and trailing whitespace is dropped.
    for (;;) {
      while (i < n) {
        size_t j = i;
        if (!atlas_jinja_is_py_space(atlas_jinja_utf8_next(s, n, &j))) break;
        i = j;
      }
      if (i >= n) break;
      size_t start = i;
      if (maxsplit >= 0 && splits >= maxsplit) {
        // The rest, with trailing whitespace dropped.
        size_t e = n;
        while (e > start && atlas_jinja_is_py_space((unsigned char)s[e - 1]))
          --e;
        ok = ok && json_array_append_new(
                       arr, json_stringn_nocheck(s + start, e - start)) == 0;
        break;
      }
      while (i < n) {
        size_t j = i;
        if (atlas_jinja_is_py_space(atlas_jinja_utf8_next(s, n, &j))) break;
        i = j;
      }
      ok = ok && json_array_append_new(
                     arr, json_stringn_nocheck(s + start, i - start)) == 0;
      ++splits;
    }
  } else {
    for (;;) {
      const char *hit = (maxsplit < 0 || splits < maxsplit)
                            ? memmem(s + i, n - i, sep, ns)
                            : NULL;
      if (!hit) {
        ok = ok && json_array_append_new(
                       arr, json_stringn_nocheck(s + i, n - i)) == 0;
        break;
      }
      ok = ok &&
           json_array_append_new(
               arr, json_stringn_nocheck(s + i, (size_t)(hit - (s + i)))) == 0;
      i = (size_t)(hit - s) + ns;
      ++splits;
    }
  }
  if (!ok) {
    json_decref(arr);
    return oom();
  }
  *out = atlas_jv_data(arr);
  return ATLAS_OK;
}

// startswith/endswith: a string or a tuple (list) of strings.
static atlas_status affix(const char *what, jv self, const jinja_args *a,
                          bool end, jv *out) {
  CHECK_ARGS(what, a, "prefix");
  const jv *p = arg(a, 0, "prefix");
  if (!p) return err("%s needs an argument", what);
  const char *s = json_string_value(self.json);
  size_t n = json_string_length(self.json);
  json_t *cands = p->kind == JV_DATA && json_is_array(p->json) ? p->json : NULL;
  size_t count = cands ? json_array_size(cands) : 1;
  bool hit = false;
  for (size_t i = 0; i < count && !hit; ++i) {
    jv c = cands ? atlas_jv_data(json_array_get(cands, i)) : *p;
    const char *x = "";
    size_t nx = 0;
    ATLAS_RETURN_IF_ERROR(want_str(what, &c, &x, &nx));
    hit = nx <= n && memcmp(end ? s + n - nx : s, x, nx) == 0;
  }
  *out = atlas_jv_data(json_boolean(hit));
  return ATLAS_OK;
}

static atlas_status str_method(jinja_ctx *ctx, jv self, const char *name,
                               const jinja_args *a, jv *out, bool *found) {
  const char *s = json_string_value(self.json);
  size_t n = json_string_length(self.json);
  *found = true;
  if (!strcmp(name, "strip"))
    return strip_method("str.strip()", self, a, true, true, out);
  if (!strcmp(name, "lstrip"))
    return strip_method("str.lstrip()", self, a, true, false, out);
  if (!strcmp(name, "rstrip"))
    return strip_method("str.rstrip()", self, a, false, true, out);
  if (!strcmp(name, "upper")) {
    NO_ARGS("str.upper()", a);
    return change_case("str.upper()", s, n, CASE_UPPER, out);
  }
  if (!strcmp(name, "lower")) {
    NO_ARGS("str.lower()", a);
    return change_case("str.lower()", s, n, CASE_LOWER, out);
  }
  if (!strcmp(name, "title")) {
    NO_ARGS("str.title()", a);
    return change_case("str.title()", s, n, CASE_TITLE_PY, out);
  }
  if (!strcmp(name, "capitalize")) {
    NO_ARGS("str.capitalize()", a);
    return change_case("str.capitalize()", s, n, CASE_CAPITALIZE, out);
  }
  if (!strcmp(name, "startswith"))
    return affix("str.startswith()", self, a, false, out);
  if (!strcmp(name, "endswith"))
    return affix("str.endswith()", self, a, true, out);
  if (!strcmp(name, "split")) {
    CHECK_ARGS("str.split()", a, "sep", "maxsplit");
    const jv *sep = arg(a, 0, "sep"), *mx = arg(a, 1, "maxsplit");
    const char *x = NULL;
    size_t nx = 0;
    long long maxsplit = -1;
    if (sep && !(sep->kind == JV_DATA && json_is_null(sep->json))) {
      ATLAS_RETURN_IF_ERROR(want_str("str.split()", sep, &x, &nx));
      if (nx == 0) return err("str.split(): empty separator");
    }
    if (mx) ATLAS_RETURN_IF_ERROR(want_int("str.split()", mx, &maxsplit));
    return py_split(s, n, x, nx, maxsplit, out);
  }
  if (!strcmp(name, "replace")) {
    CHECK_ARGS("str.replace()", a, "old", "new", "count");
    const char *o = "", *w = "";
    size_t no = 0, nw = 0;
    long long count = -1;
    ATLAS_RETURN_IF_ERROR(want_str("str.replace()", arg(a, 0, "old"), &o, &no));
    ATLAS_RETURN_IF_ERROR(want_str("str.replace()", arg(a, 1, "new"), &w, &nw));
    if (arg(a, 2, "count"))
      ATLAS_RETURN_IF_ERROR(
          want_int("str.replace()", arg(a, 2, "count"), &count));
    return py_replace(s, n, o, no, w, nw, count, out);
  }
  if (!strcmp(name, "find") || !strcmp(name, "count")) {
    CHECK_ARGS(name, a, "sub");
    const char *x = "";
    size_t nx = 0;
    ATLAS_RETURN_IF_ERROR(want_str(name, arg(a, 0, "sub"), &x, &nx));
    if (name[0] == 'f') {
      const char *hit = nx == 0 ? s : memmem(s, n, x, nx);
      *out = atlas_jv_data(json_integer(
          hit ? (long long)atlas_jinja_utf8_length(s, (size_t)(hit - s)) : -1));
      return ATLAS_OK;
    }
    if (nx == 0) {
      *out = atlas_jv_data(
          json_integer((long long)atlas_jinja_utf8_length(s, n) + 1));
      return ATLAS_OK;
    }
    long long c = 0;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), x, nx)) != NULL;
         p += nx)
      ++c;
    *out = atlas_jv_data(json_integer(c));
    return ATLAS_OK;
  }
  if (!strcmp(name, "join")) {
    CHECK_ARGS("str.join()", a, "iterable");
    const jv *it = arg(a, 0, "iterable");
    if (!it) return err("str.join() needs an iterable");
    json_t *items = NULL;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, *it, "str.join()", &items));
    jinja_buf b = {0};
    for (size_t i = 0; i < json_array_size(items); ++i) {
      json_t *e = json_array_get(items, i);
      if (!json_is_string(e)) {
        json_decref(items);
        atlas_jinja_buf_free(&b);
        return err(
            "str.join(): sequence item %zu: expected str instance, %s found", i,
            atlas_jv_type_name(atlas_jv_data(e)));
      }
      if (i) atlas_jinja_buf_append(&b, s, n);
      atlas_jinja_buf_append(&b, json_string_value(e), json_string_length(e));
    }
    json_decref(items);
    return atlas_jv_string_of_buf(&b, out);
  }
  if (!strcmp(name, "isdigit") || !strcmp(name, "isalpha") ||
      !strcmp(name, "isspace") || !strcmp(name, "isalnum")) {
    NO_ARGS(name, a);
    if (!is_ascii(s, n))
      return err("str.%s() of non-ASCII text is not supported", name);
    bool r = n > 0;
    for (size_t i = 0; i < n && r; ++i) {
      int c = (unsigned char)s[i];
      r = name[2] == 'd'   ? isdigit(c) != 0
          : name[2] == 's' ? isspace(c) != 0 || (c >= 0x1c && c <= 0x1f)
          : name[4] == 'p' ? isalpha(c) != 0
                           : isalnum(c) != 0;
    }
    *out = atlas_jv_data(json_boolean(r));
    return ATLAS_OK;
  }
  if (!strcmp(name, "format"))
    return err("construct 'str.format()' is not supported");
  *found = false;
  return ATLAS_OK;
}

static json_t *pair(jinja_ctx *ctx, const char *k, json_t *v) {
  json_t *p = json_array();
  if (!p) return NULL;
  if (json_array_append_new(p, json_string_nocheck(k)) != 0 ||
      json_array_append(p, v) != 0 ||
      atlas_jinja_mark_tuple(ctx, p) != ATLAS_OK) {
    json_decref(p);
    return NULL;
  }
  return p;
}

// dict.items()/keys()/values() (views) and the items filter (a generator);
// item pairs are tuples. what: 0 items, 1 keys, 2 values.
static atlas_status dict_items(jinja_ctx *ctx, json_t *o, int what, jv_seq seq,
                               jv *out) {
  json_t *arr = json_array();
  if (!arr) return oom();
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    json_t *e = what == 0   ? pair(ctx, k, v)
                : what == 1 ? json_string_nocheck(k)
                            : json_incref(v);
    if (!e || json_array_append_new(arr, e) != 0) {
      json_decref(arr);
      return oom();
    }
  }
  *out = atlas_jv_data(arr);
  out->seq = seq;
  return ATLAS_OK;
}

atlas_status atlas_jinja_method(jinja_ctx *ctx, jv obj, const char *name,
                                const jinja_args *a, jv *out, bool *found) {
  *found = true;
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, walk_cost(obj) + args_cost(a)));
  if (obj.kind == JV_LOOP) {
    if (!strcmp(name, "cycle")) {
      if (a->n_pos == 0) return err("loop.cycle() needs at least one value");
      const jinja_loop *l = obj.ptr;
      *out = atlas_jv_copy(a->pos[l->index0 % a->n_pos]);
      return ATLAS_OK;
    }
    *found = false;
    return ATLAS_OK;
  }
  if (obj.kind != JV_DATA) {
    *found = false;
    return ATLAS_OK;
  }
  if (json_is_string(obj.json))
    return str_method(ctx, obj, name, a, out, found);
  if (json_is_object(obj.json)) {
    if (!strcmp(name, "items") || !strcmp(name, "keys") ||
        !strcmp(name, "values")) {
      NO_ARGS(name, a);
      return dict_items(ctx, obj.json,
                        name[0] == 'i'   ? 0
                        : name[0] == 'k' ? 1
                                         : 2,
                        JV_SEQ_VIEW, out);
    }
    if (!strcmp(name, "get")) {
      CHECK_ARGS("dict.get()", a, "key", "default");
      const jv *k = arg(a, 0, "key"), *d = arg(a, 1, "default");
      if (!k) return err("dict.get() needs a key");
      json_t *v = atlas_jv_is_string(*k)
                      ? json_object_getn(obj.json, json_string_value(k->json),
                                         json_string_length(k->json))
                      : NULL;
      *out = v   ? atlas_jv_data(json_incref(v))
             : d ? atlas_jv_copy(*d)
                 : atlas_jv_data(json_null());
      return ATLAS_OK;
    }
    if (atlas_jinja_is_dict_method(name))
      return err("dict.%s() is not allowed: the template sandbox is immutable",
                 name);
  }
  *found = false;
  return ATLAS_OK;
}

// ---- tests ----

atlas_status atlas_jinja_test(jinja_ctx *ctx, const char *name, jv v,
                              const jinja_args *a, bool *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, walk_cost(v) + args_cost(a)));
  const bool data = v.kind == JV_DATA;
  json_t *j = v.json;
  if (!strcmp(name, "defined"))
    *out = v.kind != JV_UNDEFINED;
  else if (!strcmp(name, "undefined"))
    *out = v.kind == JV_UNDEFINED;
  else if (!strcmp(name, "none"))
    *out = data && json_is_null(j);
  else if (!strcmp(name, "string"))
    *out = data && json_is_string(j);
  else if (!strcmp(name, "mapping"))
    *out = data && json_is_object(j);
  else if (!strcmp(name, "iterable") || !strcmp(name, "sequence")) {
    *out =
        v.kind == JV_UNDEFINED ||
        (data && (json_is_string(j) || json_is_array(j) || json_is_object(j)));
  } else if (!strcmp(name, "number"))
    *out = atlas_jv_is_number(v);
  else if (!strcmp(name, "integer"))
    *out = data && json_is_integer(j);
  else if (!strcmp(name, "float"))
    *out = data && json_is_real(j);
  else if (!strcmp(name, "boolean"))
    *out = data && json_is_boolean(j);
  else if (!strcmp(name, "true"))
    *out = data && json_is_true(j);
  else if (!strcmp(name, "false"))
    *out = data && json_is_false(j);
  else if (!strcmp(name, "callable"))
    *out = v.kind == JV_MACRO || v.kind == JV_FUNC;
  else if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
    if (!atlas_jv_is_string(v)) return err("test '%s' expects a string", name);
    const char *s = json_string_value(j);
    size_t n = json_string_length(j);
    if (!is_ascii(s, n))
      return err("test '%s' of non-ASCII text is not supported", name);
    bool cased = false, ok = true;
    for (size_t i = 0; i < n; ++i) {
      if (isalpha((unsigned char)s[i])) {
        cased = true;
        ok = ok && (name[0] == 'l' ? islower((unsigned char)s[i])
                                   : isupper((unsigned char)s[i]));
      }
    }
    *out = cased && ok;
  } else if (!strcmp(name, "odd") || !strcmp(name, "even") ||
             !strcmp(name, "divisibleby")) {
    long long x, d = 2;
    ATLAS_RETURN_IF_ERROR(want_int(name, &v, &x));
    if (name[0] == 'd') {
      ATLAS_RETURN_IF_ERROR(want_int("divisibleby", arg(a, 0, "num"), &d));
      if (d == 0) return err("divisibleby 0");
      *out = x % d == 0;
    } else {
      *out = (x % 2 != 0) == (name[0] == 'o');
    }
  } else if (!strcmp(name, "sameas")) {
    const jv *o = arg(a, 0, "other");
    if (!o) return err("test 'sameas' needs a value");
    // Identity is only meaningful for the singletons None, True and False.
    if (!(data && (json_is_null(j) || json_is_boolean(j))) &&
        !(o->kind == JV_DATA &&
          (json_is_null(o->json) || json_is_boolean(o->json)))) {
      return err("test 'sameas' is only supported against none, true or false");
    }
    *out = data && o->kind == JV_DATA && json_typeof(j) == json_typeof(o->json);
  } else {
    // Comparisons and membership.
    const jv *o = arg(a, 0, "other");
    if (!o) return err("test '%s' needs a value to compare with", name);
    if (!strcmp(name, "in")) {
      // `x is in y`
      jv item = v;
      if (o->kind == JV_DATA && json_is_string(o->json) &&
          atlas_jv_is_string(item)) {
        *out = memmem(json_string_value(o->json), json_string_length(o->json),
                      json_string_value(item.json),
                      json_string_length(item.json)) != NULL;
      } else if (o->kind == JV_DATA && json_is_array(o->json)) {
        *out = false;
        for (size_t i = 0; i < json_array_size(o->json) && !*out; ++i)
          *out =
              atlas_jv_equal(item, atlas_jv_data(json_array_get(o->json, i)));
      } else if (o->kind == JV_DATA && json_is_object(o->json)) {
        *out = atlas_jv_is_string(item) &&
               json_object_get(o->json, json_string_value(item.json)) != NULL;
      } else {
        return err("test 'in' needs a string, list or dict");
      }
      return ATLAS_OK;
    }
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") ||
        !strcmp(name, "==")) {
      *out = atlas_jv_equal(v, *o);
      return ATLAS_OK;
    }
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) {
      *out = !atlas_jv_equal(v, *o);
      return ATLAS_OK;
    }
    int c = 0;
    ATLAS_RETURN_IF_ERROR(atlas_jv_compare(v, *o, &c));
    if (!strcmp(name, "lt") || !strcmp(name, "<"))
      *out = c < 0;
    else if (!strcmp(name, "le") || !strcmp(name, "<="))
      *out = c <= 0;
    else if (!strcmp(name, "gt") || !strcmp(name, ">"))
      *out = c > 0;
    else if (!strcmp(name, "ge") || !strcmp(name, ">="))
      *out = c >= 0;
    else
      return err("test '%s' is not supported", name);
  }
  return ATLAS_OK;
}

// ---- filters ----

// Attribute lookup as Jinja's make_attrgetter does for map/selectattr/join:
// the path split at every '.', each part of ASCII digits an integer index
// (of a list, or a code point of a string; a dict has no integer keys), any
// other part a dict key. A part finding nothing takes `deflt` where given
// (map's default=, and the path goes on from it, as Jinja's does); else the
// last part gives undefined and an earlier one is an error, as Jinja's
// lookup on its Undefined raises. A part naming a Python attribute that
// Jinja would find instead (atlas_jinja_python_attribute: a dict without that
// key, `selectattr('items')`, keeps every dict; a string's `upper` is a
// bound method, an int's `real` the int) is refused by name. Parts are read
// in place (keys of any length); only a code point is allocated.
static atlas_status attr_path(json_t *item, const char *path, json_t *deflt,
                              jv *out) {
  json_t *cur = item, *owned = NULL;  // owned: a code point made here (cur)
  for (const char *p = path;; p += strcspn(p, ".") + 1) {
    const size_t n = strcspn(p, ".");
    size_t digits = 0, idx = 0;
    bool fits = true;
    for (; digits < n && p[digits] >= '0' && p[digits] <= '9'; ++digits) {
      fits = fits && idx <= (SIZE_MAX - 9) / 10;
      if (fits) idx = idx * 10 + (size_t)(p[digits] - '0');
    }
    json_t *next = NULL, *made = NULL;
    if (n > 0 && digits == n) {
      if (fits && json_is_array(cur)) {
        next = json_array_get(cur, idx);
      } else if (fits && json_is_string(cur)) {
        const char *str = json_string_value(cur);
        const size_t bytes = json_string_length(cur);
        if (idx < atlas_jinja_utf8_length(str, bytes)) {
          size_t b = atlas_jinja_utf8_offset(str, bytes, idx), e = b;
          atlas_jinja_utf8_next(str, bytes, &e);
          next = made = json_stringn_nocheck(str + b, e - b);
          if (!made) {
            json_decref(owned);
            return oom();
          }
        }
      }
    } else if (json_is_object(cur)) {
      next = json_object_getn(cur, p, n);
    }
    char name[24] = "";  // longer than any Python attribute refused below
    if (!next && !(n > 0 && digits == n) && n < sizeof(name)) {
      memcpy(name, p, n);
      const char *what = atlas_jinja_python_attribute(cur, name);
      if (what != NULL) {
        const char *type =
            atlas_jv_type_name((jv){.kind = JV_DATA, .json = cur});
        json_decref(owned);
        return err(
            "attribute '%s' of %s %s%s is its %s in Jinja; not supported", name,
            atlas_jv_type_article(type), type,
            json_is_object(cur) ? " without that key" : "", what);
      }
    }
    if (!next && deflt) next = deflt;
    if (!next) {
      const char *type = atlas_jv_type_name((jv){.kind = JV_DATA, .json = cur});
      json_decref(owned);
      if (p[n] != '\0') {
        return err("'%s object' has no attribute '%.*s' (attribute path '%s')",
                   type, (int)n, p, path);
      }
      *out = atlas_jv_undefined("attribute");
      return ATLAS_OK;
    }
    json_decref(owned);  // after its text was read
    owned = made;
    cur = next;
    if (p[n] == '\0') break;
  }
  *out = atlas_jv_data(owned ? owned : json_incref(cur));
  return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
}

// select/reject/selectattr/rejectattr.
static atlas_status select_filter(jinja_ctx *ctx, const char *name, jv v,
                                  const jinja_args *a, jv *out) {
  const bool by_attr = strstr(name, "attr") != NULL;
  const bool keep_if = name[0] == 's';
  json_t *items;
  ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
  size_t first = 0;
  const char *attr = NULL;
  if (by_attr) {
    size_t n = 0;
    if (a->n_pos < 1) {
      json_decref(items);
      return err("%s needs an attribute name", name);
    }
    atlas_status st = want_str(name, &a->pos[0], &attr, &n);
    if (st != ATLAS_OK) {
      json_decref(items);
      return st;
    }
    first = 1;
  }
  if (a->n_kw) {
    json_decref(items);
    return err("%s: keyword arguments are not supported", name);
  }
  const char *test = NULL;
  size_t tn = 0;
  if (a->n_pos > first) {
    atlas_status st = want_str(name, &a->pos[first], &test, &tn);
    if (st == ATLAS_OK && !atlas_jinja_test_known(test))
      st = err("%s: test '%s' is not supported", name, test);
    if (st != ATLAS_OK) {
      json_decref(items);
      return st;
    }
  }
  // The test's own arguments, after its name (pos is NULL without any).
  const size_t tn_args = a->n_pos > first + 1 ? a->n_pos - first - 1 : 0;
  jinja_args targs = {tn_args ? a->pos + first + 1 : NULL, tn_args, NULL, NULL,
                      0};
  json_t *kept = json_array();
  atlas_status st = kept ? ATLAS_OK : oom();
  for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
    json_t *item = json_array_get(items, i);
    jv subject = atlas_jv_undefined("attribute");
    if (by_attr) {
      st = attr_path(item, attr, NULL, &subject);
      if (st != ATLAS_OK) break;
    } else {
      subject = atlas_jv_data(json_incref(item));
    }
    bool r;
    if (test) {
      st = atlas_jinja_test(ctx, test, subject, &targs, &r);
    } else {
      r = atlas_jv_truthy(subject);
    }
    atlas_jv_free(&subject);
    if (st == ATLAS_OK && r == keep_if && json_array_append(kept, item) != 0)
      st = oom();
  }
  json_decref(items);
  if (st != ATLAS_OK) {
    json_decref(kept);
    return st;
  }
  *out = atlas_jv_data(kept);
  out->seq = JV_SEQ_GENERATOR;
  return ATLAS_OK;
}

static atlas_status map_filter(jinja_ctx *ctx, jv v, const jinja_args *a,
                               jv *out) {
  json_t *items;
  ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, "map", &items));
  const jv *attr = arg(a, 99, "attribute");
  const jv *deflt = arg(a, 99, "default");
  // Jinja's map takes default=None as no default (an item lacking the
  // attribute is then Undefined, which Atlas refuses below).
  if (deflt && deflt->kind == JV_DATA && json_is_null(deflt->json))
    deflt = NULL;
  json_t *res = json_array();
  atlas_status st = res ? ATLAS_OK : oom();
  if (attr) {
    const char *path = "";
    size_t n = 0;
    if (st == ATLAS_OK) st = want_str("map", attr, &path, &n);
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      jv x;
      st = attr_path(json_array_get(items, i), path,
                     deflt && deflt->kind == JV_DATA ? deflt->json : NULL, &x);
      if (st != ATLAS_OK) break;
      if (x.kind == JV_UNDEFINED && deflt) x = atlas_jv_copy(*deflt);
      if (x.kind != JV_DATA) {
        st = err("map: item %zu has no attribute '%s'", i, path);
      } else if (json_array_append(res, x.json) != 0) {
        st = oom();
      }
      atlas_jv_free(&x);
    }
  } else {
    const char *f = "";
    size_t n = 0;
    if (st == ATLAS_OK && a->n_pos < 1)
      st = err("map needs a filter name or attribute=");
    if (st == ATLAS_OK) st = want_str("map", &a->pos[0], &f, &n);
    if (st == ATLAS_OK && !atlas_jinja_filter_known(f))
      st = err("map: filter '%s' is not supported", f);
    // Without arguments pos is NULL (and the loop below never runs).
    jinja_args fargs = {a->n_pos > 0 ? a->pos + 1 : NULL,
                        a->n_pos > 0 ? a->n_pos - 1 : 0, a->kw_names, a->kw,
                        a->n_kw};
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      jv x;
      st = atlas_jinja_filter(ctx, f, atlas_jv_data(json_array_get(items, i)),
                              &fargs, &x);
      if (st == ATLAS_OK) {
        if (x.kind != JV_DATA) {
          st = err("map: filter '%s' gave a %s", f, atlas_jv_type_name(x));
        } else if (json_array_append(res, x.json) != 0) {
          st = oom();
        }
        atlas_jv_free(&x);
      }
    }
  }
  json_decref(items);
  if (st != ATLAS_OK) {
    json_decref(res);
    return st;
  }
  *out = atlas_jv_data(res);
  out->seq = JV_SEQ_GENERATOR;
  return ATLAS_OK;
}

static atlas_status tojson_filter(jv v, const jinja_args *a, jv *out) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None,
  // sort_keys=False)
  CHECK_ARGS("tojson", a, "ensure_ascii", "indent", "separators", "sort_keys");
  const jv *ea = arg(a, 0, "ensure_ascii"), *ind = arg(a, 1, "indent"),
           *sep = arg(a, 2, "separators"), *sk = arg(a, 3, "sort_keys");
  int indent = -1;
  const char *indent_str = NULL;
  if (ind && !(ind->kind == JV_DATA && json_is_null(ind->json))) {
    if (atlas_jv_is_string(*ind)) {
      indent = 0;
      indent_str = json_string_value(ind->json);
    } else {
      long long w;
      ATLAS_RETURN_IF_ERROR(want_int("tojson indent", ind, &w));
      if (w > 63) return err("tojson: indent %lld is too large", w);
      indent = w < 0 ? 0 : (int)w;
    }
  }
  const char *item_sep = NULL, *key_sep = NULL;
  if (sep && !(sep->kind == JV_DATA && json_is_null(sep->json))) {
    if (!(sep->kind == JV_DATA && json_is_array(sep->json) &&
          json_array_size(sep->json) == 2 &&
          json_is_string(json_array_get(sep->json, 0)) &&
          json_is_string(json_array_get(sep->json, 1)))) {
      return err("tojson: separators must be a pair of strings");
    }
    item_sep = json_string_value(json_array_get(sep->json, 0));
    key_sep = json_string_value(json_array_get(sep->json, 1));
  }
  jinja_buf b = {0};
  atlas_status st =
      atlas_jv_tojson(v, ea && atlas_jv_truthy(*ea), indent, indent_str,
                      item_sep, key_sep, sk && atlas_jv_truthy(*sk), &b);
  if (st != ATLAS_OK) {
    atlas_jinja_buf_free(&b);
    return st;
  }
  return atlas_jv_string_of_buf(&b, out);
}

// The text Python's int() and float() read, malloc'd into *out: single
// underscores between digits are dropped ("1_000"). *out stays NULL for any
// other underscore or a NUL inside the text (Python reads no number there).
// Non-ASCII text is refused: Python reads Unicode digits and spaces
// ('\u0661\u0662' is 12), which C's strtod does not.
static atlas_status py_number_text(const char *filter, jv v, char **out) {
  *out = NULL;
  const char *s = json_string_value(v.json);
  size_t n = json_string_length(v.json), w = 0;
  if (strlen(s) != n) return ATLAS_OK;
  for (size_t i = 0; i < n; i++) {
    if ((unsigned char)s[i] >= 0x80)
      return err("%s: non-ASCII text is not supported", filter);
  }
  char *buf = malloc(n + 1);
  if (!buf) return oom();
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == n || !isdigit((unsigned char)s[i - 1]) ||
          !isdigit((unsigned char)s[i + 1])) {
        free(buf);
        return ATLAS_OK;
      }
      continue;
    }
    buf[w++] = s[i];
  }
  buf[w] = '\0';
  *out = buf;
  return ATLAS_OK;
}

// Python's int() of a finite float: exact, however large. Atlas's integers
// are 64-bit, so a float past them is refused rather than clamped.
static atlas_status int_of_float(double f, jv *out) {
  const double two63 = 9223372036854775808.0;
  if (!(f >= -two63 && f < two63)) {
    return err("int: %.17g does not fit in a 64-bit integer", f);
  }
  *out = atlas_jv_data(json_integer((long long)f));
  return ATLAS_OK;
}

// Jinja's int: int(value), else int(float(value)), else the default.
static atlas_status int_filter(jv v, const jinja_args *a, jv *out) {
  CHECK_ARGS("int", a, "default", "base");
  const jv *d = arg(a, 0, "default");
  if (arg(a, 1, "base")) return err("int: base= is not supported");
  if (atlas_jv_is_int(v)) {
    *out = atlas_jv_data(json_integer(json_is_boolean(v.json)
                                          ? json_is_true(v.json)
                                          : json_integer_value(v.json)));
    return ATLAS_OK;
  }
  if (v.kind == JV_DATA && json_is_real(v.json)) {
    double f = json_real_value(v.json);
    if (isinf(f)) return err("int: cannot convert float infinity to integer");
    if (!isnan(f)) return int_of_float(f, out);
  }
  char *text = NULL;
  if (atlas_jv_is_string(v))
    ATLAS_RETURN_IF_ERROR(py_number_text("int", v, &text));
  if (text) {
    const char *s = text;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    while (*end && isspace((unsigned char)*end)) ++end;
    atlas_status st = ATLAS_OK;
    bool done = false;
    if (end != s && *end == '\0') {
      st = errno == ERANGE
               ? err("int: '%s' does not fit in a 64-bit integer", s)
               : ATLAS_OK;
      if (st == ATLAS_OK) *out = atlas_jv_data(json_integer(x));
      done = true;
    } else {
      // int(float(s)): decimal only (strtod would also read hexadecimal);
      // int() of infinity raises OverflowError, which Jinja turns into the
      // default.
      double f = strtod(s, &end);
      while (*end && isspace((unsigned char)*end)) ++end;
      if (end != s && *end == '\0' && !strpbrk(s, "xX") && isfinite(f)) {
        st = int_of_float(f, out);
        done = true;
      }
    }
    free(text);
    if (done) return st;
  }
  *out = d ? atlas_jv_copy(*d) : atlas_jv_data(json_integer(0));
  return ATLAS_OK;
}

// Jinja's round(value, precision, method). 'common' is Python's round():
// an int stays an int (rounded half to even at a negative precision), a
// float is rounded half to even on its exact decimal value, which is what
// printf's %.*f does; 'ceil' and 'floor' scale by 10**precision.
static atlas_status round_filter(jv v, const jinja_args *a, jv *out) {
  CHECK_ARGS("round", a, "precision", "method");
  long long prec = 0;
  if (arg(a, 0, "precision"))
    ATLAS_RETURN_IF_ERROR(want_int("round", arg(a, 0, "precision"), &prec));
  const char *method = "common";
  size_t method_len = 6;
  if (arg(a, 1, "method"))
    ATLAS_RETURN_IF_ERROR(
        want_str("round", arg(a, 1, "method"), &method, &method_len));
  bool common = !strcmp(method, "common"), up = !strcmp(method, "ceil");
  if (!common && !up && strcmp(method, "floor") != 0) {
    return err("round: method must be common, ceil or floor, not '%s'", method);
  }
  if (!atlas_jv_is_number(v)) return err("round: expects a number");
  if (prec < -22 || prec > 22)
    return err("round: precision %lld is outside -22..22", prec);
  if (common && atlas_jv_is_int(v)) {
    long long x = json_is_boolean(v.json) ? json_is_true(v.json)
                                          : json_integer_value(v.json);
    if (prec < 0) {
      if (prec < -18)
        return err("round: precision %lld of an integer is not supported",
                   prec);
      long long m = 1;
      for (long long i = 0; i < -prec; i++) m *= 10;
      long long q = x / m, r = x % m;  // C truncates: r has x's sign
      if (r < 0) {
        q -= 1;
        r += m;
      }
      if (2 * r > m || (2 * r == m && (q & 1))) q += 1;
      if (__builtin_mul_overflow(q, m, &x))
        return err("round: the result does not fit in 64 bits");
    }
    *out = atlas_jv_data(json_integer(x));
    return ATLAS_OK;
  }
  double x = json_is_boolean(v.json) ? json_is_true(v.json)
                                     : json_number_value(v.json);
  if (!common && atlas_jv_is_int(v) && prec >= 0) {
    // Exact in Python: int * 10**p, floored, divided by 10**p is the int.
    *out = atlas_jv_data(json_real(x));
    return ATLAS_OK;
  }
  if (!common) {
    // Python's 10 ** precision: an exact int, or a float such as 0.01.
    double p10 =
        prec < 0 ? 1.0 / pow(10.0, (double)-prec) : pow(10.0, (double)prec);
    // math.ceil / floor give Python ints, so a zero has no sign: + 0.0.
    double y = (up ? ceil(x * p10) : floor(x * p10)) / p10 + 0.0;
    if (!isfinite(y))
      return err("round: %.17g scaled by 10**%lld is not finite", x, prec);
    *out = atlas_jv_data(json_real(y));
    return ATLAS_OK;
  }
  if (prec < 0)
    return err("round: a negative precision of a float is not supported");
  // x is finite: no value holds inf or nan (every site that makes one
  // refuses them), and %.22f of DBL_MAX takes 332 characters.
  char buf[400];
  snprintf(buf, sizeof(buf), "%.*f", (int)prec, x);
  *out = atlas_jv_data(json_real(strtod(buf, NULL)));
  return ATLAS_OK;
}

atlas_status atlas_jinja_filter(jinja_ctx *ctx, const char *name, jv v,
                                const jinja_args *a, jv *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, walk_cost(v) + args_cost(a)));
  if (!strcmp(name, "default") || !strcmp(name, "d")) {
    CHECK_ARGS(name, a, "default_value", "boolean");
    const jv *d = arg(a, 0, "default_value"), *b = arg(a, 1, "boolean");
    bool use = v.kind == JV_UNDEFINED ||
               (b && atlas_jv_truthy(*b) && !atlas_jv_truthy(v));
    if (use) {
      *out = d ? atlas_jv_copy(*d) : atlas_jv_string("", 0);
    } else {
      *out = atlas_jv_copy(v);
    }
    return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
  }
  if (!strcmp(name, "safe") || !strcmp(name, "string")) {
    NO_ARGS(name, a);
    if (name[0] == 's' && name[1] == 'a') {
      *out = atlas_jv_copy(v);
      return ATLAS_OK;
    }
    jinja_buf b = {0};
    atlas_status st = str_of(ctx, v, &b);
    if (st != ATLAS_OK) {
      atlas_jinja_buf_free(&b);
      return st;
    }
    return atlas_jv_string_of_buf(&b, out);
  }
  if (!strcmp(name, "tojson")) return tojson_filter(v, a, out);
  if (!strcmp(name, "length") || !strcmp(name, "count")) {
    NO_ARGS(name, a);
    long long n;
    if (v.kind == JV_DATA && v.seq == JV_SEQ_GENERATOR) {
      return err("object of type 'generator' has no len()");
    } else if (v.kind == JV_UNDEFINED) {
      n = 0;
    } else if (v.kind == JV_DATA && json_is_string(v.json)) {
      n = (long long)atlas_jinja_utf8_length(json_string_value(v.json),
                                             json_string_length(v.json));
    } else if (v.kind == JV_DATA && json_is_array(v.json)) {
      n = (long long)json_array_size(v.json);
    } else if (v.kind == JV_DATA && json_is_object(v.json)) {
      n = (long long)json_object_size(v.json);
    } else {
      return err("object of type '%s' has no len()", atlas_jv_type_name(v));
    }
    *out = atlas_jv_data(json_integer(n));
    return ATLAS_OK;
  }
  if (!strcmp(name, "items")) {
    NO_ARGS(name, a);
    if (v.kind == JV_UNDEFINED) {
      *out = atlas_jv_data(json_array());
      out->seq = JV_SEQ_GENERATOR;
      return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
    }
    if (!(v.kind == JV_DATA && json_is_object(v.json)))
      return err("items: expected a dict, got '%s'", atlas_jv_type_name(v));
    return dict_items(ctx, v.json, 0, JV_SEQ_GENERATOR, out);
  }
  if (!strcmp(name, "list")) {
    NO_ARGS(name, a);
    json_t *items;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, "list", &items));
    // A fresh list (also from a generator, range or view).
    *out = atlas_jv_data(json_is_array(v.json) && items == v.json
                             ? json_copy(items)
                             : json_incref(items));
    json_decref(items);
    return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
  }
  if (!strcmp(name, "first") || !strcmp(name, "last")) {
    NO_ARGS(name, a);
    if (name[0] == 'l' && v.kind == JV_DATA && v.seq == JV_SEQ_GENERATOR) {
      return err("last: 'generator' object is not reversible");
    }
    json_t *items;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
    size_t n = json_array_size(items);
    if (n == 0) {
      *out =
          atlas_jv_undefined(name[0] == 'f' ? "first item of an empty sequence"
                                            : "last item of an empty sequence");
    } else {
      *out = atlas_jv_data(
          json_incref(json_array_get(items, name[0] == 'f' ? 0 : n - 1)));
    }
    json_decref(items);
    return ATLAS_OK;
  }
  if (!strcmp(name, "reverse")) {
    NO_ARGS(name, a);
    json_t *items;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
    const bool was_str = atlas_jv_is_string(v);
    // reversed(seq) is an iterator; a generator has none, so Jinja falls
    // back to a reversed list.
    const jv_seq result_seq =
        v.seq == JV_SEQ_GENERATOR ? JV_SEQ_LIST : JV_SEQ_GENERATOR;
    size_t n = json_array_size(items);
    json_t *r = json_array();
    atlas_status st = r ? ATLAS_OK : oom();
    for (size_t i = n; st == ATLAS_OK && i-- > 0;) {
      if (json_array_append(r, json_array_get(items, i)) != 0) st = oom();
    }
    json_decref(items);
    if (st != ATLAS_OK) {
      json_decref(r);
      return st;
    }
    if (!was_str) {
      *out = atlas_jv_data(r);
      out->seq = result_seq;
      return ATLAS_OK;
    }
    jinja_buf b = {0};
    for (size_t i = 0; i < n; ++i)
      atlas_jinja_buf_puts(&b, json_string_value(json_array_get(r, i)));
    json_decref(r);
    return atlas_jv_string_of_buf(&b, out);
  }
  if (!strcmp(name, "join")) {
    CHECK_ARGS(name, a, "d", "attribute");
    const jv *sep = arg(a, 0, "d"), *attr = arg(a, 1, "attribute");
    const char *s = "";
    size_t ns = 0;
    if (sep) ATLAS_RETURN_IF_ERROR(want_str("join", sep, &s, &ns));
    const char *path = NULL;
    size_t np = 0;
    if (attr)
      ATLAS_RETURN_IF_ERROR(want_str("join attribute", attr, &path, &np));
    json_t *items;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
    jinja_buf b = {0};
    atlas_status st = ATLAS_OK;
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      if (i) atlas_jinja_buf_append(&b, s, ns);
      jv x = atlas_jv_undefined("attribute");
      if (path) {
        st = attr_path(json_array_get(items, i), path, NULL, &x);
      } else {
        x = atlas_jv_data(json_incref(json_array_get(items, i)));
      }
      if (st == ATLAS_OK) st = str_of(ctx, x, &b);
      atlas_jv_free(&x);
    }
    json_decref(items);
    if (st != ATLAS_OK) {
      atlas_jinja_buf_free(&b);
      return st;
    }
    return atlas_jv_string_of_buf(&b, out);
  }
  if (!strcmp(name, "map")) return map_filter(ctx, v, a, out);
  if (!strcmp(name, "select") || !strcmp(name, "reject") ||
      !strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) {
    return select_filter(ctx, name, v, a, out);
  }
  if (!strcmp(name, "int")) return int_filter(v, a, out);
  if (!strcmp(name, "float")) {
    CHECK_ARGS(name, a, "default");
    if (atlas_jv_is_number(v)) {
      *out = atlas_jv_data(json_real(json_is_boolean(v.json)
                                         ? json_is_true(v.json)
                                         : json_number_value(v.json)));
      return ATLAS_OK;
    }
    char *text = NULL;
    if (atlas_jv_is_string(v))
      ATLAS_RETURN_IF_ERROR(py_number_text("float", v, &text));
    if (text) {
      char *end;
      double f = strtod(text, &end);
      while (*end && isspace((unsigned char)*end)) ++end;
      if (end != text && *end == '\0' &&
          !strpbrk(text, "xX")) {  // float() reads no hexadecimal
        // Python's float() gives inf or nan; a JSON number cannot hold them.
        atlas_status st = isfinite(f)
                              ? ATLAS_OK
                              : err("float: '%s' is not a finite number, which "
                                    "Atlas's numbers cannot hold",
                                    text);
        if (st == ATLAS_OK) *out = atlas_jv_data(json_real(f));
        free(text);
        return st;
      }
      free(text);
    }
    const jv *d = arg(a, 0, "default");
    *out = d ? atlas_jv_copy(*d) : atlas_jv_data(json_real(0.0));
    return ATLAS_OK;
  }
  if (!strcmp(name, "abs")) {
    NO_ARGS(name, a);
    if (!atlas_jv_is_number(v))
      return err("abs: bad operand type '%s'", atlas_jv_type_name(v));
    if (atlas_jv_is_int(v)) {
      long long x = json_is_boolean(v.json) ? json_is_true(v.json)
                                            : json_integer_value(v.json);
      if (x == LLONG_MIN)
        return err("abs: integer arithmetic overflows 64 bits");
      *out = atlas_jv_data(json_integer(x < 0 ? -x : x));
    } else {
      *out = atlas_jv_data(json_real(fabs(json_real_value(v.json))));
    }
    return ATLAS_OK;
  }
  if (!strcmp(name, "round")) return round_filter(v, a, out);
  if (!strcmp(name, "trim")) {
    CHECK_ARGS(name, a, "chars");
    jinja_buf b = {0};
    atlas_status st = str_of(ctx, v, &b);
    const jv *c = arg(a, 0, "chars");
    const char *chars = NULL;
    size_t nc = 0;
    if (st == ATLAS_OK && c && !(c->kind == JV_DATA && json_is_null(c->json)))
      st = want_str("trim", c, &chars, &nc);
    if (st == ATLAS_OK)
      st = py_strip(b.data ? b.data : "", b.len, chars, nc, true, true, out);
    atlas_jinja_buf_free(&b);
    return st;
  }
  if (!strcmp(name, "upper") || !strcmp(name, "lower") ||
      !strcmp(name, "capitalize") || !strcmp(name, "title")) {
    NO_ARGS(name, a);
    jinja_buf b = {0};
    atlas_status st = str_of(ctx, v, &b);
    if (st == ATLAS_OK) {
      case_kind k = name[0] == 'u'   ? CASE_UPPER
                    : name[0] == 'l' ? CASE_LOWER
                    : name[0] == 'c' ? CASE_CAPITALIZE
                                     : CASE_TITLE_JINJA;
      st = change_case(name, b.data ? b.data : "", b.len, k, out);
    }
    atlas_jinja_buf_free(&b);
    return st;
  }
  if (!strcmp(name, "replace")) {
    CHECK_ARGS(name, a, "old", "new", "count");
    jinja_buf b = {0};
    const char *o = "", *w = "";
    size_t no = 0, nw = 0;
    long long count = -1;
    atlas_status st = str_of(ctx, v, &b);
    if (st == ATLAS_OK) st = want_str("replace", arg(a, 0, "old"), &o, &no);
    if (st == ATLAS_OK) st = want_str("replace", arg(a, 1, "new"), &w, &nw);
    if (st == ATLAS_OK && arg(a, 2, "count"))
      st = want_int("replace", arg(a, 2, "count"), &count);
    if (st == ATLAS_OK)
      st = py_replace(b.data ? b.data : "", b.len, o, no, w, nw, count, out);
    atlas_jinja_buf_free(&b);
    return st;
  }
  if (!strcmp(name, "unique")) {
    CHECK_ARGS(name, a, "case_sensitive", "attribute");
    if (a->n_pos || a->n_kw) return err("unique: arguments are not supported");
    json_t *items;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
    json_t *r = json_array();
    atlas_status st = r ? ATLAS_OK : oom();
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      json_t *x = json_array_get(items, i);
      // Jinja2 keeps the items it saw in a set: lists and dicts are
      // unhashable there.
      if (json_is_array(x) || json_is_object(x)) {
        st = err("unique: unhashable type: '%s'",
                 atlas_jv_type_name(atlas_jv_data(x)));
        break;
      }
      // Each item is compared with those kept so far.
      st = atlas_jinja_spend(ctx, 1 + json_array_size(r));
      if (st != ATLAS_OK) break;
      if (json_is_string(x) &&
          !is_ascii(json_string_value(x), json_string_length(x))) {
        st =
            err("unique of non-ASCII strings is not supported (it compares "
                "case-insensitively)");
        break;
      }
      bool dup = false;
      for (size_t k = 0; k < json_array_size(r) && !dup; ++k) {
        json_t *y = json_array_get(r, k);
        dup = json_is_string(x) && json_is_string(y)
                  ? json_string_length(x) == json_string_length(y) &&
                        strncasecmp(json_string_value(x), json_string_value(y),
                                    json_string_length(x)) == 0
                  : atlas_jv_equal(atlas_jv_data(x), atlas_jv_data(y));
      }
      if (!dup && json_array_append(r, x) != 0) st = oom();
    }
    json_decref(items);
    if (st != ATLAS_OK) {
      json_decref(r);
      return st;
    }
    *out = atlas_jv_data(r);
    out->seq = JV_SEQ_GENERATOR;
    return ATLAS_OK;
  }
  if (!strcmp(name, "wordcount")) {
    NO_ARGS(name, a);
    jinja_buf b = {0};
    atlas_status st = str_of(ctx, v, &b);
    long long words = 0;
    bool in_word = false;
    for (size_t i = 0; st == ATLAS_OK && i < b.len; ++i) {
      unsigned char c = (unsigned char)b.data[i];
      bool w = isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++words;
      in_word = w;
    }
    atlas_jinja_buf_free(&b);
    ATLAS_RETURN_IF_ERROR(st);
    *out = atlas_jv_data(json_integer(words));
    return ATLAS_OK;
  }
  if (!strcmp(name, "indent")) {
    CHECK_ARGS(name, a, "width", "first", "blank");
    long long width = 4;
    const jv *w = arg(a, 0, "width");
    if (w) ATLAS_RETURN_IF_ERROR(want_int("indent", w, &width));
    const bool first =
        arg(a, 1, "first") && atlas_jv_truthy(*arg(a, 1, "first"));
    const bool blank =
        arg(a, 2, "blank") && atlas_jv_truthy(*arg(a, 2, "blank"));
    jinja_buf s = {0};
    atlas_status st = str_of(ctx, v, &s);
    if (st != ATLAS_OK) {
      atlas_jinja_buf_free(&s);
      return st;
    }
    // Jinja: lines after the first get the indent; blank lines only with
    // blank=True.
    const char *text = s.data ? s.data : "";
    size_t lines = 1;
    for (size_t k = 0; k < s.len; ++k) lines += text[k] == '\n';
    // As string repetition (a width of 3e14 looped that many times: the
    // chat_template fuzzer's out-of-memory).
    if (width > 0 && (unsigned long long)width > JINJA_MAX_BUILT_TEXT / lines) {
      atlas_jinja_buf_free(&s);
      return err("indent: a width of %lld on %zu lines is too large", width,
                 lines);
    }
    jinja_buf b = {0};
    size_t i = 0;
    bool first_line = true;
    while (i <= s.len) {
      size_t e = i;
      while (e < s.len && text[e] != '\n') ++e;
      const bool is_blank = e == i;
      if ((first_line ? first : true) && (blank || !is_blank)) {
        if (width > 0)
          atlas_jinja_buf_append_repeated(&b, " ", 1, (size_t)width);
      }
      atlas_jinja_buf_append(&b, text + i, e - i);
      if (e < s.len) atlas_jinja_buf_putc(&b, '\n');
      first_line = false;
      if (e >= s.len) break;
      i = e + 1;
    }
    atlas_jinja_buf_free(&s);
    return atlas_jv_string_of_buf(&b, out);
  }
  return err("filter '%s' is not supported", name);
}

// ---- globals ----

static atlas_status strftime_now(jinja_ctx *ctx, const jinja_args *a, jv *out) {
  CHECK_ARGS("strftime_now", a, "format");
  const char *fmt = "";
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(
      want_str("strftime_now", arg(a, 0, "format"), &fmt, &n));
  struct tm now;
  if (ctx->now) {
    now = *ctx->now;
  } else {
    time_t t = time(NULL);
    if (!localtime_r(&t, &now))
      return err("strftime_now: the local time is unavailable");
  }
  char buf[512];
  if (fmt[0] == '\0') {
    *out = atlas_jv_string("", 0);
    return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
  }
  size_t len = strftime(buf, sizeof buf, fmt, &now);
  if (len == 0)
    return err("strftime_now: format '%s' gives no text or more than %zu bytes",
               fmt, sizeof buf);
  *out = atlas_jv_string(buf, len);
  return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
}

atlas_status atlas_jinja_global_call(jinja_ctx *ctx, const char *name,
                                     const jinja_args *a, jv *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, args_cost(a)));
  if (!strcmp(name, "raise_exception")) {
    const char *msg = "";
    size_t n = 0;
    const jv *m = arg(a, 0, "message");
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
      return err("%s() takes keyword arguments or one dict", name);
    }
    if (a->n_pos == 1 && json_object_update(obj, a->pos[0].json) != 0) {
      json_decref(obj);
      return oom();
    }
    for (size_t i = 0; i < a->n_kw; ++i) {
      if (a->kw[i].kind != JV_DATA || a->kw[i].seq != JV_SEQ_LIST) {
        json_decref(obj);
        return err("%s(): storing a %s value is not supported", name,
                   atlas_jv_type_name(a->kw[i]));
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
    if (a->n_kw) return err("range() takes no keyword arguments");
    if (a->n_pos < 1 || a->n_pos > 3)
      return err("range() takes 1 to 3 arguments");
    long long p[3] = {0, 0, 1};
    for (size_t i = 0; i < a->n_pos; ++i)
      ATLAS_RETURN_IF_ERROR(want_int("range", &a->pos[i], &p[i]));
    long long start = a->n_pos == 1 ? 0 : p[0],
              stop = a->n_pos == 1 ? p[0] : p[1];
    long long step = a->n_pos == 3 ? p[2] : 1;
    if (step == 0) return err("range() arg 3 must not be zero");
    // The item count in 128 bits: start + k * step never overflows, however
    // near INT64_MAX or INT64_MIN the bounds are.
    __int128 span = step > 0 ? (__int128)stop - start : (__int128)start - stop;
    __int128 stride = step > 0 ? (__int128)step : -(__int128)step;
    __int128 count = span <= 0 ? 0 : (span - 1) / stride + 1;
    // Jinja's sandbox caps ranges at 100000 items.
    if (count > 100000) {
      return err("range too big: the sandbox allows at most 100000 items");
    }
    ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(ctx, (uint64_t)count));
    json_t *arr = json_array();
    if (!arr) return oom();
    for (long long k = 0; k < (long long)count; ++k) {
      long long x = (long long)((__int128)start + (__int128)k * step);
      if (json_array_append_new(arr, json_integer(x)) != 0) {
        json_decref(arr);
        return oom();
      }
    }
    *out = atlas_jv_data(arr);
    out->seq = JV_SEQ_RANGE;
    return ATLAS_OK;
  }
  return err("function '%s' is not supported", name);
}
