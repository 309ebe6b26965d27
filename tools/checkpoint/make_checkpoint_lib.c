// Deterministic tiny Llama checkpoint generator.
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/base/half.h"
#include "atlas/tools/checkpoint/safetensors_write.h"

atlas_status atlas_make_checkpoint_preset(const char *name,
                                          atlas_decoder_config *out) {
  atlas_decoder_config c = {0};
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  atlas_rope_config_init(&c.rope, c.rope_theta);
  if (strcmp(name, "tiny") == 0) {
    c.vocab_size = 64;
    c.hidden_size = 32;
    c.intermediate_size = 64;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 128;
  } else if (strcmp(name, "small") == 0) {
    c.vocab_size = 256;
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.num_hidden_layers = 4;
    c.num_attention_heads = 8;
    c.num_key_value_heads = 2;
    c.max_position_embeddings = 256;
  } else {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "unknown preset \"%s\" (expected tiny or small)",
                             name);
  }
  c.head_dim = c.hidden_size / c.num_attention_heads;
  *out = c;
  return ATLAS_OK;
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Irwin-Hall: the sum of 12 uniforms minus 6 has mean 0 and variance 1.
// Every uniform is an exact multiple of 2^-53 and the sum is exact in
// doubles, so the value is the same everywhere.
static double gaussianish(uint64_t *state) {
  double sum = 0;
  for (int i = 0; i < 12; ++i) {
    sum += (double)(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
  }
  return sum - 6.0;
}

uint16_t atlas_make_checkpoint_f32_to_bf16(float value) {
  return atlas_f32_to_bf16(value);
}

uint16_t atlas_make_checkpoint_f32_to_f16(float value) {
  return atlas_f32_to_f16(value);
}

typedef struct gen_tensor {
  char name[128];
  atlas_decoder_weight weight;
  atlas_dtype dtype;
  int64_t shape[2];
  int rank;
  void *data;
} gen_tensor;

size_t atlas_make_checkpoint_tensor_count(const atlas_decoder_config *c) {
  size_t per_layer = 0;
  for (int w = ATLAS_DECODER_FIRST_LAYER_WEIGHT; w < ATLAS_DECODER_WEIGHT_COUNT;
       ++w) {
    per_layer += atlas_decoder_weight_used(c, (atlas_decoder_weight)w);
  }
  return 2 + (size_t)c->num_hidden_layers * per_layer +
         (c->tie_word_embeddings ? 0 : 1);
}

// Canonical order: embedding, layers in order, final norm, lm_head.
static atlas_status list_tensors(const atlas_decoder_config *c,
                                 gen_tensor **out, size_t *out_count) {
  size_t count = atlas_make_checkpoint_tensor_count(c);
  gen_tensor *t = calloc(count, sizeof(*t));
  if (t == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  size_t n = 0;
  t[n++].weight = ATLAS_DECODER_EMBED_TOKENS;
  for (int64_t l = 0; l < c->num_hidden_layers; ++l) {
    for (int w = ATLAS_DECODER_FIRST_LAYER_WEIGHT;
         w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
      if (!atlas_decoder_weight_used(c, (atlas_decoder_weight)w)) continue;
      t[n].weight = (atlas_decoder_weight)w;
      t[n].rank = (int)l;  // layer, until the shape overwrites it below
      ++n;
    }
  }
  t[n++].weight = ATLAS_DECODER_FINAL_NORM;
  if (!c->tie_word_embeddings) t[n++].weight = ATLAS_DECODER_LM_HEAD;
  for (size_t i = 0; i < n; ++i) {
    atlas_status s = atlas_decoder_weight_name(c, t[i].weight, t[i].rank,
                                               t[i].name, sizeof(t[i].name));
    if (s != ATLAS_OK) {
      free(t);
      return s;
    }
    atlas_decoder_weight_shape(c, t[i].weight, t[i].shape, &t[i].rank);
  }
  *out = t;
  *out_count = n;
  return ATLAS_OK;
}

static bool is_norm(atlas_decoder_weight w) {
  return w == ATLAS_DECODER_FINAL_NORM || w == ATLAS_DECODER_INPUT_NORM ||
         w == ATLAS_DECODER_FFN_NORM || w == ATLAS_DECODER_Q_NORM ||
         w == ATLAS_DECODER_K_NORM;
}

// Fills one tensor from its own stream, so values do not depend on sharding.
static atlas_status fill_tensor(gen_tensor *t, uint64_t seed, size_t index) {
  atlas_dtype dtype = t->dtype;
  uint64_t elements =
      (uint64_t)t->shape[0] * (uint64_t)(t->rank == 2 ? t->shape[1] : 1);
  size_t esize = atlas_dtype_size(dtype);
  t->data = malloc((size_t)(elements * esize));
  if (t->data == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "out of memory for %s",
                             t->name);
  }
  uint64_t state = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(index + 1));
  for (uint64_t i = 0; i < elements; ++i) {
    double z = gaussianish(&state);
    float v = (float)(is_norm(t->weight) ? 1.0 + 0.02 * z : 0.02 * z);
    uint8_t *dst = (uint8_t *)t->data + i * esize;
    if (dtype == ATLAS_DTYPE_F32) {
      uint32_t u = atlas_f32_bits(v);
      for (int b = 0; b < 4; ++b) dst[b] = (uint8_t)(u >> (8 * b));
    } else {
      uint16_t h = dtype == ATLAS_DTYPE_F16
                       ? atlas_make_checkpoint_f32_to_f16(v)
                       : atlas_make_checkpoint_f32_to_bf16(v);
      dst[0] = (uint8_t)h;
      dst[1] = (uint8_t)(h >> 8);
    }
  }
  return ATLAS_OK;
}

static const char *torch_dtype(atlas_dtype d) {
  switch (d) {
    case ATLAS_DTYPE_F32:
      return "float32";
    case ATLAS_DTYPE_F16:
      return "float16";
    case ATLAS_DTYPE_BF16:
      return "bfloat16";
    case ATLAS_DTYPE_I32:
    case ATLAS_DTYPE_I64:
    case ATLAS_DTYPE_F8_E4M3:
    case ATLAS_DTYPE_GGUF_Q8_0:
    case ATLAS_DTYPE_GGUF_Q4_0:
    case ATLAS_DTYPE_GGUF_Q4_K:
    case ATLAS_DTYPE_GGUF_Q5_K:
    case ATLAS_DTYPE_GGUF_Q6_K:
      break;  // never a checkpoint's compute dtype
  }
  return "float32";
}

static atlas_status write_json(const char *path, json_t *root) {
  // Precision 10 prints 1e-05 and 10000 as such; both read back exactly.
  int rc = root == NULL ? -1
                        : json_dump_file(root, path,
                                         JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                             JSON_REAL_PRECISION(10));
  json_decref(root);
  if (rc != 0) {
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot write", path);
  }
  return ATLAS_OK;
}

static atlas_status write_config(const char *path,
                                 const atlas_make_checkpoint_options *o) {
  const atlas_decoder_config *c = &o->config;
  json_t *root = json_pack(
      "{s:[s], s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, "
      "s:b, s:s}",
      "architectures", c->qk_norm ? "Qwen3ForCausalLM" : "LlamaForCausalLM",
      "model_type", c->qk_norm ? "qwen3" : "llama", "hidden_act", "silu",
      "vocab_size", (json_int_t)c->vocab_size, "hidden_size",
      (json_int_t)c->hidden_size, "intermediate_size",
      (json_int_t)c->intermediate_size, "num_hidden_layers",
      (json_int_t)c->num_hidden_layers, "num_attention_heads",
      (json_int_t)c->num_attention_heads, "num_key_value_heads",
      (json_int_t)c->num_key_value_heads, "head_dim", (json_int_t)c->head_dim,
      "max_position_embeddings", (json_int_t)c->max_position_embeddings,
      "rms_norm_eps", c->rms_norm_eps, "rope_theta", c->rope_theta,
      "tie_word_embeddings", (int)c->tie_word_embeddings, "torch_dtype",
      torch_dtype(o->dtype));
  // Qwen3Config's attention_bias: q, k, v and o alike.
  if (root != NULL && c->qk_norm &&
      json_object_set_new(root, "attention_bias", json_boolean(c->qkv_bias)) !=
          0) {
    json_decref(root);
    root = NULL;
  }
  return write_json(path, root);
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p != NULL) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static atlas_status write_shard(const char *dir, const char *file_name,
                                const gen_tensor *t, size_t count) {
  atlas_safetensors_write_tensor *w = calloc(count ? count : 1, sizeof(*w));
  char *path = join(dir, file_name);
  atlas_status status = ATLAS_OK;
  if (w == NULL || path == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "out of memory");
  } else {
    for (size_t i = 0; i < count; ++i) {
      w[i].name = t[i].name;
      w[i].dtype = t[i].dtype;
      w[i].rank = t[i].rank;
      w[i].shape[0] = t[i].shape[0];
      w[i].shape[1] = t[i].shape[1];
      w[i].data = t[i].data;
    }
    static const char *const kMetadata[] = {"format", "pt"};
    status = atlas_safetensors_write(path, w, count, kMetadata, 1);
  }
  free(path);
  free(w);
  return status;
}

static atlas_status write_weights(const atlas_make_checkpoint_options *o,
                                  gen_tensor *t, size_t count) {
  size_t shards = (size_t)o->shards;
  if (shards > count) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "make_checkpoint: %zu shards for %zu tensors (a "
                             "shard holds at least one)",
                             shards, count);
  }
  if (shards <= 1) {
    return write_shard(o->out_dir, ATLAS_CHECKPOINT_SINGLE_FILE, t, count);
  }
  json_t *map = json_object();
  uint64_t total = 0;
  size_t begin = 0;
  for (size_t s = 0; s < shards; ++s) {
    size_t end = (s + 1) * count / shards;
    char name[64];
    snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1,
             shards);
    atlas_status status = write_shard(o->out_dir, name, t + begin, end - begin);
    if (status != ATLAS_OK) {
      json_decref(map);
      return status;
    }
    for (size_t i = begin; i < end; ++i) {
      json_object_set_new(map, t[i].name, json_string(name));
      total += (uint64_t)t[i].shape[0] *
               (uint64_t)(t[i].rank == 2 ? t[i].shape[1] : 1) *
               atlas_dtype_size(t[i].dtype);
    }
    begin = end;
  }
  json_t *root = json_pack("{s:{s:I}, s:o}", "metadata", "total_size",
                           (json_int_t)total, "weight_map", map);
  char *path = join(o->out_dir, ATLAS_CHECKPOINT_INDEX_FILE);
  atlas_status status =
      path == NULL
          ? atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "out of memory")
          : write_json(path, root);
  if (path == NULL) json_decref(root);
  free(path);
  return status;
}

atlas_status atlas_make_checkpoint_write(
    const atlas_make_checkpoint_options *o) {
  if (o->shards < 1 || atlas_dtype_size(o->dtype) == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "make_checkpoint: shards must be >= 1 and dtype "
                             "F32, F16 or BF16");
  }
  // Qwen3's config has one attention_bias for q, k, v and o, and no
  // mlp_bias; Qwen2's and Mistral's configs are not written.
  const atlas_decoder_config *c = &o->config;
  bool family_ok = c->family == NULL || c->family == &atlas_llama_family ||
                   (c->family == &atlas_qwen3_family && c->qk_norm);
  if (!family_ok || (c->qk_norm && (c->qkv_bias != c->o_bias || c->mlp_bias))) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "make_checkpoint: writes Llama checkpoints and "
                             "Qwen3 ones (qk_norm; q/k/v/o biases all or none, "
                             "no MLP bias), no other family");
  }
  if (!o->dir_made && mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
    int err = errno;
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot create: %s",
                             o->out_dir,
                             atlas_strerror(err, text, sizeof(text)));
  }
  gen_tensor *t = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(list_tensors(&o->config, &t, &count));
  atlas_status status = ATLAS_OK;
  atlas_dtype other =
      o->dtype == ATLAS_DTYPE_F32 ? ATLAS_DTYPE_BF16 : ATLAS_DTYPE_F32;
  for (size_t i = 0; status == ATLAS_OK && i < count; ++i) {
    bool mixed = o->mixed_dtypes && (t[i].weight == ATLAS_DECODER_K_PROJ ||
                                     t[i].weight == ATLAS_DECODER_UP_PROJ);
    t[i].dtype = mixed ? other : o->dtype;
    status = fill_tensor(&t[i], o->seed, i);
  }
  if (status == ATLAS_OK) status = write_weights(o, t, count);
  char *config_path = join(o->out_dir, "config.json");
  if (status == ATLAS_OK) {
    status = config_path == NULL ? atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                                     "out of memory")
                                 : write_config(config_path, o);
  }
  free(config_path);
  for (size_t i = 0; i < count; ++i) free(t[i].data);
  free(t);
  return status;
}
