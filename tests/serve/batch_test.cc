// The step API (runtime/serve/batch.h) and the paged KV pool on the host
// backend, f32:
// - batch invariance: sequences of very different lengths prefilled and
//   decoded together give the same logits (bit for bit on the host) and ids
//   as each run alone, and the one-sequence path's logits within 1e-5;
// - fork and copy on write; prefix-cache hits with identical logits;
// - pool exhaustion refused with nothing taken; no block leaked.
#include "atlas/runtime/serve/batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeCheckpoint("batch_small", "small", 31, ATLAS_DTYPE_F32);
    atlas_model_spec s{};
    s.dir = dir_.c_str();
    s.backend = "host";
    s.max_seq = 128;
    s.ignore_eos = true;
    ASSERT_OK(atlas_model_open(&s, &model_));
    vocab_ = (size_t)atlas_model_vocab_size(model_);
  }
  void TearDown() override {
    if (engine_ != nullptr) {
      atlas_kv_pool_stats st;
      atlas_kv_pool_stats_get(atlas_batch_engine_pool(engine_), &st);
      EXPECT_OK(atlas_batch_engine_destroy(engine_));
    }
    atlas_teardown_report rep{};
    EXPECT_OK(atlas_model_close(model_, &rep));
    EXPECT_EQ(rep.sweep.count, 0u) << (rep.sweep.sites ? rep.sweep.sites : "");
    atlas_sweep_result_free(&rep.sweep);
  }
  void MakeEngine(uint64_t budget = 0, bool prefix = true, uint32_t bt = 16) {
    atlas_batch_engine_options o{};
    o.kv_budget_bytes = budget;
    o.prefix_cache = prefix;
    o.block_tokens = bt;
    ASSERT_OK(atlas_batch_engine_create(model_, &o, &engine_));
  }
  static std::vector<uint32_t> Prompt(uint32_t seed, size_t n) {
    std::vector<uint32_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = (seed * 37 + i * 11 + 5) % 256;
    return p;
  }
  // Prompt, then `steps` greedy tokens, one sequence alone; the logits of
  // each step (steps + 1 rows: after the prompt and after each token fed).
  std::vector<std::vector<float>> Alone(const std::vector<uint32_t> &prompt,
                                        size_t steps,
                                        std::vector<uint32_t> *ids) {
    atlas_batch_seq *s = nullptr;
    EXPECT_OK(atlas_batch_seq_create(engine_, &s));
    std::vector<std::vector<float>> out;
    std::vector<uint32_t> chunk = prompt;
    for (size_t i = 0; i <= steps; ++i) {
      std::vector<float> logits(vocab_);
      uint32_t id = 0;
      atlas_batch_item it{s, chunk.data(), chunk.size(), logits.data(), &id};
      EXPECT_OK(atlas_batch_step(engine_, &it, 1));
      out.push_back(logits);
      ids->push_back(id);
      chunk = {id};
    }
    atlas_batch_seq_free(engine_, s);
    return out;
  }
  size_t Used() {
    atlas_kv_pool_stats st;
    atlas_kv_pool_stats_get(atlas_batch_engine_pool(engine_), &st);
    return st.used;
  }

  std::string dir_;
  atlas_model *model_ = nullptr;
  atlas_batch_engine *engine_ = nullptr;
  size_t vocab_ = 0;
};

struct LogitsSink {
  std::vector<std::vector<float>> rows;
  static atlas_status Take(void *ctx, const float *l, size_t n) {
    static_cast<LogitsSink *>(ctx)->rows.emplace_back(l, l + n);
    return ATLAS_OK;
  }
};

TEST_F(BatchTest, ManySequencesOfDifferentLengthsMatchEachAlone) {
  MakeEngine();
  const size_t lens[] = {1, 5, 37, 80};
  const size_t steps = 8;
  std::vector<std::vector<std::vector<float>>> want;
  std::vector<std::vector<uint32_t>> want_ids(4);
  for (int i = 0; i < 4; ++i) {
    want.push_back(Alone(Prompt(i, lens[i]), steps, &want_ids[i]));
  }
  // All four together: prompts in one step, then each token in one step.
  atlas_batch_seq *seqs[4];
  for (auto &s : seqs) ASSERT_OK(atlas_batch_seq_create(engine_, &s));
  std::vector<std::vector<uint32_t>> chunk(4);
  for (int i = 0; i < 4; ++i) chunk[i] = Prompt(i, lens[i]);
  for (size_t step = 0; step <= steps; ++step) {
    std::vector<std::vector<float>> logits(4, std::vector<float>(vocab_));
    uint32_t ids[4];
    atlas_batch_item items[4];
    for (int i = 0; i < 4; ++i) {
      items[i] = {seqs[i], chunk[i].data(), chunk[i].size(), logits[i].data(),
                  &ids[i]};
    }
    ASSERT_OK(atlas_batch_step(engine_, items, 4));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(ids[i], want_ids[i][step]) << "seq " << i << " step " << step;
      for (size_t v = 0; v < vocab_; ++v) {
        ASSERT_EQ(logits[i][v], want[i][step][v])
            << "seq " << i << " step " << step << " id " << v;
      }
      chunk[i] = {ids[i]};
    }
  }
  for (auto &s : seqs) {
    EXPECT_EQ(atlas_batch_seq_length(s) > 0, true);
    atlas_batch_seq_free(engine_, s);
  }
  EXPECT_EQ(Used(), 0u);
}

// The step path against the model's one-sequence path (prefill, then the
// one-token decode): the same ids, logits within 1e-5.
TEST_F(BatchTest, AgreesWithTheOneSequencePath) {
  MakeEngine();
  std::vector<uint32_t> prompt = Prompt(7, 23);
  const size_t steps = 10;
  std::vector<uint32_t> ids;
  std::vector<std::vector<float>> got = Alone(prompt, steps, &ids);
  LogitsSink sink;
  std::vector<uint32_t> ref(steps + 1);
  size_t count = 0;
  ASSERT_OK(atlas_model_generate(model_, prompt.data(), prompt.size(),
                                 steps + 1, ref.data(), &count,
                                 LogitsSink::Take, &sink));
  ASSERT_EQ(count, steps + 1);
  for (size_t i = 0; i <= steps; ++i) EXPECT_EQ(ids[i], ref[i]) << i;
  // The sink saw every prompt row, then each generated token's row.
  ASSERT_EQ(sink.rows.size(), prompt.size() + steps);
  for (size_t i = 0; i <= steps; ++i) {
    const std::vector<float> &r = sink.rows[prompt.size() - 1 + i];
    for (size_t v = 0; v < vocab_; ++v) {
      ASSERT_NEAR(got[i][v], r[v], 1e-5) << "step " << i << " id " << v;
    }
  }
}

TEST_F(BatchTest, ForkSharesBlocksAndCopiesOnWrite) {
  MakeEngine();
  std::vector<uint32_t> prompt = Prompt(3, 20);  // one full block + 4
  atlas_batch_seq *a = nullptr, *b = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &a));
  atlas_batch_item it{a, prompt.data(), prompt.size(), nullptr, nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &it, 1));
  size_t before = Used();
  ASSERT_OK(atlas_batch_seq_fork(engine_, a, &b));
  EXPECT_EQ(Used(), before);  // shared, not copied
  EXPECT_EQ(atlas_batch_seq_length(b), 20u);
  uint32_t xa = 9, xb = 200;
  std::vector<float> la(vocab_), lb(vocab_);
  atlas_batch_item items[2] = {{a, &xa, 1, la.data(), nullptr},
                               {b, &xb, 1, lb.data(), nullptr}};
  ASSERT_OK(atlas_batch_step(engine_, items, 2));
  EXPECT_EQ(Used(), before + 1);  // the shared partial block, copied once
  // Each equals a fresh sequence fed prompt + its token.
  for (int k = 0; k < 2; ++k) {
    std::vector<uint32_t> p = prompt;
    p.push_back(k == 0 ? xa : xb);
    atlas_batch_seq *f = nullptr;
    ASSERT_OK(atlas_batch_seq_create(engine_, &f));
    std::vector<float> lf(vocab_);
    atlas_batch_item fi{f, p.data(), p.size(), lf.data(), nullptr};
    ASSERT_OK(atlas_batch_step(engine_, &fi, 1));
    EXPECT_EQ(lf, k == 0 ? la : lb) << "fork " << k;
    atlas_batch_seq_free(engine_, f);
  }
  // Freeing the parent while the child runs on.
  atlas_batch_seq_free(engine_, a);
  uint32_t next = 1;
  atlas_batch_item ci{b, &next, 1, lb.data(), nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &ci, 1));
  atlas_batch_seq_free(engine_, b);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(BatchTest, PrefixCacheHitsGiveIdenticalLogits) {
  MakeEngine();
  std::vector<uint32_t> prompt = Prompt(5, 45);  // two full blocks + 13
  atlas_batch_seq *a = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &a));
  std::vector<float> la(vocab_);
  atlas_batch_item it{a, prompt.data(), prompt.size(), la.data(), nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &it, 1));
  atlas_batch_seq_free(engine_, a);
  atlas_kv_pool_stats st;
  atlas_kv_pool_stats_get(atlas_batch_engine_pool(engine_), &st);
  EXPECT_EQ(st.cached, 2u);  // the two full blocks stay, reusable
  EXPECT_EQ(st.used, 0u);

  atlas_batch_seq *b = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &b));
  size_t reused = 0;
  ASSERT_OK(atlas_batch_seq_reuse_prefix(engine_, b, prompt.data(),
                                         prompt.size(), &reused));
  EXPECT_EQ(reused, 32u);
  std::vector<float> lb(vocab_);
  atlas_batch_item rest{b, prompt.data() + reused, prompt.size() - reused,
                        lb.data(), nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &rest, 1));
  EXPECT_EQ(la, lb);
  atlas_kv_pool_stats_get(atlas_batch_engine_pool(engine_), &st);
  EXPECT_EQ(st.hits, 2u);

  // A prompt that differs in its second block reuses only the first.
  std::vector<uint32_t> other = prompt;
  other[20] = (other[20] + 1) % 256;
  atlas_batch_seq *c = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &c));
  ASSERT_OK(atlas_batch_seq_reuse_prefix(engine_, c, other.data(), other.size(),
                                         &reused));
  EXPECT_EQ(reused, 16u);
  atlas_batch_seq_free(engine_, b);
  atlas_batch_seq_free(engine_, c);
  // Without prefix caching nothing is reused.
  ASSERT_OK(atlas_batch_engine_destroy(engine_));
  engine_ = nullptr;
  MakeEngine(0, false);
  atlas_batch_seq *d = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &d));
  atlas_batch_item di{d, prompt.data(), prompt.size(), nullptr, nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &di, 1));
  atlas_batch_seq_free(engine_, d);
  ASSERT_OK(atlas_batch_seq_create(engine_, &d));
  ASSERT_OK(atlas_batch_seq_reuse_prefix(engine_, d, prompt.data(),
                                         prompt.size(), &reused));
  EXPECT_EQ(reused, 0u);
  atlas_batch_seq_free(engine_, d);
}

TEST_F(BatchTest, PoolExhaustionIsRefusedWithNothingTaken) {
  // Room for one sequence of max_seq (128) positions: 8 blocks of 16.
  atlas_arch_kv_shape shape;
  atlas_model_arch(model_)->kv_shape(atlas_model_impl(model_), &shape);
  uint64_t block = 2ull * shape.layers * 16 * shape.kv_dim * 4;
  MakeEngine(block * 8, false);
  atlas_kv_pool_stats st;
  atlas_kv_pool_stats_get(atlas_batch_engine_pool(engine_), &st);
  ASSERT_EQ(st.total, 8u);
  std::vector<uint32_t> p = Prompt(1, 100);  // 7 blocks
  atlas_batch_seq *a = nullptr, *b = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &a));
  ASSERT_OK(atlas_batch_seq_create(engine_, &b));
  atlas_batch_item ia{a, p.data(), p.size(), nullptr, nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &ia, 1));
  EXPECT_EQ(Used(), 7u);
  // b needs 2 blocks for 20 tokens; 1 is free: refused, nothing taken.
  std::vector<uint32_t> q = Prompt(2, 20);
  uint32_t tok = 3;
  atlas_batch_item both[2] = {{a, &tok, 1, nullptr, nullptr},
                              {b, q.data(), q.size(), nullptr, nullptr}};
  EXPECT_STATUS(atlas_batch_step(engine_, both, 2),
                ATLAS_STATUS_RESOURCE_EXHAUSTED, "blocks");
  EXPECT_EQ(Used(), 7u);
  EXPECT_EQ(atlas_batch_seq_length(a), 100u);
  EXPECT_EQ(atlas_batch_seq_length(b), 0u);
  // Freeing a makes room.
  atlas_batch_seq_free(engine_, a);
  atlas_batch_item ib{b, q.data(), q.size(), nullptr, nullptr};
  ASSERT_OK(atlas_batch_step(engine_, &ib, 1));
  atlas_batch_seq_free(engine_, b);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(BatchTest, BadStepsAreRefused) {
  MakeEngine();
  atlas_batch_seq *a = nullptr;
  ASSERT_OK(atlas_batch_seq_create(engine_, &a));
  uint32_t bad = 999;
  atlas_batch_item it{a, &bad, 1, nullptr, nullptr};
  EXPECT_STATUS(atlas_batch_step(engine_, &it, 1),
                ATLAS_STATUS_INVALID_ARGUMENT, "vocabulary");
  std::vector<uint32_t> longp = Prompt(1, 129);
  atlas_batch_item il{a, longp.data(), longp.size(), nullptr, nullptr};
  EXPECT_STATUS(atlas_batch_step(engine_, &il, 1),
                ATLAS_STATUS_INVALID_ARGUMENT, "at most 128");
  il.count = 100;
  ASSERT_OK(atlas_batch_step(engine_, &il, 1));
  il.tokens += 100;
  il.count = 29;
  EXPECT_STATUS(atlas_batch_step(engine_, &il, 1),
                ATLAS_STATUS_INVALID_ARGUMENT, "positions");
  EXPECT_EQ(atlas_batch_seq_length(a), 100u);
  atlas_batch_seq_free(engine_, a);
  ASSERT_OK(atlas_batch_seq_create(engine_, &a));
  uint32_t t = 1;
  atlas_batch_item twice[2] = {{a, &t, 1, nullptr, nullptr},
                               {a, &t, 1, nullptr, nullptr}};
  EXPECT_STATUS(atlas_batch_step(engine_, twice, 2),
                ATLAS_STATUS_INVALID_ARGUMENT, "same sequence");
  EXPECT_EQ(Used(), 0u);
  atlas_batch_seq_free(engine_, a);
}

// A fault at every device operation of a batched step: the step fails with
// a status, no length changes, and the sequences can be freed with nothing
// leaked (checked at teardown).
TEST_F(BatchTest, FaultAtEveryOperationOfAStep) {
  MakeEngine();
  atlas_backend *be = atlas_model_backend(model_);
  const atlas_fault_kind kinds[] = {ATLAS_FAULT_ALLOC, ATLAS_FAULT_COPY,
                                    ATLAS_FAULT_LAUNCH};
  for (atlas_fault_kind kind : kinds) {
    // Count the kind's operations in one mixed step (prefill + decode).
    auto run = [&](uint64_t fault_at, bool *failed) {
      atlas_batch_seq *a = nullptr, *b = nullptr;
      EXPECT_OK(atlas_batch_seq_create(engine_, &a));
      EXPECT_OK(atlas_batch_seq_create(engine_, &b));
      std::vector<uint32_t> p = Prompt(4, 30);
      atlas_batch_item ia{a, p.data(), p.size(), nullptr, nullptr};
      EXPECT_OK(atlas_batch_step(engine_, &ia, 1));
      uint64_t start = atlas_backend_op_count(be, kind);
      if (fault_at > 0) atlas_backend_inject_fault(be, kind, fault_at);
      uint32_t t = 7, id = 0;
      std::vector<float> logits(vocab_);
      atlas_batch_item both[2] = {{a, &t, 1, logits.data(), &id},
                                  {b, p.data(), 17, nullptr, &id}};
      atlas_status s = atlas_batch_step(engine_, both, 2);
      *failed = s != ATLAS_OK;
      if (s != ATLAS_OK) {
        EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_ABORTED)
            << atlas_status_message(s);
        EXPECT_EQ(atlas_batch_seq_length(a), 30u);
        EXPECT_EQ(atlas_batch_seq_length(b), 0u);
      }
      atlas_status_free(s);
      atlas_backend_inject_fault(be, kind, 0);
      uint64_t used = atlas_backend_op_count(be, kind) - start;
      atlas_batch_seq_free(engine_, a);
      atlas_batch_seq_free(engine_, b);
      EXPECT_EQ(Used(), 0u);
      return used;
    };
    bool failed = false;
    uint64_t n = run(0, &failed);
    EXPECT_FALSE(failed);
    if (kind == ATLAS_FAULT_LAUNCH) EXPECT_GT(n, 10u);
    for (uint64_t k = 1; k <= n; ++k) {
      run(k, &failed);
      EXPECT_TRUE(failed) << atlas_fault_kind_name(kind) << " " << k;
    }
  }
}

// A fault at every device allocation of a fresh model's first batch work:
// the pool, then the step's scratch (made at the first step). Each fails
// with a status naming what it made; the model closes with nothing leaked.
TEST_F(BatchTest, FaultAtEveryAllocationOfTheFirstStep) {
  atlas_model_spec spec{};
  spec.dir = dir_.c_str();
  spec.backend = "host";
  spec.max_seq = 64;
  auto attempt = [&](uint64_t fault_at, uint64_t *allocs) {
    atlas_model *m = nullptr;
    EXPECT_OK(atlas_model_open(&spec, &m));
    atlas_backend *be = atlas_model_backend(m);
    uint64_t start = atlas_backend_op_count(be, ATLAS_FAULT_ALLOC);
    if (fault_at > 0)
      atlas_backend_inject_fault(be, ATLAS_FAULT_ALLOC, fault_at);
    atlas_batch_engine_options o{};
    o.prefix_cache = true;
    atlas_batch_engine *e = nullptr;
    atlas_status s = atlas_batch_engine_create(m, &o, &e);
    atlas_batch_seq *q = nullptr;
    if (s == ATLAS_OK) s = atlas_batch_seq_create(e, &q);
    std::vector<uint32_t> p = Prompt(2, 20);
    uint32_t id = 0;
    if (s == ATLAS_OK) {
      atlas_batch_item it{q, p.data(), p.size(), nullptr, &id};
      s = atlas_batch_step(e, &it, 1);
      if (s != ATLAS_OK) EXPECT_EQ(atlas_batch_seq_length(q), 0u);
    }
    bool failed = s != ATLAS_OK;
    if (failed) {
      EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_ABORTED)
          << atlas_status_message(s);
    }
    atlas_status_free(s);
    atlas_backend_inject_fault(be, ATLAS_FAULT_ALLOC, 0);
    *allocs = atlas_backend_op_count(be, ATLAS_FAULT_ALLOC) - start;
    if (e != nullptr) {
      atlas_batch_seq_free(e, q);
      EXPECT_OK(atlas_batch_engine_destroy(e));
    }
    atlas_teardown_report rep{};
    EXPECT_OK(atlas_model_close(m, &rep));
    EXPECT_EQ(rep.sweep.count, 0u) << (rep.sweep.sites ? rep.sweep.sites : "");
    atlas_sweep_result_free(&rep.sweep);
    return failed;
  };
  uint64_t n = 0;
  EXPECT_FALSE(attempt(0, &n));
  EXPECT_GE(n, 7u);  // the pool, and the step scratch's pieces
  for (uint64_t k = 1; k <= n; ++k) {
    uint64_t used = 0;
    EXPECT_TRUE(attempt(k, &used)) << "allocation " << k;
  }
}

}  // namespace
