// Mistral (model_type "mistral"): the decoder with
// `sliding_window` on every layer (position p attends to the last W
// positions; null: no window; absent: MistralConfig's 4096).
#ifndef ATLAS_RUNTIME_ARCH_MISTRAL_MISTRAL_H_
#define ATLAS_RUNTIME_ARCH_MISTRAL_MISTRAL_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_mistral_family;
extern const char *const atlas_mistral_model_types[];
extern const char *const atlas_mistral_architectures[];
// Parses into an atlas_decoder_config of family mistral.
ATLAS_MUST_USE atlas_status atlas_mistral_config_parse(const char *text,
                                                       size_t len,
                                                       const char *path,
                                                       void *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_MISTRAL_MISTRAL_H_
