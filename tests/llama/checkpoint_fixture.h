// Writes a deterministic tiny Llama checkpoint into the test's temp dir.
#ifndef ATLAS_TESTS_LLAMA_CHECKPOINT_FIXTURE_H_
#define ATLAS_TESTS_LLAMA_CHECKPOINT_FIXTURE_H_

#include <stdlib.h>

#include <cstdint>
#include <string>

#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "tests/runtime/test_util.h"

// TEST_TMPDIR/leaf with config.json and the weights of `preset` ("tiny" or
// "small"), with `vocab` ids where it is above 0; the same arguments give the
// same bytes.
inline std::string MakeCheckpoint(const std::string &leaf, const char *preset,
                                  uint64_t seed, atlas_dtype dtype,
                                  bool tied = false, int shards = 1,
                                  int64_t vocab = 0,
                                  bool mixed_dtypes = false) {
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + leaf;
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = seed;
  EXPECT_OK(atlas_make_checkpoint_preset(preset, &o.config));
  o.config.tie_word_embeddings = tied;
  if (vocab > 0) o.config.vocab_size = vocab;
  o.dtype = dtype;
  o.mixed_dtypes = mixed_dtypes;
  o.shards = shards;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

// A one-layer model of hidden size `hidden` whose other matrices are small
// (2 heads of 8, 1 KV head, intermediate 16, vocab 64): a hidden state past
// what the decode products can normalise in 48 KiB of shared memory costs
// a few MB, not a few GB.
inline std::string MakeWideCheckpoint(const std::string &leaf, int64_t hidden,
                                      uint64_t seed, atlas_dtype dtype,
                                      bool qk_norm = false) {
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + leaf;
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = seed;
  EXPECT_OK(atlas_make_checkpoint_preset("tiny", &o.config));
  o.config.hidden_size = hidden;
  o.config.num_hidden_layers = 1;
  o.config.num_attention_heads = 2;
  o.config.num_key_value_heads = 1;
  o.config.head_dim = 8;
  o.config.intermediate_size = 16;
  o.config.qk_norm = qk_norm;  // Qwen3: q_norm and k_norm a layer
  o.dtype = dtype;
  o.shards = 1;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

#endif  // ATLAS_TESTS_LLAMA_CHECKPOINT_FIXTURE_H_
