// Qwen2's names and config reading (see qwen2.h).
#include "atlas/runtime/arch/qwen2/qwen2.h"

#include "atlas/runtime/arch/decoder/decoder_config.h"

const char *const atlas_qwen2_model_types[] = {"qwen2", NULL};
const char *const atlas_qwen2_architectures[] = {"Qwen2ForCausalLM", NULL};

atlas_status atlas_qwen2_config_parse(const char *text, size_t len,
                                      const char *path, void *out_config) {
  return atlas_decoder_config_parse_family(ATLAS_DECODER_FAMILY_QWEN2, text,
                                           len, path, out_config);
}
