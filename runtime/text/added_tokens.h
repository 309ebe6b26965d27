// Added tokens (tokenizer.json "added_tokens"): matched in the text before
// anything else splits it, leftmost-longest like tokenizers' Aho-Corasick,
// honouring single_word, lstrip, rstrip and normalized (normalized tokens
// are matched, in their normalized form, in the normalized text).
#ifndef ATLAS_RUNTIME_TEXT_ADDED_TOKENS_H_
#define ATLAS_RUNTIME_TEXT_ADDED_TOKENS_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/hash_map.h"
#include "atlas/runtime/text/json_util.h"
#include "atlas/runtime/text/normalizer.h"
#include "atlas/runtime/text/text_buf.h"

typedef struct atlas_added_token {
  uint32_t id;
  char *content;
  size_t len;
  bool special;
  bool lstrip;
  bool rstrip;
  bool normalized;
  bool single_word;
} atlas_added_token;

typedef struct atlas_trie_node {
  int32_t first_child;
  int32_t next_sibling;
  int32_t token;  // index into tokens, or -1
  unsigned char byte;
} atlas_trie_node;

// A byte trie of the patterns of one class of tokens.
typedef struct atlas_trie {
  atlas_trie_node *nodes;
  size_t count;
  size_t cap;
  bool first_byte[256];
  bool empty;  // no patterns
} atlas_trie;

typedef struct atlas_added_vocab {
  atlas_added_token *tokens;
  size_t count;
  atlas_strmap by_content;  // content -> index (a)
  atlas_pairmap by_id;      // (id, 0) -> index (a)
  atlas_trie raw;           // normalized == false, matched in the input
  atlas_trie norm;          // normalized == true, matched after normalizing
  uint32_t max_id;
  bool have_max;
} atlas_added_vocab;

// Loads the "added_tokens" array, assigning ids the way tokenizers does
// (from the model's vocabulary, not the file). `normalizer` (may be NULL)
// normalizes the patterns of normalized tokens.
ATLAS_MUST_USE atlas_status atlas_added_vocab_load(
    json_t *arr, const atlas_tj_at *at, const atlas_strmap *model_vocab,
    const atlas_normalizer *normalizer, atlas_text_matcher *m,
    atlas_added_vocab *out);
void atlas_added_vocab_free(atlas_added_vocab *av);

// Splits s[0..len) on the tokens of `trie`, appending text pieces and token
// pieces to out. Empty text pieces are dropped.
ATLAS_MUST_USE atlas_status atlas_added_vocab_split(const atlas_added_vocab *av,
                                                    const atlas_trie *trie,
                                                    const char *s, size_t len,
                                                    bool first,
                                                    atlas_text_pieces *out);

// The added token with this id, or NULL.
const atlas_added_token *atlas_added_vocab_by_id(const atlas_added_vocab *av,
                                                 uint32_t id);

#endif  // ATLAS_RUNTIME_TEXT_ADDED_TOKENS_H_
