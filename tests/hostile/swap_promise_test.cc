// The swap keeps its promise: when only one model fits and the new one
// fails, the old model comes back with the same weights bit for bit, even if
// its files were overwritten, truncated or deleted meanwhile; when that
// cannot be guaranteed the swap is refused before anything is touched.
#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "atlas/runtime/device/host_pool.h"
#include "atlas/runtime/model/swap.h"
#include "tests/hostile/hostile_util.h"

namespace {

using hostile::Logits;

class SwapPromise : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    shards_ = GetParam();
    old_ = hostile::Checkpoint("old" + std::to_string(shards_), "tiny", 21,
                               ATLAS_DTYPE_BF16, shards_);
    new_ = hostile::Checkpoint("new" + std::to_string(shards_), "small", 22,
                               ATLAS_DTYPE_F32);
  }
  void TearDown() override {
    if (pool_ != nullptr) {
      EXPECT_EQ(atlas_host_pool_used(pool_), 0u) << "leaked";
      atlas_host_pool_destroy(pool_);
    }
  }
  atlas_model_spec Spec(const std::string &dir) {
    atlas_model_spec s{};
    s.dir = dir.c_str();
    s.backend = "host";
    s.host_pool = pool_;
    s.max_seq = 16;
    return s;
  }
  // A pool where only one model fits at a time.
  void OneAtATime() {
    atlas_model_spec a = Spec(old_), b = Spec(new_);
    uint64_t na = 0, nb = 0;
    ASSERT_OK(atlas_model_required_bytes(&a, &na));
    ASSERT_OK(atlas_model_required_bytes(&b, &nb));
    ASSERT_OK(atlas_host_pool_create(nb + na / 2, &pool_));
  }
  // Device allocations a clean open of `s` makes; the last is the model's
  // buffers (KV cache and scratch), after the weights are in.
  static uint64_t LoadAllocs(const atlas_model_spec &s) {
    atlas_model *probe = nullptr;
    EXPECT_OK(atlas_model_open(&s, &probe));
    if (probe == nullptr) return 0;
    uint64_t n =
        atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_ALLOC);
    EXPECT_OK(atlas_model_close(probe, nullptr));
    return n;
  }
  // Every file of the old checkpoint (config, weights or index + shards).
  std::vector<std::string> OldFiles() {
    std::vector<std::string> files = {old_ + "/config.json"};
    if (shards_ == 1) {
      files.push_back(old_ + "/model.safetensors");
    } else {
      files.push_back(old_ + "/model.safetensors.index.json");
      for (int i = 1; i <= shards_; ++i) {
        char name[64];
        snprintf(name, sizeof(name), "/model-%05d-of-%05d.safetensors", i,
                 shards_);
        files.push_back(old_ + name);
      }
    }
    return files;
  }
  int shards_ = 1;
  std::string old_, new_;
  atlas_host_pool *pool_ = nullptr;
};

enum Vandalism { kOverwrite, kRewriteOtherWeights, kTruncate, kDelete };

struct HookCtx {
  SwapPromise *self;
  std::vector<std::string> files;
  std::string old_dir;
  Vandalism how;
  int shards;
  int calls = 0;
};

void Vandalize(void *p) {
  HookCtx *c = static_cast<HookCtx *>(p);
  c->calls++;
  for (const std::string &f : c->files) {
    switch (c->how) {
      case kOverwrite: {  // same size, other bytes, in place
        FILE *fp = fopen(f.c_str(), "r+b");
        ASSERT_NE(fp, nullptr) << f;
        fseek(fp, 0, SEEK_END);
        long n = ftell(fp);
        for (long at = n / 2; at < n; at += 7) {
          fseek(fp, at, SEEK_SET);
          fputc(0x3c, fp);
        }
        fclose(fp);
        break;
      }
      case kTruncate:
        ASSERT_EQ(truncate(f.c_str(), 10), 0) << f;
        break;
      case kDelete:
        ASSERT_EQ(unlink(f.c_str()), 0) << f;
        break;
      case kRewriteOtherWeights:
        break;
    }
  }
  if (c->how == kRewriteOtherWeights) {
    // A different, valid checkpoint under the same name.
    hostile::Checkpoint(c->old_dir.substr(c->old_dir.rfind('/') + 1), "tiny",
                        999, ATLAS_DTYPE_BF16, c->shards);
  }
}

TEST_P(SwapPromise, FailedSwapRestoresTheSameWeightsWhateverHappensToTheFiles) {
  OneAtATime();
  uint64_t last = LoadAllocs(Spec(new_));
  for (Vandalism how : {kOverwrite, kRewriteOtherWeights, kTruncate, kDelete}) {
    SCOPED_TRACE("vandalism " + std::to_string(how));
    // Fresh old files for each case.
    old_ = hostile::Checkpoint("old" + std::to_string(shards_), "tiny", 21,
                               ATLAS_DTYPE_BF16, shards_);
    atlas_model_spec a = Spec(old_);
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_model_open(&a, &m));
    std::vector<float> before = Logits(m);
    size_t live = atlas_backend_live_bytes(atlas_model_backend(m));

    HookCtx ctx{this, OldFiles(), old_, how, shards_};
    atlas_model_spec b = Spec(new_);
    b.after_teardown = Vandalize;
    b.after_teardown_ctx = &ctx;
    b.fault_kind = ATLAS_FAULT_ALLOC;
    b.fault_at = last;  // the new weights are in, their buffers fail
    atlas_swap_report r;
    StatusResult s = Take(atlas_model_swap(&m, &b, &r));
    EXPECT_EQ(ctx.calls, 1);
    EXPECT_EQ(s.code, ATLAS_STATUS_ABORTED) << s.message;
    EXPECT_EQ(r.path, ATLAS_SWAP_REPLACE);
    ASSERT_TRUE(r.restored) << s.message;
    EXPECT_NE(s.message.find("was restored and is serving"), std::string::npos)
        << s.message;
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(Logits(m), before) << "restored weights differ";
    EXPECT_EQ(atlas_backend_live_bytes(atlas_model_backend(m)), live);

    // A second failed swap restores again (now from the kept host copy).
    atlas_model_spec b2 = Spec(new_);
    b2.fault_kind = ATLAS_FAULT_COPY;
    b2.fault_at = 3;
    StatusResult s2 = Take(atlas_model_swap(&m, &b2, &r));
    EXPECT_EQ(s2.code, ATLAS_STATUS_ABORTED) << s2.message;
    ASSERT_TRUE(r.restored) << s2.message;
    EXPECT_EQ(Logits(m), before);
    ASSERT_OK(atlas_model_close(m, nullptr));
  }
}

TEST_P(SwapPromise, FilesChangedSinceTheLoadRefuseTheSwapUpFront) {
  OneAtATime();
  atlas_model_spec a = Spec(old_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  // Change one weight byte in place after the load.
  hostile::Where w = hostile::Locate(old_, "model.layers.0.mlp.up_proj.weight");
  hostile::Patch(w.path, w.offset + 2, {0x11});
  atlas_model_spec b = Spec(new_);
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &b, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_FAILED_PRECONDITION) << s.message;
  EXPECT_NE(s.message.find("refused before touching anything"),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find(w.path), std::string::npos) << s.message;
  EXPECT_EQ(r.path, ATLAS_SWAP_REFUSED);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

TEST_P(SwapPromise, NoRoomForAHostCopyRefusesUpFront) {
  OneAtATime();
  atlas_model_spec a = Spec(old_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  atlas_model_spec b = Spec(new_);
  b.snapshot_limit_bytes = 1000;
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &b, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << s.message;
  EXPECT_NE(s.message.find("host memory"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("still serving"), std::string::npos) << s.message;
  EXPECT_EQ(r.path, ATLAS_SWAP_REFUSED);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// Side by side needs no copy: files may change freely while the old serves.
TEST_P(SwapPromise, SideBySideIgnoresTheOldFiles) {
  atlas_model_spec a = Spec(old_), b = Spec(new_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  for (const std::string &f : OldFiles()) ASSERT_EQ(unlink(f.c_str()), 0);
  uint64_t last = LoadAllocs(b);
  b.fault_kind = ATLAS_FAULT_ALLOC;
  b.fault_at = last;
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &b, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_ABORTED) << s.message;
  EXPECT_EQ(r.path, ATLAS_SWAP_SIDE_BY_SIDE);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

INSTANTIATE_TEST_SUITE_P(Shards, SwapPromise, ::testing::Values(1, 3));

}  // namespace
