// Hot swap on the host backend with a shared pool standing in for one
// device: budget refusal, side-by-side and replace paths, a fault at every
// allocation/copy/module load of the new model, and the seed's scenario.
#include "atlas/runtime/model/swap.h"

#include "atlas/runtime/device/host_backend.h"
#include "atlas/runtime/device/weight_upload.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

class Swap : public ::testing::Test {
 protected:
  void SetUp() override {
    small_ = MakeCheckpoint("small", "small", 11, ATLAS_DTYPE_F32);
    tiny_ = MakeCheckpoint("tiny", "tiny", 12, ATLAS_DTYPE_BF16);
  }
  void TearDown() override {
    if (pool_) {
      EXPECT_EQ(atlas_host_pool_used(pool_), 0u);
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
  uint64_t Need(const std::string &dir) {
    atlas_model_spec s = Spec(dir);
    uint64_t n = 0;
    EXPECT_OK(atlas_model_required_bytes(&s, &n));
    return n;
  }
  // Device allocations a clean open of `s` makes; the last is the model's
  // buffers (KV cache and scratch), after the weights are in.
  uint64_t LoadAllocs(const atlas_model_spec &s) {
    atlas_model *probe = nullptr;
    EXPECT_OK(atlas_model_open(&s, &probe));
    if (probe == nullptr) return 0;
    uint64_t n =
        atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_ALLOC);
    EXPECT_OK(atlas_model_close(probe, nullptr));
    return n;
  }
  void MakePool(uint64_t capacity) {
    ASSERT_OK(atlas_host_pool_create(capacity, &pool_));
  }
  static std::vector<float> Logits(atlas_model *m) {
    std::vector<uint32_t> prompt = {1, 2, 3};
    std::vector<float> all;
    std::vector<uint32_t> out(4);
    struct Sink {
      static atlas_status Add(void *ctx, const float *x, size_t n) {
        auto *v = static_cast<std::vector<float> *>(ctx);
        v->insert(v->end(), x, x + n);
        return ATLAS_OK;
      }
    };
    EXPECT_OK(atlas_model_generate(m, prompt.data(), 3, 4, out.data(), nullptr,
                                   Sink::Add, &all));
    return all;
  }
  std::string small_, tiny_;
  atlas_host_pool *pool_ = nullptr;
};

TEST_F(Swap, SideBySideWhenBothFit) {
  atlas_model_spec a = Spec(tiny_), b = Spec(small_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&b, &m));
  std::vector<float> b_logits = Logits(m);
  ASSERT_OK(atlas_model_close(m, nullptr));
  ASSERT_OK(atlas_model_open(&a, &m));
  atlas_swap_report r;
  ASSERT_OK(atlas_model_swap(&m, &b, &r));
  EXPECT_EQ(r.path, ATLAS_SWAP_SIDE_BY_SIDE);
  EXPECT_TRUE(r.swapped);
  EXPECT_EQ(Logits(m), b_logits);
  // Only the new model's kernels are reachable: its backend is the only one.
  EXPECT_STREQ(atlas_model_name(m), small_.c_str());
  ASSERT_OK(atlas_model_close(m, nullptr));
}

TEST_F(Swap, RefusesUpFrontWithFigures) {
  uint64_t need_small = Need(small_), need_tiny = Need(tiny_);
  ASSERT_GT(need_small, need_tiny * 2);
  MakePool(need_tiny + need_small / 2);  // small can never fit
  atlas_model_spec a = Spec(tiny_), b = Spec(small_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &b, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_RESOURCE_EXHAUSTED) << s.message;
  EXPECT_NE(s.message.find("refused before touching anything"),
            std::string::npos);
  EXPECT_NE(s.message.find("still serving"), std::string::npos) << s.message;
  EXPECT_EQ(r.path, ATLAS_SWAP_REFUSED);
  EXPECT_EQ(r.needed_bytes, need_small);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// The old model is torn down first, the new one fails at operation k, and
// the old one must come back exactly as it was.
TEST_F(Swap, FaultAtEveryPointRestoresTheOldModel) {
  uint64_t need_small = Need(small_), need_tiny = Need(tiny_);
  MakePool(need_small + need_tiny / 2);  // only one at a time
  atlas_model_spec a = Spec(tiny_), b = Spec(small_);
  // How many allocations and copies does loading the new model make?
  atlas_model *probe = nullptr;
  ASSERT_OK(atlas_model_open(&b, &probe));
  uint64_t allocs =
      atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_ALLOC);
  uint64_t copies =
      atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_COPY);
  ASSERT_OK(atlas_model_close(probe, nullptr));
  // Few allocations (the weights' arena, the scan's results, the buffers:
  // LoadAllocationsDoNotGrowWithLayers), many copies.
  ASSERT_GE(allocs, 3u);
  ASSERT_GT(copies, 20u);

  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  size_t live_count = atlas_backend_live_alloc_count(atlas_model_backend(m));
  size_t live_bytes = atlas_backend_live_bytes(atlas_model_backend(m));
  size_t pool_used = atlas_host_pool_used(pool_);

  struct Fault {
    atlas_fault_kind kind;
    uint64_t at;
    size_t module_at;
  };
  std::vector<Fault> faults;
  for (uint64_t k = 1; k <= allocs; ++k)
    faults.push_back({ATLAS_FAULT_ALLOC, k, 0});
  for (uint64_t k = 1; k <= copies; ++k)
    faults.push_back({ATLAS_FAULT_COPY, k, 0});
  faults.push_back({ATLAS_FAULT_ALLOC, 0, 1});  // the module load
  for (const Fault &f : faults) {
    atlas_model_spec bad = b;
    bad.fault_kind = f.kind;
    bad.fault_at = f.at;
    bad.fail_module_load_at = f.module_at;
    atlas_swap_report r;
    StatusResult s = Take(atlas_model_swap(&m, &bad, &r));
    std::string where = "fault kind " + std::to_string(f.kind) + " at " +
                        std::to_string(f.at) + "/" +
                        std::to_string(f.module_at);
    ASSERT_EQ(s.code, ATLAS_STATUS_ABORTED) << where << ": " << s.message;
    EXPECT_NE(s.message.find("was restored and is serving"), std::string::npos)
        << s.message;
    ASSERT_EQ(r.path, ATLAS_SWAP_REPLACE) << where;
    ASSERT_TRUE(r.restored) << where;
    ASSERT_NE(m, nullptr) << where;
    atlas_backend *be = atlas_model_backend(m);
    ASSERT_EQ(atlas_backend_live_alloc_count(be), live_count) << where;
    ASSERT_EQ(atlas_backend_live_bytes(be), live_bytes) << where;
    ASSERT_EQ(atlas_host_pool_used(pool_), pool_used) << where << ": leaked";
    ASSERT_EQ(Logits(m), before) << where;
  }
  // And a clean swap still works afterwards.
  ASSERT_OK(atlas_model_swap(&m, &b, nullptr));
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// The seed's story: a swap fails part-way; the restore needs nearly the
// whole budget, so it only succeeds if the failed load left nothing behind.
TEST_F(Swap, RestoreThatNeedsNearlyAllTheBudgetSucceeds) {
  uint64_t need_small = Need(small_);
  MakePool(need_small + need_small / 100);
  atlas_model_spec big = Spec(small_), other = Spec(tiny_);
  uint64_t last = LoadAllocs(other);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&big, &m));
  std::vector<float> before = Logits(m);
  other.fault_kind = ATLAS_FAULT_ALLOC;
  other.fault_at = last;  // the weights are in, their buffers fail
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &other, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_ABORTED) << s.message;
  EXPECT_EQ(r.path, ATLAS_SWAP_REPLACE);
  EXPECT_TRUE(r.restored) << s.message;
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// A server keeps one uploader (on a transfer backend that outlives the
// models) so every load reuses its pinned staging.
TEST_F(Swap, KeptUploaderServesEveryLoad) {
  atlas_backend *transfer = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &transfer));
  atlas_uploader *u = nullptr;
  ASSERT_OK(atlas_uploader_create(transfer, nullptr, 0, &u));
  size_t staging_live = atlas_backend_live_alloc_count(transfer);
  EXPECT_GT(staging_live, 0u);
  atlas_model_spec a = Spec(tiny_), b = Spec(small_);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&b, &m));
  std::vector<float> b_logits = Logits(m);
  ASSERT_OK(atlas_model_close(m, nullptr));
  a.uploader = b.uploader = u;
  ASSERT_OK(atlas_model_open(&a, &m));
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK(atlas_model_swap(&m, i % 2 == 0 ? &b : &a, nullptr));
  }
  ASSERT_OK(atlas_model_swap(&m, &b, nullptr));
  EXPECT_EQ(Logits(m), b_logits);  // same weights through kept staging
  EXPECT_EQ(atlas_backend_live_alloc_count(transfer), staging_live);
  // A failed load through the kept uploader still restores the old model.
  atlas_model_spec bad = a;
  uint64_t last = LoadAllocs(a);
  bad.fault_kind = ATLAS_FAULT_ALLOC;
  bad.fault_at = last;  // after every copy through the uploader
  StatusResult s = Take(atlas_model_swap(&m, &bad, nullptr));
  EXPECT_EQ(s.code, ATLAS_STATUS_ABORTED) << s.message;
  EXPECT_EQ(Logits(m), b_logits);
  ASSERT_OK(atlas_model_close(m, nullptr));
  ASSERT_OK(atlas_uploader_destroy(u));
  ASSERT_OK(atlas_backend_destroy(transfer));
}

TEST_F(Swap, BrokenCheckpointIsRefusedAndOldModelKept) {
  std::string broken = MakeCheckpoint("broken", "tiny", 3, ATLAS_DTYPE_F32);
  FILE *f = fopen((broken + "/model.safetensors").c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fclose(f);
  ASSERT_EQ(truncate((broken + "/model.safetensors").c_str(), size - 10), 0);
  atlas_model_spec a = Spec(tiny_), b = Spec(broken);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  StatusResult s = Take(atlas_model_swap(&m, &b, nullptr));
  EXPECT_NE(s.code, ATLAS_STATUS_OK);
  EXPECT_NE(s.message.find("model.safetensors"), std::string::npos)
      << s.message;
  ASSERT_NE(m, nullptr);
  EXPECT_STREQ(atlas_model_name(m), tiny_.c_str());
  ASSERT_OK(atlas_model_close(m, nullptr));
}

}  // namespace
