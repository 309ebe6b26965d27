// GGUF to an ordinary checkpoint directory (gguf_convert.h).
#include "atlas/tools/checkpoint/gguf_convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/runtime/base/half.h"
#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_model.h"
#include "atlas/tools/checkpoint/safetensors_write.h"

// Row `row` of tensor t (ne[0] elements) as f32 into out.
static atlas_status row_f32(const atlas_gguf *g, const atlas_gguf_tensor *t,
                            uint64_t row, float *out, uint8_t *scratch) {
  uint32_t block = 0, bytes = 0;
  if (!atlas_gguf_type_block(t->type, &block, &bytes) ||
      !atlas_gguf_type_supported(t->type)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "GGUF tensor \"%s\" has type %s, which Atlas does "
                             "not read",
                             t->name, atlas_gguf_type_name(t->type));
  }
  const uint64_t row_bytes = t->ne[0] / block * bytes;
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_read(g, t, row * row_bytes, row_bytes, scratch));
  for (uint64_t k = 0; k < t->ne[0]; ++k) {
    switch (t->type) {
      case ATLAS_GGUF_TYPE_F32:
        memcpy(&out[k], scratch + 4 * k, 4);
        break;
      case ATLAS_GGUF_TYPE_F16:
      case ATLAS_GGUF_TYPE_BF16: {
        uint16_t h;
        memcpy(&h, scratch + 2 * k, 2);
        out[k] = t->type == ATLAS_GGUF_TYPE_F16 ? atlas_f16_to_f32(h)
                                                : atlas_bf16_to_f32(h);
        break;
      }
      default: {
        uint32_t layout =
            t->type == ATLAS_GGUF_TYPE_Q8_0   ? ATLAS_QUANT_LAYOUT_GGUF_Q8_0
            : t->type == ATLAS_GGUF_TYPE_Q4_0 ? ATLAS_QUANT_LAYOUT_GGUF_Q4_0
            : t->type == ATLAS_GGUF_TYPE_Q4_K ? ATLAS_QUANT_LAYOUT_GGUF_Q4_K
            : t->type == ATLAS_GGUF_TYPE_Q5_K ? ATLAS_QUANT_LAYOUT_GGUF_Q5_K
                                              : ATLAS_QUANT_LAYOUT_GGUF_Q6_K;
        out[k] = atlas_qd_gguf(layout, scratch + (k / block) * bytes,
                               (uint32_t)(k % block));
      }
    }
  }
  return ATLAS_OK;
}

static atlas_status write_config(const atlas_gguf *g, const char *out_dir) {
  char *json = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_config_json(g, &json));
  char path[4096];
  snprintf(path, sizeof(path), "%s/config.json", out_dir);
  FILE *f = fopen(path, "wb");
  size_t n = strlen(json);
  bool ok = f != NULL && fwrite(json, 1, n, f) == n;
  if (f != NULL && fclose(f) != 0) ok = false;
  free(json);
  return ok ? ATLAS_OK
            : atlas_status_make(ATLAS_STATUS_IO, "%s: cannot write", path);
}

// A permuted bias (F32, F16 or BF16 elements) as F32 in transformers order.
static atlas_status convert_bias(const atlas_gguf *g, uint64_t head_dim,
                                 const atlas_gguf_tensor *t,
                                 atlas_safetensors_write_tensor *w,
                                 const char *name) {
  const uint64_t n = t->ne[0];
  float *all = malloc((size_t)n * 4 + 4), *data = malloc((size_t)n * 4 + 4);
  uint8_t *scratch = malloc((size_t)t->bytes + 1);
  atlas_status status = ATLAS_OK;
  if (all == NULL || data == NULL || scratch == NULL) {
    status =
        atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "GGUF tensor \"%s\": out of host memory", t->name);
  }
  if (status == ATLAS_OK) status = row_f32(g, t, 0, all, scratch);
  for (uint64_t r = 0; status == ATLAS_OK && r < n; ++r) {
    data[r] = all[atlas_gguf_qk_source_row(r, head_dim)];
  }
  free(all);
  free(scratch);
  if (status != ATLAS_OK) {
    free(data);
    return status;
  }
  w->name = name;
  w->dtype = ATLAS_DTYPE_F32;
  w->rank = 1;
  w->shape[0] = (int64_t)n;
  w->data = data;
  return ATLAS_OK;
}

// Tensor i as F32 in transformers order, into w (names and data owned by
// the caller's arrays).
static atlas_status convert_tensor(const atlas_gguf *g, const char *arch,
                                   uint64_t head_dim,
                                   const atlas_gguf_tensor *t,
                                   atlas_safetensors_write_tensor *w,
                                   char *name, size_t name_size) {
  ATLAS_RETURN_IF_ERROR(atlas_gguf_hf_name(t->name, name, name_size));
  const uint64_t cols = t->ne[0], rows = t->elements / t->ne[0];
  const bool permuted = atlas_gguf_is_permuted(arch, t->name);
  if (permuted && t->n_dims == 1) {
    // A bias: its elements are the rows put back in order.
    return convert_bias(g, head_dim, t, w, name);
  }
  float *data = malloc((size_t)t->elements * 4);
  uint8_t *scratch = malloc((size_t)(t->bytes / rows) + 1);
  atlas_status status = ATLAS_OK;
  if (data == NULL || scratch == NULL) {
    status =
        atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "GGUF tensor \"%s\": out of host memory", t->name);
  }
  for (uint64_t r = 0; status == ATLAS_OK && r < rows; ++r) {
    uint64_t src = permuted ? atlas_gguf_qk_source_row(r, head_dim) : r;
    status = row_f32(g, t, src, data + r * cols, scratch);
  }
  free(scratch);
  if (status != ATLAS_OK) {
    free(data);
    return status;
  }
  w->name = name;
  w->dtype = ATLAS_DTYPE_F32;
  w->rank = (int)t->n_dims;
  for (uint32_t d = 0; d < t->n_dims; ++d) {
    w->shape[d] = (int64_t)t->ne[t->n_dims - 1 - d];  // ne[0] is innermost
  }
  w->data = data;
  return ATLAS_OK;
}

atlas_status atlas_gguf_convert(const char *gguf_path, const char *out_dir) {
  atlas_gguf *g = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_open(gguf_path, &g));
  const char *arch_s = NULL;
  size_t arch_n = 0;
  char arch[16] = {0};
  atlas_status status = write_config(g, out_dir);
  if (status == ATLAS_OK) {
    status = atlas_gguf_get_string(g, "general.architecture", &arch_s, &arch_n);
  }
  if (status == ATLAS_OK) memcpy(arch, arch_s, arch_n < 15 ? arch_n : 15);
  uint64_t head_dim = 0;
  if (status == ATLAS_OK) status = atlas_gguf_head_dim(g, arch, &head_dim);
  const size_t n = atlas_gguf_tensor_count(g);
  atlas_safetensors_write_tensor *w = calloc(n ? n : 1, sizeof(*w));
  char(*names)[256] = calloc(n ? n : 1, sizeof(*names));
  if (status == ATLAS_OK && (w == NULL || names == NULL)) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory", gguf_path);
  }
  size_t written = 0;
  for (size_t i = 0; status == ATLAS_OK && i < n; ++i) {
    const atlas_gguf_tensor *t = atlas_gguf_tensor_at(g, i);
    // Llama 3's rope factors went into config.json's rope_scaling.
    if (strcmp(t->name, "rope_freqs.weight") == 0) continue;
    status = convert_tensor(g, arch, head_dim, t, &w[written], names[written],
                            sizeof(names[written]));
    if (status == ATLAS_OK) ++written;
  }
  if (status == ATLAS_OK) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.safetensors", out_dir);
    status = atlas_safetensors_write(path, w, written, NULL, 0);
  }
  for (size_t i = 0; w != NULL && i < n; ++i) free((void *)w[i].data);
  free(w);
  free(names);
  atlas_gguf_close(g);
  return status;
}
