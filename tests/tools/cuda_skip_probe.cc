// A test binary whose one CUDA case always takes the skip path of
// tests/cuda/cuda_skip.h, run by cuda_skip_test.sh with and without
// ATLAS_REQUIRE_GPU (a cc_binary, so `bazel test` never counts its skip).
#include <gtest/gtest.h>

#include "tests/cuda/cuda_skip.h"

namespace {

TEST(CudaSkipProbe, CannotRunHere) {
  ATLAS_CUDA_SKIP("CUDA unavailable: "
                  << "probe reason " << 42);
  ADD_FAILURE() << "the skip must return from the test";
}

TEST(CudaSkipProbe, OtherCasesStillRun) { SUCCEED(); }

}  // namespace
