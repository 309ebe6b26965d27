#include "atlas/runtime/text/decoder.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/utf8.h"

// A macro, not a function: atlas_status_make's result is then visibly never
// OK at every use, even where the analyzer stops following a call (the
// recursion through nested Sequences).
#define DECODER_OOM()                           \
  atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, \
                    "tokenizer: out of memory in a decoder")

// Appends child c to Sequence d (taking it). A Sequence child gives its own
// children instead: tokenizers runs a nested Sequence's decoders in turn,
// as the outer one does, so the chain is the same and a run never nests.
static atlas_status sequence_add(atlas_decoder *d, atlas_decoder *c) {
  const bool flat = c->kind == ATLAS_DECODER_SEQUENCE;
  const size_t add = flat ? c->child_count : 1;
  atlas_decoder **children = realloc(
      d->children, (d->child_count + add + 1) * sizeof(atlas_decoder *));
  if (!children) {
    atlas_decoder_free(c);
    return DECODER_OOM();
  }
  d->children = children;
  if (flat) {
    // An empty Sequence has no children array: memcpy takes no NULL source.
    if (add > 0) {
      memcpy(children + d->child_count, c->children,
             add * sizeof(atlas_decoder *));
    }
    c->child_count = 0;
    atlas_decoder_free(c);
  } else {
    children[d->child_count] = c;
  }
  d->child_count += add;
  return ATLAS_OK;
}

atlas_status atlas_decoder_load(json_t *v, const atlas_tj_at *at,
                                atlas_decoder **out) {
  *out = NULL;
  const char *type;
  ATLAS_RETURN_IF_ERROR(atlas_tj_type(v, at, &type));
  atlas_decoder *d = calloc(1, sizeof(*d));
  if (!d) return DECODER_OOM();
  atlas_status st = ATLAS_OK;
  if (strcmp(type, "ByteLevel") == 0) {
    d->kind = ATLAS_DECODER_BYTE_LEVEL;
  } else if (strcmp(type, "Metaspace") == 0) {
    d->kind = ATLAS_DECODER_METASPACE;
    st = atlas_tj_char(v, at, "replacement", d->replacement,
                       &d->replacement_len);
    if (!st) st = atlas_prepend_scheme_load(v, at, &d->prepend_scheme);
  } else if (strcmp(type, "ByteFallback") == 0) {
    d->kind = ATLAS_DECODER_BYTE_FALLBACK;
  } else if (strcmp(type, "Fuse") == 0) {
    d->kind = ATLAS_DECODER_FUSE;
  } else if (strcmp(type, "Strip") == 0) {
    d->kind = ATLAS_DECODER_STRIP;
    uint64_t start = 0, stop = 0;
    st = atlas_tj_char(v, at, "content", d->content, &d->content_len);
    if (!st) st = atlas_tj_uint(v, at, "start", SIZE_MAX, &start);
    if (!st) st = atlas_tj_uint(v, at, "stop", SIZE_MAX, &stop);
    d->start = (size_t)start;
    d->stop = (size_t)stop;
  } else if (strcmp(type, "Replace") == 0) {
    d->kind = ATLAS_DECODER_REPLACE;
    atlas_tj_at k = atlas_tj_key(at, "pattern");
    const char *s;
    size_t n;
    st =
        atlas_text_pattern_load(atlas_tj_member(v, "pattern"), &k, &d->pattern);
    if (!st) st = atlas_tj_string(v, at, "content", &s, &n);
    if (!st) {
      d->with = malloc(n + 1);
      if (!d->with) {
        st = DECODER_OOM();
      } else {
        memcpy(d->with, s, n + 1);
        d->with_len = n;
      }
    }
  } else if (strcmp(type, "Sequence") == 0) {
    d->kind = ATLAS_DECODER_SEQUENCE;
    json_t *arr;
    st = atlas_tj_array(v, at, "decoders", &arr);
    if (!st) {
      atlas_tj_at k = atlas_tj_key(at, "decoders");
      for (size_t i = 0; !st && i < json_array_size(arr); i++) {
        atlas_tj_at ki = atlas_tj_index(&k, i);
        atlas_decoder *c = NULL;
        st = atlas_decoder_load(json_array_get(arr, i), &ki, &c);
        if (!st) st = sequence_add(d, c);
      }
    }
  } else {
    atlas_tj_at k = atlas_tj_key(at, "type");
    st = atlas_tj_unsupported(&k,
                              "decoder \"%s\" is not supported (supported: "
                              "ByteLevel, Metaspace, ByteFallback, Fuse, "
                              "Strip, Replace, Sequence)",
                              type);
  }
  if (st) {
    atlas_decoder_free(d);
    return st;
  }
  *out = d;
  return ATLAS_OK;
}

void atlas_decoder_free(atlas_decoder *d) {
  if (!d) return;
  for (size_t i = 0; i < d->child_count; i++)
    atlas_decoder_free(d->children[i]);
  free(d->children);
  atlas_text_pattern_free(&d->pattern);
  free(d->with);
  free(d);
}

static const char *tok(const atlas_text_pieces *p, size_t i) {
  return p->buf.data + p->spans[i].start;
}

// All tokens joined, each mapped back to bytes when every character is a
// byte-level symbol (else kept as is), then from_utf8_lossy.
static atlas_status run_byte_level(const atlas_byte_level *bl,
                                   atlas_text_buf *bytes_buf,
                                   const atlas_text_pieces *in,
                                   atlas_text_pieces *out) {
  atlas_text_buf bytes = *bytes_buf;
  bytes.len = 0;
  atlas_status st = ATLAS_OK;
  for (size_t i = 0; !st && i < in->count; i++) {
    const char *s = tok(in, i);
    size_t n = in->spans[i].len;
    size_t mark = bytes.len;
    bool all = true;
    for (size_t j = 0; all && j < n;) {
      size_t cl;
      uint32_t cp = atlas_utf8_decode(s + j, &cl);
      if (cp >= ATLAS_BYTE_LEVEL_MAX_CP || bl->cp_to_byte[cp] < 0) {
        all = false;
        break;
      }
      unsigned char b = (unsigned char)bl->cp_to_byte[cp];
      st = atlas_text_buf_append(&bytes, &b, 1);
      if (st) break;
      j += cl;
    }
    if (!st && !all) {
      bytes.len = mark;
      st = atlas_text_buf_append(&bytes, s, n);
    }
  }
  if (!st) st = atlas_utf8_append_lossy(&out->buf, bytes.data, bytes.len);
  if (!st) st = atlas_text_pieces_push_tail(out, out->buf.len, false);
  *bytes_buf = bytes;  // kept, grown or not, for the next run
  return st;
}

static atlas_status run_metaspace(const atlas_decoder *d,
                                  const atlas_text_pieces *in,
                                  atlas_text_pieces *out) {
  for (size_t i = 0; i < in->count; i++) {
    const char *s = tok(in, i);
    size_t n = in->spans[i].len;
    size_t before = out->buf.len;
    for (size_t j = 0; j < n;) {
      size_t cl;
      atlas_utf8_decode(s + j, &cl);
      if (cl == d->replacement_len && memcmp(s + j, d->replacement, cl) == 0) {
        if (!(i == 0 && d->prepend_scheme != ATLAS_PREPEND_NEVER)) {
          ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&out->buf, " ", 1));
        }
      } else {
        ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(&out->buf, s + j, cl));
      }
      j += cl;
    }
    ATLAS_RETURN_IF_ERROR(
        atlas_text_pieces_push_tail(out, out->buf.len - before, false));
  }
  return ATLAS_OK;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xNN>" -> byte (u8::from_str_radix(NN, 16), which also takes "+N").
static int byte_token(const char *s, size_t n) {
  if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
  if (s[3] == '+') return hexval(s[4]);
  int hi = hexval(s[3]), lo = hexval(s[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static atlas_status flush_bytes(atlas_text_buf *bytes, atlas_text_pieces *out) {
  if (bytes->len == 0) return ATLAS_OK;
  if (atlas_utf8_first_invalid(bytes->data, bytes->len) == bytes->len) {
    ATLAS_RETURN_IF_ERROR(
        atlas_text_pieces_push(out, bytes->data, bytes->len, false));
  } else {
    for (size_t i = 0; i < bytes->len; i++) {
      ATLAS_RETURN_IF_ERROR(
          atlas_text_pieces_push(out, "\xEF\xBF\xBD", 3, false));
    }
  }
  bytes->len = 0;
  return ATLAS_OK;
}

static atlas_status run_byte_fallback(atlas_text_buf *bytes_buf,
                                      const atlas_text_pieces *in,
                                      atlas_text_pieces *out) {
  atlas_text_buf bytes = *bytes_buf;
  bytes.len = 0;
  atlas_status st = ATLAS_OK;
  for (size_t i = 0; !st && i < in->count; i++) {
    int b = byte_token(tok(in, i), in->spans[i].len);
    if (b >= 0) {
      unsigned char c = (unsigned char)b;
      st = atlas_text_buf_append(&bytes, &c, 1);
      continue;
    }
    st = flush_bytes(&bytes, out);
    if (!st) st = atlas_text_pieces_copy(out, in, i);
  }
  if (!st) st = flush_bytes(&bytes, out);
  *bytes_buf = bytes;
  return st;
}

static atlas_status run_strip(const atlas_decoder *d,
                              const atlas_text_pieces *in,
                              atlas_text_pieces *out) {
  for (size_t i = 0; i < in->count; i++) {
    const char *s = tok(in, i);
    size_t n = in->spans[i].len;
    size_t cut_start = 0, cut_stop = n;
    for (size_t k = 0; k < d->start && cut_start < n; k++) {
      if (n - cut_start >= d->content_len &&
          memcmp(s + cut_start, d->content, d->content_len) == 0) {
        cut_start += d->content_len;
      } else {
        break;
      }
    }
    for (size_t k = 0; k < d->stop && cut_stop > 0; k++) {
      if (cut_stop >= d->content_len &&
          memcmp(s + cut_stop - d->content_len, d->content, d->content_len) ==
              0) {
        cut_stop -= d->content_len;
      } else {
        break;
      }
    }
    if (cut_stop < cut_start) cut_stop = cut_start;
    ATLAS_RETURN_IF_ERROR(atlas_text_pieces_push(out, s + cut_start,
                                                 cut_stop - cut_start, false));
  }
  return ATLAS_OK;
}

static atlas_status run_replace(const atlas_decoder *d, atlas_text_matcher *m,
                                const atlas_text_pieces *in,
                                atlas_text_pieces *out) {
  for (size_t i = 0; i < in->count; i++) {
    const char *s = tok(in, i);
    size_t n = in->spans[i].len;
    size_t before = out->buf.len, pos = 0, copied = 0;
    m->have_last = false;
    for (;;) {
      bool found;
      size_t ms, me;
      ATLAS_RETURN_IF_ERROR(atlas_text_pattern_next(&d->pattern, m, s, n, &pos,
                                                    &found, &ms, &me));
      if (!found) break;
      if (ms == me) continue;
      ATLAS_RETURN_IF_ERROR(
          atlas_text_buf_append(&out->buf, s + copied, ms - copied));
      ATLAS_RETURN_IF_ERROR(
          atlas_text_buf_append(&out->buf, d->with, d->with_len));
      copied = me;
    }
    ATLAS_RETURN_IF_ERROR(
        atlas_text_buf_append(&out->buf, s + copied, n - copied));
    ATLAS_RETURN_IF_ERROR(
        atlas_text_pieces_push_tail(out, out->buf.len - before, false));
  }
  return ATLAS_OK;
}

void atlas_decoder_scratch_free(atlas_decoder_scratch *s) {
  atlas_text_pieces_free(&s->tmp[0]);
  atlas_text_pieces_free(&s->tmp[1]);
  atlas_text_buf_free(&s->bytes);
}

atlas_status atlas_decoder_run(const atlas_decoder *d,
                               const atlas_byte_level *bl,
                               atlas_text_matcher *m,
                               atlas_decoder_scratch *scratch,
                               const atlas_text_pieces *in,
                               atlas_text_pieces *out) {
  atlas_text_pieces_clear(out);
  switch (d->kind) {
    case ATLAS_DECODER_BYTE_LEVEL:
      return run_byte_level(bl, &scratch->bytes, in, out);
    case ATLAS_DECODER_METASPACE:
      return run_metaspace(d, in, out);
    case ATLAS_DECODER_BYTE_FALLBACK:
      return run_byte_fallback(&scratch->bytes, in, out);
    case ATLAS_DECODER_FUSE: {
      for (size_t i = 0; i < in->count; i++) {
        ATLAS_RETURN_IF_ERROR(
            atlas_text_buf_append(&out->buf, tok(in, i), in->spans[i].len));
      }
      return atlas_text_pieces_push_tail(out, out->buf.len, false);
    }
    case ATLAS_DECODER_STRIP:
      return run_strip(d, in, out);
    case ATLAS_DECODER_REPLACE:
      return run_replace(d, m, in, out);
    case ATLAS_DECODER_SEQUENCE: {
      // The load flattened nested Sequences: scratch->tmp is this run's.
      atlas_status st = ATLAS_OK;
      const atlas_text_pieces *src = in;
      for (size_t i = 0; !st && i < d->child_count; i++) {
        if (d->children[i]->kind == ATLAS_DECODER_SEQUENCE) {
          return atlas_status_make(ATLAS_STATUS_INTERNAL,
                                   "tokenizer: a nested decoder Sequence");
        }
        atlas_text_pieces *dst =
            i + 1 == d->child_count ? out : &scratch->tmp[i % 2];
        st = atlas_decoder_run(d->children[i], bl, m, scratch, src, dst);
        src = dst;
      }
      if (!st && d->child_count == 0) {
        for (size_t i = 0; !st && i < in->count; i++) {
          st = atlas_text_pieces_copy(out, in, i);
        }
      }
      return st;
    }
  }
  return atlas_status_make(ATLAS_STATUS_INTERNAL, "tokenizer: bad decoder");
}
