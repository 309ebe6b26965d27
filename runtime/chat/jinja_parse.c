#define _POSIX_C_SOURCE 200809L  // strdup
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/chat/jinja_ast.h"
#include "atlas/runtime/chat/jinja_builtins.h"
#include "atlas/runtime/chat/jinja_error.h"
#include "atlas/runtime/chat/jinja_lex.h"
#include "atlas/runtime/chat/jinja_parser.h"

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
    ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_tuple_expr(p, true, &n->b));
    ATLAS_RETURN_IF_ERROR(expect_end(p, "set"));
    *out = n;
    return ATLAS_OK;
  }
  jinja_node *n = mk(p, JN_SET, kw);
  if (!n) return oom();
  ATLAS_RETURN_IF_ERROR(parse_targets(p, n, false));
  if (is_op(cur(p), "=")) {
    advance(p);
    ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_tuple_expr(p, true, &n->b));
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
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &def));
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
    ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &n->a));
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
    ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_tuple_expr(p, false, &n->a));
    if (is_name(cur(p), "if")) {
      advance(p);
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_expr(p, &n->c));
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
      ATLAS_RETURN_IF_ERROR(atlas_jinja_parse_tuple_expr(p, true, &n->a));
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
