// Added tokens (tokenizer.json "added_tokens"): matched in the text before
// anything else splits it, leftmost-longest like tokenizers' Aho-Corasick
// (an automaton over the reversed patterns here: linear in the text),
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

// The patterns of one class of tokens, as an Aho-Corasick automaton over
// the patterns reversed. Scanning a text backwards, the state at byte i names
// the longest pattern that starts at i (out_len, out_token): leftmost-longest
// matching then takes each position's answer in O(1), so a split is linear in
// the text whatever the patterns (walking a forward trie from each position
// cost up to the longest pattern's length per byte).
typedef struct atlas_trie {
  atlas_trie_node *nodes;  // the trie of reversed patterns, while building
  size_t count;
  size_t cap;
  bool empty;      // no patterns
  size_t max_len;  // the longest pattern
  // The automaton (atlas_trie_finish): children of node u are
  // child_node[child_start[u] .. child_start[u + 1]), sorted by child_byte.
  uint32_t *child_start;
  unsigned char *child_byte;
  int32_t *child_node;
  int32_t *fail;
  int32_t *out_token;  // the longest pattern that is a suffix, or -1
  uint32_t *out_len;
  int32_t root_next[256];
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
