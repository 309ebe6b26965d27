// Llama 2 / 3 (model_type "llama"): the decoder's base layout, with
// attention_bias and mlp_bias; its sliding_window holds the context (every
// layer still attends to all positions, as LlamaAttention does).
#ifndef ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_H_
#define ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_llama_family;
extern const char *const atlas_llama_model_types[];
extern const char *const atlas_llama_architectures[];
// Parses into an atlas_decoder_config of family llama (the row's parser).
ATLAS_MUST_USE atlas_status atlas_llama_parse(const char *text, size_t len,
                                              const char *path,
                                              void *out_config);
// The same, typed; and from a file.
ATLAS_MUST_USE atlas_status
atlas_llama_config_parse(const char *text, size_t len, const char *path,
                         atlas_decoder_config *out_config);
ATLAS_MUST_USE atlas_status
atlas_llama_config_load(const char *path, atlas_decoder_config *out_config);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_LLAMA_LLAMA_H_
