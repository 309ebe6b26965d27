// The tokenizer metadata llama.cpp's convert_hf_to_gguf writes, from a
// model's tokenizer.json and tokenizer_config.json, for the tests' GGUF
// files: tokens by id (ids no token has become [PADn], UNUSED), token types
// (an added token special or looking special, as its does_token_look_special
// says, is CONTROL; another added token USER_DEFINED; SentencePiece's
// <unk> UNKNOWN and <0xNN> BYTE), merges "a b" or SentencePiece scores, the
// pre-tokenizer's name, BOS/EOS ids, add_bos_token where the
// post-processor's template adds BOS (gguf-py's SpecialVocab), the chat
// template.
//
// A SentencePiece tokenizer.json carries merges, not the model's scores:
// the scores written order the pieces as the merges do (a piece's score is
// minus the position of the first merge making it; pieces no merge makes
// score lowest), which is how transformers derived those merges from the
// real scores.
#ifndef ATLAS_TESTS_GGUF_GGUF_TOKENIZER_WRITER_H_
#define ATLAS_TESTS_GGUF_GGUF_TOKENIZER_WRITER_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "tests/gguf/gguf_writer.h"

namespace gguf_test {

struct TokenizerSource {
  std::string tokenizer_json;
  std::string tokenizer_config;  // may be empty
  bool spm = false;              // SentencePiece BPE ("llama"), else "gpt2"
  std::string pre;               // gpt2: tokenizer.ggml.pre
  std::string bos, eos;          // token texts; empty: tokenizer_config's
  std::string chat_template;     // empty: tokenizer_config's, if any
};

struct TokenizerWritten {
  bool ok = false;
  std::string error;
  bool has_template = false;
  uint32_t n_tokens = 0;
  // Added tokens transformers calls plain that the converter types CONTROL
  // because they look special (<|fim_prefix|>): a decode that skips special
  // tokens drops them from the GGUF's text only.
  std::vector<uint32_t> retyped;
};

TokenizerWritten AddTokenizer(Writer &w, const TokenizerSource &src);

}  // namespace gguf_test

#endif  // ATLAS_TESTS_GGUF_GGUF_TOKENIZER_WRITER_H_
