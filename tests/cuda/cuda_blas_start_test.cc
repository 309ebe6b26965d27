// cuBLASLt's deferred start (atlas_cuda_blas_create with `background`), on
// any machine: a host backend stands in for the CUDA one (its sink takes the
// lines, its bind_to_thread the start thread's binding) and the library is
// one that is not there, so every start ends in "not found". What is checked
// is the plumbing: when the lines come, that they come once, that a start on
// its own thread is waited for by whoever needs it, and by destroy. Also run
// under ThreadSanitizer in CI.
#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/cuda/cuda_blas.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/runtime/test_util.h"

namespace {

constexpr const char *kMissing = "/nonexistent/libcublasLt.so.13";

struct Lines {
  std::vector<std::string> info;
};

void Collect(void *ctx, atlas_log_level level, const char *message) {
  if (level >= ATLAS_LOG_INFO)
    static_cast<Lines *>(ctx)->info.push_back(message);
}

class BlasStart : public ::testing::Test {
 protected:
  void SetUp() override {
    atlas_backend_options o{};
    o.log.fn = Collect;
    o.log.ctx = &lines_;
    ASSERT_OK(atlas_host_backend_create(&o, &host_));
  }
  void TearDown() override { EXPECT_OK(atlas_backend_destroy(host_)); }
  void ExpectNotFoundOnce() {
    ASSERT_EQ(lines_.info.size(), 1u);
    EXPECT_NE(lines_.info[0].find("cuBLASLt not found"), std::string::npos)
        << lines_.info[0];
    EXPECT_NE(lines_.info[0].find(kMissing), std::string::npos)
        << lines_.info[0];
    EXPECT_NE(lines_.info[0].find("own kernels"), std::string::npos)
        << lines_.info[0];
  }
  atlas_backend *host_ = nullptr;
  Lines lines_;
};

TEST_F(BlasStart, ImmediateStartOfAMissingLibraryIsNullAndSaysSo) {
  atlas_cuda_blas *blas = nullptr;
  ASSERT_OK(atlas_cuda_blas_create(host_, kMissing, false, &blas));
  EXPECT_EQ(blas, nullptr);
  ExpectNotFoundOnce();
}

TEST_F(BlasStart, DeferredStartSaysNothingUntilItIsNeeded) {
  atlas_cuda_blas *blas = nullptr;
  ASSERT_OK(atlas_cuda_blas_create(host_, kMissing, true, &blas));
  ASSERT_NE(blas, nullptr);
  EXPECT_TRUE(lines_.info.empty()) << lines_.info[0];
  atlas_cuda_blas_start_background(blas);
  atlas_cuda_blas_start_background(blas);  // running or done: no second thread
  EXPECT_FALSE(atlas_cuda_blas_ready(blas));
  ExpectNotFoundOnce();
  EXPECT_FALSE(atlas_cuda_blas_ready(blas));  // said once
  atlas_cuda_blas_start_background(blas);     // settled: nothing to start
  EXPECT_EQ(lines_.info.size(), 1u);
  EXPECT_OK(atlas_cuda_blas_release_workspace(blas));
  EXPECT_OK(atlas_cuda_blas_destroy(blas));
}

TEST_F(BlasStart, ADeferredStartNeverBegunRunsAtTheFirstUse) {
  atlas_cuda_blas *blas = nullptr;
  ASSERT_OK(atlas_cuda_blas_create(host_, kMissing, true, &blas));
  EXPECT_FALSE(atlas_cuda_blas_ready(blas));
  ExpectNotFoundOnce();
  EXPECT_OK(atlas_cuda_blas_destroy(blas));
}

TEST_F(BlasStart, DestroyWaitsForAStartNobodyWaitedFor) {
  for (int i = 0; i < 20; ++i) {
    atlas_cuda_blas *blas = nullptr;
    ASSERT_OK(atlas_cuda_blas_create(host_, kMissing, true, &blas));
    atlas_cuda_blas_start_background(blas);
    EXPECT_OK(atlas_cuda_blas_destroy(blas));
  }
  EXPECT_TRUE(lines_.info.empty()) << lines_.info[0];
}

TEST_F(BlasStart, ThreadsAskingAtOnceGetOneAnswerAndOneLine) {
  atlas_cuda_blas *blas = nullptr;
  ASSERT_OK(atlas_cuda_blas_create(host_, kMissing, true, &blas));
  atlas_cuda_blas_start_background(blas);
  std::vector<std::thread> askers;
  std::vector<int> usable(8, -1);
  for (size_t i = 0; i < usable.size(); ++i) {
    askers.emplace_back(
        [&, i] { usable[i] = atlas_cuda_blas_ready(blas) ? 1 : 0; });
  }
  for (std::thread &t : askers) t.join();
  for (int u : usable) EXPECT_EQ(u, 0);
  ExpectNotFoundOnce();
  EXPECT_OK(atlas_cuda_blas_destroy(blas));
}

TEST_F(BlasStart, DisabledIsNullWhateverTheMode) {
  for (bool background : {false, true}) {
    atlas_cuda_blas *blas = nullptr;
    ASSERT_OK(atlas_cuda_blas_create(host_, "0", background, &blas));
    EXPECT_EQ(blas, nullptr);
    atlas_cuda_blas_start_background(blas);  // NULL: nothing
  }
  ASSERT_EQ(lines_.info.size(), 2u);
  EXPECT_NE(lines_.info[1].find("ATLAS_CUBLASLT=0"), std::string::npos)
      << lines_.info[1];
  atlas_cuda_blas *blas = nullptr;
  EXPECT_STATUS(atlas_cuda_blas_create(host_, "yes", true, &blas),
                ATLAS_STATUS_INVALID_ARGUMENT, "ATLAS_CUBLASLT='yes'");
  EXPECT_EQ(blas, nullptr);
}

}  // namespace
