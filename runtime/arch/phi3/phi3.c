// Phi-3 / Phi-4's descriptor (see phi3.h).
#include "atlas/runtime/arch/phi3/phi3.h"

#include "atlas/runtime/arch/decoder/decoder_weights.h"

const char *const atlas_phi3_model_types[] = {"phi3", NULL};
const char *const atlas_phi3_architectures[] = {"Phi3ForCausalLM", NULL};

// Llama's names, with q, k, v in one tensor and gate, up in another.
static const char *const kNames[ATLAS_DECODER_WEIGHT_COUNT] = {
    [ATLAS_DECODER_EMBED_TOKENS] = ATLAS_DECODER_EMBED_TOKENS_NAME,
    [ATLAS_DECODER_FINAL_NORM] = ATLAS_DECODER_FINAL_NORM_NAME,
    [ATLAS_DECODER_LM_HEAD] = ATLAS_DECODER_LM_HEAD_NAME,
    [ATLAS_DECODER_INPUT_NORM] = "input_layernorm.weight",
    [ATLAS_DECODER_QKV_PROJ] = "self_attn.qkv_proj.weight",
    [ATLAS_DECODER_O_PROJ] = "self_attn.o_proj.weight",
    [ATLAS_DECODER_FFN_NORM] = "post_attention_layernorm.weight",
    [ATLAS_DECODER_GATE_UP_PROJ] = "mlp.gate_up_proj.weight",
    [ATLAS_DECODER_DOWN_PROJ] = "mlp.down_proj.weight",
};

static atlas_status read_phi3(const char *path, const json_t *root,
                              atlas_decoder_config *cfg) {
  // Phi3MLP reads hidden_act (ACT2FN), the decoder has silu and GELU-tanh.
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", true, &cfg->act));
  cfg->fused_qkv = true;
  cfg->fused_gate_up = true;
  // Phi3Config: no window unless sliding_window says one; every layer.
  int64_t window = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "sliding_window", false, &window));
  return atlas_decoder_window_from(path, cfg, window, 0);
}

const atlas_decoder_family atlas_phi3_family = {
    .name = "phi3",
    .max_positions = 4096,
    .rms_norm_eps = 1e-5,
    .tensor_names = kNames,
    .read = read_phi3,
};

atlas_status atlas_phi3_config_parse(const char *text, size_t len,
                                     const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_phi3_family, text, len, path,
                                    out_config);
}
