// libFuzzer entry over tokenizer.json: the bytes up to the first NUL are the
// file, the rest a text. A file either fails cleanly (its name in the
// message) or loads; then the text is encoded with and without special
// tokens, the ids and a run of ids taken from the input's bytes are decoded
// (with and without special tokens) and streamed (strict and resyncing). No
// step may crash, leak or hand out text that is not UTF-8.
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "atlas/runtime/base/escape.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// Strict UTF-8 (utf8proc: no overlong forms, surrogates or code points past
// U+10FFFF). A hand-written check that took E0 91 A0 for UTF-8 called the
// tokenizer's refusal of it a failure (the fuzzer, 2026-12-04).
static bool valid_utf8(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                          (utf8proc_ssize_t)(n - i), &cp);
    if (k <= 0) return false;
    i += (size_t)k;
  }
  return true;
}

static void decode_all(const atlas_tokenizer *tok, const uint32_t *ids,
                       size_t n) {
  for (int skip = 0; skip < 2; skip++) {
    char *text = NULL;
    size_t len = 0;
    atlas_status st = atlas_tokenizer_decode(tok, ids, n, skip, &text, &len);
    if (st != ATLAS_OK) {
      atlas_status_free(st);
    } else if (!valid_utf8(text, len) || text[len] != '\0') {
      __builtin_trap();
    }
    free(text);
    for (int resync = 0; resync < 2; resync++) {
      atlas_tokenizer_stream *s = NULL;
      st = resync ? atlas_tokenizer_stream_create_resync(tok, skip, &s)
                  : atlas_tokenizer_stream_create(tok, skip, &s);
      for (size_t i = 0; st == ATLAS_OK && i < n; i++) {
        char *piece = NULL;
        size_t plen = 0;
        st = atlas_tokenizer_stream_step(s, ids[i], &piece, &plen);
        if (piece != NULL && !valid_utf8(piece, plen)) __builtin_trap();
        free(piece);
      }
      if (st != ATLAS_OK && resync) __builtin_trap();  // resyncing never fails
      atlas_status_free(st);
      atlas_tokenizer_stream_free(s);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t json_len = nul ? (size_t)(nul - data) : size;
  const char *text = nul ? (const char *)nul + 1 : "";
  size_t text_len = nul ? size - json_len - 1 : 0;
  atlas_tokenizer *tok = NULL;
  atlas_status st = atlas_tokenizer_load_from_memory(
      (const char *)data, json_len, "fuzz/tokenizer.json", &tok);
  if (st != ATLAS_OK) {
    if (strstr(atlas_status_message(st), "fuzz/tokenizer.json") == NULL)
      __builtin_trap();
    // Escaped: no control bytes, nothing that is not UTF-8.
    const char *m = atlas_status_message(st);
    if (!atlas_escape_is_clean(m, strlen(m), ATLAS_ESCAPE_KEEP_NEWLINE))
      __builtin_trap();
    atlas_status_free(st);
    return 0;
  }
  size_t vocab = atlas_tokenizer_vocab_size(tok);
  for (int special = 0; special < 2; special++) {
    uint32_t *ids = NULL;
    size_t n = 0;
    st = atlas_tokenizer_encode(tok, text, text_len, special, &ids, &n);
    if (st != ATLAS_OK) {
      // Only text that is not UTF-8 may be refused.
      if (valid_utf8(text, text_len)) __builtin_trap();
      atlas_status_free(st);
    } else {
      // The post-processor's ids are its own (tokenizers emits them even
      // when the vocabulary lacks them); every other id is the model's or
      // an added token's.
      for (size_t i = 0; i < n && !special; i++) {
        if (ids[i] >= vocab) __builtin_trap();
      }
      decode_all(tok, ids, n);
    }
    free(ids);
  }
  // Ids no text encodes to: the text's bytes, pairs of them read as ids
  // (some past the vocabulary).
  uint32_t raw[64];
  size_t n = 0;
  for (size_t i = 0; i + 1 < text_len && n < 64; i += 2) {
    raw[n++] =
        (uint32_t)(((unsigned char)text[i] << 8 | (unsigned char)text[i + 1]) %
                   (vocab + 8));
  }
  decode_all(tok, raw, n);
  atlas_tokenizer_free(tok);
  return 0;
}
