// Deterministic tiny Llama checkpoints (config.json + safetensors) for
// tests and the demo. The same options give the same bytes on every machine:
// the generator uses integer PRNG output and IEEE adds/multiplies only (no
// libm), and converts to F16/BF16 with its own round-to-nearest-even.
#ifndef ATLAS_TOOLS_MAKE_CHECKPOINT_LIB_H_
#define ATLAS_TOOLS_MAKE_CHECKPOINT_LIB_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_make_checkpoint_options {
  const char *out_dir;  // created if missing (one level)...
  bool dir_made;        // ...unless set: the caller made it (a
                        // watched temporary folder, which a stop
                        // removes under a running write and which
                        // must stay removed)
  uint64_t seed;
  // tie_word_embeddings: lm_head omitted. qk_norm: a Qwen3 checkpoint
  // (q_norm and k_norm a layer; config.json says qwen3, its attention_bias
  // qkv_bias, which must equal o_bias); otherwise a Llama one. Other
  // families (qwen2, mistral) are refused.
  atlas_decoder_config config;
  atlas_dtype dtype;
  // k_proj and up_proj in another type (F32; BF16 when dtype is F32): the
  // layers then run q/k/v and gate/up as separate products.
  bool mixed_dtypes;
  int shards;  // 1: model.safetensors; N > 1: sharded + index
} atlas_make_checkpoint_options;

// Fills `out` with a preset: "tiny" (vocab 64, hidden 32, 2 layers, 4 heads,
// 2 kv heads, intermediate 64) or "small" (vocab 256, hidden 64, 4 layers,
// 8 heads, 2 kv heads, intermediate 128). INVALID_ARGUMENT for other names.
ATLAS_MUST_USE atlas_status
atlas_make_checkpoint_preset(const char *name, atlas_decoder_config *out);

// How many tensors a checkpoint of `config` holds: the most shards it can be
// split into.
size_t atlas_make_checkpoint_tensor_count(const atlas_decoder_config *config);

// Writes out_dir/config.json and the weights. More shards than tensors is
// INVALID_ARGUMENT.
ATLAS_MUST_USE atlas_status
atlas_make_checkpoint_write(const atlas_make_checkpoint_options *options);

// Round-to-nearest-even conversions used for the weights (exposed for tests).
uint16_t atlas_make_checkpoint_f32_to_f16(float value);
uint16_t atlas_make_checkpoint_f32_to_bf16(float value);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_MAKE_CHECKPOINT_LIB_H_
