// Qwen3's descriptor (see qwen3.h).
#include "atlas/runtime/arch/qwen3/qwen3.h"

#include "atlas/runtime/arch/qwen2/qwen2.h"

const char *const atlas_qwen3_model_types[] = {"qwen3", NULL};
const char *const atlas_qwen3_architectures[] = {"Qwen3ForCausalLM", NULL};

static atlas_status read_qwen3(const char *path, const json_t *root,
                               atlas_decoder_config *cfg) {
  static const char kWhy[] = "model_type qwen3 has no such feature";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "mlp_bias", kWhy));
  bool attention_bias = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "attention_bias", &attention_bias));
  cfg->qkv_bias = cfg->o_bias = attention_bias;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  cfg->qk_norm = true;
  return atlas_qwen2_read_window(path, root, cfg);
}

// Qwen3Config's head_dim default is 128, not hidden_size / heads.
const atlas_decoder_family atlas_qwen3_family = {
    .name = "qwen3",
    .max_positions = 32768,
    .kv_heads = 32,
    .head_dim = 128,
    .read = read_qwen3,
};

atlas_status atlas_qwen3_config_parse(const char *text, size_t len,
                                      const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_qwen3_family, text, len, path,
                                    out_config);
}
