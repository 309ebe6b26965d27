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

struct atlas_text_pieces;
// Called when a list with a consumer holds a batch (ATLAS_TEXT_BATCH_PIECES
// pieces or ATLAS_TEXT_BATCH_BYTES bytes): passes the pieces on and clears
// the list, so a stage never holds the whole text's pieces at once.
typedef atlas_status (*atlas_text_pieces_full_fn)(void *ctx,
                                                  struct atlas_text_pieces *p);
#define ATLAS_TEXT_BATCH_PIECES 4096u
#define ATLAS_TEXT_BATCH_BYTES (256u << 10)

typedef struct atlas_text_pieces {
  atlas_text_buf buf;
  atlas_text_span *spans;
  size_t count;
  size_t cap;
  // When set, pieces pushed from inside [base, base + base_len) are kept as
  // spans of base, not copied (a split of the caller's text costs no copy of
  // it); spans then index base, not buf (atlas_text_pieces_bytes).
  const char *base;
  size_t base_len;
  atlas_text_pieces_full_fn full;  // may be NULL: the list only grows
  void *full_ctx;
  size_t batch;  // pieces a batch holds; 0: the ATLAS_TEXT_BATCH_* defaults
} atlas_text_pieces;

// The bytes the spans of p index.
static inline const char *atlas_text_pieces_bytes(const atlas_text_pieces *p) {
  return p->base != NULL ? p->base : p->buf.data;
}

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
// Appends an added token's bytes as a piece that carries its id.
ATLAS_MUST_USE atlas_status atlas_text_pieces_push_token(atlas_text_pieces *p,
                                                         const char *data,
                                                         size_t len, bool first,
                                                         uint32_t id);
// Adds a piece covering the last `len` bytes already appended to the buffer.
ATLAS_MUST_USE atlas_status atlas_text_pieces_push_tail(atlas_text_pieces *p,
                                                        size_t len, bool first);
// Passes what the list holds to its consumer (atlas_text_pieces.full), if it
// has one and holds anything.
ATLAS_MUST_USE atlas_status atlas_text_pieces_flush(atlas_text_pieces *p);
// Copies piece `i` of `in` (bytes and flags) to the end of `out`.
ATLAS_MUST_USE atlas_status atlas_text_pieces_copy(atlas_text_pieces *out,
                                                   const atlas_text_pieces *in,
                                                   size_t i);
void atlas_text_pieces_free(atlas_text_pieces *p);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_TEXT_TEXT_BUF_H_
