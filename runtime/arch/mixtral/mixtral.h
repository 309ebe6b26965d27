// Mixtral (model_type "mixtral"): Mistral's attention (a window on every
// layer where sliding_window is set) with a mixture-of-experts FFN on every
// layer: num_local_experts experts of intermediate_size,
// num_experts_per_tok of them a token, their weights always renormalised;
// tensors block_sparse_moe.gate and block_sparse_moe.experts.N.w1 (gate),
// w3 (up), w2 (down).
#ifndef ATLAS_RUNTIME_ARCH_MIXTRAL_MIXTRAL_H_
#define ATLAS_RUNTIME_ARCH_MIXTRAL_MIXTRAL_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_mixtral_family;
extern const char *const atlas_mixtral_model_types[];
extern const char *const atlas_mixtral_architectures[];
// Parses into an atlas_decoder_config of family mixtral.
ATLAS_MUST_USE atlas_status atlas_mixtral_config_parse(const char *text,
                                                       size_t len,
                                                       const char *path,
                                                       void *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_MIXTRAL_MIXTRAL_H_
