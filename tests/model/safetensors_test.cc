// safetensors parser: one test per malformed-file class, through both the
// buffer parser and a real mapped file, plus the happy paths.
#include "atlas/runtime/formats/safetensors.h"

#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/model/test_util.h"

namespace {

using atlas_test::Entry;
using atlas_test::ExpectError;
using atlas_test::Safetensors;

// Checks that `bytes` fails with `code` and a message naming the input and
// every needle, both as a buffer and as a file on disk; nothing may leak
// (LeakSanitizer checks under --config=asan).
void ExpectMalformed(const std::string &bytes, atlas_status_code code,
                     const std::vector<std::string> &needles) {
  {
    SCOPED_TRACE("buffer");
    std::vector<std::string> n = needles;
    n.push_back("buffer.safetensors");
    atlas_safetensors *file = reinterpret_cast<atlas_safetensors *>(1);
    ExpectError(atlas_safetensors_parse_buffer(bytes.data(), bytes.size(),
                                               "buffer.safetensors", &file),
                code, n);
    EXPECT_EQ(file, nullptr);
  }
  {
    SCOPED_TRACE("file");
    std::string path = atlas_test::TempDir("") + "/bad.safetensors";
    atlas_test::WriteFile(path, bytes);
    std::vector<std::string> n = needles;
    n.push_back(path);
    size_t fds = atlas_test::OpenFdCount();
    size_t maps = atlas_test::MappingCount();
    atlas_safetensors *file = reinterpret_cast<atlas_safetensors *>(1);
    ExpectError(atlas_safetensors_open(path.c_str(), &file), code, n);
    EXPECT_EQ(file, nullptr);
    EXPECT_EQ(atlas_test::OpenFdCount(), fds) << "file descriptor leaked";
    EXPECT_EQ(atlas_test::MappingCount(), maps) << "mapping leaked";
  }
}

std::string OneF32(const std::string &offsets_entry) {
  return "{" + offsets_entry + "}";
}

TEST(SafetensorsMalformed, TruncatedHeaderLength) {
  ExpectMalformed(std::string("\x10\x00\x00", 3), ATLAS_STATUS_DATA_LOSS,
                  {"3 bytes", "truncated header"});
  ExpectMalformed("", ATLAS_STATUS_DATA_LOSS, {"0 bytes", "truncated"});
}

TEST(SafetensorsMalformed, TruncatedHeaderJson) {
  std::string header = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]";
  ExpectMalformed(Safetensors(header, 0), ATLAS_STATUS_DATA_LOSS,
                  {"not valid JSON"});
}

TEST(SafetensorsMalformed, HeaderLongerThanFile) {
  std::string header = OneF32(Entry("a", "F32", "[1]", 0, 4));
  ExpectMalformed(Safetensors(header, 4, header.size() + 100),
                  ATLAS_STATUS_DATA_LOSS,
                  {"header length " + std::to_string(header.size() + 100),
                   "longer than the file"});
}

TEST(SafetensorsMalformed, HugeHeaderLength) {
  std::string header = OneF32(Entry("a", "F32", "[1]", 0, 4));
  ExpectMalformed(Safetensors(header, 4, UINT64_MAX - 1),
                  ATLAS_STATUS_DATA_LOSS, {"exceeds the limit", "100000000"});
  ExpectMalformed(Safetensors(header, 4, 100000001), ATLAS_STATUS_DATA_LOSS,
                  {"header length 100000001 exceeds the limit"});
}

TEST(SafetensorsMalformed, TooShortForAnObject) {
  ExpectMalformed(Safetensors("{", 0), ATLAS_STATUS_DATA_LOSS,
                  {"too short to hold a JSON object"});
}

TEST(SafetensorsMalformed, OverlappingOffsets) {
  std::string header = "{" + Entry("a", "F32", "[2]", 0, 8) + "," +
                       Entry("b", "F32", "[2]", 4, 12) + "}";
  ExpectMalformed(Safetensors(header, 12), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"b\"", "overlaps tensor \"a\""});
}

TEST(SafetensorsMalformed, IdenticalOffsetsOverlap) {
  std::string header = "{" + Entry("a", "F32", "[1]", 0, 4) + "," +
                       Entry("b", "F32", "[1]", 0, 4) + "}";
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS, {"overlaps"});
}

TEST(SafetensorsMalformed, GapBetweenTensors) {
  std::string header = "{" + Entry("a", "F32", "[1]", 0, 4) + "," +
                       Entry("b", "F32", "[1]", 8, 12) + "}";
  ExpectMalformed(Safetensors(header, 12), ATLAS_STATUS_DATA_LOSS,
                  {"gap of 4 unused bytes", "\"a\"", "\"b\""});
}

TEST(SafetensorsMalformed, GapAtStart) {
  std::string header = OneF32(Entry("a", "F32", "[1]", 4, 8));
  ExpectMalformed(Safetensors(header, 8), ATLAS_STATUS_DATA_LOSS,
                  {"gap of 4 unused bytes at the start"});
}

TEST(SafetensorsMalformed, TrailingBytes) {
  std::string header = OneF32(Entry("a", "F32", "[1]", 0, 4));
  ExpectMalformed(Safetensors(header, 7), ATLAS_STATUS_DATA_LOSS,
                  {"3 trailing bytes"});
}

TEST(SafetensorsMalformed, TrailingBytesWithNoTensors) {
  ExpectMalformed(Safetensors("{}", 5), ATLAS_STATUS_DATA_LOSS,
                  {"5 trailing bytes"});
}

TEST(SafetensorsMalformed, OffsetsPastTheEnd) {
  std::string header = OneF32(Entry("a", "F32", "[2]", 0, 8));
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"a\"", "run past the end of the file"});
}

TEST(SafetensorsMalformed, HugeOffsetsPastTheEnd) {
  std::string header = OneF32(
      Entry("a", "F32", "[1]", 9223372036854775800ull, 9223372036854775804ull));
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"run past the end"});
}

TEST(SafetensorsMalformed, SizeDoesNotMatchShape) {
  std::string header = OneF32(Entry("a", "F32", "[3]", 0, 8));
  ExpectMalformed(Safetensors(header, 8), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"a\"", "span 8 bytes", "[3]", "needs 12 bytes"});
}

TEST(SafetensorsMalformed, ShapeOverflow) {
  std::string header =
      OneF32(Entry("a", "F32", "[4294967296,4294967296,16]", 0, 4));
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"a\"", "overflows"});
  // The element count fits but the byte count does not.
  header = OneF32(Entry("b", "F32", "[4611686018427387904,2]", 0, 4));
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"b\"", "overflows"});
}

TEST(SafetensorsMalformed, NegativeOrNonIntegerDimension) {
  ExpectMalformed(Safetensors(OneF32(Entry("a", "F32", "[-1]", 0, 4)), 4),
                  ATLAS_STATUS_DATA_LOSS,
                  {"shape dimension 0 is not a non-negative integer"});
  ExpectMalformed(Safetensors(OneF32(Entry("a", "F32", "[1.0]", 0, 4)), 4),
                  ATLAS_STATUS_DATA_LOSS, {"not a non-negative integer"});
}

TEST(SafetensorsMalformed, RankAboveEight) {
  ExpectMalformed(
      Safetensors(OneF32(Entry("a", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4)), 4),
      ATLAS_STATUS_DATA_LOSS, {"rank 9", "at most 8"});
}

TEST(SafetensorsMalformed, UnknownDtype) {
  ExpectMalformed(Safetensors(OneF32(Entry("w", "F33", "[1]", 0, 4)), 4),
                  ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"w\"", "unknown dtype \"F33\""});
}

TEST(SafetensorsMalformed, UnsupportedDtype) {
  for (const char *dtype :
       {"F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2"}) {
    SCOPED_TRACE(dtype);
    ExpectMalformed(
        Safetensors(OneF32(Entry("w", dtype, "[1]", 0, 1)), 1),
        ATLAS_STATUS_UNIMPLEMENTED,
        {std::string("dtype ") + dtype +
         " of tensor \"w\" is not supported (supported: F32, F16, BF16)"});
  }
}

TEST(SafetensorsMalformed, NonStringMetadata) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\",\"n\":1}," +
                       Entry("a", "F32", "[1]", 0, 4) + "}";
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"__metadata__", "\"n\"", "an integer", "strings"});
  ExpectMalformed(Safetensors("{\"__metadata__\":[\"x\"]}", 0),
                  ATLAS_STATUS_DATA_LOSS, {"__metadata__ is an array"});
}

TEST(SafetensorsMalformed, DuplicateNames) {
  std::string header = "{" + Entry("a", "F32", "[1]", 0, 4) + "," +
                       Entry("a", "F32", "[1]", 4, 8) + "}";
  // The message places the second key by line and column; it does not quote
  // the header's bytes (they are the file's contents).
  ExpectMalformed(Safetensors(header, 8), ATLAS_STATUS_DATA_LOSS,
                  {"duplicate object key", "line 1, column"});
}

TEST(SafetensorsMalformed, InvalidUtf8) {
  std::string header = OneF32(Entry("bad\xff\xfe", "F32", "[1]", 0, 4));
  ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                  {"not valid JSON", "invalid UTF-8"});
}

TEST(SafetensorsMalformed, InvalidJson) {
  ExpectMalformed(Safetensors("{\"a\":}", 0), ATLAS_STATUS_DATA_LOSS,
                  {"not valid JSON", "line 1"});
  ExpectMalformed(Safetensors("{} x", 0), ATLAS_STATUS_DATA_LOSS,
                  {"not valid JSON"});
  ExpectMalformed(Safetensors(std::string("{}\0\0", 4), 0),
                  ATLAS_STATUS_DATA_LOSS, {"not valid JSON"});
}

TEST(SafetensorsMalformed, NotAnObject) {
  ExpectMalformed(Safetensors("[1, 2]", 0), ATLAS_STATUS_DATA_LOSS,
                  {"does not start with '{'"});
  ExpectMalformed(Safetensors("   ", 0), ATLAS_STATUS_DATA_LOSS,
                  {"does not start with '{'"});
}

TEST(SafetensorsMalformed, BadTensorEntries) {
  ExpectMalformed(Safetensors("{\"a\":3}", 0), ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"a\" is described by an integer"});
  ExpectMalformed(Safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4),
                  ATLAS_STATUS_DATA_LOSS,
                  {"tensor \"a\" is missing field \"data_offsets\""});
  ExpectMalformed(
      Safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                  "[0,4],\"extra\":1}}",
                  4),
      ATLAS_STATUS_DATA_LOSS, {"unexpected field \"extra\""});
  ExpectMalformed(
      Safetensors("{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}",
                  4),
      ATLAS_STATUS_DATA_LOSS, {"dtype is an integer, not a string"});
  ExpectMalformed(
      Safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":"
                  "[0,4]}}",
                  4),
      ATLAS_STATUS_DATA_LOSS, {"shape is an object, not an array"});
}

TEST(SafetensorsMalformed, BadDataOffsets) {
  for (const char *offsets : {"[0]", "[0,4,8]", "[-4,0]", "[0,\"4\"]", "4"}) {
    SCOPED_TRACE(offsets);
    std::string header = std::string(
                             "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                             "\"data_offsets\":") +
                         offsets + "}}";
    ExpectMalformed(Safetensors(header, 4), ATLAS_STATUS_DATA_LOSS,
                    {"data_offsets must be two non-negative integers"});
  }
  ExpectMalformed(Safetensors(OneF32(Entry("a", "F32", "[0]", 4, 0)), 4),
                  ATLAS_STATUS_DATA_LOSS, {"end before they begin"});
}

TEST(SafetensorsMalformed, NotARegularFile) {
  std::string dir = atlas_test::TempDir("a_directory");
  atlas_safetensors *file = nullptr;
  ExpectError(atlas_safetensors_open(dir.c_str(), &file),
              ATLAS_STATUS_INVALID_ARGUMENT, {dir, "not a regular file"});
  std::string missing = dir + "/missing.safetensors";
  ExpectError(atlas_safetensors_open(missing.c_str(), &file),
              ATLAS_STATUS_NOT_FOUND, {missing, "cannot open"});
}

// --- Happy paths ---

class Parsed {
 public:
  explicit Parsed(const std::string &bytes) : bytes_(bytes) {
    atlas_test::Status s(atlas_safetensors_parse_buffer(
        bytes_.data(), bytes_.size(), "ok.safetensors", &file_));
    EXPECT_TRUE(s.ok()) << s.message();
  }
  ~Parsed() { atlas_safetensors_close(file_); }
  atlas_safetensors *get() const { return file_; }

 private:
  std::string bytes_;
  atlas_safetensors *file_ = nullptr;
};

TEST(SafetensorsParse, TensorsInFileOrderWithAccessors) {
  // Header order differs from offset order on purpose.
  std::string header = "{" + Entry("z.second", "F16", "[2,3]", 16, 28) + "," +
                       Entry("a.first", "F32", "[4]", 0, 16) + "," +
                       Entry("m.third", "BF16", "[1,1,2]", 28, 32) + "}";
  std::string bytes = Safetensors(header, 32);
  Parsed p(bytes);
  atlas_safetensors *f = p.get();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(atlas_safetensors_count(f), 3u);
  EXPECT_EQ(atlas_safetensors_data_bytes(f), 32u);
  EXPECT_EQ(atlas_safetensors_file_bytes(f), bytes.size());
  EXPECT_STREQ(atlas_safetensors_path(f), "ok.safetensors");

  const atlas_safetensors_tensor *t0 = atlas_safetensors_at(f, 0);
  EXPECT_STREQ(t0->name, "a.first");
  EXPECT_EQ(t0->dtype, ATLAS_DTYPE_F32);
  EXPECT_EQ(t0->rank, 1);
  EXPECT_EQ(t0->shape[0], 4);
  EXPECT_EQ(t0->elements, 4u);
  EXPECT_EQ(t0->bytes, 16u);
  EXPECT_EQ(t0->file_offset, 8 + header.size());

  const atlas_safetensors_tensor *t1 = atlas_safetensors_at(f, 1);
  EXPECT_STREQ(t1->name, "z.second");
  EXPECT_EQ(t1->dtype, ATLAS_DTYPE_F16);
  EXPECT_EQ(t1->rank, 2);
  EXPECT_EQ(t1->shape[1], 3);
  EXPECT_EQ(t1->bytes, 12u);
  EXPECT_EQ(t1->file_offset, 8 + header.size() + 16);
  // The data pointer points into the buffer at the right place.
  EXPECT_EQ(memcmp(t1->data, bytes.data() + t1->file_offset, 12), 0);

  const atlas_safetensors_tensor *t2 = atlas_safetensors_at(f, 2);
  EXPECT_EQ(t2->dtype, ATLAS_DTYPE_BF16);
  EXPECT_EQ(t2->rank, 3);
  EXPECT_EQ(atlas_safetensors_at(f, 3), nullptr);

  EXPECT_EQ(atlas_safetensors_lookup(f, "m.third"), t2);
  EXPECT_EQ(atlas_safetensors_lookup(f, "a.first"), t0);
  EXPECT_EQ(atlas_safetensors_lookup(f, "nope"), nullptr);
  const atlas_safetensors_tensor *found = nullptr;
  ATLAS_ASSERT_OK(atlas_safetensors_find(f, "z.second", &found));
  EXPECT_EQ(found, t1);
  ExpectError(atlas_safetensors_find(f, "nope", &found), ATLAS_STATUS_NOT_FOUND,
              {"ok.safetensors", "\"nope\""});
}

TEST(SafetensorsParse, WhitespaceBeforeAndAfterHeader) {
  std::string header =
      " \n\t\r" + OneF32(Entry("a", "F32", "[1]", 0, 4)) + "        ";
  Parsed p(Safetensors(header, 4));
  ASSERT_NE(p.get(), nullptr);
  EXPECT_EQ(atlas_safetensors_count(p.get()), 1u);
}

TEST(SafetensorsParse, MetadataStrings) {
  std::string header =
      "{\"__metadata__\":{\"format\":\"pt\",\"author\":\"atlas\"}," +
      Entry("a", "BF16", "[2]", 0, 4) + "}";
  Parsed p(Safetensors(header, 4));
  atlas_safetensors *f = p.get();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(atlas_safetensors_count(f), 1u);
  ASSERT_EQ(atlas_safetensors_metadata_count(f), 2u);
  EXPECT_STREQ(atlas_safetensors_metadata_key(f, 0), "author");
  EXPECT_STREQ(atlas_safetensors_metadata_value(f, 1), "pt");
  EXPECT_STREQ(atlas_safetensors_metadata_get(f, "format"), "pt");
  EXPECT_EQ(atlas_safetensors_metadata_get(f, "x"), nullptr);
  EXPECT_EQ(atlas_safetensors_metadata_key(f, 2), nullptr);
}

TEST(SafetensorsParse, ScalarsEmptyTensorsAndEmptyFiles) {
  std::string header = "{" + Entry("s", "F32", "[]", 0, 4) + "," +
                       Entry("e", "F16", "[0,7]", 4, 4) + "," +
                       Entry("e2", "F32", "[3,0]", 0, 0) + "}";
  Parsed p(Safetensors(header, 4));
  atlas_safetensors *f = p.get();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(atlas_safetensors_count(f), 3u);
  const atlas_safetensors_tensor *s = atlas_safetensors_lookup(f, "s");
  EXPECT_EQ(s->rank, 0);
  EXPECT_EQ(s->elements, 1u);
  EXPECT_EQ(atlas_safetensors_lookup(f, "e")->bytes, 0u);

  Parsed empty(Safetensors("{}", 0));
  ASSERT_NE(empty.get(), nullptr);
  EXPECT_EQ(atlas_safetensors_count(empty.get()), 0u);
  Parsed meta_only(Safetensors("{\"__metadata__\":{}}", 0));
  ASSERT_NE(meta_only.get(), nullptr);
  EXPECT_EQ(atlas_safetensors_count(meta_only.get()), 0u);
}

TEST(SafetensorsOpen, ReadsTheFileWithPread) {
  std::string header = "{" + Entry("w", "F32", "[2,2]", 0, 16) + "," +
                       Entry("h", "F16", "[3]", 16, 22) + "}  ";
  std::string bytes = Safetensors(header, 22);
  std::string path = atlas_test::TempDir("") + "/model.safetensors";
  atlas_test::WriteFile(path, bytes);
  atlas_safetensors *f = nullptr;
  ATLAS_ASSERT_OK(atlas_safetensors_open(path.c_str(), &f));
  EXPECT_STREQ(atlas_safetensors_path(f), path.c_str());
  EXPECT_EQ(atlas_safetensors_file_bytes(f), bytes.size());
  const atlas_safetensors_tensor *h = atlas_safetensors_lookup(f, "h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->data, nullptr);  // never mapped
  unsigned char got[6];
  ATLAS_ASSERT_OK(atlas_safetensors_read(h, 0, 6, got));
  EXPECT_EQ(memcmp(got, bytes.data() + h->file_offset, 6), 0);
  atlas_safetensors_close(f);
}

TEST(Safetensors, DtypeNamesAndShapeFormat) {
  EXPECT_STREQ(atlas_dtype_name(ATLAS_DTYPE_F32), "F32");
  EXPECT_STREQ(atlas_dtype_name(ATLAS_DTYPE_F16), "F16");
  EXPECT_STREQ(atlas_dtype_name(ATLAS_DTYPE_BF16), "BF16");
  EXPECT_EQ(atlas_dtype_size(ATLAS_DTYPE_F32), 4u);
  EXPECT_EQ(atlas_dtype_size(ATLAS_DTYPE_BF16), 2u);
  // The command lines' and the public API's spelling, and the names above.
  atlas_dtype d = ATLAS_DTYPE_F32;
  EXPECT_TRUE(atlas_dtype_from_name("bf16", &d));
  EXPECT_EQ(d, ATLAS_DTYPE_BF16);
  EXPECT_TRUE(atlas_dtype_from_name("F16", &d));
  EXPECT_EQ(d, ATLAS_DTYPE_F16);
  EXPECT_TRUE(atlas_dtype_from_name("f32", &d));
  EXPECT_EQ(d, ATLAS_DTYPE_F32);
  for (const char *bad : {"", "f8", "bf", "bf16 ", "auto", "float32"}) {
    d = ATLAS_DTYPE_F16;
    EXPECT_FALSE(atlas_dtype_from_name(bad, &d)) << bad;
    EXPECT_EQ(d, ATLAS_DTYPE_F16) << bad << ": left as it was";
  }
  EXPECT_FALSE(atlas_dtype_from_name(nullptr, &d));
  const int64_t shape[3] = {2, 30, 4};
  char buf[32];
  atlas_shape_format(shape, 3, buf, sizeof(buf));
  EXPECT_STREQ(buf, "[2, 30, 4]");
  atlas_shape_format(shape, 0, buf, sizeof(buf));
  EXPECT_STREQ(buf, "[]");
  atlas_shape_format(shape, 3, buf, 5);
  EXPECT_STREQ(buf, "[2, ");
}

}  // namespace
