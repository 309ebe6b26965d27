// Llama config.json parsing and validation.
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

// config.json is a few kilobytes; refuse anything absurd before reading it.
#define MAX_CONFIG_BYTES ((long)16 * 1024 * 1024)

// A present, non-null key (HF writes null for "use the default").
static const json_t *present(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  return v == NULL || json_is_null(v) ? NULL : v;
}

// Reads a positive integer key; `required` decides whether absence is an
// error (otherwise *out is left alone).
static atlas_status get_dim(const char *path, const json_t *root,
                            const char *key, bool required, int64_t *out) {
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

// Reads an optional positive finite number (integer or real) under `obj`.
static atlas_status get_positive(const char *path, const json_t *obj,
                                 const char *key, bool *found, double *out) {
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

static atlas_status get_bool(const char *path, const json_t *root,
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

// A present key must be null, false or the given number (per `what`):
// anything else asks for math this family does not do.
static atlas_status refuse_if_set(const char *path, const json_t *root,
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

static const char *family_name(atlas_decoder_family f) {
  switch (f) {
    case ATLAS_DECODER_FAMILY_QWEN2:
      return "qwen2";
    case ATLAS_DECODER_FAMILY_QWEN3:
      return "qwen3";
    case ATLAS_DECODER_FAMILY_MISTRAL:
      return "mistral";
    default:
      return "llama";
  }
}

// Keys of other architectures that change the math; none of these families
// implements them, so their presence (non-null, non-false) is refused.
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

static atlas_status check_unsupported(const char *path, const json_t *root,
                                      atlas_decoder_family family) {
  // transformers' ACT2FN maps "swish" to the same SiLU.
  const json_t *act = present(root, "hidden_act");
  if (act != NULL && (!json_is_string(act) ||
                      (strcmp(json_string_value(act), "silu") != 0 &&
                       strcmp(json_string_value(act), "swish") != 0))) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: hidden_act %s%s%s is not supported (only "
                             "\"silu\", also spelt \"swish\")",
                             path, json_is_string(act) ? "\"" : "",
                             json_is_string(act) ? json_string_value(act)
                                                 : atlas_json_type_word(act),
                             json_is_string(act) ? "\"" : "");
  }
  // transformers reads a checkpoint with quantization_config as quantized
  // (packed weights, scales, quantized products); Atlas would run whatever
  // float tensors it finds as plain weights.
  const json_t *quant = present(root, "quantization_config");
  if (quant != NULL) {
    const json_t *method =
        json_is_object(quant) ? json_object_get(quant, "quant_method") : NULL;
    char qm[ATLAS_QUOTE_BYTES];
    bool named = json_is_string(method);
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "%s: \"quantization_config\" (quant_method %s%s%s) is not "
        "supported: Atlas runs unquantized F32, F16 and BF16 checkpoints only",
        path, named ? "\"" : "",
        named ? atlas_quote(json_string_value(method), qm, sizeof(qm))
              : atlas_json_type_word(method),
        named ? "\"" : "");
  }
  for (size_t i = 0; i < sizeof(kForeignKeys) / sizeof(kForeignKeys[0]); ++i) {
    ATLAS_RETURN_IF_ERROR(refuse_if_set(path, root, kForeignKeys[i],
                                        "not part of these architectures"));
  }
  char why[96];
  snprintf(why, sizeof(why), "model_type %s has no such feature",
           family_name(family));
  if (family != ATLAS_DECODER_FAMILY_LLAMA) {
    ATLAS_RETURN_IF_ERROR(refuse_if_set(path, root, "mlp_bias", why));
  }
  if (family == ATLAS_DECODER_FAMILY_QWEN2 ||
      family == ATLAS_DECODER_FAMILY_MISTRAL) {
    ATLAS_RETURN_IF_ERROR(refuse_if_set(path, root, "attention_bias", why));
  }
  if (family == ATLAS_DECODER_FAMILY_LLAMA) {
    // sliding_window itself is read (parse_window); use_sliding_window is
    // refused as before (not checked against transformers).
    ATLAS_RETURN_IF_ERROR(refuse_if_set(path, root, "use_sliding_window", why));
  }
  return ATLAS_OK;
}

// layer_types, when given, must be full layers then sliding layers (the
// only pattern these families produce); returns the first sliding layer.
static atlas_status parse_layer_types(const char *path, const json_t *root,
                                      int64_t layers, int64_t *first_sliding,
                                      bool *found) {
  const json_t *v = present(root, "layer_types");
  *found = v != NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_array(v) || (int64_t)json_array_size(v) != layers) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"layer_types\" must be a list of %lld "
                             "strings (one per layer)",
                             path, (long long)layers);
  }
  int64_t first = layers;
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
    if (sliding && first == layers) first = i;
    if (!sliding && first != layers) {
      return atlas_status_make(
          ATLAS_STATUS_UNIMPLEMENTED,
          "%s: layer_types: full_attention layer %lld "
          "after sliding_attention layer %lld is not "
          "supported (only full layers, then sliding ones)",
          path, (long long)i, (long long)first);
    }
  }
  *first_sliding = first;
  return ATLAS_OK;
}

// The window each family reads, in transformers' terms:
//   mistral: sliding_window (default 4096; null: none) on every layer;
//   qwen2/qwen3: sliding_window only when use_sliding_window, on layers
//     >= max_window_layers (or as layer_types says).
static atlas_status parse_window(const char *path, const json_t *root,
                                 atlas_decoder_config *cfg) {
  cfg->sliding_window = 0;
  cfg->window_first_layer = 0;
  if (cfg->family == ATLAS_DECODER_FAMILY_LLAMA) {
    bool found = false;
    int64_t first = 0;
    ATLAS_RETURN_IF_ERROR(
        parse_layer_types(path, root, cfg->num_hidden_layers, &first, &found));
    if (found && first < cfg->num_hidden_layers) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: layer_types asks for sliding_attention, "
                               "which model_type llama does not have",
                               path);
    }
    // LlamaAttention never windows: one forward attends to every position.
    // Only generate's cache reads sliding_window (it keeps the last
    // sliding_window - 1 keys), so past the window transformers' decode
    // steps see fewer keys than its prompt did (checked on the H200,
    // transformers 5.17). Atlas attends to every position and holds the
    // context to the window, where the two agree.
    ATLAS_RETURN_IF_ERROR(
        get_dim(path, root, "sliding_window", false, &cfg->context_window));
    return ATLAS_OK;
  }
  // 4096 is MistralConfig's and Qwen2Config's default when the key is
  // absent; an explicit null means no window.
  int64_t window = 4096;
  const json_t *w = json_object_get(root, "sliding_window");
  if (w != NULL && json_is_null(w)) window = 0;
  bool use = cfg->family == ATLAS_DECODER_FAMILY_MISTRAL;
  if (cfg->family != ATLAS_DECODER_FAMILY_MISTRAL) {
    ATLAS_RETURN_IF_ERROR(get_bool(path, root, "use_sliding_window", &use));
  }
  if (present(root, "sliding_window") != NULL) {
    ATLAS_RETURN_IF_ERROR(
        get_dim(path, root, "sliding_window", false, &window));
  }
  if (!use || window == 0) return ATLAS_OK;
  int64_t first = 0;
  if (cfg->family != ATLAS_DECODER_FAMILY_MISTRAL) {
    first = 28;  // Qwen2Config's default max_window_layers
    ATLAS_RETURN_IF_ERROR(
        get_dim(path, root, "max_window_layers", false, &first));
  }
  bool found = false;
  int64_t listed_first = 0;
  ATLAS_RETURN_IF_ERROR(parse_layer_types(path, root, cfg->num_hidden_layers,
                                          &listed_first, &found));
  if (found && cfg->family == ATLAS_DECODER_FAMILY_MISTRAL &&
      listed_first != 0) {
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
  if (found) first = listed_first;  // transformers prefers the explicit list
  cfg->sliding_window = window;
  cfg->window_first_layer = first;
  return ATLAS_OK;
}

static atlas_status parse_features(const char *path, const json_t *root,
                                   atlas_decoder_config *cfg) {
  bool attention_bias = false;
  switch (cfg->family) {
    case ATLAS_DECODER_FAMILY_LLAMA:
      ATLAS_RETURN_IF_ERROR(
          get_bool(path, root, "attention_bias", &attention_bias));
      ATLAS_RETURN_IF_ERROR(get_bool(path, root, "mlp_bias", &cfg->mlp_bias));
      cfg->qkv_bias = cfg->o_bias = attention_bias;
      break;
    case ATLAS_DECODER_FAMILY_QWEN2:
      cfg->qkv_bias = true;  // Qwen2Attention: q/k/v with bias, o without
      break;
    case ATLAS_DECODER_FAMILY_QWEN3:
      ATLAS_RETURN_IF_ERROR(
          get_bool(path, root, "attention_bias", &attention_bias));
      cfg->qkv_bias = cfg->o_bias = attention_bias;
      cfg->qk_norm = true;
      break;
    case ATLAS_DECODER_FAMILY_MISTRAL:
      break;
  }
  return parse_window(path, root, cfg);
}

// What each family's config class defaults an absent key to (an explicit
// null means "derive it": num_attention_heads for the KV heads).
static int64_t default_max_positions(atlas_decoder_family f) {
  switch (f) {
    case ATLAS_DECODER_FAMILY_QWEN2:
    case ATLAS_DECODER_FAMILY_QWEN3:
      return 32768;
    case ATLAS_DECODER_FAMILY_MISTRAL:
      return 131072;  // MistralConfig: 4096 * 32
    default:
      return 2048;
  }
}

static int64_t default_kv_heads(atlas_decoder_family f, const json_t *root,
                                int64_t heads) {
  if (json_object_get(root, "num_key_value_heads") != NULL) return heads;
  switch (f) {
    case ATLAS_DECODER_FAMILY_QWEN2:
    case ATLAS_DECODER_FAMILY_QWEN3:
      return 32;
    case ATLAS_DECODER_FAMILY_MISTRAL:
      return 8;
    default:
      return heads;
  }
}

static atlas_status parse_root(const char *path, const json_t *root,
                               atlas_decoder_family family,
                               atlas_decoder_config *cfg) {
  *cfg = (atlas_decoder_config){0};
  cfg->family = family;
  // Qwen3Config's head_dim default is 128, not hidden_size / heads.
  if (family == ATLAS_DECODER_FAMILY_QWEN3) cfg->head_dim = 128;
  // max_position_embeddings sets dynamic and YaRN RoPE, not only the limit.
  cfg->max_position_embeddings = default_max_positions(family);
  cfg->rms_norm_eps = 1e-6;
  cfg->rope_theta = 10000.0;
  ATLAS_RETURN_IF_ERROR(
      get_dim(path, root, "vocab_size", true, &cfg->vocab_size));
  ATLAS_RETURN_IF_ERROR(
      get_dim(path, root, "hidden_size", true, &cfg->hidden_size));
  ATLAS_RETURN_IF_ERROR(
      get_dim(path, root, "intermediate_size", true, &cfg->intermediate_size));
  ATLAS_RETURN_IF_ERROR(
      get_dim(path, root, "num_hidden_layers", true, &cfg->num_hidden_layers));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "num_attention_heads", true,
                                &cfg->num_attention_heads));
  cfg->num_key_value_heads =
      default_kv_heads(family, root, cfg->num_attention_heads);
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "num_key_value_heads", false,
                                &cfg->num_key_value_heads));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "head_dim", false, &cfg->head_dim));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "max_position_embeddings", false,
                                &cfg->max_position_embeddings));
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      get_positive(path, root, "rms_norm_eps", &found, &cfg->rms_norm_eps));
  ATLAS_RETURN_IF_ERROR(atlas_rope_config_parse(path, root, &cfg->rope));
  cfg->rope_theta = cfg->rope.theta;
  if (cfg->rope.partial_rotary_factor != 1.0) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: partial_rotary_factor %g is not supported "
                             "(model_type %s rotates the whole head)",
                             path, cfg->rope.partial_rotary_factor,
                             family_name(family));
  }
  ATLAS_RETURN_IF_ERROR(
      get_bool(path, root, "tie_word_embeddings", &cfg->tie_word_embeddings));
  ATLAS_RETURN_IF_ERROR(check_unsupported(path, root, family));
  ATLAS_RETURN_IF_ERROR(parse_features(path, root, cfg));
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
  return ATLAS_OK;
}

atlas_status atlas_decoder_config_parse(const char *text, size_t len,
                                        const char *path_for_errors,
                                        atlas_decoder_config *out_config) {
  return atlas_decoder_config_parse_family(ATLAS_DECODER_FAMILY_LLAMA, text,
                                           len, path_for_errors, out_config);
}

atlas_status atlas_decoder_config_parse_family(
    atlas_decoder_family family, const char *text, size_t len,
    const char *path_for_errors, atlas_decoder_config *out_config) {
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
  if (status == ATLAS_OK) *out_config = cfg;
  return status;
}

atlas_status atlas_decoder_config_load(const char *path,
                                       atlas_decoder_config *out_config) {
  return atlas_decoder_config_load_family(ATLAS_DECODER_FAMILY_LLAMA, path,
                                          out_config);
}

atlas_status atlas_decoder_config_load_family(
    atlas_decoder_family family, const char *path,
    atlas_decoder_config *out_config) {
  // Regular files only (a FIFO would block, a directory or device would
  // report nonsense sizes), read with pread.
  char *text = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "config.json", (uint64_t)MAX_CONFIG_BYTES, &text, &len));
  atlas_status status =
      atlas_decoder_config_parse_family(family, text, len, path, out_config);
  free(text);
  return status;
}
