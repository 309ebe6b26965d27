// The decoder config's shared keys and the helpers the families' readers
// use (decoder_config.h).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/arch/decoder/decoder_config.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/json_words.h"
#include "atlas/runtime/quant/quant_tensors.h"

// config.json is a few kilobytes; refuse anything absurd before reading it.
#define MAX_CONFIG_BYTES ((long)16 * 1024 * 1024)

const json_t *atlas_decoder_json_present(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  return v == NULL || json_is_null(v) ? NULL : v;
}

#define present atlas_decoder_json_present

atlas_status atlas_decoder_json_dim(const char *path, const json_t *root,
                                    const char *key, bool required,
                                    int64_t *out) {
  const json_t *v = present(root, key);
  if (v == NULL) {
    if (!required) return ATLAS_OK;
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: required key \"%s\" is missing", path, key);
  }
  if (!json_is_integer(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" must be an integer, not %s", path, key,
                             atlas_json_type_word(v));
  }
  json_int_t i = json_integer_value(v);
  if (i <= 0 || i > ATLAS_DECODER_MAX_DIM) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" is %lld; it must be between 1 and "
                             "%lld",
                             path, key, (long long)i,
                             (long long)ATLAS_DECODER_MAX_DIM);
  }
  *out = (int64_t)i;
  return ATLAS_OK;
}

atlas_status atlas_decoder_json_positive(const char *path, const json_t *obj,
                                         const char *key, bool *found,
                                         double *out) {
  const json_t *v = present(obj, key);
  *found = v != NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_number(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" must be a number, not %s", path, key,
                             atlas_json_type_word(v));
  }
  double d = json_number_value(v);
  if (!(d > 0) || !isfinite(d)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" is %g; it must be a positive number",
                             path, key, d);
  }
  // The kernels take these as float32: a value that does not fit would
  // become +inf (or 0) there and silently zero every logit.
  if (d > FLT_MAX || d < FLT_MIN) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" is %g, which does not fit a float32 "
                             "(the kernels use float32: between %g and %g)",
                             path, key, d, (double)FLT_MIN, (double)FLT_MAX);
  }
  *out = d;
  return ATLAS_OK;
}

atlas_status atlas_decoder_json_bool(const char *path, const json_t *root,
                                     const char *key, bool *out) {
  const json_t *v = present(root, key);
  if (v == NULL) return ATLAS_OK;
  if (!json_is_boolean(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" must be true or false, not %s", path,
                             key, atlas_json_type_word(v));
  }
  *out = json_is_true(v);
  return ATLAS_OK;
}

atlas_status atlas_decoder_json_refuse(const char *path, const json_t *root,
                                       const char *key, const char *why) {
  const json_t *v = present(root, key);
  if (v == NULL || json_is_false(v)) return ATLAS_OK;
  char shown[64];
  if (json_is_integer(v)) {
    snprintf(shown, sizeof(shown), "%lld", (long long)json_integer_value(v));
  } else if (json_is_true(v)) {
    snprintf(shown, sizeof(shown), "true");
  } else if (json_is_string(v)) {
    snprintf(shown, sizeof(shown), "\"%.40s\"", json_string_value(v));
  } else {
    snprintf(shown, sizeof(shown), "%s", atlas_json_type_word(v));
  }
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "%s: \"%s\": %s is not supported (%s)", path, key,
                           shown, why);
}

// Keys of architectures that change the math: refused here unless the
// family's descriptor lists the key among those its reader reads.
static const char *const kForeignKeys[] = {
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "no_rope_layers",
    "attention_chunk_size",
    "embedding_multiplier",
    "logits_scaling",
    "residual_multiplier",
    "attention_multiplier",
    "use_qk_norm",
    "qk_layernorm",
    "query_pre_attn_scalar",
    "use_parallel_residual",
};

// Whether the family reads `key` itself (its descriptor's `keys`).
static bool family_reads(const atlas_decoder_family *f, const char *key) {
  for (const char *const *k = f->keys; k != NULL && *k != NULL; ++k) {
    if (strcmp(*k, key) == 0) return true;
  }
  return false;
}

atlas_status atlas_decoder_json_act(const char *path, const json_t *root,
                                    const char *key, bool gelu_ok,
                                    atlas_decoder_act *out) {
  const json_t *act = present(root, key);
  if (act == NULL) return ATLAS_OK;
  const char *name = json_is_string(act) ? json_string_value(act) : "";
  // transformers' ACT2FN maps "swish" to the same SiLU.
  if (strcmp(name, "silu") == 0 || strcmp(name, "swish") == 0) {
    *out = ATLAS_DECODER_ACT_SILU;
    return ATLAS_OK;
  }
  if (gelu_ok && strcmp(name, "gelu_pytorch_tanh") == 0) {
    *out = ATLAS_DECODER_ACT_GELU_TANH;
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_UNIMPLEMENTED,
      "%s: %s %s%s%s is not supported (only \"silu\", "
      "also spelt \"swish\"%s)",
      path, key, json_is_string(act) ? "\"" : "",
      json_is_string(act) ? name : atlas_json_type_word(act),
      json_is_string(act) ? "\"" : "",
      gelu_ok ? ", and \"gelu_pytorch_tanh\"" : "");
}

atlas_status atlas_decoder_refuse_partial_rotary(
    const char *path, const atlas_decoder_config *cfg) {
  if (cfg->rope.partial_rotary_factor == 1.0) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "%s: partial_rotary_factor %g is not supported "
                           "(model_type %s rotates the whole head)",
                           path, cfg->rope.partial_rotary_factor,
                           cfg->family->name);
}

atlas_status atlas_decoder_refuse_longrope(const char *path,
                                           const atlas_decoder_config *cfg) {
  if (cfg->rope.type != ATLAS_ROPE_LONGROPE) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "%s: rope type \"longrope\" is not supported by "
                           "model_type %s (Atlas reads it for phi3 only)",
                           path, cfg->family->name);
}

atlas_status atlas_decoder_window_from(const char *path,
                                       atlas_decoder_config *cfg,
                                       int64_t window, int64_t first) {
  cfg->sliding_window = window;
  memset(cfg->sliding, 0, sizeof(cfg->sliding));
  if (window == 0) return ATLAS_OK;
  if (cfg->num_hidden_layers > ATLAS_DECODER_MAX_PATTERN_LAYERS &&
      first < cfg->num_hidden_layers) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: sliding windows on %lld layers: supported "
                             "on the first %d layers only",
                             path, (long long)cfg->num_hidden_layers,
                             ATLAS_DECODER_MAX_PATTERN_LAYERS);
  }
  for (int64_t l = first < 0 ? 0 : first; l < cfg->num_hidden_layers; ++l) {
    atlas_decoder_set_sliding(cfg, l, true);
  }
  return ATLAS_OK;
}

// The keys every family refuses or reads the same way.
static atlas_status check_unsupported(const char *path, const json_t *root,
                                      const atlas_decoder_family *family) {
  for (size_t i = 0; i < sizeof(kForeignKeys) / sizeof(kForeignKeys[0]); ++i) {
    if (family_reads(family, kForeignKeys[i])) continue;
    ATLAS_RETURN_IF_ERROR(atlas_decoder_json_refuse(
        path, root, kForeignKeys[i], "not part of these architectures"));
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_json_layer_types(const char *path,
                                            const json_t *root,
                                            atlas_decoder_config *cfg,
                                            bool *found) {
  int64_t layers = cfg->num_hidden_layers;
  const json_t *v = present(root, "layer_types");
  *found = v != NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_array(v) || (int64_t)json_array_size(v) != layers) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"layer_types\" must be a list of %lld "
                             "strings (one per layer)",
                             path, (long long)layers);
  }
  for (int64_t i = 0; i < layers; ++i) {
    const json_t *t = json_array_get(v, (size_t)i);
    const char *s = json_is_string(t) ? json_string_value(t) : "";
    bool sliding = strcmp(s, "sliding_attention") == 0;
    if (!sliding && strcmp(s, "full_attention") != 0) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: layer_types[%lld] %s%s%s is not supported "
                               "(only \"full_attention\" and "
                               "\"sliding_attention\")",
                               path, (long long)i,
                               json_is_string(t) ? "\"" : "",
                               json_is_string(t) ? s : atlas_json_type_word(t),
                               json_is_string(t) ? "\"" : "");
    }
    if (sliding && i >= ATLAS_DECODER_MAX_PATTERN_LAYERS) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: layer_types[%lld] is sliding_attention: "
                               "windows are supported on the first %d layers "
                               "only",
                               path, (long long)i,
                               ATLAS_DECODER_MAX_PATTERN_LAYERS);
    }
    if (i < ATLAS_DECODER_MAX_PATTERN_LAYERS)
      atlas_decoder_set_sliding(cfg, i, sliding);
  }
  return ATLAS_OK;
}

static atlas_status parse_root(const char *path, const json_t *root,
                               const atlas_decoder_family *family,
                               atlas_decoder_config *cfg) {
  *cfg = (atlas_decoder_config){0};
  cfg->family = family;
  cfg->head_dim = family->head_dim;
  // max_position_embeddings sets dynamic and YaRN RoPE, not only the limit.
  cfg->max_position_embeddings = family->max_positions;
  cfg->rms_norm_eps = family->rms_norm_eps > 0 ? family->rms_norm_eps : 1e-6;
  cfg->rope_theta = 10000.0;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "vocab_size", true, &cfg->vocab_size));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(path, root, "hidden_size", true,
                                               &cfg->hidden_size));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(path, root, "intermediate_size",
                                               true, &cfg->intermediate_size));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(path, root, "num_hidden_layers",
                                               true, &cfg->num_hidden_layers));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "num_attention_heads", true, &cfg->num_attention_heads));
  // An explicit null means "derive it": num_attention_heads.
  cfg->num_key_value_heads =
      json_object_get(root, "num_key_value_heads") == NULL && family->kv_heads
          ? family->kv_heads
          : cfg->num_attention_heads;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(
      path, root, "num_key_value_heads", false, &cfg->num_key_value_heads));
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_json_dim(path, root, "head_dim", false, &cfg->head_dim));
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_dim(path, root,
                                               "max_position_embeddings", false,
                                               &cfg->max_position_embeddings));
  bool found = false;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_positive(
      path, root, "rms_norm_eps", &found, &cfg->rms_norm_eps));
  ATLAS_RETURN_IF_ERROR(family->read_rope != NULL
                            ? family->read_rope(path, root, cfg)
                            : atlas_rope_config_parse(path, root, &cfg->rope));
  cfg->rope_theta = cfg->rope.theta;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_json_bool(
      path, root, "tie_word_embeddings", &cfg->tie_word_embeddings));
  cfg->embed_scale = 1.0;
  cfg->act = ATLAS_DECODER_ACT_SILU;
  ATLAS_RETURN_IF_ERROR(check_unsupported(path, root, family));
  ATLAS_RETURN_IF_ERROR(family->read(path, root, cfg));
  if (cfg->rope.partial_rotary_factor != 1.0 &&
      cfg->rope.partial_rotary_factor == 0) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: partial_rotary_factor is 0", path);
  }
  // get_dim guarantees these; the check keeps the divisions below visibly safe.
  if (cfg->num_attention_heads <= 0 || cfg->num_key_value_heads <= 0) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: head counts were not validated", path);
  }

  if (cfg->head_dim == 0) {
    if (cfg->hidden_size % cfg->num_attention_heads != 0) {
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "%s: hidden_size %lld is not divisible by num_attention_heads %lld "
          "(and no head_dim is given)",
          path, (long long)cfg->hidden_size,
          (long long)cfg->num_attention_heads);
    }
    cfg->head_dim = cfg->hidden_size / cfg->num_attention_heads;
  }
  if (cfg->num_attention_heads % cfg->num_key_value_heads != 0) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: num_attention_heads %lld is not a multiple of "
        "num_key_value_heads %lld",
        path, (long long)cfg->num_attention_heads,
        (long long)cfg->num_key_value_heads);
  }
  if (cfg->head_dim % 2 != 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: head_dim %lld is odd; RoPE needs an even "
                             "head dimension",
                             path, (long long)cfg->head_dim);
  }
  int64_t half = atlas_rope_rot_dim(&cfg->rope, cfg->head_dim) / 2;
  if (cfg->local_rope &&
      atlas_rope_rot_dim(&cfg->rope_local, cfg->head_dim) != 2 * half) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: the local and global RoPE rotate different "
                             "parts of the head (partial_rotary_factor)",
                             path);
  }
  if (cfg->rope.type == ATLAS_ROPE_LONGROPE && cfg->rope.factor_count != half) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: longrope's short_factor and long_factor "
                             "hold %lld factors; the rotated head (head_dim "
                             "%lld x partial_rotary_factor %g) needs %lld",
                             path, (long long)cfg->rope.factor_count,
                             (long long)cfg->head_dim,
                             cfg->rope.partial_rotary_factor, (long long)half);
  }
  return ATLAS_OK;
}

// The projections a quantized checkpoint stores in its format.
static const char *const kQuantModules[] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
    "mlp.down_proj"};

// quantization_config (formats Atlas does not read: refused, naming the
// field). What the decoder runs quantized: every projection of every layer
// in the one format, q/k/v and gate/up as separate tensors; a fused
// checkpoint or a projection kept in its stored type is refused by name.
static atlas_status read_quantization(const char *text, size_t len,
                                      const char *path,
                                      atlas_decoder_config *cfg) {
  atlas_quant_config q;
  ATLAS_RETURN_IF_ERROR(atlas_quant_config_parse(text, len, path, &q));
  atlas_status status = ATLAS_OK;
  char what[128];
  atlas_quant_config_describe(&q, what, sizeof(what));
  if (q.method != ATLAS_QUANT_NONE && cfg->num_experts > 0) {
    status = atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "%s: quantization_config (%s) with a mixture of experts is not "
        "supported (quantized experts are not implemented)",
        path, what);
  } else if (q.method != ATLAS_QUANT_NONE &&
             (cfg->fused_qkv || cfg->fused_gate_up)) {
    status = atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "%s: quantization_config (%s) with fused %s projections is not "
        "supported: quantized q/k/v and gate/up run as separate matrices",
        path, what, cfg->fused_qkv ? "qkv_proj" : "gate_up_proj");
  }
  for (int64_t l = 0;
       status == ATLAS_OK && q.keep_count > 0 && l < cfg->num_hidden_layers;
       ++l) {
    for (size_t i = 0; status == ATLAS_OK &&
                       i < sizeof(kQuantModules) / sizeof(kQuantModules[0]);
         ++i) {
      char module[128];
      snprintf(module, sizeof(module), "model.layers.%lld.%s", (long long)l,
               kQuantModules[i]);
      bool kept = false;
      status = atlas_quant_module_kept(&q, module, &kept);
      if (status == ATLAS_OK && kept) {
        status = atlas_status_make(
            ATLAS_STATUS_UNIMPLEMENTED,
            "%s: quantization_config (%s) keeps %s in its stored type; a "
            "checkpoint mixing quantized and plain projections is not "
            "supported",
            path, what, module);
      }
    }
  }
  // The modules kept are all outside the projections (lm_head, ...), which
  // are read in their stored type anyway.
  atlas_quant_config plain = q;
  plain.keep = NULL;
  plain.keep_count = 0;
  atlas_quant_config_free(&q);
  if (status == ATLAS_OK) cfg->quant = plain;
  return status;
}

atlas_status atlas_decoder_config_parse(const atlas_decoder_family *family,
                                        const char *text, size_t len,
                                        const char *path_for_errors,
                                        atlas_decoder_config *out_config) {
  const char *path = path_for_errors != NULL ? path_for_errors : "<config>";
  if (text == NULL && len != 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: config text is NULL", path);
  }
  json_error_t error;
  json_t *root =
      json_loadb(text != NULL ? text : "", len, JSON_REJECT_DUPLICATES, &error);
  if (root == NULL) {
    if (atlas_json_error_is_oom(&error)) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory while parsing", path);
    }
    char qe[ATLAS_QUOTE_BYTES];
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: not valid JSON: %s at line %d, column %d",
                             path,
                             atlas_quote_json_error(error.text, qe, sizeof(qe)),
                             error.line, error.column);
  }
  atlas_status status = ATLAS_OK;
  atlas_decoder_config cfg = {0};
  if (!json_is_object(root)) {
    status = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: config is %s, not a JSON object", path,
                               atlas_json_type_word(root));
  } else {
    status = parse_root(path, root, family, &cfg);
  }
  json_decref(root);
  if (status == ATLAS_OK) status = read_quantization(text, len, path, &cfg);
  if (status == ATLAS_OK) *out_config = cfg;
  return status;
}

atlas_status atlas_decoder_config_load(const atlas_decoder_family *family,
                                       const char *path,
                                       atlas_decoder_config *out_config) {
  // Regular files only (a FIFO would block, a directory or device would
  // report nonsense sizes), read with pread.
  char *text = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "config.json", (uint64_t)MAX_CONFIG_BYTES, &text, &len));
  atlas_status status =
      atlas_decoder_config_parse(family, text, len, path, out_config);
  free(text);
  return status;
}
