// Two models on two threads, each with its own backend, generate at the same
// time with the same logits as one after the other; and one thread swaps
// while another runs a different model. Run under --config=tsan for races.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/model/swap.h"
#include "tests/hostile/hostile_util.h"

namespace {

using hostile::Logits;

atlas_model_spec Spec(const std::string &dir) {
  atlas_model_spec s{};
  s.dir = dir.c_str();
  s.backend = "host";
  s.max_seq = 16;
  return s;
}

std::vector<float> OpenRunClose(const std::string &dir) {
  atlas_model_spec s = Spec(dir);
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&s, &m));
  if (m == nullptr) return {};
  std::vector<float> l = Logits(m);
  EXPECT_OK(atlas_model_close(m, nullptr));
  return l;
}

TEST(Concurrency, TwoModelsOnTwoThreadsMatchSequential) {
  std::string a = hostile::Checkpoint("ca", "tiny", 31, ATLAS_DTYPE_BF16);
  std::string b = hostile::Checkpoint("cb", "small", 32, ATLAS_DTYPE_F16, 2);
  std::vector<float> seq_a = OpenRunClose(a), seq_b = OpenRunClose(b);
  ASSERT_FALSE(seq_a.empty());
  ASSERT_FALSE(seq_b.empty());
  for (int round = 0; round < 3; ++round) {
    std::vector<float> par_a, par_b;
    std::thread ta([&] { par_a = OpenRunClose(a); });
    std::thread tb([&] { par_b = OpenRunClose(b); });
    ta.join();
    tb.join();
    EXPECT_EQ(par_a, seq_a);
    EXPECT_EQ(par_b, seq_b);
  }
}

TEST(Concurrency, OneThreadSwapsWhileAnotherRuns) {
  std::string a = hostile::Checkpoint("sa", "tiny", 41, ATLAS_DTYPE_F32);
  std::string b = hostile::Checkpoint("sb", "small", 42, ATLAS_DTYPE_BF16);
  std::string c = hostile::Checkpoint("sc", "tiny", 43, ATLAS_DTYPE_F16);
  std::vector<float> la = OpenRunClose(a), lb = OpenRunClose(b),
                     lc = OpenRunClose(c);
  atlas_model_spec sc = Spec(c);
  atlas_model *runner = nullptr;
  ASSERT_OK(atlas_model_open(&sc, &runner));
  std::vector<std::vector<float>> seen;
  std::thread swapper([&] {
    atlas_model_spec sa = Spec(a), sb = Spec(b);
    atlas_model *m = nullptr;
    EXPECT_OK(atlas_model_open(&sa, &m));
    for (int i = 0; i < 4 && m != nullptr; ++i) {
      EXPECT_OK(atlas_model_swap(&m, i % 2 == 0 ? &sb : &sa, nullptr));
      seen.push_back(Logits(m));
    }
    EXPECT_OK(atlas_model_close(m, nullptr));
  });
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Logits(runner), lc);
  swapper.join();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], lb);
  EXPECT_EQ(seen[1], la);
  EXPECT_EQ(seen[2], lb);
  EXPECT_EQ(seen[3], la);
  ASSERT_OK(atlas_model_close(runner, nullptr));
}

}  // namespace
