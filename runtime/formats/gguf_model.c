// A GGUF file's model in transformers terms (gguf_model.h).
#include "atlas/runtime/formats/gguf_model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/file_read.h"

typedef struct name_pair {
  const char *gguf, *hf;
} name_pair;

// Global tensors, then the per-layer suffixes after "blk.N." and
// "model.layers.N.".
static const name_pair kGlobal[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};
static const name_pair kLayer[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate.bias", "mlp.gate_proj.bias"},
    {"ffn_up.bias", "mlp.up_proj.bias"},
    {"ffn_down.bias", "mlp.down_proj.bias"},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static atlas_status no_name(const char *name) {
  char q[ATLAS_QUOTE_BYTES];
  return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                           "GGUF tensor \"%s\" has no transformers name",
                           atlas_quote_n(name, strlen(name), q, sizeof(q)));
}

atlas_status atlas_gguf_hf_name(const char *gguf_name, char *buf, size_t size) {
  for (size_t i = 0; i < COUNT(kGlobal); ++i) {
    if (strcmp(gguf_name, kGlobal[i].gguf) == 0) {
      int n = snprintf(buf, size, "%s", kGlobal[i].hf);
      return n >= 0 && (size_t)n < size ? ATLAS_OK : no_name(gguf_name);
    }
  }
  // "blk." then decimal digits then ".".
  if (strncmp(gguf_name, "blk.", 4) != 0) return no_name(gguf_name);
  const char *p = gguf_name + 4;
  unsigned long layer = 0;
  size_t digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 9; ++p, ++digits) {
    layer = layer * 10 + (unsigned long)(*p - '0');
  }
  if (digits == 0 || *p != '.') return no_name(gguf_name);
  const size_t used = (size_t)(p + 1 - gguf_name);
  const char *suffix = gguf_name + used;
  for (size_t i = 0; i < COUNT(kLayer); ++i) {
    if (strcmp(suffix, kLayer[i].gguf) == 0) {
      int n = snprintf(buf, size, "model.layers.%lu.%s", layer, kLayer[i].hf);
      return n >= 0 && (size_t)n < size ? ATLAS_OK : no_name(gguf_name);
    }
  }
  return no_name(gguf_name);
}

uint64_t atlas_gguf_qk_source_row(uint64_t hf_row, uint64_t head_dim) {
  // The converter stores head h's row t * (head_dim / 2) + j (t: which
  // rotary half, j < head_dim / 2) at h * head_dim + 2 j + t.
  const uint64_t half = head_dim / 2, h = hf_row / head_dim,
                 i = hf_row % head_dim;
  const uint64_t t = i / half, j = i % half;
  return h * head_dim + 2 * j + t;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n > m && strcmp(s + n - m, tail) == 0;
}

int atlas_gguf_is_permuted(const char *arch, const char *gguf_name) {
  // convert_hf_to_gguf's LlamaModel permutes q_proj and k_proj, weight and
  // bias alike.
  if (strcmp(arch, "llama") != 0) return 0;
  return ends_with(gguf_name, ".attn_q.weight") ||
         ends_with(gguf_name, ".attn_k.weight") ||
         ends_with(gguf_name, ".attn_q.bias") ||
         ends_with(gguf_name, ".attn_k.bias");
}

// `key` under the architecture's prefix ("llama.block_count").
static void arch_key(char *buf, size_t size, const char *arch,
                     const char *key) {
  snprintf(buf, size, "%s.%s", arch, key);
}

static atlas_status get_count(const atlas_gguf *g, const char *arch,
                              const char *key, bool required, uint64_t *out) {
  char k[160];
  arch_key(k, sizeof(k), arch, key);
  if (!required && atlas_gguf_find_kv(g, k) == NULL) return ATLAS_OK;
  return atlas_gguf_get_u64(g, k, out);
}

static atlas_status get_real(const atlas_gguf *g, const char *arch,
                             const char *key, double *out) {
  char k[160];
  arch_key(k, sizeof(k), arch, key);
  if (atlas_gguf_find_kv(g, k) == NULL) return ATLAS_OK;
  return atlas_gguf_get_f64(g, k, out);
}

static atlas_status refuse(const atlas_gguf *g, const char *what) {
  (void)g;
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED, "GGUF: %s", what);
}

// The hyperparameters, read and checked.
typedef struct hparams {
  uint64_t ctx, hidden, layers, ffn, heads, kv_heads, head_dim, vocab;
  double eps, theta;
  bool tied, bias, mlp_bias;
  // rope.scaling.*: type "linear" or "yarn" (NULL: none), its numbers, and
  // which optional ones the file sets.
  const char *rope_type;
  double factor, attn_factor, beta_fast, beta_slow;
  uint64_t original_ctx;
  bool has_attn_factor, has_beta_fast, has_beta_slow;
  atlas_gguf_llama3_rope llama3;  // from rope_freqs.weight
} hparams;

static atlas_status refuse_key(const char *key, const char *why) {
  char q[ATLAS_QUOTE_BYTES];
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED, "GGUF: \"%s\" %s",
                           atlas_quote_n(key, strlen(key), q, sizeof(q)), why);
}

// <arch>.rope.scaling.*, as transformers' rope_scaling says it.
static atlas_status read_rope_scaling(const atlas_gguf *g, const char *arch,
                                      hparams *h) {
  char k[160];
  arch_key(k, sizeof(k), arch, "rope.scaling.type");
  if (atlas_gguf_find_kv(g, k) == NULL) return ATLAS_OK;
  const char *s = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_string(g, k, &s, &n));
  if (n == 4 && memcmp(s, "none", 4) == 0) return ATLAS_OK;
  if (n == 6 && memcmp(s, "linear", 6) == 0) {
    h->rope_type = "linear";
  } else if (n == 4 && memcmp(s, "yarn", 4) == 0) {
    h->rope_type = "yarn";
  } else {
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "GGUF: %s is \"%s\"; Atlas reads none, linear and yarn", k,
        atlas_quote_n(s, n, q, sizeof(q)));
  }
  arch_key(k, sizeof(k), arch, "rope.scaling.factor");
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_f64(g, k, &h->factor));
  if (strcmp(h->rope_type, "yarn") == 0) {
    arch_key(k, sizeof(k), arch, "rope.scaling.original_context_length");
    ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, k, &h->original_ctx));
    arch_key(k, sizeof(k), arch, "rope.scaling.attn_factor");
    h->has_attn_factor = atlas_gguf_find_kv(g, k) != NULL;
    if (h->has_attn_factor) {
      ATLAS_RETURN_IF_ERROR(atlas_gguf_get_f64(g, k, &h->attn_factor));
    }
    arch_key(k, sizeof(k), arch, "rope.scaling.yarn_beta_fast");
    h->has_beta_fast = atlas_gguf_find_kv(g, k) != NULL;
    if (h->has_beta_fast) {
      ATLAS_RETURN_IF_ERROR(atlas_gguf_get_f64(g, k, &h->beta_fast));
    }
    arch_key(k, sizeof(k), arch, "rope.scaling.yarn_beta_slow");
    h->has_beta_slow = atlas_gguf_find_kv(g, k) != NULL;
    if (h->has_beta_slow) {
      ATLAS_RETURN_IF_ERROR(atlas_gguf_get_f64(g, k, &h->beta_slow));
    }
  }
  return ATLAS_OK;
}

// The <arch>.* keys Atlas reads or checks; any other is refused by name, so
// a hyperparameter it does not know never runs as if absent.
static const char *const kArchKeys[] = {
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.layer_norm_rms_epsilon",
    "rope.freq_base",
    "rope.dimension_count",
    "vocab_size",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scaling.original_context_length",
    "rope.scaling.attn_factor",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
    "rope.scaling.finetuned",  // informational
    "expert_count",            // checked to be 0
    "expert_used_count",       // checked to be 0
};

static atlas_status check_equal(const atlas_gguf *g, const char *arch,
                                const char *key, uint64_t want,
                                const char *why) {
  char k[160];
  arch_key(k, sizeof(k), arch, key);
  if (atlas_gguf_find_kv(g, k) == NULL) return ATLAS_OK;
  uint64_t v = 0;
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, k, &v));
  return v == want ? ATLAS_OK : refuse_key(k, why);
}

static atlas_status check_arch_keys(const atlas_gguf *g, const char *arch,
                                    const hparams *h) {
  const size_t prefix = strlen(arch);
  for (size_t i = 0; i < atlas_gguf_kv_count(g); ++i) {
    const char *key = atlas_gguf_kv_at(g, i)->key;
    if (strncmp(key, arch, prefix) != 0 || key[prefix] != '.') continue;
    bool known = false;
    for (size_t j = 0; !known && j < COUNT(kArchKeys); ++j) {
      known = strcmp(key + prefix + 1, kArchKeys[j]) == 0;
    }
    if (!known) {
      return refuse_key(key, "is a hyperparameter Atlas does not read");
    }
  }
  ATLAS_RETURN_IF_ERROR(check_equal(
      g, arch, "attention.value_length", h->head_dim,
      "differs from the key length: Atlas runs equal key and value heads"));
  ATLAS_RETURN_IF_ERROR(check_equal(
      g, arch, "rope.dimension_count", h->head_dim,
      "is not the head dimension: partial rotary embeddings are not read "
      "from GGUF"));
  ATLAS_RETURN_IF_ERROR(check_equal(g, arch, "expert_count", 0,
                                    "is set: mixture-of-experts GGUF models "
                                    "are not read"));
  ATLAS_RETURN_IF_ERROR(check_equal(g, arch, "expert_used_count", 0,
                                    "is set: mixture-of-experts GGUF models "
                                    "are not read"));
  // A file split in parts (llama.cpp's gguf-split) holds only some tensors.
  uint64_t splits = 1;
  if (atlas_gguf_find_kv(g, "split.count") != NULL) {
    ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, "split.count", &splits));
  }
  if (splits > 1) {
    return refuse_key("split.count",
                      "is more than 1: a GGUF model split over files is not "
                      "read (merge it with llama-gguf-split --merge)");
  }
  return ATLAS_OK;
}

static atlas_status read_hparams(const atlas_gguf *g, const char *arch,
                                 hparams *h) {
  memset(h, 0, sizeof(*h));
  h->theta = 10000.0;
  h->eps = 1e-6;
  ATLAS_RETURN_IF_ERROR(get_count(g, arch, "context_length", true, &h->ctx));
  ATLAS_RETURN_IF_ERROR(
      get_count(g, arch, "embedding_length", true, &h->hidden));
  ATLAS_RETURN_IF_ERROR(get_count(g, arch, "block_count", true, &h->layers));
  ATLAS_RETURN_IF_ERROR(
      get_count(g, arch, "feed_forward_length", true, &h->ffn));
  ATLAS_RETURN_IF_ERROR(
      get_count(g, arch, "attention.head_count", true, &h->heads));
  h->kv_heads = h->heads;
  ATLAS_RETURN_IF_ERROR(
      get_count(g, arch, "attention.head_count_kv", false, &h->kv_heads));
  if (h->heads == 0 || h->kv_heads == 0 || h->hidden % h->heads != 0) {
    return refuse(g, "attention.head_count does not divide embedding_length");
  }
  h->head_dim = h->hidden / h->heads;
  ATLAS_RETURN_IF_ERROR(
      get_count(g, arch, "attention.key_length", false, &h->head_dim));
  ATLAS_RETURN_IF_ERROR(
      get_real(g, arch, "attention.layer_norm_rms_epsilon", &h->eps));
  ATLAS_RETURN_IF_ERROR(get_real(g, arch, "rope.freq_base", &h->theta));
  const atlas_gguf_kv *tokens = atlas_gguf_find_kv(g, "tokenizer.ggml.tokens");
  h->vocab = tokens != NULL ? tokens->count : 0;
  ATLAS_RETURN_IF_ERROR(get_count(g, arch, "vocab_size", false, &h->vocab));
  if (h->vocab == 0) {
    return refuse(g,
                  "the vocabulary size is missing (no "
                  "tokenizer.ggml.tokens nor <arch>.vocab_size)");
  }
  ATLAS_RETURN_IF_ERROR(read_rope_scaling(g, arch, h));
  ATLAS_RETURN_IF_ERROR(check_arch_keys(g, arch, h));
  if (strcmp(arch, "llama") != 0 &&
      atlas_gguf_find_tensor(g, "rope_freqs.weight") != NULL) {
    return refuse(g, "a rope_freqs.weight tensor outside a llama model");
  }
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_llama3_rope_from_freqs(g, h->head_dim, h->theta, &h->llama3));
  if (h->llama3.present && h->rope_type != NULL) {
    return refuse(g,
                  "rope_freqs.weight and <arch>.rope.scaling.type are both "
                  "set: two rope scalings");
  }
  h->tied = atlas_gguf_find_tensor(g, "output.weight") == NULL;
  h->bias = atlas_gguf_find_tensor(g, "blk.0.attn_q.bias") != NULL;
  h->mlp_bias = atlas_gguf_find_tensor(g, "blk.0.ffn_up.bias") != NULL;
  return ATLAS_OK;
}

static int set_int(json_t *o, const char *k, uint64_t v) {
  return json_object_set_new(o, k, json_integer((json_int_t)v));
}

atlas_status atlas_gguf_config_json(const atlas_gguf *g, char **out_json) {
  *out_json = NULL;
  const char *arch_s = NULL;
  size_t arch_n = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_gguf_get_string(g, "general.architecture", &arch_s, &arch_n));
  char arch[16] = {0};
  if (arch_n == 0 || arch_n >= sizeof(arch)) {
    return refuse(g, "general.architecture is not llama, qwen2 or qwen3");
  }
  memcpy(arch, arch_s, arch_n);
  if (strcmp(arch, "llama") != 0 && strcmp(arch, "qwen2") != 0 &&
      strcmp(arch, "qwen3") != 0) {
    char q[ATLAS_QUOTE_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_UNIMPLEMENTED,
        "GGUF: general.architecture \"%s\" is not one Atlas runs (llama, "
        "qwen2, qwen3)",
        atlas_quote_n(arch_s, arch_n, q, sizeof(q)));
  }
  hparams h;
  ATLAS_RETURN_IF_ERROR(read_hparams(g, arch, &h));
  json_t *o = json_object();
  int bad = o == NULL;
  bad |= json_object_set_new(o, "model_type", json_string(arch));
  bad |= set_int(o, "hidden_size", h.hidden);
  bad |= set_int(o, "intermediate_size", h.ffn);
  bad |= set_int(o, "num_hidden_layers", h.layers);
  bad |= set_int(o, "num_attention_heads", h.heads);
  bad |= set_int(o, "num_key_value_heads", h.kv_heads);
  bad |= set_int(o, "head_dim", h.head_dim);
  bad |= set_int(o, "max_position_embeddings", h.ctx);
  bad |= set_int(o, "vocab_size", h.vocab);
  bad |= json_object_set_new(o, "rms_norm_eps", json_real(h.eps));
  bad |= json_object_set_new(o, "rope_theta", json_real(h.theta));
  bad |= json_object_set_new(o, "tie_word_embeddings", json_boolean(h.tied));
  bad |= json_object_set_new(o, "hidden_act", json_string("silu"));
  if (h.llama3.present) {
    json_t *rs = json_object();
    bad |= rs == NULL;
    bad |= json_object_set_new(rs, "rope_type", json_string("llama3"));
    bad |= json_object_set_new(rs, "factor", json_real(h.llama3.factor));
    bad |= json_object_set_new(rs, "low_freq_factor",
                               json_real(h.llama3.low_freq_factor));
    bad |= json_object_set_new(rs, "high_freq_factor",
                               json_real(h.llama3.high_freq_factor));
    bad |= set_int(rs, "original_max_position_embeddings",
                   h.llama3.original_max_positions);
    bad |= json_object_set_new(o, "rope_scaling", rs);
  }
  if (h.rope_type != NULL) {
    json_t *rs = json_object();
    bad |= rs == NULL;
    bad |= json_object_set_new(rs, "rope_type", json_string(h.rope_type));
    bad |= json_object_set_new(rs, "factor", json_real(h.factor));
    if (h.original_ctx > 0)
      bad |= set_int(rs, "original_max_position_embeddings", h.original_ctx);
    if (h.has_attn_factor) {
      bad |=
          json_object_set_new(rs, "attention_factor", json_real(h.attn_factor));
    }
    if (h.has_beta_fast) {
      bad |= json_object_set_new(rs, "beta_fast", json_real(h.beta_fast));
    }
    if (h.has_beta_slow) {
      bad |= json_object_set_new(rs, "beta_slow", json_real(h.beta_slow));
    }
    bad |= json_object_set_new(o, "rope_scaling", rs);
  }
  if (strcmp(arch, "llama") == 0 && h.bias) {
    bad |= json_object_set_new(o, "attention_bias", json_true());
  }
  if (strcmp(arch, "llama") == 0 && h.mlp_bias) {
    bad |= json_object_set_new(o, "mlp_bias", json_true());
  }
  uint64_t id = 0;
  if (atlas_gguf_find_kv(g, "tokenizer.ggml.bos_token_id") != NULL) {
    atlas_status s = atlas_gguf_get_u64(g, "tokenizer.ggml.bos_token_id", &id);
    if (s != ATLAS_OK) {
      json_decref(o);
      return s;
    }
    bad |= set_int(o, "bos_token_id", id);
  }
  // llama.cpp stops at the end-of-text and the end-of-turn token alike.
  json_t *eos = json_array();
  bad |= eos == NULL;
  static const char *const kEos[] = {"tokenizer.ggml.eos_token_id",
                                     "tokenizer.ggml.eot_token_id"};
  for (size_t i = 0; !bad && i < COUNT(kEos); ++i) {
    if (atlas_gguf_find_kv(g, kEos[i]) == NULL) continue;
    atlas_status s = atlas_gguf_get_u64(g, kEos[i], &id);
    if (s != ATLAS_OK) {
      json_decref(eos);
      json_decref(o);
      return s;
    }
    bool seen = false;
    for (size_t j = 0; j < json_array_size(eos); ++j) {
      seen |= (uint64_t)json_integer_value(json_array_get(eos, j)) == id;
    }
    if (!seen) bad |= json_array_append_new(eos, json_integer((json_int_t)id));
  }
  if (json_array_size(eos) == 1) {
    bad |= json_object_set(o, "eos_token_id", json_array_get(eos, 0));
  } else if (json_array_size(eos) > 1) {
    bad |= json_object_set(o, "eos_token_id", eos);
  }
  json_decref(eos);
  char *text = bad ? NULL : json_dumps(o, JSON_INDENT(1) | JSON_SORT_KEYS);
  json_decref(o);
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "GGUF: out of host memory writing config.json");
  }
  *out_json = text;
  return ATLAS_OK;
}

atlas_status atlas_gguf_head_dim(const atlas_gguf *g, const char *arch,
                                 uint64_t *out) {
  char key[64];
  snprintf(key, sizeof(key), "%s.attention.key_length", arch);
  if (atlas_gguf_find_kv(g, key) != NULL) {
    return atlas_gguf_get_u64(g, key, out);
  }
  uint64_t hidden = 0, heads = 0;
  snprintf(key, sizeof(key), "%s.embedding_length", arch);
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, key, &hidden));
  snprintf(key, sizeof(key), "%s.attention.head_count", arch);
  ATLAS_RETURN_IF_ERROR(atlas_gguf_get_u64(g, key, &heads));
  *out = heads ? hidden / heads : 0;
  return ATLAS_OK;
}
