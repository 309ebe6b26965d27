#define _GNU_SOURCE  // memmem, strncasecmp, localtime_r (glibc extensions)
// Jinja filters of numbers: int, float, abs, round.
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
      return atlas_jinja_err("%s: non-ASCII text is not supported", filter);
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
    return atlas_jinja_err("int: %.17g does not fit in a 64-bit integer", f);
  }
  *out = atlas_jv_data(json_integer((long long)f));
  return ATLAS_OK;
}

// Jinja's int: int(value), else int(float(value)), else the default.
static atlas_status int_filter(jv v, const jinja_args *a, jv *out) {
  CHECK_ARGS("int", a, "default", "base");
  const jv *d = atlas_jinja_arg(a, 0, "default");
  if (atlas_jinja_arg(a, 1, "base"))
    return atlas_jinja_err("int: base= is not supported");
  if (atlas_jv_is_int(v)) {
    *out = atlas_jv_data(json_integer(json_is_boolean(v.json)
                                          ? json_is_true(v.json)
                                          : json_integer_value(v.json)));
    return ATLAS_OK;
  }
  if (v.kind == JV_DATA && json_is_real(v.json)) {
    double f = json_real_value(v.json);
    if (isinf(f))
      return atlas_jinja_err("int: cannot convert float infinity to integer");
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
      st =
          errno == ERANGE
              ? atlas_jinja_err("int: '%s' does not fit in a 64-bit integer", s)
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
  if (atlas_jinja_arg(a, 0, "precision"))
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_int(
        "round", atlas_jinja_arg(a, 0, "precision"), &prec));
  const char *method = "common";
  size_t method_len = 6;
  if (atlas_jinja_arg(a, 1, "method"))
    ATLAS_RETURN_IF_ERROR(atlas_jinja_want_str(
        "round", atlas_jinja_arg(a, 1, "method"), &method, &method_len));
  bool common = !strcmp(method, "common"), up = !strcmp(method, "ceil");
  if (!common && !up && strcmp(method, "floor") != 0) {
    return atlas_jinja_err(
        "round: method must be common, ceil or floor, not '%s'", method);
  }
  if (!atlas_jv_is_number(v)) return atlas_jinja_err("round: expects a number");
  if (prec < -22 || prec > 22)
    return atlas_jinja_err("round: precision %lld is outside -22..22", prec);
  if (common && atlas_jv_is_int(v)) {
    long long x = json_is_boolean(v.json) ? json_is_true(v.json)
                                          : json_integer_value(v.json);
    if (prec < 0) {
      if (prec < -18)
        return atlas_jinja_err(
            "round: precision %lld of an integer is not supported", prec);
      long long m = 1;
      for (long long i = 0; i < -prec; i++) m *= 10;
      long long q = x / m, r = x % m;  // C truncates: r has x's sign
      if (r < 0) {
        q -= 1;
        r += m;
      }
      if (2 * r > m || (2 * r == m && (q & 1))) q += 1;
      if (__builtin_mul_overflow(q, m, &x))
        return atlas_jinja_err("round: the result does not fit in 64 bits");
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
      return atlas_jinja_err("round: %.17g scaled by 10**%lld is not finite", x,
                             prec);
    *out = atlas_jv_data(json_real(y));
    return ATLAS_OK;
  }
  if (prec < 0)
    return atlas_jinja_err(
        "round: a negative precision of a float is not supported");
  // x is finite: no value holds inf or nan (every site that makes one
  // refuses them), and %.22f of DBL_MAX takes 332 characters.
  char buf[400];
  snprintf(buf, sizeof(buf), "%.*f", (int)prec, x);
  *out = atlas_jv_data(json_real(strtod(buf, NULL)));
  return ATLAS_OK;
}

// Filters of numbers. *found is false when `name` is none of them.
atlas_status atlas_jinja_number_filter(const char *name, jv v,
                                       const jinja_args *a, jv *out,
                                       bool *found) {
  *found = true;
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
                              : atlas_jinja_err(
                                    "float: '%s' is not a finite number, which "
                                    "Atlas's numbers cannot hold",
                                    text);
        if (st == ATLAS_OK) *out = atlas_jv_data(json_real(f));
        free(text);
        return st;
      }
      free(text);
    }
    const jv *d = atlas_jinja_arg(a, 0, "default");
    *out = d ? atlas_jv_copy(*d) : atlas_jv_data(json_real(0.0));
    return ATLAS_OK;
  }
  if (!strcmp(name, "abs")) {
    NO_ARGS(name, a);
    if (!atlas_jv_is_number(v))
      return atlas_jinja_err("abs: bad operand type '%s'",
                             atlas_jv_type_name(v));
    if (atlas_jv_is_int(v)) {
      long long x = json_is_boolean(v.json) ? json_is_true(v.json)
                                            : json_integer_value(v.json);
      if (x == LLONG_MIN)
        return atlas_jinja_err("abs: integer arithmetic overflows 64 bits");
      *out = atlas_jv_data(json_integer(x < 0 ? -x : x));
    } else {
      *out = atlas_jv_data(json_real(fabs(json_real_value(v.json))));
    }
    return ATLAS_OK;
  }
  if (!strcmp(name, "round")) return round_filter(v, a, out);
  *found = false;
  return ATLAS_OK;
}
