// Decoders of tokenizer.json: ByteLevel, Metaspace, ByteFallback, Fuse,
// Strip, Replace and Sequence, each a step of tokenizers' decode_chain over
// the list of token strings. Anything else is refused by name.
#ifndef ATLAS_RUNTIME_TEXT_DECODER_H_
#define ATLAS_RUNTIME_TEXT_DECODER_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/byte_level.h"
#include "atlas/runtime/text/json_util.h"
#include "atlas/runtime/text/pattern.h"
#include "atlas/runtime/text/pretokenizer.h"
#include "atlas/runtime/text/text_buf.h"

typedef enum atlas_decoder_kind {
  ATLAS_DECODER_BYTE_LEVEL,
  ATLAS_DECODER_METASPACE,
  ATLAS_DECODER_BYTE_FALLBACK,
  ATLAS_DECODER_FUSE,
  ATLAS_DECODER_STRIP,
  ATLAS_DECODER_REPLACE,
  ATLAS_DECODER_SEQUENCE,
} atlas_decoder_kind;

typedef struct atlas_decoder {
  atlas_decoder_kind kind;
  // Metaspace
  char replacement[4];
  size_t replacement_len;
  atlas_prepend_scheme prepend_scheme;
  // Strip
  char content[4];
  size_t content_len;
  size_t start, stop;
  // Replace
  atlas_text_pattern pattern;
  char *with;
  size_t with_len;
  // Sequence
  struct atlas_decoder **children;
  size_t child_count;
} atlas_decoder;

ATLAS_MUST_USE atlas_status atlas_decoder_load(json_t *v, const atlas_tj_at *at,
                                               atlas_decoder **out);
// The buffers a decoder chain works in, kept by the caller from one run to
// the next (a stream runs the chain two or three times a step): a
// Sequence's two lists between its decoders, the bytes ByteLevel and
// ByteFallback gather. Zero-initialized; freed with
// atlas_decoder_scratch_free.
typedef struct atlas_decoder_scratch {
  atlas_text_pieces tmp[2];
  atlas_text_buf bytes;
} atlas_decoder_scratch;
void atlas_decoder_scratch_free(atlas_decoder_scratch *s);

// One decode_chain step: tokens `in` -> tokens `out` (cleared first).
ATLAS_MUST_USE atlas_status atlas_decoder_run(const atlas_decoder *d,
                                              const atlas_byte_level *bl,
                                              atlas_text_matcher *m,
                                              atlas_decoder_scratch *scratch,
                                              const atlas_text_pieces *in,
                                              atlas_text_pieces *out);
void atlas_decoder_free(atlas_decoder *d);

#endif  // ATLAS_RUNTIME_TEXT_DECODER_H_
