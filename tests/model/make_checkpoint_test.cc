// The checkpoint generator: bit-exact conversions, byte-identical output for
// a seed on every machine, and the two demo models the build embeds.
#include "atlas/tools/checkpoint/make_checkpoint_demo_models.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/mistral/mistral.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

std::string ReadAll(const std::string &path) {
  std::string out;
  FILE *f = fopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  fclose(f);
  return out;
}

uint64_t Fnv1a(const std::string &bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

float FromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// Reference decoders, written independently of the generator.
float HalfToFloat(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  double v = exp == 0 ? ldexp(mant, -24) : ldexp(mant + 1024, exp - 25);
  return static_cast<float>((h & 0x8000) ? -v : v);
}

float Bf16ToFloat(uint16_t b) {
  return FromBits(static_cast<uint32_t>(b) << 16);
}

TEST(MakeCheckpointConvert, F16KnownValues) {
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(0.1f), 0x2e66);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(ldexpf(1, -24)), 0x0001);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(ldexpf(1, -25)), 0x0000);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(ldexpf(1, -14)), 0x0400);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(NAN) & 0x7e00, 0x7e00);
  // Ties go to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3c00);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_f16(1.0f + 3 * ldexpf(1, -11)),
            0x3c02);
}

TEST(MakeCheckpointConvert, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaN
    if ((h & 0x7c00) == 0x7c00) continue;                      // inf
    ASSERT_EQ(
        atlas_make_checkpoint_f32_to_f16(HalfToFloat(static_cast<uint16_t>(h))),
        h)
        << std::hex << h;
  }
}

TEST(MakeCheckpointConvert, F16RoundsToNearest) {
  // Midpoints between adjacent positive halves round to the even one.
  for (uint32_t h = 0; h < 0x7bff; h += 7) {
    float lo = HalfToFloat(static_cast<uint16_t>(h));
    float hi = HalfToFloat(static_cast<uint16_t>(h + 1));
    float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
    uint16_t want = static_cast<uint16_t>((h & 1) ? h + 1 : h);
    ASSERT_EQ(atlas_make_checkpoint_f32_to_f16(mid), want) << std::hex << h;
    ASSERT_EQ(atlas_make_checkpoint_f32_to_f16(nextafterf(mid, 0)), h);
    ASSERT_EQ(atlas_make_checkpoint_f32_to_f16(nextafterf(mid, INFINITY)),
              h + 1);
  }
}

TEST(MakeCheckpointConvert, Bf16) {
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(0.1f), 0x3dcd);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(FromBits(0x3f808000)), 0x3f80);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(FromBits(0x3f818000)), 0x3f82);
  EXPECT_EQ(atlas_make_checkpoint_f32_to_bf16(FromBits(0x3f808001)), 0x3f81);
  EXPECT_TRUE(isnan(Bf16ToFloat(atlas_make_checkpoint_f32_to_bf16(NAN))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7f80) == 0x7f80) continue;  // inf, NaN
    ASSERT_EQ(atlas_make_checkpoint_f32_to_bf16(
                  Bf16ToFloat(static_cast<uint16_t>(b))),
              b);
  }
}

// `edit` (may be empty) changes the preset's config before the write.
std::string Generate(
    const std::string &leaf, uint64_t seed, const char *preset,
    atlas_dtype dtype, int shards, bool tied,
    const std::function<void(atlas_decoder_config &)> &edit = {}) {
  std::string dir = atlas_test::TempDir(leaf);
  atlas_make_checkpoint_options o = {};
  o.out_dir = dir.c_str();
  o.seed = seed;
  atlas_status_consume(atlas_make_checkpoint_preset(preset, &o.config));
  o.config.tie_word_embeddings = tied;
  if (edit) edit(o.config);
  o.dtype = dtype;
  o.shards = shards;
  atlas_test::Status s(atlas_make_checkpoint_write(&o));
  EXPECT_TRUE(s.ok()) << s.message();
  return dir;
}

// Recorded from the first run; a change means the generator's bytes moved
// (and every expected-logits fixture built on them with it).
constexpr uint64_t kTinyF32Seed1Hash = 0x4d7eb30a3382fedbull;

TEST(MakeCheckpoint, DeterministicBytes) {
  std::string a = Generate("a", 1, "tiny", ATLAS_DTYPE_F32, 1, false);
  std::string b = Generate("b", 1, "tiny", ATLAS_DTYPE_F32, 1, false);
  std::string c = Generate("c", 2, "tiny", ATLAS_DTYPE_F32, 1, false);
  std::string wa = ReadAll(a + "/model.safetensors");
  EXPECT_EQ(wa, ReadAll(b + "/model.safetensors"));
  EXPECT_EQ(ReadAll(a + "/config.json"), ReadAll(b + "/config.json"));
  EXPECT_NE(wa, ReadAll(c + "/model.safetensors"));
  printf("tiny f32 seed 1: fnv1a 0x%016llx, %zu bytes\n",
         static_cast<unsigned long long>(Fnv1a(wa)), wa.size());
  EXPECT_EQ(Fnv1a(wa), kTinyF32Seed1Hash);
}

TEST(MakeCheckpoint, ShardingDoesNotChangeValues) {
  std::string one = Generate("one", 3, "small", ATLAS_DTYPE_BF16, 1, false);
  std::string four = Generate("four", 3, "small", ATLAS_DTYPE_BF16, 4, false);
  atlas_checkpoint *a = nullptr;
  atlas_checkpoint *b = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(one.c_str(), &a));
  ATLAS_ASSERT_OK(atlas_checkpoint_open(four.c_str(), &b));
  EXPECT_EQ(atlas_checkpoint_shard_count(b), 4u);
  ASSERT_EQ(atlas_checkpoint_tensor_count(a), atlas_checkpoint_tensor_count(b));
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(a); ++i) {
    atlas_checkpoint_tensor ta, tb;
    ASSERT_TRUE(atlas_checkpoint_tensor_at(a, i, &ta));
    ASSERT_TRUE(atlas_checkpoint_tensor_at(b, i, &tb));
    ASSERT_STREQ(ta.tensor->name, tb.tensor->name);
    ASSERT_EQ(ta.tensor->bytes, tb.tensor->bytes);
    std::vector<unsigned char> ba(ta.tensor->bytes), bb(tb.tensor->bytes);
    ATLAS_ASSERT_OK(
        atlas_safetensors_read(ta.tensor, 0, ta.tensor->bytes, ba.data()));
    ATLAS_ASSERT_OK(
        atlas_safetensors_read(tb.tensor, 0, tb.tensor->bytes, bb.data()));
    EXPECT_EQ(ba, bb) << ta.tensor->name;
  }
  atlas_checkpoint_close(a);
  atlas_checkpoint_close(b);
}

TEST(MakeCheckpoint, ValuesLookLikeWeights) {
  std::string dir = Generate("m", 5, "small", ATLAS_DTYPE_F32, 1, false);
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
    atlas_checkpoint_tensor t;
    ASSERT_TRUE(atlas_checkpoint_tensor_at(ck, i, &t));
    double sum = 0, sq = 0;
    std::vector<float> v(t.tensor->elements);
    ATLAS_ASSERT_OK(
        atlas_safetensors_read(t.tensor, 0, t.tensor->bytes, v.data()));
    for (float x : v) {
      sum += x;
      sq += static_cast<double>(x) * x;
    }
    double mean = sum / v.size();
    double sd = sqrt(sq / v.size() - mean * mean);
    bool norm = strstr(t.tensor->name, "norm") != nullptr;
    SCOPED_TRACE(t.tensor->name);
    EXPECT_NEAR(mean, norm ? 1.0 : 0.0, 0.01);
    EXPECT_NEAR(sd, 0.02, norm ? 0.01 : 0.003);
  }
  atlas_checkpoint_close(ck);
}

TEST(MakeCheckpoint, ConfigRoundTrips) {
  std::string dir = Generate("m", 1, "small", ATLAS_DTYPE_F16, 2, true);
  atlas_decoder_config c = {};
  ATLAS_ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &c));
  EXPECT_EQ(c.vocab_size, 256);
  EXPECT_EQ(c.num_hidden_layers, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_TRUE(c.tie_word_embeddings);
  atlas_checkpoint *ck = nullptr;
  ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  bool tied = false;
  ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, ck, &tied));
  EXPECT_TRUE(tied);
  atlas_checkpoint_close(ck);
}

// qk_norm: a Qwen3 checkpoint. Its config reads back as Qwen3's (q/k norm
// on, attention_bias as written), and its q_norm / k_norm look like norms.
TEST(MakeCheckpoint, QkNormWritesAQwen3Checkpoint) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "attention bias" : "no bias");
    std::string dir =
        Generate(bias ? "qwen3_bias" : "qwen3", 4, "tiny", ATLAS_DTYPE_F32, 1,
                 false, [&](atlas_decoder_config &c) {
                   c.qk_norm = true;
                   c.qkv_bias = c.o_bias = bias;
                 });
    std::string text = ReadAll(dir + "/config.json");
    EXPECT_NE(text.find("\"Qwen3ForCausalLM\""), std::string::npos) << text;
    atlas_decoder_config c = {};
    ATLAS_ASSERT_OK(atlas_decoder_config_parse(&atlas_qwen3_family, text.data(),
                                               text.size(), "config.json", &c));
    EXPECT_TRUE(c.qk_norm);
    EXPECT_EQ(c.qkv_bias, bias);
    EXPECT_EQ(c.o_bias, bias);
    EXPECT_EQ(c.head_dim, 8);  // written: Qwen3's default would be 128
    atlas_checkpoint *ck = nullptr;
    ATLAS_ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
    ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, ck, nullptr));
    atlas_checkpoint_tensor t;
    ATLAS_ASSERT_OK(atlas_checkpoint_find(
        ck, "model.layers.1.self_attn.k_norm.weight", &t));
    std::vector<float> v(t.tensor->elements);
    ATLAS_ASSERT_OK(
        atlas_safetensors_read(t.tensor, 0, t.tensor->bytes, v.data()));
    EXPECT_EQ(v.size(), 8u);
    for (float x : v) EXPECT_NEAR(x, 1.0, 0.1);
    atlas_checkpoint_close(ck);
  }
}

TEST(MakeCheckpoint, RejectsBadOptions) {
  atlas_make_checkpoint_options o = {};
  std::string dir = atlas_test::TempDir("m");
  o.out_dir = dir.c_str();
  atlas_status_consume(atlas_make_checkpoint_preset("tiny", &o.config));
  o.shards = 0;
  atlas_test::ExpectError(atlas_make_checkpoint_write(&o),
                          ATLAS_STATUS_INVALID_ARGUMENT, {"shards"});
  // Configs it cannot write: Qwen3's one attention_bias cannot say q/k/v
  // without o, nor an MLP bias; other families are not written at all.
  o.shards = 1;
  o.config.qk_norm = true;
  o.config.qkv_bias = true;
  atlas_test::ExpectError(atlas_make_checkpoint_write(&o),
                          ATLAS_STATUS_INVALID_ARGUMENT, {"Qwen3", "biases"});
  o.config.o_bias = true;
  o.config.mlp_bias = true;
  atlas_test::ExpectError(atlas_make_checkpoint_write(&o),
                          ATLAS_STATUS_INVALID_ARGUMENT, {"MLP bias"});
  atlas_status_consume(atlas_make_checkpoint_preset("tiny", &o.config));
  o.config.family = &atlas_mistral_family;
  atlas_test::ExpectError(atlas_make_checkpoint_write(&o),
                          ATLAS_STATUS_INVALID_ARGUMENT, {"no other family"});
  atlas_decoder_config c;
  atlas_test::ExpectError(atlas_make_checkpoint_preset("huge", &c),
                          ATLAS_STATUS_INVALID_ARGUMENT, {"\"huge\""});
}

// The genrule's outputs, as `atlas demo` will find them in runfiles.
TEST(DemoModels, LoadAndDiffer) {
  struct Demo {
    const char *dir;
    int64_t vocab, hidden, layers;
    bool tied;
    atlas_dtype dtype;
  };
  const Demo demos[] = {
      {"tools/checkpoint/demo_models/tiny-a", 64, 32, 2, false,
       ATLAS_DTYPE_F32},
      {"tools/checkpoint/demo_models/tiny-b", 96, 48, 3, true,
       ATLAS_DTYPE_BF16},
  };
  for (const Demo &d : demos) {
    SCOPED_TRACE(d.dir);
    atlas_decoder_config c = {};
    ATLAS_ASSERT_OK(atlas_llama_config_load(
        (std::string(d.dir) + "/config.json").c_str(), &c));
    EXPECT_EQ(c.vocab_size, d.vocab);
    EXPECT_EQ(c.hidden_size, d.hidden);
    EXPECT_EQ(c.num_hidden_layers, d.layers);
    EXPECT_EQ(c.tie_word_embeddings, d.tied);
    atlas_checkpoint *ck = nullptr;
    ATLAS_ASSERT_OK(atlas_checkpoint_open(d.dir, &ck));
    ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, ck, nullptr));
    atlas_checkpoint_tensor t;
    ATLAS_ASSERT_OK(atlas_checkpoint_find(ck, "model.norm.weight", &t));
    EXPECT_EQ(t.tensor->dtype, d.dtype);
    EXPECT_LT(atlas_safetensors_file_bytes(t.shard), 1u << 20);
    atlas_checkpoint_close(ck);
  }
  // tiny-a is the tiny preset with seed 1: the same bytes as generated here.
  EXPECT_EQ(
      Fnv1a(ReadAll("tools/checkpoint/demo_models/tiny-a/model.safetensors")),
      kTinyF32Seed1Hash);
}

TEST(DemoModels, EmbeddedCopiesMatchTheFiles) {
  ASSERT_EQ(atlas_demo_model_count(), 2u);
  EXPECT_EQ(atlas_demo_model_at(2), nullptr);
  EXPECT_EQ(atlas_demo_model_find("nope"), nullptr);
  for (const char *name : {"tiny-a", "tiny-b"}) {
    SCOPED_TRACE(name);
    const atlas_demo_model *m = atlas_demo_model_find(name);
    ASSERT_NE(m, nullptr);
    std::string dir = std::string("tools/checkpoint/demo_models/") + name;
    EXPECT_EQ(std::string(m->config_json, m->config_bytes),
              ReadAll(dir + "/config.json"));
    EXPECT_EQ(m->config_json[m->config_bytes], '\0');
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(m->weights),
                          m->weights_bytes),
              ReadAll(dir + "/model.safetensors"));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->weights) % 64, 0u);
    atlas_decoder_config c = {};
    ATLAS_ASSERT_OK(
        atlas_llama_config_parse(m->config_json, m->config_bytes, name, &c));
    atlas_checkpoint *ck = nullptr;
    ATLAS_ASSERT_OK(
        atlas_checkpoint_open_buffer(m->weights, m->weights_bytes, name, &ck));
    ATLAS_ASSERT_OK(atlas_decoder_check_checkpoint(&c, ck, nullptr));
    atlas_checkpoint_close(ck);
  }
}

}  // namespace
