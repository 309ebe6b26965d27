// Qwen2-MoE (model_type "qwen2_moe"): Qwen2's attention (q/k/v biases,
// Qwen2's window flags) with a mixture-of-experts FFN as Qwen3-MoE's
// (num_experts, num_experts_per_tok, norm_topk_prob, decoder_sparse_step,
// mlp_only_layers) plus a shared expert of shared_expert_intermediate_size
// that every token takes, scaled by sigmoid(shared_expert_gate x).
#ifndef ATLAS_RUNTIME_ARCH_QWEN2_MOE_QWEN2_MOE_H_
#define ATLAS_RUNTIME_ARCH_QWEN2_MOE_QWEN2_MOE_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_qwen2_moe_family;
extern const char *const atlas_qwen2_moe_model_types[];
extern const char *const atlas_qwen2_moe_architectures[];
// Parses into an atlas_decoder_config of family qwen2_moe.
ATLAS_MUST_USE atlas_status atlas_qwen2_moe_config_parse(const char *text,
                                                         size_t len,
                                                         const char *path,
                                                         void *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_QWEN2_MOE_QWEN2_MOE_H_
