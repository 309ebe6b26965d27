// The parser's state and token helpers, shared by the statement parser
// (jinja_parse.c) and the expression parser (jinja_parse_expr.c). Private to
// the engine.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_PARSER_H_
#define ATLAS_RUNTIME_CHAT_JINJA_PARSER_H_

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_ast.h"
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

static inline jinja_tok *cur(parser *p) { return &p->toks.v[p->i]; }
static inline jinja_tok *peek(parser *p, size_t k) {
  size_t j = p->i + k;
  return &p->toks.v[j < p->toks.n ? j : p->toks.n - 1];
}
static inline void advance(parser *p) {
  if (p->i + 1 < p->toks.n) p->i++;
}
static inline bool is_op(const jinja_tok *t, const char *op) {
  return t->kind == JT_OP && strcmp(t->text, op) == 0;
}
static inline bool is_name(const jinja_tok *t, const char *name) {
  return t->kind == JT_NAME && strcmp(t->name, name) == 0;
}

static inline const char *describe(const jinja_tok *t) {
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

static inline atlas_status oom(void) { return atlas_jinja_oom("parsing"); }

static inline jinja_node *mk(parser *p, jinja_node_kind kind,
                             const jinja_tok *at) {
  jinja_node *n = calloc(1, sizeof(*n));
  if (!n) return NULL;
  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  n->next_alloc = p->tpl->nodes;
  p->tpl->nodes = n;
  return n;
}

static inline bool add_kid(jinja_node *n, jinja_node *kid) {
  jinja_node **v = realloc(n->kids, (n->n_kids + 1) * sizeof(jinja_node *));
  if (!v) return false;
  n->kids = v;
  n->kids[n->n_kids++] = kid;
  return true;
}

static inline bool add_target(jinja_node *n, const char *name) {
  char **v = realloc(n->targets, (n->n_targets + 1) * sizeof(*v));
  if (!v) return false;
  n->targets = v;
  n->targets[n->n_targets] = strdup(name);
  if (!n->targets[n->n_targets]) return false;
  n->n_targets++;
  return true;
}

static inline atlas_status expect_op(parser *p, const char *op) {
  if (!is_op(cur(p), op))
    return perr(cur(p), "expected '%s', found %s", op, describe(cur(p)));
  advance(p);
  return ATLAS_OK;
}

static inline atlas_status expect_end(parser *p, const char *tag) {
  if (cur(p)->kind != JT_BLOCK_END) {
    return perr(cur(p), "expected '%%}' to close '%s', found %s", tag,
                describe(cur(p)));
  }
  advance(p);
  return ATLAS_OK;
}

// Expressions (jinja_parse_expr.c).
atlas_status atlas_jinja_parse_expr(parser *p, jinja_node **out);
atlas_status atlas_jinja_parse_tuple_expr(parser *p, bool with_cond,
                                          jinja_node **out);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_PARSER_H_
