// The paged batch step of a split model (runtime/serve/batch.h over
// runtime/arch/tensor_parallel): at N = 2 and 4 on host backends, a batch of
// sequences of different lengths, prompt chunks then generated tokens,
// gives the ids of N = 1 and logits within 1e-5 relative L2; a fork
// shares its parent's blocks on every device and continues as a fresh
// sequence would; a fault at a collective fails the step on every rank,
// leaves each sequence whole and the unload finding nothing on any device.
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/batch.h"
#include "atlas/runtime/serve/scheduler.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

const char *const kDirs[] = {"tests/arch/data/llama_bias_f32",
                             "tests/arch/data/qwen3_f32",
                             "tests/arch/data/mistral_f32"};

atlas_model_spec Spec(const char *dir, int ranks) {
  atlas_model_spec s{};
  s.dir = dir;
  s.backend = "host";
  s.max_seq = 48;
  s.ignore_eos = true;
  s.tensor_parallel = ranks;
  return s;
}

// Three prompts of different lengths (ids below 128, inside every tiny
// vocabulary).
const std::vector<std::vector<uint32_t>> kPrompts = {
    {103, 65, 123, 46, 120, 40, 20, 60, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25},
    {5, 77},
    {90, 12, 33, 44, 55}};

struct Served {
  std::vector<std::vector<uint32_t>> ids;  // per sequence
  std::vector<std::vector<float>> logits;  // per sequence, every step's
};

double RelL2(const std::vector<float> &a, const std::vector<float> &b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double)(a[i] - b[i]) * (a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

// The prompts through the step (the first two in one step, the third in
// chunks of 2 beside them), then `gen` generated tokens a step for all.
Served Serve(atlas_model *m, size_t gen) {
  Served run;
  atlas_batch_engine_options o{};
  o.block_tokens = 4;
  atlas_batch_engine *e = nullptr;
  EXPECT_OK(atlas_batch_engine_create(m, &o, &e));
  if (e == nullptr) return run;
  size_t vocab = (size_t)atlas_model_vocab_size(m);
  size_t n = kPrompts.size();
  std::vector<atlas_batch_seq *> seqs(n);
  for (auto &s : seqs) EXPECT_OK(atlas_batch_seq_create(e, &s));
  run.ids.resize(n);
  run.logits.resize(n);
  std::vector<size_t> fed(n, 0);
  std::vector<uint32_t> next(n);
  std::vector<float> logits(n * vocab);
  // Prompts: sequence 2 in chunks of 2, the others whole.
  for (bool more = true; more;) {
    std::vector<atlas_batch_item> items;
    std::vector<size_t> who;
    for (size_t i = 0; i < n; ++i) {
      size_t left = kPrompts[i].size() - fed[i];
      if (left == 0) continue;
      size_t count = i == 2 && left > 2 ? 2 : left;
      atlas_batch_item it{};
      it.seq = seqs[i];
      it.tokens = kPrompts[i].data() + fed[i];
      it.count = count;
      it.out_logits = logits.data() + i * vocab;
      it.out_id = &next[i];
      items.push_back(it);
      who.push_back(i);
      fed[i] += count;
    }
    more = !items.empty();
    if (!more) break;
    EXPECT_OK(atlas_batch_step(e, items.data(), items.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    run.ids[i].push_back(next[i]);
    run.logits[i].insert(run.logits[i].end(), logits.begin() + i * vocab,
                         logits.begin() + (i + 1) * vocab);
  }
  for (size_t g = 1; g < gen; ++g) {
    std::vector<atlas_batch_item> items(n);
    std::vector<uint32_t> tok(next);
    for (size_t i = 0; i < n; ++i) {
      items[i] = atlas_batch_item{seqs[i], &tok[i], 1,
                                  logits.data() + i * vocab, &next[i]};
    }
    EXPECT_OK(atlas_batch_step(e, items.data(), n));
    for (size_t i = 0; i < n; ++i) {
      run.ids[i].push_back(next[i]);
      run.logits[i].insert(run.logits[i].end(), logits.begin() + i * vocab,
                           logits.begin() + (i + 1) * vocab);
    }
  }
  atlas_batch_seq_free_all(e);
  EXPECT_OK(atlas_batch_engine_destroy(e));
  return run;
}

void CloseClean(atlas_model *m) {
  atlas_teardown_report r;
  EXPECT_OK(atlas_model_close(m, &r));
  EXPECT_EQ(r.sweep.count, 0u);
  EXPECT_EQ(r.failed, 0u);
  atlas_sweep_result_free(&r.sweep);
}

Served ServeOf(const char *dir, int ranks, size_t gen) {
  atlas_model_spec s = Spec(dir, ranks);
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&s, &m));
  if (m == nullptr) return {};
  Served r = Serve(m, gen);
  CloseClean(m);
  return r;
}

TEST(TensorParallelBatch, SplitStepMatchesOneDevice) {
  for (const char *dir : kDirs) {
    Served one = ServeOf(dir, 1, 6);
    ASSERT_EQ(one.ids.size(), kPrompts.size()) << dir;
    for (int ranks : {2, 4}) {
      Served split = ServeOf(dir, ranks, 6);
      ASSERT_EQ(split.ids.size(), kPrompts.size()) << dir << " N=" << ranks;
      for (size_t i = 0; i < kPrompts.size(); ++i) {
        EXPECT_EQ(split.ids[i], one.ids[i])
            << dir << " N=" << ranks << " sequence " << i;
        ASSERT_EQ(split.logits[i].size(), one.logits[i].size());
        EXPECT_LT(RelL2(split.logits[i], one.logits[i]), 1e-5)
            << dir << " N=" << ranks << " sequence " << i;
      }
    }
  }
}

// A fork mid-block shares its parent's blocks on every device; both then
// take different tokens (the shared last block copied on each device) and
// each gives what the same tokens give one device.
std::vector<uint32_t> ForkIds(int ranks) {
  atlas_model_spec s = Spec(kDirs[0], ranks);
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&s, &m));
  if (m == nullptr) return {};
  atlas_batch_engine_options o{};
  o.block_tokens = 4;
  atlas_batch_engine *e = nullptr;
  EXPECT_OK(atlas_batch_engine_create(m, &o, &e));
  std::vector<uint32_t> out;
  if (e != nullptr) {
    atlas_batch_seq *a = nullptr, *b = nullptr;
    EXPECT_OK(atlas_batch_seq_create(e, &a));
    const std::vector<uint32_t> &p = kPrompts[0];
    uint32_t id = 0;
    atlas_batch_item it{a, p.data(), 6, nullptr, &id};
    EXPECT_OK(atlas_batch_step(e, &it, 1));
    EXPECT_OK(atlas_batch_seq_fork(e, a, &b));
    EXPECT_EQ(atlas_batch_seq_blocks(b), atlas_batch_seq_blocks(a));
    uint32_t ta[] = {1, 2, 3}, tb[] = {4, 5, 6};
    uint32_t ia = 0, ib = 0;
    for (int step = 0; step < 3; ++step) {
      atlas_batch_item items[2] = {{a, &ta[step], 1, nullptr, &ia},
                                   {b, &tb[step], 1, nullptr, &ib}};
      EXPECT_OK(atlas_batch_step(e, items, 2));
      out.push_back(ia);
      out.push_back(ib);
    }
    atlas_batch_seq_free(e, a);
    atlas_batch_seq_free(e, b);
    EXPECT_OK(atlas_batch_engine_destroy(e));
  }
  CloseClean(m);
  return out;
}

TEST(TensorParallelBatch, ForkCopiesTheSharedBlockOnEveryDevice) {
  std::vector<uint32_t> one = ForkIds(1);
  ASSERT_EQ(one.size(), 6u);
  // The two branches took different tokens: their ids tell them apart
  // somewhere (else the copy could be missed unseen).
  EXPECT_NE(std::vector<uint32_t>({one[0], one[2], one[4]}),
            std::vector<uint32_t>({one[1], one[3], one[5]}));
  EXPECT_EQ(ForkIds(2), one);
  EXPECT_EQ(ForkIds(4), one);
}

// A collective faulted on one rank during a batched step, each of the
// step's collectives in turn: the step fails on every rank naming the
// fault, no sequence grows, the model refuses further steps, each sequence
// is freed, and closing finds nothing on any device. Past the step's last
// collective the step succeeds (the sweep's end).
bool FaultedStep(int ranks, uint64_t at) {
  atlas_model_spec s = Spec(kDirs[0], ranks);
  s.fault_rank = ranks - 1;
  s.fault_kind = ATLAS_FAULT_COLLECTIVE;
  s.fault_at = at;
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&s, &m));
  if (m == nullptr) return false;
  atlas_batch_engine_options o{};
  o.block_tokens = 4;
  atlas_batch_engine *e = nullptr;
  EXPECT_OK(atlas_batch_engine_create(m, &o, &e));
  bool failed = false;
  if (e != nullptr) {
    atlas_batch_seq *a = nullptr, *b = nullptr;
    EXPECT_OK(atlas_batch_seq_create(e, &a));
    EXPECT_OK(atlas_batch_seq_create(e, &b));
    uint32_t ia = 0, ib = 0;
    atlas_batch_item items[2] = {
        {a, kPrompts[0].data(), kPrompts[0].size(), nullptr, &ia},
        {b, kPrompts[2].data(), kPrompts[2].size(), nullptr, &ib}};
    atlas_status st = atlas_batch_step(e, items, 2);
    failed = st != ATLAS_OK;
    if (failed) {
      std::string msg = atlas_status_message(st);
      EXPECT_NE(msg.find("injected fault"), std::string::npos) << msg;
      EXPECT_NE(msg.find("rank " + std::to_string(ranks - 1)),
                std::string::npos)
          << msg;
      EXPECT_EQ(atlas_batch_seq_length(a), 0u);
      EXPECT_EQ(atlas_batch_seq_length(b), 0u);
      atlas_status again = atlas_batch_step(e, items, 2);
      EXPECT_EQ(atlas_status_code_of(again), ATLAS_STATUS_FAILED_PRECONDITION);
      atlas_status_free(again);
    } else {
      EXPECT_EQ(atlas_batch_seq_length(a), kPrompts[0].size());
    }
    atlas_status_free(st);
    atlas_batch_seq_free(e, a);
    atlas_batch_seq_free(e, b);
    EXPECT_OK(atlas_batch_engine_destroy(e));
  }
  CloseClean(m);
  return failed;
}

TEST(TensorParallelBatch, CollectiveFaultFailsTheStepCleanly) {
  for (int ranks : {2, 4}) {
    uint64_t at = 1;
    while (at < 100 && FaultedStep(ranks, at)) ++at;
    // The embedding's sum and two a layer: every one was reached.
    EXPECT_GE(at, 4u) << "N=" << ranks;
    EXPECT_LT(at, 100u) << "N=" << ranks;
  }
}

// The scheduler over a split model: each request's greedy tokens are the
// model's own loop's; with a collective faulted on the last rank at each of
// the first run's collectives in turn, every request ends exactly once
// (its tokens, or ERROR with a status), no sequence or block stays, and
// closing finds nothing on any device.
struct Result {
  std::mutex mu;
  std::vector<uint32_t> tokens;
  int finals = 0;
  atlas_sched_finish finish = ATLAS_SCHED_ERROR;
  std::string error;
};

void OnEvent(void *ctx, const atlas_sched_event *e) {
  auto *r = static_cast<Result *>(ctx);
  std::lock_guard<std::mutex> lock(r->mu);
  if (e->has_token) r->tokens.push_back(e->token);
  if (e->finished) {
    r->finals++;
    r->finish = e->finish;
    if (e->status != ATLAS_OK) r->error = atlas_status_message(e->status);
  }
}

// Three requests through a scheduler on a split model (faulted as the
// spec says); returns the collectives the last rank ran.
uint64_t Schedule(const atlas_model_spec &spec, std::vector<Result> *res) {
  atlas_model *m = nullptr;
  EXPECT_OK(atlas_model_open(&spec, &m));
  if (m == nullptr) return 0;
  atlas_backend *last = atlas_model_rank_backend(m, spec.tensor_parallel - 1);
  uint64_t start = atlas_backend_op_count(last, ATLAS_FAULT_COLLECTIVE);
  atlas_scheduler *sched = nullptr;
  EXPECT_OK(atlas_scheduler_create(m, nullptr, &sched));
  for (size_t i = 0; sched != nullptr && i < res->size(); ++i) {
    atlas_request_options o;
    atlas_request_options_init(&o);
    o.max_tokens = 4;
    o.ignore_eos = true;
    o.on_event = OnEvent;
    o.ctx = &(*res)[i];
    uint64_t id = 0;
    EXPECT_OK(atlas_scheduler_submit(sched, kPrompts[i].data(),
                                     kPrompts[i].size(), &o, &id));
  }
  for (int k = 0; sched != nullptr && k < 1000; ++k) {
    bool worked = false;
    atlas_status_free(atlas_scheduler_step(sched, &worked));
    if (!worked) break;
  }
  if (sched != nullptr) {
    atlas_scheduler_stats st;
    atlas_scheduler_stats_get(sched, &st);
    EXPECT_EQ(st.running, 0u);
    EXPECT_EQ(st.waiting, 0u);
    EXPECT_EQ(st.kv_blocks_used, 0u);
    EXPECT_OK(atlas_scheduler_destroy(sched));
  }
  uint64_t ops = atlas_backend_op_count(last, ATLAS_FAULT_COLLECTIVE) - start;
  CloseClean(m);
  return ops;
}

TEST(TensorParallelBatch, SchedulerFaultEndsEveryRequestOnce) {
  for (int ranks : {2, 4}) {
    atlas_model_spec s = Spec(kDirs[0], ranks);
    std::vector<Result> clean(kPrompts.size());
    uint64_t n = Schedule(s, &clean);
    ASSERT_GT(n, 0u);
    for (size_t i = 0; i < clean.size(); ++i) {
      EXPECT_EQ(clean[i].finals, 1);
      EXPECT_EQ(clean[i].finish, ATLAS_SCHED_LENGTH) << clean[i].error;
      // The model's own loop on one device.
      atlas_model_spec one = Spec(kDirs[0], 1);
      atlas_model *m = nullptr;
      ASSERT_OK(atlas_model_open(&one, &m));
      std::vector<uint32_t> want(4);
      size_t count = 0;
      EXPECT_OK(atlas_model_generate(m, kPrompts[i].data(), kPrompts[i].size(),
                                     4, want.data(), &count, nullptr, nullptr));
      CloseClean(m);
      EXPECT_EQ(clean[i].tokens, want) << "N=" << ranks << " request " << i;
    }
    s.fault_rank = ranks - 1;
    s.fault_kind = ATLAS_FAULT_COLLECTIVE;
    for (uint64_t at = 1; at <= n; at += 2) {
      s.fault_at = at;
      std::vector<Result> res(kPrompts.size());
      Schedule(s, &res);
      int errors = 0;
      for (auto &r : res) {
        EXPECT_EQ(r.finals, 1) << "N=" << ranks << " at " << at;
        if (r.finish == ATLAS_SCHED_ERROR) {
          ++errors;
          EXPECT_FALSE(r.error.empty());
        } else {
          EXPECT_EQ(r.finish, ATLAS_SCHED_LENGTH);
        }
      }
      EXPECT_GT(errors, 0) << "N=" << ranks << " at " << at;
    }
  }
}

TEST(TensorParallelBatch, EveryDeviceHoldsAPool) {
  atlas_model_spec s = Spec(kDirs[0], 2);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&s, &m));
  uint64_t before[2] = {
      atlas_backend_live_bytes(atlas_model_rank_backend(m, 0)),
      atlas_backend_live_bytes(atlas_model_rank_backend(m, 1))};
  atlas_batch_engine_options o{};
  atlas_batch_engine *e = nullptr;
  ASSERT_OK(atlas_batch_engine_create(m, &o, &e));
  for (int r = 0; r < 2; ++r) {
    EXPECT_GT(atlas_backend_live_bytes(atlas_model_rank_backend(m, r)),
              before[r])
        << "device " << r;
  }
  EXPECT_OK(atlas_batch_engine_destroy(e));
  CloseClean(m);
}

}  // namespace
