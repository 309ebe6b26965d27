// End-of-sequence ids: `eos_token_id` of config.json or
// generation_config.json, an integer or a list of integers (Hugging Face
// writes both). transformers' generate() takes generation_config.json's
// value where that file exists (none, if it has no eos_token_id), else
// config.json's.
#ifndef ATLAS_RUNTIME_MODEL_EOS_H_
#define ATLAS_RUNTIME_MODEL_EOS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_EOS_MAX 16

typedef struct atlas_eos {
  uint32_t ids[ATLAS_EOS_MAX];
  size_t count;  // 0: the checkpoint names no EOS
} atlas_eos;

// Reads eos_token_id from a JSON object's text. *out_found says whether the
// key was there (null counts as absent); *out is replaced only when found.
ATLAS_MUST_USE atlas_status atlas_eos_parse(const char *text, size_t len,
                                            const char *path_for_errors,
                                            atlas_eos *out, bool *out_found);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_MODEL_EOS_H_
