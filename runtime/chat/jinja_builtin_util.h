// Helpers shared by the builtins (filters, tests, methods, globals): their
// arguments, their errors, what they spend of the render budget, and the
// Python str operations more than one of them uses. Private to the engine.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_BUILTIN_UTIL_H_
#define ATLAS_RUNTIME_CHAT_JINJA_BUILTIN_UTIL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_render.h"
#include "atlas/runtime/chat/jinja_text.h"
#include "atlas/runtime/chat/jinja_value.h"

// INVALID_ARGUMENT with the message (the renderer adds the position).
atlas_status atlas_jinja_err(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

// Parameter `index` (by position) or `name` (by keyword); NULL when not given.
const jv *atlas_jinja_arg(const jinja_args *a, size_t index, const char *name);
// Refuses arguments beyond the parameter list (names: the parameter names).
atlas_status atlas_jinja_check_args(const char *what, const jinja_args *a,
                                    const char *const *names, size_t n);
#define CHECK_ARGS(what, a, ...)                                   \
  do {                                                             \
    static const char *const names_[] = {__VA_ARGS__};             \
    ATLAS_RETURN_IF_ERROR(atlas_jinja_check_args(                  \
        (what), (a), names_, sizeof(names_) / sizeof(names_[0]))); \
  } while (0)
#define NO_ARGS(what, a)                                       \
  do {                                                         \
    if ((a)->n_pos || (a)->n_kw)                               \
      return atlas_jinja_err("%s takes no arguments", (what)); \
  } while (0)

atlas_status atlas_jinja_want_str(const char *what, const jv *v, const char **s,
                                  size_t *n);
atlas_status atlas_jinja_want_int(const char *what, const jv *v,
                                  long long *out);
// str(v) appended to b.
atlas_status atlas_jinja_str_of(jinja_ctx *ctx, jv v, jinja_buf *b);

// What a builtin may walk of `v`: its items, or a step per 64 bytes; and of
// all its arguments.
uint64_t atlas_jinja_walk_cost(jv v);
uint64_t atlas_jinja_args_cost(const jinja_args *a);

// Python's str operations (jinja_methods.c).
bool atlas_jinja_is_ascii(const char *s, size_t n);
// str.strip/lstrip/rstrip; chars NULL strips whitespace.
atlas_status atlas_jinja_py_strip(const char *s, size_t n, const char *chars,
                                  size_t n_chars, bool left, bool right,
                                  jv *out);
typedef enum {
  CASE_UPPER,
  CASE_LOWER,
  CASE_CAPITALIZE,
  CASE_TITLE_PY,
  CASE_TITLE_JINJA
} case_kind;
atlas_status atlas_jinja_change_case(const char *what, const char *s, size_t n,
                                     case_kind k, jv *out);
// str.replace(old, new[, count]); count < 0: all.
atlas_status atlas_jinja_py_replace(const char *s, size_t n, const char *old,
                                    size_t no, const char *nw, size_t nn,
                                    long long count, jv *out);
// A dict's items(), keys() or values() (what: 0, 1, 2).
atlas_status atlas_jinja_dict_items(jinja_ctx *ctx, json_t *o, int what,
                                    jv_seq seq, jv *out);

// The filters of numbers (jinja_filters_number.c): int, float, abs, round.
// *found is false when `name` is none of them.
atlas_status atlas_jinja_number_filter(const char *name, jv v,
                                       const jinja_args *a, jv *out,
                                       bool *found);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_BUILTIN_UTIL_H_
