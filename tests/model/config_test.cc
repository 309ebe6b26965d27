// Llama config.json parsing: defaults, rope_parameters, and every rejection.
#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/mistral/mistral.h"
#include "atlas/runtime/arch/qwen2/qwen2.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::ExpectError;

const char kPath[] = "ckpt/config.json";

const char kRequired[] =
    "\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 64, "
    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4";

std::string Config(const std::string &extra = "") {
  return std::string("{") + kRequired + (extra.empty() ? "" : ", ") + extra +
         "}";
}

atlas_decoder_config ParseOk(const std::string &text) {
  atlas_decoder_config cfg = {};
  atlas_test::Status s(
      atlas_llama_config_parse(text.data(), text.size(), kPath, &cfg));
  EXPECT_TRUE(s.ok()) << s.message();
  return cfg;
}

void ExpectBad(const std::string &text, atlas_status_code code,
               const std::vector<std::string> &needles) {
  atlas_decoder_config cfg = {};
  cfg.vocab_size = 12345;
  std::vector<std::string> n = needles;
  n.push_back(kPath);
  ExpectError(atlas_llama_config_parse(text.data(), text.size(), kPath, &cfg),
              code, n);
  EXPECT_EQ(cfg.vocab_size, 12345) << "output written on failure";
}

TEST(LlamaConfig, Defaults) {
  atlas_decoder_config c = ParseOk(Config());
  EXPECT_EQ(c.vocab_size, 64);
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(LlamaConfig, HuggingFaceLlamaConfig) {
  const std::string text = R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
    "max_position_embeddings": 2048, "num_attention_heads": 32,
    "num_hidden_layers": 22, "num_key_value_heads": 4, "pretraining_tp": 1,
    "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.35.0", "use_cache": true, "vocab_size": 32000,
    "attention_bias": false
  })";
  atlas_decoder_config c = ParseOk(text);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
}

TEST(LlamaConfig, ExplicitValues) {
  atlas_decoder_config c = ParseOk(Config(
      "\"num_key_value_heads\": 2, \"head_dim\": 16, \"rms_norm_eps\": 1e-5, "
      "\"rope_theta\": 500000, \"tie_word_embeddings\": true, "
      "\"max_position_embeddings\": 4096"));
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.max_position_embeddings, 4096);
}

TEST(LlamaConfig, NullMeansDefault) {
  atlas_decoder_config c =
      ParseOk(Config("\"head_dim\": null, \"num_key_value_heads\": null, "
                     "\"rope_scaling\": null, \"rope_parameters\": null"));
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
}

TEST(LlamaConfig, RopeThetaUnderRopeParameters) {
  atlas_decoder_config c =
      ParseOk(Config("\"rope_parameters\": {\"rope_type\": \"default\", "
                     "\"rope_theta\": 1000000.0}"));
  EXPECT_DOUBLE_EQ(c.rope_theta, 1000000.0);
  c =
      ParseOk(Config("\"rope_theta\": 5e5, \"rope_parameters\": "
                     "{\"rope_theta\": 500000}"));
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  ExpectBad(Config("\"rope_theta\": 10000, \"rope_parameters\": "
                   "{\"rope_theta\": 500000}"),
            ATLAS_STATUS_INVALID_ARGUMENT, {"contradicts"});
}

TEST(LlamaConfig, MissingRequiredKeys) {
  for (const char *key : {"vocab_size", "hidden_size", "intermediate_size",
                          "num_hidden_layers", "num_attention_heads"}) {
    SCOPED_TRACE(key);
    std::string text = Config();
    size_t at = text.find(std::string("\"") + key + "\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 1, "\"x_");  // rename the key
    ExpectBad(text, ATLAS_STATUS_INVALID_ARGUMENT,
              {std::string("required key \"") + key + "\" is missing"});
  }
}

TEST(LlamaConfig, WrongTypes) {
  ExpectBad("{\"vocab_size\": \"64\"}", ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"vocab_size\" must be an integer, not a string"});
  ExpectBad(Config("\"num_key_value_heads\": 2.0"),
            ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"num_key_value_heads\" must be an integer, not a real number"});
  ExpectBad(Config("\"rms_norm_eps\": \"1e-5\""), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"rms_norm_eps\" must be a number"});
  ExpectBad(Config("\"tie_word_embeddings\": 1"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"tie_word_embeddings\" must be true or false"});
  ExpectBad(Config("\"rope_parameters\": 5"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"rope_parameters\" must be an object"});
}

TEST(LlamaConfig, NonPositiveOrHugeValues) {
  ExpectBad("{\"vocab_size\": 0}", ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"vocab_size\" is 0"});
  ExpectBad(Config("\"head_dim\": -8"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"head_dim\" is -8"});
  ExpectBad(Config("\"max_position_embeddings\": 2147483648"),
            ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"max_position_embeddings\" is 2147483648"});
  ExpectBad(Config("\"rms_norm_eps\": 0"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"rms_norm_eps\" is 0"});
  ExpectBad(Config("\"rope_theta\": -1"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"rope_theta\" is -1"});
}

TEST(LlamaConfig, HeadArithmetic) {
  ExpectBad(
      "{\"vocab_size\": 64, \"hidden_size\": 30, \"intermediate_size\": 64, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4}",
      ATLAS_STATUS_INVALID_ARGUMENT,
      {"hidden_size 30 is not divisible by num_attention_heads 4"});
  ExpectBad(Config("\"num_key_value_heads\": 3"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"num_attention_heads 4 is not a multiple of num_key_value_heads "
             "3"});
  ExpectBad(Config("\"head_dim\": 7"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"head_dim 7 is odd"});
}

TEST(LlamaConfig, UnsupportedFeatures) {
  ExpectBad(Config("\"rope_scaling\": {\"rope_type\": \"mrope\", "
                   "\"factor\": 8.0}"),
            ATLAS_STATUS_UNIMPLEMENTED,
            {"rope_scaling.rope_type \"mrope\" is not supported"});
  // LongRoPE is Phi-3's (runtime/arch/phi3); not checked against
  // transformers for model_type llama, so refused there.
  ExpectBad(Config("\"rope_scaling\": {\"rope_type\": \"longrope\", "
                   "\"short_factor\": [1, 1], \"long_factor\": [2, 2]}"),
            ATLAS_STATUS_UNIMPLEMENTED,
            {"rope type \"longrope\"", "model_type llama"});
  ExpectBad(Config("\"rope_parameters\": {\"rope_type\": \"yarn\"}"),
            ATLAS_STATUS_INVALID_ARGUMENT,
            {"rope_parameters.\"factor\" is required for rope_type \"yarn\""});
  ExpectBad(Config("\"hidden_act\": \"gelu\""), ATLAS_STATUS_UNIMPLEMENTED,
            {"hidden_act \"gelu\" is not supported"});
  ExpectBad(Config("\"use_sliding_window\": true"), ATLAS_STATUS_UNIMPLEMENTED,
            {"\"use_sliding_window\": true is not supported"});
}

// model_type llama's sliding_window: LlamaAttention never windows, only
// transformers' generate cache does (it keeps the last sliding_window - 1
// keys; H200, transformers 5.17). Every layer attends to all positions and
// the context is held to the window; it was refused.
TEST(LlamaConfig, SlidingWindowHoldsTheContext) {
  atlas_decoder_config c =
      ParseOk(Config("\"max_position_embeddings\": 4096, "
                     "\"sliding_window\": 128"));
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(atlas_decoder_layer_window(&c, 0), 0);
  EXPECT_EQ(c.context_window, 128);
  const char *key = nullptr;
  EXPECT_EQ(atlas_decoder_context(&c, &key), 128);
  EXPECT_STREQ(key, "sliding_window");
  c = ParseOk(
      Config("\"max_position_embeddings\": 64, \"sliding_window\": 128"));
  EXPECT_EQ(atlas_decoder_context(&c, &key), 64);
  EXPECT_STREQ(key, "max_position_embeddings");
  c = ParseOk(Config("\"sliding_window\": null"));
  EXPECT_EQ(c.context_window, 0);
  ExpectBad(Config("\"sliding_window\": 0"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"sliding_window\" is 0"});
  ExpectBad(Config("\"sliding_window\": 1.5"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"\"sliding_window\" must be an integer"});
  // The other families keep their own windows and no context limit.
  std::string mistral =
      Config("\"num_key_value_heads\": 2, \"sliding_window\": 128");
  c = {};
  atlas_test::Status s(atlas_decoder_config_parse(
      &atlas_mistral_family, mistral.data(), mistral.size(), kPath, &c));
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.sliding_window, 128);
  EXPECT_EQ(c.context_window, 0);
}

// A quantized checkpoint's config: transformers loads it quantized; Atlas
// ran any float tensors it found as plain weights (exit 0). Formats Atlas
// does not read are refused naming the field; the ones it reads go into the
// config (the projections then load quantized).
TEST(LlamaConfig, QuantizationConfigReadOrRefused) {
  ExpectBad(Config("\"quantization_config\": {\"quant_method\": \"fp8\", "
                   "\"activation_scheme\": \"dynamic\"}"),
            ATLAS_STATUS_INVALID_ARGUMENT,
            {"quant_method \"fp8\"", "weight_block_size is missing"});
  ExpectBad(Config("\"quantization_config\": {\"bits\": 4}"),
            ATLAS_STATUS_INVALID_ARGUMENT,
            {"quantization_config has no quant_method"});
  atlas_decoder_config c =
      ParseOk(Config("\"quantization_config\": {\"quant_method\": \"gptq\", "
                     "\"bits\": 4, \"group_size\": 128, \"sym\": true, "
                     "\"desc_act\": false}"));
  EXPECT_EQ(c.quant.method, ATLAS_QUANT_GPTQ);
  EXPECT_EQ(c.quant.group_k, 128u);
  EXPECT_EQ(c.quant.keep, nullptr);
  // A projection kept in its stored type would mix plain and quantized
  // matrices: refused by name.
  ExpectBad(Config("\"quantization_config\": {\"quant_method\": \"gptq\", "
                   "\"bits\": 4, \"group_size\": 128, \"sym\": true, "
                   "\"desc_act\": false, \"modules_to_not_convert\": "
                   "[\"mlp.down_proj\"]}"),
            ATLAS_STATUS_UNIMPLEMENTED,
            {"keeps model.layers.0.mlp.down_proj in its stored type"});
  EXPECT_EQ(ParseOk(Config("\"quantization_config\": null")).quant.method,
            ATLAS_QUANT_NONE);
}

// "swish" is SiLU in transformers (ACT2FN); Atlas refused it.
TEST(LlamaConfig, SwishIsSilu) {
  ParseOk(Config("\"hidden_act\": \"swish\""));
  ExpectBad(Config("\"hidden_act\": \"gelu_pytorch_tanh\""),
            ATLAS_STATUS_UNIMPLEMENTED, {"hidden_act \"gelu_pytorch_tanh\""});
}

TEST(LlamaConfig, BiasesAndRopeTypes) {
  atlas_decoder_config c = ParseOk(Config("\"attention_bias\": true"));
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_bias);
  EXPECT_FALSE(c.mlp_bias);
  c = ParseOk(Config("\"mlp_bias\": true"));
  EXPECT_TRUE(c.mlp_bias);
  EXPECT_FALSE(c.qkv_bias);
  // The three spellings of one rope config agree.
  atlas_decoder_config a = ParseOk(Config(
      "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 5e5, "
      "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
      "\"original_max_position_embeddings\": 8192}"));
  atlas_decoder_config b = ParseOk(Config(
      "\"rope_theta\": 5e5, \"rope_scaling\": {\"rope_type\": \"llama3\", "
      "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
      "\"original_max_position_embeddings\": 8192}"));
  atlas_decoder_config d = ParseOk(
      Config("\"rope_theta\": 5e5, \"rope_scaling\": {\"type\": \"llama3\", "
             "\"factor\": 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
             "\"original_max_position_embeddings\": 8192}"));
  for (const atlas_decoder_config *x : {&a, &b, &d}) {
    EXPECT_EQ(x->rope.type, ATLAS_ROPE_LLAMA3);
    EXPECT_DOUBLE_EQ(x->rope.theta, 5e5);
    EXPECT_DOUBLE_EQ(x->rope.factor, 8);
    EXPECT_EQ(x->rope.original_max_positions, 8192);
  }
}

TEST(LlamaConfig, InvalidJson) {
  ExpectBad("{\"vocab_size\": 64,", ATLAS_STATUS_INVALID_ARGUMENT,
            {"not valid JSON"});
  ExpectBad("", ATLAS_STATUS_INVALID_ARGUMENT, {"not valid JSON"});
  ExpectBad("[1]", ATLAS_STATUS_INVALID_ARGUMENT,
            {"config is an array, not a JSON object"});
  ExpectBad(Config("\"vocab_size\": 65"), ATLAS_STATUS_INVALID_ARGUMENT,
            {"duplicate"});
  ExpectBad(Config("\"model_type\": \"ll\xc3\x28\""),
            ATLAS_STATUS_INVALID_ARGUMENT, {"not valid JSON", "decode"});
}

TEST(LlamaConfig, LoadFromFile) {
  std::string dir = atlas_test::TempDir("");
  std::string path = dir + "/config.json";
  atlas_test::WriteFile(path, Config("\"num_key_value_heads\": 1"));
  atlas_decoder_config c = {};
  ATLAS_ASSERT_OK(atlas_llama_config_load(path.c_str(), &c));
  EXPECT_EQ(c.num_key_value_heads, 1);
  atlas_test::WriteFile(path, "{\"vocab_size\": true}");
  ExpectError(atlas_llama_config_load(path.c_str(), &c),
              ATLAS_STATUS_INVALID_ARGUMENT, {path, "\"vocab_size\""});
  std::string missing = dir + "/nope.json";
  ExpectError(atlas_llama_config_load(missing.c_str(), &c),
              ATLAS_STATUS_NOT_FOUND, {missing, "cannot open"});
}

}  // namespace

namespace {

atlas_decoder_config ParseFamily(const atlas_decoder_family *f,
                                 const std::string &text) {
  atlas_decoder_config cfg = {};
  atlas_test::Status s(
      atlas_decoder_config_parse(f, text.data(), text.size(), kPath, &cfg));
  EXPECT_TRUE(s.ok()) << s.message();
  return cfg;
}

// Config() plus num_key_value_heads: the Qwen and Mistral classes default
// it to 32 and 8, which 4 heads cannot use.
std::string FamilyConfig(const std::string &extra = "") {
  return Config("\"num_key_value_heads\": 2" +
                (extra.empty() ? std::string() : ", " + extra));
}

TEST(FamilyConfig, SlidingWindows) {
  // Mistral: every layer; absent means MistralConfig's 4096, null none.
  atlas_decoder_config c = ParseFamily(&atlas_mistral_family, FamilyConfig());
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(atlas_decoder_layer_window(&c, 0), 4096);
  c = ParseFamily(&atlas_mistral_family,
                  FamilyConfig("\"sliding_window\": null"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 1), 0);
  // Qwen2: only with use_sliding_window, from max_window_layers on.
  c = ParseFamily(&atlas_qwen2_family, FamilyConfig("\"sliding_window\": 64"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 1), 0);
  c = ParseFamily(
      &atlas_qwen2_family,
      FamilyConfig("\"use_sliding_window\": true, \"sliding_window\": 64, "
                   "\"max_window_layers\": 1"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 0), 0);
  EXPECT_EQ(atlas_decoder_layer_window(&c, 1), 64);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_bias);
  c = ParseFamily(
      &atlas_qwen2_family,
      FamilyConfig("\"use_sliding_window\": true, \"sliding_window\": null"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 1), 0);
  // layer_types, when given, decides.
  c = ParseFamily(
      &atlas_qwen3_family,
      FamilyConfig("\"use_sliding_window\": true, \"sliding_window\": 8, "
                   "\"layer_types\": [\"sliding_attention\", "
                   "\"sliding_attention\"]"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 0), 8);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);  // Qwen3Config's default
}

// MistralForCausalLM ignores layer_types and slides every layer; Atlas
// followed the list (layer 0 attended to everything, exit 0).
TEST(FamilyConfig, MistralLayerTypesCannotUnslideLayers) {
  atlas_decoder_config c = {};
  std::string text = FamilyConfig(
      "\"sliding_window\": 8, "
      "\"layer_types\": [\"full_attention\", \"sliding_attention\"]");
  ExpectError(atlas_decoder_config_parse(&atlas_mistral_family, text.data(),
                                         text.size(), kPath, &c),
              ATLAS_STATUS_UNIMPLEMENTED,
              {kPath, "layer_types", "model_type mistral",
               "sliding_window 8 to every layer"});
  // A list that agrees with transformers is fine; without a window the
  // list changes nothing.
  c = ParseFamily(
      &atlas_mistral_family,
      FamilyConfig("\"sliding_window\": 8, \"layer_types\": "
                   "[\"sliding_attention\", \"sliding_attention\"]"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 0), 8);
  c = ParseFamily(&atlas_mistral_family,
                  FamilyConfig("\"sliding_window\": null, \"layer_types\": "
                               "[\"full_attention\", \"sliding_attention\"]"));
  EXPECT_EQ(atlas_decoder_layer_window(&c, 1), 0);
}

// Keys a config leaves out take each family's config-class default:
// max_position_embeddings (which sets dynamic and YaRN RoPE) was 2048 for
// all four, and num_key_value_heads num_attention_heads.
TEST(FamilyConfig, FamilyDefaults) {
  const std::string heads32 =
      "{\"vocab_size\": 64, \"hidden_size\": 256, \"intermediate_size\": 64, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 32";
  struct Row {
    const atlas_decoder_family *family;
    int64_t max_positions, kv_heads;
  } rows[] = {{&atlas_llama_family, 2048, 32},
              {&atlas_qwen2_family, 32768, 32},
              {&atlas_qwen3_family, 32768, 32},
              {&atlas_mistral_family, 131072, 8}};
  for (const Row &r : rows) {
    atlas_decoder_config c = ParseFamily(r.family, heads32 + "}");
    EXPECT_EQ(c.max_position_embeddings, r.max_positions) << r.family;
    EXPECT_EQ(c.num_key_value_heads, r.kv_heads) << r.family;
    // An explicit null derives it from the heads, as every class does.
    c = ParseFamily(r.family, heads32 + ", \"num_key_value_heads\": null}");
    EXPECT_EQ(c.num_key_value_heads, 32) << r.family;
  }
  // Qwen2 with 4 heads and no num_key_value_heads: Qwen2Config's 32 cannot
  // group 4 heads (transformers cannot build it either).
  atlas_decoder_config c = {};
  std::string text = Config();
  ExpectError(atlas_decoder_config_parse(&atlas_qwen2_family, text.data(),
                                         text.size(), kPath, &c),
              ATLAS_STATUS_INVALID_ARGUMENT, {kPath, "num_key_value_heads 32"});
}

}  // namespace
