// The mixture-of-experts keys of config.json (decoder_config.h,
// atlas_decoder_json_moe) and the limits of the MoE FFN.
//
// Keys the MoE families carry that are deliberately not read, because they
// change nothing at inference: router_aux_loss_coef and output_router_logits
// (the load-balancing loss of training, and whether the forward returns the
// router's logits for it), router_jitter_noise (Mixtral: noise on the
// router's input applied only in training mode). transformers' forward in
// eval mode computes the same logits whatever they hold.
#include <stdio.h>
#include <string.h>

#include "atlas/kernels/moe_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/formats/json_words.h"

// A non-negative integer key (0 allowed: num_experts 0 turns the MoE off);
// absent or null: *out is left alone.
static atlas_status json_count(const char *path, const json_t *root,
                               const char *key, int64_t *out) {
  const json_t *v = atlas_decoder_json_present(root, key);
  if (v == NULL) return ATLAS_OK;
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > ATLAS_DECODER_MAX_DIM) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" must be an integer between 0 and "
                             "%lld, not %s",
                             path, key, (long long)ATLAS_DECODER_MAX_DIM,
                             atlas_json_type_word(v));
  }
  *out = (int64_t)json_integer_value(v);
  return ATLAS_OK;
}

// mlp_only_layers: the layers that keep the dense MLP (indices past the
// last layer name none, as in transformers' `layer_idx not in` test).
static atlas_status read_mlp_only(const char *path, const json_t *root,
                                  atlas_decoder_config *cfg) {
  const json_t *v = atlas_decoder_json_present(root, "mlp_only_layers");
  if (v == NULL) return ATLAS_OK;
  if (!json_is_array(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"mlp_only_layers\" must be a list of layer "
                             "indices, not %s",
                             path, atlas_json_type_word(v));
  }
  for (size_t i = 0; i < json_array_size(v); ++i) {
    const json_t *e = json_array_get(v, i);
    if (!json_is_integer(e) || json_integer_value(e) < 0) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: \"mlp_only_layers\"[%zu] must be a "
                               "non-negative integer, not %s",
                               path, i, atlas_json_type_word(e));
    }
    json_int_t l = json_integer_value(e);
    if (l < cfg->num_hidden_layers) {
      cfg->moe_layers[l / 64] &= ~((uint64_t)1 << (l % 64));
    }
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_json_moe(const char *path, const json_t *root,
                                    atlas_decoder_config *cfg, int64_t experts,
                                    int64_t per_tok) {
  cfg->num_experts = experts;
  cfg->num_experts_per_tok = per_tok;
  cfg->norm_topk_prob = false;  // the Qwen MoE config classes' default
  ATLAS_RETURN_IF_ERROR(
      json_count(path, root, "num_experts", &cfg->num_experts));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "num_experts_per_tok", false, &cfg->num_experts_per_tok));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_bool(path, root, "norm_topk_prob",
                                                &cfg->norm_topk_prob));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "moe_intermediate_size", true, &cfg->moe_intermediate_size));
  int64_t step = 1;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "decoder_sparse_step", false, &step));
  memset(cfg->moe_layers, 0, sizeof(cfg->moe_layers));
  if (cfg->num_experts == 0) return ATLAS_OK;  // every MLP dense
  if (cfg->num_hidden_layers > ATLAS_DECODER_MAX_PATTERN_LAYERS) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: a mixture of experts over %lld layers: "
                             "supported on up to %d layers",
                             path, (long long)cfg->num_hidden_layers,
                             ATLAS_DECODER_MAX_PATTERN_LAYERS);
  }
  for (int64_t l = 0; l < cfg->num_hidden_layers; ++l) {
    if ((l + 1) % step == 0) {
      cfg->moe_layers[l / 64] |= (uint64_t)1 << (l % 64);
    }
  }
  ATLAS_RETURN_IF_ERROR(read_mlp_only(path, root, cfg));
  return atlas_decoder_moe_validate(path, cfg);
}

atlas_status atlas_decoder_moe_validate(const char *path,
                                        const atlas_decoder_config *cfg) {
  if (cfg->num_experts == 0) return ATLAS_OK;
  if (!atlas_moe_shape_ok((unsigned)cfg->num_experts,
                          (unsigned)cfg->num_experts_per_tok) ||
      cfg->num_experts > (int64_t)ATLAS_MOE_MAX_EXPERTS) {
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "%s: %lld experts with num_experts_per_tok %lld: the router takes "
        "1 to %u experts and 1 to %u of them a token (at most the experts)",
        path, (long long)cfg->num_experts, (long long)cfg->num_experts_per_tok,
        ATLAS_MOE_MAX_EXPERTS, ATLAS_MOE_MAX_K);
  }
  const char *clash = NULL;
  // A quantization_config is read after the family's keys and refused
  // there for a config with experts (decoder_config.c).
  if (cfg->act != ATLAS_DECODER_ACT_SILU) {
    clash = "an activation other than silu (the experts' kernels are SiLU's)";
  } else if (cfg->sandwich || cfg->mlp_bias || cfg->fused_gate_up) {
    clash = "sandwich norms, MLP biases or a fused gate_up_proj";
  }
  if (clash != NULL) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: model_type %s with %s is not supported", path,
                             cfg->family->name, clash);
  }
  return ATLAS_OK;
}
