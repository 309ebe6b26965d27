// Gemma 3 text (model_type "gemma3_text"): Gemma 2's layout with q/k norms,
// five sliding layers to one global, the local RoPE base
// (rope_local_base_freq) on the sliding layers and the config's RoPE
// (rope_theta, rope_scaling) on the global ones; no caps by default.
#ifndef ATLAS_RUNTIME_ARCH_GEMMA3_GEMMA3_H_
#define ATLAS_RUNTIME_ARCH_GEMMA3_GEMMA3_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_gemma3_family;
extern const char *const atlas_gemma3_model_types[];
extern const char *const atlas_gemma3_architectures[];
// Parses into an atlas_decoder_config of family gemma3 (the row's parser).
ATLAS_MUST_USE atlas_status atlas_gemma3_config_parse(const char *text,
                                                      size_t len,
                                                      const char *path,
                                                      void *out_config);
#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_GEMMA3_GEMMA3_H_
