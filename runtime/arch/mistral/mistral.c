// Mistral's names and config reading (see mistral.h).
#include "atlas/runtime/arch/mistral/mistral.h"

#include "atlas/runtime/arch/decoder/decoder_config.h"

const char *const atlas_mistral_model_types[] = {"mistral", NULL};
const char *const atlas_mistral_architectures[] = {"MistralForCausalLM", NULL};

atlas_status atlas_mistral_config_parse(const char *text, size_t len,
                                        const char *path, void *out_config) {
  return atlas_decoder_config_parse_family(ATLAS_DECODER_FAMILY_MISTRAL, text,
                                           len, path, out_config);
}
