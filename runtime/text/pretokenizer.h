// Pre-tokenizers of tokenizer.json: Split (PCRE2), ByteLevel, Metaspace,
// Digits and Sequence. Each maps a list of pieces to a finer list of pieces;
// pieces that are added tokens pass through untouched. Anything else is
// refused by name.
#ifndef ATLAS_RUNTIME_TEXT_PRETOKENIZER_H_
#define ATLAS_RUNTIME_TEXT_PRETOKENIZER_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/byte_level.h"
#include "atlas/runtime/text/json_util.h"
#include "atlas/runtime/text/pattern.h"
#include "atlas/runtime/text/text_buf.h"

typedef enum atlas_pretokenizer_kind {
  ATLAS_PRETOKENIZER_SPLIT,
  ATLAS_PRETOKENIZER_BYTE_LEVEL,
  ATLAS_PRETOKENIZER_METASPACE,
  ATLAS_PRETOKENIZER_DIGITS,
  ATLAS_PRETOKENIZER_SEQUENCE,
} atlas_pretokenizer_kind;

// SplitDelimiterBehavior.
typedef enum atlas_split_behavior {
  ATLAS_SPLIT_REMOVED,
  ATLAS_SPLIT_ISOLATED,
  ATLAS_SPLIT_MERGED_WITH_PREVIOUS,
  ATLAS_SPLIT_MERGED_WITH_NEXT,
  ATLAS_SPLIT_CONTIGUOUS,
} atlas_split_behavior;

typedef enum atlas_prepend_scheme {
  ATLAS_PREPEND_ALWAYS,
  ATLAS_PREPEND_FIRST,
  ATLAS_PREPEND_NEVER,
} atlas_prepend_scheme;

typedef struct atlas_pretokenizer {
  atlas_pretokenizer_kind kind;
  // Split; ByteLevel with use_regex (the GPT-2 pattern).
  atlas_text_pattern pattern;
  atlas_split_behavior behavior;
  bool invert;
  // ByteLevel
  bool add_prefix_space;
  bool use_regex;
  // Metaspace
  char replacement[4];
  size_t replacement_len;
  atlas_prepend_scheme prepend_scheme;
  bool split;
  // Digits
  bool individual_digits;
  // Sequence
  struct atlas_pretokenizer **children;
  size_t child_count;
} atlas_pretokenizer;

ATLAS_MUST_USE atlas_status atlas_pretokenizer_load(json_t *v,
                                                    const atlas_tj_at *at,
                                                    atlas_pretokenizer **out);
// Splits the pieces of `in` and hands the result to `sink` in batches (it
// may be called several times, each with pieces that follow the last
// batch's; the list is cleared after each call). `batch` (0: the defaults)
// is how many pieces, and ranges of one piece, a stage holds at once; any
// batch gives the same pieces (tests compare 1 with the default).
ATLAS_MUST_USE atlas_status atlas_pretokenizer_stream(
    const atlas_pretokenizer *p, const atlas_byte_level *bl,
    atlas_text_matcher *m, const atlas_text_pieces *in,
    atlas_text_pieces_full_fn sink, void *sink_ctx, size_t batch);
void atlas_pretokenizer_free(atlas_pretokenizer *p);

// Parses a Metaspace prepend_scheme (shared with the Metaspace decoder).
ATLAS_MUST_USE atlas_status atlas_prepend_scheme_load(
    json_t *v, const atlas_tj_at *at, atlas_prepend_scheme *out);
// Reads a one-character string member (Metaspace's replacement).
ATLAS_MUST_USE atlas_status atlas_tj_char(json_t *v, const atlas_tj_at *at,
                                          const char *key, char out_utf8[4],
                                          size_t *out_len);

#endif  // ATLAS_RUNTIME_TEXT_PRETOKENIZER_H_
