// Gemma 2 (model_type "gemma2"): (1 + w) RMSNorm before and after attention
// and the MLP (sandwich), GELU-tanh, the embedding scaled by sqrt(hidden),
// soft-capped attention scores and logits, scores scaled by
// query_pre_attn_scalar^-0.5, sliding windows on the even layers.
#ifndef ATLAS_RUNTIME_ARCH_GEMMA2_GEMMA2_H_
#define ATLAS_RUNTIME_ARCH_GEMMA2_GEMMA2_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_gemma2_family;
extern const char *const atlas_gemma2_model_types[];
extern const char *const atlas_gemma2_architectures[];
// Parses into an atlas_decoder_config of family gemma2 (the row's parser).
ATLAS_MUST_USE atlas_status atlas_gemma2_config_parse(const char *text,
                                                      size_t len,
                                                      const char *path,
                                                      void *out_config);

// Gemma's shared reading (Gemma 2 and 3): the norms, the activation, the
// embedding scale, the caps and the query scale, the attention bias and
// the window on the layers `layer_types` (or every layer but each
// `pattern`-th) names, with the config class's defaults (caps).
ATLAS_MUST_USE atlas_status atlas_gemma_read(const char *path,
                                             const json_t *root,
                                             atlas_decoder_config *cfg,
                                             int64_t pattern, double attn_cap,
                                             double final_cap);
// Gemma's tensor names: Llama's, with the sandwich norms.
extern const char *const atlas_gemma_names[];
#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_GEMMA2_GEMMA2_H_
