// Qwen3 (model_type "qwen3"): the decoder with a per-head RMSNorm
// of q and k (q_norm, k_norm) before RoPE, an explicit head_dim (default
// 128), optional attention_bias, and Qwen2's sliding-window flags.
#ifndef ATLAS_RUNTIME_ARCH_QWEN3_QWEN3_H_
#define ATLAS_RUNTIME_ARCH_QWEN3_QWEN3_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_qwen3_family;
extern const char *const atlas_qwen3_model_types[];
extern const char *const atlas_qwen3_architectures[];
// Parses into an atlas_decoder_config of family qwen3.
ATLAS_MUST_USE atlas_status atlas_qwen3_config_parse(const char *text,
                                                     size_t len,
                                                     const char *path,
                                                     void *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_QWEN3_QWEN3_H_
