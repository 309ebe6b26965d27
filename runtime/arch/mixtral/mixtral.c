// Mixtral's descriptor (see mixtral.h).
#include "atlas/runtime/arch/mixtral/mixtral.h"

const char *const atlas_mixtral_model_types[] = {"mixtral", NULL};
const char *const atlas_mixtral_architectures[] = {"MixtralForCausalLM", NULL};

static const atlas_decoder_moe_names kNames = {
    .router = "block_sparse_moe.gate.weight",
    .expert_prefix = "block_sparse_moe.experts.",
    .gate = "w1.weight",
    .up = "w3.weight",
    .down = "w2.weight",
    // transformers 5's MixtralSparseMoeBlock sits at "mlp": its router and
    // fused 3-D experts, where a checkpoint holds them.
    .fused_gate_up = "mlp.experts.gate_up_proj",
    .fused_down = "mlp.experts.down_proj",
    .fused_router = "mlp.gate.weight",
};

// MixtralConfig's rope_theta default is 1e6, not 10000.
static atlas_status read_rope(const char *path, const json_t *root,
                              atlas_decoder_config *cfg) {
  ATLAS_RETURN_IF_ERROR(atlas_rope_config_parse(path, root, &cfg->rope));
  const json_t *params = json_object_get(root, "rope_parameters");
  if (atlas_decoder_json_present(root, "rope_theta") == NULL &&
      (!json_is_object(params) ||
       atlas_decoder_json_present(params, "rope_theta") == NULL)) {
    cfg->rope.theta = 1000000.0;
  }
  return ATLAS_OK;
}

static atlas_status read_mixtral(const char *path, const json_t *root,
                                 atlas_decoder_config *cfg) {
  static const char kWhy[] = "model_type mixtral has no such feature";
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_act", false, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  const char *const refused[] = {"mlp_bias", "attention_bias", "layer_types",
                                 "shared_expert_intermediate_size"};
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); ++i) {
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_json_refuse(path, root, refused[i], kWhy));
  }
  // MixtralSparseMoeBlock: every layer, the top k always renormalised,
  // experts as wide as intermediate_size.
  cfg->num_experts = 8;
  cfg->num_experts_per_tok = 2;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(path, root, "num_local_experts",
                                               false, &cfg->num_experts));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "num_experts_per_tok", false, &cfg->num_experts_per_tok));
  cfg->norm_topk_prob = true;
  cfg->moe_intermediate_size = cfg->intermediate_size;
  if (cfg->num_hidden_layers > ATLAS_DECODER_MAX_PATTERN_LAYERS) {
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED, "%s: %lld layers: supported up to %d", path,
        (long long)cfg->num_hidden_layers, ATLAS_DECODER_MAX_PATTERN_LAYERS);
  }
  for (int64_t l = 0; l < cfg->num_hidden_layers; ++l) {
    cfg->moe_layers[l / 64] |= (uint64_t)1 << (l % 64);
  }
  ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_validate(path, cfg));
  // sliding_window (default null: none) applies to every layer.
  int64_t window = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "sliding_window", false, &window));
  return atlas_decoder_window_from(path, cfg, window, 0);
}

// MixtralConfig: 8 KV heads, 4096 * 32 positions, rms_norm_eps 1e-5.
const atlas_decoder_family atlas_mixtral_family = {
    .name = "mixtral",
    .max_positions = 131072,
    .kv_heads = 8,
    .rms_norm_eps = 1e-5,
    .moe_names = &kNames,
    .read_rope = read_rope,
    .read = read_mixtral,
};

atlas_status atlas_mixtral_config_parse(const char *text, size_t len,
                                        const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_mixtral_family, text, len, path,
                                    out_config);
}
