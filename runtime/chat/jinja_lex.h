// Splits a chat template into text and the tokens inside its tags, applying
// Jinja2's whitespace control ({%- -%} {{- -}} {#- -#}, {%+ %}) and
// transformers' environment (trim_blocks, lstrip_blocks; one trailing newline
// of the source dropped, as Jinja2's keep_trailing_newline=False does).
#ifndef ATLAS_RUNTIME_CHAT_JINJA_LEX_H_
#define ATLAS_RUNTIME_CHAT_JINJA_LEX_H_

#include <jansson.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"

typedef enum jinja_tok_kind {
  JT_TEXT,         // value: string
  JT_VAR_BEGIN,    // {{
  JT_VAR_END,      // }}
  JT_BLOCK_BEGIN,  // {%
  JT_BLOCK_END,    // %}
  JT_NAME,         // text
  JT_STRING,       // value: string (escapes resolved)
  JT_INT,          // value: integer
  JT_FLOAT,        // value: real
  JT_OP,           // text: the operator
  JT_EOF,
} jinja_tok_kind;

typedef struct jinja_tok {
  jinja_tok_kind kind;
  int line;
  int col;
  char text[16];  // NAME (truncated copy for keywords) / OP
  char *name;     // NAME: full name, owned
  json_t *value;  // TEXT/STRING/INT/FLOAT: owned
} jinja_tok;

typedef struct jinja_toks {
  jinja_tok *v;
  size_t n;
} jinja_toks;

atlas_status atlas_jinja_lex(const char *source, size_t len,
                             jinja_toks *out_toks);
void atlas_jinja_toks_free(jinja_toks *toks);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_LEX_H_
