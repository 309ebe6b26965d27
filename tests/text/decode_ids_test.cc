// Decodes of arbitrary id sequences against Hugging Face tokenizers: ids a
// model may generate, most of which no text encodes to (a character split
// across byte tokens, special tokens mid-word, ids past the vocabulary).
// decode_ids.json holds the sequences (fuzz_ids.py) with tokenizers'
// decode and, where the reference has them, DecodeStream's pieces
// (gen_decode_ids.py). Arguments as reference_test's, without --corpus.
#include <gtest/gtest.h>
#include <jansson.h>

#include <string>
#include <vector>

#include "atlas/runtime/text/tokenizer.h"
#include "tests/text/reference_files.h"

namespace {

atlas_test::ReferenceFiles g_files;
using atlas_test::Ids;
using atlas_test::Show;
using atlas_test::Str;
using atlas_test::StreamPieces;
using atlas_test::TakeMessage;
using atlas_test::ValidUtf8;

// DecodeStream's pieces: a JSON array of strings and nulls (no new text).
std::vector<std::string> Pieces(json_t *array) {
  std::vector<std::string> v;
  for (size_t i = 0; i < json_array_size(array); i++) {
    json_t *p = json_array_get(array, i);
    v.push_back(json_is_string(p)
                    ? std::string(json_string_value(p), json_string_length(p))
                    : std::string("<null>"));
  }
  return v;
}

void CheckModel(const std::string &name, json_t *model, size_t *streams,
                size_t *resyncs) {
  SCOPED_TRACE(name);
  auto it = g_files.tokenizer.find(name);
  ASSERT_NE(it, g_files.tokenizer.end())
      << "no tokenizer.json given for " << name;
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  json_t *cases = json_object_get(model, "cases");
  ASSERT_GE(json_array_size(cases), 1u);
  size_t failures = 0;
  for (size_t i = 0; i < json_array_size(cases) && failures < 20; i++) {
    json_t *c = json_array_get(cases, i);
    std::vector<uint32_t> ids = Ids(json_object_get(c, "ids"));
    SCOPED_TRACE("cases[" + std::to_string(i) + "]: " + Show(ids));
    for (int skip = 0; skip < 2; skip++) {
      char *text = nullptr;
      size_t len = 0;
      st = atlas_tokenizer_decode(tok, ids.data(), ids.size(), skip, &text,
                                  &len);
      ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
      std::string got(text, len);
      free(text);
      std::string want = Str(c, skip ? "decode_skip" : "decode");
      if (got != want) failures++;
      EXPECT_EQ(got, want) << "skip_special=" << skip;

      json_t *want_stream = json_object_get(c, skip ? "stream_skip" : "stream");
      if (!want_stream) continue;
      ++*streams;
      // Where tokenizers' step() raised (InvalidPrefix), ours must fail at
      // the same id, after the same pieces.
      json_t *error_at =
          json_object_get(c, skip ? "stream_skip_error_at" : "stream_error_at");
      size_t fail_at = error_at
                           ? static_cast<size_t>(json_integer_value(error_at))
                           : ids.size();
      size_t failed = 0;
      std::vector<std::string> pieces =
          StreamPieces(tok, ids, skip, false, &failed);
      for (const std::string &p : pieces) EXPECT_TRUE(ValidUtf8(p));
      EXPECT_EQ(failed, fail_at)
          << "ours failed at id " << failed << ", tokenizers' at " << fail_at
          << " (" << ids.size() << ": none)";
      if (pieces != Pieces(want_stream) || failed != fail_at) failures++;
      EXPECT_EQ(pieces, Pieces(want_stream)) << "stream skip_special=" << skip;

      // The resyncing stream (generation's) never fails, and gives
      // tokenizers' pieces wherever tokenizers' stream does not raise.
      size_t resync_failed = 0;
      std::vector<std::string> resync =
          StreamPieces(tok, ids, skip, true, &resync_failed);
      EXPECT_EQ(resync_failed, ids.size())
          << "the resync stream failed at id " << resync_failed;
      for (const std::string &p : resync)
        EXPECT_TRUE(ValidUtf8(p) && !p.empty());
      ASSERT_EQ(resync.size(), ids.size());
      std::vector<std::string> head(
          resync.begin(), resync.begin() + static_cast<long>(pieces.size()));
      EXPECT_EQ(head, pieces) << "resync stream skip_special=" << skip;
      if (!error_at) {
        EXPECT_EQ(resync, pieces);
      } else {
        ++*resyncs;
      }
    }
  }
  atlas_tokenizer_free(tok);
}

TEST(DecodeIds, EveryModelMatches) {
  for (const auto &e : g_files.fetch_errors) ADD_FAILURE() << e;
  json_error_t err;
  json_t *expected =
      json_load_file(g_files.expected.c_str(), JSON_ALLOW_NUL, &err);
  ASSERT_NE(expected, nullptr) << g_files.expected << ": " << err.text;
  json_t *models = json_object_get(expected, "models");
  const char *name;
  json_t *model;
  size_t n = 0, n_cases = 0, streams = 0, resyncs = 0;
  json_object_foreach(models, name, model) {
    CheckModel(name, model, &streams, &resyncs);
    n_cases += json_array_size(json_object_get(model, "cases"));
    n++;
  }
  EXPECT_GE(n, 3u);
  std::cout << n << " models, " << streams << " streams compared, " << resyncs
            << " of them resynced where tokenizers' raised\n";
  // The committed file has the streams (its oracle says so); the Node
  // bindings' files of tools/fuzz/fuzz_tokenizer.sh --ids have none.
  const char *oracle = json_string_value(json_object_get(expected, "oracle"));
  if (oracle && std::string(oracle).find("DecodeStream") != std::string::npos) {
    EXPECT_EQ(streams, 2 * n_cases);
    EXPECT_GT(resyncs, 0u);
  }
  json_decref(expected);
}

// The rule at a mismatch, on Llama 2's byte fallback: "D" (<0x44>) is
// emitted, then the stray continuation byte <0x97> makes the run [44 97]
// two U+FFFD, so the text of the ids since "D" no longer starts with it.
// tokenizers' DecodeStream raises there; the resyncing stream emits that
// text past one character (what "D" was), as vLLM's detokenizer does.
TEST(DecodeIds, ResyncSlicesByCharacters) {
  auto it = g_files.tokenizer.find("llama2");
  ASSERT_NE(it, g_files.tokenizer.end());
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  const std::vector<uint32_t> ids = {17384, 71, 154,
                                     29010};  // series <0x44> <0x97> 在
  char *text = nullptr;
  size_t len = 0;
  ASSERT_EQ(
      atlas_tokenizer_decode(tok, ids.data(), ids.size(), false, &text, &len),
      ATLAS_OK);
  EXPECT_EQ(std::string(text, len),
            "series\xEF\xBF\xBD\xEF\xBF\xBD\xE5\x9C\xA8");
  free(text);
  std::vector<std::string> want = {"series", "D", "<null>",
                                   "\xEF\xBF\xBD\xE5\x9C\xA8"};
  size_t failed = 0;
  EXPECT_EQ(StreamPieces(tok, ids, false, true, &failed), want);
  EXPECT_EQ(failed, ids.size());

  atlas_tokenizer_stream *stream = nullptr;
  ASSERT_EQ(atlas_tokenizer_stream_create(tok, false, &stream), ATLAS_OK);
  for (size_t k = 0; k < ids.size(); k++) {
    char *piece = nullptr;
    st = atlas_tokenizer_stream_step(stream, ids[k], &piece, &len);
    free(piece);
    if (k < 3) {
      EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
    } else {
      ASSERT_NE(st, ATLAS_OK);
      EXPECT_NE(std::string(atlas_status_message(st)).find("id 29010"),
                std::string::npos)
          << atlas_status_message(st);
      atlas_status_free(st);
    }
  }
  atlas_tokenizer_stream_free(stream);
  atlas_tokenizer_free(tok);
}

// When generation ends inside a character, the stream still holds the whole
// characters before it (tokenizers' DecodeStream holds all text that ends in
// U+FFFD): finish releases them, without the incomplete one. Llama 3:
// "Hello", then " " with the first byte of "\u20ac" (then 224, 105 end it).
TEST(DecodeIds, FinishReleasesWholeCharactersBeforeAnIncompleteOne) {
  auto it = g_files.tokenizer.find("llama3");
  ASSERT_NE(it, g_files.tokenizer.end());
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  const std::vector<uint32_t> ids = {9906, 2928, 224, 105};
  char *text = nullptr;
  size_t len = 0;
  ASSERT_EQ(atlas_tokenizer_decode(tok, ids.data(), 2, true, &text, &len),
            ATLAS_OK);
  EXPECT_EQ(std::string(text, len), "Hello \xEF\xBF\xBD");
  free(text);
  ASSERT_EQ(atlas_tokenizer_decode(tok, ids.data(), 4, true, &text, &len),
            ATLAS_OK);
  EXPECT_EQ(std::string(text, len), "Hello \xE2\x82\xAC");
  free(text);
  for (size_t stop_after : {size_t{1}, size_t{2}, size_t{3}, size_t{4}}) {
    SCOPED_TRACE(stop_after);
    atlas_tokenizer_stream *stream = nullptr;
    ASSERT_EQ(atlas_tokenizer_stream_create(tok, true, &stream), ATLAS_OK);
    std::string streamed;
    for (size_t k = 0; k < stop_after; k++) {
      char *piece = nullptr;
      ASSERT_EQ(atlas_tokenizer_stream_step(stream, ids[k], &piece, &len),
                ATLAS_OK);
      if (piece != nullptr) streamed.append(piece, len);
      free(piece);
    }
    char *tail = nullptr;
    ASSERT_EQ(atlas_tokenizer_stream_finish(stream, &tail, &len), ATLAS_OK);
    if (tail != nullptr) streamed.append(tail, len);
    free(tail);
    // The whole decode less its incomplete character at the end, if any.
    EXPECT_EQ(streamed, stop_after == 1  ? "Hello"
                        : stop_after < 4 ? "Hello "
                                         : "Hello \xE2\x82\xAC");
    atlas_tokenizer_stream_free(stream);
  }
  atlas_tokenizer_free(tok);
}

// Ids decoding drops (special tokens while skipping them, ids past the
// vocabulary) give None and leave the stream as it was, as in tokenizers'
// DecodeStream (whose pieces decode_ids.json checks on shorter runs). A
// long run of them between two words: the stream does not hold them, so
// each step does not decode the run again (held, 10,000 skipped special
// tokens took 1.2 s to stream with -O2, growing with the square).
TEST(DecodeIds, ARunOfDroppedIdsStreamsAsNone) {
  auto it = g_files.tokenizer.find("llama3");
  ASSERT_NE(it, g_files.tokenizer.end());
  atlas_tokenizer *tok = nullptr;
  atlas_status st = atlas_tokenizer_load(it->second.c_str(), &tok);
  ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
  uint32_t hello = 0, world = 0, bos = 0;
  ASSERT_TRUE(atlas_tokenizer_token_to_id(tok, "Hello", 5, &hello));
  ASSERT_TRUE(atlas_tokenizer_token_to_id(tok, "\xC4\xA0world", 7, &world));
  ASSERT_TRUE(atlas_tokenizer_token_to_id(tok, "<|begin_of_text|>", 17, &bos));
  const uint32_t past = static_cast<uint32_t>(atlas_tokenizer_vocab_size(tok));
  for (int skip = 0; skip < 2; skip++) {
    for (int resync = 0; resync < 2; resync++) {
      // Skipping: special tokens and ids past the vocabulary; else only the
      // latter (a special token is text then).
      std::vector<uint32_t> ids = {hello};
      for (size_t k = 0; k < 50000; k++) {
        ids.push_back(skip && k % 2 ? bos : past + k % 7);
      }
      ids.push_back(world);
      std::vector<std::string> want(ids.size(), "<null>");
      want.front() = "Hello";
      want.back() = " world";
      size_t failed = 0;
      EXPECT_EQ(StreamPieces(tok, ids, skip, resync, &failed), want)
          << "skip " << skip << " resync " << resync;
      EXPECT_EQ(failed, ids.size());
    }
  }
  atlas_tokenizer_free(tok);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  return RUN_ALL_TESTS();
}
