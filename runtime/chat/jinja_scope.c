// Scopes and output capture of one render (see jinja_render.h).
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_render.h"

static atlas_status oom(void) { return atlas_jinja_oom("rendering"); }

jinja_var *atlas_jinja_scope_find(jinja_scope *s, const char *name) {
  for (size_t i = 0; i < s->n; ++i) {
    if (strcmp(s->vars[i].name, name) == 0) return &s->vars[i];
  }
  return NULL;
}

// Binds `name` in scope `s`; takes ownership of `v`.
atlas_status atlas_jinja_scope_set(jinja_scope *s, const char *name, jv v) {
  jinja_var *var = atlas_jinja_scope_find(s, name);
  if (var) {
    atlas_jv_free(&var->value);
    var->value = v;
    return ATLAS_OK;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    jinja_var *vars = realloc(s->vars, cap * sizeof(*vars));
    if (!vars) {
      atlas_jv_free(&v);
      return oom();
    }
    s->vars = vars;
    s->cap = cap;
  }
  s->vars[s->n].name = name;
  s->vars[s->n].value = v;
  s->n++;
  return ATLAS_OK;
}

void atlas_jinja_scope_clear(jinja_scope *s) {
  for (size_t i = 0; i < s->n; ++i) atlas_jv_free(&s->vars[i].value);
  free(s->vars);
  memset(s, 0, sizeof(*s));
}

// Scopes and capture buffers live on the heap while ctx points at them, so
// the context never holds the address of a local.
jinja_scope *atlas_jinja_scope_new(jinja_scope *parent) {
  jinja_scope *s = calloc(1, sizeof(*s));
  if (s) s->parent = parent;
  return s;
}

void atlas_jinja_scope_delete(jinja_scope *s) {
  if (!s) return;
  atlas_jinja_scope_clear(s);
  free(s);
}

// Redirects output into a fresh buffer; *out_saved receives the old one.
atlas_status atlas_jinja_capture_begin(jinja_ctx *ctx, jinja_buf **out_saved) {
  jinja_buf *b = calloc(1, sizeof(*b));
  if (!b) return oom();
  *out_saved = ctx->out;
  ctx->out = b;
  return ATLAS_OK;
}

// Restores the output and, when st is OK, turns the captured text into *out.
atlas_status atlas_jinja_capture_end(jinja_ctx *ctx, jinja_buf *saved,
                                     atlas_status st, jv *out) {
  jinja_buf *b = ctx->out;
  ctx->out = saved;
  if (st == ATLAS_OK) st = atlas_jinja_buf_status(b, "rendering");
  if (st == ATLAS_OK) {
    *out = atlas_jv_string(b->data, b->len);
    if (!atlas_jv_ok_alloc(*out)) st = oom();
  }
  atlas_jinja_buf_free(b);
  free(b);
  return st;
}

jv atlas_jinja_lookup(jinja_ctx *ctx, const char *name) {
  for (jinja_scope *s = ctx->scope; s; s = s->parent) {
    jinja_var *v = atlas_jinja_scope_find(s, name);
    if (v) return atlas_jv_copy(v->value);
  }
  json_t *g = json_object_get(ctx->globals, name);
  if (g) return atlas_jv_data(json_incref(g));
  if (atlas_jinja_global_known(name)) {
    jv f = {JV_FUNC, NULL, NULL, name, JV_SEQ_LIST};
    return f;
  }
  return atlas_jv_undefined(name);
}
