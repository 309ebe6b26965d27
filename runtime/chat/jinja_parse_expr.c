#define _POSIX_C_SOURCE 200809L  // strdup
// Expressions of a template: precedence climbing from `or` down to literals,
// names, calls, subscripts and filters (Jinja2's grammar).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_builtins.h"
#include "atlas/runtime/chat/jinja_parser.h"

static atlas_status parse_or(parser *p, jinja_node **out);
static atlas_status parse_unary(parser *p, bool with_filter, jinja_node **out);

// After an item of a bracketed list: a ',' (consumed) or the closer (left
// for the caller's loop to see), else an error naming what was found.
static atlas_status item_separator(parser *p, const char *close,
                                   const char *what) {
  if (is_op(cur(p), ",")) {
    advance(p);
    return ATLAS_OK;
  }
  if (is_op(cur(p), close)) return ATLAS_OK;
  return perr(cur(p), "expected ',' or '%s' in %s, found %s", close, what,
              describe(cur(p)));
}

// Call arguments after '(' up to ')': positional, then name=value.
static atlas_status parse_args(parser *p, jinja_node *n) {
  ATLAS_RETURN_IF_ERROR(expect_op(p, "("));
  while (!is_op(cur(p), ")")) {
    if (is_op(cur(p), "*") || is_op(cur(p), "**")) {
      return perr(cur(p),
                  "construct '*args'/'**kwargs' in a call is not supported");
    }
    jinja_node *arg = NULL;
    if (cur(p)->kind == JT_NAME && is_op(peek(p, 1), "=")) {
      char **v = realloc(n->kw_names, (n->n_kw + 1) * sizeof(*v));
      if (!v) return oom();
      n->kw_names = v;
      n->kw_names[n->n_kw] = strdup(cur(p)->name);
      if (!n->kw_names[n->n_kw]) return oom();
      n->n_kw++;
      advance(p);
      advance(p);
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &arg));
    } else {
      if (n->n_kw > 0)
        return perr(cur(p), "positional argument after a keyword argument");
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &arg));
    }
    if (!add_kid(n, arg)) return oom();
    ATLAS_RETURN_IF_ERROR(item_separator(p, ")", "an argument list"));
  }
  advance(p);
  return ATLAS_OK;
}

static atlas_status parse_primary(parser *p, jinja_node **out) {
  jinja_tok *t = cur(p);
  jinja_node *n = NULL;
  if (t->kind == JT_NAME) {
    const char *s = t->name;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "false") ||
        !strcmp(s, "False") || !strcmp(s, "none") || !strcmp(s, "None")) {
      n = mk(p, JN_CONST, t);
      if (!n) return oom();
      n->value = s[0] == 'n' || s[0] == 'N'
                     ? json_null()
                     : json_boolean(s[0] == 't' || s[0] == 'T');
    } else {
      n = mk(p, JN_NAME, t);
      if (!n || !(n->name = strdup(s))) return oom();
    }
    advance(p);
  } else if (t->kind == JT_STRING) {
    n = mk(p, JN_CONST, t);
    if (!n) return oom();
    n->value = json_incref(t->value);
    advance(p);
    while (cur(p)->kind == JT_STRING) {  // adjacent literals concatenate
      json_t *a = n->value, *b = cur(p)->value;
      size_t la = json_string_length(a), lb = json_string_length(b);
      char *buf = malloc(la + lb + 1);
      if (!buf) return oom();
      memcpy(buf, json_string_value(a), la);
      memcpy(buf + la, json_string_value(b), lb);
      n->value = json_stringn_nocheck(buf, la + lb);
      free(buf);
      json_decref(a);
      if (!n->value) return oom();
      advance(p);
    }
  } else if (t->kind == JT_INT || t->kind == JT_FLOAT) {
    n = mk(p, JN_CONST, t);
    if (!n) return oom();
    n->value = json_incref(t->value);
    advance(p);
  } else if (is_op(t, "(")) {
    advance(p);
    if (is_op(cur(p), ")")) {
      n = mk(p, JN_LIST, t);
      if (!n) return oom();
      n->op = 't';
      advance(p);
    } else {
      jinja_node *first = NULL;
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &first));
      if (is_op(cur(p), ",")) {
        n = mk(p, JN_LIST, t);
        if (!n || !add_kid(n, first)) return oom();
        n->op = 't';
        while (is_op(cur(p), ",")) {
          advance(p);
          if (is_op(cur(p), ")")) break;
          jinja_node *e = NULL;
          ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &e));
          if (!add_kid(n, e)) return oom();
        }
      } else {
        n = first;
      }
      ATLAS_RETURN_IF_ERROR(expect_op(p, ")"));
    }
  } else if (is_op(t, "[")) {
    n = mk(p, JN_LIST, t);
    if (!n) return oom();
    advance(p);
    while (!is_op(cur(p), "]")) {
      jinja_node *e = NULL;
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &e));
      if (!add_kid(n, e)) return oom();
      ATLAS_RETURN_IF_ERROR(item_separator(p, "]", "a list"));
    }
    advance(p);
  } else if (is_op(t, "{")) {
    n = mk(p, JN_DICT, t);
    if (!n) return oom();
    advance(p);
    while (!is_op(cur(p), "}")) {
      jinja_node *k = NULL, *v = NULL;
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &k));
      ATLAS_RETURN_IF_ERROR(expect_op(p, ":"));
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &v));
      if (!add_kid(n, k) || !add_kid(n, v)) return oom();
      ATLAS_RETURN_IF_ERROR(item_separator(p, "}", "a dict"));
    }
    advance(p);
  } else {
    return perr(t, "expected an expression, found %s", describe(t));
  }
  *out = n;
  return ATLAS_OK;
}

static atlas_status parse_subscript(parser *p, jinja_node *target,
                                    jinja_node **out) {
  jinja_tok *t = cur(p);
  advance(p);  // '['
  jinja_node *parts[3] = {NULL, NULL, NULL};
  int colons = 0;
  for (;;) {
    if (is_op(cur(p), "]")) break;
    if (is_op(cur(p), ":")) {
      if (++colons > 2) return perr(cur(p), "too many ':' in a slice");
      advance(p);
      continue;
    }
    if (is_op(cur(p), ","))
      return perr(cur(p), "construct 'tuple subscript' is not supported");
    if (parts[colons])
      return perr(cur(p), "expected ':' or ']' in a subscript, found %s",
                  describe(cur(p)));
    ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &parts[colons]));
  }
  advance(p);
  jinja_node *n;
  if (colons == 0) {
    if (!parts[0]) return perr(t, "empty subscript []");
    n = mk(p, JN_ITEM, t);
    if (!n) return oom();
    n->a = target;
    n->b = parts[0];
  } else {
    n = mk(p, JN_SLICE, t);
    if (!n) return oom();
    n->a = target;
    n->b = parts[0];
    n->c = parts[1];
    n->d = parts[2];
  }
  *out = n;
  return ATLAS_OK;
}

static atlas_status parse_postfix(parser *p, jinja_node **node) {
  for (;;) {
    jinja_tok *t = cur(p);
    if (is_op(t, ".")) {
      advance(p);
      jinja_tok *a = cur(p);
      if (a->kind == JT_NAME) {
        jinja_node *n = mk(p, JN_ATTR, t);
        if (!n || !(n->name = strdup(a->name))) return oom();
        n->a = *node;
        *node = n;
      } else if (a->kind == JT_INT) {
        jinja_node *n = mk(p, JN_ITEM, t), *k = mk(p, JN_CONST, a);
        if (!n || !k) return oom();
        k->value = json_incref(a->value);
        n->a = *node;
        n->b = k;
        *node = n;
      } else {
        return perr(a, "expected an attribute name after '.', found %s",
                    describe(a));
      }
      advance(p);
    } else if (is_op(t, "[")) {
      ATLAS_RETURN_IF_ERROR(parse_subscript(p, *node, node));
    } else if (is_op(t, "(")) {
      jinja_node *n = mk(p, JN_CALL, t);
      if (!n) return oom();
      n->a = *node;
      ATLAS_RETURN_IF_ERROR(parse_args(p, n));
      *node = n;
    } else {
      return ATLAS_OK;
    }
  }
}

// A dotted filter or test name (Jinja allows a.b); only plain names exist here.
static atlas_status parse_dotted_name(parser *p, char **out) {
  jinja_tok *t = cur(p);
  if (t->kind != JT_NAME)
    return perr(t, "expected a filter or test name, found %s", describe(t));
  if (is_op(peek(p, 1), "."))
    return perr(t, "construct 'dotted filter/test name' is not supported");
  *out = strdup(t->name);
  if (!*out) return oom();
  advance(p);
  return ATLAS_OK;
}

static atlas_status parse_filter_expr(parser *p, jinja_node **node) {
  for (;;) {
    jinja_tok *t = cur(p);
    if (is_op(t, "|")) {
      advance(p);
      jinja_tok *nt = cur(p);
      jinja_node *n = mk(p, JN_FILTER, nt);
      if (!n) return oom();
      ATLAS_RETURN_IF_ERROR(parse_dotted_name(p, &n->name));
      if (!atlas_jinja_filter_known(n->name))
        return perr(nt, "filter '%s' is not supported", n->name);
      if (!add_kid(n, *node)) return oom();
      if (is_op(cur(p), "(")) ATLAS_RETURN_IF_ERROR(parse_args(p, n));
      *node = n;
    } else if (is_name(t, "is")) {
      advance(p);
      jinja_node *n = mk(p, JN_TEST, t);
      if (!n) return oom();
      if (is_name(cur(p), "not")) {
        n->negated = 1;
        advance(p);
      }
      jinja_tok *nt = cur(p);
      ATLAS_RETURN_IF_ERROR(parse_dotted_name(p, &n->name));
      if (!atlas_jinja_test_known(n->name))
        return perr(nt, "test '%s' is not supported", n->name);
      if (!add_kid(n, *node)) return oom();
      jinja_tok *a = cur(p);
      if (is_op(a, "(")) {
        ATLAS_RETURN_IF_ERROR(parse_args(p, n));
      } else if ((a->kind == JT_NAME || a->kind == JT_STRING ||
                  a->kind == JT_INT || a->kind == JT_FLOAT || is_op(a, "[") ||
                  is_op(a, "{")) &&
                 !is_name(a, "else") && !is_name(a, "or") &&
                 !is_name(a, "and")) {
        // `x is divisibleby 3`: one argument without parentheses.
        jinja_node *arg = NULL;
        ATLAS_RETURN_IF_ERROR(parse_primary(p, &arg));
        ATLAS_RETURN_IF_ERROR(parse_postfix(p, &arg));
        if (!add_kid(n, arg)) return oom();
      }
      *node = n;
    } else if (is_op(t, "(")) {
      jinja_node *n = mk(p, JN_CALL, t);
      if (!n) return oom();
      n->a = *node;
      ATLAS_RETURN_IF_ERROR(parse_args(p, n));
      *node = n;
    } else {
      return ATLAS_OK;
    }
  }
}

static atlas_status parse_unary(parser *p, bool with_filter, jinja_node **out) {
  jinja_tok *t = cur(p);
  jinja_node *n = NULL;
  if (is_op(t, "-") || is_op(t, "+")) {
    if (p->depth >= kMaxNesting)
      return perr(t, "expressions nest deeper than %d levels", kMaxNesting);
    advance(p);
    n = mk(p, JN_UNARY, t);
    if (!n) return oom();
    n->op = t->text[0];
    p->depth++;
    atlas_status st = parse_unary(p, false, &n->a);
    p->depth--;
    ATLAS_RETURN_IF_ERROR(st);
  } else {
    ATLAS_RETURN_IF_ERROR(parse_primary(p, &n));
  }
  ATLAS_RETURN_IF_ERROR(parse_postfix(p, &n));
  if (with_filter) ATLAS_RETURN_IF_ERROR(parse_filter_expr(p, &n));
  *out = n;
  return ATLAS_OK;
}

static atlas_status binary(parser *p, jinja_tok *t, char op, jinja_node *a,
                           jinja_node *b, jinja_node **out) {
  jinja_node *n = mk(p, JN_BINARY, t);
  if (!n) return oom();
  n->op = op;
  n->a = a;
  n->b = b;
  *out = n;
  return ATLAS_OK;
}

// The arithmetic levels, loosest first: each is a left-associative chain of
// the next level's operands (after the last, unary expressions). `op` is
// binary()'s code; a level's list ends at a NULL text.
typedef struct arith_op {
  const char *text;
  char op;
} arith_op;
static const arith_op kArith[][5] = {
    {{"+", '+'}, {"-", '-'}, {NULL, 0}},
    {{"~", '~'}, {NULL, 0}},
    {{"*", '*'}, {"/", '/'}, {"//", 'F'}, {"%", '%'}, {NULL, 0}},
    {{"**", 'P'}, {NULL, 0}},
};
enum { kArithLevels = sizeof(kArith) / sizeof(kArith[0]) };

// binary()'s code for token t at `level`, or 0 when t is none of its operators.
static char arith_op_of(const jinja_tok *t, size_t level) {
  for (const arith_op *o = kArith[level]; o->text != NULL; ++o) {
    if (is_op(t, o->text)) return o->op;
  }
  return 0;
}

static atlas_status parse_arith(parser *p, size_t level, jinja_node **out) {
  if (level == kArithLevels) return parse_unary(p, true, out);
  ATLAS_RETURN_IF_ERROR(parse_arith(p, level + 1, out));
  for (;;) {
    jinja_tok *t = cur(p);
    const char op = arith_op_of(t, level);
    if (!op) return ATLAS_OK;
    advance(p);
    jinja_node *r = NULL;
    ATLAS_RETURN_IF_ERROR(parse_arith(p, level + 1, &r));
    ATLAS_RETURN_IF_ERROR(binary(p, t, op, *out, r, out));
  }
}

static atlas_status parse_compare(parser *p, jinja_node **out) {
  jinja_node *first = NULL;
  ATLAS_RETURN_IF_ERROR(parse_arith(p, 0, &first));
  jinja_node *n = NULL;
  for (;;) {
    jinja_tok *t = cur(p);
    int op = is_op(t, "==")     ? JINJA_CMP_EQ
             : is_op(t, "!=")   ? JINJA_CMP_NE
             : is_op(t, "<")    ? JINJA_CMP_LT
             : is_op(t, "<=")   ? JINJA_CMP_LE
             : is_op(t, ">")    ? JINJA_CMP_GT
             : is_op(t, ">=")   ? JINJA_CMP_GE
             : is_name(t, "in") ? JINJA_CMP_IN
                                : 0;
    if (!op && is_name(t, "not") && is_name(peek(p, 1), "in")) {
      op = JINJA_CMP_NOT_IN;
      advance(p);
    }
    if (!op) break;
    advance(p);
    if (!n) {
      n = mk(p, JN_COMPARE, t);
      if (!n || !add_kid(n, first)) return oom();
    }
    jinja_node *r = NULL;
    ATLAS_RETURN_IF_ERROR(parse_arith(p, 0, &r));
    int *ops = realloc(n->ops, n->n_kids * sizeof(int));
    if (!ops) return oom();
    n->ops = ops;
    n->ops[n->n_kids - 1] = op;
    if (!add_kid(n, r)) return oom();
  }
  *out = n ? n : first;
  return ATLAS_OK;
}

static atlas_status parse_not(parser *p, jinja_node **out) {
  jinja_tok *t = cur(p);
  if (is_name(t, "not")) {
    if (p->depth >= kMaxNesting)
      return perr(t, "expressions nest deeper than %d levels", kMaxNesting);
    advance(p);
    jinja_node *n = mk(p, JN_UNARY, t);
    if (!n) return oom();
    n->op = 'n';
    p->depth++;
    atlas_status st = parse_not(p, &n->a);
    p->depth--;
    ATLAS_RETURN_IF_ERROR(st);
    *out = n;
    return ATLAS_OK;
  }
  return parse_compare(p, out);
}

// `word`-joined chains (and, or), left-associative; `next` parses the
// operands.
static atlas_status parse_logic(parser *p, const char *word,
                                jinja_node_kind kind,
                                atlas_status (*next)(parser *, jinja_node **),
                                jinja_node **out) {
  ATLAS_RETURN_IF_ERROR(next(p, out));
  while (is_name(cur(p), word)) {
    jinja_tok *t = cur(p);
    advance(p);
    jinja_node *n = mk(p, kind, t);
    if (!n) return oom();
    n->a = *out;
    ATLAS_RETURN_IF_ERROR(next(p, &n->b));
    *out = n;
  }
  return ATLAS_OK;
}

static atlas_status parse_and(parser *p, jinja_node **out) {
  return parse_logic(p, "and", JN_AND, parse_not, out);
}

static atlas_status parse_or(parser *p, jinja_node **out) {
  return parse_logic(p, "or", JN_OR, parse_and, out);
}

static atlas_status parse_expr_inner(parser *p, jinja_node **out);

atlas_status atlas_jinja_parse_expr(parser *p, jinja_node **out) {
  if (p->depth >= kMaxNesting)
    return perr(cur(p), "expressions nest deeper than %d levels", kMaxNesting);
  p->depth++;
  atlas_status st = parse_expr_inner(p, out);
  p->depth--;
  return st;
}

static atlas_status parse_expr_inner(parser *p, jinja_node **out) {
  ATLAS_RETURN_IF_ERROR(parse_or(p, out));
  while (is_name(cur(p), "if")) {
    jinja_tok *t = cur(p);
    advance(p);
    jinja_node *n = mk(p, JN_COND, t);
    if (!n) return oom();
    n->b = *out;
    ATLAS_RETURN_IF_ERROR(parse_or(p, &n->a));
    if (is_name(cur(p), "else")) {
      advance(p);
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &n->c));
    }
    *out = n;
  }
  return ATLAS_OK;
}

// expr or `expr, expr, ...` (a tuple without parentheses, as in set a = 1, 2).
atlas_status atlas_jinja_parse_tuple_expr(parser *p, bool with_cond,
                                          jinja_node **out) {
  jinja_tok *t = cur(p);
  jinja_node *first = NULL;
  ATLAS_RETURN_IF_ERROR(with_cond ? atlas_jinja_parse_expr(p, &first)
                                  : parse_or(p, &first));
  if (!is_op(cur(p), ",")) {
    *out = first;
    return ATLAS_OK;
  }
  jinja_node *n = mk(p, JN_LIST, t);
  if (!n || !add_kid(n, first)) return oom();
  n->op = 't';
  while (is_op(cur(p), ",")) {
    advance(p);
    if (cur(p)->kind == JT_BLOCK_END || is_name(cur(p), "in")) break;
    jinja_node *e = NULL;
    ATLAS_RETURN_IF_ERROR(with_cond ? atlas_jinja_parse_expr(p, &e)
                                    : parse_or(p, &e));
    if (!add_kid(n, e)) return oom();
  }
  *out = n;
  return ATLAS_OK;
}
