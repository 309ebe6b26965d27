// The demo models, embedded in the binary
// (//tools/checkpoint:demo_models_embedded): config.json text and
// model.safetensors bytes for "tiny-a" and "tiny-b", generated at build time by
// make_checkpoint (see //tools/checkpoint:demo_models).
//
// Load one without touching the file system:
//   atlas_decoder_config_parse(m->config_json, m->config_bytes, m->name, &cfg);
//   atlas_checkpoint_open_buffer(m->weights, m->weights_bytes, m->name, &ck);
#ifndef ATLAS_TOOLS_MAKE_CHECKPOINT_DEMO_MODELS_H_
#define ATLAS_TOOLS_MAKE_CHECKPOINT_DEMO_MODELS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_demo_model {
  const char *name;              // "tiny-a", "tiny-b"
  const char *config_json;       // NUL-terminated
  size_t config_bytes;           // without the NUL
  const unsigned char *weights;  // 64-byte aligned safetensors bytes
  size_t weights_bytes;
} atlas_demo_model;

size_t atlas_demo_model_count(void);
// NULL when index >= count.
const atlas_demo_model *atlas_demo_model_at(size_t index);
// NULL when no model has that name.
const atlas_demo_model *atlas_demo_model_find(const char *name);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_MAKE_CHECKPOINT_DEMO_MODELS_H_
