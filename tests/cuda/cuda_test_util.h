// Helpers for CUDA tests: create a backend or skip with the reason.
#ifndef ATLAS_TESTS_CUDA_CUDA_TEST_UTIL_H_
#define ATLAS_TESTS_CUDA_CUDA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/runtime/test_util.h"

// Creates a CUDA backend; on UNAVAILABLE (no driver, no GPU, built without
// nvcc) the test skips with the status message (fails under
// ATLAS_REQUIRE_GPU=1, see cuda_skip.h).
#define CUDA_CREATE_OR_SKIP(options, out_backend)                  \
  do {                                                             \
    StatusResult made_ =                                           \
        Take(atlas_cuda_backend_create((options), (out_backend))); \
    if (made_.code == ATLAS_STATUS_UNAVAILABLE) {                  \
      ATLAS_CUDA_SKIP("CUDA unavailable: " << made_.message);      \
    }                                                              \
    ASSERT_EQ(made_.code, ATLAS_STATUS_OK) << made_.message;       \
  } while (0)

// A backend with the contract module set ({contract}) or `module`'s set.
struct CudaModuleSet {
  explicit CudaModuleSet(const atlas_module_def *m) : mods{m}, set{mods, 1} {}
  const atlas_module_def *mods[1];
  atlas_module_set set;
};

inline atlas_launch_config CudaGrid(uint32_t n, atlas_stream *s = nullptr) {
  atlas_launch_config c{};
  c.grid = {(n + 255) / 256 ? (n + 255) / 256 : 1, 1, 1};
  c.block = {256, 1, 1};
  c.stream = s;
  return c;
}

#endif  // ATLAS_TESTS_CUDA_CUDA_TEST_UTIL_H_
