// What the public API tests (text_api_test, model_api_test,
// threads_api_test) share: deterministic checkpoints, file reading, status
// messages and the tokenizers named on their command lines.
#ifndef ATLAS_TESTS_API_API_FIXTURE_H_
#define ATLAS_TESTS_API_API_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "atlas/atlas.h"
#include "tests/llama/checkpoint_fixture.h"
#include "tests/text/reference_files.h"

namespace atlas_test {

// TEST_TMPDIR/leaf holding a deterministic f32 checkpoint of `preset` in
// one shard, with `vocab` ids where it is above 0 (else the preset's).
inline std::string Checkpoint(const std::string &leaf, const char *preset,
                              uint64_t seed, int64_t vocab = 0) {
  return MakeCheckpoint(leaf, preset, seed, ATLAS_DTYPE_F32, /*tied=*/false,
                        /*shards=*/1, vocab);
}

// The tokenizer.json given for model `name` on the command line, loaded;
// NULL, with a failure recorded, where there is none or it does not load.
// Every failed fetch of a tokenizer package is a failure too.
inline atlas_tokenizer *LoadTokenizer(const ReferenceFiles &files,
                                      const std::string &name) {
  for (const auto &e : files.fetch_errors) ADD_FAILURE() << e;
  auto it = files.tokenizer.find(name);
  if (it == files.tokenizer.end()) {
    ADD_FAILURE() << "no tokenizer.json given for " << name;
    return nullptr;
  }
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  return tok;
}

}  // namespace atlas_test

#endif  // ATLAS_TESTS_API_API_FIXTURE_H_
