#define _POSIX_C_SOURCE 200809L  // strdup
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_builtins.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_lex.h"

typedef struct parser {
  jinja_toks toks;
  size_t i;
  jinja_template *tpl;
  int loop_depth;  // break/continue are only valid inside a for
  int depth;       // nesting of expressions and statements, bounded so the
                   // recursive descent cannot exhaust the stack
} parser;

enum { kMaxNesting = 200 };

static jinja_tok *cur(parser *p) { return &p->toks.v[p->i]; }
static jinja_tok *peek(parser *p, size_t k) {
  size_t j = p->i + k;
  return &p->toks.v[j < p->toks.n ? j : p->toks.n - 1];
}
static void advance(parser *p) {
  if (p->i + 1 < p->toks.n) p->i++;
}
static bool is_op(const jinja_tok *t, const char *op) {
  return t->kind == JT_OP && strcmp(t->text, op) == 0;
}
static bool is_name(const jinja_tok *t, const char *name) {
  return t->kind == JT_NAME && strcmp(t->name, name) == 0;
}

static const char *describe(const jinja_tok *t) {
  switch (t->kind) {
    case JT_TEXT:
      return "text";
    case JT_VAR_BEGIN:
      return "'{{'";
    case JT_VAR_END:
      return "'}}'";
    case JT_BLOCK_BEGIN:
      return "'{%'";
    case JT_BLOCK_END:
      return "'%}'";
    case JT_NAME:
      return t->name;
    case JT_STRING:
      return "a string";
    case JT_INT:
      return "an integer";
    case JT_FLOAT:
      return "a number";
    case JT_OP:
      return t->text;
    case JT_EOF:
      return "the end of the template";
  }
  return "?";
}

// A parse error at token t.
#define perr(t, ...) atlas_jinja_error_at((t)->line, (t)->col, __VA_ARGS__)

static atlas_status oom(void) { return atlas_jinja_oom("parsing"); }

static jinja_node *mk(parser *p, jinja_node_kind kind, const jinja_tok *at) {
  jinja_node *n = calloc(1, sizeof(*n));
  if (!n) return NULL;
  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  n->next_alloc = p->tpl->nodes;
  p->tpl->nodes = n;
  return n;
}

static bool add_kid(jinja_node *n, jinja_node *kid) {
  jinja_node **v = realloc(n->kids, (n->n_kids + 1) * sizeof(jinja_node *));
  if (!v) return false;
  n->kids = v;
  n->kids[n->n_kids++] = kid;
  return true;
}

static bool add_target(jinja_node *n, const char *name) {
  char **v = realloc(n->targets, (n->n_targets + 1) * sizeof(*v));
  if (!v) return false;
  n->targets = v;
  n->targets[n->n_targets] = strdup(name);
  if (!n->targets[n->n_targets]) return false;
  n->n_targets++;
  return true;
}

static atlas_status expect_op(parser *p, const char *op) {
  if (!is_op(cur(p), op))
    return perr(cur(p), "expected '%s', found %s", op, describe(cur(p)));
  advance(p);
  return ATLAS_OK;
}

static atlas_status expect_end(parser *p, const char *tag) {
  if (cur(p)->kind != JT_BLOCK_END) {
    return perr(cur(p), "expected '%%}' to close '%s', found %s", tag,
                describe(cur(p)));
  }
  advance(p);
  return ATLAS_OK;
}

static atlas_status parse_expr(parser *p, jinja_node **out);
static atlas_status parse_or(parser *p, jinja_node **out);
static atlas_status parse_unary(parser *p, bool with_filter, jinja_node **out);

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
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &arg));
    } else {
      if (n->n_kw > 0)
        return perr(cur(p), "positional argument after a keyword argument");
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &arg));
    }
    if (!add_kid(n, arg)) return oom();
    if (is_op(cur(p), ",")) {
      advance(p);
    } else if (!is_op(cur(p), ")")) {
      return perr(cur(p), "expected ',' or ')' in an argument list, found %s",
                  describe(cur(p)));
    }
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
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &first));
      if (is_op(cur(p), ",")) {
        n = mk(p, JN_LIST, t);
        if (!n || !add_kid(n, first)) return oom();
        n->op = 't';
        while (is_op(cur(p), ",")) {
          advance(p);
          if (is_op(cur(p), ")")) break;
          jinja_node *e = NULL;
          ATLAS_RETURN_IF_ERROR(parse_expr(p, &e));
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
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &e));
      if (!add_kid(n, e)) return oom();
      if (is_op(cur(p), ",")) {
        advance(p);
      } else if (!is_op(cur(p), "]")) {
        return perr(cur(p), "expected ',' or ']' in a list, found %s",
                    describe(cur(p)));
      }
    }
    advance(p);
  } else if (is_op(t, "{")) {
    n = mk(p, JN_DICT, t);
    if (!n) return oom();
    advance(p);
    while (!is_op(cur(p), "}")) {
      jinja_node *k = NULL, *v = NULL;
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &k));
      ATLAS_RETURN_IF_ERROR(expect_op(p, ":"));
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &v));
      if (!add_kid(n, k) || !add_kid(n, v)) return oom();
      if (is_op(cur(p), ",")) {
        advance(p);
      } else if (!is_op(cur(p), "}")) {
        return perr(cur(p), "expected ',' or '}' in a dict, found %s",
                    describe(cur(p)));
      }
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
    ATLAS_RETURN_IF_ERROR(parse_expr(p, &parts[colons]));
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

static atlas_status parse_expr(parser *p, jinja_node **out) {
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
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &n->c));
    }
    *out = n;
  }
  return ATLAS_OK;
}

// expr or `expr, expr, ...` (a tuple without parentheses, as in set a = 1, 2).
static atlas_status parse_tuple_expr(parser *p, bool with_cond,
                                     jinja_node **out) {
  jinja_tok *t = cur(p);
  jinja_node *first = NULL;
  ATLAS_RETURN_IF_ERROR(with_cond ? parse_expr(p, &first)
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
    ATLAS_RETURN_IF_ERROR(with_cond ? parse_expr(p, &e) : parse_or(p, &e));
    if (!add_kid(n, e)) return oom();
  }
  *out = n;
  return ATLAS_OK;
}

// Assignment targets: a, or a, b, or (a, b).
// `for_target`: the names a for loop binds. There, and in a set inside a
// for body, Jinja2 refuses the name `loop` (TemplateAssertionError).
static atlas_status parse_targets(parser *p, jinja_node *n, bool for_target) {
  bool paren = is_op(cur(p), "(");
  if (paren) advance(p);
  for (;;) {
    jinja_tok *t = cur(p);
    if (t->kind != JT_NAME)
      return perr(t, "expected a variable name, found %s", describe(t));
    if ((for_target || p->loop_depth > 0) && !strcmp(t->name, "loop")) {
      return perr(t,
                  "can't assign to special loop variable in for-loop target");
    }
    if (!add_target(n, t->name)) return oom();
    advance(p);
    if (!is_op(cur(p), ",")) break;
    advance(p);
  }
  if (paren) ATLAS_RETURN_IF_ERROR(expect_op(p, ")"));
  return ATLAS_OK;
}

static atlas_status parse_body(parser *p, const char *const *ends,
                               size_t n_ends, const char *opener,
                               const jinja_tok *open_tok, jinja_node **out_body,
                               const char **out_end);

static atlas_status parse_statement_inner(parser *p, jinja_node **out);

static atlas_status parse_statement(parser *p, jinja_node **out) {
  if (p->depth >= kMaxNesting)
    return perr(cur(p), "statements nest deeper than %d levels", kMaxNesting);
  p->depth++;
  atlas_status st = parse_statement_inner(p, out);
  p->depth--;
  return st;
}

// {% set targets = value %}, {% set ns.attr = value %} and
// {% set name %}...{% endset %}.
static atlas_status parse_set(parser *p, jinja_tok *kw, jinja_node **out) {
  jinja_tok *t = cur(p);
  if (t->kind == JT_NAME && is_op(peek(p, 1), ".")) {
    // set ns.attr = value
    jinja_node *n = mk(p, JN_SET, kw);
    jinja_node *target = mk(p, JN_ATTR, t), *obj = mk(p, JN_NAME, t);
    if (!n || !target || !obj || !(obj->name = strdup(t->name))) return oom();
    advance(p);
    advance(p);
    if (cur(p)->kind != JT_NAME)
      return perr(cur(p), "expected an attribute name after '.'");
    if (!(target->name = strdup(cur(p)->name))) return oom();
    target->a = obj;
    advance(p);
    if (!is_op(cur(p), "="))
      return perr(cur(p),
                  "construct 'block set of an attribute' is not supported");
    advance(p);
    n->a = target;
    ATLAS_RETURN_IF_ERROR(parse_tuple_expr(p, true, &n->b));
    ATLAS_RETURN_IF_ERROR(expect_end(p, "set"));
    *out = n;
    return ATLAS_OK;
  }
  jinja_node *n = mk(p, JN_SET, kw);
  if (!n) return oom();
  ATLAS_RETURN_IF_ERROR(parse_targets(p, n, false));
  if (is_op(cur(p), "=")) {
    advance(p);
    ATLAS_RETURN_IF_ERROR(parse_tuple_expr(p, true, &n->b));
    ATLAS_RETURN_IF_ERROR(expect_end(p, "set"));
    *out = n;
    return ATLAS_OK;
  }
  if (is_op(cur(p), "|"))
    return perr(cur(p), "construct 'filtered block set' is not supported");
  if (n->n_targets != 1) return perr(kw, "a block set assigns one name");
  ATLAS_RETURN_IF_ERROR(expect_end(p, "set"));
  n->kind = JN_SET_BLOCK;
  static const char *const kEnds[] = {"endset"};
  const char *end = "";
  ATLAS_RETURN_IF_ERROR(parse_body(p, kEnds, 1, "set", kw, &n->b, &end));
  ATLAS_RETURN_IF_ERROR(expect_end(p, "endset"));
  *out = n;
  return ATLAS_OK;
}

// {% macro name(params, with=defaults) %}...{% endmacro %}.
static atlas_status parse_macro(parser *p, jinja_tok *kw, jinja_node **out) {
  jinja_node *n = mk(p, JN_MACRO, kw);
  if (!n) return oom();
  if (cur(p)->kind != JT_NAME) return perr(cur(p), "expected a macro name");
  if (!(n->name = strdup(cur(p)->name))) return oom();
  advance(p);
  ATLAS_RETURN_IF_ERROR(expect_op(p, "("));
  while (!is_op(cur(p), ")")) {
    if (cur(p)->kind != JT_NAME)
      return perr(cur(p), "expected a parameter name, found %s",
                  describe(cur(p)));
    if (!add_target(n, cur(p)->name)) return oom();
    advance(p);
    jinja_node *def = NULL;
    if (is_op(cur(p), "=")) {
      advance(p);
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &def));
    }
    if (!add_kid(n, def)) return oom();
    if (is_op(cur(p), ",")) {
      advance(p);
    } else if (!is_op(cur(p), ")")) {
      return perr(cur(p), "expected ',' or ')' in macro parameters, found %s",
                  describe(cur(p)));
    }
  }
  advance(p);
  ATLAS_RETURN_IF_ERROR(expect_end(p, "macro"));
  static const char *const kEnds[] = {"endmacro"};
  const char *end = "";
  const int saved = p->loop_depth;
  p->loop_depth = 0;
  atlas_status st = parse_body(p, kEnds, 1, "macro", kw, &n->b, &end);
  p->loop_depth = saved;
  ATLAS_RETURN_IF_ERROR(st);
  ATLAS_RETURN_IF_ERROR(expect_end(p, "endmacro"));
  *out = n;
  return ATLAS_OK;
}

static atlas_status parse_statement_inner(parser *p, jinja_node **out) {
  advance(p);  // '{%'
  jinja_tok *kw = cur(p);
  if (kw->kind != JT_NAME)
    return perr(kw, "expected a statement name after '{%%', found %s",
                describe(kw));
  const char *k = kw->name;
  advance(p);
  if (!strcmp(k, "if") || !strcmp(k, "elif")) {
    jinja_node *n = mk(p, JN_IF, kw);
    if (!n) return oom();
    ATLAS_RETURN_IF_ERROR(parse_expr(p, &n->a));
    ATLAS_RETURN_IF_ERROR(expect_end(p, k));
    static const char *const kEnds[] = {"elif", "else", "endif"};
    const char *end = "";
    ATLAS_RETURN_IF_ERROR(parse_body(p, kEnds, 3, "if", kw, &n->b, &end));
    if (!strcmp(end, "elif")) {
      // An elif chain nests: back to '{%' 'elif', read as an if whose
      // parse consumes the final endif.
      p->i -= 2;
      ATLAS_RETURN_IF_ERROR(parse_statement(p, &n->c));
      *out = n;
      return ATLAS_OK;
    }
    if (!strcmp(end, "else")) {
      ATLAS_RETURN_IF_ERROR(expect_end(p, "else"));
      static const char *const kEndIf[] = {"endif"};
      ATLAS_RETURN_IF_ERROR(parse_body(p, kEndIf, 1, "if", kw, &n->c, &end));
    }
    ATLAS_RETURN_IF_ERROR(expect_end(p, "endif"));
    *out = n;
    return ATLAS_OK;
  }
  if (!strcmp(k, "for")) {
    jinja_node *n = mk(p, JN_FOR, kw);
    if (!n) return oom();
    ATLAS_RETURN_IF_ERROR(parse_targets(p, n, true));
    if (!is_name(cur(p), "in"))
      return perr(cur(p), "expected 'in' in a for loop, found %s",
                  describe(cur(p)));
    advance(p);
    ATLAS_RETURN_IF_ERROR(parse_tuple_expr(p, false, &n->a));
    if (is_name(cur(p), "if")) {
      advance(p);
      ATLAS_RETURN_IF_ERROR(parse_expr(p, &n->c));
    }
    if (is_name(cur(p), "recursive"))
      return perr(cur(p), "construct 'recursive for loop' is not supported");
    ATLAS_RETURN_IF_ERROR(expect_end(p, "for"));
    static const char *const kEnds[] = {"else", "endfor"};
    const char *end = "";
    p->loop_depth++;
    atlas_status st = parse_body(p, kEnds, 2, "for", kw, &n->b, &end);
    p->loop_depth--;
    ATLAS_RETURN_IF_ERROR(st);
    if (!strcmp(end, "else")) {
      ATLAS_RETURN_IF_ERROR(expect_end(p, "else"));
      static const char *const kEndFor[] = {"endfor"};
      ATLAS_RETURN_IF_ERROR(parse_body(p, kEndFor, 1, "for", kw, &n->d, &end));
    }
    ATLAS_RETURN_IF_ERROR(expect_end(p, "endfor"));
    *out = n;
    return ATLAS_OK;
  }
  if (!strcmp(k, "set")) return parse_set(p, kw, out);
  if (!strcmp(k, "macro")) return parse_macro(p, kw, out);
  if (!strcmp(k, "break") || !strcmp(k, "continue")) {
    if (p->loop_depth == 0) return perr(kw, "'%s' outside a for loop", k);
    jinja_node *n = mk(p, k[0] == 'b' ? JN_BREAK : JN_CONTINUE, kw);
    if (!n) return oom();
    ATLAS_RETURN_IF_ERROR(expect_end(p, k));
    *out = n;
    return ATLAS_OK;
  }
  if (!strcmp(k, "generation")) {
    // transformers' AssistantTracker: marks assistant text for masks; the
    // rendered text is the body unchanged.
    ATLAS_RETURN_IF_ERROR(expect_end(p, "generation"));
    static const char *const kEnds[] = {"endgeneration"};
    const char *end = "";
    ATLAS_RETURN_IF_ERROR(parse_body(p, kEnds, 1, "generation", kw, out, &end));
    return expect_end(p, "endgeneration");
  }
  return perr(kw, "construct '%s' is not supported", k);
}

static atlas_status parse_body(parser *p, const char *const *ends,
                               size_t n_ends, const char *opener,
                               const jinja_tok *open_tok, jinja_node **out_body,
                               const char **out_end) {
  jinja_node *body = mk(p, JN_BODY, cur(p));
  if (!body) return oom();
  *out_body = body;
  *out_end = "";
  for (;;) {
    jinja_tok *t = cur(p);
    if (t->kind == JT_EOF) {
      if (n_ends == 0) return ATLAS_OK;
      return perr(open_tok, "'%s' is never closed (expected '{%% %s %%}')",
                  opener, ends[n_ends - 1]);
    }
    if (t->kind == JT_TEXT) {
      jinja_node *n = mk(p, JN_TEXT, t);
      if (!n || !add_kid(body, n)) return oom();
      n->value = json_incref(t->value);
      advance(p);
    } else if (t->kind == JT_VAR_BEGIN) {
      advance(p);
      jinja_node *n = mk(p, JN_OUTPUT, t);
      if (!n || !add_kid(body, n)) return oom();
      ATLAS_RETURN_IF_ERROR(parse_tuple_expr(p, true, &n->a));
      if (cur(p)->kind != JT_VAR_END)
        return perr(cur(p), "expected '}}', found %s", describe(cur(p)));
      advance(p);
    } else if (t->kind == JT_BLOCK_BEGIN) {
      jinja_tok *kw = peek(p, 1);
      for (size_t e = 0; e < n_ends; ++e) {
        if (is_name(kw, ends[e])) {
          *out_end = ends[e];
          advance(p);
          advance(p);
          return ATLAS_OK;
        }
      }
      if (kw->kind == JT_NAME &&
          (!strncmp(kw->name, "end", 3) || !strcmp(kw->name, "elif") ||
           !strcmp(kw->name, "else"))) {
        return perr(kw, "unexpected '%s'%s%s", kw->name,
                    n_ends ? " inside " : "", n_ends ? opener : "");
      }
      jinja_node *n = NULL;
      ATLAS_RETURN_IF_ERROR(parse_statement(p, &n));
      if (!add_kid(body, n)) return oom();
    } else {
      return perr(t, "unexpected %s", describe(t));
    }
  }
}

atlas_status atlas_jinja_parse(const char *source, size_t len,
                               jinja_template **out_template) {
  *out_template = NULL;
  jinja_template *tpl = calloc(1, sizeof(*tpl));
  if (!tpl) return oom();
  parser p = {.tpl = tpl};
  atlas_status st = atlas_jinja_lex(source, len, &p.toks);
  if (st == ATLAS_OK) {
    const char *end = "";
    st = parse_body(&p, NULL, 0, "", cur(&p), &tpl->root, &end);
  }
  atlas_jinja_toks_free(&p.toks);
  if (st != ATLAS_OK) {
    atlas_jinja_template_free(tpl);
    return st;
  }
  *out_template = tpl;
  return ATLAS_OK;
}

void atlas_jinja_template_free(jinja_template *t) {
  if (!t) return;
  for (jinja_node *n = t->nodes; n;) {
    jinja_node *next = n->next_alloc;
    free(n->name);
    json_decref(n->value);
    free(n->kids);
    for (size_t i = 0; i < n->n_kw; ++i) free(n->kw_names[i]);
    free(n->kw_names);
    for (size_t i = 0; i < n->n_targets; ++i) free(n->targets[i]);
    free(n->targets);
    free(n->ops);
    free(n);
    n = next;
  }
  free(t);
}
