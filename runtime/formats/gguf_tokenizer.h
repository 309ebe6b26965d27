// A GGUF file's tokenizer and chat template in Hugging Face terms: the
// tokenizer.json that its tokenizer.ggml.* metadata describes, so that
// runtime/text's one loader builds it (the same in-memory tokenizer as the
// model's own tokenizer.json gives), and tokenizer.chat_template with the
// BOS and EOS token texts the template sees.
//
// Read: tokenizer.ggml.model "gpt2" (byte-level BPE; tokens, merges,
// token_type: CONTROL tokens become special added tokens, USER_DEFINED ones
// plain added tokens) with tokenizer.ggml.pre naming the pre-tokenizer
// ("llama-bpe", also named "llama3" and "llama-v3": Llama 3's regex and
// ignore_merges; "qwen2", also "deepseek-r1-qwen": Qwen2's regex and NFC), and
// tokenizer.ggml.model "llama" (SentencePiece BPE: tokens, scores and
// token_type; merges derived from the scores as transformers' converter derives
// them, byte fallback, "▁" for spaces); tokenizer.ggml.bos_token_id /
// eos_token_id with add_bos_token / add_eos_token (what the post-processor
// adds). Any other model, pre- tokenizer or malformed array is refused naming
// the key.
#ifndef ATLAS_RUNTIME_FORMATS_GGUF_TOKENIZER_H_
#define ATLAS_RUNTIME_FORMATS_GGUF_TOKENIZER_H_

#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

// tokenizer.json text (malloc'd, NUL-terminated; *out_len its length).
ATLAS_MUST_USE atlas_status atlas_gguf_tokenizer_json(const atlas_gguf *g,
                                                      char **out_json,
                                                      size_t *out_len);

// tokenizer.chat_template (malloc'd, NUL-terminated; NOT_FOUND naming the
// key when absent) and the texts of the BOS and EOS tokens (malloc'd; NULL
// where the file names none).
ATLAS_MUST_USE atlas_status atlas_gguf_chat_template(const atlas_gguf *g,
                                                     char **out_template,
                                                     char **out_bos,
                                                     char **out_eos);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_GGUF_TOKENIZER_H_
