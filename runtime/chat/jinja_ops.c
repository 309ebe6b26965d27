#define _GNU_SOURCE  // memmem (glibc extensions)
// The renderer's operators on values: see jinja_ops.h.
#include "atlas/runtime/chat/jinja_ops.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_builtins.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_text.h"

static atlas_status at(const jinja_node *n, atlas_status st) {
  return atlas_jinja_error_annotate(st, n->line, n->col);
}

// An error at node n.
#define fail(n, ...) atlas_jinja_error_at((n)->line, (n)->col, __VA_ARGS__)

static atlas_status oom(void) { return atlas_jinja_oom("rendering"); }

static atlas_status undefined_error(const jinja_node *n, jv v) {
  return fail(n, "'%s' is undefined", v.name ? v.name : "value");
}

atlas_status atlas_jinja_to_json_element(const jinja_node *n, jv v,
                                         json_t **out) {
  if (v.kind != JV_DATA || v.seq != JV_SEQ_LIST) {
    return fail(n, "putting a %s value into a list or dict is not supported",
                atlas_jv_type_name(v));
  }
  *out = v.json;
  return ATLAS_OK;
}

atlas_status atlas_jinja_get_item(const jinja_node *n, jv obj, jv key,
                                  jv *out) {
  if (obj.kind == JV_UNDEFINED) return undefined_error(n, obj);
  if (obj.kind == JV_NAMESPACE || obj.kind == JV_LOOP) {
    if (atlas_jv_is_string(key)) {
      const char *python = NULL;
      *out = atlas_jinja_get_attr(obj, json_string_value(key.json), &python);
      return ATLAS_OK;
    }
    *out = atlas_jv_undefined("item");
    return ATLAS_OK;
  }
  if (obj.kind != JV_DATA) {
    *out = atlas_jv_undefined("item");
    return ATLAS_OK;
  }
  if (obj.seq == JV_SEQ_GENERATOR || obj.seq == JV_SEQ_VIEW) {
    return fail(n, "'%s' object is not subscriptable", atlas_jv_type_name(obj));
  }
  json_t *o = obj.json;
  if (json_is_object(o)) {
    if (!atlas_jv_is_string(key)) {
      *out = atlas_jv_undefined("item");
      return ATLAS_OK;
    }
    json_t *v = json_object_getn(o, json_string_value(key.json),
                                 json_string_length(key.json));
    if (v) {
      *out = atlas_jv_data(json_incref(v));
    } else if (atlas_jinja_python_attribute(o, json_string_value(key.json)) !=
               NULL) {
      return fail(n,
                  "d['%s'] of a dict without that key is its method in Jinja; "
                  "not supported",
                  json_string_value(key.json));
    } else {
      *out = atlas_jv_undefined(json_string_value(key.json));
    }
    return ATLAS_OK;
  }
  if ((json_is_array(o) || json_is_string(o)) && atlas_jv_is_int(key)) {
    long long i = json_is_boolean(key.json) ? json_is_true(key.json)
                                            : json_integer_value(key.json);
    if (json_is_array(o)) {
      long long len = (long long)json_array_size(o);
      if (i < 0) i += len;
      if (i < 0 || i >= len) {
        *out = atlas_jv_undefined("list index out of range");
        return ATLAS_OK;
      }
      *out = atlas_jv_data(json_incref(json_array_get(o, (size_t)i)));
      return ATLAS_OK;
    }
    const char *s = json_string_value(o);
    size_t bytes = json_string_length(o);
    long long len = (long long)atlas_jinja_utf8_length(s, bytes);
    if (i < 0) i += len;
    if (i < 0 || i >= len) {
      *out = atlas_jv_undefined("string index out of range");
      return ATLAS_OK;
    }
    size_t b = atlas_jinja_utf8_offset(s, bytes, (size_t)i), e = b;
    atlas_jinja_utf8_next(s, bytes, &e);
    *out = atlas_jv_string(s + b, e - b);
    return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
  }
  // x['upper'] of a string is its bound method in Jinja (a subscript falls
  // back to the attribute), (1)['real'] the number.
  const char *python =
      atlas_jv_is_string(key)
          ? atlas_jinja_python_attribute(o, json_string_value(key.json))
          : NULL;
  if (python != NULL) {
    const char *type = atlas_jv_type_name(obj);
    return fail(n, "['%s'] of %s %s is its %s in Jinja; not supported",
                json_string_value(key.json), atlas_jv_type_article(type), type,
                python);
  }
  *out = atlas_jv_undefined("item");
  return ATLAS_OK;
}

static atlas_status slice_bound(const jinja_node *n, jv v, long long *out,
                                bool *given) {
  *given = false;
  if (v.kind == JV_DATA && json_is_null(v.json)) return ATLAS_OK;
  if (v.kind == JV_UNDEFINED && v.name == NULL) return ATLAS_OK;
  if (!atlas_jv_is_int(v))
    return fail(n, "slice indices must be integers, not '%s'",
                atlas_jv_type_name(v));
  *out = json_is_boolean(v.json) ? json_is_true(v.json)
                                 : json_integer_value(v.json);
  *given = true;
  return ATLAS_OK;
}

// Python's slice.indices + iteration, over a list or a str.
atlas_status atlas_jinja_slice(jinja_ctx *ctx, const jinja_node *n, jv obj,
                               jv *out) {
  jv parts[3] = {{JV_UNDEFINED, NULL, NULL, NULL, JV_SEQ_LIST},
                 {JV_UNDEFINED, NULL, NULL, NULL, JV_SEQ_LIST},
                 {JV_UNDEFINED, NULL, NULL, NULL, JV_SEQ_LIST}};
  const jinja_node *nodes[3] = {n->b, n->c, n->d};
  long long v[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  atlas_status st = ATLAS_OK;
  for (int i = 0; i < 3 && st == ATLAS_OK; ++i) {
    if (nodes[i]) st = atlas_jinja_eval(ctx, nodes[i], &parts[i]);
    if (st == ATLAS_OK && nodes[i])
      st = slice_bound(n, parts[i], &v[i], &given[i]);
  }
  for (int i = 0; i < 3; ++i) atlas_jv_free(&parts[i]);
  ATLAS_RETURN_IF_ERROR(st);
  if (obj.kind == JV_UNDEFINED) return undefined_error(n, obj);
  bool is_str = atlas_jv_is_string(obj);
  if (obj.seq == JV_SEQ_GENERATOR || obj.seq == JV_SEQ_VIEW) {
    return fail(n, "'%s' object is not subscriptable", atlas_jv_type_name(obj));
  }
  if (!(obj.kind == JV_DATA && (is_str || json_is_array(obj.json)))) {
    return fail(n, "slicing a '%s' is not supported", atlas_jv_type_name(obj));
  }
  long long step = given[2] ? v[2] : 1;
  if (step == 0) return fail(n, "slice step cannot be zero");
  const char *s = is_str ? json_string_value(obj.json) : NULL;
  size_t bytes = is_str ? json_string_length(obj.json) : 0;
  long long len = is_str ? (long long)atlas_jinja_utf8_length(s, bytes)
                         : (long long)json_array_size(obj.json);
  // Python's slice.indices: a bound past either end is clamped to it
  // (compared before adding len, which could overflow near INT64_MIN).
  long long start, stop;
  if (step > 0) {
    start = given[0] ? v[0] : 0;
    stop = given[1] ? v[1] : len;
    if (start < 0) start = start < -len ? 0 : start + len;
    if (start > len) start = len;
    if (stop < 0) stop = stop < -len ? 0 : stop + len;
    if (stop > len) stop = len;
  } else {
    start = given[0] ? v[0] : len - 1;
    if (start < 0) start = start < -len ? -1 : start + len;
    if (start >= len) start = len - 1;
    stop = -1;  // "before the first" unless given
    if (given[1]) {
      stop = v[1];
      if (stop < 0) stop = stop < -len ? -1 : stop + len;
      if (stop >= len) stop = len - 1;
    }
  }
  // How many items, without stepping past the bounds: a huge step ends the
  // slice after one item instead of overflowing start + step.
  long long count = 0;
  if (step > 0 && start < stop) {
    count = (stop - start - 1) / step + 1;
  } else if (step < 0 && start > stop) {
    unsigned long long stride = step == LLONG_MIN
                                    ? (unsigned long long)LLONG_MAX + 1
                                    : (unsigned long long)-step;
    count = (long long)((unsigned long long)(start - stop - 1) / stride + 1);
  }
  ATLAS_RETURN_IF_ERROR(at(n, atlas_jinja_spend(ctx, (uint64_t)count)));
  if (is_str) {
    // Code point offsets, then the pieces in slice order.
    size_t *offs = malloc(((size_t)len + 1) * sizeof(size_t));
    if (!offs) return oom();
    size_t at_byte = 0;
    for (long long k = 0; k < len; ++k) {
      offs[k] = at_byte;
      atlas_jinja_utf8_next(s, bytes, &at_byte);
    }
    offs[len] = bytes;
    jinja_buf b = {0};
    for (long long i = 0; i < count; ++i) {
      long long k =
          (long long)((atlas_jinja_i128)start + (atlas_jinja_i128)i * step);
      if (k < 0 || k >= len)
        break;  // cannot happen: start/stop are clamped above
      atlas_jinja_buf_append(&b, s + offs[k], offs[k + 1] - offs[k]);
    }
    free(offs);
    return atlas_jv_string_of_buf(&b, out);
  }
  json_t *arr = json_array();
  if (!arr) return oom();
  for (long long i = 0; i < count; ++i) {
    long long k =
        (long long)((atlas_jinja_i128)start + (atlas_jinja_i128)i * step);
    if (json_array_append(arr, json_array_get(obj.json, (size_t)k)) != 0) {
      json_decref(arr);
      return oom();
    }
  }
  *out = atlas_jv_data(arr);
  out->seq = obj.seq;  // a slice of a range is a range
  return ATLAS_OK;
}

static jv loop_attr(const jinja_loop *l, const char *name) {
  long long i0 = (long long)l->index0, len = (long long)l->length;
  if (!strcmp(name, "index")) return atlas_jv_data(json_integer(i0 + 1));
  if (!strcmp(name, "index0")) return atlas_jv_data(json_integer(i0));
  if (!strcmp(name, "revindex")) return atlas_jv_data(json_integer(len - i0));
  if (!strcmp(name, "revindex0"))
    return atlas_jv_data(json_integer(len - i0 - 1));
  if (!strcmp(name, "first")) return atlas_jv_data(json_boolean(i0 == 0));
  if (!strcmp(name, "last")) return atlas_jv_data(json_boolean(i0 == len - 1));
  if (!strcmp(name, "length")) return atlas_jv_data(json_integer(len));
  if (!strcmp(name, "depth")) return atlas_jv_data(json_integer(l->depth0 + 1));
  if (!strcmp(name, "depth0")) return atlas_jv_data(json_integer(l->depth0));
  if (!strcmp(name, "previtem")) {
    if (i0 == 0) return atlas_jv_undefined("there is no previous item");
    return atlas_jv_data(json_incref(json_array_get(l->items, (size_t)i0 - 1)));
  }
  if (!strcmp(name, "nextitem")) {
    if (i0 + 1 >= len) return atlas_jv_undefined("there is no next item");
    return atlas_jv_data(json_incref(json_array_get(l->items, (size_t)i0 + 1)));
  }
  return atlas_jv_undefined(name);
}

// obj.name outside a call. *python: what Jinja would return instead of a
// value of the data ("method": a bound method; atlas_jinja_python_attribute),
// or NULL.
jv atlas_jinja_get_attr(jv obj, const char *name, const char **python) {
  *python = NULL;
  if (obj.kind == JV_LOOP) return loop_attr(obj.ptr, name);
  if (obj.kind == JV_NAMESPACE) {
    json_t *v = json_object_get(obj.json, name);
    return v ? atlas_jv_data(json_incref(v)) : atlas_jv_undefined(name);
  }
  if (obj.kind != JV_DATA) return atlas_jv_undefined(name);
  if (json_is_object(obj.json)) {
    if (atlas_jinja_is_dict_method(name)) {
      // An attribute comes before a key in Jinja: a bound method, or (the
      // mutating ones) the sandbox's undefined.
      *python = atlas_jinja_python_attribute(obj.json, name);
      return atlas_jv_undefined(name);
    }
    json_t *v = json_object_get(obj.json, name);
    return v ? atlas_jv_data(json_incref(v)) : atlas_jv_undefined(name);
  }
  *python = atlas_jinja_python_attribute(obj.json, name);
  return atlas_jv_undefined(name);
}

static atlas_status arith_error(const jinja_node *n, char op, jv a, jv b) {
  const char *ops = op == 'F' ? "//" : op == 'P' ? "**" : NULL;
  char o[2] = {op, 0};
  return fail(n, "unsupported operand types for %s: '%s' and '%s'",
              ops ? ops : o, atlas_jv_type_name(a), atlas_jv_type_name(b));
}

long long atlas_jinja_as_ll(json_t *j) {
  return json_is_boolean(j) ? json_is_true(j) : json_integer_value(j);
}
static double as_d(json_t *j) {
  return json_is_boolean(j) ? json_is_true(j) : json_number_value(j);
}

static atlas_status repeat(const jinja_node *n, jv seq, long long times,
                           jv *out) {
  if (times < 0) times = 0;
  if (json_is_string(seq.json)) {
    size_t len = json_string_length(seq.json);
    if (len && (unsigned long long)times > JINJA_MAX_BUILT_TEXT / len)
      return fail(n, "string repetition too large");
    if (len == 0) times = 0;  // '' * 10**12 is '' at once (a loop took hours)
    jinja_buf b = {0};
    atlas_jinja_buf_append_repeated(&b, json_string_value(seq.json), len,
                                    (size_t)times);
    return atlas_jv_string_of_buf(&b, out);
  }
  json_t *arr = json_array();
  if (!arr) return oom();
  // The items it would hold, not the count: [x] * 777777 * 5555 passed a cap
  // on the count and asked for 4.3e9 items (the chat_template fuzzer).
  const size_t items = json_array_size(seq.json);
  if (items && (unsigned long long)times > JINJA_MAX_BUILT_ITEMS / items) {
    json_decref(arr);
    return fail(n, "list repetition too large");
  }
  if (json_array_size(seq.json) == 0) times = 0;
  for (long long i = 0; i < times; ++i) {
    if (json_array_extend(arr, seq.json) != 0) {
      json_decref(arr);
      return oom();
    }
  }
  *out = atlas_jv_data(arr);
  return ATLAS_OK;
}

atlas_status atlas_jinja_binary_op(jinja_ctx *ctx, const jinja_node *n, char op,
                                   jv a, jv b, jv *out) {
  if (op == '~') {
    jinja_buf buf = {0};
    atlas_status st = atlas_jinja_str(ctx, a, &buf);
    if (st == ATLAS_OK) st = atlas_jinja_str(ctx, b, &buf);
    if (st != ATLAS_OK) {
      atlas_jinja_buf_free(&buf);
      return at(n, st);
    }
    return at(n, atlas_jv_string_of_buf(&buf, out));
  }
  if (a.kind == JV_UNDEFINED) return undefined_error(n, a);
  if (b.kind == JV_UNDEFINED) return undefined_error(n, b);
  if (a.kind != JV_DATA || b.kind != JV_DATA || a.seq || b.seq)
    return arith_error(n, op, a, b);
  json_t *x = a.json, *y = b.json;
  if (op == '+') {
    if (json_is_string(x) && json_is_string(y)) {
      size_t lx = json_string_length(x), ly = json_string_length(y);
      if (lx + ly > JINJA_MAX_BUILT_TEXT)
        return fail(n, "string concatenation too large");
      char *s = malloc(lx + ly + 1);
      if (!s) return oom();
      memcpy(s, json_string_value(x), lx);
      memcpy(s + lx, json_string_value(y), ly);
      *out = atlas_jv_string(s, lx + ly);
      free(s);
      return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
    }
    if (json_is_array(x) && json_is_array(y)) {
      if (json_array_size(x) + json_array_size(y) > JINJA_MAX_BUILT_ITEMS) {
        return fail(n, "list concatenation too large");
      }
      json_t *arr = json_copy(x);
      if (!arr || json_array_extend(arr, y) != 0) {
        json_decref(arr);
        return oom();
      }
      *out = atlas_jv_data(arr);
      return ATLAS_OK;
    }
  }
  if (op == '*') {
    if ((json_is_string(x) || json_is_array(x)) && atlas_jv_is_int(b))
      return repeat(n, a, atlas_jinja_as_ll(y), out);
    if ((json_is_string(y) || json_is_array(y)) && atlas_jv_is_int(a))
      return repeat(n, b, atlas_jinja_as_ll(x), out);
  }
  if (op == '%' && json_is_string(x))
    return fail(n, "construct 'string %% formatting' is not supported");
  if (!atlas_jv_is_number(a) || !atlas_jv_is_number(b))
    return arith_error(n, op, a, b);
  const bool ints = atlas_jv_is_int(a) && atlas_jv_is_int(b);
  if (ints && op != '/') {
    long long p = atlas_jinja_as_ll(x), q = atlas_jinja_as_ll(y), r = 0;
    bool overflow = false;
    switch (op) {
      case '+':
        overflow = __builtin_add_overflow(p, q, &r);
        break;
      case '-':
        overflow = __builtin_sub_overflow(p, q, &r);
        break;
      case '*':
        overflow = __builtin_mul_overflow(p, q, &r);
        break;
      case 'F':
      case '%': {
        if (q == 0) return fail(n, "integer division or modulo by zero");
        if (p == LLONG_MIN && q == -1) {
          overflow = true;
          break;
        }
        long long d = p / q, m = p % q;
        if (m != 0 && ((m < 0) != (q < 0))) {
          d -= 1;
          m += q;
        }
        r = op == 'F' ? d : m;
        break;
      }
      case 'P': {
        if (q < 0) {
          if (p == 0) return fail(n, "0 cannot be raised to a negative power");
          *out = atlas_jv_data(json_real(pow((double)p, (double)q)));
          return ATLAS_OK;
        }
        // By squaring: 63 rounds at most (one multiplication a unit of q ran
        // 1 ** 55555555555 for minutes: the chat_template fuzzer). While
        // bits of q remain, the result holds base^2, so base^2 overflowing
        // means the result does (|base| >= 2; 0 and +-1 never overflow).
        r = 1;
        long long base = p;
        for (unsigned long long e = (unsigned long long)q;
             e > 0 && !overflow;) {
          if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
          e >>= 1;
          if (e > 0 && !overflow)
            overflow = __builtin_mul_overflow(base, base, &base);
        }
        break;
      }
      default:
        return arith_error(n, op, a, b);
    }
    if (overflow) return fail(n, "integer arithmetic overflows 64 bits");
    *out = atlas_jv_data(json_integer(r));
    return ATLAS_OK;
  }
  double p = as_d(x), q = as_d(y), r;
  switch (op) {
    case '+':
      r = p + q;
      break;
    case '-':
      r = p - q;
      break;
    case '*':
      r = p * q;
      break;
    case '/':
      if (q == 0) return fail(n, "division by zero");
      r = p / q;
      break;
    case 'F':
      if (q == 0) return fail(n, "float floor division by zero");
      r = floor(p / q);
      break;
    case '%':
      if (q == 0) return fail(n, "float modulo by zero");
      r = fmod(p, q);
      if (r != 0 && ((r < 0) != (q < 0))) r += q;
      break;
    case 'P':
      if (p == 0 && q < 0)
        return fail(n, "0.0 cannot be raised to a negative power");
      r = pow(p, q);
      break;
    default:
      return arith_error(n, op, a, b);
  }
  // Python would print inf or nan; a JSON number (jansson) cannot hold them.
  if (!isfinite(r))
    return fail(n,
                "float arithmetic gives %s, which Atlas's numbers cannot hold",
                isnan(r) ? "nan" : "infinity");
  *out = atlas_jv_data(json_real(r));
  return ATLAS_OK;
}

static atlas_status contains(jinja_ctx *ctx, const jinja_node *n, jv item,
                             jv container, bool *out) {
  *out = false;
  if (container.kind == JV_UNDEFINED)
    return ATLAS_OK;  // iterating Undefined yields nothing
  if (container.kind == JV_DATA && container.seq == JV_SEQ_GENERATOR) {
    json_t *items = NULL;
    ATLAS_RETURN_IF_ERROR(
        at(n, atlas_jinja_iterate(ctx, container, "in", &items)));
    for (size_t i = 0; i < json_array_size(items) && !*out; ++i)
      *out = atlas_jv_equal(item, atlas_jv_data(json_array_get(items, i)));
    json_decref(items);
    return ATLAS_OK;
  }
  if (container.kind != JV_DATA) {
    return fail(n, "argument of type '%s' is not iterable",
                atlas_jv_type_name(container));
  }
  json_t *c = container.json;
  if (json_is_string(c)) {
    if (!atlas_jv_is_string(item)) {
      return fail(n, "'in <string>' requires string as left operand, not %s",
                  atlas_jv_type_name(item));
    }
    *out = memmem(json_string_value(c), json_string_length(c),
                  json_string_value(item.json),
                  json_string_length(item.json)) != NULL;
    return ATLAS_OK;
  }
  if (json_is_array(c)) {
    for (size_t i = 0; i < json_array_size(c); ++i) {
      if (atlas_jv_equal(item, atlas_jv_data(json_array_get(c, i)))) {
        *out = true;
        break;
      }
    }
    return ATLAS_OK;
  }
  if (json_is_object(c)) {
    *out = atlas_jv_is_string(item) &&
           json_object_getn(c, json_string_value(item.json),
                            json_string_length(item.json)) != NULL;
    return ATLAS_OK;
  }
  return fail(n, "argument of type '%s' is not iterable",
              atlas_jv_type_name(container));
}

atlas_status atlas_jinja_compare(jinja_ctx *ctx, const jinja_node *n, int op,
                                 jv a, jv b, bool *out) {
  switch (op) {
    case JINJA_CMP_EQ:
      *out = atlas_jv_equal(a, b);
      return ATLAS_OK;
    case JINJA_CMP_NE:
      *out = !atlas_jv_equal(a, b);
      return ATLAS_OK;
    case JINJA_CMP_IN:
      return contains(ctx, n, a, b, out);
    case JINJA_CMP_NOT_IN:
      ATLAS_RETURN_IF_ERROR(contains(ctx, n, a, b, out));
      *out = !*out;
      return ATLAS_OK;
    default:
      break;
  }
  if (a.kind == JV_UNDEFINED) return undefined_error(n, a);
  if (b.kind == JV_UNDEFINED) return undefined_error(n, b);
  if (a.seq || b.seq)
    return fail(n, "ordering comparison of a %s is not supported",
                atlas_jv_type_name(a.seq ? a : b));
  int c = 0;
  ATLAS_RETURN_IF_ERROR(at(n, atlas_jv_compare(a, b, &c)));
  *out = op == JINJA_CMP_LT   ? c < 0
         : op == JINJA_CMP_LE ? c <= 0
         : op == JINJA_CMP_GT ? c > 0
                              : c >= 0;
  return ATLAS_OK;
}

atlas_status atlas_jinja_iterate(jinja_ctx *ctx, jv v, const char *what,
                                 json_t **out) {
  if (v.kind == JV_UNDEFINED) {
    *out = json_array();
    return *out ? ATLAS_OK : oom();
  }
  if (v.kind != JV_DATA) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: '%s' object is not iterable", what,
                             atlas_jv_type_name(v));
  }
  json_t *j = v.json;
  if (json_is_array(j)) {
    if (v.seq == JV_SEQ_GENERATOR) {
      char key[32];
      atlas_jinja_tuple_key(j, key);
      if (json_object_get(ctx->consumed, key)) {
        return atlas_status_make(
            ATLAS_STATUS_INVALID_ARGUMENT,
            "%s: a generator (the result of a filter such as map or select) is "
            "used a second time; Jinja would find it empty. Not supported",
            what);
      }
      if (json_object_set(ctx->consumed, key, j) != 0) return oom();
    }
    *out = json_incref(j);
    return ATLAS_OK;
  }
  json_t *arr = json_array();
  if (!arr) return oom();
  if (json_is_object(j)) {
    const char *k;
    json_t *x;
    json_object_foreach(j, k, x) {
      if (json_array_append_new(arr, json_string_nocheck(k)) != 0) {
        json_decref(arr);
        return oom();
      }
    }
  } else if (json_is_string(j)) {
    const char *s = json_string_value(j);
    size_t len = json_string_length(j);
    for (size_t i = 0; i < len;) {
      size_t b = i;
      atlas_jinja_utf8_next(s, len, &i);
      if (json_array_append_new(arr, json_stringn_nocheck(s + b, i - b)) != 0) {
        json_decref(arr);
        return oom();
      }
    }
  } else {
    json_decref(arr);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: '%s' object is not iterable", what,
                             atlas_jv_type_name(v));
  }
  *out = arr;
  return ATLAS_OK;
}
