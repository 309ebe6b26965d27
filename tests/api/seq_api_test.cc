// The public step API (atlas.h, "sequences and the batch step") on the host
// backend: atlas_decode over sequences of different lengths gives each the
// logits atlas_generate's on_logits sees for the same prompt (within 1e-5)
// and its greedy ids; fork; prefix reuse; the pool's stats; swap refused
// while the pool exists; close frees live sequences with nothing leaked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "atlas/atlas.h"
#include "tests/api/api_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

struct Logits {
  std::vector<std::vector<float>> rows;
  static atlas_status Take(void *ctx, const float *l, size_t n) {
    static_cast<Logits *>(ctx)->rows.emplace_back(l, l + n);
    return ATLAS_OK;
  }
};

class SeqApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = atlas_test::Checkpoint("seq_api", "small", 41);
    atlas_open_options o;
    atlas_open_options_init(&o);
    o.backend = "host";
    o.max_seq = 96;
    ASSERT_OK(atlas_open(dir_.c_str(), &o, &model_));
    atlas_model_info info;
    info.struct_size = sizeof(info);
    ASSERT_OK(atlas_model_info_get(model_, &info));
    vocab_ = info.vocab_size;
  }
  void TearDown() override {
    atlas_close_report rep{};
    EXPECT_OK(atlas_close(model_, &rep));
    EXPECT_EQ(rep.leaked_allocations, 0u);
  }
  static std::vector<uint32_t> Prompt(uint32_t seed, size_t n) {
    std::vector<uint32_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = (seed * 13 + i * 29 + 1) % 256;
    return p;
  }
  // atlas_generate's greedy ids and each step's logits (the prompt's last
  // row first).
  std::vector<uint32_t> Generate(const std::vector<uint32_t> &p, size_t n,
                                 std::vector<std::vector<float>> *rows) {
    Logits l;
    atlas_generate_options o;
    atlas_generate_options_init(&o);
    o.max_new_tokens = n;
    o.ignore_eos = true;
    o.on_logits = Logits::Take;
    o.ctx = &l;
    std::vector<uint32_t> out(n);
    size_t count = 0;
    EXPECT_OK(
        atlas_generate(model_, p.data(), p.size(), &o, out.data(), &count));
    out.resize(count);
    rows->assign(l.rows.begin() + (long)p.size() - 1, l.rows.end());
    return out;
  }

  std::string dir_;
  atlas_model *model_ = nullptr;
  size_t vocab_ = 0;
};

TEST_F(SeqApiTest, DecodeMatchesGenerateForEverySequence) {
  const size_t lens[] = {2, 19, 50};
  const size_t steps = 6;
  std::vector<std::vector<uint32_t>> want(3);
  std::vector<std::vector<std::vector<float>>> want_logits(3);
  for (int i = 0; i < 3; ++i) {
    want[i] = Generate(Prompt(i, lens[i]), steps, &want_logits[i]);
  }
  atlas_seq *seqs[3];
  for (auto &s : seqs) ASSERT_OK(atlas_seq_create(model_, &s));
  std::vector<std::vector<uint32_t>> chunk(3);
  for (int i = 0; i < 3; ++i) chunk[i] = Prompt(i, lens[i]);
  for (size_t step = 0; step < steps; ++step) {
    std::vector<std::vector<float>> logits(3, std::vector<float>(vocab_));
    uint32_t ids[3];
    atlas_batch_entry e[3];
    for (int i = 0; i < 3; ++i) {
      e[i] = {seqs[i], chunk[i].data(), chunk[i].size(), logits[i].data(),
              &ids[i]};
    }
    ASSERT_OK(atlas_decode(model_, e, 3));
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(ids[i], want[i][step]) << "seq " << i << " step " << step;
      for (size_t v = 0; v < vocab_; ++v) {
        ASSERT_NEAR(logits[i][v], want_logits[i][step][v], 1e-5)
            << "seq " << i << " step " << step;
      }
      chunk[i] = {ids[i]};
    }
  }
  EXPECT_EQ(atlas_seq_length(seqs[2]), 50u + steps - 1);
  atlas_kv_stats st;
  st.struct_size = sizeof(st);
  ASSERT_OK(atlas_kv_stats_get(model_, &st));
  EXPECT_EQ(st.sequences, 3u);
  EXPECT_GT(st.blocks_used, 0u);
  EXPECT_EQ(st.blocks_used + st.blocks_cached + st.blocks_free,
            st.blocks_total);
  // The text report counts the pool's blocks, and its allocation is on the
  // ledger (site kv_pool.c).
  char *text = nullptr;
  ASSERT_OK(atlas_report(model_, ATLAS_REPORT_TEXT, nullptr, &text));
  std::string report = text;
  atlas_free(text);
  char line[128];
  snprintf(line, sizeof(line), "used %zu, cached %zu, free %zu; 3 sequences",
           st.blocks_used, st.blocks_cached, st.blocks_free);
  EXPECT_NE(report.find(line), std::string::npos) << report;
  EXPECT_NE(report.find("kv_pool.c"), std::string::npos) << report;
  // Closing the model with live sequences frees them (TearDown checks the
  // sweep found nothing).
}

TEST_F(SeqApiTest, ForkReuseAndSwapRefusal) {
  atlas_kv_options ko;
  atlas_kv_options_init(&ko);
  ko.block_tokens = 8;
  ASSERT_OK(atlas_kv_open(model_, &ko));
  EXPECT_STATUS(atlas_kv_open(model_, &ko), ATLAS_STATUS_FAILED_PRECONDITION,
                "already");
  std::vector<uint32_t> p = Prompt(7, 20);
  atlas_seq *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_OK(atlas_seq_create(model_, &a));
  std::vector<float> la(vocab_), lb(vocab_), lc(vocab_);
  atlas_batch_entry ea{a, p.data(), p.size(), la.data(), nullptr};
  ASSERT_OK(atlas_decode(model_, &ea, 1));
  ASSERT_OK(atlas_seq_fork(model_, a, &b));
  EXPECT_EQ(atlas_seq_length(b), 20u);
  // A new sequence with the same prompt reuses two full blocks of 8.
  ASSERT_OK(atlas_seq_create(model_, &c));
  size_t reused = 0;
  ASSERT_OK(atlas_seq_reuse_prefix(model_, c, p.data(), p.size(), &reused));
  EXPECT_EQ(reused, 16u);
  atlas_batch_entry ec{c, p.data() + reused, p.size() - reused, lc.data(),
                       nullptr};
  ASSERT_OK(atlas_decode(model_, &ec, 1));
  EXPECT_EQ(la, lc);
  // The fork and its parent go on separately.
  uint32_t ta = 5, tb = 6;
  atlas_batch_entry two[2] = {{a, &ta, 1, la.data(), nullptr},
                              {b, &tb, 1, lb.data(), nullptr}};
  ASSERT_OK(atlas_decode(model_, two, 2));
  EXPECT_NE(la, lb);
  atlas_swap_info info;
  atlas_model *m = model_;
  EXPECT_STATUS(atlas_swap(&m, dir_.c_str(), nullptr, &info),
                ATLAS_STATUS_FAILED_PRECONDITION, "KV pool");
  EXPECT_EQ(m, model_);
  atlas_seq_free(model_, a);
  atlas_seq_free(model_, b);
  atlas_seq_free(model_, c);
  ASSERT_OK(atlas_kv_close(model_));
  // Without the pool, swap works again.
  ASSERT_OK(atlas_swap(&m, dir_.c_str(), nullptr, &info));
  model_ = m;
}

TEST_F(SeqApiTest, PoolExhaustionIsAClearError) {
  atlas_kv_options ko;
  atlas_kv_options_init(&ko);
  ko.budget_bytes = 1;
  EXPECT_STATUS(atlas_kv_open(model_, &ko), ATLAS_STATUS_RESOURCE_EXHAUSTED,
                "KV budget");
}

}  // namespace
