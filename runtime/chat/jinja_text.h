// Text helpers for the chat-template engine: a growable byte buffer that
// records running out of memory instead of failing each append, and the bits
// of Python's str semantics templates lean on (code points, str.isspace).
#ifndef ATLAS_RUNTIME_CHAT_JINJA_TEXT_H_
#define ATLAS_RUNTIME_CHAT_JINJA_TEXT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jinja_buf {
  char *data;  // NUL-terminated when not NULL
  size_t len;
  size_t cap;
  bool oom;        // an append failed; the contents are incomplete
  bool too_large;  // with oom: an append would have passed JINJA_MAX_BUILT_TEXT
} jinja_buf;

void atlas_jinja_buf_append(jinja_buf *b, const char *s, size_t n);
// `times` copies of s[0..n) (s not inside b), by doubling: a few memcpy
// calls, not one append a copy ('@' * 60000000 took 5 s that way).
void atlas_jinja_buf_append_repeated(jinja_buf *b, const char *s, size_t n,
                                     size_t times);
void atlas_jinja_buf_puts(jinja_buf *b, const char *s);
void atlas_jinja_buf_putc(jinja_buf *b, char c);
void atlas_jinja_buf_printf(jinja_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void atlas_jinja_buf_free(jinja_buf *b);

// The most text one buffer may hold: a string the template builds (by
// repetition, ~, indent, a filter) or the rendered output. Python would try
// to build any size; a template asking for more is refused, not run.
#define JINJA_MAX_BUILT_TEXT (64ull << 20)
// The most items a list built by + or * may hold (lists grow no other way:
// range() is capped at 100000 items, mutating methods are undefined).
#define JINJA_MAX_BUILT_ITEMS (1ull << 20)

// Decodes one UTF-8 code point at s[*i] (advancing *i); invalid bytes decode
// as themselves, one at a time, so every byte string has a length.
uint32_t atlas_jinja_utf8_next(const char *s, size_t n, size_t *i);
void atlas_jinja_utf8_put(jinja_buf *b, uint32_t cp);
// Number of code points (Python's len of a str).
size_t atlas_jinja_utf8_length(const char *s, size_t n);
// Byte offset of code point `index` (n if past the end).
size_t atlas_jinja_utf8_offset(const char *s, size_t n, size_t index);

// Python's repr() of a str: quoted, with escapes where Python writes them.
void atlas_jinja_repr_string(const char *s, size_t n, jinja_buf *out);

// Python's str.isspace() for one code point.
bool atlas_jinja_is_py_space(uint32_t cp);

#endif  // ATLAS_RUNTIME_CHAT_JINJA_TEXT_H_
