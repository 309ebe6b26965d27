// RoPE config parsing and inverse frequencies (see rope.h). The formulas
// follow transformers' modeling_rope_utils, in double.
#include "atlas/runtime/arch/rope/rope.h"

#include <math.h>
#include <string.h>

#include "atlas/runtime/formats/json_words.h"

// pi to double precision (ROPE_PI is not C11).
#define ROPE_PI 3.14159265358979323846

static const char *const kTypeNames[] = {"default", "linear", "dynamic",
                                         "yarn",    "llama3", "longrope"};
#define TYPE_COUNT (sizeof(kTypeNames) / sizeof(kTypeNames[0]))

// Keys each type reads from the rope object, beyond the common ones.
static const char *const kCommonKeys[] = {"rope_type", "type", "rope_theta",
                                          "partial_rotary_factor"};
static const char *const kScaledKeys[] = {"factor"};
static const char *const kYarnKeys[] = {
    "factor",           "original_max_position_embeddings",
    "attention_factor", "beta_fast",
    "beta_slow",        "mscale",
    "mscale_all_dim",   "truncate"};
static const char *const kLlama3Keys[] = {"factor", "low_freq_factor",
                                          "high_freq_factor",
                                          "original_max_position_embeddings"};
static const char *const kLongKeys[] = {"factor", "short_factor", "long_factor",
                                        "attention_factor",
                                        "original_max_position_embeddings"};

const char *atlas_rope_type_name(atlas_rope_type type) {
  return (size_t)type < TYPE_COUNT ? kTypeNames[type] : "?";
}

static const json_t *present(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  return v == NULL || json_is_null(v) ? NULL : v;
}

static atlas_status number(const char *path, const char *where,
                           const json_t *obj, const char *key, bool positive,
                           bool *found, double *out) {
  const json_t *v = present(obj, key);
  *found = v != NULL;
  if (v == NULL) return ATLAS_OK;
  if (!json_is_number(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"%s\" must be a number, not %s", path,
                             where, key, atlas_json_type_word(v));
  }
  double d = json_number_value(v);
  if (!isfinite(d) || (positive ? !(d > 0) : d < 0)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"%s\" is %g; it must be a %s number", path,
                             where, key, d,
                             positive ? "positive" : "non-negative");
  }
  *out = d;
  return ATLAS_OK;
}

static atlas_status require(const char *path, const char *where,
                            const json_t *obj, const char *key,
                            atlas_rope_type type, double *out) {
  bool found = false;
  ATLAS_RETURN_IF_ERROR(number(path, where, obj, key, true, &found, out));
  if (!found) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"%s\" is required for rope_type \"%s\"",
                             path, where, key, atlas_rope_type_name(type));
  }
  return ATLAS_OK;
}

// original_max_position_embeddings: a positive integer, when present.
static atlas_status positions(const char *path, const char *where,
                              const json_t *obj, int64_t *out) {
  bool found = false;
  double d = 0;
  ATLAS_RETURN_IF_ERROR(number(
      path, where, obj, "original_max_position_embeddings", true, &found, &d));
  if (!found) return ATLAS_OK;
  if (d != floor(d) || d > 2147483647.0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"original_max_position_embeddings\" is "
                             "%g; it must be a positive integer",
                             path, where, d);
  }
  *out = (int64_t)d;
  return ATLAS_OK;
}

static bool listed(const char *key, const char *const *keys, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(key, keys[i]) == 0) return true;
  }
  return false;
}

// Every key of the rope object must mean something for its type.
static atlas_status check_keys(const char *path, const char *where,
                               const json_t *obj, atlas_rope_type type) {
  const char *key;
  const json_t *value;
  json_object_foreach((json_t *)obj, key, value) {
    if (json_is_null(value)) continue;  // HF writes null for "unset"
    if (listed(key, kCommonKeys, 4)) continue;
    bool ok = false;
    switch (type) {
      case ATLAS_ROPE_LINEAR:
      case ATLAS_ROPE_DYNAMIC:
        ok = listed(key, kScaledKeys, 1);
        break;
      case ATLAS_ROPE_YARN:
        ok = listed(key, kYarnKeys, sizeof(kYarnKeys) / sizeof(kYarnKeys[0]));
        break;
      case ATLAS_ROPE_LLAMA3:
        ok = listed(key, kLlama3Keys, 4);
        break;
      case ATLAS_ROPE_LONGROPE:
        ok = listed(key, kLongKeys, sizeof(kLongKeys) / sizeof(kLongKeys[0]));
        break;
      case ATLAS_ROPE_DEFAULT:
        break;
    }
    if (!ok) {
      return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: %s\"%s\" is not supported with rope_type "
                               "\"%s\" (it would change the rotation and is "
                               "not implemented)",
                               path, where, key, atlas_rope_type_name(type));
    }
  }
  return ATLAS_OK;
}

static atlas_status parse_type(const char *path, const char *where,
                               const json_t *obj, atlas_rope_type *out) {
  const json_t *a = present(obj, "rope_type");
  const json_t *b = present(obj, "type");
  if (a != NULL && b != NULL && !json_equal((json_t *)a, (json_t *)b)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"rope_type\" and \"type\" disagree", path,
                             where);
  }
  const json_t *t = a != NULL ? a : b;
  *out = ATLAS_ROPE_DEFAULT;
  if (t == NULL) return ATLAS_OK;
  if (!json_is_string(t)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %srope_type must be a string, not %s", path,
                             where, atlas_json_type_word(t));
  }
  const char *name = json_string_value(t);
  for (size_t i = 0; i < TYPE_COUNT; ++i) {
    if (strcmp(name, kTypeNames[i]) == 0) {
      *out = (atlas_rope_type)i;
      return ATLAS_OK;
    }
  }
  return atlas_status_make(
      ATLAS_STATUS_UNIMPLEMENTED,
      "%s: %srope_type \"%s\" is not supported (supported: "
      "default, linear, dynamic, yarn, llama3, longrope)",
      path, where, name);
}

// A list of positive numbers (longrope's factors) into out[], *count of them.
static atlas_status factors(const char *path, const char *where,
                            const json_t *obj, const char *key, double *out,
                            int64_t *count) {
  const json_t *v = present(obj, key);
  if (v == NULL || !json_is_array(v) || json_array_size(v) == 0 ||
      json_array_size(v) > ATLAS_ROPE_MAX_FACTORS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %s\"%s\" must be a list of 1 to %d numbers "
                             "for rope_type \"longrope\"",
                             path, where, key, ATLAS_ROPE_MAX_FACTORS);
  }
  for (size_t i = 0; i < json_array_size(v); ++i) {
    const json_t *e = json_array_get(v, i);
    double d = json_is_number(e) ? json_number_value(e) : -1;
    if (!(d > 0) || !isfinite(d)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s: %s%s[%zu] must be a positive number", path,
                               where, key, i);
    }
    out[i] = d;
  }
  if (*count != 0 && *count != (int64_t)json_array_size(v)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %sshort_factor and long_factor differ in "
                             "length (%lld and %zu)",
                             path, where, (long long)*count,
                             json_array_size(v));
  }
  *count = (int64_t)json_array_size(v);
  return ATLAS_OK;
}

static atlas_status parse_object(const char *path, const char *where,
                                 const json_t *obj, atlas_rope_config *c) {
  ATLAS_RETURN_IF_ERROR(parse_type(path, where, obj, &c->type));
  ATLAS_RETURN_IF_ERROR(check_keys(path, where, obj, c->type));
  bool found = false;
  switch (c->type) {
    case ATLAS_ROPE_DEFAULT:
      break;
    case ATLAS_ROPE_LINEAR:
    case ATLAS_ROPE_DYNAMIC:
      ATLAS_RETURN_IF_ERROR(
          require(path, where, obj, "factor", c->type, &c->factor));
      break;
    case ATLAS_ROPE_YARN:
      ATLAS_RETURN_IF_ERROR(
          require(path, where, obj, "factor", c->type, &c->factor));
      ATLAS_RETURN_IF_ERROR(
          positions(path, where, obj, &c->original_max_positions));
      ATLAS_RETURN_IF_ERROR(number(path, where, obj, "attention_factor", true,
                                   &found, &c->attention_factor));
      ATLAS_RETURN_IF_ERROR(
          number(path, where, obj, "beta_fast", true, &found, &c->beta_fast));
      ATLAS_RETURN_IF_ERROR(
          number(path, where, obj, "beta_slow", true, &found, &c->beta_slow));
      ATLAS_RETURN_IF_ERROR(
          number(path, where, obj, "mscale", false, &found, &c->mscale));
      ATLAS_RETURN_IF_ERROR(number(path, where, obj, "mscale_all_dim", false,
                                   &found, &c->mscale_all_dim));
      {
        const json_t *t = present(obj, "truncate");
        if (t != NULL && !json_is_boolean(t)) {
          return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                   "%s: %s\"truncate\" must be true or false, "
                                   "not %s",
                                   path, where, atlas_json_type_word(t));
        }
        if (t != NULL) c->truncate = json_is_true(t);
      }
      break;
    case ATLAS_ROPE_LONGROPE:
      ATLAS_RETURN_IF_ERROR(factors(path, where, obj, "short_factor",
                                    c->short_factor, &c->factor_count));
      ATLAS_RETURN_IF_ERROR(factors(path, where, obj, "long_factor",
                                    c->long_factor, &c->factor_count));
      ATLAS_RETURN_IF_ERROR(number(path, where, obj, "factor", true,
                                   &c->factor_given, &c->factor));
      ATLAS_RETURN_IF_ERROR(number(path, where, obj, "attention_factor", true,
                                   &found, &c->attention_factor));
      ATLAS_RETURN_IF_ERROR(
          positions(path, where, obj, &c->original_max_positions));
      break;
    case ATLAS_ROPE_LLAMA3:
      ATLAS_RETURN_IF_ERROR(
          require(path, where, obj, "factor", c->type, &c->factor));
      ATLAS_RETURN_IF_ERROR(require(path, where, obj, "low_freq_factor",
                                    c->type, &c->low_freq_factor));
      ATLAS_RETURN_IF_ERROR(require(path, where, obj, "high_freq_factor",
                                    c->type, &c->high_freq_factor));
      // Absent: transformers fills in max_position_embeddings.
      ATLAS_RETURN_IF_ERROR(
          positions(path, where, obj, &c->original_max_positions));
      if (c->high_freq_factor == c->low_freq_factor) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "%s: %shigh_freq_factor equals "
                                 "low_freq_factor (%g); the llama3 ramp "
                                 "divides by their difference",
                                 path, where, c->low_freq_factor);
      }
      break;
  }
  return ATLAS_OK;
}

void atlas_rope_config_init(atlas_rope_config *config, double theta) {
  memset(config, 0, sizeof(*config));
  config->type = ATLAS_ROPE_DEFAULT;
  config->theta = theta;
  config->factor = 1.0;
  config->beta_fast = 32.0;
  config->beta_slow = 1.0;
  config->truncate = true;
  config->partial_rotary_factor = 1.0;
}

atlas_status atlas_rope_config_parse(const char *path, const json_t *root,
                                     atlas_rope_config *out_config) {
  atlas_rope_config c;
  atlas_rope_config_init(&c, 10000.0);
  bool top_found = false, nested_found = false, found = false;
  double top = 0, nested = 0;
  ATLAS_RETURN_IF_ERROR(
      number(path, "", root, "rope_theta", true, &top_found, &top));
  ATLAS_RETURN_IF_ERROR(number(path, "", root, "partial_rotary_factor", true,
                               &found, &c.partial_rotary_factor));
  const json_t *params = present(root, "rope_parameters");
  const json_t *scaling = present(root, "rope_scaling");
  if (params != NULL && !json_is_object(params)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: \"rope_parameters\" must be an object, not %s", path,
        atlas_json_type_word(params));
  }
  if (scaling != NULL && !json_is_object(scaling)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: \"rope_scaling\" must be an object or null, "
                             "not %s",
                             path, atlas_json_type_word(scaling));
  }
  if (params != NULL && scaling != NULL &&
      !json_equal((json_t *)params, (json_t *)scaling)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: both \"rope_parameters\" and "
                             "\"rope_scaling\" are given and differ; keep one",
                             path);
  }
  const json_t *obj = params != NULL ? params : scaling;
  const char *where = params != NULL ? "rope_parameters." : "rope_scaling.";
  if (obj != NULL) {
    ATLAS_RETURN_IF_ERROR(parse_object(path, where, obj, &c));
    ATLAS_RETURN_IF_ERROR(
        number(path, where, obj, "rope_theta", true, &nested_found, &nested));
    double prf = 0;
    ATLAS_RETURN_IF_ERROR(
        number(path, where, obj, "partial_rotary_factor", true, &found, &prf));
    if (found) {
      if (c.partial_rotary_factor != 1.0 && c.partial_rotary_factor != prf) {
        return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                                 "%s: partial_rotary_factor %g contradicts "
                                 "%spartial_rotary_factor %g",
                                 path, c.partial_rotary_factor, where, prf);
      }
      c.partial_rotary_factor = prf;
    }
  }
  if (top_found && nested_found && top != nested) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: rope_theta %g contradicts "
                             "%srope_theta %g",
                             path, top, where, nested);
  }
  if (top_found) c.theta = top;
  if (nested_found) c.theta = nested;
  if (c.type == ATLAS_ROPE_YARN || c.type == ATLAS_ROPE_LLAMA3 ||
      c.type == ATLAS_ROPE_LONGROPE) {
    // transformers gives a top-level original_max_position_embeddings
    // priority over the rope object's (Phi-3 style configs).
    ATLAS_RETURN_IF_ERROR(positions(path, "", root, &c.original_max_positions));
  }
  if (c.partial_rotary_factor > 1.0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: partial_rotary_factor %g is above 1", path,
                             c.partial_rotary_factor);
  }
  *out_config = c;
  return ATLAS_OK;
}

int64_t atlas_rope_rot_dim(const atlas_rope_config *config, int64_t head_dim) {
  int64_t dim = (int64_t)((double)head_dim * config->partial_rotary_factor);
  return dim - dim % 2;
}

static double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

static double correction_dim(double rotations, int64_t dim, double base,
                             double max_positions) {
  return ((double)dim * log(max_positions / (rotations * 2 * ROPE_PI))) /
         (2 * log(base));
}

static void yarn(const atlas_rope_config *c, int64_t dim, double base,
                 int64_t max_positions, double *inv, double *out_factor) {
  // transformers 5 uses the explicit factor even where it differs from
  // max_position_embeddings / original_max_position_embeddings (Qwen's
  // recommended YaRN config: factor 4, both lengths 32768); the original
  // length only places the correction range. (4.x used the ratio.)
  double factor = c->factor;
  double orig = c->original_max_positions > 0
                    ? (double)c->original_max_positions
                    : (double)max_positions;
  if (c->attention_factor > 0) {
    *out_factor = c->attention_factor;
  } else if (c->mscale != 0 && c->mscale_all_dim != 0) {
    *out_factor =
        yarn_mscale(factor, c->mscale) / yarn_mscale(factor, c->mscale_all_dim);
  } else {
    *out_factor = yarn_mscale(factor, 1.0);
  }
  double low = correction_dim(c->beta_fast, dim, base, orig);
  double high = correction_dim(c->beta_slow, dim, base, orig);
  if (c->truncate) {
    low = floor(low);
    high = ceil(high);
  }
  if (low < 0) low = 0;
  if (high > (double)(dim - 1)) high = (double)(dim - 1);
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double pos_freq = pow(base, (double)(2 * i) / (double)dim);
    double ramp = ((double)i - low) / (high - low);
    ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
    double extrapolation = 1.0 - ramp;
    inv[i] = (1.0 / (factor * pos_freq)) * (1.0 - extrapolation) +
             (1.0 / pos_freq) * extrapolation;
  }
}

static void llama3(const atlas_rope_config *c, int64_t dim,
                   int64_t max_positions, double *inv) {
  double old = c->original_max_positions > 0 ? (double)c->original_max_positions
                                             : (double)max_positions;
  double low_wavelen = old / c->low_freq_factor;
  double high_wavelen = old / c->high_freq_factor;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double wavelen = 2 * ROPE_PI / inv[i];
    double scaled = wavelen > low_wavelen ? inv[i] / c->factor : inv[i];
    if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
      double smooth = (old / wavelen - c->low_freq_factor) /
                      (c->high_freq_factor - c->low_freq_factor);
      scaled = (1 - smooth) * scaled / c->factor + smooth * scaled;
    }
    inv[i] = scaled;
  }
}

// transformers' _compute_longrope_parameters and its update: the short or
// long factors by the forward's length, and the attention factor from
// max_position_embeddings / original_max_position_embeddings where the
// config has an original length (Phi-3), else from `factor`.
static void longrope(const atlas_rope_config *c, int64_t dim, double base,
                     int64_t max_positions, int64_t seq_len, double *inv,
                     double *out_factor) {
  int64_t orig = atlas_rope_original_positions(c, max_positions);
  double factor = c->original_max_positions > 0
                      ? (double)max_positions / (double)orig
                      : (c->factor_given ? c->factor : 1.0);
  if (c->attention_factor > 0) {
    *out_factor = c->attention_factor;
  } else {
    *out_factor =
        factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log((double)orig));
  }
  const double *ext = seq_len > orig ? c->long_factor : c->short_factor;
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv[i] = 1.0 / (ext[i] * pow(base, (double)(2 * i) / (double)dim));
  }
}

void atlas_rope_inv_freq(const atlas_rope_config *config, int64_t head_dim,
                         int64_t max_positions, int64_t seq_len,
                         double *out_inv_freq, double *out_attention_factor) {
  const atlas_rope_config *c = config;
  double *inv = out_inv_freq;
  int64_t dim = atlas_rope_rot_dim(c, head_dim);
  double base = c->theta;
  *out_attention_factor = 1.0;
  if (c->type == ATLAS_ROPE_DYNAMIC && seq_len > max_positions) {
    double s =
        c->factor * (double)seq_len / (double)max_positions - (c->factor - 1);
    base = base * pow(s, (double)dim / (double)(dim - 2));
  }
  if (c->type == ATLAS_ROPE_YARN) {
    yarn(c, dim, base, max_positions, inv, out_attention_factor);
    return;
  }
  if (c->type == ATLAS_ROPE_LONGROPE) {
    longrope(c, dim, base, max_positions, seq_len, inv, out_attention_factor);
    return;
  }
  for (int64_t i = 0; i < dim / 2; ++i) {
    inv[i] = 1.0 / pow(base, (double)(2 * i) / (double)dim);
  }
  if (c->type == ATLAS_ROPE_LINEAR) {
    for (int64_t i = 0; i < dim / 2; ++i) inv[i] /= c->factor;
  } else if (c->type == ATLAS_ROPE_LLAMA3) {
    llama3(c, dim, max_positions, inv);
  }
}
