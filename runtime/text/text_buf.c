#include "atlas/runtime/text/text_buf.h"

#include <stdlib.h>
#include <string.h>

atlas_status atlas_text_buf_reserve(atlas_text_buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return ATLAS_OK;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra) cap *= 2;
  char *data = realloc(b->data, cap);
  if (!data) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "tokenizer: out of memory growing a %zu-byte "
                             "text buffer",
                             cap);
  }
  b->data = data;
  b->cap = cap;
  return ATLAS_OK;
}

atlas_status atlas_text_buf_append(atlas_text_buf *b, const void *data,
                                   size_t len) {
  if (len == 0) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_reserve(b, len));
  memcpy(b->data + b->len, data, len);
  b->len += len;
  return ATLAS_OK;
}

atlas_status atlas_text_buf_append_cp(atlas_text_buf *b, uint32_t cp) {
  char s[4];
  size_t n;
  if (cp < 0x80) {
    s[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    s[0] = (char)(0xC0 | (cp >> 6));
    s[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    s[0] = (char)(0xE0 | (cp >> 12));
    s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    s[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    s[0] = (char)(0xF0 | (cp >> 18));
    s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    s[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    s[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return atlas_text_buf_append(b, s, n);
}

void atlas_text_buf_free(atlas_text_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void atlas_text_pieces_clear(atlas_text_pieces *p) {
  p->buf.len = 0;
  p->count = 0;
}

// Adds the span [start, start + len) and hands a full batch to the list's
// consumer (after which the list is empty: callers never look back).
static atlas_status push_span(atlas_text_pieces *p, size_t start, size_t len,
                              bool first, bool is_token, uint32_t token_id) {
  if (p->count == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 64;
    atlas_text_span *spans = realloc(p->spans, cap * sizeof(*spans));
    if (!spans) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "tokenizer: out of memory growing a list of "
                               "%zu pieces",
                               cap);
    }
    p->spans = spans;
    p->cap = cap;
  }
  p->spans[p->count].start = start;
  p->spans[p->count].len = len;
  p->spans[p->count].first = first;
  p->spans[p->count].is_token = is_token;
  p->spans[p->count].token_id = token_id;
  p->count++;
  bool full = p->batch != 0 ? p->count >= p->batch
                            : p->count >= ATLAS_TEXT_BATCH_PIECES ||
                                  p->buf.len >= ATLAS_TEXT_BATCH_BYTES;
  if (p->full != NULL && full) {
    return atlas_text_pieces_flush(p);
  }
  return ATLAS_OK;
}

atlas_status atlas_text_pieces_flush(atlas_text_pieces *p) {
  if (p->full == NULL || p->count == 0) return ATLAS_OK;
  atlas_status st = p->full(p->full_ctx, p);
  atlas_text_pieces_clear(p);
  return st;
}

atlas_status atlas_text_pieces_push_tail(atlas_text_pieces *p, size_t len,
                                         bool first) {
  // A list with a piece has a buffer, even when every piece is empty:
  // readers form buf.data + start.
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_reserve(&p->buf, 1));
  return push_span(p, p->buf.len - len, len, first, false, 0);
}

static atlas_status push_piece(atlas_text_pieces *p, const char *data,
                               size_t len, bool first, bool is_token,
                               uint32_t token_id) {
  if (p->base != NULL && data >= p->base &&
      (size_t)(data - p->base) <= p->base_len &&
      len <= p->base_len - (size_t)(data - p->base)) {
    return push_span(p, (size_t)(data - p->base), len, first, is_token,
                     token_id);
  }
  if (p->base != NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "tokenizer: a piece outside the borrowed text");
  }
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&p->buf, data, len));
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_reserve(&p->buf, 1));
  return push_span(p, p->buf.len - len, len, first, is_token, token_id);
}

atlas_status atlas_text_pieces_push(atlas_text_pieces *p, const char *data,
                                    size_t len, bool first) {
  return push_piece(p, data, len, first, false, 0);
}

atlas_status atlas_text_pieces_push_token(atlas_text_pieces *p,
                                          const char *data, size_t len,
                                          bool first, uint32_t id) {
  return push_piece(p, data, len, first, true, id);
}

atlas_status atlas_text_pieces_copy(atlas_text_pieces *out,
                                    const atlas_text_pieces *in, size_t i) {
  const atlas_text_span *s = &in->spans[i];
  return push_piece(out, atlas_text_pieces_bytes(in) + s->start, s->len,
                    s->first, s->is_token, s->token_id);
}

void atlas_text_pieces_free(atlas_text_pieces *p) {
  atlas_text_buf_free(&p->buf);
  free(p->spans);
  memset(p, 0, sizeof(*p));
}
