// A GGUF file's model in Hugging Face terms, so the checkpoint path Atlas
// already has can read it: llama.cpp's tensor names mapped to the
// transformers names ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.
// q_proj.weight"), the rows llama.cpp's converter permutes in a llama
// model's q and k (it interleaves each head's two rotary halves; qwen2 and
// qwen3 are stored as they are), and a config.json written from the
// metadata (general.architecture and its hyperparameters).
#ifndef ATLAS_RUNTIME_FORMATS_GGUF_MODEL_H_
#define ATLAS_RUNTIME_FORMATS_GGUF_MODEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

// The transformers name of a llama.cpp tensor name, into buf. NOT_FOUND for
// a name with no counterpart (e.g. rope_freqs.weight).
ATLAS_MUST_USE atlas_status atlas_gguf_hf_name(const char *gguf_name, char *buf,
                                               size_t size);

// Which rows the converter permuted: for a llama model's q (heads =
// head_count) and k (heads = head_count_kv), row `hf_row` of the
// transformers weight is row atlas_gguf_qk_source_row(...) of the GGUF
// tensor; every other tensor keeps its rows.
uint64_t atlas_gguf_qk_source_row(uint64_t hf_row, uint64_t head_dim);
// Whether `gguf_name` is permuted in a file of `arch` ("llama": attn_q and
// attn_k weights and biases, a bias's elements as a weight's rows; "qwen2",
// "qwen3": none).
int atlas_gguf_is_permuted(const char *arch, const char *gguf_name);
// The attention's head_dim of a file of `arch`: attention.key_length where
// the file has it, else embedding_length / attention.head_count (0 when
// head_count is 0). What the permuted q/k rows are counted in.
ATLAS_MUST_USE atlas_status atlas_gguf_head_dim(const atlas_gguf *g,
                                                const char *arch,
                                                uint64_t *out);

// Llama 3's rope scaling, as a llama file's rope_freqs.weight gives it
// (convert_hf_to_gguf writes the per-frequency factors, not the
// parameters): present false when the file has no such tensor (or every
// factor is 1). Parameters that do not give back every stored factor are
// refused, naming the tensor.
typedef struct atlas_gguf_llama3_rope {
  bool present;
  double factor, low_freq_factor, high_freq_factor;
  uint64_t original_max_positions;
} atlas_gguf_llama3_rope;

ATLAS_MUST_USE atlas_status
atlas_gguf_llama3_rope_from_freqs(const atlas_gguf *g, uint64_t head_dim,
                                  double theta, atlas_gguf_llama3_rope *out);

// config.json text (malloc'd, NUL-terminated) for the file's model:
// model_type, hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, num_key_value_heads, head_dim, max_position_embeddings,
// rms_norm_eps, rope_theta, rope_scaling (linear and yarn from the
// rope.scaling keys, llama3 from rope_freqs.weight), vocab_size,
// tie_word_embeddings, bos/eos ids.
// An architecture other than llama, qwen2, qwen3, or metadata Atlas cannot
// express (rope scaling it does not read, a rope_freqs tensor), is refused
// naming the key.
ATLAS_MUST_USE atlas_status atlas_gguf_config_json(const atlas_gguf *g,
                                                   char **out_json);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_GGUF_MODEL_H_
