// The GGUF parser (runtime/formats/gguf.h) on files written by the tests'
// own writer: metadata of every type read back, tensors placed where the
// file says, and every malformed header refused with DATA_LOSS naming what
// was wrong, never read past the bytes it has.
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/formats/gguf.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/runtime/test_util.h"

std::vector<std::string> g_seed_paths;

namespace {

using gguf_test::Writer;

// A small valid file: scalars of several types, a string array, tensors of
// F32, Q8_0 and Q4_K.
Writer Valid(uint64_t alignment = 32) {
  Writer w;
  w.alignment = alignment;
  w.KvString("general.architecture", "llama");
  w.KvU32("llama.block_count", 2);
  w.KvF32("llama.rope.freq_base", 500000.0f);
  std::string b;
  Writer::U64(b, (uint64_t)-5);
  w.Kv("test.i64", 11, b);
  w.Kv("test.flag", 7, std::string("\x01", 1));
  w.KvStrings("tokenizer.ggml.tokens", {"a", "", "hello"});
  std::string arr;
  Writer::U32(arr, 5);  // i32 elements
  Writer::U64(arr, 3);
  for (int32_t v : {-1, 2, 3}) arr.append((const char *)&v, 4);
  w.Kv("tokenizer.ggml.token_type", 9, arr);
  std::string f32(4 * 3 * 4, '\0');
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = (char)i;
  w.Tensor("token_embd.weight", {4, 3}, 0, f32);
  w.Tensor("blk.0.attn_q.weight", {64, 2}, 8, std::string(4 * 34, 'q'));
  w.Tensor("blk.0.ffn_up.weight", {256, 1}, 12, std::string(144, 'k'));
  return w;
}

StatusResult Parse(const std::string &bytes, atlas_gguf **out = nullptr) {
  atlas_gguf *g = nullptr;
  StatusResult r =
      Take(atlas_gguf_parse_buffer(bytes.data(), bytes.size(), "t.gguf", &g));
  if (out != nullptr) {
    *out = g;
  } else {
    atlas_gguf_close(g);
  }
  return r;
}

void ExpectBad(const std::string &bytes, const std::string &needle) {
  atlas_gguf *g = nullptr;
  StatusResult r = Parse(bytes, &g);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS) << r.message;
  EXPECT_NE(r.message.find("t.gguf"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(needle), std::string::npos)
      << "missing \"" << needle << "\" in: " << r.message;
  atlas_gguf_close(g);
}

void CheckValid(atlas_gguf *g) {
  EXPECT_EQ(atlas_gguf_version(g), 3u);
  EXPECT_EQ(atlas_gguf_alignment(g), 32u);
  EXPECT_EQ(atlas_gguf_kv_count(g), 7u);
  const char *s = nullptr;
  size_t len = 0;
  ASSERT_OK(atlas_gguf_get_string(g, "general.architecture", &s, &len));
  EXPECT_EQ(std::string(s, len), "llama");
  uint64_t u = 0;
  ASSERT_OK(atlas_gguf_get_u64(g, "llama.block_count", &u));
  EXPECT_EQ(u, 2u);
  double d = 0;
  ASSERT_OK(atlas_gguf_get_f64(g, "llama.rope.freq_base", &d));
  EXPECT_EQ(d, 500000.0);
  bool flag = false;
  ASSERT_OK(atlas_gguf_get_bool(g, "test.flag", &flag));
  EXPECT_TRUE(flag);
  EXPECT_STATUS(atlas_gguf_get_u64(g, "test.i64", &u),
                ATLAS_STATUS_INVALID_ARGUMENT, "is -5, not a count");
  EXPECT_STATUS(atlas_gguf_get_u64(g, "general.architecture", &u),
                ATLAS_STATUS_INVALID_ARGUMENT, "is string, not an integer");
  EXPECT_STATUS(atlas_gguf_get_u64(g, "llama.nope", &u), ATLAS_STATUS_NOT_FOUND,
                "\"llama.nope\" is missing");
  const atlas_gguf_kv *tokens = atlas_gguf_find_kv(g, "tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->count, 3u);
  std::vector<std::string> got;
  for (uint64_t i = 0; i < tokens->count; ++i) {
    ASSERT_OK(atlas_gguf_array_string(g, tokens, i, &s, &len));
    got.emplace_back(s, len);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"a", "", "hello"}));
  EXPECT_STATUS(atlas_gguf_array_string(g, tokens, 3, &s, &len),
                ATLAS_STATUS_INVALID_ARGUMENT, "has 3 elements");
  const atlas_gguf_kv *types =
      atlas_gguf_find_kv(g, "tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  ASSERT_OK(atlas_gguf_array_number(g, types, 0, &d));
  EXPECT_EQ(d, -1.0);
  ASSERT_OK(atlas_gguf_array_number(g, types, 2, &d));
  EXPECT_EQ(d, 3.0);
  ASSERT_EQ(atlas_gguf_tensor_count(g), 3u);
  const atlas_gguf_tensor *t = atlas_gguf_find_tensor(g, "token_embd.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->n_dims, 2u);
  EXPECT_EQ(t->ne[0], 4u);
  EXPECT_EQ(t->ne[1], 3u);
  EXPECT_EQ(t->bytes, 48u);
  EXPECT_EQ(t->file_offset % 32, 0u);
  EXPECT_EQ(t->file_offset, atlas_gguf_data_offset(g));
  std::string data(48, '\0');
  ASSERT_OK(atlas_gguf_read(g, t, 0, 48, &data[0]));
  for (size_t i = 0; i < data.size(); ++i) EXPECT_EQ(data[i], (char)i);
  t = atlas_gguf_find_tensor(g, "blk.0.attn_q.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bytes, 4u * 34);
  EXPECT_STREQ(atlas_gguf_type_name(t->type), "Q8_0");
  ASSERT_OK(atlas_gguf_read(g, t, t->bytes - 1, 1, &data[0]));
  EXPECT_EQ(data[0], 'q');
  EXPECT_STATUS(atlas_gguf_read(g, t, t->bytes, 1, &data[0]),
                ATLAS_STATUS_INVALID_ARGUMENT, "past tensor");
  t = atlas_gguf_find_tensor(g, "blk.0.ffn_up.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bytes, 144u);
  EXPECT_TRUE(atlas_gguf_type_supported(t->type));
}

TEST(Gguf, ReadsAValidFileFromABuffer) {
  std::string bytes = Valid().Build();
  atlas_gguf *g = nullptr;
  StatusResult r = Parse(bytes, &g);
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  CheckValid(g);
  atlas_gguf_close(g);
}

TEST(Gguf, ReadsAValidFileFromDiskWhoseHeaderIsLargerThanTheFirstRead) {
  Writer w = Valid();
  // Two megabytes of vocabulary: the header outgrows the first read.
  std::vector<std::string> big(200000, std::string(2, 'x'));
  w.KvStrings("tokenizer.ggml.merges", big);
  std::string bytes = w.Build();
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/big.gguf";
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
  atlas_gguf *g = nullptr;
  ASSERT_OK(atlas_gguf_open(path.c_str(), &g));
  const atlas_gguf_kv *merges = atlas_gguf_find_kv(g, "tokenizer.ggml.merges");
  ASSERT_NE(merges, nullptr);
  EXPECT_EQ(merges->count, 200000u);
  const char *s = nullptr;
  size_t len = 0;
  ASSERT_OK(atlas_gguf_array_string(g, merges, 199999, &s, &len));
  EXPECT_EQ(std::string(s, len), "xx");
  const atlas_gguf_tensor *t = atlas_gguf_find_tensor(g, "token_embd.weight");
  ASSERT_NE(t, nullptr);
  std::string data(48, '\0');
  ASSERT_OK(atlas_gguf_read(g, t, 0, 48, &data[0]));
  EXPECT_EQ(data[47], (char)47);
  atlas_gguf_close(g);
}

// Every proper prefix of a valid file is refused (a tensor's data cut short
// included), and none is read past its end (ASan checks that).
TEST(Gguf, EveryTruncationIsRefused) {
  std::string bytes = Valid().Build();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string cut = bytes.substr(0, n);
    atlas_gguf *g = nullptr;
    StatusResult r = Parse(cut, &g);
    EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS) << "prefix " << n;
    EXPECT_EQ(g, nullptr);
  }
}

TEST(Gguf, HeaderRefusals) {
  Writer w = Valid();
  w.magic = "GGUG";
  ExpectBad(w.Build(), "not a GGUF file");
  w = Valid();
  w.version = 1;
  ExpectBad(w.Build(), "version 1 has 32-bit counts");
  w.version = 0x03000000;
  ExpectBad(w.Build(), "big-endian");
  w.version = 4;
  ExpectBad(w.Build(), "GGUF version 4");
  w = Valid();
  w.kv_count_override = (int64_t)1 << 40;
  ExpectBad(w.Build(), "cannot fit");
  w = Valid();
  w.tensor_count_override = (int64_t)1 << 40;
  ExpectBad(w.Build(), "cannot fit");
}

TEST(Gguf, MetadataRefusals) {
  Writer w = Valid();
  w.KvU32("llama.block_count", 3);
  ExpectBad(w.Build(), "metadata key \"llama.block_count\" appears twice");
  w = Valid();
  w.Kv("test.bad", 13, "");
  ExpectBad(w.Build(), "value type 13");
  w = Valid();
  std::string nested;
  Writer::U32(nested, 9);
  Writer::U64(nested, 0);
  w.Kv("test.nested", 9, nested);
  ExpectBad(w.Build(), "an array of arrays");
  w = Valid();
  w.Kv("test.bool", 7, std::string("\x02", 1));
  ExpectBad(w.Build(), "a bool of value 2");
  w = Valid();
  std::string huge;
  Writer::U32(huge, 4);
  Writer::U64(huge, (uint64_t)1 << 60);
  w.Kv("test.huge", 9, huge);
  ExpectBad(w.Build(), "does not fit");
  w = Valid();
  w.KvString(std::string("bad\0key", 7), "v");
  ExpectBad(w.Build(), "holds a NUL byte");
  w = Valid();
  w.KvString("", "v");
  ExpectBad(w.Build(), "is empty");
  w = Valid();
  w.KvString(std::string(2000, 'k'), "v");
  ExpectBad(w.Build(), "the limit is 1024");
}

TEST(Gguf, Alignment) {
  Writer w = Valid(64);
  w.KvU32("general.alignment", 64);
  std::string bytes = w.Build();
  atlas_gguf *g = nullptr;
  StatusResult r = Parse(bytes, &g);
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  EXPECT_EQ(atlas_gguf_alignment(g), 64u);
  EXPECT_EQ(atlas_gguf_data_offset(g) % 64, 0u);
  atlas_gguf_close(g);
  w = Valid();
  w.KvU32("general.alignment", 48);
  ExpectBad(w.Build(), "general.alignment must be a u32 power of two");
  w = Valid();
  w.KvU32("general.alignment", 0);
  ExpectBad(w.Build(), "general.alignment");
  w = Valid();
  w.KvString("general.alignment", "32");
  ExpectBad(w.Build(), "general.alignment");
}

TEST(Gguf, TensorRefusals) {
  Writer w = Valid();
  w.Tensor("token_embd.weight", {4}, 0, std::string(16, '\0'));
  ExpectBad(w.Build(), "tensor \"token_embd.weight\" appears twice");
  w = Valid();
  w.Tensor("t", {}, 0, "");
  ExpectBad(w.Build(), "0 dimensions");
  w = Valid();
  w.Tensor("t", {1, 1, 1, 1, 1}, 0, "");
  ExpectBad(w.Build(), "5 dimensions");
  w = Valid();
  w.Tensor("t", {4, 0}, 0, "");
  ExpectBad(w.Build(), "dimension 1 is 0");
  w = Valid();
  w.Tensor("t", {1u << 31, 1u << 31, 1u << 31}, 0, "");
  ExpectBad(w.Build(), "overflows");
  for (uint32_t type : {4u, 31u, 36u, 99u}) {
    w = Valid();
    w.Tensor("t", {32}, type, std::string(64, '\0'));
    ExpectBad(w.Build(), "is not a ggml type");
  }
  w = Valid();
  w.Tensor("t", {33}, 8, std::string(64, '\0'));
  ExpectBad(w.Build(), "blocks of 32 elements, but its first dimension is 33");
  w = Valid();
  w.Tensor("t", {4}, 0, std::string(16, '\0'), 1000 * 32 + 8);
  ExpectBad(w.Build(), "not a multiple of the alignment 32");
  w = Valid();
  w.Tensor("t", {1u << 20}, 0, "", 1u << 20);
  ExpectBad(w.Build(), "end past the file");
  w = Valid();
  w.Tensor("t", {4}, 0, std::string(16, '\0'), 32);  // inside token_embd
  ExpectBad(w.Build(), "overlap");
  w = Valid();
  w.Tensor(std::string(64, 'n'), {4}, 0, std::string(16, '\0'));
  ExpectBad(w.Build(), "the limit is 63");
  w = Valid();
  w.Tensor("", {4}, 0, std::string(16, '\0'));
  ExpectBad(w.Build(), "a tensor name at byte");
}

// The fuzzer's seeds, written by another writer (make_gguf_corpus.py, in
// Python), are valid files: passed as the test's arguments.
TEST(Gguf, SeedsOfAnotherWriterParse) {
  ASSERT_FALSE(g_seed_paths.empty());
  for (const std::string &path : g_seed_paths) {
    atlas_gguf *g = nullptr;
    StatusResult r = Take(atlas_gguf_open(path.c_str(), &g));
    EXPECT_EQ(r.code, ATLAS_STATUS_OK) << path << ": " << r.message;
    if (path.find("mixed_types") != std::string::npos) {
      EXPECT_EQ(atlas_gguf_tensor_count(g), 7u);
      const atlas_gguf_tensor *t = atlas_gguf_find_tensor(g, "d");
      ASSERT_NE(t, nullptr);
      EXPECT_STREQ(atlas_gguf_type_name(t->type), "Q6_K");
      EXPECT_EQ(t->bytes, 210u);
    }
    atlas_gguf_close(g);
  }
}

TEST(Gguf, TypeTable) {
  uint32_t block = 0, bytes = 0;
  struct Want {
    uint32_t type;
    const char *name;
    uint32_t block, bytes;
    bool supported;
  };
  // Block sizes from ggml-common.h's structs.
  for (const Want &w : std::vector<Want>{{0, "F32", 1, 4, true},
                                         {1, "F16", 1, 2, true},
                                         {2, "Q4_0", 32, 18, true},
                                         {3, "Q4_1", 32, 20, false},
                                         {8, "Q8_0", 32, 34, true},
                                         {10, "Q2_K", 256, 84, false},
                                         {11, "Q3_K", 256, 110, false},
                                         {12, "Q4_K", 256, 144, true},
                                         {13, "Q5_K", 256, 176, true},
                                         {14, "Q6_K", 256, 210, true},
                                         {30, "BF16", 1, 2, true}}) {
    ASSERT_TRUE(atlas_gguf_type_block(w.type, &block, &bytes)) << w.name;
    EXPECT_STREQ(atlas_gguf_type_name(w.type), w.name);
    EXPECT_EQ(block, w.block) << w.name;
    EXPECT_EQ(bytes, w.bytes) << w.name;
    EXPECT_EQ(atlas_gguf_type_supported(w.type), w.supported) << w.name;
  }
  EXPECT_FALSE(atlas_gguf_type_block(4, &block, &bytes));
  EXPECT_FALSE(atlas_gguf_type_block(40, &block, &bytes));
  EXPECT_STREQ(atlas_gguf_type_name(1000), "?");
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_seed_paths.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
