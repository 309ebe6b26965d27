// Helpers for the model-loading tests: byte-level safetensors builders,
// files under TEST_TMPDIR, and status assertions.
#ifndef ATLAS_TESTS_MODEL_TEST_UTIL_H_
#define ATLAS_TESTS_MODEL_TEST_UTIL_H_

#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <dirent.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "atlas/runtime/base/status.h"
#include "gtest/gtest.h"

namespace atlas_test {

// A directory unique to the running test, under TEST_TMPDIR.
inline std::string TempDir(const std::string &leaf) {
  const char *root = getenv("TEST_TMPDIR");
  std::string base = root != nullptr ? root : "/tmp";
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = base + "/" + info->test_suite_name() + "." + info->name();
  mkdir(dir.c_str(), 0755);
  if (!leaf.empty()) {
    dir += "/" + leaf;
    mkdir(dir.c_str(), 0755);
  }
  return dir;
}

inline void WriteFile(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(fclose(f), 0);
}

inline std::string LengthPrefix(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file: length prefix (the header's size unless overridden),
// the header text, then `data_bytes` bytes of a recognisable pattern.
inline std::string Safetensors(const std::string &header, size_t data_bytes,
                               uint64_t length_override = UINT64_MAX) {
  std::string out = LengthPrefix(
      length_override == UINT64_MAX ? header.size() : length_override);
  out += header;
  for (size_t i = 0; i < data_bytes; ++i) {
    out.push_back(static_cast<char>((i * 7 + 3) & 0xff));
  }
  return out;
}

// One header entry: "name":{"dtype":..,"shape":[..],"data_offsets":[b,e]}.
inline std::string Entry(const std::string &name, const std::string &dtype,
                         const std::string &shape, uint64_t begin,
                         uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," +
         std::to_string(end) + "]}";
}

// Open file descriptors and memory mappings of this process: a failed or
// closed open must leave both as they were (LeakSanitizer sees neither).
inline size_t OpenFdCount() {
  size_t n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

inline size_t MappingCount() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(".safetensors") != std::string::npos) ++n;
  }
  return n;
}

// Owns a status for the length of a test.
class Status {
 public:
  explicit Status(atlas_status s) : s_(s) {}
  ~Status() { atlas_status_free(s_); }
  Status(const Status &) = delete;
  Status &operator=(const Status &) = delete;
  bool ok() const { return s_ == ATLAS_OK; }
  atlas_status_code code() const { return atlas_status_code_of(s_); }
  std::string message() const { return atlas_status_message(s_); }

 private:
  atlas_status s_;
};

// Asserts the status failed with `code` and its message holds every needle
// (the file name among them). Frees the status.
inline void ExpectError(atlas_status raw, atlas_status_code code,
                        const std::vector<std::string> &needles) {
  Status s(raw);
  ASSERT_FALSE(s.ok()) << "expected " << atlas_status_code_name(code);
  EXPECT_EQ(s.code(), code) << s.message();
  // Printed so the test log shows what a user would read.
  printf("  [%s] %s\n", atlas_status_code_name(s.code()), s.message().c_str());
  for (const std::string &n : needles) {
    EXPECT_NE(s.message().find(n), std::string::npos)
        << "message lacks \"" << n << "\": " << s.message();
  }
}

#define ATLAS_ASSERT_OK(expr)                         \
  do {                                                \
    ::atlas_test::Status atlas_s_(expr);              \
    ASSERT_TRUE(atlas_s_.ok()) << atlas_s_.message(); \
  } while (0)

}  // namespace atlas_test

#endif  // ATLAS_TESTS_MODEL_TEST_UTIL_H_
