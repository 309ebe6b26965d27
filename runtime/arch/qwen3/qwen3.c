// Qwen2's names and config reading (see qwen3.h).
#include "atlas/runtime/arch/qwen3/qwen3.h"

#include "atlas/runtime/arch/decoder/decoder_config.h"

const char *const atlas_qwen3_model_types[] = {"qwen3", NULL};
const char *const atlas_qwen3_architectures[] = {"Qwen3ForCausalLM", NULL};

atlas_status atlas_qwen3_config_parse(const char *text, size_t len,
                                      const char *path, void *out_config) {
  return atlas_decoder_config_parse_family(ATLAS_DECODER_FAMILY_QWEN3, text,
                                           len, path, out_config);
}
