// Hot swap of models split over four host devices (runtime/model/swap.c
// with atlas_model_spec.tensor_parallel): a swap to another split model
// serves it; a swap whose new model fails on device 3 of 4 keeps the old
// one serving (both fit) or restores it on all four from the host snapshot
// (only one fits), and every device's teardown ends with nothing leaked.
#include <string>
#include <vector>

#include "atlas/runtime/model/model.h"
#include "atlas/runtime/model/swap.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

const char *kOld = "tests/arch/data/llama_bias_f32";
const char *kNew = "tests/arch/data/qwen3_f32";
const uint32_t kPrompt[] = {103, 65, 123, 46, 120};

atlas_model_spec Spec(const char *dir, int ranks) {
  atlas_model_spec s{};
  s.dir = dir;
  s.backend = "host";
  s.max_seq = 16;
  s.ignore_eos = true;
  s.tensor_parallel = ranks;
  return s;
}

std::vector<uint32_t> Ids(atlas_model *m) {
  std::vector<uint32_t> ids(6);
  size_t count = 0;
  EXPECT_OK(atlas_model_generate(m, kPrompt, 5, ids.size(), ids.data(), &count,
                                 nullptr, nullptr));
  ids.resize(count);
  return ids;
}

std::vector<uint32_t> IdsOf(const char *dir, int ranks) {
  atlas_model_spec s = Spec(dir, ranks);
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&s, &m));
  if (m == nullptr) return {};
  std::vector<uint32_t> ids = Ids(m);
  EXPECT_OK(atlas_model_close(m, nullptr));
  return ids;
}

void CloseClean(atlas_model *m) {
  atlas_teardown_report r;
  EXPECT_OK(atlas_model_close(m, &r));
  EXPECT_EQ(r.sweep.count, 0u);
  EXPECT_EQ(r.failed, 0u);
  atlas_sweep_result_free(&r.sweep);
}

TEST(TensorParallelSwap, SwapsToAnotherSplitModel) {
  std::vector<uint32_t> old_ids = IdsOf(kOld, 1), new_ids = IdsOf(kNew, 1);
  ASSERT_EQ(old_ids.size(), 6u);
  ASSERT_NE(old_ids, new_ids);
  atlas_model_spec s = Spec(kOld, 4);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&s, &m));
  EXPECT_EQ(Ids(m), old_ids);
  atlas_model_spec next = Spec(kNew, 4);
  atlas_swap_report r;
  ASSERT_OK(atlas_model_swap(&m, &next, &r));
  EXPECT_TRUE(r.swapped);
  EXPECT_EQ(atlas_model_tensor_parallel(m), 4);
  EXPECT_EQ(Ids(m), new_ids);
  // And back to one device.
  atlas_model_spec whole = Spec(kOld, 1);
  ASSERT_OK(atlas_model_swap(&m, &whole, &r));
  EXPECT_EQ(atlas_model_tensor_parallel(m), 1);
  EXPECT_EQ(Ids(m), old_ids);
  CloseClean(m);
}

// The new model's load fails at its k-th allocation on rank 3 of 4.
void FailOnDevice3(bool only_one_fits) {
  std::vector<uint32_t> old_ids = IdsOf(kOld, 1);
  atlas_model_spec s = Spec(kOld, 4);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&s, &m));
  atlas_model_spec next = Spec(kNew, 4);
  next.fault_rank = 3;
  next.fault_kind = ATLAS_FAULT_ALLOC;
  next.fault_at = 1;
  if (only_one_fits) {
    uint64_t need = 0;
    ASSERT_OK(atlas_model_required_bytes(&next, &need));
    next.device_budget_bytes = need;
  }
  atlas_swap_report r;
  StatusResult st = Take(atlas_model_swap(&m, &next, &r));
  EXPECT_NE(st.code, ATLAS_STATUS_OK);
  EXPECT_NE(st.message.find("rank 3 of 4"), std::string::npos) << st.message;
  EXPECT_FALSE(r.swapped);
  EXPECT_EQ(r.path,
            only_one_fits ? ATLAS_SWAP_REPLACE : ATLAS_SWAP_SIDE_BY_SIDE)
      << st.message;
  EXPECT_EQ(r.restored, only_one_fits);
  ASSERT_NE(m, nullptr) << st.message;
  EXPECT_EQ(atlas_model_tensor_parallel(m), 4);
  EXPECT_EQ(Ids(m), old_ids);
  CloseClean(m);
}

TEST(TensorParallelSwap, AFailureOnDevice3KeepsTheOldModelServing) {
  FailOnDevice3(false);
}

TEST(TensorParallelSwap, AFailureOnDevice3RestoresTheOldModelOnAllFour) {
  FailOnDevice3(true);
}

}  // namespace
