// Loading refuses what it does not implement by name, with the file and the
// key path, and reports malformed files clearly; nothing leaks (ASan).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atlas/runtime/text/tokenizer.h"

namespace {

// A tiny valid byte-level BPE file; tests splice one part in.
std::string File(const std::string &model_extra, const std::string &rest,
                 const std::string &vocab = "{\"a\": 0, \"b\": 1, \"ab\": 2}",
                 const std::string &merges = "[\"a b\"]",
                 const std::string &type = "\"BPE\"") {
  return "{\"version\": \"1.0\", \"added_tokens\": [], " + rest +
         (rest.empty() ? "" : ", ") + "\"model\": {\"type\": " + type +
         ", \"vocab\": " + vocab + ", \"merges\": " + merges + model_extra +
         "}}";
}

struct Loaded {
  atlas_status_code code;
  std::string message;
};

Loaded Load(const std::string &json) {
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load_from_memory(json.data(), json.size(),
                                                     "test.json", &tok);
  Loaded r{atlas_status_code_of(st), atlas_status_message(st)};
  atlas_status_free(st);
  // A failed load leaves no tokenizer (checked before the free).
  if (r.code != ATLAS_STATUS_OK) {
    EXPECT_EQ(tok, nullptr);
  }
  atlas_tokenizer_free(tok);
  return r;
}

// Encodes `text` (special tokens added) and expects exactly `want`.
void ExpectEncodes(atlas_tokenizer *tok, const std::string &text,
                   const std::vector<uint32_t> &want) {
  uint32_t *ids = nullptr;
  size_t n = 0;
  ASSERT_EQ(
      atlas_tokenizer_encode(tok, text.data(), text.size(), true, &ids, &n),
      ATLAS_OK);
  EXPECT_EQ(std::vector<uint32_t>(ids, ids + n), want);
  free(ids);
}

void ExpectRefused(const std::string &json, atlas_status_code code,
                   const std::string &key, const std::string &name) {
  Loaded r = Load(json);
  EXPECT_EQ(r.code, code) << r.message;
  EXPECT_NE(r.message.find("test.json: " + key + ":"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find(name), std::string::npos) << r.message;
}

TEST(LoadErrors, ValidFileLoadsAndEncodes) {
  std::string json = File("", "");
  atlas_tokenizer *tok = nullptr;
  ASSERT_EQ(
      atlas_tokenizer_load_from_memory(json.data(), json.size(), "t", &tok),
      ATLAS_OK);
  ExpectEncodes(tok, "abab", {2, 2});
  EXPECT_EQ(atlas_tokenizer_vocab_size(tok), 3u);
  atlas_tokenizer_free(tok);
}

// tokenizers accepts any u32 id in model.vocab (npm tokenizers@0.23.2 loads
// this file and encodes "abb" as 2, 4000000000). The fuzzer's file (corpus:
// tokenizer/sparse_vocab_id.bin) gave one token the id 726553673 and made
// the old table by id ask for 5.8 GB; ids near 2^32 asked for 48 GB.
TEST(LoadErrors, SparseIdsLoadAndDecode) {
  std::string json = File("", "", "{\"a\": 0, \"b\": 4000000000, \"ab\": 2}");
  atlas_tokenizer *tok = nullptr;
  atlas_status st =
      atlas_tokenizer_load_from_memory(json.data(), json.size(), "t", &tok);
  ASSERT_EQ(st, ATLAS_OK) << atlas_status_message(st);
  EXPECT_EQ(atlas_tokenizer_vocab_size(tok), 4000000001u);
  size_t len = 0;
  const char *b = atlas_tokenizer_id_to_token(tok, 4000000000u, &len);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::string(b, len), "b");
  EXPECT_EQ(atlas_tokenizer_id_to_token(tok, 1, &len), nullptr);
  EXPECT_EQ(len, 0u);
  ExpectEncodes(tok, "abb", {2, 4000000000u});
  // As the npm tokenizers@0.23.2 bindings decode the same file (no decoder:
  // pieces joined by spaces; id 1, which no token has, dropped): "b ab".
  const uint32_t back[] = {4000000000u, 2, 1};
  char *text = nullptr;
  size_t text_len = 0;
  ASSERT_EQ(atlas_tokenizer_decode(tok, back, 3, false, &text, &text_len),
            ATLAS_OK);
  EXPECT_EQ(std::string(text, text_len), "b ab");
  free(text);
  atlas_tokenizer_free(tok);
}

// An empty Sequence nested in a Sequence adds no decoder (tokenizers runs
// a nested Sequence's decoders in turn): Fuse alone joins the pieces.
// Flattening it copies no children from a NULL array (UBSan's nonnull
// check).
TEST(LoadErrors, EmptyNestedDecoderSequenceLoadsAndDecodes) {
  std::string json = File("",
                          "\"decoder\": {\"type\": \"Sequence\", \"decoders\": "
                          "[{\"type\": \"Sequence\", \"decoders\": []}, "
                          "{\"type\": \"Fuse\"}]}");
  atlas_tokenizer *tok = nullptr;
  atlas_status st =
      atlas_tokenizer_load_from_memory(json.data(), json.size(), "t", &tok);
  ASSERT_EQ(st, ATLAS_OK) << atlas_status_message(st);
  const uint32_t ids[] = {1, 2};
  char *text = nullptr;
  size_t text_len = 0;
  ASSERT_EQ(atlas_tokenizer_decode(tok, ids, 2, false, &text, &text_len),
            ATLAS_OK);
  EXPECT_EQ(std::string(text, text_len), "bab");
  free(text);
  atlas_tokenizer_free(tok);
}

// Dense ids (the largest below twice the vocabulary) are looked up in a
// table by id: a hole in it and an id past it have no token.
TEST(LoadErrors, DenseIdsWithAHoleDecode) {
  std::string json = File("", "", "{\"a\": 0, \"b\": 3, \"ab\": 2}");
  atlas_tokenizer *tok = nullptr;
  atlas_status st =
      atlas_tokenizer_load_from_memory(json.data(), json.size(), "t", &tok);
  ASSERT_EQ(st, ATLAS_OK) << atlas_status_message(st);
  EXPECT_EQ(atlas_tokenizer_vocab_size(tok), 4u);
  size_t len = 7;
  const char *b = atlas_tokenizer_id_to_token(tok, 3, &len);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::string(b, len), "b");
  for (uint32_t missing : {1u, 4u, 4000000000u}) {
    len = 7;
    EXPECT_EQ(atlas_tokenizer_id_to_token(tok, missing, &len), nullptr);
    EXPECT_EQ(len, 0u);
  }
  ExpectEncodes(tok, "abb", {2, 3});
  atlas_tokenizer_free(tok);
}

TEST(LoadErrors, UnsupportedModelsByName) {
  for (const char *m : {"WordPiece", "Unigram", "WordLevel", "Mystery"}) {
    ExpectRefused(File("", "", "{}", "[]", std::string("\"") + m + "\""),
                  ATLAS_STATUS_UNIMPLEMENTED, "model.type", m);
  }
}

TEST(LoadErrors, UnsupportedPartsByNameAndPath) {
  ExpectRefused(File("", "\"normalizer\": {\"type\": \"Lowercase\"}"),
                ATLAS_STATUS_UNIMPLEMENTED, "normalizer.type", "Lowercase");
  ExpectRefused(
      File("",
           "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": "
           "[{\"type\": \"NFC\"}, {\"type\": \"BertNormalizer\"}]}"),
      ATLAS_STATUS_UNIMPLEMENTED, "normalizer.normalizers[1].type",
      "BertNormalizer");
  ExpectRefused(
      File("",
           "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": "
           "[{\"type\": \"Digits\"}, {\"type\": \"Whitespace\"}]}"),
      ATLAS_STATUS_UNIMPLEMENTED, "pre_tokenizer.pretokenizers[1].type",
      "Whitespace");
  ExpectRefused(File("", "\"decoder\": {\"type\": \"WordPiece\"}"),
                ATLAS_STATUS_UNIMPLEMENTED, "decoder.type", "WordPiece");
  ExpectRefused(File("", "\"post_processor\": {\"type\": \"Mystery\"}"),
                ATLAS_STATUS_UNIMPLEMENTED, "post_processor.type", "Mystery");
  ExpectRefused(File(", \"dropout\": 0.1", ""), ATLAS_STATUS_UNIMPLEMENTED,
                "model.dropout", "dropout");
  ExpectRefused(File(", \"continuing_subword_prefix\": \"##\"", ""),
                ATLAS_STATUS_UNIMPLEMENTED, "model.continuing_subword_prefix",
                "##");
  ExpectRefused(File(", \"end_of_word_suffix\": \"</w>\"", ""),
                ATLAS_STATUS_UNIMPLEMENTED, "model.end_of_word_suffix", "</w>");
  ExpectRefused(File("", "\"truncation\": {\"max_length\": 8}"),
                ATLAS_STATUS_UNIMPLEMENTED, "truncation", "truncation");
  ExpectRefused(File("",
                     "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                     "{\"Regex\": \"a\"}, \"behavior\": \"Sideways\"}"),
                ATLAS_STATUS_UNIMPLEMENTED, "pre_tokenizer.behavior",
                "Sideways");
  ExpectRefused(
      File("",
           "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": "
           "\"_\", \"prepend_scheme\": \"sometimes\"}"),
      ATLAS_STATUS_UNIMPLEMENTED, "pre_tokenizer.prepend_scheme", "sometimes");
}

TEST(LoadErrors, NullPathIsAnArgumentError) {
  atlas_tokenizer *t = nullptr;
  atlas_status st = atlas_tokenizer_load(nullptr, &t);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(atlas_status_message(st)).find("no path"),
            std::string::npos);
  atlas_status_free(st);
  EXPECT_EQ(t, nullptr);
}

TEST(LoadErrors, NullAndZeroOptionsAreAccepted) {
  EXPECT_EQ(
      Load(File(", \"dropout\": null, \"continuing_subword_prefix\": \"\", "
                "\"end_of_word_suffix\": null",
                "\"truncation\": null, \"padding\": null"))
          .code,
      ATLAS_STATUS_OK);
  EXPECT_EQ(Load(File(", \"dropout\": 0.0", "")).code, ATLAS_STATUS_OK);
}

TEST(LoadErrors, MalformedFilesNameFileAndKey) {
  Loaded r = Load("{\"model\": ");
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS);
  EXPECT_NE(r.message.find("test.json: not valid JSON at line 1"),
            std::string::npos)
      << r.message;
  ExpectRefused("{\"added_tokens\": []}", ATLAS_STATUS_DATA_LOSS, "model",
                "missing");
  ExpectRefused(File("", "", "[1, 2]"), ATLAS_STATUS_DATA_LOSS, "model.vocab",
                "expected an object");
  ExpectRefused(File("", "", "{\"a\": -1}", "[]"), ATLAS_STATUS_DATA_LOSS,
                "model.vocab.a", "token id");
  ExpectRefused(File("", "", "{\"a\": 0, \"b\": 1}", "[\"a b\"]"),
                ATLAS_STATUS_DATA_LOSS, "model.merges[0]",
                "\"ab\" is not in model.vocab");
  ExpectRefused(
      File("", "", "{\"a\": 0, \"b\": 1, \"ab\": 2}", "[\"a b\", \"b a\"]"),
      ATLAS_STATUS_DATA_LOSS, "model.merges[1]",
      "\"ba\" is not in model.vocab");
  ExpectRefused(File("", "", "{\"a\": 0}", "[\"a\"]"), ATLAS_STATUS_DATA_LOSS,
                "model.merges[0]", "one space");
  ExpectRefused(File("", "", "{\"a\": 0}", "[[\"a\", 3]]"),
                ATLAS_STATUS_DATA_LOSS, "model.merges[0]", "[left, right]");
  ExpectRefused(File(", \"unk_token\": \"<unk>\"", ""), ATLAS_STATUS_DATA_LOSS,
                "model.unk_token", "<unk>");
  ExpectRefused(
      "{\"added_tokens\": [{\"content\": \"x\"}], \"model\": {\"type\": "
      "\"BPE\", "
      "\"vocab\": {}, \"merges\": []}}",
      ATLAS_STATUS_DATA_LOSS, "added_tokens[0].id", "missing");
  ExpectRefused(File("",
                     "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                     "{\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}"),
                ATLAS_STATUS_DATA_LOSS, "pre_tokenizer.pattern.Regex",
                "does not compile");
  ExpectRefused(File("",
                     "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                     "{\"Glob\": \"*\"}, \"behavior\": \"Isolated\"}"),
                ATLAS_STATUS_DATA_LOSS, "pre_tokenizer.pattern", "Regex");
  ExpectRefused(File("",
                     "\"decoder\": {\"type\": \"Strip\", \"content\": \"ab\", "
                     "\"start\": 1, \"stop\": 0}"),
                ATLAS_STATUS_DATA_LOSS, "decoder.content", "one character");
  ExpectRefused(File("",
                     "\"post_processor\": {\"type\": \"TemplateProcessing\", "
                     "\"single\": [{\"SpecialToken\": {\"id\": \"<s>\", "
                     "\"type_id\": 0}}], "
                     "\"special_tokens\": {}}"),
                ATLAS_STATUS_DATA_LOSS, "post_processor.special_tokens.<s>",
                "missing");
  ExpectRefused("[]", ATLAS_STATUS_DATA_LOSS, "(top level)", "object");
}

TEST(LoadErrors, MissingFileIsNotFound) {
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load("/nonexistent/tokenizer.json", &tok);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_NOT_FOUND);
  EXPECT_NE(
      std::string(atlas_status_message(st)).find("/nonexistent/tokenizer.json"),
      std::string::npos);
  atlas_status_free(st);
  EXPECT_EQ(tok, nullptr);
}

// Only a regular file is read: a FIFO nobody writes to was waited on for
// ever, and /dev/zero read until memory ran out (`atlas tokenize
// --tokenizer /dev/zero` was killed). Each is refused by kind, at once.
TEST(LoadErrors, OnlyARegularFileIsRead) {
  char dir[] = "/tmp/atlas_tok_kinds.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/tokenizer.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, const char *> cases[] = {
      {fifo, "FIFO"}, {"/dev/zero", "character device"}, {dir, "directory"}};
  for (const auto &c : cases) {
    SCOPED_TRACE(c.first);
    atlas_tokenizer *tok = nullptr;
    atlas_status st = atlas_tokenizer_load(c.first.c_str(), &tok);
    ASSERT_NE(st, ATLAS_OK);
    std::string m = atlas_status_message(st);
    EXPECT_NE(m.find(c.first), std::string::npos) << m;
    EXPECT_NE(m.find(c.second), std::string::npos) << m;
    atlas_status_free(st);
    EXPECT_EQ(tok, nullptr);
  }
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(LoadErrors, InvalidUtf8InputIsRefused) {
  std::string json = File("", "");
  atlas_tokenizer *tok = nullptr;
  ASSERT_EQ(
      atlas_tokenizer_load_from_memory(json.data(), json.size(), "t", &tok),
      ATLAS_OK);
  uint32_t *ids = nullptr;
  size_t n = 0;
  atlas_status st = atlas_tokenizer_encode(tok, "ab\xC3(", 4, false, &ids, &n);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(atlas_status_message(st)).find("byte 2"),
            std::string::npos)
      << atlas_status_message(st);
  atlas_status_free(st);
  EXPECT_EQ(ids, nullptr);
  atlas_tokenizer_free(tok);
}

}  // namespace
