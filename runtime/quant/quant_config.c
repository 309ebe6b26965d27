// quantization_config of config.json (quant_config.h).
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/quant/quant_config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "atlas/runtime/formats/json_words.h"

#define QC "quantization_config"

// A present, non-null key.
static const json_t *present(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  return v == NULL || json_is_null(v) ? NULL : v;
}

static atlas_status refuse(const char *path, const char *method,
                           const char *field, const char *why) {
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "%s: " QC
      " (quant_method \"%s\"): %s %s; Atlas refuses the checkpoint "
      "rather than run quantized weights as if they were not",
      path, method, field, why);
}

// An optional string: NULL where absent or null; refused when not a string.
static atlas_status get_string(const char *path, const char *method,
                               const json_t *obj, const char *where,
                               const char *key, const char **out) {
  const json_t *v = present(obj, key);
  *out = NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_string(v)) {
    char field[160];
    snprintf(field, sizeof(field), "%s.%s", where, key);
    char why[96];
    snprintf(why, sizeof(why), "is %s, not a string", atlas_json_type_word(v));
    return refuse(path, method, field, why);
  }
  *out = json_string_value(v);
  return ATLAS_OK;
}

static atlas_status get_int(const char *path, const char *method,
                            const json_t *obj, const char *where,
                            const char *key, bool *found, long long *out) {
  const json_t *v = present(obj, key);
  *found = v != NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_integer(v)) {
    char field[160], why[96];
    snprintf(field, sizeof(field), "%s.%s", where, key);
    snprintf(why, sizeof(why), "is %s, not an integer",
             atlas_json_type_word(v));
    return refuse(path, method, field, why);
  }
  *out = (long long)json_integer_value(v);
  return ATLAS_OK;
}

static atlas_status get_bool(const char *path, const char *method,
                             const json_t *obj, const char *where,
                             const char *key, bool dflt, bool *out) {
  const json_t *v = present(obj, key);
  *out = dflt;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_boolean(v)) {
    char field[160], why[96];
    snprintf(field, sizeof(field), "%s.%s", where, key);
    snprintf(why, sizeof(why), "is %s, not true or false",
             atlas_json_type_word(v));
    return refuse(path, method, field, why);
  }
  *out = json_is_true(v);
  return ATLAS_OK;
}

// Refuses `key` where it holds something other than null, false, {} or [].
static atlas_status refuse_if_set(const char *path, const char *method,
                                  const json_t *obj, const char *where,
                                  const char *key, const char *why) {
  const json_t *v = present(obj, key);
  if (v == NULL || json_is_false(v) ||
      (json_is_object(v) && json_object_size(v) == 0) ||
      (json_is_array(v) && json_array_size(v) == 0)) {
    return ATLAS_OK;
  }
  char field[160];
  snprintf(field, sizeof(field), "%s.%s", where, key);
  return refuse(path, method, field, why);
}

// Appends the strings of array `key` (absent or null: nothing) to keep.
static atlas_status add_keep(const char *path, const char *method,
                             const json_t *obj, const char *key,
                             atlas_quant_config *out) {
  const json_t *v = present(obj, key);
  if (v == NULL) return ATLAS_OK;
  char field[96];
  snprintf(field, sizeof(field), QC ".%s", key);
  if (!json_is_array(v)) {
    return refuse(path, method, field, "is not a list of module names");
  }
  size_t n = json_array_size(v);
  char **grown = realloc(out->keep, (out->keep_count + n + 1) * sizeof(char *));
  if (grown == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory reading %s", path, field);
  }
  out->keep = grown;
  for (size_t i = 0; i < n; ++i) {
    const json_t *e = json_array_get(v, i);
    if (!json_is_string(e)) {
      return refuse(path, method, field, "holds something not a string");
    }
    char *copy = strdup(json_string_value(e));
    if (copy == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory reading %s", path,
                               field);
    }
    out->keep[out->keep_count++] = copy;
  }
  return ATLAS_OK;
}

// A bit width Atlas reads, or the refusal naming `field`.
static atlas_status check_bits(const char *path, const char *method,
                               const char *field, long long bits,
                               bool eight_ok) {
  if (bits == 4 || (bits == 8 && eight_ok)) return ATLAS_OK;
  char why[96];
  snprintf(why, sizeof(why), "is %lld: Atlas reads %s", bits,
           eight_ok ? "4 and 8 bits" : "4 bits only");
  return refuse(path, method, field, why);
}

static atlas_status check_group(const char *path, const char *method,
                                const char *field, long long group) {
  if (group > 0 && group % 8 == 0 && group <= (1 << 20)) return ATLAS_OK;
  char why[96];
  snprintf(why, sizeof(why),
           "is %lld: a group is a positive multiple of 8 columns", group);
  return refuse(path, method, field, why);
}

static atlas_status parse_fp8(const char *path, const json_t *qc,
                              atlas_quant_config *out) {
  const char *m = "fp8", *fmt = NULL, *act = NULL;
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "fmt", &fmt));
  if (fmt != NULL && strcmp(fmt, "e4m3") != 0) {
    return refuse(path, m, QC ".fmt",
                  "is not \"e4m3\": Atlas reads F8_E4M3 weights only");
  }
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "activation_scheme", &act));
  if (act != NULL && strcmp(act, "dynamic") != 0) {
    return refuse(path, m, QC ".activation_scheme",
                  "is not \"dynamic\": static activation scales are not read");
  }
  const json_t *block = present(qc, "weight_block_size");
  if (block == NULL) {
    return refuse(path, m, QC ".weight_block_size",
                  "is missing: Atlas reads the block-scaled fp8 format");
  }
  if (!json_is_array(block) || json_array_size(block) != 2 ||
      !json_is_integer(json_array_get(block, 0)) ||
      !json_is_integer(json_array_get(block, 1)) ||
      json_integer_value(json_array_get(block, 0)) <= 0 ||
      json_integer_value(json_array_get(block, 1)) <= 0 ||
      json_integer_value(json_array_get(block, 0)) > (1 << 20) ||
      json_integer_value(json_array_get(block, 1)) > (1 << 20)) {
    return refuse(path, m, QC ".weight_block_size",
                  "is not two positive integers [rows, columns]");
  }
  out->layout = ATLAS_QUANT_LAYOUT_FP8;
  out->bits = 8;
  out->block_n = (uint32_t)json_integer_value(json_array_get(block, 0));
  out->group_k = (uint32_t)json_integer_value(json_array_get(block, 1));
  out->dynamic_fp8_activations = true;
  ATLAS_RETURN_IF_ERROR(add_keep(path, m, qc, "modules_to_not_convert", out));
  return add_keep(path, m, qc, "ignored_layers", out);
}

static atlas_status parse_awq(const char *path, const json_t *qc,
                              atlas_quant_config *out) {
  const char *m = "awq", *version = NULL, *backend = NULL;
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "version", &version));
  if (version != NULL && strcasecmp(version, "gemm") != 0) {
    return refuse(path, m, QC ".version",
                  "is not \"gemm\": Atlas reads AWQ's gemm packing only");
  }
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "backend", &backend));
  if (backend != NULL && strcmp(backend, "autoawq") != 0) {
    return refuse(path, m, QC ".backend",
                  "is not \"autoawq\": other AWQ packings are not read");
  }
  bool found = false, zero_point = true;
  long long bits = 4, group = 0;
  const char *bits_key = present(qc, "bits") ? "bits" : "w_bit";
  ATLAS_RETURN_IF_ERROR(get_int(path, m, qc, QC, bits_key, &found, &bits));
  char field[64];
  snprintf(field, sizeof(field), QC ".%s", bits_key);
  ATLAS_RETURN_IF_ERROR(check_bits(path, m, field, bits, false));
  const char *group_key =
      present(qc, "group_size") ? "group_size" : "q_group_size";
  ATLAS_RETURN_IF_ERROR(get_int(path, m, qc, QC, group_key, &found, &group));
  snprintf(field, sizeof(field), QC ".%s", group_key);
  if (!found) return refuse(path, m, field, "is missing");
  ATLAS_RETURN_IF_ERROR(check_group(path, m, field, group));
  ATLAS_RETURN_IF_ERROR(
      get_bool(path, m, qc, QC, "zero_point", true, &zero_point));
  if (!zero_point) {
    return refuse(path, m, QC ".zero_point",
                  "is false: Atlas reads AWQ with zero points only");
  }
  out->layout = ATLAS_QUANT_LAYOUT_AWQ;
  out->bits = 4;
  out->group_k = (uint32_t)group;
  out->block_n = 1;
  out->zeros = true;
  return add_keep(path, m, qc, "modules_to_not_convert", out);
}

static atlas_status parse_gptq(const char *path, const json_t *qc,
                               atlas_quant_config *out) {
  const char *m = "gptq", *ck = NULL, *format = NULL;
  bool found = false, desc_act = false, sym = true;
  long long bits = 0, group = -1;
  ATLAS_RETURN_IF_ERROR(get_int(path, m, qc, QC, "bits", &found, &bits));
  if (!found) return refuse(path, m, QC ".bits", "is missing");
  ATLAS_RETURN_IF_ERROR(check_bits(path, m, QC ".bits", bits, true));
  ATLAS_RETURN_IF_ERROR(get_int(path, m, qc, QC, "group_size", &found, &group));
  if (group != -1) {
    ATLAS_RETURN_IF_ERROR(check_group(path, m, QC ".group_size", group));
  }
  ATLAS_RETURN_IF_ERROR(
      get_bool(path, m, qc, QC, "desc_act", false, &desc_act));
  ATLAS_RETURN_IF_ERROR(get_bool(path, m, qc, QC, "sym", true, &sym));
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "checkpoint_format", &ck));
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "format", &format));
  const char *which = ck != NULL ? ck : format;
  const char *which_key = ck != NULL ? QC ".checkpoint_format" : QC ".format";
  if (which != NULL && strcmp(which, "gptq") != 0 &&
      strcmp(which, "gptq_v2") != 0) {
    return refuse(path, m, which_key,
                  "is not \"gptq\" or \"gptq_v2\": other GPTQ packings "
                  "(marlin, bitblas, ...) are not read");
  }
  ATLAS_RETURN_IF_ERROR(refuse_if_set(path, m, qc, QC, "static_groups",
                                      "is true: static groups are not read"));
  out->layout = ATLAS_QUANT_LAYOUT_GPTQ;
  out->bits = (uint32_t)bits;
  out->group_k = group == -1 ? 0 : (uint32_t)group;
  out->block_n = 1;
  // Symmetric or not, GPTQ stores its zero points (sym: all 2^(bits-1)).
  out->zeros = true;
  out->zero_offset = which != NULL && strcmp(which, "gptq_v2") == 0 ? 0 : 1;
  out->g_idx = desc_act;
  (void)sym;  // read for its type; the stored zero points say the rest
  return add_keep(path, m, qc, "modules_to_not_convert", out);
}

// compressed-tensors' weights scheme of its one config group.
static atlas_status parse_ct_weights(const char *path, const json_t *w,
                                     const char *format,
                                     atlas_quant_config *out) {
  const char *m = "compressed-tensors", *type = NULL, *strategy = NULL;
  const char *where = QC ".config_groups.<group>.weights";
  bool found = false, sym = true, dynamic = false;
  long long bits = 0, group = 0;
  ATLAS_RETURN_IF_ERROR(get_string(path, m, w, where, "type", &type));
  ATLAS_RETURN_IF_ERROR(get_int(path, m, w, where, "num_bits", &found, &bits));
  ATLAS_RETURN_IF_ERROR(get_string(path, m, w, where, "strategy", &strategy));
  ATLAS_RETURN_IF_ERROR(get_bool(path, m, w, where, "symmetric", true, &sym));
  ATLAS_RETURN_IF_ERROR(
      get_bool(path, m, w, where, "dynamic", false, &dynamic));
  if (type == NULL || strategy == NULL || !found) {
    return refuse(path, m, where, "lacks type, num_bits or strategy");
  }
  if (dynamic) {
    return refuse(path, m, QC ".config_groups.<group>.weights.dynamic",
                  "is true: weights quantized at run time are not read");
  }
  const char *fmt_field = QC ".format (or the group's format)";
  if (strcmp(type, "float") == 0) {
    if (bits != 8) {
      return refuse(path, m, QC ".config_groups.<group>.weights.num_bits",
                    "is not 8: Atlas reads float weights as F8_E4M3 only");
    }
    if (strcmp(format, "float-quantized") != 0) {
      return refuse(path, m, fmt_field,
                    "is not \"float-quantized\" for float weights");
    }
    out->layout = ATLAS_QUANT_LAYOUT_FP8;
    out->bits = 8;
    if (strcmp(strategy, "tensor") == 0) {
      out->block_n = 0, out->group_k = 0;
    } else if (strcmp(strategy, "channel") == 0) {
      out->block_n = 1, out->group_k = 0;
    } else if (strcmp(strategy, "block") == 0) {
      const json_t *b = present(w, "block_structure");
      if (!json_is_array(b) || json_array_size(b) != 2 ||
          json_integer_value(json_array_get(b, 0)) <= 0 ||
          json_integer_value(json_array_get(b, 1)) <= 0 ||
          json_integer_value(json_array_get(b, 0)) > (1 << 20) ||
          json_integer_value(json_array_get(b, 1)) > (1 << 20)) {
        return refuse(path, m,
                      QC ".config_groups.<group>.weights.block_structure",
                      "is not two positive integers [rows, columns]");
      }
      out->block_n = (uint32_t)json_integer_value(json_array_get(b, 0));
      out->group_k = (uint32_t)json_integer_value(json_array_get(b, 1));
    } else {
      return refuse(path, m, QC ".config_groups.<group>.weights.strategy",
                    "is not tensor, channel or block for FP8 weights");
    }
    if (!sym) {
      return refuse(path, m, QC ".config_groups.<group>.weights.symmetric",
                    "is false: FP8 weights with zero points are not read");
    }
    return ATLAS_OK;
  }
  if (strcmp(type, "int") != 0) {
    return refuse(path, m, QC ".config_groups.<group>.weights.type",
                  "is neither \"int\" nor \"float\"");
  }
  ATLAS_RETURN_IF_ERROR(check_bits(
      path, m, QC ".config_groups.<group>.weights.num_bits", bits, true));
  if (strcmp(format, "pack-quantized") != 0) {
    return refuse(path, m, fmt_field,
                  "is not \"pack-quantized\" for int weights (other "
                  "packings, e.g. marlin-24 or int-quantized, are not read)");
  }
  out->layout = ATLAS_QUANT_LAYOUT_INT_ROWS;
  out->bits = (uint32_t)bits;
  out->block_n = 1;
  out->zeros = !sym;
  if (strcmp(strategy, "group") == 0) {
    ATLAS_RETURN_IF_ERROR(
        get_int(path, m, w, where, "group_size", &found, &group));
    ATLAS_RETURN_IF_ERROR(check_group(
        path, m, QC ".config_groups.<group>.weights.group_size", group));
    out->group_k = (uint32_t)group;
  } else if (strcmp(strategy, "channel") == 0) {
    out->group_k = 0;
  } else {
    return refuse(path, m, QC ".config_groups.<group>.weights.strategy",
                  "is not group or channel for int weights");
  }
  const json_t *order = present(w, "actorder");
  if (order != NULL && !json_is_false(order)) {
    const char *o = json_is_string(order) ? json_string_value(order) : "";
    if (json_is_true(order) || strcmp(o, "group") == 0) {
      out->g_idx = true;
    } else if (strcmp(o, "weight") != 0) {
      return refuse(path, m, QC ".config_groups.<group>.weights.actorder",
                    "is not group, weight or null");
    }
  }
  return ATLAS_OK;
}

// The group's input_activations: none (weights only) or FP8 per token,
// dynamic (run here in f32).
static atlas_status parse_ct_inputs(const char *path, const json_t *a,
                                    atlas_quant_config *out) {
  const char *m = "compressed-tensors", *type = NULL;
  const char *where = QC ".config_groups.<group>.input_activations";
  bool found = false, dynamic = false;
  long long bits = 0;
  if (a == NULL) return ATLAS_OK;
  if (!json_is_object(a)) return refuse(path, m, where, "is not an object");
  ATLAS_RETURN_IF_ERROR(get_string(path, m, a, where, "type", &type));
  ATLAS_RETURN_IF_ERROR(get_int(path, m, a, where, "num_bits", &found, &bits));
  ATLAS_RETURN_IF_ERROR(
      get_bool(path, m, a, where, "dynamic", false, &dynamic));
  if (type == NULL || strcmp(type, "float") != 0 || bits != 8) {
    return refuse(path, m, where,
                  "is not FP8 (type float, num_bits 8): other activation "
                  "quantization is not read");
  }
  if (!dynamic) {
    return refuse(path, m,
                  QC
                  ".config_groups.<group>.input_activations."
                  "dynamic",
                  "is false: static activation scales are not read");
  }
  out->dynamic_fp8_activations = true;
  return ATLAS_OK;
}

static atlas_status parse_ct(const char *path, const json_t *qc,
                             atlas_quant_config *out) {
  const char *m = "compressed-tensors", *format = NULL, *status = NULL;
  ATLAS_RETURN_IF_ERROR(get_string(path, m, qc, QC, "format", &format));
  ATLAS_RETURN_IF_ERROR(
      get_string(path, m, qc, QC, "quantization_status", &status));
  if (status != NULL && strcmp(status, "compressed") != 0) {
    return refuse(path, m, QC ".quantization_status",
                  "is not \"compressed\": Atlas reads compressed "
                  "checkpoints only");
  }
  const json_t *sparsity = present(qc, "sparsity_config");
  const char *sparse_format = NULL;
  if (sparsity != NULL && json_is_object(sparsity)) {
    ATLAS_RETURN_IF_ERROR(get_string(path, m, sparsity, QC ".sparsity_config",
                                     "format", &sparse_format));
  }
  if (sparse_format == NULL || strcmp(sparse_format, "dense") != 0) {
    ATLAS_RETURN_IF_ERROR(refuse_if_set(path, m, qc, QC, "sparsity_config",
                                        "is set: sparse weights are not read"));
  }
  ATLAS_RETURN_IF_ERROR(
      refuse_if_set(path, m, qc, QC, "kv_cache_scheme",
                    "is set: a quantized KV cache is not read"));
  ATLAS_RETURN_IF_ERROR(refuse_if_set(path, m, qc, QC, "transform_config",
                                      "is set: transforms are not read"));
  const json_t *groups = present(qc, "config_groups");
  if (!json_is_object(groups) || json_object_size(groups) != 1) {
    return refuse(path, m, QC ".config_groups",
                  "does not hold exactly one group: Atlas reads one scheme "
                  "for every quantized layer");
  }
  const json_t *g = json_object_iter_value(json_object_iter((json_t *)groups));
  const char *where = QC ".config_groups.<group>";
  if (!json_is_object(g)) return refuse(path, m, where, "is not an object");
  const json_t *targets = present(g, "targets");
  if (!json_is_array(targets) || json_array_size(targets) != 1 ||
      !json_is_string(json_array_get(targets, 0)) ||
      strcmp(json_string_value(json_array_get(targets, 0)), "Linear") != 0) {
    return refuse(path, m, QC ".config_groups.<group>.targets",
                  "is not [\"Linear\"]: Atlas reads schemes that cover every "
                  "linear layer (less `ignore`)");
  }
  const char *group_format = NULL;
  ATLAS_RETURN_IF_ERROR(get_string(path, m, g, where, "format", &group_format));
  if (group_format != NULL) format = group_format;
  if (format == NULL) return refuse(path, m, QC ".format", "is missing");
  const json_t *w = present(g, "weights");
  if (!json_is_object(w)) {
    return refuse(path, m, QC ".config_groups.<group>.weights",
                  "is missing: Atlas reads quantized weights");
  }
  ATLAS_RETURN_IF_ERROR(parse_ct_weights(path, w, format, out));
  ATLAS_RETURN_IF_ERROR(
      parse_ct_inputs(path, present(g, "input_activations"), out));
  ATLAS_RETURN_IF_ERROR(
      refuse_if_set(path, m, g, where, "output_activations",
                    "is set: quantized outputs are not read"));
  return add_keep(path, m, qc, "ignore", out);
}

static atlas_status parse_method(const char *path, const json_t *qc,
                                 atlas_quant_config *out) {
  const json_t *method = present(qc, "quant_method");
  if (method == NULL) {
    const char *hint =
        present(qc, "load_in_4bit") || present(qc, "load_in_8bit")
            ? " (load_in_4bit/load_in_8bit: bitsandbytes)"
            : "";
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: " QC
        " has no quant_method%s; Atlas refuses a quantized "
        "checkpoint it cannot name rather than run it as if it were not",
        path, hint);
  }
  if (!json_is_string(method)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: " QC ".quant_method is %s, not a string",
                             path, atlas_json_type_word(method));
  }
  const char *name = json_string_value(method);
  if (strcmp(name, "fp8") == 0) {
    out->method = ATLAS_QUANT_FP8;
    return parse_fp8(path, qc, out);
  }
  if (strcmp(name, "compressed-tensors") == 0) {
    out->method = ATLAS_QUANT_COMPRESSED_TENSORS;
    return parse_ct(path, qc, out);
  }
  if (strcmp(name, "awq") == 0) {
    out->method = ATLAS_QUANT_AWQ;
    return parse_awq(path, qc, out);
  }
  if (strcmp(name, "gptq") == 0) {
    out->method = ATLAS_QUANT_GPTQ;
    return parse_gptq(path, qc, out);
  }
  if (strcmp(name, "gguf") == 0) {
    // Nothing to read: each tensor's type is its layout.
    out->method = ATLAS_QUANT_GGUF;
    out->bits = 8;
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "%s: " QC
      ".quant_method \"%.64s\" is not a format Atlas reads (it "
      "reads fp8, compressed-tensors, awq, gptq and gguf); Atlas refuses the "
      "checkpoint rather than run quantized weights as if they were not",
      path, name);
}

atlas_status atlas_quant_config_parse(const char *text, size_t len,
                                      const char *path,
                                      atlas_quant_config *out) {
  memset(out, 0, sizeof(*out));
  json_error_t error;
  json_t *root = json_loadb(text, len, 0, &error);
  if (root == NULL) {
    return atlas_status_make(
        atlas_json_error_is_oom(&error) ? ATLAS_STATUS_OUT_OF_MEMORY
                                        : ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: not valid JSON at line %d: %s", path, error.line, error.text);
  }
  atlas_status status = ATLAS_OK;
  const json_t *qc = json_object_get(root, QC);
  if (!json_is_object(root)) {
    status = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: config.json is not a JSON object", path);
  } else if (present(root, "compression_config") != NULL) {
    // compressed-tensors' older key for the same thing.
    status = atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: compression_config (compressed-tensors' older key) is not read; "
        "rename it quantization_config if it describes the weights",
        path);
  } else if (qc == NULL || json_is_null(qc)) {
    out->method = ATLAS_QUANT_NONE;
  } else if (!json_is_object(qc)) {
    status = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: " QC " is %s, not an object", path,
                               atlas_json_type_word(qc));
  } else {
    status = parse_method(path, qc, out);
  }
  json_decref(root);
  if (status != ATLAS_OK) atlas_quant_config_free(out);
  return status;
}

void atlas_quant_config_free(atlas_quant_config *config) {
  if (config == NULL) return;
  for (size_t i = 0; i < config->keep_count; ++i) free(config->keep[i]);
  free(config->keep);
  memset(config, 0, sizeof(*config));
}

const char *atlas_quant_method_name(atlas_quant_method method) {
  switch (method) {
    case ATLAS_QUANT_NONE:
      return "none";
    case ATLAS_QUANT_FP8:
      return "fp8";
    case ATLAS_QUANT_COMPRESSED_TENSORS:
      return "compressed-tensors";
    case ATLAS_QUANT_AWQ:
      return "awq";
    case ATLAS_QUANT_GPTQ:
      return "gptq";
    case ATLAS_QUANT_GGUF:
      return "gguf";
  }
  return "unknown";
}

void atlas_quant_config_describe(const atlas_quant_config *c, char *buf,
                                 size_t size) {
  if (size == 0) return;
  if (c->method == ATLAS_QUANT_NONE) {
    snprintf(buf, size, "none");
    return;
  }
  const char *name = atlas_quant_method_name(c->method);
  if (c->method == ATLAS_QUANT_GGUF) {
    snprintf(buf, size, "gguf blocks");
    return;
  }
  if (c->layout == ATLAS_QUANT_LAYOUT_FP8) {
    if (c->block_n == 0 && c->group_k == 0) {
      snprintf(buf, size, "%s fp8 tensor", name);
    } else if (c->group_k == 0) {
      snprintf(buf, size, "%s fp8 channel", name);
    } else {
      snprintf(buf, size, "%s fp8 block %ux%u", name, c->block_n, c->group_k);
    }
    return;
  }
  char group[32];
  if (c->group_k == 0) {
    snprintf(group, sizeof(group), "channel");
  } else {
    snprintf(group, sizeof(group), "group %u", c->group_k);
  }
  snprintf(
      buf, size, "%s int%u %s%s%s", name, c->bits, group,
      c->layout == ATLAS_QUANT_LAYOUT_INT_ROWS && c->zeros ? " asymmetric" : "",
      c->g_idx ? " g_idx" : "");
}
