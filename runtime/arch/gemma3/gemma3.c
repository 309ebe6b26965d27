// Gemma 3 text's descriptor (see gemma3.h).
#include "atlas/runtime/arch/gemma3/gemma3.h"

#include <string.h>

#include "atlas/runtime/arch/gemma2/gemma2.h"

const char *const atlas_gemma3_model_types[] = {"gemma3_text", NULL};
const char *const atlas_gemma3_architectures[] = {"Gemma3ForCausalLM", NULL};

// One RoPE object read as a config's top-level rope_parameters.
static atlas_status read_one(const char *path, const json_t *params,
                             atlas_rope_config *out) {
  json_t *root = json_object();
  if (root == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory", path);
  }
  atlas_status status = ATLAS_OK;
  if (json_object_set(root, "rope_parameters", (json_t *)params) != 0) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory", path);
  } else {
    status = atlas_rope_config_parse(path, root, out);
  }
  json_decref(root);
  return status;
}

// The global layers' RoPE (cfg->rope) and the sliding layers' (rope_local),
// in either spelling: transformers 5's rope_parameters per layer type
// ({"full_attention": {...}, "sliding_attention": {...}}), or the Hub's
// rope_theta (default 1e6) and rope_scaling for the global layers and
// rope_local_base_freq (default 10000, unscaled) for the sliding ones.
static atlas_status read_rope(const char *path, const json_t *root,
                              atlas_decoder_config *cfg) {
  cfg->local_rope = true;
  const json_t *params = atlas_decoder_json_present(root, "rope_parameters");
  const json_t *full =
      json_is_object(params) ? json_object_get(params, "full_attention") : NULL;
  if (full != NULL) {
    const json_t *sliding = json_object_get(params, "sliding_attention");
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)params, key, value) {
      if (strcmp(key, "full_attention") != 0 &&
          strcmp(key, "sliding_attention") != 0) {
        return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                                 "%s: rope_parameters.\"%s\" is not supported "
                                 "(only full_attention and sliding_attention)",
                                 path, key);
      }
    }
    if (!json_is_object(full) || !json_is_object(sliding)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: rope_parameters needs full_attention and "
                               "sliding_attention objects",
                               path);
    }
    ATLAS_RETURN_IF_ERROR(read_one(path, full, &cfg->rope));
    return read_one(path, sliding, &cfg->rope_local);
  }
  ATLAS_RETURN_IF_ERROR(atlas_rope_config_parse(path, root, &cfg->rope));
  bool top = atlas_decoder_json_present(root, "rope_theta") != NULL;
  bool nested = json_is_object(params) &&
                atlas_decoder_json_present(params, "rope_theta") != NULL;
  if (!top && !nested) cfg->rope.theta = 1000000.0;  // Gemma3TextConfig's
  double local = 10000.0;
  bool found = false;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_positive(
      path, root, "rope_local_base_freq", &found, &local));
  atlas_rope_config_init(&cfg->rope_local, local);
  cfg->rope_local.partial_rotary_factor = cfg->rope.partial_rotary_factor;
  return ATLAS_OK;
}

static atlas_status read_gemma3(const char *path, const json_t *root,
                                atlas_decoder_config *cfg) {
  cfg->qk_norm = true;
  // Gemma3TextConfig: no caps, five sliding layers to one global.
  return atlas_gemma_read(path, root, cfg, 6, 0.0, 0.0);
}

static const char *const kGemma3Keys[] = {"attn_logit_softcapping",
                                          "final_logit_softcapping",
                                          "query_pre_attn_scalar", NULL};

const atlas_decoder_family atlas_gemma3_family = {
    .name = "gemma3_text",
    .max_positions = 131072,
    .kv_heads = 4,
    .head_dim = 256,
    .tensor_names = atlas_gemma_names,
    .keys = kGemma3Keys,
    .read_rope = read_rope,
    .read = read_gemma3,
};

atlas_status atlas_gemma3_config_parse(const char *text, size_t len,
                                       const char *path, void *out_config) {
  return atlas_decoder_config_parse(&atlas_gemma3_family, text, len, path,
                                    out_config);
}
