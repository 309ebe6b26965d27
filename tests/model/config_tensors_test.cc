// Llama tensor names and shapes, and checkpoints checked against configs.
#include "atlas/runtime/arch/decoder/decoder_weights.h"

#include <string.h>

#include <string>
#include <vector>

#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::ExpectError;

atlas_decoder_config Tiny() {
  atlas_decoder_config c = {};
  atlas_status_consume(atlas_make_checkpoint_preset("tiny", &c));
  return c;
}

// Generates a checkpoint with make_checkpoint_lib and opens it.
class Generated {
 public:
  Generated(const std::string &leaf, const atlas_decoder_config &config,
            atlas_dtype dtype = ATLAS_DTYPE_F32, int shards = 1) {
    dir_ = atlas_test::TempDir(leaf);
    atlas_make_checkpoint_options o = {};
    o.out_dir = dir_.c_str();
    o.seed = 7;
    o.config = config;
    o.dtype = dtype;
    o.shards = shards;
    atlas_test::Status s(atlas_make_checkpoint_write(&o));
    EXPECT_TRUE(s.ok()) << s.message();
    atlas_test::Status s2(atlas_checkpoint_open(dir_.c_str(), &ck_));
    EXPECT_TRUE(s2.ok()) << s2.message();
  }
  ~Generated() { atlas_checkpoint_close(ck_); }
  const atlas_checkpoint *ck() const { return ck_; }
  const std::string &dir() const { return dir_; }

 private:
  std::string dir_;
  atlas_checkpoint *ck_ = nullptr;
};

TEST(LlamaTensors, Names) {
  char buf[128];
  ATLAS_ASSERT_OK(atlas_decoder_tensor_name(buf, sizeof(buf), 3,
                                            "self_attn.q_proj.weight"));
  EXPECT_STREQ(buf, "model.layers.3.self_attn.q_proj.weight");
  ATLAS_ASSERT_OK(atlas_decoder_weight_name(NULL, ATLAS_DECODER_DOWN_PROJ, 11,
                                            buf, sizeof(buf)));
  EXPECT_STREQ(buf, "model.layers.11.mlp.down_proj.weight");
  ATLAS_ASSERT_OK(atlas_decoder_weight_name(NULL, ATLAS_DECODER_FFN_NORM, 0,
                                            buf, sizeof(buf)));
  EXPECT_STREQ(buf, "model.layers.0.post_attention_layernorm.weight");
  ATLAS_ASSERT_OK(atlas_decoder_weight_name(NULL, ATLAS_DECODER_EMBED_TOKENS, 5,
                                            buf, sizeof(buf)));
  EXPECT_STREQ(buf, "model.embed_tokens.weight");
  ATLAS_ASSERT_OK(atlas_decoder_weight_name(NULL, ATLAS_DECODER_LM_HEAD, 0, buf,
                                            sizeof(buf)));
  EXPECT_STREQ(buf, "lm_head.weight");
  ATLAS_ASSERT_OK(atlas_decoder_weight_name(NULL, ATLAS_DECODER_FINAL_NORM, 0,
                                            buf, sizeof(buf)));
  EXPECT_STREQ(buf, "model.norm.weight");
  EXPECT_STREQ(atlas_decoder_weight_suffix(NULL, ATLAS_DECODER_GATE_PROJ),
               "mlp.gate_proj.weight");
  EXPECT_EQ(atlas_decoder_weight_suffix(NULL, ATLAS_DECODER_WEIGHT_COUNT),
            nullptr);
  EXPECT_TRUE(atlas_decoder_weight_is_per_layer(ATLAS_DECODER_Q_PROJ));
  EXPECT_FALSE(atlas_decoder_weight_is_per_layer(ATLAS_DECODER_LM_HEAD));

  ExpectError(atlas_decoder_tensor_name(buf, 10, 3, "self_attn.q_proj.weight"),
              ATLAS_STATUS_INVALID_ARGUMENT, {"too small"});
  ExpectError(atlas_decoder_tensor_name(buf, sizeof(buf), -1, "x"),
              ATLAS_STATUS_INVALID_ARGUMENT, {"layer -1"});
}

TEST(LlamaTensors, ShapesWithGroupedQueryAttention) {
  atlas_decoder_config c = Tiny();
  c.head_dim = 16;  // heads * head_dim (64) differs from hidden (32)
  struct Want {
    atlas_decoder_weight w;
    int rank;
    int64_t d0, d1;
  };
  const Want wants[] = {
      {ATLAS_DECODER_EMBED_TOKENS, 2, 64, 32},
      {ATLAS_DECODER_FINAL_NORM, 1, 32, 0},
      {ATLAS_DECODER_LM_HEAD, 2, 64, 32},
      {ATLAS_DECODER_INPUT_NORM, 1, 32, 0},
      {ATLAS_DECODER_Q_PROJ, 2, 64, 32},
      {ATLAS_DECODER_K_PROJ, 2, 32, 32},
      {ATLAS_DECODER_V_PROJ, 2, 32, 32},
      {ATLAS_DECODER_O_PROJ, 2, 32, 64},
      {ATLAS_DECODER_FFN_NORM, 1, 32, 0},
      {ATLAS_DECODER_GATE_PROJ, 2, 64, 32},
      {ATLAS_DECODER_UP_PROJ, 2, 64, 32},
      {ATLAS_DECODER_DOWN_PROJ, 2, 32, 64},
  };
  for (const Want &w : wants) {
    SCOPED_TRACE(atlas_decoder_weight_suffix(NULL, w.w));
    int64_t shape[2];
    int rank = 0;
    atlas_decoder_weight_shape(&c, w.w, shape, &rank);
    EXPECT_EQ(rank, w.rank);
    EXPECT_EQ(shape[0], w.d0);
    if (rank == 2) {
      EXPECT_EQ(shape[1], w.d1);
    }
  }
}

uint64_t ExpectedBytes(const atlas_decoder_config &c, size_t esize,
                       bool with_lm_head) {
  uint64_t q = c.num_attention_heads * c.head_dim;
  uint64_t kv = c.num_key_value_heads * c.head_dim;
  uint64_t h = c.hidden_size;
  uint64_t layer = h + q * h + 2 * kv * h + h * q + h +
                   3 * static_cast<uint64_t>(c.intermediate_size) * h;
  uint64_t total = c.vocab_size * h + h + c.num_hidden_layers * layer;
  if (with_lm_head) total += c.vocab_size * h;
  return total * esize;
}

TEST(LlamaCheck, UntiedF32) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c);
  bool tied = true;
  ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, g.ck(), &tied));
  EXPECT_FALSE(tied);
  uint64_t bytes = 0;
  ATLAS_ASSERT_OK(atlas_decoder_weight_bytes(&c, g.ck(), &bytes));
  EXPECT_EQ(bytes, ExpectedBytes(c, 4, true));
  EXPECT_EQ(bytes, atlas_checkpoint_data_bytes(g.ck()));
}

TEST(LlamaCheck, TiedBf16) {
  atlas_decoder_config c = Tiny();
  c.tie_word_embeddings = true;
  Generated g("m", c, ATLAS_DTYPE_BF16);
  bool tied = false;
  ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, g.ck(), &tied));
  EXPECT_TRUE(tied);
  atlas_checkpoint_tensor t;
  EXPECT_FALSE(atlas_checkpoint_lookup(g.ck(), "lm_head.weight", &t));
  ATLAS_ASSERT_OK(
      atlas_checkpoint_find(g.ck(), "model.embed_tokens.weight", &t));
  EXPECT_EQ(t.tensor->dtype, ATLAS_DTYPE_BF16);
  uint64_t bytes = 0;
  ATLAS_ASSERT_OK(atlas_decoder_weight_bytes(&c, g.ck(), &bytes));
  EXPECT_EQ(bytes, ExpectedBytes(c, 2, false));
}

TEST(LlamaCheck, LmHeadAbsentButNotTiedIsRefused) {
  atlas_decoder_config c = Tiny();
  c.tie_word_embeddings = true;
  Generated g("m", c);
  c.tie_word_embeddings = false;
  bool tied = false;
  ExpectError(atlas_decoder_check_checkpoint(&c, g.ck(), &tied),
              ATLAS_STATUS_NOT_FOUND, {"lm_head.weight"});
}

TEST(LlamaCheck, ShardedF16) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c, ATLAS_DTYPE_F16, 3);
  EXPECT_EQ(atlas_checkpoint_shard_count(g.ck()), 3u);
  ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, g.ck(), nullptr));
  uint64_t bytes = 0;
  ATLAS_ASSERT_OK(atlas_decoder_weight_bytes(&c, g.ck(), &bytes));
  EXPECT_EQ(bytes, ExpectedBytes(c, 2, true));
}

TEST(LlamaCheck, ExtraTensorsAreNotCounted) {
  atlas_decoder_config c = Tiny();
  std::string dir = atlas_test::TempDir("m");
  // The generator's tensors plus one the model does not use.
  std::vector<atlas_safetensors_write_tensor> w;
  std::vector<std::string> names;
  std::vector<float> zeros(64 * 64, 0.0f);
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    for (int k = 0; k < ATLAS_DECODER_WEIGHT_COUNT; ++k) {
      if (!atlas_decoder_weight_used(&c,
                                     static_cast<atlas_decoder_weight>(k))) {
        continue;
      }
      if (layer > 0 && !atlas_decoder_weight_is_per_layer(
                           static_cast<atlas_decoder_weight>(k))) {
        continue;
      }
      char name[128];
      ATLAS_ASSERT_OK(
          atlas_decoder_weight_name(NULL, static_cast<atlas_decoder_weight>(k),
                                    layer, name, sizeof(name)));
      names.push_back(name);
    }
  }
  names.push_back("model.layers.0.self_attn.rotary_emb.inv_freq");
  for (const std::string &n : names) {
    atlas_safetensors_write_tensor t = {};
    t.name = n.c_str();
    t.dtype = ATLAS_DTYPE_F32;
    bool found = false;
    for (int k = 0; k < ATLAS_DECODER_WEIGHT_COUNT && !found; ++k) {
      const char *suffix = atlas_decoder_weight_suffix(
          NULL, static_cast<atlas_decoder_weight>(k));
      if (suffix == nullptr) continue;  // not in the Llama layout
      if (n.size() >= strlen(suffix) &&
          n.compare(n.size() - strlen(suffix), strlen(suffix), suffix) == 0) {
        atlas_decoder_weight_shape(&c, static_cast<atlas_decoder_weight>(k),
                                   t.shape, &t.rank);
        found = true;
      }
    }
    if (!found) {
      t.rank = 1;
      t.shape[0] = 4;
    }
    t.data = zeros.data();
    w.push_back(t);
  }
  ATLAS_ASSERT_OK(atlas_safetensors_write((dir + "/model.safetensors").c_str(),
                                          w.data(), w.size(), nullptr, 0));
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  uint64_t bytes = 0;
  ATLAS_ASSERT_OK(atlas_decoder_weight_bytes(&c, ck, &bytes));
  EXPECT_EQ(bytes, ExpectedBytes(c, 4, true));
  EXPECT_EQ(atlas_checkpoint_data_bytes(ck), bytes + 16);
  atlas_checkpoint_close(ck);
}

TEST(LlamaCheckErrors, MissingTensor) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c);
  c.num_hidden_layers = 3;  // the checkpoint has two
  ExpectError(atlas_decoder_check_checkpoint(&c, g.ck(), nullptr),
              ATLAS_STATUS_NOT_FOUND,
              {g.dir() + "/model.safetensors",
               "missing tensor \"model.layers.2.input_layernorm.weight\"",
               "expected shape [32]"});
  uint64_t bytes = 7;
  ExpectError(atlas_decoder_weight_bytes(&c, g.ck(), &bytes),
              ATLAS_STATUS_NOT_FOUND, {"model.layers.2"});
  EXPECT_EQ(bytes, 7u);
}

TEST(LlamaCheckErrors, MissingTensorInShardedCheckpoint) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c, ATLAS_DTYPE_F32, 2);
  c.num_hidden_layers = 4;
  ExpectError(atlas_decoder_check_checkpoint(&c, g.ck(), nullptr),
              ATLAS_STATUS_NOT_FOUND,
              {g.dir() + "/model.safetensors.index.json",
               "\"model.layers.2.input_layernorm.weight\""});
}

TEST(LlamaCheckErrors, ConfigContradictsTensors) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c);
  atlas_decoder_config wrong = c;
  wrong.hidden_size = 48;
  wrong.head_dim = 12;
  ExpectError(atlas_decoder_check_checkpoint(&wrong, g.ck(), nullptr),
              ATLAS_STATUS_INVALID_ARGUMENT,
              {g.dir() + "/model.safetensors",
               "tensor \"model.embed_tokens.weight\" has shape [64, 32]",
               "the config implies [64, 48]"});
  wrong = c;
  wrong.num_key_value_heads = 4;  // checkpoint has 2 kv heads
  ExpectError(atlas_decoder_check_checkpoint(&wrong, g.ck(), nullptr),
              ATLAS_STATUS_INVALID_ARGUMENT,
              {"\"model.layers.0.self_attn.k_proj.weight\" has shape [16, 32]",
               "implies [32, 32]"});
  wrong = c;
  wrong.intermediate_size = 128;
  ExpectError(atlas_decoder_check_checkpoint(&wrong, g.ck(), nullptr),
              ATLAS_STATUS_INVALID_ARGUMENT,
              {"\"model.layers.0.mlp.gate_proj.weight\" has shape [64, 32]",
               "implies [128, 32]"});
}

TEST(LlamaCheckErrors, WrongShapeNamesTheShard) {
  atlas_decoder_config c = Tiny();
  Generated g("m", c, ATLAS_DTYPE_F32, 3);
  atlas_decoder_config wrong = c;
  wrong.intermediate_size = 96;
  // Layer 0's gate_proj is the 8th of 21 tensors: the second shard.
  atlas_checkpoint_tensor t;
  ATLAS_ASSERT_OK(
      atlas_checkpoint_find(g.ck(), "model.layers.0.mlp.gate_proj.weight", &t));
  EXPECT_NE(std::string(t.path).find("model-00002-of-00003.safetensors"),
            std::string::npos);
  ExpectError(atlas_decoder_check_checkpoint(&wrong, g.ck(), nullptr),
              ATLAS_STATUS_INVALID_ARGUMENT,
              {t.path, "gate_proj", "[64, 32]", "[96, 32]"});
}

}  // namespace
