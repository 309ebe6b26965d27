// Gemma 2's descriptor, and the reading Gemma 3 shares (see gemma2.h).
#include "atlas/runtime/arch/gemma2/gemma2.h"

#include <math.h>

#include "atlas/runtime/arch/decoder/decoder_weights.h"

const char *const atlas_gemma2_model_types[] = {"gemma2", NULL};
const char *const atlas_gemma2_architectures[] = {"Gemma2ForCausalLM", NULL};

const char *const atlas_gemma_names[ATLAS_DECODER_WEIGHT_COUNT] = {
    [ATLAS_DECODER_EMBED_TOKENS] = ATLAS_DECODER_EMBED_TOKENS_NAME,
    [ATLAS_DECODER_FINAL_NORM] = ATLAS_DECODER_FINAL_NORM_NAME,
    [ATLAS_DECODER_LM_HEAD] = ATLAS_DECODER_LM_HEAD_NAME,
    [ATLAS_DECODER_INPUT_NORM] = "input_layernorm.weight",
    [ATLAS_DECODER_Q_PROJ] = "self_attn.q_proj.weight",
    [ATLAS_DECODER_K_PROJ] = "self_attn.k_proj.weight",
    [ATLAS_DECODER_V_PROJ] = "self_attn.v_proj.weight",
    [ATLAS_DECODER_O_PROJ] = "self_attn.o_proj.weight",
    [ATLAS_DECODER_FFN_NORM] = "pre_feedforward_layernorm.weight",
    [ATLAS_DECODER_GATE_PROJ] = "mlp.gate_proj.weight",
    [ATLAS_DECODER_UP_PROJ] = "mlp.up_proj.weight",
    [ATLAS_DECODER_DOWN_PROJ] = "mlp.down_proj.weight",
    [ATLAS_DECODER_Q_BIAS] = "self_attn.q_proj.bias",
    [ATLAS_DECODER_K_BIAS] = "self_attn.k_proj.bias",
    [ATLAS_DECODER_V_BIAS] = "self_attn.v_proj.bias",
    [ATLAS_DECODER_O_BIAS] = "self_attn.o_proj.bias",
    [ATLAS_DECODER_Q_NORM] = "self_attn.q_norm.weight",
    [ATLAS_DECODER_K_NORM] = "self_attn.k_norm.weight",
    [ATLAS_DECODER_ATTN_OUT_NORM] = "post_attention_layernorm.weight",
    [ATLAS_DECODER_FFN_OUT_NORM] = "post_feedforward_layernorm.weight",
};

// A number key with a default: absent, the default; null, 0 (none).
static atlas_status number_or(const char *path, const json_t *root,
                              const char *key, double fallback, double *out) {
  const json_t *v = json_object_get(root, key);
  *out = v == NULL ? fallback : 0;
  bool found = false;
  return atlas_decoder_json_positive(path, root, key, &found, out);
}

atlas_status atlas_gemma_read(const char *path, const json_t *root,
                              atlas_decoder_config *cfg, int64_t pattern,
                              double attn_cap, double final_cap) {
  cfg->norm_one_plus = true;
  cfg->sandwich = true;
  // Gemma's MLP reads hidden_activation (hidden_act, where a config also
  // has it, is not read by transformers).
  cfg->act = ATLAS_DECODER_ACT_GELU_TANH;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_act(path, root, "hidden_activation", true, &cfg->act));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_partial_rotary(path, cfg));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_refuse_longrope(path, cfg));
  // The config classes default to tied embeddings.
  if (atlas_decoder_json_present(root, "tie_word_embeddings") == NULL) {
    cfg->tie_word_embeddings = true;
  }
  bool attention_bias = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_bool(path, root, "attention_bias", &attention_bias));
  cfg->qkv_bias = cfg->o_bias = attention_bias;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_refuse(path, root, "use_bidirectional_attention",
                                "Atlas runs causal attention only"));
  cfg->embed_scale = sqrt((double)cfg->hidden_size);
  ATLAS_RETURN_IF_ERROR(number_or(path, root, "attn_logit_softcapping",
                                  attn_cap, &cfg->attn_softcap));
  ATLAS_RETURN_IF_ERROR(number_or(path, root, "final_logit_softcapping",
                                  final_cap, &cfg->final_softcap));
  double scalar = 256;  // the config classes' query_pre_attn_scalar
  ATLAS_RETURN_IF_ERROR(
      number_or(path, root, "query_pre_attn_scalar", 256, &scalar));
  if (!(scalar > 0)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"query_pre_attn_scalar\" must be a "
                             "positive number",
                             path);
  }
  cfg->query_scale = 1.0 / sqrt(scalar);
  // Windows: layer_types where given, else every layer but each
  // pattern-th (transformers' default layer_types).
  int64_t window = 4096;
  const json_t *w = json_object_get(root, "sliding_window");
  if (w != NULL && json_is_null(w)) window = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "sliding_window", false, &window));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "sliding_window_pattern", false, &pattern));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_window_from(path, cfg, window, 0));
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_layer_types(path, root, cfg, &found));
  for (int64_t l = 0; !found && window > 0 && l < cfg->num_hidden_layers &&
                      l < ATLAS_DECODER_MAX_PATTERN_LAYERS;
       ++l) {
    atlas_decoder_set_sliding(cfg, l, (l + 1) % pattern != 0);
  }
  return ATLAS_OK;
}

static atlas_status read_gemma2(const char *path, const json_t *root,
                                atlas_decoder_config *cfg) {
  // Gemma2Config: caps 50 and 30, windows on every other layer.
  return atlas_gemma_read(path, root, cfg, 2, 50.0, 30.0);
}

static const char *const kGemma2Keys[] = {"attn_logit_softcapping",
                                          "final_logit_softcapping",
                                          "query_pre_attn_scalar", NULL};

const atlas_decoder_family atlas_gemma2_family = {
    .name = "gemma2",
    .max_positions = 8192,
    .kv_heads = 4,
    .head_dim = 256,
    .tensor_names = atlas_gemma_names,
    .keys = kGemma2Keys,
    .read = read_gemma2,
};

atlas_status atlas_gemma2_config_parse(const char *text, size_t len,
                                       const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_gemma2_family, text, len, path,
                                    out_config);
}
