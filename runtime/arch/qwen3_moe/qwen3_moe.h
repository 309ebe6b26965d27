// Qwen3-MoE (model_type "qwen3_moe"): Qwen3's attention (q/k norms, an
// explicit head_dim, optional attention_bias, Qwen2's window flags) with a
// mixture-of-experts FFN: num_experts experts of moe_intermediate_size,
// num_experts_per_tok of them a token (their weights renormalised where
// norm_topk_prob), on the layers decoder_sparse_step and mlp_only_layers
// leave sparse; the others keep a dense MLP of intermediate_size.
#ifndef ATLAS_RUNTIME_ARCH_QWEN3_MOE_QWEN3_MOE_H_
#define ATLAS_RUNTIME_ARCH_QWEN3_MOE_QWEN3_MOE_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_qwen3_moe_family;
extern const char *const atlas_qwen3_moe_model_types[];
extern const char *const atlas_qwen3_moe_architectures[];
// Parses into an atlas_decoder_config of family qwen3_moe.
ATLAS_MUST_USE atlas_status atlas_qwen3_moe_config_parse(const char *text,
                                                         size_t len,
                                                         const char *path,
                                                         void *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_QWEN3_MOE_QWEN3_MOE_H_
