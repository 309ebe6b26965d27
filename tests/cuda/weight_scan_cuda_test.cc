// The `weight_scan` CUDA kernel against the host definition
// (runtime/base/weight_scan.c): the same digest and the same first non-finite
// element for every case, from aligned and unaligned device addresses, and a
// large tensor through many strides of the grid. Skips where there is no GPU.
#include <stdint.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/arch/weight_check.h"
#include "atlas/runtime/base/weight_scan.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/runtime/test_util.h"
#include "tests/runtime/weight_scan_cases.h"

namespace {

using atlas_test::ScanCase;

class WeightScanCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    atlas_backend_options o{};
    o.modules = &set_;
    StatusResult r = Take(atlas_cuda_backend_create(&o, &b_));
    if (r.code == ATLAS_STATUS_UNAVAILABLE) {
      ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
    }
    ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  }
  void TearDown() override {
    if (b_ != nullptr) EXPECT_OK(atlas_backend_destroy(b_));
  }
  // Digest and first bad element of `c` copied to the device at `shift`
  // bytes past an allocation's start.
  void Scan(const ScanCase &c, size_t shift, uint64_t *digest,
            uint64_t *first) {
    unsigned char *p = nullptr;
    ASSERT_OK(atlas_backend_alloc(b_, c.bytes.size() + shift, (void **)&p));
    ASSERT_OK(atlas_backend_h2d(b_, p + shift, c.bytes.data(), c.bytes.size()));
    atlas_upload_job j{};
    j.dst = p + shift;
    j.bytes = c.bytes.size();
    j.what = c.name.c_str();
    j.fd = -1;
    j.digest = digest;
    *digest = 0;
    *first = UINT64_MAX;
    ASSERT_OK(atlas_weight_check_run(b_, &j, 1));
    j.finite = c.finite;
    j.digest = nullptr;
    StatusResult r = Take(atlas_weight_check_run(b_, &j, 1));
    if (r.code != ATLAS_STATUS_OK) {
      size_t at = r.message.find("element ");
      ASSERT_NE(at, std::string::npos) << r.message;
      *first = std::stoull(r.message.substr(at + 8));
    }
    EXPECT_OK(atlas_backend_free(b_, p));
  }
  const atlas_module_def *mods_[1] = {&atlas_weight_scan_module};
  atlas_module_set set_{mods_, 1};
  atlas_backend *b_ = nullptr;
};

TEST_F(WeightScanCuda, SameDigestAndFirstBadAsTheHost) {
  int n = 0;
  for (const ScanCase &c : atlas_test::ScanCases()) {
    uint64_t want_first = UINT64_MAX;
    uint64_t want = atlas_weight_scan(c.bytes.data(), c.bytes.size(), 0,
                                      c.finite, &want_first);
    ASSERT_EQ(want_first, c.first_bad) << c.name;
    for (size_t shift : {0, 2, 8}) {
      uint64_t got = 0, got_first = 0;
      Scan(c, shift, &got, &got_first);
      EXPECT_EQ(got, want) << c.name << " at +" << shift;
      EXPECT_EQ(got_first, want_first) << c.name << " at +" << shift;
      ++n;
    }
  }
  printf("weight_scan: %d cases equal on CUDA and the host\n", n);
}

TEST_F(WeightScanCuda, LargeTensorThroughManyGridStrides) {
  std::mt19937 rng(99);
  ScanCase c{"256 MiB bf16",
             atlas_test::FiniteBytes((256u << 20) + 4096 + 6,
                                     ATLAS_SCAN_FINITE_BF16, rng),
             ATLAS_SCAN_FINITE_BF16, 0};
  c.first_bad = c.bytes.size() / 2 - 3;
  atlas_test::PlantBad(c.bytes, c.finite, c.first_bad, true);
  uint64_t want_first = 0;
  uint64_t want = atlas_weight_scan(c.bytes.data(), c.bytes.size(), 0, c.finite,
                                    &want_first);
  uint64_t got = 0, got_first = 0;
  Scan(c, 0, &got, &got_first);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_first, c.first_bad);
  EXPECT_EQ(want_first, c.first_bad);
}

}  // namespace
