// Qwen2-MoE's descriptor (see qwen2_moe.h).
#include "atlas/runtime/arch/qwen2_moe/qwen2_moe.h"

#include "atlas/runtime/arch/qwen2/qwen2.h"

const char *const atlas_qwen2_moe_model_types[] = {"qwen2_moe", NULL};
const char *const atlas_qwen2_moe_architectures[] = {"Qwen2MoeForCausalLM",
                                                     NULL};

// Qwen2MoeSparseMoeBlock: gate, experts.N, shared_expert and
// shared_expert_gate.
static const atlas_decoder_moe_names kNames = {
    .router = "mlp.gate.weight",
    .expert_prefix = "mlp.experts.",
    .gate = "gate_proj.weight",
    .up = "up_proj.weight",
    .down = "down_proj.weight",
    // transformers 5's Qwen*MoeExperts parameters, where a checkpoint holds
    // them.
    .fused_gate_up = "mlp.experts.gate_up_proj",
    .fused_down = "mlp.experts.down_proj",
    .shared_gate = "mlp.shared_expert.gate_proj.weight",
    .shared_up = "mlp.shared_expert.up_proj.weight",
    .shared_down = "mlp.shared_expert.down_proj.weight",
    .shared_expert_gate = "mlp.shared_expert_gate.weight",
};

static atlas_status read_qwen2_moe(const char *path, const json_t *root,
                                   atlas_decoder_config *cfg) {
  static const char kWhy[] =
      "model_type qwen2_moe has no such feature (its attention's biases are "
      "qkv_bias)";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "mlp_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "attention_bias", kWhy));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  cfg->qkv_bias = true;  // Qwen2MoeAttention: q/k/v with bias, o without
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "qkv_bias", &cfg->qkv_bias));
  ATLAS_RETURN_IF_ERROR(atlas_qwen2_read_window(path, root, cfg));
  // Qwen2MoeConfig's defaults: a shared expert of 5632, 60 experts, 4 a
  // token.
  cfg->shared_expert_intermediate_size = 5632;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "shared_expert_intermediate_size",
                             false, &cfg->shared_expert_intermediate_size));
  return atlas_decoder_json_moe(path, root, cfg, 60, 4);
}

// Qwen2MoeConfig: 16 KV heads; head_dim hidden / heads.
const atlas_decoder_family atlas_qwen2_moe_family = {
    .name = "qwen2_moe",
    .max_positions = 32768,
    .kv_heads = 16,
    .moe_names = &kNames,
    .read = read_qwen2_moe,
};

atlas_status atlas_qwen2_moe_config_parse(const char *text, size_t len,
                                          const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_qwen2_moe_family, text, len, path,
                                    out_config);
}
