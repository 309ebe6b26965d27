// Rendering a parsed chat template: the state of one render (output, scopes,
// loop control) and the calls between the renderer and the builtins.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_RENDER_H_
#define ATLAS_RUNTIME_CHAT_JINJA_RENDER_H_

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_text.h"
#include "atlas/runtime/chat/jinja_value.h"

typedef struct jinja_var {
  const char *name;  // points into the template (or a literal): not owned
  jv value;
} jinja_var;

typedef struct jinja_scope {
  jinja_var *vars;
  size_t n;
  size_t cap;
  struct jinja_scope *parent;
} jinja_scope;

// The state behind `loop` inside a for body.
typedef struct jinja_loop {
  json_t *items;  // the (filtered) items
  size_t index0;
  size_t length;
  int depth0;
} jinja_loop;

// What one render may spend (atlas_chat_limits in atlas.h; chat_template.h
// gives the defaults). A template that asks for more is refused with the
// limit's name and the template's line and column, never run to the end.
typedef struct jinja_limits {
  uint64_t max_steps;  // expression and statement evaluations, plus one per
                       // item or 64 bytes a builtin walks or builds
  size_t max_output;   // bytes of rendered text
  size_t max_string;   // bytes of any one string a template builds
  int max_depth;       // nesting of the template's syntax and of its values
} jinja_limits;

typedef struct jinja_ctx {
  jinja_buf *out;
  jinja_limits limits;
  uint64_t steps;        // spent so far
  int depth;             // evaluations under way (the C stack's depth)
  jinja_scope *scope;    // innermost
  jinja_scope *top;      // the template's own scope (macros see it)
  json_t *globals;       // the render variables: messages, bos_token, ...
  const struct tm *now;  // what strftime_now formats
  int control;           // JINJA_CTL_*: a pending break or continue
  int loop_depth;
  int call_depth;    // macro recursion guard
  json_t *tuples;    // arrays that are Python tuples (keys:
                     // atlas_jinja_tuple_key), held alive
  json_t *consumed;  // generators already iterated, held alive the same way
  json_t
      *names;  // keys an undefined item is named after, held alive (an array)
} jinja_ctx;

enum { JINJA_CTL_NONE = 0, JINJA_CTL_BREAK, JINJA_CTL_CONTINUE };

// Arguments of a filter, test, function or method call. Positional first,
// then keyword.
typedef struct jinja_args {
  jv *pos;
  size_t n_pos;
  char *const *kw_names;
  jv *kw;
  size_t n_kw;
} jinja_args;

// Renders the template with `vars` (a JSON object) into `out`, within
// `limits`.
atlas_status atlas_jinja_render(const jinja_template *t, json_t *vars,
                                const struct tm *now,
                                const jinja_limits *limits, jinja_buf *out);
// Spends `steps` of the render's budget: RESOURCE_EXHAUSTED naming the limit
// once it is spent (the caller adds the position). Builtins call it for the
// items and bytes they walk, so that a loop over a costly filter is bounded
// too.
atlas_status atlas_jinja_spend(jinja_ctx *ctx, uint64_t steps);
// Whether `v` nests deeper than `max_depth` (a list in a list is depth 2),
// looking no deeper than that; the items visited are spent from the budget.
atlas_status atlas_jinja_check_depth(jinja_ctx *ctx, json_t *v,
                                     const char *what);

// Python's str() of a value, tuples included.
atlas_status atlas_jinja_str(jinja_ctx *ctx, jv v, jinja_buf *out);
// Records that `arr` is a tuple (it prints as one).
atlas_status atlas_jinja_mark_tuple(jinja_ctx *ctx, json_t *arr);
// The items iterating `v` gives (a new reference): a list's (range's, view's,
// generator's) elements, a dict's keys, a string's characters, nothing for
// Undefined. A generator can be iterated once: a second use is refused
// rather than seen empty as in Python.
atlas_status atlas_jinja_iterate(jinja_ctx *ctx, jv v, const char *what,
                                 json_t **out_items);

// Builtins (jinja_builtins.c). Each returns a status naming what went wrong;
// the renderer adds the line and column.
atlas_status atlas_jinja_filter(jinja_ctx *ctx, const char *name, jv value,
                                const jinja_args *args, jv *out);
atlas_status atlas_jinja_test(jinja_ctx *ctx, const char *name, jv value,
                              const jinja_args *args, bool *out);
atlas_status atlas_jinja_global_call(jinja_ctx *ctx, const char *name,
                                     const jinja_args *args, jv *out);
bool atlas_jinja_global_known(const char *name);
// A method of a str, dict, list or loop. *found is false when `obj` has no
// such method (the caller reports it).
atlas_status atlas_jinja_method(jinja_ctx *ctx, jv obj, const char *name,
                                const jinja_args *args, jv *out, bool *found);
// Whether `name` is a method of dicts (a.items is the method, not a key).
bool atlas_jinja_is_dict_method(const char *name);

// Scopes (jinja_scope.c). scope_set takes ownership of `v`; scopes live on
// the heap while ctx points at them, so the context never holds the address
// of a local.
jinja_var *atlas_jinja_scope_find(jinja_scope *s, const char *name);
atlas_status atlas_jinja_scope_set(jinja_scope *s, const char *name, jv v);
void atlas_jinja_scope_clear(jinja_scope *s);
jinja_scope *atlas_jinja_scope_new(jinja_scope *parent);
void atlas_jinja_scope_delete(jinja_scope *s);
// A name's value: the innermost scope's, else a render variable, else a
// global function, else undefined.
jv atlas_jinja_lookup(jinja_ctx *ctx, const char *name);
// Output redirected into a fresh buffer (*out_saved: the old one), then
// restored, the captured text becoming *out when st is OK.
atlas_status atlas_jinja_capture_begin(jinja_ctx *ctx, jinja_buf **out_saved);
atlas_status atlas_jinja_capture_end(jinja_ctx *ctx, jinja_buf *saved,
                                     atlas_status st, jv *out);
// What Jinja's immutable sandbox finds under `name` on the value `v` where
// a key or index lookup found nothing: "method" (a bound method),
// "number's attribute" (an int's or float's real, imag, numerator,
// denominator) or NULL (undefined; also the sandbox's answer for mutating
// methods of dicts and lists). Atlas refuses the first two by name.
const char *atlas_jinja_python_attribute(json_t *v, const char *name);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_RENDER_H_
