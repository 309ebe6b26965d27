// A quantized linear layer's tensors in a checkpoint (quant_tensors.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "atlas/runtime/quant/quant_tensors.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/formats/safetensors.h"

static atlas_status re_match(const char *pattern, const char *name, bool *out) {
  int err = 0;
  PCRE2_SIZE at = 0;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                 PCRE2_ANCHORED | PCRE2_UTF, &err, &at, NULL);
  if (re == NULL) {
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "quantization_config.ignore: \"re:%s\" is not a "
        "regular expression PCRE2 reads (error %d at "
        "%zu)",
        atlas_quote_n(pattern, strlen(pattern), q, sizeof(q)), err, (size_t)at);
  }
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  int rc = md == NULL ? PCRE2_ERROR_NOMEMORY
                      : pcre2_match(re, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED,
                                    0, 0, md, NULL);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  if (rc == PCRE2_ERROR_NOMEMORY) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory matching a module name");
  }
  *out = rc >= 0;
  return ATLAS_OK;
}

atlas_status atlas_quant_module_kept(const atlas_quant_config *config,
                                     const char *module, bool *out_kept) {
  *out_kept = false;
  for (size_t i = 0; i < config->keep_count && !*out_kept; ++i) {
    const char *k = config->keep[i];
    if (config->method != ATLAS_QUANT_COMPRESSED_TENSORS) {
      *out_kept = strstr(module, k) != NULL;
    } else if (strncmp(k, "re:", 3) == 0) {
      ATLAS_RETURN_IF_ERROR(re_match(k + 3, module, out_kept));
    } else {
      *out_kept = strcmp(module, k) == 0;
    }
  }
  return ATLAS_OK;
}

// What one tensor must be. dims[i] 0: any; rank 0 in `ranks`: a scalar.
typedef struct want {
  const char *suffix;
  bool float_scale;  // F32, F16 or BF16 (else `dtype`)
  atlas_dtype dtype;
  bool int_any;  // I32 or I64
  int rank;
  int64_t dims[2];
} want;

static atlas_status mismatch(const char *module, const char *suffix,
                             const char *what) {
  return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                           "quantized layer %s: tensor \"%s.%s\" %s", module,
                           module, suffix, what);
}

static atlas_status find(const atlas_checkpoint *ck, const char *module,
                         const want *w, bool required,
                         atlas_checkpoint_tensor *out) {
  char name[512];
  int n = snprintf(name, sizeof(name), "%s.%s", module, w->suffix);
  if (n < 0 || (size_t)n >= sizeof(name)) {
    return mismatch(module, w->suffix, "has too long a name");
  }
  if (!atlas_checkpoint_lookup(ck, name, out)) {
    return required ? mismatch(module, w->suffix, "is missing") : ATLAS_OK;
  }
  const atlas_safetensors_tensor *t = out->tensor;
  char why[320];
  bool dtype_ok =
      w->float_scale ? atlas_dtype_is_float(t->dtype)
      : w->int_any ? t->dtype == ATLAS_DTYPE_I32 || t->dtype == ATLAS_DTYPE_I64
                   : t->dtype == w->dtype;
  if (!dtype_ok) {
    snprintf(why, sizeof(why), "is %s, not %s", atlas_dtype_name(t->dtype),
             w->float_scale ? "F32, F16 or BF16"
             : w->int_any   ? "I32 or I64"
                            : atlas_dtype_name(w->dtype));
    return mismatch(module, w->suffix, why);
  }
  bool shape_ok = t->rank == w->rank;
  for (int d = 0; shape_ok && d < w->rank; ++d) {
    shape_ok = w->dims[d] == 0 || t->shape[d] == w->dims[d];
  }
  // A per-tensor scale may be stored as [1] or as a scalar.
  if (!shape_ok && w->rank == 1 && w->dims[0] == 1 && t->rank == 0) {
    shape_ok = true;
  }
  if (!shape_ok) {
    char shape[128], want_shape[128];
    atlas_shape_format(t->shape, t->rank, shape, sizeof(shape));
    atlas_shape_format(w->dims, w->rank, want_shape, sizeof(want_shape));
    snprintf(why, sizeof(why), "has shape %s, not %s", shape, want_shape);
    return mismatch(module, w->suffix, why);
  }
  return ATLAS_OK;
}

static uint32_t scale_flag(atlas_dtype d) {
  return d == ATLAS_DTYPE_F16    ? ATLAS_QUANT_SCALE_F16
         : d == ATLAS_DTYPE_BF16 ? ATLAS_QUANT_SCALE_BF16
                                 : ATLAS_QUANT_SCALE_F32;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// compressed-tensors' weight_shape must say rows x cols.
static atlas_status check_weight_shape(const atlas_checkpoint_tensor *t,
                                       const char *module, uint32_t rows,
                                       uint32_t cols) {
  int64_t v[2] = {0, 0};
  if (t->tensor->dtype == ATLAS_DTYPE_I64) {
    ATLAS_RETURN_IF_ERROR(atlas_safetensors_read(t->tensor, 0, 16, v));
  } else {
    int32_t w[2] = {0, 0};
    ATLAS_RETURN_IF_ERROR(atlas_safetensors_read(t->tensor, 0, 8, w));
    v[0] = w[0], v[1] = w[1];
  }
  if (v[0] != rows || v[1] != cols) {
    char why[128];
    snprintf(why, sizeof(why), "says [%lld, %lld], not [%u, %u]",
             (long long)v[0], (long long)v[1], rows, cols);
    return mismatch(module, "weight_shape", why);
  }
  return ATLAS_OK;
}

// Every g_idx entry names one of the `groups` groups.
static atlas_status check_g_idx(const atlas_checkpoint_tensor *t,
                                const char *module, const char *suffix,
                                uint32_t cols, uint32_t groups) {
  int32_t *v = malloc((size_t)cols * 4 + 1);
  if (v == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "quantized layer %s: out of host memory", module);
  }
  atlas_status status =
      atlas_safetensors_read(t->tensor, 0, (uint64_t)cols * 4, v);
  for (uint32_t k = 0; status == ATLAS_OK && k < cols; ++k) {
    if (v[k] < 0 || (uint32_t)v[k] >= groups) {
      char why[128];
      snprintf(why, sizeof(why), "gives column %u group %d (there are %u)", k,
               v[k], groups);
      status = mismatch(module, suffix, why);
    }
  }
  free(v);
  return status;
}

// A GGUF projection: "<module>.weight" of a block type, [rows, cols]; its
// layout is that type.
static atlas_status gguf_matrix(const atlas_checkpoint *ck, const char *module,
                                uint32_t rows, uint32_t cols,
                                atlas_quant_matrix *out) {
  want w = {"weight", false, ATLAS_DTYPE_F32, false, 2, {rows, cols}};
  char name[512];
  snprintf(name, sizeof(name), "%s.weight", module);
  atlas_checkpoint_tensor t;
  if (atlas_checkpoint_lookup(ck, name, &t)) w.dtype = t.tensor->dtype;
  ATLAS_RETURN_IF_ERROR(find(ck, module, &w, true, &out->w));
  switch (w.dtype) {
    case ATLAS_DTYPE_GGUF_Q8_0:
      out->layout = ATLAS_QUANT_LAYOUT_GGUF_Q8_0;
      break;
    case ATLAS_DTYPE_GGUF_Q4_0:
      out->layout = ATLAS_QUANT_LAYOUT_GGUF_Q4_0;
      break;
    case ATLAS_DTYPE_GGUF_Q4_K:
      out->layout = ATLAS_QUANT_LAYOUT_GGUF_Q4_K;
      break;
    case ATLAS_DTYPE_GGUF_Q5_K:
      out->layout = ATLAS_QUANT_LAYOUT_GGUF_Q5_K;
      break;
    case ATLAS_DTYPE_GGUF_Q6_K:
      out->layout = ATLAS_QUANT_LAYOUT_GGUF_Q6_K;
      break;
    default: {
      char why[160];
      snprintf(why, sizeof(why),
               "is %s while the file's other projections are GGUF blocks: "
               "a GGUF mixing plain and quantized projections is not read",
               atlas_dtype_name(w.dtype));
      return mismatch(module, "weight", why);
    }
  }
  if (cols % atlas_qd_gguf_block(out->layout) != 0) {
    return mismatch(module, "weight", "has rows that are not whole blocks");
  }
  out->bits = 8, out->group_k = 0, out->block_n = 0, out->flags = 0;
  out->rows = rows, out->cols = cols;
  out->bytes = out->w.tensor->bytes;
  return ATLAS_OK;
}

atlas_status atlas_quant_matrix_find(const atlas_quant_config *c,
                                     const atlas_checkpoint *ck,
                                     const char *module, uint32_t rows,
                                     uint32_t cols, atlas_quant_matrix *out) {
  memset(out, 0, sizeof(*out));
  if (rows == 0 || cols == 0 || c->bits == 0) {
    return mismatch(module, "*", "has no rows, columns or bit width");
  }
  if (c->method == ATLAS_QUANT_GGUF) {
    return gguf_matrix(ck, module, rows, cols, out);
  }
  out->layout = c->layout, out->bits = c->bits, out->group_k = c->group_k;
  out->block_n = c->block_n, out->rows = rows, out->cols = cols;
  const int64_t ppw = 32 / c->bits, r = rows, k = cols;
  const int64_t groups = c->group_k ? ceil_div(k, c->group_k) : 1;
  bool g_idx_required = false;
  const char *g_idx_name = "g_idx";
  switch (c->layout) {
    case ATLAS_QUANT_LAYOUT_FP8: {
      const bool ct = c->method == ATLAS_QUANT_COMPRESSED_TENSORS;
      const int64_t bn = c->block_n ? c->block_n : r;
      want w = {"weight", false, ATLAS_DTYPE_F8_E4M3, false, 2, {r, k}};
      want s = {ct ? "weight_scale" : "weight_scale_inv",
                true,
                0,
                false,
                2,
                {ceil_div(r, bn), groups}};
      if (ct && c->block_n == 0) s.rank = 1, s.dims[0] = 1;
      ATLAS_RETURN_IF_ERROR(find(ck, module, &w, true, &out->w));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &s, true, &out->scales));
      break;
    }
    case ATLAS_QUANT_LAYOUT_INT_ROWS: {
      want w = {"weight_packed", false, ATLAS_DTYPE_I32,
                false,           2,     {r, ceil_div(k, ppw)}};
      want s = {"weight_scale", true, 0, false, 2, {r, groups}};
      want z = {"weight_zero_point",       false, ATLAS_DTYPE_I32, false, 2,
                {ceil_div(r, ppw), groups}};
      want shape = {"weight_shape", false, 0, true, 1, {2, 0}};
      atlas_checkpoint_tensor st;
      ATLAS_RETURN_IF_ERROR(find(ck, module, &w, true, &out->w));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &s, true, &out->scales));
      if (c->zeros)
        ATLAS_RETURN_IF_ERROR(find(ck, module, &z, true, &out->zeros));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &shape, true, &st));
      ATLAS_RETURN_IF_ERROR(check_weight_shape(&st, module, rows, cols));
      g_idx_required = c->g_idx;
      g_idx_name = "weight_g_idx";
      break;
    }
    case ATLAS_QUANT_LAYOUT_GPTQ: {
      if (k % ppw != 0) {
        return mismatch(module, "qweight",
                        "packs columns that do not fill "
                        "its words");
      }
      want w = {"qweight", false, ATLAS_DTYPE_I32, false, 2, {k / ppw, r}};
      want z = {"qzeros", false, ATLAS_DTYPE_I32,
                false,    2,     {groups, ceil_div(r, ppw)}};
      want s = {"scales", true, 0, false, 2, {groups, r}};
      ATLAS_RETURN_IF_ERROR(find(ck, module, &w, true, &out->w));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &z, true, &out->zeros));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &s, true, &out->scales));
      g_idx_required = c->g_idx;
      break;
    }
    case ATLAS_QUANT_LAYOUT_AWQ: {
      if (r % 8 != 0) {
        return mismatch(module, "qweight",
                        "packs rows that do not fill its "
                        "words");
      }
      want w = {"qweight", false, ATLAS_DTYPE_I32, false, 2, {k, r / 8}};
      want z = {"qzeros", false, ATLAS_DTYPE_I32, false, 2, {groups, r / 8}};
      want s = {"scales", true, 0, false, 2, {groups, r}};
      ATLAS_RETURN_IF_ERROR(find(ck, module, &w, true, &out->w));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &z, true, &out->zeros));
      ATLAS_RETURN_IF_ERROR(find(ck, module, &s, true, &out->scales));
      break;
    }
    default:
      return mismatch(module, "*", "has a layout Atlas does not read");
  }
  if (c->layout == ATLAS_QUANT_LAYOUT_GPTQ ||
      c->layout == ATLAS_QUANT_LAYOUT_INT_ROWS) {
    want g = {g_idx_name, false, ATLAS_DTYPE_I32, false, 1, {k, 0}};
    ATLAS_RETURN_IF_ERROR(find(ck, module, &g, g_idx_required, &out->g_idx));
    if (out->g_idx.tensor != NULL) {
      ATLAS_RETURN_IF_ERROR(
          check_g_idx(&out->g_idx, module, g_idx_name, cols, (uint32_t)groups));
    }
  }
  out->flags = scale_flag(out->scales.tensor->dtype);
  if (out->zeros.tensor != NULL) {
    out->flags |= ATLAS_QUANT_FLAG_ZEROS |
                  (c->zero_offset << ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT);
  }
  const atlas_checkpoint_tensor *all[] = {&out->w, &out->scales, &out->zeros,
                                          &out->g_idx};
  for (size_t i = 0; i < 4; ++i) {
    if (all[i]->tensor != NULL) out->bytes += all[i]->tensor->bytes;
  }
  return ATLAS_OK;
}
