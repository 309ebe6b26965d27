// Llama config.json parsing and validation.
#include "atlas/runtime/arch/llama/llama_config.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>

#include "atlas/runtime/formats/file_read.h"
#include "atlas/runtime/formats/json_words.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                             "%s: \"%s\" must be an integer, not %s", path,
                             key, atlas_json_type_word(v));
  }
  json_int_t i = json_integer_value(v);
  if (i <= 0 || i > ATLAS_LLAMA_MAX_DIM) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"%s\" is %lld; it must be between 1 and "
                             "%lld",
                             path, key, (long long)i,
                             (long long)ATLAS_LLAMA_MAX_DIM);
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

// Rope variants other than the plain one change the frequencies; running
// them as plain RoPE would give wrong answers silently.
static atlas_status check_rope_type(const char *path, const json_t *obj,
                                    const char *where) {
  const json_t *type = present(obj, "rope_type");
  if (type == NULL) type = present(obj, "type");
  if (type == NULL) return ATLAS_OK;
  if (!json_is_string(type)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s rope_type must be a string, not %s", path,
                             where, atlas_json_type_word(type));
  }
  if (strcmp(json_string_value(type), "default") != 0) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: %s rope_type \"%s\" is not supported (only "
                             "\"default\" RoPE is implemented)",
                             path, where, json_string_value(type));
  }
  return ATLAS_OK;
}

static atlas_status parse_rope(const char *path, const json_t *root,
                               atlas_llama_config *cfg) {
  bool top_found = false;
  double top = 0;
  ATLAS_RETURN_IF_ERROR(
      get_positive(path, root, "rope_theta", &top_found, &top));
  const json_t *params = present(root, "rope_parameters");
  bool nested_found = false;
  double nested = 0;
  if (params != NULL) {
    if (!json_is_object(params)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: \"rope_parameters\" must be an object, "
                               "not %s",
                               path, atlas_json_type_word(params));
    }
    ATLAS_RETURN_IF_ERROR(check_rope_type(path, params, "rope_parameters"));
    atlas_status s =
        get_positive(path, params, "rope_theta", &nested_found, &nested);
    if (s != ATLAS_OK) return atlas_status_annotate(s, "rope_parameters");
  }
  const json_t *scaling = present(root, "rope_scaling");
  if (scaling != NULL) {
    if (!json_is_object(scaling)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: \"rope_scaling\" must be an object or "
                               "null, not %s",
                               path, atlas_json_type_word(scaling));
    }
    ATLAS_RETURN_IF_ERROR(check_rope_type(path, scaling, "rope_scaling"));
  }
  if (top_found && nested_found && top != nested) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: rope_theta %g contradicts "
                             "rope_parameters.rope_theta %g",
                             path, top, nested);
  }
  if (top_found) cfg->rope_theta = top;
  if (nested_found) cfg->rope_theta = nested;
  return ATLAS_OK;
}

static atlas_status check_unsupported(const char *path, const json_t *root) {
  const json_t *act = present(root, "hidden_act");
  if (act != NULL && (!json_is_string(act) ||
                      strcmp(json_string_value(act), "silu") != 0)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: hidden_act %s%s%s is not supported (only "
                             "\"silu\")",
                             path, json_is_string(act) ? "\"" : "",
                             json_is_string(act) ? json_string_value(act)
                                                 : atlas_json_type_word(act),
                             json_is_string(act) ? "\"" : "");
  }
  static const char *const kBiasKeys[] = {"attention_bias", "mlp_bias"};
  for (size_t i = 0; i < 2; ++i) {
    bool on = false;
    ATLAS_RETURN_IF_ERROR(get_bool(path, root, kBiasKeys[i], &on));
    if (on) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: \"%s\": true is not supported (the runtime "
                               "has no bias terms)",
                               path, kBiasKeys[i]);
    }
  }
  return ATLAS_OK;
}

static atlas_status parse_root(const char *path, const json_t *root,
                               atlas_llama_config *cfg) {
  *cfg = (atlas_llama_config){0};
  cfg->max_position_embeddings = 2048;
  cfg->rms_norm_eps = 1e-6;
  cfg->rope_theta = 10000.0;
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "vocab_size", true,
                                &cfg->vocab_size));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "hidden_size", true,
                                &cfg->hidden_size));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "intermediate_size", true,
                                &cfg->intermediate_size));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "num_hidden_layers", true,
                                &cfg->num_hidden_layers));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "num_attention_heads", true,
                                &cfg->num_attention_heads));
  cfg->num_key_value_heads = cfg->num_attention_heads;
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "num_key_value_heads", false,
                                &cfg->num_key_value_heads));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "head_dim", false,
                                &cfg->head_dim));
  ATLAS_RETURN_IF_ERROR(get_dim(path, root, "max_position_embeddings", false,
                                &cfg->max_position_embeddings));
  bool found = false;
  ATLAS_RETURN_IF_ERROR(
      get_positive(path, root, "rms_norm_eps", &found, &cfg->rms_norm_eps));
  ATLAS_RETURN_IF_ERROR(parse_rope(path, root, cfg));
  ATLAS_RETURN_IF_ERROR(get_bool(path, root, "tie_word_embeddings",
                                 &cfg->tie_word_embeddings));
  ATLAS_RETURN_IF_ERROR(check_unsupported(path, root));
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

atlas_status atlas_llama_config_parse(const char *text, size_t len,
                                      const char *path_for_errors,
                                      atlas_llama_config *out_config) {
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
                             path, atlas_quote(error.text, qe, sizeof(qe)),
                             error.line, error.column);
  }
  atlas_status status = ATLAS_OK;
  atlas_llama_config cfg = {0};
  if (!json_is_object(root)) {
    status = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: config is %s, not a JSON object", path,
                               atlas_json_type_word(root));
  } else {
    status = parse_root(path, root, &cfg);
  }
  json_decref(root);
  if (status == ATLAS_OK) *out_config = cfg;
  return status;
}

atlas_status atlas_llama_config_load(const char *path,
                                     atlas_llama_config *out_config) {
  // Regular files only (a FIFO would block, a directory or device would
  // report nonsense sizes), read with pread.
  char *text = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(atlas_file_read_small(
      path, "config.json", (uint64_t)MAX_CONFIG_BYTES, &text, &len));
  atlas_status status = atlas_llama_config_parse(text, len, path, out_config);
  free(text);
  return status;
}
