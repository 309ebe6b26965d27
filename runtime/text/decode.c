// Decoding ids to text (tokenizers' Tokenizer::decode, plus transformers'
// clean_up_tokenization_spaces as transformers 5 applies it) and the
// streaming decoder
// (tokenizers' DecodeStream), which never emits half a character.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/text/tokenizer.h"
#include "atlas/runtime/text/tokenizer_impl.h"

static atlas_status oom(void) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "tokenizer: out of memory while decoding");
}

// transformers' clean_up_tokenization: each replacement over the whole text,
// in this order (a later one sees the result of the earlier ones).
static atlas_status clean_up(atlas_text_buf *text) {
  const char *const pairs[][2] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
      {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
      {" 've", "'ve"}, {" 're", "'re"},
  };
  atlas_text_buf out = {0};
  for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++) {
    size_t flen = strlen(pairs[p][0]), tlen = strlen(pairs[p][1]);
    out.len = 0;
    size_t i = 0, copied = 0;
    while (i + flen <= text->len) {
      if (memcmp(text->data + i, pairs[p][0], flen) == 0) {
        atlas_status st =
            atlas_text_buf_append(&out, text->data + copied, i - copied);
        if (!st) st = atlas_text_buf_append(&out, pairs[p][1], tlen);
        if (st) {
          atlas_text_buf_free(&out);
          return st;
        }
        i += flen;
        copied = i;
      } else {
        i++;
      }
    }
    if (copied == 0) continue;  // nothing replaced
    atlas_status st =
        atlas_text_buf_append(&out, text->data + copied, text->len - copied);
    if (st) {
      atlas_text_buf_free(&out);
      return st;
    }
    atlas_text_buf swap = *text;
    *text = out;
    out = swap;
  }
  atlas_text_buf_free(&out);
  return ATLAS_OK;
}

// transformers 5 (TokenizersBackend._decode) skips the clean-up for a BPE
// model unless clean_up_tokenization_spaces_for_bpe_even_though_it_will_
// corrupt_output is set too: it strips spaces that BPE text really has.
// Every model Atlas loads is BPE (tokenizer.c refuses the others by name),
// so the clean-up runs only when forced; a non-BPE model added later must
// take the plain flag alone here.
static bool wants_clean_up(const atlas_tokenizer_decode_options *opt) {
  return opt->clean_up_tokenization_spaces && opt->clean_up_even_for_bpe;
}

// What a decode works in. A stream keeps one across its steps (each step
// decodes two or three times, and a server steps once a generated token);
// a one-shot decode makes and frees its own.
typedef struct decode_scratch {
  atlas_text_pieces tokens, decoded;
  atlas_decoder_scratch chain;
  atlas_text_matcher m;
  bool have_matcher;
} decode_scratch;

static void decode_scratch_free(decode_scratch *s) {
  atlas_text_pieces_free(&s->tokens);
  atlas_text_pieces_free(&s->decoded);
  atlas_decoder_scratch_free(&s->chain);
  if (s->have_matcher) atlas_text_matcher_free(&s->m);
  memset(s, 0, sizeof(*s));
}

// id's token as decoding sees it, or NULL where decoding drops the id: an
// id tokenizers does not know, or a special token when they are skipped.
static const char *decoded_token(const atlas_tokenizer *t,
                                 const atlas_tokenizer_decode_options *opt,
                                 uint32_t id, size_t *len) {
  const char *s = atlas_tokenizer_id_to_token(t, id, len);
  if (s && opt->skip_special_tokens &&
      atlas_tokenizer_text_is_special(t, s, *len)) {
    return NULL;
  }
  return s;
}

static atlas_status decode_into(const atlas_tokenizer *t, const uint32_t *ids,
                                size_t count,
                                const atlas_tokenizer_decode_options *opt,
                                decode_scratch *sc, atlas_text_buf *out) {
  atlas_text_pieces_clear(&sc->tokens);
  atlas_status st = ATLAS_OK;
  if (t->decoder && !sc->have_matcher) {
    st = atlas_text_matcher_init(&sc->m);
    sc->have_matcher = st == ATLAS_OK;
  }
  for (size_t i = 0; !st && i < count; i++) {
    size_t len;
    const char *s = decoded_token(t, opt, ids[i], &len);
    if (s) st = atlas_text_pieces_push(&sc->tokens, s, len, i == 0);
  }
  out->len = 0;
  const atlas_text_pieces *tokens = &sc->tokens, *decoded = &sc->decoded;
  if (!st && t->decoder) {
    st = atlas_decoder_run(t->decoder, &t->byte_level, &sc->m, &sc->chain,
                           tokens, &sc->decoded);
    for (size_t i = 0; !st && i < decoded->count; i++) {
      st = atlas_text_buf_append(out,
                                 decoded->buf.data + decoded->spans[i].start,
                                 decoded->spans[i].len);
    }
  } else if (!st) {
    for (size_t i = 0; !st && i < tokens->count; i++) {
      if (i) st = atlas_text_buf_append(out, " ", 1);
      if (!st) {
        st = atlas_text_buf_append(out,
                                   tokens->buf.data + tokens->spans[i].start,
                                   tokens->spans[i].len);
      }
    }
  }
  if (!st && wants_clean_up(opt)) st = clean_up(out);
  if (!st) st = atlas_text_buf_reserve(out, 1);
  if (!st) out->data[out->len] = '\0';
  return st;
}

atlas_status atlas_tokenizer_decode_ex(
    const atlas_tokenizer *t, const uint32_t *ids, size_t count,
    const atlas_tokenizer_decode_options *options, char **out_text,
    size_t *out_len) {
  *out_text = NULL;
  *out_len = 0;
  if (!t || !options || (!ids && count)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_decode: NULL argument");
  }
  atlas_text_buf out = {0};
  decode_scratch sc = {0};
  atlas_status st = decode_into(t, ids, count, options, &sc, &out);
  decode_scratch_free(&sc);
  if (st) {
    atlas_text_buf_free(&out);
    return st;
  }
  *out_text = out.data;
  *out_len = out.len;
  return ATLAS_OK;
}

atlas_status atlas_tokenizer_decode(const atlas_tokenizer *t,
                                    const uint32_t *ids, size_t count,
                                    bool skip_special, char **out_text,
                                    size_t *out_len) {
  atlas_tokenizer_decode_options opt = {skip_special, false, false};
  return atlas_tokenizer_decode_ex(t, ids, count, &opt, out_text, out_len);
}

atlas_status atlas_tokenizer_clean_up(const char *text, size_t len,
                                      char **out_text, size_t *out_len) {
  *out_text = NULL;
  *out_len = 0;
  if (!text && len) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_tokenizer_clean_up: NULL text");
  }
  atlas_text_buf buf = {0};
  atlas_status st = len ? atlas_text_buf_append(&buf, text, len) : ATLAS_OK;
  if (!st) st = clean_up(&buf);
  if (!st) st = atlas_text_buf_reserve(&buf, 1);
  if (st) {
    atlas_text_buf_free(&buf);
    return st;
  }
  buf.data[buf.len] = '\0';
  *out_text = buf.data;
  *out_len = buf.len;
  return ATLAS_OK;
}

struct atlas_tokenizer_stream {
  const atlas_tokenizer *tokenizer;
  atlas_tokenizer_decode_options options;
  uint32_t *ids;
  size_t count;
  size_t cap;
  atlas_text_buf prefix;
  size_t prefix_index;
  bool resync;  // a prefix mismatch emits by characters instead of failing
  // Reused by every step.
  decode_scratch scratch;
  atlas_text_buf text;
};

static atlas_status stream_create(const atlas_tokenizer *t, bool skip_special,
                                  bool resync, atlas_tokenizer_stream **out) {
  *out = calloc(1, sizeof(**out));
  if (!*out) return oom();
  (*out)->tokenizer = t;
  (*out)->options.skip_special_tokens = skip_special;
  (*out)->resync = resync;
  return ATLAS_OK;
}

atlas_status atlas_tokenizer_stream_create(const atlas_tokenizer *t,
                                           bool skip_special,
                                           atlas_tokenizer_stream **out) {
  return stream_create(t, skip_special, false, out);
}

atlas_status atlas_tokenizer_stream_create_resync(
    const atlas_tokenizer *t, bool skip_special, atlas_tokenizer_stream **out) {
  return stream_create(t, skip_special, true, out);
}

void atlas_tokenizer_stream_free(atlas_tokenizer_stream *s) {
  if (!s) return;
  free(s->ids);
  atlas_text_buf_free(&s->prefix);
  decode_scratch_free(&s->scratch);
  atlas_text_buf_free(&s->text);
  free(s);
}

// Characters of well-formed UTF-8 (decode's output always is).
static size_t count_chars(const atlas_text_buf *b) {
  size_t n = 0;
  for (size_t i = 0; i < b->len; i++)
    n += ((unsigned char)b->data[i] & 0xC0) != 0x80;
  return n;
}

// The byte offset after the first `chars` characters (or the end).
static size_t skip_chars(const atlas_text_buf *b, size_t chars) {
  size_t i = 0;
  for (; i < b->len; i++) {
    if (((unsigned char)b->data[i] & 0xC0) != 0x80 && chars-- == 0) break;
  }
  return i;
}

// text[from..] as a NUL-terminated string the caller frees (NULL: no memory).
static char *copy_piece(const atlas_text_buf *text, size_t from) {
  size_t n = text->len - from;
  char *piece = malloc(n + 1);
  if (piece) {
    memcpy(piece, text->data + from, n);
    piece[n] = '\0';
  }
  return piece;
}

static bool ends_with_replacement(const atlas_text_buf *b) {
  return b->len >= 3 && memcmp(b->data + b->len - 3, "\xEF\xBF\xBD", 3) == 0;
}

// tokenizers' step_decode_stream (0.22 and later): decode the ids since
// prefix_index; emit the text beyond the prefix once it does not end in
// U+FFFD (an incomplete character); then keep only the ids the new prefix
// needs.
atlas_status atlas_tokenizer_stream_step(atlas_tokenizer_stream *s, uint32_t id,
                                         char **out_text, size_t *out_len) {
  *out_text = NULL;
  *out_len = 0;
  // An id decoding drops changes no decode of any window it would sit in,
  // so the step is None, as tokenizers' is, and the id is not held: held,
  // a run of them (special tokens while skipping them, unknown ids) made
  // every later step decode the whole run again.
  size_t unused;
  if (!decoded_token(s->tokenizer, &s->options, id, &unused)) return ATLAS_OK;
  // Ids held with no prefix (they gave no text, or half a character): their
  // text becomes the prefix, and they its ids, once it is whole.
  if (s->prefix.len == 0 && s->count > 0) {
    atlas_status st = decode_into(s->tokenizer, s->ids, s->count, &s->options,
                                  &s->scratch, &s->text);
    if (st) return st;
    if (!ends_with_replacement(&s->text)) {
      atlas_text_buf held = s->text;
      s->text = s->prefix;
      s->prefix = held;
      s->prefix_index = s->count;
    }
  }
  if (s->count == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    uint32_t *ids = realloc(s->ids, cap * sizeof(*ids));
    if (!ids) return oom();
    s->ids = ids;
    s->cap = cap;
  }
  s->ids[s->count++] = id;
  atlas_text_buf *text = &s->text;
  atlas_status st = decode_into(s->tokenizer, s->ids, s->count, &s->options,
                                &s->scratch, text);
  if (!st && text->len > s->prefix.len && !ends_with_replacement(text)) {
    // Where the new piece starts: after the prefix, or on a mismatch (when
    // resyncing) after as many characters as the prefix holds.
    size_t from = s->prefix.len;
    if (s->prefix.len > 0 &&
        memcmp(text->data, s->prefix.data, s->prefix.len) != 0) {
      if (s->resync) {
        from = skip_chars(text, count_chars(&s->prefix));
      } else {
        st = atlas_status_make(ATLAS_STATUS_INTERNAL,
                               "tokenizer stream: the text of the ids since "
                               "the last piece no longer starts with what it "
                               "ended on (id %" PRIu32 ")",
                               id);
      }
    }
    if (!st) {
      size_t n = text->len - from;
      char *piece = copy_piece(text, from);
      if (!piece) {
        st = oom();
      } else {
        size_t new_prefix_index = s->count - s->prefix_index;
        memmove(s->ids, s->ids + s->prefix_index,
                (s->count - s->prefix_index) * sizeof(*s->ids));
        s->count -= s->prefix_index;
        st = decode_into(s->tokenizer, s->ids, s->count, &s->options,
                         &s->scratch, &s->prefix);
        s->prefix_index = new_prefix_index;
        if (st || n == 0) {
          free(piece);  // n == 0: a resync that ended inside the old text
        } else {
          *out_text = piece;
          *out_len = n;
        }
      }
    }
  }
  return st;
}

atlas_status atlas_tokenizer_stream_finish(atlas_tokenizer_stream *s,
                                           char **out_text, size_t *out_len) {
  *out_text = NULL;
  *out_len = 0;
  if (s->count == 0) return ATLAS_OK;
  atlas_text_buf text = {0};
  atlas_status st = decode_into(s->tokenizer, s->ids, s->count, &s->options,
                                &s->scratch, &text);
  // The incomplete character (and only what decodes to U+FFFD at the end).
  while (!st && ends_with_replacement(&text)) text.len -= 3;
  size_t from = s->prefix.len;
  if (!st && text.len > 0 && s->prefix.len > 0 &&
      (text.len < s->prefix.len ||
       memcmp(text.data, s->prefix.data, s->prefix.len) != 0)) {
    // As a step would: past as many characters as the prefix holds (resync),
    // or nothing more to say.
    from = s->resync ? skip_chars(&text, count_chars(&s->prefix)) : text.len;
  }
  if (!st && text.len > from) {
    char *piece = copy_piece(&text, from);
    if (!piece) {
      st = oom();
    } else {
      *out_text = piece;
      *out_len = text.len - from;
    }
  }
  atlas_text_buf_free(&text);
  return st;
}
