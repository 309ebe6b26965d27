// A GGUF file opened as a checkpoint (gguf_checkpoint.h): a safetensors
// file object built from the GGUF tensor table (a view, never a
// safetensors file on disk), adopted by a checkpoint.
#define _GNU_SOURCE  // F_DUPFD_CLOEXEC, strdup
#include "atlas/runtime/formats/gguf_checkpoint.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/runtime/base/half.h"
#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_internal.h"
#include "atlas/runtime/formats/gguf_model.h"
#include "atlas/runtime/formats/safetensors_internal.h"

#define ROPE_FREQS "rope_freqs.weight"

bool atlas_gguf_is_path(const char *path) {
  size_t n = path != NULL ? strlen(path) : 0;
  return n > 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

// How one tensor reaches the view.
typedef enum mode {
  FROM_FILE = 0,  // its bytes where they lie in the GGUF file
  PERMUTED,       // rows put back in order, same type, in host memory
  DEQUANTIZED,    // blocks to F32 in host memory
} mode;

typedef struct plan {
  mode how;
  atlas_dtype dtype;
  uint64_t bytes;  // in the view
  uint64_t at;     // PERMUTED, DEQUANTIZED: offset into the owned buffer
} plan;

static atlas_status refuse_type(const atlas_gguf_tensor *t) {
  char q[ATLAS_QUOTE_BYTES];
  return atlas_status_make(
      ATLAS_STATUS_UNIMPLEMENTED,
      "GGUF tensor \"%s\" has type %s, which Atlas does not read (it reads "
      "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)",
      atlas_quote(t->name, q, sizeof(q)), atlas_gguf_type_name(t->type));
}

static bool dtype_of(uint32_t type, atlas_dtype *out) {
  switch (type) {
    case ATLAS_GGUF_TYPE_F32:
      *out = ATLAS_DTYPE_F32;
      return true;
    case ATLAS_GGUF_TYPE_F16:
      *out = ATLAS_DTYPE_F16;
      return true;
    case ATLAS_GGUF_TYPE_BF16:
      *out = ATLAS_DTYPE_BF16;
      return true;
    case ATLAS_GGUF_TYPE_Q8_0:
      *out = ATLAS_DTYPE_GGUF_Q8_0;
      return true;
    case ATLAS_GGUF_TYPE_Q4_0:
      *out = ATLAS_DTYPE_GGUF_Q4_0;
      return true;
    case ATLAS_GGUF_TYPE_Q4_K:
      *out = ATLAS_DTYPE_GGUF_Q4_K;
      return true;
    case ATLAS_GGUF_TYPE_Q5_K:
      *out = ATLAS_DTYPE_GGUF_Q5_K;
      return true;
    case ATLAS_GGUF_TYPE_Q6_K:
      *out = ATLAS_DTYPE_GGUF_Q6_K;
      return true;
    default:
      return false;
  }
}

static bool is_block_type(uint32_t type) {
  return type != ATLAS_GGUF_TYPE_F32 && type != ATLAS_GGUF_TYPE_F16 &&
         type != ATLAS_GGUF_TYPE_BF16;
}

// A layer's matrix ("blk.N.<...>.weight" of two dimensions): what the quant
// kernels run. Anything else quantized (the token embedding, the output
// projection) is read in F32.
static bool is_layer_matrix(const atlas_gguf_tensor *t) {
  return strncmp(t->name, "blk.", 4) == 0 && t->n_dims == 2;
}

static uint32_t layout_of(uint32_t type) {
  switch (type) {
    case ATLAS_GGUF_TYPE_Q8_0:
      return ATLAS_QUANT_LAYOUT_GGUF_Q8_0;
    case ATLAS_GGUF_TYPE_Q4_0:
      return ATLAS_QUANT_LAYOUT_GGUF_Q4_0;
    case ATLAS_GGUF_TYPE_Q4_K:
      return ATLAS_QUANT_LAYOUT_GGUF_Q4_K;
    case ATLAS_GGUF_TYPE_Q5_K:
      return ATLAS_QUANT_LAYOUT_GGUF_Q5_K;
    default:
      return ATLAS_QUANT_LAYOUT_GGUF_Q6_K;
  }
}

static atlas_status plan_tensor(const char *arch, const atlas_gguf_tensor *t,
                                uint64_t head_dim, uint64_t *owned_bytes,
                                plan *out) {
  memset(out, 0, sizeof(*out));
  if (!atlas_gguf_type_supported(t->type) || !dtype_of(t->type, &out->dtype)) {
    return refuse_type(t);
  }
  out->bytes = t->bytes;
  const bool permuted = atlas_gguf_is_permuted(arch, t->name) != 0;
  if (permuted && t->n_dims == 1 && is_block_type(t->type)) {
    // A bias of blocks: its elements cannot be moved one by one.
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "GGUF tensor \"%s\" is a %s bias whose elements llama.cpp's "
        "converter reordered: Atlas reads such a bias in F32, F16 or BF16",
        atlas_quote(t->name, q, sizeof(q)), atlas_gguf_type_name(t->type));
  }
  if (is_block_type(t->type) && !is_layer_matrix(t)) {
    out->how = DEQUANTIZED;
    out->dtype = ATLAS_DTYPE_F32;
    out->bytes = t->elements * 4;
  } else if (permuted) {
    // A head's rows (a bias's elements) come in pairs: whole heads only.
    const uint64_t rows = t->n_dims == 1 ? t->ne[0] : t->elements / t->ne[0];
    if (head_dim < 2 || head_dim % 2 != 0 || rows % head_dim != 0) {
      char q[ATLAS_QUOTE_BYTES];
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "GGUF tensor \"%s\": %llu rows are not whole heads of %llu",
          atlas_quote(t->name, q, sizeof(q)), (unsigned long long)rows,
          (unsigned long long)head_dim);
    }
    out->how = PERMUTED;
  }
  if (out->how != FROM_FILE) {
    out->at = *owned_bytes;
    *owned_bytes += (out->bytes + 63) / 64 * 64;
  }
  return ATLAS_OK;
}

// Fills `dst` with tensor t's view: rows back in order, or F32 values.
static atlas_status fill_tensor(const atlas_gguf *g, const atlas_gguf_tensor *t,
                                const plan *p, uint64_t head_dim,
                                uint8_t *dst) {
  if (dst == NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "GGUF tensor \"%s\": no room planned", t->name);
  }
  // A permuted bias (F32/F16/BF16) moves element by element; anything
  // else by rows of ne[0] elements (whole blocks).
  const bool by_element = p->how == PERMUTED && t->n_dims == 1;
  const uint64_t rows = by_element ? t->ne[0] : t->elements / t->ne[0];
  const uint64_t row_bytes = t->bytes / rows;
  if (p->how == PERMUTED) {
    for (uint64_t r = 0; r < rows; ++r) {
      uint64_t src = atlas_gguf_qk_source_row(r, head_dim);
      ATLAS_RETURN_IF_ERROR(atlas_gguf_read(g, t, src * row_bytes, row_bytes,
                                            dst + r * row_bytes));
    }
    return ATLAS_OK;
  }
  // DEQUANTIZED: each row of blocks, read and expanded as ggml does.
  uint32_t block = 0, block_bytes = 0;
  (void)atlas_gguf_type_block(t->type, &block, &block_bytes);
  const uint64_t cols = t->ne[0];
  uint8_t *scratch = malloc((size_t)row_bytes + 1);
  if (scratch == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "GGUF tensor \"%s\": out of host memory", t->name);
  }
  atlas_status status = ATLAS_OK;
  const uint32_t layout = layout_of(t->type);
  float *out = (float *)(void *)dst;
  for (uint64_t r = 0; status == ATLAS_OK && r < rows; ++r) {
    status = atlas_gguf_read(g, t, r * row_bytes, row_bytes, scratch);
    for (uint64_t k = 0; status == ATLAS_OK && k < cols; ++k) {
      out[r * cols + k] = atlas_qd_gguf(
          layout, scratch + (k / block) * block_bytes, (uint32_t)(k % block));
    }
  }
  free(scratch);
  return status;
}

static int compare_by_name(const void *a, const void *b) {
  const atlas_safetensors_tensor *const *x = a;
  const atlas_safetensors_tensor *const *y = b;
  return strcmp((*x)->name, (*y)->name);
}

// The view's file object: names, shapes and where each tensor's bytes are.
static atlas_status build_view(const atlas_gguf *g, const char *path,
                               const char *arch, atlas_safetensors **out) {
  *out = NULL;
  uint64_t head_dim = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_head_dim(g, arch, &head_dim));
  const size_t n = atlas_gguf_tensor_count(g);
  atlas_safetensors *f = calloc(1, sizeof(*f));
  plan *plans = calloc(n ? n : 1, sizeof(*plans));
  if (f == NULL || plans == NULL) {
    free(f);
    free(plans);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory", path);
  }
  f->fd = -1;
  f->flags = ATLAS_SAFETENSORS_QUANTIZED | ATLAS_SAFETENSORS_VIEW;
  f->path = strdup(path);
  f->tensors = calloc(n ? n : 1, sizeof(*f->tensors));
  f->by_name = calloc(n ? n : 1, sizeof(const atlas_safetensors_tensor *));
  f->digests = calloc(n ? n : 1, sizeof(*f->digests));
  f->digested = calloc(n ? n : 1, 1);
  atlas_status status = ATLAS_OK;
  if (f->path == NULL || f->tensors == NULL || f->by_name == NULL ||
      f->digests == NULL || f->digested == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "%s: out of host memory", path);
  }
  uint64_t owned_bytes = 0;
  for (size_t i = 0; status == ATLAS_OK && i < n; ++i) {
    status = plan_tensor(arch, atlas_gguf_tensor_at(g, i), head_dim,
                         &owned_bytes, &plans[i]);
  }
  if (status == ATLAS_OK && owned_bytes > 0) {
    f->owned = owned_bytes <= SIZE_MAX ? malloc((size_t)owned_bytes) : NULL;
    f->owned_bytes = owned_bytes;
    if (f->owned == NULL) {
      status = atlas_status_make(
          ATLAS_STATUS_OUT_OF_MEMORY,
          "%s: no host memory for the %llu bytes of reordered and "
          "dequantized tensors",
          path, (unsigned long long)owned_bytes);
    }
  }
  for (size_t i = 0; status == ATLAS_OK && i < n; ++i) {
    const atlas_gguf_tensor *t = atlas_gguf_tensor_at(g, i);
    // Llama 3's rope factors are read into the config (gguf_model.h).
    if (strcmp(t->name, ROPE_FREQS) == 0) continue;
    atlas_safetensors_tensor *v = &f->tensors[f->count];
    char hf[256];
    status = atlas_gguf_hf_name(t->name, hf, sizeof(hf));
    if (status != ATLAS_OK) break;
    v->name = strdup(hf);
    if (v->name == NULL) {
      status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "%s: out of host memory", path);
      break;
    }
    f->by_name[f->count++] = v;
    v->dtype = plans[i].dtype;
    v->rank = (int)t->n_dims;
    for (uint32_t d = 0; d < t->n_dims; ++d) {
      v->shape[d] = (int64_t)t->ne[t->n_dims - 1 - d];  // ne[0] innermost
    }
    v->elements = t->elements;
    v->file_offset = t->file_offset;
    v->bytes = plans[i].bytes;
    v->file = f;
    if (plans[i].how != FROM_FILE) {
      uint8_t *dst = (uint8_t *)f->owned + plans[i].at;
      status = fill_tensor(g, t, &plans[i], head_dim, dst);
      v->data = dst;
    }
    f->data_bytes += v->bytes;
  }
  free(plans);
  if (status == ATLAS_OK) {
    qsort(f->by_name, f->count, sizeof(const atlas_safetensors_tensor *),
          compare_by_name);
    for (size_t i = 1; status == ATLAS_OK && i < f->count; ++i) {
      if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0) {
        status = atlas_status_make(
            ATLAS_STATUS_DATA_LOSS,
            "%s: two GGUF tensors are both \"%s\" in transformers terms", path,
            f->by_name[i]->name);
      }
    }
  }
  if (status == ATLAS_OK) {
    // The view's own descriptor: the checkpoint outlives the GGUF object.
    f->identity = g->identity;
    f->size = g->file_size;
    f->data_start = g->data_offset;
    // A file parsed from a buffer: its tensors are read where they lie in
    // it (the caller keeps it alive); else from the view's own descriptor.
    f->base = g->fd < 0 ? g->buf : NULL;
    for (size_t i = 0; g->fd < 0 && i < f->count; ++i) {
      if (f->tensors[i].data == NULL) {
        f->tensors[i].data = g->buf + f->tensors[i].file_offset;
      }
    }
    f->fd = g->fd < 0 ? -1 : fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
    if (g->fd >= 0 && f->fd < 0) {
      status = atlas_status_make(ATLAS_STATUS_IO,
                                 "%s: cannot duplicate its descriptor", path);
    }
  }
  if (status != ATLAS_OK) {
    atlas_safetensors_close(f);
    return status;
  }
  *out = f;
  return ATLAS_OK;
}

// Whether any layer matrix is stored in blocks: the config then says
// quant_method "gguf".
static bool has_quantized_layers(const atlas_gguf *g) {
  for (size_t i = 0; i < atlas_gguf_tensor_count(g); ++i) {
    const atlas_gguf_tensor *t = atlas_gguf_tensor_at(g, i);
    if (is_block_type(t->type) && is_layer_matrix(t)) return true;
  }
  return false;
}

static atlas_status config_of(const atlas_gguf *g, const char *path,
                              char **out) {
  *out = NULL;
  char *json = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_config_json(g, &json));
  if (!has_quantized_layers(g)) {
    *out = json;
    return ATLAS_OK;
  }
  json_t *root = json_loads(json, 0, NULL);
  free(json);
  json_t *qc = json_pack("{s:s}", "quant_method", "gguf");
  char *text = NULL;
  if (root != NULL && qc != NULL &&
      json_object_set_new(root, "quantization_config", qc) == 0) {
    qc = NULL;
    text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
  }
  json_decref(qc);
  json_decref(root);
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: out of host memory writing config.json",
                             path);
  }
  *out = text;
  return ATLAS_OK;
}

// The checkpoint of a parsed file (taken: closed here, success or not).
static atlas_status checkpoint_of(atlas_gguf *g, const char *path,
                                  atlas_checkpoint **out_ck,
                                  char **out_config_json) {
  char *config = NULL;
  atlas_status status = config_of(g, path, &config);
  const char *arch_s = NULL;
  size_t arch_n = 0;
  char arch[16] = {0};
  if (status == ATLAS_OK) {
    status = atlas_gguf_get_string(g, "general.architecture", &arch_s, &arch_n);
  }
  // config_of refused every architecture but a few short names.
  if (status == ATLAS_OK) memcpy(arch, arch_s, arch_n < 15 ? arch_n : 15);
  atlas_safetensors *view = NULL;
  if (status == ATLAS_OK) status = build_view(g, path, arch, &view);
  atlas_gguf_close(g);
  if (status == ATLAS_OK) {
    status = atlas_checkpoint_adopt_file(
        path, view, ATLAS_SAFETENSORS_QUANTIZED | ATLAS_SAFETENSORS_VIEW,
        out_ck);
  }
  if (status != ATLAS_OK || out_config_json == NULL) {
    free(config);
  } else {
    *out_config_json = config;
  }
  return status;
}

atlas_status atlas_gguf_checkpoint_open(const char *path,
                                        atlas_checkpoint **out_ck,
                                        char **out_config_json) {
  *out_ck = NULL;
  if (out_config_json != NULL) *out_config_json = NULL;
  atlas_gguf *g = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_open(path, &g));
  return checkpoint_of(g, path, out_ck, out_config_json);
}

atlas_status atlas_gguf_checkpoint_open_buffer(const void *data, size_t size,
                                               const char *name,
                                               atlas_checkpoint **out_ck,
                                               char **out_config_json) {
  *out_ck = NULL;
  if (out_config_json != NULL) *out_config_json = NULL;
  atlas_gguf *g = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_parse_buffer(data, size, name, &g));
  return checkpoint_of(g, name, out_ck, out_config_json);
}
