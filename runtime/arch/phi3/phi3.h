// Phi-3 and Phi-4 (model_type "phi3"): fused qkv_proj and gate_up_proj,
// partial rotary, LongRoPE (short factors up to
// original_max_position_embeddings, long ones past it, by the forward's
// length as transformers chooses them) and a window on every layer where
// sliding_window is set.
#ifndef ATLAS_RUNTIME_ARCH_PHI3_PHI3_H_
#define ATLAS_RUNTIME_ARCH_PHI3_PHI3_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_phi3_family;
extern const char *const atlas_phi3_model_types[];
extern const char *const atlas_phi3_architectures[];
// Parses into an atlas_decoder_config of family phi3 (the row's parser).
ATLAS_MUST_USE atlas_status atlas_phi3_config_parse(const char *text,
                                                    size_t len,
                                                    const char *path,
                                                    void *out_config);
#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_PHI3_PHI3_H_
