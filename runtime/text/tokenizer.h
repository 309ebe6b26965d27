// A Hugging Face tokenizer.json tokenizer: load, encode, decode, streaming
// decode, vocabulary lookups. Encodes and decodes exactly like the Rust
// `tokenizers` library for the parts it implements (BPE with byte-level or
// SentencePiece-style pre-processing); refuses anything else by name, with
// the file and key path, when loading.
//
// No global state: everything lives in the handle. A handle may be shared by
// threads; encode serializes on the handle's word cache (one lock per call),
// everything else is read-only.
#ifndef ATLAS_RUNTIME_TEXT_TOKENIZER_H_
#define ATLAS_RUNTIME_TEXT_TOKENIZER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_tokenizer atlas_tokenizer;

// Loads tokenizer.json from a file.
ATLAS_MUST_USE atlas_status
atlas_tokenizer_load(const char *path, atlas_tokenizer **out_tokenizer);
// Loads from JSON text in memory; `name` labels error messages.
ATLAS_MUST_USE atlas_status
atlas_tokenizer_load_from_memory(const char *json, size_t len, const char *name,
                                 atlas_tokenizer **out_tokenizer);
void atlas_tokenizer_free(atlas_tokenizer *tokenizer);

// Encodes UTF-8 text (invalid UTF-8 is refused with its byte offset).
// `add_special` applies the post-processor (e.g. BOS), like tokenizers'
// add_special_tokens. *out_ids is malloc'd (free() it); may be empty.
ATLAS_MUST_USE atlas_status atlas_tokenizer_encode(atlas_tokenizer *tokenizer,
                                                   const char *text, size_t len,
                                                   bool add_special,
                                                   uint32_t **out_ids,
                                                   size_t *out_count);

typedef struct atlas_tokenizer_decode_options {
  bool skip_special_tokens;
  // tokenizer_config.json's clean_up_tokenization_spaces, applied the way
  // transformers 5 applies it (TokenizersBackend._decode): ignored for a BPE
  // model, which every tokenizer Atlas loads is, so on its own it changes
  // nothing. transformers 4 applied it to every model.
  bool clean_up_tokenization_spaces;
  // transformers 5's clean_up_tokenization_spaces_for_bpe_even_though_it_
  // will_corrupt_output: together with clean_up_tokenization_spaces, applies
  // atlas_tokenizer_clean_up to a BPE model's text anyway (transformers 4's
  // decode).
  bool clean_up_even_for_bpe;
} atlas_tokenizer_decode_options;

// Decodes ids to UTF-8 text like tokenizers' Tokenizer::decode. Unknown ids
// are skipped (as tokenizers does). *out_text is malloc'd, NUL-terminated.
// This is also transformers 5's tokenizer.decode(ids) whatever
// tokenizer_config.json says (see clean_up_tokenization_spaces above);
// decode_ex takes transformers' options.
ATLAS_MUST_USE atlas_status atlas_tokenizer_decode(
    const atlas_tokenizer *tokenizer, const uint32_t *ids, size_t count,
    bool skip_special, char **out_text, size_t *out_len);
ATLAS_MUST_USE atlas_status atlas_tokenizer_decode_ex(
    const atlas_tokenizer *tokenizer, const uint32_t *ids, size_t count,
    const atlas_tokenizer_decode_options *options, char **out_text,
    size_t *out_len);

// transformers' clean_up_tokenization, the clean-up that
// clean_up_tokenization_spaces asks for: " ." -> ".", " ?" -> "?",
// " !" -> "!", " ," -> ",", " ' " -> "'", " n't" -> "n't", " 'm" -> "'m",
// " 's" -> "'s", " 've" -> "'ve", " 're" -> "'re", each over the whole text
// in that order. *out_text is malloc'd, NUL-terminated.
ATLAS_MUST_USE atlas_status atlas_tokenizer_clean_up(const char *text,
                                                     size_t len,
                                                     char **out_text,
                                                     size_t *out_len);

// Streaming decode for generated text (tokenizers' DecodeStream): each step
// returns only new, complete characters, never half of one. Like
// DecodeStream it fails (INTERNAL) when the text of the ids since the last
// piece no longer starts with what that piece ended on: byte-fallback
// models (Llama 2, Mistral) decode a run of byte tokens that is not UTF-8 as
// one U+FFFD a byte, so "\n" already emitted becomes U+FFFD when the model
// follows it with a stray continuation byte.
typedef struct atlas_tokenizer_stream atlas_tokenizer_stream;
ATLAS_MUST_USE atlas_status atlas_tokenizer_stream_create(
    const atlas_tokenizer *tokenizer, bool skip_special,
    atlas_tokenizer_stream **out_stream);
// The same, but that mismatch does not fail: the step returns the new text
// past as many characters as the old ended on (what vLLM's incremental
// detokenizer returns, slicing by characters) and goes on from there. The
// pieces then differ from the whole decode in those characters. For
// generation, where one odd id must not end the text.
ATLAS_MUST_USE atlas_status atlas_tokenizer_stream_create_resync(
    const atlas_tokenizer *tokenizer, bool skip_special,
    atlas_tokenizer_stream **out_stream);
// Feeds one id. *out_text (malloc'd, NUL-terminated, free() it) is the new
// text, or NULL with *out_len 0 when the id completed no character yet.
ATLAS_MUST_USE atlas_status
atlas_tokenizer_stream_step(atlas_tokenizer_stream *stream, uint32_t id,
                            char **out_text, size_t *out_len);
// When no id follows (generation ended): the text the stream still holds
// back, up to its last whole character (an incomplete one at the end, which
// a decode shows as U+FFFD, is left out). NULL with *out_len 0 when none.
ATLAS_MUST_USE atlas_status atlas_tokenizer_stream_finish(
    atlas_tokenizer_stream *stream, char **out_text, size_t *out_len);
void atlas_tokenizer_stream_free(atlas_tokenizer_stream *stream);

// What one encode may spend (atlas_tokenizer_limits in atlas.h). Text or a
// tokenizer.json asking for more is refused with RESOURCE_EXHAUSTED naming
// the limit. The defaults suit a server.
typedef struct atlas_tokenizer_budget {
  size_t max_input;            // bytes of text; default 256 MiB
  size_t max_word;             // bytes of one pre-tokenized word the model
                               // merges (its cost is ~30 bytes a byte and
                               // grows faster than its length); default 1 MiB
  uint32_t regex_match_limit;  // PCRE2's, per search; default 1000000
  uint32_t regex_depth_limit;  // default 10000
  uint32_t max_normalize_growth;  // normalized text <= this x input + 64 KiB;
                                  // default 16
} atlas_tokenizer_budget;

#define ATLAS_TOKENIZER_MAX_INPUT_DEFAULT ((size_t)256 << 20)
#define ATLAS_TOKENIZER_MAX_WORD_DEFAULT ((size_t)1 << 20)

atlas_tokenizer_budget atlas_tokenizer_budget_default(void);
// INVALID_ARGUMENT for a 0. Not while another thread encodes with t.
ATLAS_MUST_USE atlas_status atlas_tokenizer_set_budget(
    atlas_tokenizer *tokenizer, const atlas_tokenizer_budget *budget);

// How many pieces the pre-tokenizer's stages hand on at a time (0: the
// default). Only tests change it: every batch size gives the same ids.
void atlas_tokenizer_set_batch_for_testing(atlas_tokenizer *tokenizer,
                                           size_t batch);

// Number of ids: one more than the largest id of the model or added tokens.
size_t atlas_tokenizer_vocab_size(const atlas_tokenizer *tokenizer);
// Id of a token string (added tokens first, then the model's vocab).
bool atlas_tokenizer_token_to_id(const atlas_tokenizer *tokenizer,
                                 const char *token, size_t len,
                                 uint32_t *out_id);
// Token string of an id (not NUL-terminated), or NULL if none.
const char *atlas_tokenizer_id_to_token(const atlas_tokenizer *tokenizer,
                                        uint32_t id, size_t *out_len);
// Whether id is an added token marked "special" (what skip_special skips).
bool atlas_tokenizer_is_special(const atlas_tokenizer *tokenizer, uint32_t id);

// The file's added tokens, in file order.
typedef struct atlas_tokenizer_added_token {
  uint32_t id;
  const char *content;  // owned by the tokenizer, NUL-terminated
  bool special;
} atlas_tokenizer_added_token;
size_t atlas_tokenizer_added_token_count(const atlas_tokenizer *tokenizer);
atlas_tokenizer_added_token atlas_tokenizer_added_token_at(
    const atlas_tokenizer *tokenizer, size_t index);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_TEXT_TOKENIZER_H_
