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

// Budgets are per device: a split model needs its busiest device's share,
// an upper bound on what each device then holds.
TEST(TensorParallelSwap, ABudgetIsPerDevice) {
  atlas_model_spec whole = Spec(kOld, 1), split = Spec(kOld, 4);
  uint64_t need1 = 0, need4 = 0;
  ASSERT_OK(atlas_model_required_bytes(&whole, &need1));
  ASSERT_OK(atlas_model_required_bytes(&split, &need4));
  EXPECT_LT(need4, need1 / 2);
  split.device_budget_bytes = need4;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&split, &m));
  for (int r = 0; r < 4; ++r) {
    EXPECT_LE(atlas_backend_live_bytes(atlas_model_rank_backend(m, r)), need4)
        << "rank " << r;
  }
  CloseClean(m);
  whole.device_budget_bytes = need4;
  EXPECT_STATUS(atlas_model_open(&whole, &m), ATLAS_STATUS_RESOURCE_EXHAUSTED,
                "but the device budget is");
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

// The sweep: every allocation and collective of the new model's load and
// proving step on each of its four devices, and every copy and launch on
// the last one, fails the swap; the old model serves on (kept or restored) with
// its own ids, and every close finds nothing left on any device.
TEST(TensorParallelSwap, EveryFaultOfTheNewModelOnEveryDevice) {
  std::vector<uint32_t> old_ids = IdsOf(kOld, 1);
  // How many operations of each kind the new model makes on rank 3 by the
  // end of a swap to it (the same on every rank).
  const atlas_fault_kind kinds[] = {ATLAS_FAULT_ALLOC, ATLAS_FAULT_COPY,
                                    ATLAS_FAULT_LAUNCH, ATLAS_FAULT_COLLECTIVE};
  uint64_t counts[4] = {0, 0, 0, 0};
  {
    atlas_model_spec s = Spec(kOld, 4);
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_model_open(&s, &m));
    atlas_model_spec next = Spec(kNew, 4);
    atlas_swap_report r;
    ASSERT_OK(atlas_model_swap(&m, &next, &r));
    for (int k = 0; k < 4; ++k) {
      counts[k] =
          atlas_backend_op_count(atlas_model_rank_backend(m, 3), kinds[k]);
      EXPECT_GT(counts[k], 0u) << atlas_fault_kind_name(kinds[k]);
    }
    CloseClean(m);
  }
  for (bool only_one_fits : {false, true}) {
    for (int kind = 0; kind < 4; ++kind) {
      for (int rank = 0; rank < 4; ++rank) {
        // Copies and launches (about 90 a device) on the last device only,
        // to keep the sweep to a few seconds.
        bool every_device = kinds[kind] == ATLAS_FAULT_ALLOC ||
                            kinds[kind] == ATLAS_FAULT_COLLECTIVE;
        if (!every_device && rank != 3) continue;
        for (uint64_t at = 1; at <= counts[kind]; ++at) {
          SCOPED_TRACE(std::string(atlas_fault_kind_name(kinds[kind])) + " #" +
                       std::to_string(at) + " on rank " + std::to_string(rank) +
                       (only_one_fits ? ", replace" : ", side by side"));
          atlas_model_spec s = Spec(kOld, 4);
          atlas_model *m = nullptr;
          ASSERT_OK(atlas_model_open(&s, &m));
          atlas_model_spec next = Spec(kNew, 4);
          next.fault_rank = rank;
          next.fault_kind = kinds[kind];
          next.fault_at = at;
          if (only_one_fits) {
            uint64_t need = 0;
            ASSERT_OK(atlas_model_required_bytes(&next, &need));
            next.device_budget_bytes = need;
          }
          atlas_swap_report r;
          StatusResult st = Take(atlas_model_swap(&m, &next, &r));
          EXPECT_NE(st.code, ATLAS_STATUS_OK);
          EXPECT_FALSE(r.swapped);
          EXPECT_EQ(r.restored, only_one_fits) << st.message;
          ASSERT_NE(m, nullptr) << st.message;
          EXPECT_EQ(Ids(m), old_ids);
          CloseClean(m);
        }
      }
    }
  }
}

TEST(TensorParallelSwap, EveryDevicesTeardownFailureIsReported) {
  atlas_model_spec s = Spec(kOld, 4);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&s, &m));
  // Devices 1 and 3 refuse their first free.
  atlas_backend_inject_fault(atlas_model_rank_backend(m, 1), ATLAS_FAULT_FREE,
                             1);
  atlas_backend_inject_fault(atlas_model_rank_backend(m, 3), ATLAS_FAULT_FREE,
                             1);
  atlas_teardown_report r;
  StatusResult st = Take(atlas_model_close(m, &r));
  EXPECT_NE(st.code, ATLAS_STATUS_OK);
  EXPECT_NE(st.message.find("unloading rank 1 of 4"), std::string::npos)
      << st.message;
  EXPECT_NE(st.message.find("unloading rank 3 of 4"), std::string::npos)
      << st.message;
  EXPECT_EQ(st.message.find("unloading rank 0 of 4"), std::string::npos)
      << st.message;
  // The refused frees were released by the sweeps: held, not leaked.
  EXPECT_EQ(r.failed, 2u);
  EXPECT_EQ(r.sweep.count, r.sweep.refused_count);
  EXPECT_EQ(r.sweep.refused_count, 2u);
  atlas_sweep_result_free(&r.sweep);
}

}  // namespace
