// Qwen2's descriptor (see qwen2.h).
#include "atlas/runtime/arch/qwen2/qwen2.h"

const char *const atlas_qwen2_model_types[] = {"qwen2", NULL};
const char *const atlas_qwen2_architectures[] = {"Qwen2ForCausalLM", NULL};

atlas_status atlas_qwen2_read_window(const char *path, const json_t *root,
                                     atlas_decoder_config *cfg) {
  // 4096 is Qwen2Config's default when the key is absent; an explicit null
  // means no window.
  int64_t window = 4096;
  const json_t *w = json_object_get(root, "sliding_window");
  if (w != NULL && json_is_null(w)) window = 0;
  bool use = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "use_sliding_window", &use));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "sliding_window", false, &window));
  if (!use || window == 0) return ATLAS_OK;
  int64_t first = 28;  // Qwen2Config's default max_window_layers
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "max_window_layers", false, &first));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_window_from(path, cfg, window, first));
  // transformers prefers the explicit list; only full layers, then sliding
  // ones, as these families produce (others not checked against
  // transformers).
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_layer_types(path, root, cfg, &found));
  for (int64_t l = 1; found && l < cfg->num_hidden_layers; ++l) {
    if (atlas_decoder_layer_sliding(cfg, l - 1) &&
        !atlas_decoder_layer_sliding(cfg, l)) {
      int64_t first_sliding = 0;
      while (!atlas_decoder_layer_sliding(cfg, first_sliding)) ++first_sliding;
      return atlas_status_make(
          ATLAS_STATUS_UNIMPLEMENTED,
          "%s: layer_types: full_attention layer %lld "
          "after sliding_attention layer %lld is not "
          "supported (only full layers, then sliding ones)",
          path, (long long)l, (long long)first_sliding);
    }
  }
  return ATLAS_OK;
}

static atlas_status read_qwen2(const char *path, const json_t *root,
                               atlas_decoder_config *cfg) {
  static const char kWhy[] = "model_type qwen2 has no such feature";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "mlp_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "attention_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  cfg->qkv_bias = true;  // Qwen2Attention: q/k/v with bias, o without
  return atlas_qwen2_read_window(path, root, cfg);
}

const atlas_decoder_family atlas_qwen2_family = {
    .name = "qwen2",
    .max_positions = 32768,
    .kv_heads = 32,
    .read = read_qwen2,
};

atlas_status atlas_qwen2_config_parse(const char *text, size_t len,
                                      const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_qwen2_family, text, len, path,
                                    out_config);
}
