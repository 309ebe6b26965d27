// How a CUDA test that cannot run here says so.
//
// Without a driver, a GPU or nvcc, a CUDA test skips with the reason, its
// message starting "CUDA skip: " (tools/gpu/cuda_skip_summary.sh counts those
// lines in the test logs and prints one summary after `tools/bazel test`).
// Someone who expected a GPU sets ATLAS_REQUIRE_GPU=1 (the GPU runners do;
// under Bazel pass --test_env=ATLAS_REQUIRE_GPU=1, which tools/bazel adds when
// the variable is set): then the same place fails instead, so a skip can
// never pass for a GPU run.
#ifndef ATLAS_TESTS_CUDA_CUDA_SKIP_H_
#define ATLAS_TESTS_CUDA_CUDA_SKIP_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <sstream>

namespace atlas_test {

// ATLAS_REQUIRE_GPU set to anything but "" or "0".
inline bool RequireGpu() {
  const char *v = getenv("ATLAS_REQUIRE_GPU");
  return v != nullptr && v[0] != '\0' && strcmp(v, "0") != 0;
}

}  // namespace atlas_test

// ATLAS_CUDA_SKIP("CUDA unavailable: " << message): skips the test (returns
// from the enclosing void function), or fails it under ATLAS_REQUIRE_GPU=1.
#define ATLAS_CUDA_SKIP(reason)                                          \
  do {                                                                   \
    std::ostringstream atlas_skip_why_;                                  \
    atlas_skip_why_ << reason;                                           \
    if (::atlas_test::RequireGpu()) {                                    \
      GTEST_FAIL() << "ATLAS_REQUIRE_GPU is set, so this CUDA test may " \
                      "not skip: "                                       \
                   << atlas_skip_why_.str();                             \
    }                                                                    \
    GTEST_SKIP() << "CUDA skip: " << atlas_skip_why_.str();              \
  } while (0)

#endif  // ATLAS_TESTS_CUDA_CUDA_SKIP_H_
