// A GGUF file's model in transformers terms (runtime/formats/gguf_model.h):
// llama.cpp's tensor names mapped, the q/k rows llama.cpp's converter
// permutes put back (checked against the converter's permutation written
// here from its description: reshape to (heads, 2, head_dim / 2, cols),
// swap the middle axes), and config.json written from the metadata.
#include <jansson.h>
#include <math.h>
#include <string.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/arch/registry.h"
#include "atlas/runtime/formats/gguf.h"
#include "atlas/runtime/formats/gguf_model.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/runtime/test_util.h"

namespace {

using gguf_test::Writer;

std::string Hf(const char *name) {
  char buf[256];
  StatusResult r = Take(atlas_gguf_hf_name(name, buf, sizeof(buf)));
  return r.code == ATLAS_STATUS_OK ? std::string(buf) : "!" + r.message;
}

TEST(GgufModel, TensorNames) {
  EXPECT_EQ(Hf("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(Hf("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(Hf("output.weight"), "lm_head.weight");
  EXPECT_EQ(Hf("blk.0.attn_norm.weight"),
            "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(Hf("blk.12.attn_q.weight"),
            "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(Hf("blk.1.attn_k.bias"), "model.layers.1.self_attn.k_proj.bias");
  EXPECT_EQ(Hf("blk.3.attn_output.weight"),
            "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(Hf("blk.3.attn_q_norm.weight"),
            "model.layers.3.self_attn.q_norm.weight");
  EXPECT_EQ(Hf("blk.7.ffn_norm.weight"),
            "model.layers.7.post_attention_layernorm.weight");
  EXPECT_EQ(Hf("blk.7.ffn_gate.weight"), "model.layers.7.mlp.gate_proj.weight");
  EXPECT_EQ(Hf("blk.7.ffn_up.weight"), "model.layers.7.mlp.up_proj.weight");
  EXPECT_EQ(Hf("blk.7.ffn_down.weight"), "model.layers.7.mlp.down_proj.weight");
  for (const char *bad :
       {"rope_freqs.weight", "blk.x.attn_q.weight", "blk.-1.attn_q.weight",
        "blk. 1.attn_q.weight", "blk.3.attn_qkv.weight", "blk.3", "output"}) {
    EXPECT_EQ(Hf(bad).substr(0, 1), "!") << bad;
  }
}

// The converter's permutation of a (rows x cols) q or k weight of `heads`
// heads: gguf[h][j][t] = hf[h][t][j] over (head, half index, half).
std::vector<int> ConverterPermute(const std::vector<int> &hf, int rows,
                                  int cols, int heads) {
  const int hd = rows / heads, half = hd / 2;
  std::vector<int> g(hf.size());
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < 2; ++t) {
      for (int j = 0; j < half; ++j) {
        for (int c = 0; c < cols; ++c) {
          g[(size_t)((h * half + j) * 2 + t) * cols + c] =
              hf[(size_t)((h * 2 + t) * half + j) * cols + c];
        }
      }
    }
  }
  return g;
}

TEST(GgufModel, QkRowsPutBack) {
  for (int heads : {1, 2, 4}) {
    for (int hd : {2, 8, 64}) {
      const int rows = heads * hd, cols = 3;
      std::vector<int> hf((size_t)rows * cols);
      for (size_t i = 0; i < hf.size(); ++i) hf[i] = (int)i;
      std::vector<int> g = ConverterPermute(hf, rows, cols, heads);
      for (int r = 0; r < rows; ++r) {
        uint64_t src = atlas_gguf_qk_source_row((uint64_t)r, (uint64_t)hd);
        ASSERT_LT(src, (uint64_t)rows);
        for (int c = 0; c < cols; ++c) {
          ASSERT_EQ(g[src * cols + c], hf[(size_t)r * cols + c])
              << heads << " heads of " << hd << ", row " << r;
        }
      }
    }
  }
  EXPECT_TRUE(atlas_gguf_is_permuted("llama", "blk.0.attn_q.weight"));
  EXPECT_TRUE(atlas_gguf_is_permuted("llama", "blk.10.attn_k.weight"));
  EXPECT_FALSE(atlas_gguf_is_permuted("llama", "blk.0.attn_v.weight"));
  // convert_hf_to_gguf permutes q_proj and k_proj biases as it does weights.
  EXPECT_TRUE(atlas_gguf_is_permuted("llama", "blk.0.attn_q.bias"));
  EXPECT_TRUE(atlas_gguf_is_permuted("llama", "blk.0.attn_k.bias"));
  EXPECT_FALSE(atlas_gguf_is_permuted("llama", "blk.0.attn_v.bias"));
  EXPECT_FALSE(atlas_gguf_is_permuted("qwen2", "blk.0.attn_q.weight"));
  EXPECT_FALSE(atlas_gguf_is_permuted("qwen3", "blk.0.attn_k.weight"));
}

Writer Model(const std::string &arch, bool tied, bool bias) {
  Writer w;
  w.KvString("general.architecture", arch);
  w.KvU32(arch + ".context_length", 4096);
  w.KvU32(arch + ".embedding_length", 64);
  w.KvU32(arch + ".block_count", 2);
  w.KvU32(arch + ".feed_forward_length", 128);
  w.KvU32(arch + ".attention.head_count", 8);
  w.KvU32(arch + ".attention.head_count_kv", 2);
  w.KvF32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.KvF32(arch + ".rope.freq_base", 500000.0f);
  w.KvStrings("tokenizer.ggml.tokens", std::vector<std::string>(100, "t"));
  w.KvU32("tokenizer.ggml.bos_token_id", 1);
  w.KvU32("tokenizer.ggml.eos_token_id", 2);
  w.Tensor("token_embd.weight", {64, 100}, 0, std::string(64 * 100 * 4, '\0'));
  if (!tied) {
    w.Tensor("output.weight", {64, 100}, 0, std::string(64 * 100 * 4, '\0'));
  }
  if (bias) w.Tensor("blk.0.attn_q.bias", {64}, 0, std::string(256, '\0'));
  return w;
}

json_t *Config(const Writer &w, StatusResult *r) {
  std::string bytes = w.Build();
  atlas_gguf *g = nullptr;
  *r = Take(atlas_gguf_parse_buffer(bytes.data(), bytes.size(), "m.gguf", &g));
  if (r->code != ATLAS_STATUS_OK) return nullptr;
  char *text = nullptr;
  *r = Take(atlas_gguf_config_json(g, &text));
  atlas_gguf_close(g);
  if (text == nullptr) return nullptr;
  json_error_t e;
  json_t *root = json_loads(text, 0, &e);
  free(text);
  return root;
}

TEST(GgufModel, ConfigFromMetadata) {
  for (const char *arch : {"llama", "qwen2", "qwen3"}) {
    StatusResult r;
    json_t *c = Config(Model(arch, false, false), &r);
    ASSERT_NE(c, nullptr) << r.message;
    EXPECT_STREQ(json_string_value(json_object_get(c, "model_type")), arch);
    EXPECT_EQ(json_integer_value(json_object_get(c, "hidden_size")), 64);
    EXPECT_EQ(json_integer_value(json_object_get(c, "intermediate_size")), 128);
    EXPECT_EQ(json_integer_value(json_object_get(c, "num_hidden_layers")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(c, "num_attention_heads")), 8);
    EXPECT_EQ(json_integer_value(json_object_get(c, "num_key_value_heads")), 2);
    EXPECT_EQ(json_integer_value(json_object_get(c, "head_dim")), 8);
    EXPECT_EQ(json_integer_value(json_object_get(c, "max_position_embeddings")),
              4096);
    EXPECT_EQ(json_integer_value(json_object_get(c, "vocab_size")), 100);
    EXPECT_EQ(json_real_value(json_object_get(c, "rope_theta")), 500000.0);
    EXPECT_EQ(json_real_value(json_object_get(c, "rms_norm_eps")),
              (double)1e-5f);
    EXPECT_TRUE(json_is_false(json_object_get(c, "tie_word_embeddings")));
    EXPECT_EQ(json_integer_value(json_object_get(c, "bos_token_id")), 1);
    EXPECT_EQ(json_integer_value(json_object_get(c, "eos_token_id")), 2);
    json_decref(c);
  }
  StatusResult r;
  json_t *c = Config(Model("llama", true, true), &r);
  ASSERT_NE(c, nullptr) << r.message;
  EXPECT_TRUE(json_is_true(json_object_get(c, "tie_word_embeddings")));
  EXPECT_TRUE(json_is_true(json_object_get(c, "attention_bias")));
  json_decref(c);
}

// The config.json written for each architecture is one Atlas's own
// architectures read.
TEST(GgufModel, ConfigReadsAsAtlasArchitecture) {
  for (const char *arch : {"llama", "qwen2", "qwen3"}) {
    std::string bytes = Model(arch, arch[0] == 'q', false).Build();
    atlas_gguf *g = nullptr;
    ASSERT_OK(
        atlas_gguf_parse_buffer(bytes.data(), bytes.size(), "m.gguf", &g));
    char *text = nullptr;
    ASSERT_OK(atlas_gguf_config_json(g, &text));
    atlas_gguf_close(g);
    const atlas_arch *a = nullptr;
    ASSERT_OK(atlas_arch_select(text, strlen(text), "m.gguf", &a));
    std::vector<unsigned char> config(a->config_size);
    EXPECT_OK(a->parse_config(text, strlen(text), "m.gguf", config.data()));
    free(text);
  }
}

TEST(GgufModel, ConfigRefusals) {
  StatusResult r;
  EXPECT_EQ(Config(Model("gemma3", false, false), &r), nullptr);
  EXPECT_NE(r.message.find("general.architecture \"gemma3\""),
            std::string::npos)
      << r.message;
  Writer w = Model("llama", false, false);
  w.KvString("llama.rope.scaling.type", "su");
  EXPECT_EQ(Config(w, &r), nullptr);
  EXPECT_NE(r.message.find("llama.rope.scaling.type is \"su\""),
            std::string::npos)
      << r.message;
  // Linear scaling is read, its factor required.
  w = Model("llama", false, false);
  w.KvString("llama.rope.scaling.type", "linear");
  EXPECT_EQ(Config(w, &r), nullptr);
  EXPECT_NE(r.message.find("llama.rope.scaling.factor"), std::string::npos)
      << r.message;
  w = Model("llama", false, false);
  w.Tensor("rope_freqs.weight", {4}, 0, std::string(16, '\0'));
  EXPECT_EQ(Config(w, &r), nullptr);
  EXPECT_NE(r.message.find("rope_freqs.weight"), std::string::npos);
  Writer bare;
  bare.KvString("general.architecture", "qwen2");
  EXPECT_EQ(Config(bare, &r), nullptr);
  EXPECT_NE(r.message.find("qwen2.context_length\" is missing"),
            std::string::npos)
      << r.message;
}

}  // namespace

namespace {

// convert_hf_to_gguf's Llama 3 factors (float32) for a head of 128 at
// theta 500000.
std::string Llama3Freqs(float factor, float lf, float hf, float old) {
  std::string out;
  for (int i = 0; i < 128; i += 2) {
    float freq = 1.0f / powf(500000.0f, (float)i / 128.0f);
    float wavelen = 2.0f * (float)M_PI / freq, f = 0;
    if (wavelen < old / hf) {
      f = 1.0f;
    } else if (wavelen > old / lf) {
      f = factor;
    } else {
      float smooth = (old / wavelen - lf) / (hf - lf);
      f = 1.0f / ((1.0f - smooth) / factor + smooth);
    }
    out.append((const char *)&f, 4);
  }
  return out;
}

Writer Llama3Model(const std::string &freqs) {
  Writer w = Model("llama", false, false);
  w.KvU32("llama.attention.key_length", 128);
  w.KvU32("llama.attention.value_length", 128);
  w.Tensor("rope_freqs.weight", {64}, 0, freqs);
  return w;
}

// Llama 3.1's own parameters come back exactly; a ramp of other ends (a
// context that is no power of two) comes back as parameters that give the
// same frequencies: the same wavelengths at the ramp's ends.
TEST(GgufModel, Llama3RopeFromRopeFreqs) {
  StatusResult r;
  json_t *c = Config(Llama3Model(Llama3Freqs(8, 1, 4, 8192)), &r);
  ASSERT_NE(c, nullptr) << r.message;
  json_t *rs = json_object_get(c, "rope_scaling");
  EXPECT_STREQ(json_string_value(json_object_get(rs, "rope_type")), "llama3");
  EXPECT_EQ(json_number_value(json_object_get(rs, "factor")), 8.0);
  EXPECT_EQ(json_number_value(json_object_get(rs, "low_freq_factor")), 1.0);
  EXPECT_EQ(json_number_value(json_object_get(rs, "high_freq_factor")), 4.0);
  EXPECT_EQ(json_integer_value(
                json_object_get(rs, "original_max_position_embeddings")),
            8192);
  json_decref(c);

  c = Config(Llama3Model(Llama3Freqs(16, 1.5f, 3, 6000)), &r);
  ASSERT_NE(c, nullptr) << r.message;
  rs = json_object_get(c, "rope_scaling");
  const double old = (double)json_integer_value(
      json_object_get(rs, "original_max_position_embeddings"));
  const double lf = json_number_value(json_object_get(rs, "low_freq_factor"));
  const double hf = json_number_value(json_object_get(rs, "high_freq_factor"));
  EXPECT_EQ(json_number_value(json_object_get(rs, "factor")), 16.0);
  EXPECT_NEAR(old / lf, 6000 / 1.5, 6000 / 1.5 * 1e-4);  // the ramp's ends
  EXPECT_NEAR(old / hf, 6000 / 3.0, 6000 / 3.0 * 1e-4);
  json_decref(c);

  // Factors no ramp gives are refused, naming the tensor.
  std::string bad = Llama3Freqs(8, 1, 4, 8192);
  float spike = 3;
  memcpy(&bad[4 * 2], &spike, 4);
  EXPECT_EQ(Config(Llama3Model(bad), &r), nullptr);
  EXPECT_NE(r.message.find("rope_freqs.weight is not llama3 rope scaling"),
            std::string::npos)
      << r.message;
}

}  // namespace
