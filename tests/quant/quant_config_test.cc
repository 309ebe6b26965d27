// config.json's quantization_config (runtime/quant/quant_config.h): the
// formats Atlas reads are described exactly; every other method, bit width,
// packing or scheme is refused up front, the message naming the method and
// the field.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/quant/quant_config.h"
#include "tests/runtime/test_util.h"

namespace {

std::string Cfg(const std::string &qc) {
  return "{\"model_type\": \"llama\", \"quantization_config\": " + qc + "}";
}

atlas_quant_config ParseOk(const std::string &text) {
  atlas_quant_config c{};
  StatusResult r = Take(
      atlas_quant_config_parse(text.data(), text.size(), "m/config.json", &c));
  EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message << "\n" << text;
  return c;
}

std::string Describe(const atlas_quant_config &c) {
  char buf[128];
  atlas_quant_config_describe(&c, buf, sizeof(buf));
  return buf;
}

// Refused, and the message holds every needle.
void ExpectRefused(const std::string &text,
                   const std::vector<std::string> &needles) {
  atlas_quant_config c{};
  StatusResult r = Take(
      atlas_quant_config_parse(text.data(), text.size(), "m/config.json", &c));
  EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << text;
  EXPECT_NE(r.message.find("m/config.json"), std::string::npos) << r.message;
  for (const std::string &n : needles) {
    EXPECT_NE(r.message.find(n), std::string::npos)
        << "missing \"" << n << "\" in: " << r.message;
  }
  EXPECT_EQ(c.method, ATLAS_QUANT_NONE);
  EXPECT_EQ(c.keep, nullptr);
}

const char kCtW4[] = R"({
  "quant_method": "compressed-tensors", "format": "pack-quantized",
  "quantization_status": "compressed", "kv_cache_scheme": null,
  "sparsity_config": {}, "ignore": ["lm_head", "re:.*mlp.gate$"],
  "config_groups": {"group_0": {"targets": ["Linear"],
    "input_activations": null, "output_activations": null,
    "weights": {"num_bits": 4, "type": "int", "symmetric": true,
                "strategy": "group", "group_size": 128, "dynamic": false,
                "actorder": null, "observer": "minmax"}}}})";

// `s` with the first `from` replaced by `to` (which must be there).
std::string Replace(std::string s, const std::string &from,
                    const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// The compressed-tensors W4A16 config with `from` replaced by `to`.
std::string CtWith(const std::string &from, const std::string &to) {
  return Replace(kCtW4, from, to);
}

TEST(QuantConfig, NoQuantizationConfigIsNone) {
  atlas_quant_config c = ParseOk("{\"model_type\": \"llama\"}");
  EXPECT_EQ(c.method, ATLAS_QUANT_NONE);
  c = ParseOk(Cfg("null"));
  EXPECT_EQ(c.method, ATLAS_QUANT_NONE);
  EXPECT_EQ(Describe(c), "none");
}

TEST(QuantConfig, Fp8BlockScaled) {
  atlas_quant_config c = ParseOk(Cfg(
      R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
          "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]})"));
  EXPECT_EQ(c.method, ATLAS_QUANT_FP8);
  EXPECT_EQ(c.layout, ATLAS_QUANT_LAYOUT_FP8);
  EXPECT_EQ(c.block_n, 128u);
  EXPECT_EQ(c.group_k, 128u);
  EXPECT_TRUE(c.dynamic_fp8_activations);
  ASSERT_EQ(c.keep_count, 1u);
  EXPECT_STREQ(c.keep[0], "lm_head");
  EXPECT_EQ(Describe(c), "fp8 fp8 block 128x128");
  atlas_quant_config_free(&c);
}

TEST(QuantConfig, CompressedTensorsPackQuantized) {
  atlas_quant_config c = ParseOk(Cfg(kCtW4));
  EXPECT_EQ(c.method, ATLAS_QUANT_COMPRESSED_TENSORS);
  EXPECT_EQ(c.layout, ATLAS_QUANT_LAYOUT_INT_ROWS);
  EXPECT_EQ(c.bits, 4u);
  EXPECT_EQ(c.group_k, 128u);
  EXPECT_FALSE(c.zeros);
  EXPECT_FALSE(c.g_idx);
  ASSERT_EQ(c.keep_count, 2u);
  EXPECT_STREQ(c.keep[1], "re:.*mlp.gate$");
  EXPECT_EQ(Describe(c), "compressed-tensors int4 group 128");
  atlas_quant_config_free(&c);
  for (int group : {32, 64}) {
    c = ParseOk(Cfg(CtWith("\"group_size\": 128",
                           "\"group_size\": " + std::to_string(group))));
    EXPECT_EQ(c.group_k, (uint32_t)group);
    atlas_quant_config_free(&c);
  }
  c = ParseOk(Cfg(CtWith(R"("num_bits": 4, "type": "int", "symmetric": true,
                "strategy": "group", "group_size": 128)",
                         R"("num_bits": 8, "type": "int", "symmetric": false,
                "strategy": "channel")")));
  EXPECT_EQ(c.bits, 8u);
  EXPECT_EQ(c.group_k, 0u);
  EXPECT_TRUE(c.zeros);
  EXPECT_EQ(Describe(c), "compressed-tensors int8 channel asymmetric");
  atlas_quant_config_free(&c);
  c = ParseOk(Cfg(CtWith("\"actorder\": null", "\"actorder\": \"group\"")));
  EXPECT_TRUE(c.g_idx);
  atlas_quant_config_free(&c);
}

TEST(QuantConfig, CompressedTensorsFloatQuantized) {
  const std::string fp8 = R"("num_bits": 8, "type": "float", "symmetric": true,
                "strategy": "%s")";
  const std::string w4 = R"("num_bits": 4, "type": "int", "symmetric": true,
                "strategy": "group", "group_size": 128)";
  auto with = [&](const std::string &strategy, const std::string &extra) {
    return Replace(CtWith(w4, Replace(fp8, "%s", strategy) + extra),
                   "pack-quantized", "float-quantized");
  };
  atlas_quant_config c = ParseOk(Cfg(with("tensor", "")));
  EXPECT_EQ(c.layout, ATLAS_QUANT_LAYOUT_FP8);
  EXPECT_EQ(c.block_n, 0u);
  EXPECT_EQ(c.group_k, 0u);
  EXPECT_EQ(Describe(c), "compressed-tensors fp8 tensor");
  atlas_quant_config_free(&c);
  c = ParseOk(Cfg(with("channel", "")));
  EXPECT_EQ(c.block_n, 1u);
  EXPECT_EQ(c.group_k, 0u);
  atlas_quant_config_free(&c);
  c = ParseOk(Cfg(with("block", ", \"block_structure\": [128, 64]")));
  EXPECT_EQ(c.block_n, 128u);
  EXPECT_EQ(c.group_k, 64u);
  atlas_quant_config_free(&c);
  // FP8 activations per token, dynamic: accepted (run in f32 here).
  std::string dyn =
      Replace(with("channel", ""), "\"input_activations\": null",
              R"("input_activations": {"num_bits": 8, "type": "float",
                 "strategy": "token", "dynamic": true, "symmetric": true})");
  c = ParseOk(Cfg(dyn));
  EXPECT_TRUE(c.dynamic_fp8_activations);
  atlas_quant_config_free(&c);
  // Static activation scales are refused.
  std::string stat = Replace(dyn, "\"dynamic\": true", "\"dynamic\": false");
  ExpectRefused(Cfg(stat), {"\"compressed-tensors\"",
                            "input_activations.dynamic", "static"});
  std::string int8a = Replace(
      dyn, "\"type\": \"float\",\n                 \"strategy\": \"token\"",
      "\"type\": \"int\", \"strategy\": \"token\"");
  ExpectRefused(Cfg(int8a), {"input_activations", "is not FP8"});
  ExpectRefused(Cfg(with("group", ", \"group_size\": 0")),
                {"weights.strategy"});
  ExpectRefused(Cfg(with("block", "")), {"weights.block_structure"});
  ExpectRefused(Cfg(with("block", ", \"block_structure\": [128]")),
                {"weights.block_structure"});
}

TEST(QuantConfig, Awq) {
  atlas_quant_config c =
      ParseOk(Cfg(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
              "version": "gemm", "zero_point": true})"));
  EXPECT_EQ(c.method, ATLAS_QUANT_AWQ);
  EXPECT_EQ(c.layout, ATLAS_QUANT_LAYOUT_AWQ);
  EXPECT_EQ(c.group_k, 128u);
  EXPECT_TRUE(c.zeros);
  EXPECT_EQ(c.zero_offset, 0u);
  EXPECT_EQ(Describe(c), "awq int4 group 128");
  // AutoAWQ's own key names.
  c = ParseOk(Cfg(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64,
                      "version": "GEMM", "zero_point": true})"));
  EXPECT_EQ(c.group_k, 64u);
}

TEST(QuantConfig, Gptq) {
  atlas_quant_config c =
      ParseOk(Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
              "desc_act": true, "sym": true, "checkpoint_format": "gptq"})"));
  EXPECT_EQ(c.method, ATLAS_QUANT_GPTQ);
  EXPECT_EQ(c.layout, ATLAS_QUANT_LAYOUT_GPTQ);
  EXPECT_EQ(c.bits, 4u);
  EXPECT_TRUE(c.g_idx);
  EXPECT_TRUE(c.zeros);
  EXPECT_EQ(c.zero_offset, 1u);
  EXPECT_EQ(Describe(c), "gptq int4 group 128 g_idx");
  c = ParseOk(Cfg(R"({"quant_method": "gptq", "bits": 8, "group_size": -1,
                      "desc_act": false, "sym": false,
                      "checkpoint_format": "gptq_v2"})"));
  EXPECT_EQ(c.bits, 8u);
  EXPECT_EQ(c.group_k, 0u);
  EXPECT_FALSE(c.g_idx);
  EXPECT_EQ(c.zero_offset, 0u);
  EXPECT_EQ(Describe(c), "gptq int8 channel");
}

TEST(QuantConfig, OtherMethodsAreRefusedByName) {
  for (const char *m : {"bitsandbytes", "hqq", "mxfp4", "quanto", "eetq",
                        "aqlm", "exl2", "torchao", "fbgemm_fp8", "bitnet",
                        "vptq", "higgs", "GGUF", "FP8", "AWQ", ""}) {
    ExpectRefused(
        Cfg(std::string("{\"quant_method\": \"") + m + "\"}"),
        {std::string("quantization_config.quant_method \"") + m + "\"",
         "not a format Atlas reads"});
  }
  ExpectRefused(Cfg(R"({"load_in_4bit": true, "bnb_4bit_quant_type": "nf4"})"),
                {"has no quant_method", "load_in_4bit", "bitsandbytes"});
  ExpectRefused(Cfg(R"({"bits": 4})"), {"has no quant_method"});
  ExpectRefused(Cfg(R"({"quant_method": 4})"),
                {"quantization_config.quant_method is an integer"});
  ExpectRefused(Cfg("\"gptq\""), {"quantization_config is a string"});
  ExpectRefused(Cfg("[]"), {"quantization_config is an array"});
  ExpectRefused(
      "{\"compression_config\": {\"quant_method\": \"compressed-tensors\"}}",
      {"compression_config"});
}

TEST(QuantConfig, Fp8Refusals) {
  ExpectRefused(Cfg(R"({"quant_method": "fp8", "activation_scheme": "static",
                         "weight_block_size": [128, 128]})"),
                {"\"fp8\"", "quantization_config.activation_scheme"});
  ExpectRefused(
      Cfg(R"({"quant_method": "fp8", "activation_scheme": "dynamic"})"),
      {"\"fp8\"", "quantization_config.weight_block_size", "missing"});
  ExpectRefused(Cfg(R"({"quant_method": "fp8", "fmt": "e5m2",
                         "weight_block_size": [128, 128]})"),
                {"\"fp8\"", "quantization_config.fmt"});
  ExpectRefused(
      Cfg(R"({"quant_method": "fp8", "weight_block_size": [0, 128]})"),
      {"quantization_config.weight_block_size"});
  ExpectRefused(Cfg(R"({"quant_method": "fp8", "weight_block_size": "128"})"),
                {"quantization_config.weight_block_size"});
  ExpectRefused(Cfg(R"({"quant_method": "fp8", "weight_block_size": [128, 128],
                         "modules_to_not_convert": "lm_head"})"),
                {"quantization_config.modules_to_not_convert"});
}

TEST(QuantConfig, AwqRefusals) {
  const std::string base =
      R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true)";
  ExpectRefused(Cfg(base + R"(, "version": "gemv"})"),
                {"\"awq\"", "quantization_config.version", "gemm"});
  ExpectRefused(Cfg(base + R"(, "version": "gemv_fast"})"),
                {"quantization_config.version"});
  ExpectRefused(Cfg(base + R"(, "backend": "llm-awq"})"),
                {"quantization_config.backend"});
  ExpectRefused(Cfg(R"({"quant_method": "awq", "bits": 8, "group_size": 128})"),
                {"\"awq\"", "quantization_config.bits", "is 8"});
  ExpectRefused(Cfg(R"({"quant_method": "awq", "bits": 3, "group_size": 128})"),
                {"quantization_config.bits", "is 3"});
  ExpectRefused(Cfg(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
                         "zero_point": false})"),
                {"quantization_config.zero_point"});
  ExpectRefused(Cfg(R"({"quant_method": "awq", "bits": 4})"),
                {"quantization_config.q_group_size", "missing"});
  ExpectRefused(Cfg(R"({"quant_method": "awq", "bits": 4, "group_size": -1})"),
                {"quantization_config.group_size", "is -1"});
}

TEST(QuantConfig, GptqRefusals) {
  for (int bits : {2, 3, 5, 16}) {
    ExpectRefused(Cfg("{\"quant_method\": \"gptq\", \"bits\": " +
                      std::to_string(bits) + ", \"group_size\": 128}"),
                  {"\"gptq\"", "quantization_config.bits",
                   "is " + std::to_string(bits), "4 and 8"});
  }
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "group_size": 128})"),
                {"quantization_config.bits", "missing"});
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "bits": "4"})"),
                {"quantization_config.bits", "a string"});
  ExpectRefused(
      Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 100})"),
      {"quantization_config.group_size", "is 100"});
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "checkpoint_format": "marlin"})"),
                {"quantization_config.checkpoint_format", "marlin"});
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "format": "bitblas"})"),
                {"quantization_config.format"});
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "static_groups": true})"),
                {"quantization_config.static_groups"});
  ExpectRefused(Cfg(R"({"quant_method": "gptq", "bits": 4, "group_size": 128,
                         "desc_act": "yes"})"),
                {"quantization_config.desc_act"});
}

TEST(QuantConfig, CompressedTensorsRefusals) {
  const char *ct = "\"compressed-tensors\"";
  ExpectRefused(Cfg(CtWith("\"format\": \"pack-quantized\"",
                           "\"format\": \"marlin-24\"")),
                {ct, "format", "pack-quantized"});
  ExpectRefused(Cfg(CtWith("\"format\": \"pack-quantized\"",
                           "\"format\": \"int-quantized\"")),
                {"int-quantized"});
  ExpectRefused(Cfg(CtWith("\"format\": \"pack-quantized\"",
                           "\"format\": \"nvfp4-pack-quantized\"")),
                {"format"});
  ExpectRefused(Cfg(CtWith("\"num_bits\": 4", "\"num_bits\": 2")),
                {ct, "weights.num_bits", "is 2"});
  ExpectRefused(Cfg(CtWith("\"type\": \"int\"", "\"type\": \"float\"")),
                {"weights.num_bits", "F8_E4M3"});
  ExpectRefused(Cfg(CtWith("\"type\": \"int\"", "\"type\": \"mx\"")),
                {"weights.type"});
  ExpectRefused(
      Cfg(CtWith("\"strategy\": \"group\"", "\"strategy\": \"tensor\"")),
      {"weights.strategy"});
  ExpectRefused(Cfg(CtWith("\"group_size\": 128", "\"group_size\": 12")),
                {"weights.group_size", "is 12"});
  ExpectRefused(Cfg(CtWith("\"dynamic\": false", "\"dynamic\": true")),
                {"weights.dynamic"});
  ExpectRefused(Cfg(CtWith("\"actorder\": null", "\"actorder\": \"dynamic\"")),
                {"weights.actorder"});
  ExpectRefused(Cfg(CtWith("\"quantization_status\": \"compressed\"",
                           "\"quantization_status\": \"frozen\"")),
                {"quantization_status"});
  ExpectRefused(Cfg(CtWith("\"kv_cache_scheme\": null",
                           "\"kv_cache_scheme\": {\"num_bits\": 8}")),
                {"kv_cache_scheme"});
  ExpectRefused(
      Cfg(CtWith("\"sparsity_config\": {}",
                 "\"sparsity_config\": {\"format\": \"sparse-24-bitmask\"}")),
      {"sparsity_config"});
  // A dense sparsity_config says nothing is sparse.
  atlas_quant_config c =
      ParseOk(Cfg(CtWith("\"sparsity_config\": {}",
                         "\"sparsity_config\": {\"format\": \"dense\"}")));
  EXPECT_EQ(c.method, ATLAS_QUANT_COMPRESSED_TENSORS);
  atlas_quant_config_free(&c);
  ExpectRefused(Cfg(CtWith("\"targets\": [\"Linear\"]",
                           "\"targets\": [\"re:.*q_proj\"]")),
                {"targets"});
  ExpectRefused(Cfg(CtWith("\"output_activations\": null",
                           "\"output_activations\": {\"num_bits\": 8}")),
                {"output_activations"});
  ExpectRefused(
      Cfg(CtWith("\"config_groups\": {\"group_0\": {",
                 "\"config_groups\": {\"group_1\": {}, \"group_0\": {")),
      {"config_groups", "exactly one group"});
  ExpectRefused(Cfg(CtWith("\"ignore\": [\"lm_head\", \"re:.*mlp.gate$\"]",
                           "\"ignore\": [1]")),
                {"quantization_config.ignore"});
}

}  // namespace
