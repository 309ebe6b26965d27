// config.json's quantization_config: which quantized format a checkpoint is
// in, read once, up front. What Atlas reads:
//   quant_method "fp8"                 F8_E4M3 weights, F32 weight_scale_inv
//                                      per weight_block_size block,
//                                      activation_scheme dynamic;
//   quant_method "compressed-tensors"  one config group: float-quantized FP8
//                                      (strategy tensor, channel, block) or
//                                      pack-quantized int4/int8 (strategy
//                                      group 32/64/128 or channel, symmetric
//                                      or not, actorder); `ignore` modules
//                                      stay in their stored type;
//   quant_method "awq"                 version gemm, 4 bits, zero points;
//   quant_method "gptq"                4 or 8 bits, desc_act true or false,
//                                      sym, checkpoint_format gptq or
//                                      gptq_v2;
//   quant_method "gguf"                the config a GGUF file's checkpoint
//                                      view writes: llama.cpp's blocks, one
//                                      type per tensor.
// Anything else (bitsandbytes, hqq, mxfp4, another bit width, another
// packing, static activation scales) is refused here, naming the method and
// the field: a quantized checkpoint never runs as if it were BF16.
#ifndef ATLAS_RUNTIME_QUANT_QUANT_CONFIG_H_
#define ATLAS_RUNTIME_QUANT_QUANT_CONFIG_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_quant_method {
  ATLAS_QUANT_NONE = 0,  // no quantization_config
  ATLAS_QUANT_FP8,
  ATLAS_QUANT_COMPRESSED_TENSORS,
  ATLAS_QUANT_AWQ,
  ATLAS_QUANT_GPTQ,
  // A GGUF file's blocks (its config.json view says quant_method "gguf";
  // runtime/formats/gguf_checkpoint.h): each projection's layout is its
  // tensor's type (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), the scales inside the
  // blocks.
  ATLAS_QUANT_GGUF,
} atlas_quant_method;

typedef struct atlas_quant_config {
  atlas_quant_method method;
  uint32_t layout;       // ATLAS_QUANT_LAYOUT_* (kernels/quant_decode.h)
  uint32_t bits;         // 4 or 8 (FP8: 8)
  uint32_t group_k;      // scale block along the input dimension; 0: all of it
  uint32_t block_n;      // scale block along the output dimension; 0: all
                         // (FP8 tensor), 1: per row (channel, int groups)
  bool zeros;            // zero points are stored (else 2^(bits-1))
  uint32_t zero_offset;  // added to stored zeros (GPTQ's format: 1)
  bool g_idx;  // a g_idx tensor orders the groups (desc_act, actorder)
  bool dynamic_fp8_activations;  // the checkpoint asks for FP8 activations
                                 // scaled per token (run here in f32)
  // Modules left in their stored type: compressed-tensors' `ignore`,
  // fp8's `modules_to_not_convert`, gptq/awq's `modules_to_not_convert`
  // (exact module names, or "re:" and a regular expression).
  char **keep;
  size_t keep_count;
} atlas_quant_config;

// Reads `text` (config.json, `len` bytes; `path` names it in messages).
// No quantization_config: *out is method ATLAS_QUANT_NONE. A format Atlas
// does not read: INVALID_ARGUMENT naming the method and the field. Free
// with atlas_quant_config_free.
ATLAS_MUST_USE atlas_status atlas_quant_config_parse(const char *text,
                                                     size_t len,
                                                     const char *path,
                                                     atlas_quant_config *out);
void atlas_quant_config_free(atlas_quant_config *config);

// "fp8", "compressed-tensors", "awq", "gptq", "gguf" or "none".
const char *atlas_quant_method_name(atlas_quant_method method);

// One line for reports and messages: "gptq int4 group 128 desc_act",
// "fp8 block 128x128", "compressed-tensors int8 channel asymmetric".
void atlas_quant_config_describe(const atlas_quant_config *config, char *buf,
                                 size_t size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_QUANT_QUANT_CONFIG_H_
