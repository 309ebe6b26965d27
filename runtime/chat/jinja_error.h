// The chat-template engine's errors, in one form for the lexer, the parser
// and the renderer: "chat template line L column C: what", and out of memory
// named by the stage that ran out.
#ifndef ATLAS_RUNTIME_CHAT_JINJA_ERROR_H_
#define ATLAS_RUNTIME_CHAT_JINJA_ERROR_H_

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/chat/jinja_text.h"

// INVALID_ARGUMENT at a template position (1-based line and column).
atlas_status atlas_jinja_error_at(int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// OUT_OF_MEMORY "while <stage>" (lexing, parsing, rendering).
atlas_status atlas_jinja_oom(const char *stage);

// What a buffer's failed appends mean: ATLAS_OK when none failed;
// INVALID_ARGUMENT when one would have passed JINJA_MAX_BUILT_TEXT; else
// OUT_OF_MEMORY "while <stage>".
atlas_status atlas_jinja_buf_status(const jinja_buf *b, const char *stage);

// st with the template position put in front, its code kept; st itself when
// it is ATLAS_OK or already names a position (the innermost one wins).
atlas_status atlas_jinja_error_annotate(atlas_status st, int line, int col);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_ERROR_H_
