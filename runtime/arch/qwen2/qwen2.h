// Qwen2 / Qwen2.5 (model_type "qwen2"): the decoder with q/k/v
// biases, usually tied embeddings, and a sliding window on the layers from
// max_window_layers on when use_sliding_window is true.
#ifndef ATLAS_RUNTIME_ARCH_QWEN2_QWEN2_H_
#define ATLAS_RUNTIME_ARCH_QWEN2_QWEN2_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_decoder_family atlas_qwen2_family;
extern const char *const atlas_qwen2_model_types[];
extern const char *const atlas_qwen2_architectures[];
// Parses into an atlas_decoder_config of family qwen2.
ATLAS_MUST_USE atlas_status atlas_qwen2_config_parse(const char *text,
                                                     size_t len,
                                                     const char *path,
                                                     void *out_config);

// Qwen's windows, in transformers' terms: sliding_window (default 4096;
// null: none) only when use_sliding_window, on layers >= max_window_layers
// (default 28), or as layer_types says. Qwen3 reads them the same way.
ATLAS_MUST_USE atlas_status atlas_qwen2_read_window(const char *path,
                                                    const json_t *root,
                                                    atlas_decoder_config *cfg);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_QWEN2_QWEN2_H_
