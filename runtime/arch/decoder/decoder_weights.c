// Llama tensor names and shapes, and the checkpoint-against-config check.
#include "atlas/runtime/arch/decoder/decoder_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_moe_weights.h"

const char *const atlas_decoder_llama_names[ATLAS_DECODER_WEIGHT_COUNT] = {
    [ATLAS_DECODER_EMBED_TOKENS] = ATLAS_DECODER_EMBED_TOKENS_NAME,
    [ATLAS_DECODER_FINAL_NORM] = ATLAS_DECODER_FINAL_NORM_NAME,
    [ATLAS_DECODER_LM_HEAD] = ATLAS_DECODER_LM_HEAD_NAME,
    [ATLAS_DECODER_INPUT_NORM] = "input_layernorm.weight",
    [ATLAS_DECODER_Q_PROJ] = "self_attn.q_proj.weight",
    [ATLAS_DECODER_K_PROJ] = "self_attn.k_proj.weight",
    [ATLAS_DECODER_V_PROJ] = "self_attn.v_proj.weight",
    [ATLAS_DECODER_O_PROJ] = "self_attn.o_proj.weight",
    [ATLAS_DECODER_FFN_NORM] = "post_attention_layernorm.weight",
    [ATLAS_DECODER_GATE_PROJ] = "mlp.gate_proj.weight",
    [ATLAS_DECODER_UP_PROJ] = "mlp.up_proj.weight",
    [ATLAS_DECODER_DOWN_PROJ] = "mlp.down_proj.weight",
    [ATLAS_DECODER_Q_BIAS] = "self_attn.q_proj.bias",
    [ATLAS_DECODER_K_BIAS] = "self_attn.k_proj.bias",
    [ATLAS_DECODER_V_BIAS] = "self_attn.v_proj.bias",
    [ATLAS_DECODER_O_BIAS] = "self_attn.o_proj.bias",
    [ATLAS_DECODER_GATE_BIAS] = "mlp.gate_proj.bias",
    [ATLAS_DECODER_UP_BIAS] = "mlp.up_proj.bias",
    [ATLAS_DECODER_DOWN_BIAS] = "mlp.down_proj.bias",
    [ATLAS_DECODER_Q_NORM] = "self_attn.q_norm.weight",
    [ATLAS_DECODER_K_NORM] = "self_attn.k_norm.weight",
    [ATLAS_DECODER_QKV_PROJ] = NULL,
    [ATLAS_DECODER_GATE_UP_PROJ] = NULL,
    [ATLAS_DECODER_ATTN_OUT_NORM] = NULL,
    [ATLAS_DECODER_FFN_OUT_NORM] = NULL,
};

static const char *const *names_of(const atlas_decoder_config *c) {
  return c != NULL && c->family != NULL && c->family->tensor_names != NULL
             ? c->family->tensor_names
             : atlas_decoder_llama_names;
}

bool atlas_decoder_weight_used(const atlas_decoder_config *c,
                               atlas_decoder_weight weight) {
  if ((int)weight < 0 || weight >= ATLAS_DECODER_WEIGHT_COUNT ||
      names_of(c)[weight] == NULL) {
    return false;
  }
  switch (weight) {
    case ATLAS_DECODER_Q_PROJ:
    case ATLAS_DECODER_K_PROJ:
    case ATLAS_DECODER_V_PROJ:
      return !c->fused_qkv;
    case ATLAS_DECODER_QKV_PROJ:
      return c->fused_qkv;
    case ATLAS_DECODER_GATE_PROJ:
    case ATLAS_DECODER_UP_PROJ:
      return !c->fused_gate_up;
    case ATLAS_DECODER_GATE_UP_PROJ:
      return c->fused_gate_up;
    case ATLAS_DECODER_ATTN_OUT_NORM:
    case ATLAS_DECODER_FFN_OUT_NORM:
      return c->sandwich;
    case ATLAS_DECODER_LM_HEAD:
      return !c->tie_word_embeddings;
    case ATLAS_DECODER_Q_BIAS:
    case ATLAS_DECODER_K_BIAS:
    case ATLAS_DECODER_V_BIAS:
      return c->qkv_bias;
    case ATLAS_DECODER_O_BIAS:
      return c->o_bias;
    case ATLAS_DECODER_GATE_BIAS:
    case ATLAS_DECODER_UP_BIAS:
    case ATLAS_DECODER_DOWN_BIAS:
      return c->mlp_bias;
    case ATLAS_DECODER_Q_NORM:
    case ATLAS_DECODER_K_NORM:
      return c->qk_norm;
    case ATLAS_DECODER_WEIGHT_COUNT:
      return false;
    default:
      return true;
  }
}

bool atlas_decoder_weight_in_layer(const atlas_decoder_config *c,
                                   atlas_decoder_weight weight, int64_t layer) {
  if (!atlas_decoder_weight_used(c, weight)) return false;
  if (!atlas_decoder_layer_moe(c, layer)) return true;
  switch (weight) {  // the dense MLP's, which a MoE layer has not
    case ATLAS_DECODER_GATE_PROJ:
    case ATLAS_DECODER_UP_PROJ:
    case ATLAS_DECODER_DOWN_PROJ:
    case ATLAS_DECODER_GATE_UP_PROJ:
    case ATLAS_DECODER_GATE_BIAS:
    case ATLAS_DECODER_UP_BIAS:
    case ATLAS_DECODER_DOWN_BIAS:
      return false;
    default:
      return true;
  }
}

const char *atlas_decoder_weight_suffix(const atlas_decoder_config *c,
                                        atlas_decoder_weight weight) {
  if ((int)weight < 0 || weight >= ATLAS_DECODER_WEIGHT_COUNT) return NULL;
  return names_of(c)[weight];
}

atlas_status atlas_decoder_tensor_name(char *buf, size_t size, int layer,
                                       const char *suffix) {
  if (buf == NULL || suffix == NULL || layer < 0) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "atlas_decoder_tensor_name: bad argument (layer %d)", layer);
  }
  int n = snprintf(buf, size, "model.layers.%d.%s", layer, suffix);
  if (n < 0 || (size_t)n >= size) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "atlas_decoder_tensor_name: %zu bytes is too small "
        "for the name of layer %d's %s",
        size, layer, suffix);
  }
  return ATLAS_OK;
}

atlas_status atlas_decoder_weight_name(const atlas_decoder_config *config,
                                       atlas_decoder_weight weight, int layer,
                                       char *buf, size_t size) {
  const char *suffix = atlas_decoder_weight_suffix(config, weight);
  if (suffix == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_decoder_weight_name: no weight %d",
                             (int)weight);
  }
  if (atlas_decoder_weight_is_per_layer(weight)) {
    return atlas_decoder_tensor_name(buf, size, layer, suffix);
  }
  int n = snprintf(buf, size, "%s", suffix);
  if (n < 0 || (size_t)n >= size) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "atlas_decoder_weight_name: %zu bytes is too small "
        "for %s",
        size, suffix);
  }
  return ATLAS_OK;
}

bool atlas_decoder_weight_quantized(const atlas_decoder_config *c,
                                    atlas_decoder_weight weight) {
  if (c == NULL || c->quant.method == ATLAS_QUANT_NONE) return false;
  switch (weight) {
    case ATLAS_DECODER_Q_PROJ:
    case ATLAS_DECODER_K_PROJ:
    case ATLAS_DECODER_V_PROJ:
    case ATLAS_DECODER_O_PROJ:
    case ATLAS_DECODER_GATE_PROJ:
    case ATLAS_DECODER_UP_PROJ:
    case ATLAS_DECODER_DOWN_PROJ:
      return true;
    default:
      return false;
  }
}

atlas_status atlas_decoder_quant_find(const atlas_decoder_config *c,
                                      const atlas_checkpoint *ck,
                                      atlas_decoder_weight weight, int layer,
                                      atlas_quant_matrix *out) {
  char name[256];
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_weight_name(c, weight, layer, name, sizeof(name)));
  // The module: the weight's name without ".weight".
  size_t n = strlen(name);
  if (n < 7 || strcmp(name + n - 7, ".weight") != 0) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "%s: a quantized projection's name must end in "
                             "\".weight\"",
                             name);
  }
  name[n - 7] = '\0';
  int64_t shape[2];
  int rank = 0;
  atlas_decoder_weight_shape(c, weight, shape, &rank);
  return atlas_status_annotate(
      atlas_quant_matrix_find(&c->quant, ck, name, (uint32_t)shape[0],
                              (uint32_t)shape[1], out),
      "%s", atlas_checkpoint_source(ck));
}

void atlas_decoder_weight_shape(const atlas_decoder_config *c,
                                atlas_decoder_weight weight, int64_t shape[2],
                                int *out_rank) {
  // Each dimension is at most ATLAS_DECODER_MAX_DIM, so these products fit.
  int64_t q = c->num_attention_heads * c->head_dim;
  int64_t kv = c->num_key_value_heads * c->head_dim;
  int64_t rows = 0;
  int64_t cols = 0;
  switch (weight) {
    case ATLAS_DECODER_EMBED_TOKENS:
    case ATLAS_DECODER_LM_HEAD:
      rows = c->vocab_size;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_FINAL_NORM:
    case ATLAS_DECODER_INPUT_NORM:
    case ATLAS_DECODER_FFN_NORM:
    case ATLAS_DECODER_ATTN_OUT_NORM:
    case ATLAS_DECODER_FFN_OUT_NORM:
      shape[0] = c->hidden_size;
      shape[1] = 0;
      *out_rank = 1;
      return;
    case ATLAS_DECODER_Q_PROJ:
      rows = q;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_K_PROJ:
    case ATLAS_DECODER_V_PROJ:
      rows = kv;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_O_PROJ:
      rows = c->hidden_size;
      cols = q;
      break;
    case ATLAS_DECODER_GATE_PROJ:
    case ATLAS_DECODER_UP_PROJ:
      rows = c->intermediate_size;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_DOWN_PROJ:
      rows = c->hidden_size;
      cols = c->intermediate_size;
      break;
    case ATLAS_DECODER_QKV_PROJ:
      rows = q + 2 * kv;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_GATE_UP_PROJ:
      rows = 2 * c->intermediate_size;
      cols = c->hidden_size;
      break;
    case ATLAS_DECODER_Q_BIAS:
      rows = q;
      break;
    case ATLAS_DECODER_K_BIAS:
    case ATLAS_DECODER_V_BIAS:
      rows = kv;
      break;
    case ATLAS_DECODER_O_BIAS:
    case ATLAS_DECODER_DOWN_BIAS:
      rows = c->hidden_size;
      break;
    case ATLAS_DECODER_GATE_BIAS:
    case ATLAS_DECODER_UP_BIAS:
      rows = c->intermediate_size;
      break;
    case ATLAS_DECODER_Q_NORM:
    case ATLAS_DECODER_K_NORM:
      rows = c->head_dim;
      break;
    case ATLAS_DECODER_WEIGHT_COUNT:
      break;
  }
  if (cols == 0) {  // a vector
    shape[0] = rows;
    shape[1] = 0;
    *out_rank = 1;
    return;
  }
  shape[0] = rows;
  shape[1] = cols;
  *out_rank = 2;
}

static bool same_shape(const atlas_safetensors_tensor *t, const int64_t *shape,
                       int rank) {
  if (t->rank != rank) return false;
  for (int i = 0; i < rank; ++i) {
    if (t->shape[i] != shape[i]) return false;
  }
  return true;
}

atlas_decoder_weight atlas_decoder_embedding_weight(
    const atlas_decoder_config *config, const atlas_checkpoint *checkpoint) {
  atlas_checkpoint_tensor t;
  if (config->tie_word_embeddings &&
      !atlas_checkpoint_lookup(checkpoint, ATLAS_DECODER_EMBED_TOKENS_NAME,
                               &t) &&
      atlas_checkpoint_lookup(checkpoint, ATLAS_DECODER_LM_HEAD_NAME, &t)) {
    return ATLAS_DECODER_LM_HEAD;
  }
  return ATLAS_DECODER_EMBED_TOKENS;
}

// Finds one expected tensor and checks its shape; adds its bytes.
static atlas_status check_one(const atlas_decoder_config *config,
                              const atlas_checkpoint *ck,
                              atlas_decoder_weight weight, int layer,
                              bool optional, bool *out_found, uint64_t *bytes) {
  if (atlas_decoder_weight_quantized(config, weight)) {
    atlas_quant_matrix m;
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_quant_find(config, ck, weight, layer, &m));
    if (out_found != NULL) *out_found = true;
    *bytes += m.bytes;
    return ATLAS_OK;
  }
  char name[256];
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_weight_name(config, weight, layer, name, sizeof(name)));
  int64_t shape[2];
  int rank = 0;
  atlas_decoder_weight_shape(config, weight, shape, &rank);
  char want[64];
  atlas_shape_format(shape, rank, want, sizeof(want));
  atlas_checkpoint_tensor view;
  if (!atlas_checkpoint_lookup(ck, name, &view)) {
    if (optional) {
      if (out_found != NULL) *out_found = false;
      return ATLAS_OK;
    }
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "%s: missing tensor \"%s\" (expected shape %s "
                             "from the config)",
                             atlas_checkpoint_source(ck), name, want);
  }
  if (!same_shape(view.tensor, shape, rank)) {
    char got[256];
    atlas_shape_format(view.tensor->shape, view.tensor->rank, got, sizeof(got));
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: tensor \"%s\" has shape %s, but the config "
                             "implies %s (wrong shape, or a config that does "
                             "not match this checkpoint)",
                             view.path, name, got, want);
  }
  if (out_found != NULL) *out_found = true;
  *bytes += view.tensor->bytes;
  return ATLAS_OK;
}

// Tensors some exporters write that carry no weights of their own; each is
// skipped by name, with the reason.
static bool ignored(const atlas_decoder_config *config, const char *name) {
  // Older transformers saved RoPE's inv_freq buffer with the weights; it is
  // a function of the config, which the runtime computes itself.
  const char *tail = strstr(name, ".rotary_emb.inv_freq");
  if (tail != NULL && tail[strlen(".rotary_emb.inv_freq")] == '\0') return true;
  // A tied model may still carry lm_head.weight; an equal copy is never
  // read (check_tied_copy refuses a different one).
  if (config->tie_word_embeddings &&
      strcmp(name, ATLAS_DECODER_LM_HEAD_NAME) == 0) {
    return true;
  }
  return false;
}

// Whether `tail` ("self_attn.q_proj.qweight") is one of the tensors of the
// quantized projection `suffix` ("self_attn.q_proj.weight") that config's
// format stores (what atlas_quant_matrix_find reads, and compressed-tensors'
// weight_shape, which it checks).
static bool quant_tensor_of(const atlas_decoder_config *c, const char *suffix,
                            const char *tail) {
  size_t n = strlen(suffix);
  if (n < 7 || strncmp(tail, suffix, n - 6) != 0) return false;
  const char *part = tail + (n - 6);  // past "<module>."
  static const char *const kFp8[] = {"weight", "weight_scale_inv", NULL};
  static const char *const kCtFloat[] = {"weight", "weight_scale", NULL};
  static const char *const kCtPacked[] = {"weight_packed",     "weight_scale",
                                          "weight_zero_point", "weight_g_idx",
                                          "weight_shape",      NULL};
  static const char *const kGptq[] = {"qweight", "qzeros", "scales", "g_idx",
                                      NULL};
  static const char *const kAwq[] = {"qweight", "qzeros", "scales", NULL};
  static const char *const kGguf[] = {"weight", NULL};
  const char *const *parts = NULL;
  switch (c->quant.method) {
    case ATLAS_QUANT_FP8:
      parts = kFp8;
      break;
    case ATLAS_QUANT_COMPRESSED_TENSORS:
      parts = c->quant.layout == ATLAS_QUANT_LAYOUT_FP8 ? kCtFloat : kCtPacked;
      break;
    case ATLAS_QUANT_GPTQ:
      parts = kGptq;
      break;
    case ATLAS_QUANT_AWQ:
      parts = kAwq;
      break;
    case ATLAS_QUANT_GGUF:
      parts = kGguf;
      break;
    case ATLAS_QUANT_NONE:
      return false;
  }
  for (size_t i = 0; parts[i] != NULL; ++i) {
    if (strcmp(part, parts[i]) == 0) return true;
  }
  return false;
}

// Whether the model reads `name`.
static bool consumed(const atlas_decoder_config *c, const atlas_checkpoint *ck,
                     const char *name) {
  for (int w = 0; w < ATLAS_DECODER_FIRST_LAYER_WEIGHT; ++w) {
    if (atlas_decoder_weight_used(c, (atlas_decoder_weight)w) &&
        strcmp(name, names_of(c)[w]) == 0) {
      return true;
    }
  }
  static const char kPrefix[] = "model.layers.";
  if (strncmp(name, kPrefix, sizeof(kPrefix) - 1) != 0) return false;
  const char *p = name + sizeof(kPrefix) - 1;
  int64_t layer = 0;
  if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != '.')) return false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    layer = layer * 10 + (*p - '0');
    if (layer >= c->num_hidden_layers) return false;
  }
  if (*p++ != '.') return false;
  if (atlas_decoder_moe_consumed(c, ck, layer, p)) return true;
  for (int w = ATLAS_DECODER_FIRST_LAYER_WEIGHT; w < ATLAS_DECODER_WEIGHT_COUNT;
       ++w) {
    if (!atlas_decoder_weight_in_layer(c, (atlas_decoder_weight)w, layer)) {
      continue;
    }
    if (atlas_decoder_weight_quantized(c, (atlas_decoder_weight)w)) {
      if (quant_tensor_of(c, names_of(c)[w], p)) return true;
    } else if (strcmp(p, names_of(c)[w]) == 0) {
      return true;
    }
  }
  return false;
}

// N of "model.layers.N.<anything>", or -1 (a name of another shape, or a
// number too long to be a layer).
static int64_t layer_of(const char *name) {
  static const char kPrefix[] = "model.layers.";
  if (strncmp(name, kPrefix, sizeof(kPrefix) - 1) != 0) return -1;
  const char *p = name + sizeof(kPrefix) - 1;
  int64_t layer = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (++digits > 12) return -1;
    layer = layer * 10 + (*p - '0');
  }
  return digits > 0 && *p == '.' ? layer : -1;
}

// Every tensor of the checkpoint must be read by the model.
static atlas_status check_leftovers(const atlas_decoder_config *config,
                                    const atlas_checkpoint *ck) {
  size_t n = atlas_checkpoint_tensor_count(ck), leftovers = 0, beyond = 0;
  const char *first = NULL, *first_beyond = NULL;
  int64_t top_layer = -1;
  for (size_t i = 0; i < n; ++i) {
    atlas_checkpoint_tensor t;
    if (!atlas_checkpoint_tensor_at(ck, i, &t)) break;
    const char *name = t.tensor->name;
    if (consumed(config, ck, name) || ignored(config, name)) continue;
    if (first == NULL) first = name;
    ++leftovers;
    int64_t layer = layer_of(name);
    if (layer >= config->num_hidden_layers) {
      if (first_beyond == NULL) first_beyond = name;
      if (layer > top_layer) top_layer = layer;
      ++beyond;
    }
  }
  if (leftovers == 0) return ATLAS_OK;
  if (beyond > 0) {
    // Layers past the config's count would be dropped without a word.
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "%s: tensor %s is not used by this model: its layer %lld is at or "
        "beyond config.json num_hidden_layers = %lld (layers 0..%lld); the "
        "checkpoint has %zu tensor(s) of layers up to %lld; a checkpoint "
        "whose layers would be ignored is refused",
        atlas_checkpoint_source(ck), first_beyond,
        (long long)layer_of(first_beyond), (long long)config->num_hidden_layers,
        (long long)config->num_hidden_layers - 1, beyond, (long long)top_layer);
  }
  char more[48] = "";
  if (leftovers > 1)
    snprintf(more, sizeof(more), " (and %zu more)", leftovers - 1);
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "%s: tensor %s%s is not used by this model (config.json: %lld layers, "
      "attention bias %s, mlp bias %s, q/k norm %s, %s embeddings); a "
      "checkpoint whose weights would be ignored is refused",
      atlas_checkpoint_source(ck), first, more,
      (long long)config->num_hidden_layers, config->qkv_bias ? "on" : "off",
      config->mlp_bias ? "on" : "off", config->qk_norm ? "on" : "off",
      config->tie_word_embeddings ? "tied" : "untied");
}

// Whether two tensors hold the same bytes (read in pieces; no copy is kept).
static atlas_status same_bytes(const atlas_safetensors_tensor *a,
                               const atlas_safetensors_tensor *b, bool *out) {
  *out = a->dtype == b->dtype && a->bytes == b->bytes &&
         same_shape(a, b->shape, b->rank);
  if (!*out) return ATLAS_OK;
  enum { kPiece = 1 << 20 };
  char *buf = malloc(2 * (size_t)kPiece);
  if (buf == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory comparing %s with %s", a->name,
                             b->name);
  }
  atlas_status status = ATLAS_OK;
  for (uint64_t off = 0; status == ATLAS_OK && *out && off < a->bytes;
       off += kPiece) {
    uint64_t n = a->bytes - off < kPiece ? a->bytes - off : kPiece;
    status = atlas_safetensors_read(a, off, n, buf);
    if (status == ATLAS_OK)
      status = atlas_safetensors_read(b, off, n, buf + kPiece);
    if (status == ATLAS_OK) *out = memcmp(buf, buf + kPiece, (size_t)n) == 0;
  }
  free(buf);
  return status;
}

// A tied config whose checkpoint still has lm_head.weight: transformers 5
// does not tie tensors the checkpoint holds both of, so it uses that copy;
// the runtime reads the embedding. An equal copy changes nothing and is
// skipped; a different one is refused.
static atlas_status check_tied_copy(const atlas_decoder_config *config,
                                    const atlas_checkpoint *ck) {
  atlas_checkpoint_tensor head, embed;
  if (!config->tie_word_embeddings ||
      !atlas_checkpoint_lookup(ck, ATLAS_DECODER_LM_HEAD_NAME, &head) ||
      !atlas_checkpoint_lookup(ck, ATLAS_DECODER_EMBED_TOKENS_NAME, &embed)) {
    return ATLAS_OK;
  }
  bool same = false;
  ATLAS_RETURN_IF_ERROR(same_bytes(head.tensor, embed.tensor, &same));
  if (same) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_UNIMPLEMENTED,
      "%s: config.json \"tie_word_embeddings\" is true, but tensor "
      "\"%s\" differs from \"%s\"; transformers then uses %s as the "
      "output head (it does not tie them) and the runtime would use the "
      "embedding: set \"tie_word_embeddings\" to false to use it",
      head.path, ATLAS_DECODER_LM_HEAD_NAME, ATLAS_DECODER_EMBED_TOKENS_NAME,
      ATLAS_DECODER_LM_HEAD_NAME);
}

static atlas_status check_all(const atlas_decoder_config *config,
                              const atlas_checkpoint *ck,
                              bool *out_lm_head_is_embedding,
                              uint64_t *out_bytes) {
  uint64_t bytes = 0;
  for (int w = 0; w < ATLAS_DECODER_FIRST_LAYER_WEIGHT; ++w) {
    if (!atlas_decoder_weight_used(config, (atlas_decoder_weight)w)) continue;
    atlas_decoder_weight which = (atlas_decoder_weight)w;
    // A tied checkpoint may hold its embedding as lm_head.weight alone.
    if (which == ATLAS_DECODER_EMBED_TOKENS) {
      which = atlas_decoder_embedding_weight(config, ck);
    }
    ATLAS_RETURN_IF_ERROR(check_one(config, ck, which, 0, false, NULL, &bytes));
  }
  for (int64_t layer = 0; layer < config->num_hidden_layers; ++layer) {
    for (int w = ATLAS_DECODER_FIRST_LAYER_WEIGHT;
         w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
      if (!atlas_decoder_weight_in_layer(config, (atlas_decoder_weight)w,
                                         layer)) {
        continue;
      }
      ATLAS_RETURN_IF_ERROR(check_one(config, ck, (atlas_decoder_weight)w,
                                      (int)layer, false, NULL, &bytes));
    }
    ATLAS_RETURN_IF_ERROR(atlas_decoder_moe_check(config, ck, layer, &bytes));
  }
  ATLAS_RETURN_IF_ERROR(check_leftovers(config, ck));
  if (out_lm_head_is_embedding != NULL) {
    *out_lm_head_is_embedding = config->tie_word_embeddings;
  }
  if (out_bytes != NULL) *out_bytes = bytes;
  return ATLAS_OK;
}

atlas_status atlas_decoder_check_checkpoint(const atlas_decoder_config *config,
                                            const atlas_checkpoint *checkpoint,
                                            bool *out_lm_head_is_embedding) {
  ATLAS_RETURN_IF_ERROR(
      check_all(config, checkpoint, out_lm_head_is_embedding, NULL));
  return check_tied_copy(config, checkpoint);
}

atlas_status atlas_decoder_weight_bytes(const atlas_decoder_config *config,
                                        const atlas_checkpoint *checkpoint,
                                        uint64_t *out_bytes) {
  return check_all(config, checkpoint, NULL, out_bytes);
}
