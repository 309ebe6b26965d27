// The llama family's descriptor (see llama.h).
#include "atlas/runtime/arch/llama/llama.h"

const char *const atlas_llama_model_types[] = {"llama", NULL};
const char *const atlas_llama_architectures[] = {"LlamaForCausalLM", NULL};

static const char kWhy[] = "model_type llama has no such feature";

static atlas_status read_llama(const char *path, const json_t *root,
                               atlas_decoder_config *cfg) {
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  bool attention_bias = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "attention_bias", &attention_bias));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "mlp_bias", &cfg->mlp_bias));
  cfg->qkv_bias = cfg->o_bias = attention_bias;
  // sliding_window itself is read below; use_sliding_window is refused as
  // before (not checked against transformers).
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "use_sliding_window", kWhy));
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_layer_types(path, root, cfg, &found));
  for (int64_t l = 0; found && l < cfg->num_hidden_layers &&
                      l < ATLAS_DECODER_MAX_PATTERN_LAYERS;
       ++l) {
    if (((cfg->sliding[l / 64] >> (l % 64)) & 1) != 0) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: layer_types asks for sliding_attention, "
                               "which model_type llama does not have",
                               path);
    }
  }
  // LlamaAttention never windows: one forward attends to every position.
  // Only generate's cache reads sliding_window (it keeps the last
  // sliding_window - 1 keys), so past the window transformers' decode
  // steps see fewer keys than its prompt did (checked on the H200,
  // transformers 5.17). Atlas attends to every position and holds the
  // context to the window, where the two agree.
  return atlas_decoder_json_dim(path, root, "sliding_window", false,
                                &cfg->context_window);
}

const atlas_decoder_family atlas_llama_family = {
    .name = "llama",
    .max_positions = 2048,
    .read = read_llama,
};

atlas_status atlas_llama_config_parse(const char *text, size_t len,
                                      const char *path,
                                      atlas_decoder_config *out_config) {
  return atlas_decoder_config_parse(&atlas_llama_family, text, len, path,
                                    out_config);
}

atlas_status atlas_llama_parse(const char *text, size_t len, const char *path,
                               void *out_config) {
  return atlas_llama_config_parse(text, len, path, out_config);
}

atlas_status atlas_llama_config_load(const char *path,
                                     atlas_decoder_config *out_config) {
  return atlas_decoder_config_load(&atlas_llama_family, path, out_config);
}
