// Exact ids and decodes against Hugging Face tokenizers (Rust) on the real
// tokenizer.json files of Llama 3, Qwen3 and a Llama 2 style SentencePiece
// BPE, and on small synthetic files for the options those do not use.
//
// Arguments: --expected FILE --corpus FILE, then for each model
// --model=NAME followed by its package's files (a tokenizer.json, or the
// error.txt of a failed fetch), or NAME=PATH. See tests/text/BUILD.
#include <gtest/gtest.h>
#include <jansson.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/text/tokenizer.h"
#include "tests/text/reference_files.h"

namespace {

atlas_test::ReferenceFiles g_files;
using atlas_test::Ids;
using atlas_test::ReadFile;
using atlas_test::Show;
using atlas_test::Str;
using atlas_test::StreamPieces;
using atlas_test::TakeMessage;
using atlas_test::ValidUtf8;

class Reference : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto &e : g_files.fetch_errors) ADD_FAILURE() << e;
    json_error_t err;
    expected_ = json_load_file(g_files.expected.c_str(), JSON_ALLOW_NUL, &err);
    ASSERT_NE(expected_, nullptr) << g_files.expected << ": " << err.text;
    corpus_ = json_load_file(g_files.corpus.c_str(), JSON_ALLOW_NUL, &err);
    ASSERT_NE(corpus_, nullptr) << g_files.corpus << ": " << err.text;
  }
  void TearDown() override {
    json_decref(expected_);
    json_decref(corpus_);
  }
  json_t *expected_ = nullptr;
  json_t *corpus_ = nullptr;
};

void CheckModel(const std::string &name, json_t *model, json_t *corpus) {
  SCOPED_TRACE(name);
  auto it = g_files.tokenizer.find(name);
  ASSERT_NE(it, g_files.tokenizer.end())
      << "no tokenizer.json given for " << name;
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  json_t *auto_error = json_object_get(model, "auto_error");
  if (auto_error) {
    std::cout << name << ": the reference has no AutoTokenizer decodes: "
              << json_string_value(auto_error) << "\n";
  }
  json_t *cases = json_object_get(model, "cases");
  ASSERT_EQ(json_array_size(cases), json_array_size(corpus));
  size_t failures = 0;
  for (size_t i = 0; i < json_array_size(cases) && failures < 20; i++) {
    json_t *c = json_array_get(cases, i);
    json_t *t = json_array_get(corpus, i);
    std::string text(json_string_value(t), json_string_length(t));
    SCOPED_TRACE("corpus[" + std::to_string(i) + "]: " + text.substr(0, 80));
    for (int special = 1; special >= 0; special--) {
      uint32_t *ids = nullptr;
      size_t n = 0;
      st = atlas_tokenizer_encode(tok, text.data(), text.size(), special, &ids,
                                  &n);
      ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
      std::vector<uint32_t> got(ids, ids + n);
      free(ids);
      std::vector<uint32_t> want =
          Ids(json_object_get(c, special ? "ids" : "ids_no_special"));
      if (got != want) failures++;
      EXPECT_EQ(Show(got), Show(want)) << "add_special=" << special;
      // The pre-tokenizer's stages hand pieces on in batches: a batch of one
      // or two pieces (every merge carried across a batch) gives the same.
      for (size_t batch : {1, 2}) {
        atlas_tokenizer_set_batch_for_testing(tok, batch);
        st = atlas_tokenizer_encode(tok, text.data(), text.size(), special,
                                    &ids, &n);
        atlas_tokenizer_set_batch_for_testing(tok, 0);
        ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
        std::vector<uint32_t> batched(ids, ids + n);
        free(ids);
        if (batched != want) failures++;
        EXPECT_EQ(Show(batched), Show(want)) << "batch " << batch;
      }
    }
    std::vector<uint32_t> ids = Ids(json_object_get(c, "ids"));
    const char *keys[4] = {"decode", "decode_skip", "decode_clean",
                           "decode_skip_clean"};
    // The clean columns are transformers' decode(..., clean_up_tokenization_
    // spaces=True) where the model's config sets it (`clean`), the plain
    // decode elsewhere; transformers 5 ignores the flag for BPE, so they
    // equal the plain ones, and so must ours with the flag set, every model.
    for (int k = 0; k < 4; k++) {
      atlas_tokenizer_decode_options opt = {k % 2 == 1, k >= 2, false};
      char *text_out = nullptr;
      size_t len = 0;
      st = atlas_tokenizer_decode_ex(tok, ids.data(), ids.size(), &opt,
                                     &text_out, &len);
      ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
      std::string got(text_out, len);
      free(text_out);
      if (got != Str(c, keys[k])) failures++;
      EXPECT_EQ(got, Str(c, keys[k])) << keys[k];
    }
    // transformers' AutoTokenizer on the model's own folder (gen_reference.py
    // --auto): its default decode is atlas_tokenizer_decode's.
    const char *auto_keys[2] = {"decode_auto", "decode_skip_auto"};
    for (int skip = 0; skip < 2 && json_object_get(c, auto_keys[skip]);
         skip++) {
      char *text_out = nullptr;
      size_t len = 0;
      st = atlas_tokenizer_decode(tok, ids.data(), ids.size(), skip, &text_out,
                                  &len);
      ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
      std::string got(text_out, len);
      free(text_out);
      if (got != Str(c, auto_keys[skip])) failures++;
      EXPECT_EQ(got, Str(c, auto_keys[skip])) << auto_keys[skip];
    }
    // Streaming: pieces are whole characters and add up to the decode. Not
    // for split_behaviors: its Strip decoder cuts characters per token, so
    // the decode of later ids is not the tail of the whole decode (that is
    // how tokenizers' DecodeStream is defined, and what we implement).
    for (int skip = 0; skip < 2 && name != "split_behaviors"; skip++) {
      size_t failed = 0;
      std::string all;
      for (const std::string &p :
           StreamPieces(tok, ids, skip, false, &failed)) {
        EXPECT_TRUE(ValidUtf8(p));
        if (p != "<null>") all += p;
      }
      ASSERT_EQ(failed, ids.size()) << "the stream failed at id " << failed;
      std::string full = Str(c, skip ? "decode_skip" : "decode");
      bool incomplete = full.size() >= 3 &&
                        full.compare(full.size() - 3, 3, "\xEF\xBF\xBD") == 0;
      if (incomplete) {
        EXPECT_EQ(full.compare(0, all.size(), all), 0)
            << "stream is not a prefix";
      } else {
        EXPECT_EQ(all, full) << "stream skip=" << skip;
      }
    }
  }
  atlas_tokenizer_free(tok);
}

TEST_F(Reference, EveryModelMatches) {
  json_t *models = json_object_get(expected_, "models");
  ASSERT_TRUE(json_is_object(models));
  ASSERT_GE(json_array_size(corpus_), 200u);
  const char *name;
  json_t *model;
  size_t n = 0;
  json_object_foreach(models, name, model) {
    CheckModel(name, model, corpus_);
    n++;
  }
  EXPECT_GE(n, 3u);
}

// The whole corpus as one text, six times over (tens of thousands of
// pieces: many batches of the pre-tokenizer's stages, and the regex's
// matches taken a batch at a time): the ids are the same whatever the
// batch, down to a piece at a time, as with no batching at all.
TEST_F(Reference, LongTextSameIdsInAnyBatch) {
  std::string text;
  for (int round = 0; round < 6; round++) {
    for (size_t i = 0; i < json_array_size(corpus_); i++) {
      json_t *t = json_array_get(corpus_, i);
      std::string s(json_string_value(t), json_string_length(t));
      // Atlas refuses text that is not UTF-8, as the whole text would be.
      if (!ValidUtf8(s)) continue;
      text += s;
      text += round % 2 ? "\n" : " ";
    }
  }
  ASSERT_GT(text.size(), 80000u);
  for (const auto &entry : g_files.tokenizer) {
    SCOPED_TRACE(entry.first);
    atlas_tokenizer *tok = nullptr;
    atlas_status st = atlas_tokenizer_load(entry.second.c_str(), &tok);
    ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
    std::vector<std::vector<uint32_t>> got;
    for (size_t batch : {size_t{0}, size_t{1}, size_t{3}, size_t{1} << 40}) {
      atlas_tokenizer_set_batch_for_testing(tok, batch);
      uint32_t *ids = nullptr;
      size_t n = 0;
      st =
          atlas_tokenizer_encode(tok, text.data(), text.size(), true, &ids, &n);
      ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
      got.emplace_back(ids, ids + n);
      free(ids);
    }
    EXPECT_GT(got[0].size(), 10000u);
    for (size_t k = 1; k < got.size(); k++) {
      EXPECT_TRUE(got[k] == got[0]) << "batch variant " << k << " differs";
    }
    atlas_tokenizer_free(tok);
  }
}

// One handle shared by threads: encode locks its word cache, decode and
// streaming only read. Every thread must get the single-threaded ids.
TEST_F(Reference, SharedHandleAcrossThreads) {
  for (const char *name : {"llama3", "sp_metaspace"}) {
    auto it = g_files.tokenizer.find(name);
    ASSERT_NE(it, g_files.tokenizer.end()) << name;
    atlas_tokenizer *tok = nullptr;
    atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
    ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
    std::vector<std::string> texts;
    for (size_t i = 0; i < json_array_size(corpus_); i++) {
      json_t *t = json_array_get(corpus_, i);
      texts.emplace_back(json_string_value(t), json_string_length(t));
    }
    auto encode_all = [&](std::vector<std::vector<uint32_t>> *out,
                          std::vector<std::string> *dec) {
      for (const std::string &text : texts) {
        uint32_t *ids = nullptr;
        size_t n = 0;
        atlas_status s = atlas_tokenizer_encode(tok, text.data(), text.size(),
                                                true, &ids, &n);
        if (s) {
          atlas_status_free(s);
          out->emplace_back();
          continue;
        }
        out->emplace_back(ids, ids + n);
        char *d = nullptr;
        size_t len = 0;
        s = atlas_tokenizer_decode(tok, ids, n, false, &d, &len);
        dec->emplace_back(s ? std::string("error") : std::string(d, len));
        atlas_status_free(s);
        free(d);
        free(ids);
      }
    };
    std::vector<std::vector<uint32_t>> want;
    std::vector<std::string> want_dec;
    encode_all(&want, &want_dec);
    const int kThreads = 4;
    std::vector<std::vector<std::vector<uint32_t>>> got(kThreads);
    std::vector<std::vector<std::string>> got_dec(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back(encode_all, &got[t], &got_dec[t]);
    }
    for (auto &t : threads) t.join();
    for (int t = 0; t < kThreads; t++) {
      EXPECT_TRUE(got[t] == want) << name << " thread " << t;
      EXPECT_TRUE(got_dec[t] == want_dec) << name << " thread " << t;
    }
    atlas_tokenizer_free(tok);
  }
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  return RUN_ALL_TESTS();
}
