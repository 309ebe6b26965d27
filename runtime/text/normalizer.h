// Normalizers of tokenizer.json: NFC, NFKC, NFD, NFKD (utf8proc), Prepend,
// Replace, Strip and Sequence. Anything else is refused by name.
#ifndef ATLAS_RUNTIME_TEXT_NORMALIZER_H_
#define ATLAS_RUNTIME_TEXT_NORMALIZER_H_

#include <jansson.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/json_util.h"
#include "atlas/runtime/text/pattern.h"
#include "atlas/runtime/text/text_buf.h"

typedef enum atlas_normalizer_kind {
  ATLAS_NORMALIZER_NFC,
  ATLAS_NORMALIZER_NFKC,
  ATLAS_NORMALIZER_NFD,
  ATLAS_NORMALIZER_NFKD,
  ATLAS_NORMALIZER_PREPEND,
  ATLAS_NORMALIZER_REPLACE,
  ATLAS_NORMALIZER_STRIP,
  ATLAS_NORMALIZER_SEQUENCE,
} atlas_normalizer_kind;

typedef struct atlas_normalizer {
  atlas_normalizer_kind kind;
  char *content;  // Prepend's prefix, Replace's replacement
  size_t content_len;
  atlas_text_pattern pattern;  // Replace
  bool strip_left, strip_right;
  struct atlas_normalizer **children;  // Sequence
  size_t child_count;
} atlas_normalizer;

ATLAS_MUST_USE atlas_status atlas_normalizer_load(json_t *v,
                                                  const atlas_tj_at *at,
                                                  atlas_normalizer **out);
// Normalizes in[0..len) into out (which is overwritten).
ATLAS_MUST_USE atlas_status atlas_normalizer_run(const atlas_normalizer *n,
                                                 atlas_text_matcher *m,
                                                 const char *in, size_t len,
                                                 atlas_text_buf *out);
void atlas_normalizer_free(atlas_normalizer *n);

#endif  // ATLAS_RUNTIME_TEXT_NORMALIZER_H_
