// The tensors a Llama config implies: their Hugging Face names, their
// shapes, and a check of a checkpoint against them.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_WEIGHTS_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_WEIGHTS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/quant/quant_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_DECODER_EMBED_TOKENS_NAME "model.embed_tokens.weight"
#define ATLAS_DECODER_FINAL_NORM_NAME "model.norm.weight"
#define ATLAS_DECODER_LM_HEAD_NAME "lm_head.weight"

// Every weight of the model. The first three are global; the rest exist once
// per layer ("model.layers.{i}.<suffix>").
typedef enum atlas_decoder_weight {
  ATLAS_DECODER_EMBED_TOKENS = 0,  // [vocab, hidden]
  ATLAS_DECODER_FINAL_NORM,        // [hidden]
  ATLAS_DECODER_LM_HEAD,           // [vocab, hidden]; optional, see below
  ATLAS_DECODER_INPUT_NORM,        // [hidden]
  ATLAS_DECODER_Q_PROJ,            // [heads * head_dim, hidden]
  ATLAS_DECODER_K_PROJ,            // [kv_heads * head_dim, hidden]
  ATLAS_DECODER_V_PROJ,            // [kv_heads * head_dim, hidden]
  ATLAS_DECODER_O_PROJ,            // [hidden, heads * head_dim]
  ATLAS_DECODER_FFN_NORM,          // [hidden] the MLP's input norm
  ATLAS_DECODER_GATE_PROJ,         // [intermediate, hidden]
  ATLAS_DECODER_UP_PROJ,           // [intermediate, hidden]
  ATLAS_DECODER_DOWN_PROJ,         // [hidden, intermediate]
  // Present only when the config asks for them (atlas_decoder_weight_used):
  ATLAS_DECODER_Q_BIAS,     // [heads * head_dim]     qkv_bias
  ATLAS_DECODER_K_BIAS,     // [kv_heads * head_dim]  qkv_bias
  ATLAS_DECODER_V_BIAS,     // [kv_heads * head_dim]  qkv_bias
  ATLAS_DECODER_O_BIAS,     // [hidden]               o_bias
  ATLAS_DECODER_GATE_BIAS,  // [intermediate]         mlp_bias
  ATLAS_DECODER_UP_BIAS,    // [intermediate]         mlp_bias
  ATLAS_DECODER_DOWN_BIAS,  // [hidden]               mlp_bias
  ATLAS_DECODER_Q_NORM,     // [head_dim]             qk_norm
  ATLAS_DECODER_K_NORM,     // [head_dim]             qk_norm
  // Fused tensors (q, k, v rows; gate, up rows) and sandwich norms:
  ATLAS_DECODER_QKV_PROJ,       // [(heads + 2 kv_heads) * head_dim, hidden]
  ATLAS_DECODER_GATE_UP_PROJ,   // [2 * intermediate, hidden]
  ATLAS_DECODER_ATTN_OUT_NORM,  // [hidden] of attention's output (sandwich)
  ATLAS_DECODER_FFN_OUT_NORM,   // [hidden] of the MLP's output (sandwich)
  ATLAS_DECODER_WEIGHT_COUNT,
} atlas_decoder_weight;

#define ATLAS_DECODER_FIRST_LAYER_WEIGHT ATLAS_DECODER_INPUT_NORM

static inline bool atlas_decoder_weight_is_per_layer(atlas_decoder_weight w) {
  return w >= ATLAS_DECODER_FIRST_LAYER_WEIGHT &&
         w < ATLAS_DECODER_WEIGHT_COUNT;
}

// Whether the config's model reads `weight` (the optional ones depend on
// biases, q/k norms and tied embeddings).
bool atlas_decoder_weight_used(const atlas_decoder_config *config,
                               atlas_decoder_weight weight);

// Whether layer `layer` reads `weight`: atlas_decoder_weight_used, less the
// dense MLP's tensors on a mixture-of-experts layer (decoder_moe_weights.h
// names that layer's experts).
bool atlas_decoder_weight_in_layer(const atlas_decoder_config *config,
                                   atlas_decoder_weight weight, int64_t layer);

// The Llama layout's names: per role, the suffix after "model.layers.{i}."
// (for example "self_attn.q_proj.weight"), for global ones the full name.
// A family's descriptor names its own (atlas_decoder_family.tensor_names).
extern const char *const atlas_decoder_llama_names[ATLAS_DECODER_WEIGHT_COUNT];

// The name of `weight` in the config's family (the suffix for per-layer
// ones; config NULL: the Llama layout's); NULL when out of range or not in
// the family's layout.
const char *atlas_decoder_weight_suffix(const atlas_decoder_config *config,
                                        atlas_decoder_weight weight);

// Writes "model.layers.{layer}.{suffix}" into buf. Fails (INVALID_ARGUMENT)
// when it does not fit or layer < 0.
ATLAS_MUST_USE atlas_status atlas_decoder_tensor_name(char *buf, size_t size,
                                                      int layer,
                                                      const char *suffix);

// The name of `weight` in `layer` (layer ignored for global weights).
ATLAS_MUST_USE atlas_status atlas_decoder_weight_name(
    const atlas_decoder_config *config, atlas_decoder_weight weight, int layer,
    char *buf, size_t size);

// The shape the config implies: rank 1 or 2, dims in shape[0..rank).
// Whether `weight` is stored in config->quant's format: every projection
// (q, k, v, o, gate, up, down) of a quantized checkpoint.
bool atlas_decoder_weight_quantized(const atlas_decoder_config *config,
                                    atlas_decoder_weight weight);

// A quantized projection's tensors in the checkpoint ("<module>.qweight",
// ...), checked against its [rows, cols] (atlas_quant_matrix_find).
ATLAS_MUST_USE atlas_status atlas_decoder_quant_find(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint,
    atlas_decoder_weight weight, int layer, atlas_quant_matrix *out);

void atlas_decoder_weight_shape(const atlas_decoder_config *config,
                                atlas_decoder_weight weight, int64_t shape[2],
                                int *out_rank);

// Checks that every tensor the config implies is in the checkpoint with the
// right shape, and that the checkpoint holds nothing else: a tensor the
// model would not read (a bias the config does not ask for, a layer past
// num_hidden_layers, another architecture's weight) is an error naming it
// and how many more there are. lm_head.weight is required unless
// tie_word_embeddings; when tied the embedding serves as the output
// projection. Errors (NOT_FOUND for a missing tensor, INVALID_ARGUMENT for
// a wrong shape or a leftover) name the tensor, the shapes and the file.
// A tied config whose checkpoint also holds a different lm_head.weight is
// UNIMPLEMENTED (transformers would use that tensor; an equal copy is
// skipped). A tied checkpoint that holds lm_head.weight and no
// model.embed_tokens.weight is read as transformers 5 loads it: that one
// tensor is both (atlas_decoder_embedding_weight). `out_lm_head_is_embedding`
// (may be NULL) says which tensor the output projection should read.
ATLAS_MUST_USE atlas_status atlas_decoder_check_checkpoint(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint,
    bool *out_lm_head_is_embedding);

// The tensor that holds the token embedding: ATLAS_DECODER_EMBED_TOKENS, or
// ATLAS_DECODER_LM_HEAD for a tied config whose checkpoint holds
// lm_head.weight and no model.embed_tokens.weight (transformers 5.17 then
// loads lm_head.weight into both, reporting no missing key; checked on the
// H200).
atlas_decoder_weight atlas_decoder_embedding_weight(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint);

// Bytes of the tensors the model uses (extra tensors in the checkpoint are
// not counted; a tied or absent lm_head counts once, as the embedding).
// Runs the same checks as atlas_decoder_check_checkpoint but that comparison.
ATLAS_MUST_USE atlas_status atlas_decoder_weight_bytes(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint,
    uint64_t *out_bytes);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_WEIGHTS_H_
