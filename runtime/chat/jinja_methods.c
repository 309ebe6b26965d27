#define _GNU_SOURCE  // memmem, strncasecmp, localtime_r (glibc extensions)
// Methods of str, dict, list and loop values, and the Python str operations
// the filters share (strip, case, replace, split).
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_builtin_util.h"
#include "atlas/runtime/chat/jinja_builtins.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_render.h"

static atlas_status oom(void) { return atlas_jinja_oom("rendering"); }

// ---- strings ----

bool atlas_jinja_is_ascii(const char *s, size_t n) {
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
atlas_status atlas_jinja_py_strip(const char *s, size_t n, const char *chars,
                                  size_t n_chars, bool left, bool right,
                                  jv *out) {
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
  const jv *c = atlas_jinja_arg(a, 0, "chars");
  const char *chars = NULL;
  size_t nc = 0;
  if (c && !(c->kind == JV_DATA && json_is_null(c->json)))
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(what, c, &chars, &nc));
  return atlas_jinja_py_strip(json_string_value(self.json),
                              json_string_length(self.json), chars, nc, l, r,
                              out);
}

atlas_status atlas_jinja_change_case(const char *what, const char *s, size_t n,
                                     case_kind k, jv *out) {
  if (!atlas_jinja_is_ascii(s, n)) {
    return atlas_jinja_err(
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

atlas_status atlas_jinja_py_replace(const char *s, size_t n, const char *old,
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
  const jv *p = atlas_jinja_arg(a, 0, "prefix");
  if (!p) return atlas_jinja_err("%s needs an argument", what);
  const char *s = json_string_value(self.json);
  size_t n = json_string_length(self.json);
  json_t *cands = p->kind == JV_DATA && json_is_array(p->json) ? p->json : NULL;
  size_t count = cands ? json_array_size(cands) : 1;
  bool hit = false;
  for (size_t i = 0; i < count && !hit; ++i) {
    jv c = cands ? atlas_jv_data(json_array_get(cands, i)) : *p;
    const char *x = "";
    size_t nx = 0;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(what, &c, &x, &nx));
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
    return atlas_jinja_change_case("str.upper()", s, n, CASE_UPPER, out);
  }
  if (!strcmp(name, "lower")) {
    NO_ARGS("str.lower()", a);
    return atlas_jinja_change_case("str.lower()", s, n, CASE_LOWER, out);
  }
  if (!strcmp(name, "title")) {
    NO_ARGS("str.title()", a);
    return atlas_jinja_change_case("str.title()", s, n, CASE_TITLE_PY, out);
  }
  if (!strcmp(name, "capitalize")) {
    NO_ARGS("str.capitalize()", a);
    return atlas_jinja_change_case("str.capitalize()", s, n, CASE_CAPITALIZE,
                                   out);
  }
  if (!strcmp(name, "startswith"))
    return affix("str.startswith()", self, a, false, out);
  if (!strcmp(name, "endswith"))
    return affix("str.endswith()", self, a, true, out);
  if (!strcmp(name, "split")) {
    CHECK_ARGS("str.split()", a, "sep", "maxsplit");
    const jv *sep = atlas_jinja_arg(a, 0, "sep"),
             *mx = atlas_jinja_arg(a, 1, "maxsplit");
    const char *x = NULL;
    size_t nx = 0;
    long long maxsplit = -1;
    if (sep && !(sep->kind == JV_DATA && json_is_null(sep->json))) {
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str("str.split()", sep, &x, &nx));
      if (nx == 0) return atlas_jinja_err("str.split(): empty separator");
    }
    if (mx)
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int("str.split()", mx, &maxsplit));
    return py_split(s, n, x, nx, maxsplit, out);
  }
  if (!strcmp(name, "replace")) {
    CHECK_ARGS("str.replace()", a, "old", "new", "count");
    const char *o = "", *w = "";
    size_t no = 0, nw = 0;
    long long count = -1;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(
        "str.replace()", atlas_jinja_arg(a, 0, "old"), &o, &no));
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(
        "str.replace()", atlas_jinja_arg(a, 1, "new"), &w, &nw));
    if (atlas_jinja_arg(a, 2, "count"))
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int(
          "str.replace()", atlas_jinja_arg(a, 2, "count"), &count));
    return atlas_jinja_py_replace(s, n, o, no, w, nw, count, out);
  }
  if (!strcmp(name, "find") || !strcmp(name, "count")) {
    CHECK_ARGS(name, a, "sub");
    const char *x = "";
    size_t nx = 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_jinja_want_str(name, atlas_jinja_arg(a, 0, "sub"), &x, &nx));
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
    const jv *it = atlas_jinja_arg(a, 0, "iterable");
    if (!it) return atlas_jinja_err("str.join() needs an iterable");
    json_t *items = NULL;
    ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, *it, "str.join()", &items));
    jinja_buf b = {0};
    for (size_t i = 0; i < json_array_size(items); ++i) {
      json_t *e = json_array_get(items, i);
      if (!json_is_string(e)) {
        json_decref(items);
        atlas_jinja_buf_free(&b);
        return atlas_jinja_err(
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
    if (!atlas_jinja_is_ascii(s, n))
      return atlas_jinja_err("str.%s() of non-ASCII text is not supported",
                             name);
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
    return atlas_jinja_err("construct 'str.format()' is not supported");
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
atlas_status atlas_jinja_dict_items(jinja_ctx *ctx, json_t *o, int what,
                                    jv_seq seq, jv *out) {
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
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(
      ctx, atlas_jinja_walk_cost(obj) + atlas_jinja_args_cost(a)));
  if (obj.kind == JV_LOOP) {
    if (!strcmp(name, "cycle")) {
      if (a->n_pos == 0)
        return atlas_jinja_err("loop.cycle() needs at least one value");
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
      return atlas_jinja_dict_items(ctx, obj.json,
                                    name[0] == 'i'   ? 0
                                    : name[0] == 'k' ? 1
                                                     : 2,
                                    JV_SEQ_VIEW, out);
    }
    if (!strcmp(name, "get")) {
      CHECK_ARGS("dict.get()", a, "key", "default");
      const jv *k = atlas_jinja_arg(a, 0, "key"),
               *d = atlas_jinja_arg(a, 1, "default");
      if (!k) return atlas_jinja_err("dict.get() needs a key");
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
      return atlas_jinja_err(
          "dict.%s() is not allowed: the template sandbox is immutable", name);
  }
  *found = false;
  return ATLAS_OK;
}

// ---- tests ----
