#define _GNU_SOURCE  // memmem, strncasecmp, localtime_r (glibc extensions)
// Jinja filters: `x | name(args)`.
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
        return atlas_jinja_err(
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
        return atlas_jinja_err(
            "'%s object' has no attribute '%.*s' (attribute path '%s')", type,
            (int)n, p, path);
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
      return atlas_jinja_err("%s needs an attribute name", name);
    }
    atlas_status st = atlas_jinja_want_str(name, &a->pos[0], &attr, &n);
    if (st != ATLAS_OK) {
      json_decref(items);
      return st;
    }
    first = 1;
  }
  if (a->n_kw) {
    json_decref(items);
    return atlas_jinja_err("%s: keyword arguments are not supported", name);
  }
  const char *test = NULL;
  size_t tn = 0;
  if (a->n_pos > first) {
    atlas_status st = atlas_jinja_want_str(name, &a->pos[first], &test, &tn);
    if (st == ATLAS_OK && !atlas_jinja_test_known(test))
      st = atlas_jinja_err("%s: test '%s' is not supported", name, test);
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
  const jv *attr = atlas_jinja_arg(a, 99, "attribute");
  const jv *deflt = atlas_jinja_arg(a, 99, "default");
  // Jinja's map takes default=None as no default (an item lacking the
  // attribute is then Undefined, which Atlas refuses below).
  if (deflt && deflt->kind == JV_DATA && json_is_null(deflt->json))
    deflt = NULL;
  json_t *res = json_array();
  atlas_status st = res ? ATLAS_OK : oom();
  if (attr) {
    const char *path = "";
    size_t n = 0;
    if (st == ATLAS_OK) st = atlas_jinja_want_str("map", attr, &path, &n);
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      jv x;
      st = attr_path(json_array_get(items, i), path,
                     deflt && deflt->kind == JV_DATA ? deflt->json : NULL, &x);
      if (st != ATLAS_OK) break;
      if (x.kind == JV_UNDEFINED && deflt) x = atlas_jv_copy(*deflt);
      if (x.kind != JV_DATA) {
        st = atlas_jinja_err("map: item %zu has no attribute '%s'", i, path);
      } else if (json_array_append(res, x.json) != 0) {
        st = oom();
      }
      atlas_jv_free(&x);
    }
  } else {
    const char *f = "";
    size_t n = 0;
    if (st == ATLAS_OK && a->n_pos < 1)
      st = atlas_jinja_err("map needs a filter name or attribute=");
    if (st == ATLAS_OK) st = atlas_jinja_want_str("map", &a->pos[0], &f, &n);
    if (st == ATLAS_OK && !atlas_jinja_filter_known(f))
      st = atlas_jinja_err("map: filter '%s' is not supported", f);
    // Without arguments pos is NULL (and the loop below never runs).
    jinja_args fargs = {a->n_pos > 0 ? a->pos + 1 : NULL,
                        a->n_pos > 0 ? a->n_pos - 1 : 0, a->kw_names, a->kw,
                        a->n_kw};
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      jv x = atlas_jv_undefined(NULL);
      st = atlas_jinja_filter(ctx, f, atlas_jv_data(json_array_get(items, i)),
                              &fargs, &x);
      if (st == ATLAS_OK) {
        if (x.kind != JV_DATA) {
          st = atlas_jinja_err("map: filter '%s' gave a %s", f,
                               atlas_jv_type_name(x));
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
  const jv *ea = atlas_jinja_arg(a, 0, "ensure_ascii"),
           *ind = atlas_jinja_arg(a, 1, "indent"),
           *sep = atlas_jinja_arg(a, 2, "separators"),
           *sk = atlas_jinja_arg(a, 3, "sort_keys");
  int indent = -1;
  const char *indent_str = NULL;
  if (ind && !(ind->kind == JV_DATA && json_is_null(ind->json))) {
    if (atlas_jv_is_string(*ind)) {
      indent = 0;
      indent_str = json_string_value(ind->json);
    } else {
      long long w;
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int("tojson indent", ind, &w));
      if (w > 63) return atlas_jinja_err("tojson: indent %lld is too large", w);
      indent = w < 0 ? 0 : (int)w;
    }
  }
  const char *item_sep = NULL, *key_sep = NULL;
  if (sep && !(sep->kind == JV_DATA && json_is_null(sep->json))) {
    if (!(sep->kind == JV_DATA && json_is_array(sep->json) &&
          json_array_size(sep->json) == 2 &&
          json_is_string(json_array_get(sep->json, 0)) &&
          json_is_string(json_array_get(sep->json, 1)))) {
      return atlas_jinja_err("tojson: separators must be a pair of strings");
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

// join(d, attribute): the items' text between copies of d.
static atlas_status join_filter(jinja_ctx *ctx, const char *name, jv v,
                                const jinja_args *a, jv *out) {
  CHECK_ARGS(name, a, "d", "attribute");
  const jv *sep = atlas_jinja_arg(a, 0, "d"),
           *attr = atlas_jinja_arg(a, 1, "attribute");
  const char *s = "";
  size_t ns = 0;
  if (sep) ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str("join", sep, &s, &ns));
  const char *path = NULL;
  size_t np = 0;
  if (attr)
    ATLAS_RETURN_IF_ERROR(
        atlas_jinja_want_str("join attribute", attr, &path, &np));
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
    if (st == ATLAS_OK) st = atlas_jinja_str_of(ctx, x, &b);
    atlas_jv_free(&x);
  }
  json_decref(items);
  if (st != ATLAS_OK) {
    atlas_jinja_buf_free(&b);
    return st;
  }
  return atlas_jv_string_of_buf(&b, out);
}

// unique: the first of each run of equal items (strings compared
// case-insensitively), as Jinja2 keeps them in a set.
static atlas_status unique_filter(jinja_ctx *ctx, const char *name, jv v,
                                  const jinja_args *a, jv *out) {
  CHECK_ARGS(name, a, "case_sensitive", "attribute");
  if (a->n_pos || a->n_kw)
    return atlas_jinja_err("unique: arguments are not supported");
  json_t *items;
  ATLAS_RETURN_IF_ERROR(atlas_jinja_iterate(ctx, v, name, &items));
  json_t *r = json_array();
  atlas_status st = r ? ATLAS_OK : oom();
  for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
    json_t *x = json_array_get(items, i);
    // Jinja2 keeps the items it saw in a set: lists and dicts are
    // unhashable there.
    if (json_is_array(x) || json_is_object(x)) {
      st = atlas_jinja_err("unique: unhashable type: '%s'",
                           atlas_jv_type_name(atlas_jv_data(x)));
      break;
    }
    // Each item is compared with those kept so far.
    st = atlas_jinja_spend(ctx, 1 + json_array_size(r));
    if (st != ATLAS_OK) break;
    if (json_is_string(x) &&
        !atlas_jinja_is_ascii(json_string_value(x), json_string_length(x))) {
      st = atlas_jinja_err(
          "unique of non-ASCII strings is not supported (it compares "
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

// Filters of lists, dicts and other sequences. *found is false when `name` is
// none of them.
static atlas_status sequence_filter(jinja_ctx *ctx, const char *name, jv v,
                                    const jinja_args *a, jv *out, bool *found) {
  *found = true;
  if (!strcmp(name, "length") || !strcmp(name, "count")) {
    NO_ARGS(name, a);
    long long n;
    if (v.kind == JV_DATA && v.seq == JV_SEQ_GENERATOR) {
      return atlas_jinja_err("object of type 'generator' has no len()");
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
      return atlas_jinja_err("object of type '%s' has no len()",
                             atlas_jv_type_name(v));
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
      return atlas_jinja_err("items: expected a dict, got '%s'",
                             atlas_jv_type_name(v));
    return atlas_jinja_dict_items(ctx, v.json, 0, JV_SEQ_GENERATOR, out);
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
      return atlas_jinja_err("last: 'generator' object is not reversible");
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
    return join_filter(ctx, name, v, a, out);
  }
  if (!strcmp(name, "map")) return map_filter(ctx, v, a, out);
  if (!strcmp(name, "select") || !strcmp(name, "reject") ||
      !strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) {
    return select_filter(ctx, name, v, a, out);
  }
  if (!strcmp(name, "unique")) {
    return unique_filter(ctx, name, v, a, out);
  }
  *found = false;
  return ATLAS_OK;
}

// Filters of strings. *found is false when `name` is none of them.
static atlas_status text_filter(jinja_ctx *ctx, const char *name, jv v,
                                const jinja_args *a, jv *out, bool *found) {
  *found = true;
  if (!strcmp(name, "trim")) {
    CHECK_ARGS(name, a, "chars");
    jinja_buf b = {0};
    atlas_status st = atlas_jinja_str_of(ctx, v, &b);
    const jv *c = atlas_jinja_arg(a, 0, "chars");
    const char *chars = NULL;
    size_t nc = 0;
    if (st == ATLAS_OK && c && !(c->kind == JV_DATA && json_is_null(c->json)))
      st = atlas_jinja_want_str("trim", c, &chars, &nc);
    if (st == ATLAS_OK)
      st = atlas_jinja_py_strip(b.data ? b.data : "", b.len, chars, nc, true,
                                true, out);
    atlas_jinja_buf_free(&b);
    return st;
  }
  if (!strcmp(name, "upper") || !strcmp(name, "lower") ||
      !strcmp(name, "capitalize") || !strcmp(name, "title")) {
    NO_ARGS(name, a);
    jinja_buf b = {0};
    atlas_status st = atlas_jinja_str_of(ctx, v, &b);
    if (st == ATLAS_OK) {
      case_kind k = name[0] == 'u'   ? CASE_UPPER
                    : name[0] == 'l' ? CASE_LOWER
                    : name[0] == 'c' ? CASE_CAPITALIZE
                                     : CASE_TITLE_JINJA;
      st = atlas_jinja_change_case(name, b.data ? b.data : "", b.len, k, out);
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
    atlas_status st = atlas_jinja_str_of(ctx, v, &b);
    if (st == ATLAS_OK)
      st = atlas_jinja_want_str("replace", atlas_jinja_arg(a, 0, "old"), &o,
                                &no);
    if (st == ATLAS_OK)
      st = atlas_jinja_want_str("replace", atlas_jinja_arg(a, 1, "new"), &w,
                                &nw);
    if (st == ATLAS_OK && atlas_jinja_arg(a, 2, "count"))
      st = atlas_jinja_want_int("replace", atlas_jinja_arg(a, 2, "count"),
                                &count);
    if (st == ATLAS_OK)
      st = atlas_jinja_py_replace(b.data ? b.data : "", b.len, o, no, w, nw,
                                  count, out);
    atlas_jinja_buf_free(&b);
    return st;
  }
  if (!strcmp(name, "wordcount")) {
    NO_ARGS(name, a);
    jinja_buf b = {0};
    atlas_status st = atlas_jinja_str_of(ctx, v, &b);
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
    const jv *w = atlas_jinja_arg(a, 0, "width");
    if (w) ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int("indent", w, &width));
    const bool first = atlas_jinja_arg(a, 1, "first") &&
                       atlas_jv_truthy(*atlas_jinja_arg(a, 1, "first"));
    const bool blank = atlas_jinja_arg(a, 2, "blank") &&
                       atlas_jv_truthy(*atlas_jinja_arg(a, 2, "blank"));
    jinja_buf s = {0};
    atlas_status st = atlas_jinja_str_of(ctx, v, &s);
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
      return atlas_jinja_err(
          "indent: a width of %lld on %zu lines is too large", width, lines);
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
  *found = false;
  return ATLAS_OK;
}

atlas_status atlas_jinja_filter(jinja_ctx *ctx, const char *name, jv v,
                                const jinja_args *a, jv *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(
      ctx, atlas_jinja_walk_cost(v) + atlas_jinja_args_cost(a)));
  if (!strcmp(name, "default") || !strcmp(name, "d")) {
    CHECK_ARGS(name, a, "default_value", "boolean");
    const jv *d = atlas_jinja_arg(a, 0, "default_value"),
             *b = atlas_jinja_arg(a, 1, "boolean");
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
    atlas_status st = atlas_jinja_str_of(ctx, v, &b);
    if (st != ATLAS_OK) {
      atlas_jinja_buf_free(&b);
      return st;
    }
    return atlas_jv_string_of_buf(&b, out);
  }
  if (!strcmp(name, "tojson")) return tojson_filter(v, a, out);
  bool found = false;
  ATLAS_RETURN_IF_ERROR(sequence_filter(ctx, name, v, a, out, &found));
  if (!found)
    ATLAS_RETURN_IF_ERROR(atlas_jinja_number_filter(name, v, a, out, &found));
  if (!found) ATLAS_RETURN_IF_ERROR(text_filter(ctx, name, v, a, out, &found));
  if (found) return ATLAS_OK;
  return atlas_jinja_err("filter '%s' is not supported", name);
}
