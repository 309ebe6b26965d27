// RoPE inverse frequencies against transformers 5.17's formulas, for the
// config shapes the parity cases do not cover. Expected values come from a
// pure-Python transcription of modeling_rope_utils (_compute_yarn_parameters,
// _compute_llama3_parameters and standardize_rope_params), run in double.
#include <string>
#include <vector>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/rope/rope.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

const char kPath[] = "ckpt/config.json";

// hidden 32, 4 heads: head_dim 8, so four inverse frequencies.
atlas_decoder_config Parse(const std::string &extra) {
  std::string text =
      "{\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 64, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
      "\"max_position_embeddings\": 64, " +
      extra + "}";
  atlas_decoder_config cfg = {};
  atlas_test::Status s(
      atlas_llama_config_parse(text.data(), text.size(), kPath, &cfg));
  EXPECT_TRUE(s.ok()) << s.message();
  return cfg;
}

void ExpectInvFreq(const atlas_decoder_config &c,
                   const std::vector<double> &want, double want_factor) {
  std::vector<double> inv(want.size(), -1);
  double factor = -1;
  ASSERT_EQ(atlas_rope_rot_dim(&c.rope, c.head_dim) / 2, (int64_t)want.size());
  atlas_rope_inv_freq(&c.rope, c.head_dim, c.max_position_embeddings,
                      c.max_position_embeddings, inv.data(), &factor);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(inv[i], want[i], 1e-12 * want[i]) << "inv_freq[" << i << "]";
  }
  EXPECT_NEAR(factor, want_factor, 1e-12);
}

// Qwen's recommended YaRN setup keeps max_position_embeddings at the
// original length: the ratio is 1, but transformers 5 scales by the
// explicit factor 4 (attention factor 0.1 ln 4 + 1). Atlas used the ratio
// (no scaling at all) before.
TEST(Rope, YarnUsesTheExplicitFactor) {
  atlas_decoder_config c = Parse(
      "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
      "\"original_max_position_embeddings\": 64}");
  ExpectInvFreq(c, {1.0, 0.0625, 0.0025, 0.00025}, 1.1386294361119891);
  // Factor 4 with a ratio of 2: the factor scales, the original length
  // places the ramp.
  c = Parse(
      "\"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
      "\"rope_theta\": 10000.0, "
      "\"original_max_position_embeddings\": 32}");
  ExpectInvFreq(c, {1.0, 0.025, 0.0025, 0.00025}, 1.1386294361119891);
}

// A top-level original_max_position_embeddings takes priority over the rope
// object's (standardize_rope_params), for yarn and llama3.
TEST(Rope, TopLevelOriginalLengthWins) {
  atlas_decoder_config c = Parse(
      "\"original_max_position_embeddings\": 32, "
      "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, "
      "\"original_max_position_embeddings\": 64}");
  EXPECT_EQ(c.rope.original_max_positions, 32);
  ExpectInvFreq(c, {1.0, 0.025, 0.0025, 0.00025}, 1.1386294361119891);
  c = Parse(
      "\"original_max_position_embeddings\": 1000, "
      "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
      "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
      "\"original_max_position_embeddings\": 64}");
  ExpectInvFreq(c, {1.0, 0.1, 0.0029753525068469469, 0.000125}, 1.0);
  // Other types do not read it.
  c = Parse(
      "\"original_max_position_embeddings\": 1000, "
      "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}");
  ExpectInvFreq(c, {0.5, 0.05, 0.005, 0.0005}, 1.0);
}

// llama3 without original_max_position_embeddings anywhere: transformers
// fills in max_position_embeddings (Atlas refused it as missing).
TEST(Rope, Llama3DefaultsTheOriginalLength) {
  atlas_decoder_config c = Parse(
      "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
      "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}");
  ExpectInvFreq(c, {1.0, 0.013042256043820465, 0.00125, 0.000125}, 1.0);
}

TEST(Rope, OriginalLengthMustBeAPositiveInteger) {
  std::string text =
      "{\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 64, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
      "\"original_max_position_embeddings\": 12.5, \"rope_scaling\": "
      "{\"rope_type\": \"yarn\", \"factor\": 2.0}}";
  atlas_decoder_config cfg = {};
  atlas_test::ExpectError(
      atlas_llama_config_parse(text.data(), text.size(), kPath, &cfg),
      ATLAS_STATUS_INVALID_ARGUMENT,
      {kPath, "\"original_max_position_embeddings\" is 12.5"});
}

}  // namespace
