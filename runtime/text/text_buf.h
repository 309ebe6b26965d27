// Growable byte buffers and lists of spans over them: the currency every
// tokenizer stage (normalizer, pre-tokenizer, model, decoder) trades in.
#ifndef ATLAS_RUNTIME_TEXT_TEXT_BUF_H_
#define ATLAS_RUNTIME_TEXT_TEXT_BUF_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_text_buf {
  char *data;
  size_t len;
  size_t cap;
} atlas_text_buf;

// A piece of text: [start, start+len) of a pieces' buffer. `first` marks a
// piece that begins at offset 0 of the original input (Metaspace "first").
// A piece that is an added token carries its id and passes every stage
// untouched.
typedef struct atlas_text_span {
  size_t start;
  size_t len;
  bool first;
  bool is_token;
  uint32_t token_id;
} atlas_text_span;

typedef struct atlas_text_pieces {
  atlas_text_buf buf;
  atlas_text_span *spans;
  size_t count;
  size_t cap;
} atlas_text_pieces;

ATLAS_MUST_USE atlas_status atlas_text_buf_reserve(atlas_text_buf *b,
                                                   size_t extra);
ATLAS_MUST_USE atlas_status atlas_text_buf_append(atlas_text_buf *b,
                                                  const void *data, size_t len);
// Appends one code point as UTF-8.
ATLAS_MUST_USE atlas_status atlas_text_buf_append_cp(atlas_text_buf *b,
                                                     uint32_t cp);
void atlas_text_buf_free(atlas_text_buf *b);

void atlas_text_pieces_clear(atlas_text_pieces *p);
// Appends bytes to the buffer as a new piece.
ATLAS_MUST_USE atlas_status atlas_text_pieces_push(atlas_text_pieces *p,
                                                   const char *data, size_t len,
                                                   bool first);
// Adds a piece covering the last `len` bytes already appended to the buffer.
ATLAS_MUST_USE atlas_status atlas_text_pieces_push_tail(atlas_text_pieces *p,
                                                        size_t len, bool first);
// Copies piece `i` of `in` (bytes and flags) to the end of `out`.
ATLAS_MUST_USE atlas_status atlas_text_pieces_copy(atlas_text_pieces *out,
                                                   const atlas_text_pieces *in,
                                                   size_t i);
void atlas_text_pieces_free(atlas_text_pieces *p);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_TEXT_TEXT_BUF_H_
