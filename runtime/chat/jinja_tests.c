#define _GNU_SOURCE  // memmem, strncasecmp, localtime_r (glibc extensions)
// Jinja tests: `x is name(args)`.
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

atlas_status atlas_jinja_test(jinja_ctx *ctx, const char *name, jv v,
                              const jinja_args *a, bool *out) {
  ATLAS_RETURN_IF_ERROR(atlas_jinja_spend(
      ctx, atlas_jinja_walk_cost(v) + atlas_jinja_args_cost(a)));
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
    if (!atlas_jv_is_string(v))
      return atlas_jinja_err("test '%s' expects a string", name);
    const char *s = json_string_value(j);
    size_t n = json_string_length(j);
    if (!atlas_jinja_is_ascii(s, n))
      return atlas_jinja_err("test '%s' of non-ASCII text is not supported",
                             name);
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
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int(name, &v, &x));
    if (name[0] == 'd') {
      ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int(
          "divisibleby", atlas_jinja_arg(a, 0, "num"), &d));
      if (d == 0) return atlas_jinja_err("divisibleby 0");
      *out = x % d == 0;
    } else {
      *out = (x % 2 != 0) == (name[0] == 'o');
    }
  } else if (!strcmp(name, "sameas")) {
    const jv *o = atlas_jinja_arg(a, 0, "other");
    if (!o) return atlas_jinja_err("test 'sameas' needs a value");
    // Identity is only meaningful for the singletons None, True and False.
    if (!(data && (json_is_null(j) || json_is_boolean(j))) &&
        !(o->kind == JV_DATA &&
          (json_is_null(o->json) || json_is_boolean(o->json)))) {
      return atlas_jinja_err(
          "test 'sameas' is only supported against none, true or false");
    }
    *out = data && o->kind == JV_DATA && json_typeof(j) == json_typeof(o->json);
  } else {
    // Comparisons and membership.
    const jv *o = atlas_jinja_arg(a, 0, "other");
    if (!o)
      return atlas_jinja_err("test '%s' needs a value to compare with", name);
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
        return atlas_jinja_err("test 'in' needs a string, list or dict");
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
      return atlas_jinja_err("test '%s' is not supported", name);
  }
  return ATLAS_OK;
}

// ---- filters ----
