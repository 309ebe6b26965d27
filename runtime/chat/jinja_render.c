#define _GNU_SOURCE  // memmem (glibc extensions)
#include "atlas/runtime/chat/jinja_render.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_ops.h"

enum { kMaxCallDepth = 64 };

static atlas_status at(const jinja_node *n, atlas_status st) {
  return atlas_jinja_error_annotate(st, n->line, n->col);
}

// A render error at node n.
#define fail(n, ...) atlas_jinja_error_at((n)->line, (n)->col, __VA_ARGS__)

static atlas_status oom(void) { return atlas_jinja_oom("rendering"); }

static atlas_status undefined_error(const jinja_node *n, jv v) {
  return fail(n, "'%s' is undefined", v.name ? v.name : "value");
}

atlas_status atlas_jinja_str(jinja_ctx *ctx, jv v, jinja_buf *out) {
  return atlas_jv_str(v, ctx->tuples, out);
}

atlas_status atlas_jinja_mark_tuple(jinja_ctx *ctx, json_t *arr) {
  char key[32];
  atlas_jinja_tuple_key(arr, key);
  return json_object_set(ctx->tuples, key, arr) == 0 ? ATLAS_OK : oom();
}

// ---- expressions ----

static atlas_status eval(jinja_ctx *ctx, const jinja_node *n, jv *out);
static atlas_status exec(jinja_ctx *ctx, const jinja_node *n);

static void free_args(jinja_args *a) {
  for (size_t i = 0; i < a->n_pos; ++i) atlas_jv_free(&a->pos[i]);
  for (size_t i = 0; i < a->n_kw; ++i) atlas_jv_free(&a->kw[i]);
  free(a->pos);
}

// Evaluates kids[first..] of a call/filter/test node into args.
static atlas_status eval_args(jinja_ctx *ctx, const jinja_node *n, size_t first,
                              jinja_args *a) {
  memset(a, 0, sizeof(*a));
  size_t total = n->n_kids - first;
  if (total == 0) return ATLAS_OK;
  a->pos = calloc(total, sizeof(jv));
  if (!a->pos) return oom();
  size_t n_pos = total - n->n_kw;
  // Set before the loop: free_args on a failed keyword frees those before it.
  a->kw = a->pos + n_pos;
  a->kw_names = n->kw_names;
  for (size_t i = 0; i < total; ++i) {
    jv v;
    atlas_status st = eval(ctx, n->kids[first + i], &v);
    if (st != ATLAS_OK) {
      free_args(a);
      return st;
    }
    a->pos[i] = v;
    if (i < n_pos) {
      a->n_pos = i + 1;
    } else {
      a->n_kw = i - n_pos + 1;
    }
  }
  return ATLAS_OK;
}

static atlas_status call_macro(jinja_ctx *ctx, const jinja_node *call,
                               const jinja_node *m, const jinja_args *args,
                               jv *out) {
  if (args->n_pos > m->n_targets) {
    return fail(call, "macro '%s' takes not more than %zu argument(s)", m->name,
                m->n_targets);
  }
  if (ctx->call_depth >= kMaxCallDepth)
    return fail(call, "macro calls nest deeper than %d", kMaxCallDepth);
  jinja_scope *scope = atlas_jinja_scope_new(ctx->top);
  if (!scope) return oom();
  atlas_status st = ATLAS_OK;
  jinja_scope *saved_scope = ctx->scope;
  ctx->scope = scope;
  for (size_t k = 0; k < args->n_kw && st == ATLAS_OK; ++k) {
    bool ok = false;
    for (size_t i = 0; i < m->n_targets; ++i)
      ok = ok || !strcmp(m->targets[i], args->kw_names[k]);
    if (!ok)
      st = fail(call, "macro '%s' has no parameter '%s'", m->name,
                args->kw_names[k]);
  }
  for (size_t i = 0; i < m->n_targets && st == ATLAS_OK; ++i) {
    jv v = atlas_jv_undefined(m->targets[i]);
    bool have = false;
    if (i < args->n_pos) {
      v = atlas_jv_copy(args->pos[i]);
      have = true;
    }
    for (size_t k = 0; k < args->n_kw && !have; ++k) {
      if (!strcmp(args->kw_names[k], m->targets[i])) {
        v = atlas_jv_copy(args->kw[k]);
        have = true;
      }
    }
    if (!have && m->kids[i]) st = eval(ctx, m->kids[i], &v);
    if (st == ATLAS_OK) st = atlas_jinja_scope_set(scope, m->targets[i], v);
  }
  const int saved_loop = ctx->loop_depth;
  jinja_buf *saved_out = NULL;
  if (st == ATLAS_OK) st = atlas_jinja_capture_begin(ctx, &saved_out);
  if (st == ATLAS_OK) {
    ctx->loop_depth = 0;
    ctx->call_depth++;
    st = exec(ctx, m->b);
    ctx->call_depth--;
    ctx->loop_depth = saved_loop;
    st = atlas_jinja_capture_end(ctx, saved_out, st, out);
  }
  ctx->scope = saved_scope;
  atlas_jinja_scope_delete(scope);
  return st;
}

static atlas_status eval_call(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  const jinja_node *callee = n->a;
  jinja_args args;
  if (callee->kind == JN_ATTR) {
    jv obj;
    ATLAS_RETURN_IF_ERROR(eval(ctx, callee->a, &obj));
    if (obj.kind == JV_UNDEFINED) {
      atlas_status st = undefined_error(n, obj);
      atlas_jv_free(&obj);
      return st;
    }
    atlas_status st = eval_args(ctx, n, 0, &args);
    if (st != ATLAS_OK) {
      atlas_jv_free(&obj);
      return st;
    }
    bool found = false;
    if (obj.kind == JV_NAMESPACE) {
      // A macro or value stored on a namespace is not callable data here.
      st =
          fail(n, "calling '%s' of a namespace is not supported", callee->name);
    } else {
      st =
          at(n, atlas_jinja_method(ctx, obj, callee->name, &args, out, &found));
      if (st == ATLAS_OK && !found) {
        st = fail(n, "'%s' object has no supported method '%s'",
                  atlas_jv_type_name(obj), callee->name);
      }
    }
    free_args(&args);
    atlas_jv_free(&obj);
    return st;
  }
  jv f;
  ATLAS_RETURN_IF_ERROR(eval(ctx, callee, &f));
  atlas_status st = eval_args(ctx, n, 0, &args);
  if (st != ATLAS_OK) {
    atlas_jv_free(&f);
    return st;
  }
  if (f.kind == JV_FUNC) {
    st = at(n, atlas_jinja_global_call(ctx, f.name, &args, out));
  } else if (f.kind == JV_MACRO) {
    st = call_macro(ctx, n, f.ptr, &args, out);
  } else if (f.kind == JV_UNDEFINED) {
    st = undefined_error(n, f);
  } else {
    st = fail(n, "'%s' object is not callable", atlas_jv_type_name(f));
  }
  free_args(&args);
  atlas_jv_free(&f);
  return st;
}

// On failure *out holds nothing owned (it starts as Undefined), so callers
// may free it either way.
// [a, b] and (a, b) (op 't': a tuple), and {k: v}.
static atlas_status eval_container(jinja_ctx *ctx, const jinja_node *n,
                                   jv *out) {
  if (n->kind == JN_LIST) {
    json_t *arr = json_array();
    if (!arr) return oom();
    for (size_t i = 0; i < n->n_kids; ++i) {
      jv v;
      atlas_status st = eval(ctx, n->kids[i], &v);
      json_t *j = NULL;
      if (st == ATLAS_OK) st = atlas_jinja_to_json_element(n->kids[i], v, &j);
      if (st == ATLAS_OK && json_array_append(arr, j) != 0) st = oom();
      atlas_jv_free(&v);
      if (st != ATLAS_OK) {
        json_decref(arr);
        return st;
      }
    }
    if (n->op == 't') {
      atlas_status st = atlas_jinja_mark_tuple(ctx, arr);
      if (st != ATLAS_OK) {
        json_decref(arr);
        return st;
      }
    }
    *out = atlas_jv_data(arr);
    return ATLAS_OK;
  }
  json_t *obj = json_object();
  if (!obj) return oom();
  for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
    jv k, v = atlas_jv_undefined(NULL);
    atlas_status st = eval(ctx, n->kids[i], &k);
    if (st == ATLAS_OK && !atlas_jv_is_string(k)) {
      st = fail(n->kids[i],
                "dict keys other than strings are not supported (got '%s')",
                atlas_jv_type_name(k));
    }
    // Keys are C strings everywhere else (lookups, tojson, printing).
    if (st == ATLAS_OK &&
        strlen(json_string_value(k.json)) != json_string_length(k.json)) {
      st = fail(n->kids[i],
                "a dict key holding a NUL character is not supported");
    }
    if (st == ATLAS_OK) st = eval(ctx, n->kids[i + 1], &v);
    json_t *j = NULL;
    if (st == ATLAS_OK) st = atlas_jinja_to_json_element(n->kids[i + 1], v, &j);
    // _nocheck: a key that is not UTF-8 is bytes, as every string here
    // (json_object_setn refused it, and that read as out of memory).
    if (st == ATLAS_OK &&
        json_object_setn_nocheck(obj, json_string_value(k.json),
                                 json_string_length(k.json), j) != 0) {
      st = oom();
    }
    atlas_jv_free(&k);
    atlas_jv_free(&v);
    if (st != ATLAS_OK) {
      json_decref(obj);
      return st;
    }
  }
  *out = atlas_jv_data(obj);
  return ATLAS_OK;
}

// -a, +a, not a.
static atlas_status eval_unary(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  jv v;
  ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &v));
  atlas_status st = ATLAS_OK;
  if (n->op == 'n') {
    *out = atlas_jv_data(json_boolean(!atlas_jv_truthy(v)));
  } else if (v.kind == JV_UNDEFINED) {
    st = undefined_error(n, v);
  } else if (!atlas_jv_is_number(v)) {
    st = fail(n, "bad operand type for unary %c: '%s'", n->op,
              atlas_jv_type_name(v));
  } else if (n->op == '+') {
    *out = atlas_jv_is_int(v)
               ? atlas_jv_data(json_integer(atlas_jinja_as_ll(v.json)))
               : atlas_jv_copy(v);
  } else if (atlas_jv_is_int(v)) {
    long long r = 0;
    if (__builtin_sub_overflow(0LL, atlas_jinja_as_ll(v.json), &r)) {
      st = fail(n, "integer arithmetic overflows 64 bits");
    } else {
      *out = atlas_jv_data(json_integer(r));
    }
  } else {
    *out = atlas_jv_data(json_real(-json_real_value(v.json)));
  }
  atlas_jv_free(&v);
  return st;
}

// a < b <= c ...: chained comparisons.
static atlas_status eval_compare(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  jv left;
  ATLAS_RETURN_IF_ERROR(eval(ctx, n->kids[0], &left));
  bool result = true;
  atlas_status st = ATLAS_OK;
  for (size_t i = 1; i < n->n_kids && result && st == ATLAS_OK; ++i) {
    jv right;
    st = eval(ctx, n->kids[i], &right);
    if (st != ATLAS_OK) break;
    st = atlas_jinja_compare(ctx, n, n->ops[i - 1], left, right, &result);
    atlas_jv_free(&left);
    left = right;
  }
  atlas_jv_free(&left);
  if (st == ATLAS_OK) *out = atlas_jv_data(json_boolean(result));
  return st;
}

static atlas_status eval_node(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  *out = atlas_jv_undefined(NULL);
  switch (n->kind) {
    case JN_CONST:
      // A copy of the render's own, never a reference to the parsed
      // template's value: threads may share a template (atlas.h), and
      // jansson's json_incref/json_decref read the count without an atomic
      // load before changing it atomically, a data race when two renders
      // count the same value (ThreadSanitizer, //tests/api:threads_api_test).
      // Constants are strings and numbers (true/false/None are jansson's
      // uncounted singletons), so the copy is one small allocation.
      *out = atlas_jv_data(json_copy(n->value));
      return atlas_jv_ok_alloc(*out) ? ATLAS_OK : oom();
    case JN_NAME:
      *out = atlas_jinja_lookup(ctx, n->name);
      return ATLAS_OK;
    case JN_LIST:
    case JN_DICT:
      return eval_container(ctx, n, out);
    case JN_ATTR: {
      jv obj;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &obj));
      atlas_status st = ATLAS_OK;
      if (obj.kind == JV_UNDEFINED) {
        st = undefined_error(n, obj);
      } else {
        const char *python = NULL;
        *out = atlas_jinja_get_attr(obj, n->name, &python);
        if (python != NULL) {
          const char *type = atlas_jv_type_name(obj);
          st = fail(
              n, "'%s' of %s %s is a %s; using it as a value is not supported",
              n->name, atlas_jv_type_article(type), type, python);
        } else if (!atlas_jv_ok_alloc(*out)) {
          st = oom();
        }
      }
      atlas_jv_free(&obj);
      return st;
    }
    case JN_ITEM: {
      jv obj, key;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &obj));
      atlas_status st = eval(ctx, n->b, &key);
      if (st == ATLAS_OK) {
        st = atlas_jinja_get_item(n, obj, key, out);
        // An undefined item borrows the key's text as its name, and the key
        // (a constant's copy, or a computed string) goes now: the render
        // keeps it for the error that may name it later.
        if (st == ATLAS_OK && out->kind == JV_UNDEFINED &&
            atlas_jv_is_string(key) &&
            out->name == json_string_value(key.json) &&
            json_array_append(ctx->names, key.json) != 0) {
          st = oom();
        }
        atlas_jv_free(&key);
      }
      atlas_jv_free(&obj);
      return st;
    }
    case JN_SLICE: {
      jv obj;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &obj));
      atlas_status st = atlas_jinja_slice(ctx, n, obj, out);
      atlas_jv_free(&obj);
      return st;
    }
    case JN_CALL:
      return eval_call(ctx, n, out);
    case JN_FILTER:
    case JN_TEST: {
      jv value;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->kids[0], &value));
      jinja_args args;
      atlas_status st = eval_args(ctx, n, 1, &args);
      if (st == ATLAS_OK) {
        if (n->kind == JN_FILTER) {
          st = at(n, atlas_jinja_filter(ctx, n->name, value, &args, out));
        } else {
          bool r = false;
          st = at(n, atlas_jinja_test(ctx, n->name, value, &args, &r));
          if (st == ATLAS_OK)
            *out = atlas_jv_data(json_boolean(n->negated ? !r : r));
        }
        free_args(&args);
      }
      atlas_jv_free(&value);
      return st;
    }
    case JN_UNARY:
      return eval_unary(ctx, n, out);
    case JN_BINARY: {
      jv a, b;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &a));
      atlas_status st = eval(ctx, n->b, &b);
      if (st == ATLAS_OK) {
        st = atlas_jinja_binary_op(ctx, n, n->op, a, b, out);
        if (st == ATLAS_OK && !atlas_jv_ok_alloc(*out)) st = oom();
        atlas_jv_free(&b);
      }
      atlas_jv_free(&a);
      return st;
    }
    case JN_COMPARE:
      return eval_compare(ctx, n, out);
    case JN_AND:
    case JN_OR: {
      jv a;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &a));
      const bool t = atlas_jv_truthy(a);
      if ((n->kind == JN_AND && !t) || (n->kind == JN_OR && t)) {
        *out = a;
        return ATLAS_OK;
      }
      atlas_jv_free(&a);
      return eval(ctx, n->b, out);
    }
    case JN_COND: {
      jv c;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &c));
      const bool t = atlas_jv_truthy(c);
      atlas_jv_free(&c);
      if (t) return eval(ctx, n->b, out);
      if (n->c) return eval(ctx, n->c, out);
      *out = atlas_jv_undefined("the else branch of an inline if");
      return ATLAS_OK;
    }
    default:
      return fail(n,
                  "internal: statement node where an expression was expected");
  }
}

// ---- statements ----

static atlas_status bind_targets(const jinja_node *n, jinja_scope *s,
                                 char *const *targets, size_t n_targets, jv v) {
  if (n_targets == 1) {
    if (v.kind == JV_LOOP)
      return fail(n,
                  "assigning the loop object to a variable is not supported");
    return atlas_jinja_scope_set(s, targets[0], atlas_jv_copy(v));
  }
  if (!(v.kind == JV_DATA && json_is_array(v.json))) {
    return fail(n, "cannot unpack a '%s' into %zu names", atlas_jv_type_name(v),
                n_targets);
  }
  if (json_array_size(v.json) != n_targets) {
    return fail(n, "cannot unpack %zu values into %zu names",
                json_array_size(v.json), n_targets);
  }
  for (size_t i = 0; i < n_targets; ++i) {
    ATLAS_RETURN_IF_ERROR(atlas_jinja_scope_set(
        s, targets[i], atlas_jv_data(json_incref(json_array_get(v.json, i)))));
  }
  return ATLAS_OK;
}

static atlas_status exec_for(jinja_ctx *ctx, const jinja_node *n) {
  jv iter;
  ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &iter));
  json_t *items = NULL;
  atlas_status st = at(n, atlas_jinja_iterate(ctx, iter, "for", &items));
  atlas_jv_free(&iter);
  ATLAS_RETURN_IF_ERROR(st);
  // `for x in xs if cond`: the condition filters before the loop counts.
  if (n->c) {
    json_t *kept = json_array();
    if (!kept) st = oom();
    for (size_t i = 0; st == ATLAS_OK && i < json_array_size(items); ++i) {
      jinja_scope *s = atlas_jinja_scope_new(ctx->scope);
      if (!s) {
        st = oom();
        break;
      }
      json_t *item = json_array_get(items, i);
      st = bind_targets(n, s, n->targets, n->n_targets, atlas_jv_data(item));
      jv c = atlas_jv_undefined(NULL);
      if (st == ATLAS_OK) {
        jinja_scope *saved = ctx->scope;
        ctx->scope = s;
        st = eval(ctx, n->c, &c);
        ctx->scope = saved;
      }
      if (st == ATLAS_OK && atlas_jv_truthy(c) &&
          json_array_append(kept, item) != 0)
        st = oom();
      atlas_jv_free(&c);
      atlas_jinja_scope_delete(s);
    }
    json_decref(items);
    if (st != ATLAS_OK) {
      json_decref(kept);  // a condition that failed: the kept items go too
      return st;
    }
    items = kept;
  }
  const size_t len = json_array_size(items);
  // Without recursive loops, loop.depth is 1 at every nesting level (as in
  // Jinja2).
  jinja_loop loop = {.items = items, .length = len, .depth0 = 0};
  ctx->loop_depth++;
  for (size_t i = 0; i < len && st == ATLAS_OK; ++i) {
    loop.index0 = i;
    jinja_scope *s = atlas_jinja_scope_new(ctx->scope);
    if (!s) {
      st = oom();
      break;
    }
    jv lv = {JV_LOOP, NULL, &loop, "loop", JV_SEQ_LIST};
    st = atlas_jinja_scope_set(s, "loop", lv);
    if (st == ATLAS_OK)
      st = bind_targets(n, s, n->targets, n->n_targets,
                        atlas_jv_data(json_array_get(items, i)));
    if (st == ATLAS_OK) {
      jinja_scope *saved = ctx->scope;
      ctx->scope = s;
      st = exec(ctx, n->b);
      ctx->scope = saved;
    }
    atlas_jinja_scope_delete(s);
    const int control = ctx->control;
    ctx->control = JINJA_CTL_NONE;
    if (control == JINJA_CTL_BREAK) break;
  }
  ctx->loop_depth--;
  json_decref(items);
  ATLAS_RETURN_IF_ERROR(st);
  if (len == 0 && n->d) return exec(ctx, n->d);
  return ATLAS_OK;
}

static atlas_status exec_set(jinja_ctx *ctx, const jinja_node *n) {
  jv v;
  ATLAS_RETURN_IF_ERROR(eval(ctx, n->b, &v));
  atlas_status st = ATLAS_OK;
  if (n->a) {  // ns.attr = value
    jv obj = atlas_jinja_lookup(ctx, n->a->a->name);
    if (obj.kind != JV_NAMESPACE) {
      st = fail(
          n,
          "cannot assign attribute '%s' on '%s': it is a %s, not a namespace()",
          n->a->name, n->a->a->name, atlas_jv_type_name(obj));
    } else if (v.kind != JV_DATA || v.seq != JV_SEQ_LIST) {
      st = fail(n, "storing a %s value on a namespace is not supported",
                atlas_jv_type_name(v));
    } else if (json_object_set(obj.json, n->a->name, v.json) != 0) {
      st = oom();
    }
    atlas_jv_free(&obj);
  } else {
    st = bind_targets(n, ctx->scope, n->targets, n->n_targets, v);
  }
  atlas_jv_free(&v);
  return st;
}

static atlas_status exec_node(jinja_ctx *ctx, const jinja_node *n) {
  switch (n->kind) {
    case JN_BODY:
      for (size_t i = 0; i < n->n_kids; ++i) {
        ATLAS_RETURN_IF_ERROR(exec(ctx, n->kids[i]));
        if (ctx->control != JINJA_CTL_NONE) break;
      }
      return ATLAS_OK;
    case JN_TEXT:
      atlas_jinja_buf_append(ctx->out, json_string_value(n->value),
                             json_string_length(n->value));
      return atlas_jinja_buf_status(ctx->out, "rendering");
    case JN_OUTPUT: {
      jv v;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &v));
      atlas_status st = at(n, atlas_jinja_str(ctx, v, ctx->out));
      atlas_jv_free(&v);
      if (st == ATLAS_OK)
        st = at(n, atlas_jinja_buf_status(ctx->out, "rendering"));
      return st;
    }
    case JN_IF: {
      jv c;
      ATLAS_RETURN_IF_ERROR(eval(ctx, n->a, &c));
      const bool t = atlas_jv_truthy(c);
      atlas_jv_free(&c);
      if (t) return exec(ctx, n->b);
      return n->c ? exec(ctx, n->c) : ATLAS_OK;
    }
    case JN_FOR:
      return exec_for(ctx, n);
    case JN_SET:
      return exec_set(ctx, n);
    case JN_SET_BLOCK: {
      jinja_buf *saved = NULL;
      ATLAS_RETURN_IF_ERROR(atlas_jinja_capture_begin(ctx, &saved));
      jv v = atlas_jv_undefined(NULL);
      atlas_status st =
          atlas_jinja_capture_end(ctx, saved, exec(ctx, n->b), &v);
      if (st == ATLAS_OK)
        st = atlas_jinja_scope_set(ctx->scope, n->targets[0], v);
      return st;
    }
    case JN_MACRO: {
      jv m = {JV_MACRO, NULL, n, n->name, JV_SEQ_LIST};
      return atlas_jinja_scope_set(ctx->scope, n->name, m);
    }
    case JN_BREAK:
      ctx->control = JINJA_CTL_BREAK;
      return ATLAS_OK;
    case JN_CONTINUE:
      ctx->control = JINJA_CTL_CONTINUE;
      return ATLAS_OK;
    default:
      return fail(n,
                  "internal: expression node where a statement was expected");
  }
}

// What a string costs to build: a step per 64 bytes.
static uint64_t text_steps(size_t len) { return (uint64_t)len / 64; }

// A limit reached at node n.
#define exhausted(n, ...) \
  at((n), atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED, __VA_ARGS__))

static atlas_status eval(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  *out = atlas_jv_undefined(NULL);
  if (ctx->depth >= ctx->limits.max_depth) {
    return exhausted(n,
                     "expressions and statements nest more than %d deep (the "
                     "max_depth limit of atlas_chat_limits)",
                     ctx->limits.max_depth);
  }
  ATLAS_RETURN_IF_ERROR(at(n, atlas_jinja_spend(ctx, 1)));
  ++ctx->depth;
  atlas_status st = eval_node(ctx, n, out);
  --ctx->depth;
  // A list or dict the template builds may hold what it built before
  // ({% set ns.x = [ns.x] %} in a loop): bounded here, before printing,
  // comparing or freeing it would recurse that deep.
  // A list built by + or * is charged its items.
  if (st == ATLAS_OK && n->kind == JN_BINARY && json_is_array(out->json)) {
    st = at(n, atlas_jinja_spend(ctx, json_array_size(out->json)));
  }
  if (st == ATLAS_OK &&
      (n->kind == JN_LIST || n->kind == JN_DICT || n->kind == JN_CALL)) {
    st = at(n, atlas_jinja_check_depth(ctx, out->json, "a value it builds"));
  }
  if (st == ATLAS_OK && out->json != NULL && json_is_string(out->json)) {
    size_t len = json_string_length(out->json);
    if (len > ctx->limits.max_string) {
      st = exhausted(
          n,
          "the template builds a string of %zu bytes, more than %zu (the "
          "max_string limit of atlas_chat_limits)",
          len, ctx->limits.max_string);
    } else {
      st = at(n, atlas_jinja_spend(ctx, text_steps(len)));
    }
  }
  if (st != ATLAS_OK) atlas_jv_free(out);
  return st;
}

static atlas_status exec(jinja_ctx *ctx, const jinja_node *n) {
  if (ctx->depth >= ctx->limits.max_depth) {
    return exhausted(
        n,
        "statements nest more than %d deep (the max_depth limit of "
        "atlas_chat_limits)",
        ctx->limits.max_depth);
  }
  ATLAS_RETURN_IF_ERROR(at(n, atlas_jinja_spend(ctx, 1)));
  size_t before = ctx->out->len;
  ++ctx->depth;
  atlas_status st = exec_node(ctx, n);
  --ctx->depth;
  if (st != ATLAS_OK) return st;
  if (ctx->out->len > ctx->limits.max_output) {
    return exhausted(
        n,
        "the rendered text passes %zu bytes (the max_output limit of "
        "atlas_chat_limits)",
        ctx->limits.max_output);
  }
  size_t grown = ctx->out->len > before ? ctx->out->len - before : 0;
  return at(n, atlas_jinja_spend(ctx, text_steps(grown)));
}

atlas_status atlas_jinja_eval(jinja_ctx *ctx, const jinja_node *n, jv *out) {
  return eval(ctx, n, out);
}

atlas_status atlas_jinja_render(const jinja_template *t, json_t *vars,
                                const struct tm *now,
                                const jinja_limits *limits, jinja_buf *out) {
  jinja_scope *top = atlas_jinja_scope_new(NULL);
  jinja_ctx ctx = {.out = out,
                   .limits = *limits,
                   .scope = top,
                   .top = top,
                   .globals = vars,
                   .now = now,
                   .tuples = json_object(),
                   .consumed = json_object(),
                   .names = json_array()};
  atlas_status st = top && ctx.tuples && ctx.consumed && ctx.names
                        ? atlas_jinja_check_depth(&ctx, vars, "the input")
                        : oom();
  if (st == ATLAS_OK) st = exec(&ctx, t->root);
  atlas_jinja_scope_delete(top);
  json_decref(ctx.tuples);
  json_decref(ctx.consumed);
  json_decref(ctx.names);
  return st;
}
