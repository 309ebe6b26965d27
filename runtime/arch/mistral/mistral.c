// Mistral's descriptor (see mistral.h).
#include "atlas/runtime/arch/mistral/mistral.h"

const char *const atlas_mistral_model_types[] = {"mistral", NULL};
const char *const atlas_mistral_architectures[] = {"MistralForCausalLM", NULL};

static atlas_status read_mistral(const char *path, const json_t *root,
                                 atlas_decoder_config *cfg) {
  static const char kWhy[] = "model_type mistral has no such feature";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "mlp_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "attention_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  // 4096 is MistralConfig's default when the key is absent; an explicit
  // null means no window. Every layer windows.
  int64_t window = 4096;
  const json_t *w = json_object_get(root, "sliding_window");
  if (w != NULL && json_is_null(w)) window = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "sliding_window", false, &window));
  if (window == 0) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_window_from(path, cfg, window, 0));
  atlas_decoder_config listed = *cfg;
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_layer_types(path, root, &listed, &found));
  bool all = true;
  for (int64_t l = 0; found && l < listed.num_hidden_layers; ++l) {
    all = all && atlas_decoder_layer_sliding(&listed, l);
  }
  if (!all) {
    // MistralAttention never reads layer_types: an earlier probe saw every
    // layer windowed (and a warning). It is not simply ignored, though:
    // transformers 5.17 builds per-layer-type RoPE parameters from the list
    // and, with rope_theta at the top level, failed to build the model
    // (TypeError; H200, 2026-12-04). Full layers in the list ask for
    // another model; kept refused rather than guess which answer is meant.
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "%s: layer_types lists full_attention layers, "
        "which model_type mistral does not have "
        "(MistralForCausalLM does not follow layer_types: "
        "transformers applies sliding_window %lld to every "
        "layer or, with rope_theta at the top level, "
        "fails to build the model)",
        path, (long long)window);
  }
  return ATLAS_OK;
}

// MistralConfig: 8 KV heads, 4096 * 32 positions when absent.
const atlas_decoder_family atlas_mistral_family = {
    .name = "mistral",
    .max_positions = 131072,
    .kv_heads = 8,
    .read = read_mistral,
};

atlas_status atlas_mistral_config_parse(const char *text, size_t len,
                                        const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_mistral_family, text, len, path,
                                    out_config);
}
