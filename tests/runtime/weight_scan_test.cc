// The weight scan on the host: digests that do not depend on how a reader
// chunks the bytes but change with any byte, NaN/Inf found at the exact
// first element, and the `weight_scan` kernel (host twin) through
// atlas_weight_check_run giving the same digests and the load's error.
#include <stdint.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/arch/weight_check.h"
#include "atlas/runtime/base/weight_scan.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/runtime/test_util.h"
#include "tests/runtime/weight_scan_cases.h"

namespace {

using atlas_test::ScanCase;

// The plain definition of the first non-finite element, one at a time.
uint64_t ReferenceFirstBad(const ScanCase &c) {
  size_t e = atlas_scan_finite_bytes(c.finite);
  if (e == 0) return UINT64_MAX;
  for (size_t i = 0; i < c.bytes.size() / e; ++i) {
    uint32_t v = 0;
    for (size_t k = 0; k < e; ++k) v |= (uint32_t)c.bytes[i * e + k] << (8 * k);
    uint32_t mask = c.finite == ATLAS_SCAN_FINITE_F32   ? 0x7f800000u
                    : c.finite == ATLAS_SCAN_FINITE_F16 ? 0x7c00u
                                                        : 0x7f80u;
    if ((v & mask) == mask) return i;
  }
  return UINT64_MAX;
}

TEST(WeightScan, FindsTheFirstNonFiniteElement) {
  for (const ScanCase &c : atlas_test::ScanCases()) {
    uint64_t first = 0;
    atlas_weight_scan(c.bytes.data(), c.bytes.size(), 0, c.finite, &first);
    EXPECT_EQ(first, ReferenceFirstBad(c)) << c.name;
    EXPECT_EQ(first, c.first_bad) << c.name;
  }
}

TEST(WeightScan, DigestIsTheSameWhateverTheChunksAndOrder) {
  for (const ScanCase &c : atlas_test::ScanCases()) {
    uint64_t whole = atlas_weight_scan(c.bytes.data(), c.bytes.size(), 0,
                                       ATLAS_SCAN_FINITE_NONE, nullptr);
    for (size_t chunk : {ATLAS_SCAN_BLOCK_BYTES, 3 * ATLAS_SCAN_BLOCK_BYTES,
                         (size_t)(256 << 10)}) {
      // Chunks summed last to first: the order must not matter either.
      uint64_t sum = 0;
      size_t n = (c.bytes.size() + chunk - 1) / chunk;
      for (size_t k = n; k-- > 0;) {
        size_t at = k * chunk, len = std::min(chunk, c.bytes.size() - at);
        sum += atlas_weight_scan(c.bytes.data() + at, len, at,
                                 ATLAS_SCAN_FINITE_NONE, nullptr);
      }
      EXPECT_EQ(sum, whole) << c.name << " in " << chunk << "-byte chunks";
    }
  }
}

TEST(WeightScan, AnyChangedByteChangesTheDigest) {
  std::mt19937 rng(7);
  std::vector<unsigned char> b = atlas_test::FiniteBytes(
      3 * ATLAS_SCAN_BLOCK_BYTES + 100, ATLAS_SCAN_FINITE_NONE, rng);
  uint64_t d0 =
      atlas_weight_scan(b.data(), b.size(), 0, ATLAS_SCAN_FINITE_NONE, nullptr);
  for (size_t i = 0; i < b.size(); i += 7) {
    for (int bit = 0; bit < 8; bit += 3) {
      b[i] ^= (unsigned char)(1u << bit);
      EXPECT_NE(atlas_weight_scan(b.data(), b.size(), 0, ATLAS_SCAN_FINITE_NONE,
                                  nullptr),
                d0)
          << "byte " << i << " bit " << bit;
      b[i] ^= (unsigned char)(1u << bit);
    }
  }
  // Moving bytes between lanes or blocks changes it too.
  std::swap(b[0], b[16]);
  EXPECT_NE(
      atlas_weight_scan(b.data(), b.size(), 0, ATLAS_SCAN_FINITE_NONE, nullptr),
      d0);
  std::swap(b[0], b[16]);
  std::swap_ranges(b.begin(), b.begin() + 4096, b.begin() + 4096);
  EXPECT_NE(
      atlas_weight_scan(b.data(), b.size(), 0, ATLAS_SCAN_FINITE_NONE, nullptr),
      d0);
  // A trailing zero byte is a different tensor.
  b.push_back(0);
  EXPECT_NE(
      atlas_weight_scan(b.data(), b.size(), 0, ATLAS_SCAN_FINITE_NONE, nullptr),
      d0);
}

class WeightCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    atlas_backend_options o{};
    o.modules = &set_;
    ASSERT_OK(atlas_host_backend_create(&o, &b_));
  }
  void TearDown() override { EXPECT_OK(atlas_backend_destroy(b_)); }
  const atlas_module_def *mods_[1] = {&atlas_weight_scan_module};
  atlas_module_set set_{mods_, 1};
  atlas_backend *b_ = nullptr;
};

TEST_F(WeightCheck, DigestsAndTheFirstBadTensorAsTheLoadReportsThem) {
  std::vector<ScanCase> cases = atlas_test::ScanCases();
  std::vector<void *> dev;
  std::vector<atlas_upload_job> jobs;
  std::vector<uint64_t> digests(cases.size(), 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    void *p = nullptr;
    ASSERT_OK(atlas_backend_alloc(b_, cases[i].bytes.size(), &p));
    ASSERT_OK(
        atlas_backend_h2d(b_, p, cases[i].bytes.data(), cases[i].bytes.size()));
    dev.push_back(p);
    atlas_upload_job j{};
    j.dst = p;
    j.bytes = cases[i].bytes.size();
    j.what = cases[i].name.c_str();
    j.fd = -1;
    j.file = "scan.safetensors";
    j.digest = &digests[i];
    jobs.push_back(j);
  }
  // Digests only: every job's digest is the host scan's.
  ASSERT_OK(atlas_weight_check_run(b_, jobs.data(), jobs.size()));
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(digests[i],
              atlas_weight_scan(cases[i].bytes.data(), cases[i].bytes.size(), 0,
                                ATLAS_SCAN_FINITE_NONE, nullptr))
        << cases[i].name;
  }
  // With the NaN/Inf search: the first job holding one is named.
  size_t first_bad_job = cases.size();
  for (size_t i = 0; i < cases.size(); ++i) {
    jobs[i].finite = cases[i].finite;
    jobs[i].digest = nullptr;
    if (cases[i].first_bad != UINT64_MAX && first_bad_job == cases.size()) {
      first_bad_job = i;
    }
  }
  ASSERT_LT(first_bad_job, cases.size());
  StatusResult r = Take(atlas_weight_check_run(b_, jobs.data(), jobs.size()));
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS);
  std::string want = "tensor " + cases[first_bad_job].name +
                     " holds a non-finite weight: element " +
                     std::to_string(cases[first_bad_job].first_bad) + " is Inf";
  EXPECT_NE(r.message.find(want), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("scan.safetensors"), std::string::npos) << r.message;
  for (void *p : dev) EXPECT_OK(atlas_backend_free(b_, p));
}

TEST_F(WeightCheck, WithoutTheModuleTheCheckSaysSo) {
  atlas_backend *bare = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &bare));
  uint64_t d = 0;
  unsigned char byte = 1;
  atlas_upload_job j{};
  j.dst = &byte;
  j.bytes = 1;
  j.fd = -1;
  j.digest = &d;
  StatusResult r = Take(atlas_weight_check_run(bare, &j, 1));
  EXPECT_NE(r.code, ATLAS_STATUS_OK);
  EXPECT_NE(r.message.find("weight_scan"), std::string::npos) << r.message;
  EXPECT_OK(atlas_backend_destroy(bare));
}

}  // namespace
