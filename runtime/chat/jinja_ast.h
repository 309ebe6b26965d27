// The syntax tree of a chat template: what atlas_jinja_parse builds and
// atlas_jinja_render walks. Every node keeps its line and column so an error at
// run time can point at the construct.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_AST_H_
#define ATLAS_RUNTIME_CHAT_JINJA_AST_H_

#include <jansson.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"

typedef enum jinja_node_kind {
  // Expressions.
  JN_CONST,    // value: a literal
  JN_NAME,     // name
  JN_LIST,     // kids: elements ([a, b]; op 't' for a tuple (a, b))
  JN_DICT,     // kids: key, value, key, value, ...
  JN_ATTR,     // a.name
  JN_ITEM,     // a[b]
  JN_SLICE,    // a[b:c:d]; b, c, d may be NULL
  JN_CALL,     // a(kids...); the last n_kw kids are keyword args (kw_names)
  JN_FILTER,   // kids[0] | name(kids[1..]); keyword args as for calls
  JN_TEST,     // kids[0] is [not] name(kids[1..]); negated
  JN_UNARY,    // op a   (op: '-' '+' 'n' for not)
  JN_BINARY,   // a op b (op: + - * / F(//) % P(**) ~)
  JN_COMPARE,  // a (ops[i] kids[i])...: chained comparisons
  JN_AND,      // a and b
  JN_OR,       // a or b
  JN_COND,     // b if a else c (c may be NULL)
  // Statements.
  JN_BODY,    // kids: statements in order
  JN_TEXT,    // value: the text
  JN_OUTPUT,  // {{ a }}
  JN_IF,      // if a: b else c (c: NULL, a JN_BODY, or a JN_IF for elif)
  JN_FOR,     // for targets (names) in a [if c]: b else d
  JN_SET,     // set targets = a; or set a.name = b (JN_ATTR target in kids[0])
  JN_SET_BLOCK,  // set name: b captured
  JN_MACRO,      // macro name(names, defaults in kids) body b
  JN_BREAK,
  JN_CONTINUE,
} jinja_node_kind;

// Comparison operators of JN_COMPARE.
enum {
  JINJA_CMP_EQ = 1,
  JINJA_CMP_NE,
  JINJA_CMP_LT,
  JINJA_CMP_LE,
  JINJA_CMP_GT,
  JINJA_CMP_GE,
  JINJA_CMP_IN,
  JINJA_CMP_NOT_IN,
};

typedef struct jinja_node jinja_node;
struct jinja_node {
  jinja_node_kind kind;
  int line;
  int col;
  char op;
  int negated;
  char *name;     // NAME, ATTR, FILTER, TEST, MACRO, SET_BLOCK
  json_t *value;  // CONST, TEXT
  jinja_node *a, *b, *c, *d;
  jinja_node **kids;
  size_t n_kids;
  size_t n_kw;      // CALL/FILTER/TEST: trailing keyword args
  char **kw_names;  // n_kw names
  char **targets;   // FOR/SET/MACRO params
  size_t n_targets;
  int *ops;                // COMPARE: n_kids operators
  jinja_node *next_alloc;  // every node of a template, for freeing
};

typedef struct jinja_template {
  jinja_node *root;   // JN_BODY
  jinja_node *nodes;  // allocation list
} jinja_template;

// Parses a template (Jinja2 syntax with trim_blocks and lstrip_blocks, as
// transformers configures it). A construct outside the supported subset is
// refused with its name, line and column.
atlas_status atlas_jinja_parse(const char *source, size_t len,
                               jinja_template **out_template);
void atlas_jinja_template_free(jinja_template *t);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_AST_H_
