// Qwen3-MoE's descriptor (see qwen3_moe.h).
#include "atlas/runtime/arch/qwen3_moe/qwen3_moe.h"

#include "atlas/runtime/arch/qwen2/qwen2.h"

const char *const atlas_qwen3_moe_model_types[] = {"qwen3_moe", NULL};
const char *const atlas_qwen3_moe_architectures[] = {"Qwen3MoeForCausalLM",
                                                     NULL};

// Qwen3MoeSparseMoeBlock: gate (the router) and experts.N.{gate,up,down}_proj.
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
};

static atlas_status read_qwen3_moe(const char *path, const json_t *root,
                                   atlas_decoder_config *cfg) {
  static const char kWhy[] = "model_type qwen3_moe has no such feature";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "mlp_bias", kWhy));
  // A shared expert is Qwen2-MoE's and Qwen3-Next's, not this class's.
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_refuse(
      path, root, "shared_expert_intermediate_size", kWhy));
  bool attention_bias = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "attention_bias", &attention_bias));
  cfg->qkv_bias = cfg->o_bias = attention_bias;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  cfg->qk_norm = true;
  ATLAS_RETURN_IF_ERROR(atlas_qwen2_read_window(path, root, cfg));
  // Qwen3MoeConfig's defaults: 128 experts, 8 a token.
  return atlas_decoder_json_moe(path, root, cfg, 128, 8);
}

// Qwen3MoeConfig: 4 KV heads; head_dim, when absent, hidden / heads (the
// attention's getattr fallback).
const atlas_decoder_family atlas_qwen3_moe_family = {
    .name = "qwen3_moe",
    .max_positions = 32768,
    .kv_heads = 4,
    .moe_names = &kNames,
    .read = read_qwen3_moe,
};

atlas_status atlas_qwen3_moe_config_parse(const char *text, size_t len,
                                          const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_qwen3_moe_family, text, len, path,
                                    out_config);
}
