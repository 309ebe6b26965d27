// The tokenizer handle's layout, shared by tokenizer.c (load, encode) and
// decode.c (decode, streaming). Private to runtime/text.
#ifndef ATLAS_RUNTIME_TEXT_TOKENIZER_IMPL_H_
#define ATLAS_RUNTIME_TEXT_TOKENIZER_IMPL_H_

#include <pthread.h>

#include "atlas/runtime/text/added_tokens.h"
#include "atlas/runtime/text/bpe.h"
#include "atlas/runtime/text/byte_level.h"
#include "atlas/runtime/text/decoder.h"
#include "atlas/runtime/text/normalizer.h"
#include "atlas/runtime/text/pattern.h"
#include "atlas/runtime/text/post_processor.h"
#include "atlas/runtime/text/pretokenizer.h"
#include "atlas/runtime/text/text_buf.h"
#include "atlas/runtime/text/tokenizer.h"

struct atlas_tokenizer {
  // Read-only after load.
  atlas_normalizer *normalizer;      // may be NULL
  atlas_pretokenizer *pretokenizer;  // may be NULL
  atlas_post_processor *post;        // may be NULL
  atlas_decoder *decoder;            // may be NULL: tokens joined by " "
  atlas_bpe bpe;
  atlas_added_vocab added;
  atlas_byte_level byte_level;
  size_t vocab_size;
  char name[256];  // the file (or the name given), for encode's limits
  // Encode's scratch and word cache, guarded by `lock`.
  pthread_mutex_t lock;
  atlas_text_matcher matcher;
  atlas_text_pieces pieces[2];  // the added-token splits: raw, normalized
  atlas_text_buf normalized;
  atlas_bpe_scratch bpe_scratch;
  atlas_id_buf encoded;
  size_t batch;  // the pre-tokenizer's batch (0: its default); for tests
  atlas_tokenizer_budget budget;
};

// Whether a token's text is a special added token's (tokenizers asks by
// the text, so a vocabulary id with that text counts too).
static inline bool atlas_tokenizer_text_is_special(const atlas_tokenizer *t,
                                                   const char *s, size_t len) {
  const atlas_strmap_entry *e = atlas_strmap_get(&t->added.by_content, s, len);
  return e && t->added.tokens[e->a].special;
}

#endif  // ATLAS_RUNTIME_TEXT_TOKENIZER_IMPL_H_
