// The scheduler (runtime/serve/scheduler.h) on the host backend: every
// request's greedy tokens equal the one-sequence run of the same prompt
// whatever else is queued or running; cancellation before and during
// generation; refusals at submit; destroy with requests left; many
// submitting threads and one driving thread (run under TSan in CI).
#include "atlas/runtime/serve/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

struct Result {
  std::mutex mu;
  std::vector<uint32_t> tokens;
  std::vector<float> logprobs;
  int finals = 0;
  atlas_sched_finish finish = ATLAS_SCHED_ERROR;
  std::string error;
  size_t prompt_tokens = 0, completion_tokens = 0;
  // Cancel from inside the callback after this many tokens (0: never).
  size_t cancel_after = 0;
  atlas_scheduler *sched = nullptr;
  uint64_t id = 0;
};

void OnEvent(void *ctx, const atlas_sched_event *e) {
  auto *r = static_cast<Result *>(ctx);
  std::lock_guard<std::mutex> lock(r->mu);
  EXPECT_EQ(r->finals, 0) << "an event after the final one";
  if (e->has_token) {
    r->tokens.push_back(e->token);
    r->logprobs.push_back(e->logprob);
  }
  r->prompt_tokens = e->prompt_tokens;
  r->completion_tokens = e->completion_tokens;
  if (e->finished) {
    r->finals++;
    r->finish = e->finish;
    if (e->status != ATLAS_OK) r->error = atlas_status_message(e->status);
  } else if (r->cancel_after > 0 && r->tokens.size() == r->cancel_after) {
    EXPECT_OK(atlas_scheduler_cancel(r->sched, e->request_id));
  }
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeCheckpoint("sched_small", "small", 21, ATLAS_DTYPE_F32);
    atlas_model_spec s{};
    s.dir = dir_.c_str();
    s.backend = "host";
    s.max_seq = 64;
    s.ignore_eos = true;
    ASSERT_OK(atlas_model_open(&s, &model_));
  }
  void TearDown() override {
    if (sched_ != nullptr) EXPECT_OK(atlas_scheduler_destroy(sched_));
    atlas_teardown_report rep{};
    EXPECT_OK(atlas_model_close(model_, &rep));
    EXPECT_EQ(rep.sweep.count, 0u) << (rep.sweep.sites ? rep.sweep.sites : "");
    atlas_sweep_result_free(&rep.sweep);
  }
  void MakeScheduler(const atlas_scheduler_options *o = nullptr) {
    ASSERT_OK(atlas_scheduler_create(model_, o, &sched_));
  }
  // The one-sequence run (the model's own loop).
  std::vector<uint32_t> Alone(const std::vector<uint32_t> &prompt, size_t n) {
    std::vector<uint32_t> out(n);
    size_t count = 0;
    EXPECT_OK(atlas_model_generate(model_, prompt.data(), prompt.size(), n,
                                   out.data(), &count, nullptr, nullptr));
    out.resize(count);
    return out;
  }
  uint64_t Submit(const std::vector<uint32_t> &prompt, size_t max_tokens,
                  Result *r) {
    atlas_request_options o;
    atlas_request_options_init(&o);
    o.max_tokens = max_tokens;
    o.ignore_eos = true;
    o.on_event = OnEvent;
    o.ctx = r;
    r->sched = sched_;
    uint64_t id = 0;
    EXPECT_OK(
        atlas_scheduler_submit(sched_, prompt.data(), prompt.size(), &o, &id));
    r->id = id;
    return id;
  }
  void Drain() {
    for (int i = 0; i < 100000; ++i) {
      bool worked = false;
      ASSERT_OK(atlas_scheduler_step(sched_, &worked));
      if (!worked) return;
    }
    FAIL() << "the scheduler never ran out of work";
  }
  // n choices of 6 greedy tokens on `prompt` (n = res->size()), the listed
  // ones cancelled while queued, run to the end.
  void SubmitAndCancel(const std::vector<uint32_t> &prompt,
                       std::vector<Result> *res,
                       std::initializer_list<size_t> cancel);
  static std::vector<uint32_t> Prompt(uint32_t seed, size_t n) {
    std::vector<uint32_t> p(n);
    for (size_t i = 0; i < n; ++i) p[i] = (seed * 31 + i * 7) % 256;
    return p;
  }

  std::string dir_;
  atlas_model *model_ = nullptr;
  atlas_scheduler *sched_ = nullptr;
};

TEST_F(SchedulerTest, GreedyTokensEqualTheOneSequenceRun) {
  const size_t lens[] = {1, 3, 17, 40};
  const size_t outs[] = {9, 20, 5, 12};
  std::vector<std::vector<uint32_t>> want;
  for (int i = 0; i < 4; ++i)
    want.push_back(Alone(Prompt(i, lens[i]), outs[i]));
  MakeScheduler();
  Result res[4];
  for (int i = 0; i < 4; ++i) Submit(Prompt(i, lens[i]), outs[i], &res[i]);
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.waiting, 4u);
  Drain();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(res[i].finals, 1);
    EXPECT_EQ(res[i].finish, ATLAS_SCHED_LENGTH) << res[i].error;
    EXPECT_EQ(res[i].tokens, want[i]) << "request " << i;
    EXPECT_EQ(res[i].prompt_tokens, lens[i]);
    EXPECT_EQ(res[i].completion_tokens, outs[i]);
  }
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.waiting, 0u);
  EXPECT_EQ(st.running, 0u);
  EXPECT_EQ(st.tokens, 9u + 20 + 5 + 12);
}

TEST_F(SchedulerTest, LogprobsAreLogSoftmaxOfTheChosenToken) {
  MakeScheduler();
  Result r;
  atlas_request_options o;
  atlas_request_options_init(&o);
  o.max_tokens = 4;
  o.ignore_eos = true;
  o.logprobs = true;
  o.on_event = OnEvent;
  o.ctx = &r;
  std::vector<uint32_t> p = Prompt(5, 6);
  ASSERT_OK(atlas_scheduler_submit(sched_, p.data(), p.size(), &o, nullptr));
  Drain();
  ASSERT_EQ(r.tokens.size(), 4u);
  EXPECT_EQ(r.tokens, Alone(p, 4));
  for (float lp : r.logprobs) {
    EXPECT_LE(lp, 0.0f);
    EXPECT_GT(lp, -30.0f);
  }
}

TEST_F(SchedulerTest, CancelBeforeAndDuringGeneration) {
  MakeScheduler();
  Result before, during, after;
  uint64_t a = Submit(Prompt(1, 5), 10, &before);
  during.cancel_after = 3;
  Submit(Prompt(2, 5), 10, &during);
  Submit(Prompt(3, 5), 4, &after);
  ASSERT_OK(atlas_scheduler_cancel(sched_, a));
  Drain();
  EXPECT_EQ(before.finals, 1);
  EXPECT_EQ(before.finish, ATLAS_SCHED_ABORT);
  EXPECT_TRUE(before.tokens.empty());
  EXPECT_EQ(during.finals, 1);
  EXPECT_EQ(during.finish, ATLAS_SCHED_ABORT);
  EXPECT_EQ(during.tokens.size(), 3u);
  std::vector<uint32_t> want = Alone(Prompt(2, 5), 3);
  EXPECT_EQ(during.tokens, want);
  EXPECT_EQ(after.finish, ATLAS_SCHED_LENGTH);
  EXPECT_EQ(after.tokens, Alone(Prompt(3, 5), 4));
  // Finished requests are no longer known.
  EXPECT_STATUS(atlas_scheduler_cancel(sched_, a), ATLAS_STATUS_NOT_FOUND,
                "no request");
}

TEST_F(SchedulerTest, BadRequestsAreRefusedAtSubmit) {
  MakeScheduler();
  atlas_request_options o;
  atlas_request_options_init(&o);
  uint32_t bad[] = {1, 999};
  EXPECT_STATUS(atlas_scheduler_submit(sched_, bad, 2, &o, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "outside the vocabulary");
  EXPECT_STATUS(atlas_scheduler_submit(sched_, bad, 0, &o, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "empty");
  o.max_tokens = 65;  // 1 + 65 - 1 positions: one past the 64
  EXPECT_STATUS(atlas_scheduler_submit(sched_, bad, 1, &o, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "positions");
  o.max_tokens = 4;
  o.top_p = 0.0f;
  EXPECT_STATUS(atlas_scheduler_submit(sched_, bad, 1, &o, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "top_p");
  o.top_p = 1.0f;
  const char *stops[] = {"x"};
  o.stop_strings = stops;
  o.stop_count = 1;
  EXPECT_STATUS(atlas_scheduler_submit(sched_, bad, 1, &o, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "tokenizer");
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.waiting, 0u);
}

TEST_F(SchedulerTest, DestroyFinishesWhatIsLeft) {
  MakeScheduler();
  Result a, b;
  Submit(Prompt(1, 4), 5, &a);
  Submit(Prompt(2, 4), 5, &b);
  ASSERT_OK(atlas_scheduler_destroy(sched_));
  sched_ = nullptr;
  EXPECT_EQ(a.finals, 1);
  EXPECT_EQ(a.finish, ATLAS_SCHED_ABORT);
  EXPECT_EQ(b.finals, 1);
  EXPECT_EQ(b.finish, ATLAS_SCHED_ABORT);
}

// Four threads submit while one thread drives; a fifth cancels some. Every
// request ends exactly once; the greedy ones that ran to their length equal
// the one-sequence run.
TEST_F(SchedulerTest, ManySubmittersOneDriver) {
  constexpr int kThreads = 4, kPer = 3;
  std::vector<std::vector<uint32_t>> want;
  for (int i = 0; i < kThreads * kPer; ++i) {
    want.push_back(Alone(Prompt(100 + i, 3 + i % 5), 6));
  }
  MakeScheduler();
  std::vector<Result> res(kThreads * kPer);
  std::thread driver([&] { EXPECT_OK(atlas_scheduler_run(sched_)); });
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int k = 0; k < kPer; ++k) {
        int i = t * kPer + k;
        Submit(Prompt(100 + i, 3 + i % 5), 6, &res[i]);
      }
    });
  }
  for (auto &t : submitters) t.join();
  // Cancel a few; some may have finished already (NOT_FOUND is fine).
  for (int i = 0; i < kThreads * kPer; i += 5) {
    atlas_status s = atlas_scheduler_cancel(sched_, res[i].id);
    atlas_status_free(s);
  }
  // Wait for every final event, then shut down.
  for (;;) {
    int done = 0;
    for (auto &r : res) {
      std::lock_guard<std::mutex> lock(r.mu);
      done += r.finals;
    }
    if (done == kThreads * kPer) break;
    std::this_thread::yield();
  }
  atlas_scheduler_shutdown(sched_);
  driver.join();
  for (int i = 0; i < kThreads * kPer; ++i) {
    std::lock_guard<std::mutex> lock(res[i].mu);
    EXPECT_EQ(res[i].finals, 1);
    if (res[i].finish == ATLAS_SCHED_LENGTH) {
      EXPECT_EQ(res[i].tokens, want[i]) << "request " << i;
    } else {
      EXPECT_EQ(res[i].finish, ATLAS_SCHED_ABORT) << res[i].error;
    }
  }
  uint32_t p = 1;
  atlas_request_options o;
  atlas_request_options_init(&o);
  EXPECT_STATUS(atlas_scheduler_submit(sched_, &p, 1, &o, nullptr),
                ATLAS_STATUS_FAILED_PRECONDITION, "shutting down");
}

// Requests run together: fewer forwards than tokens, the same tokens.
TEST_F(SchedulerTest, RequestsShareSteps) {
  const int kN = 6;
  std::vector<std::vector<uint32_t>> want;
  for (int i = 0; i < kN; ++i) want.push_back(Alone(Prompt(50 + i, 4 + i), 10));
  MakeScheduler();
  std::vector<Result> res(kN);
  for (int i = 0; i < kN; ++i) Submit(Prompt(50 + i, 4 + i), 10, &res[i]);
  Drain();
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.tokens, 60u);
  EXPECT_LE(st.steps, 11u);  // one prefill step, then 9 decode steps
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(res[i].finish, ATLAS_SCHED_LENGTH) << res[i].error;
    EXPECT_EQ(res[i].tokens, want[i]) << "request " << i;
  }
  EXPECT_EQ(st.kv_blocks_used, 0u);
  EXPECT_GT(st.kv_blocks_total, 0u);
}

// Sampled requests (their own seeds) give the same tokens and log-probs
// alone as among five others: the sampler sees each sequence's own logits.
TEST_F(SchedulerTest, SamplingIsTheSameWhateverSharesTheBatch) {
  auto submit = [&](uint32_t i, Result *r) {
    atlas_request_options o;
    atlas_request_options_init(&o);
    o.max_tokens = 12;
    o.ignore_eos = true;
    o.temperature = 0.9f;
    o.top_k = 40;
    o.top_p = 0.95f;
    o.repetition_penalty = 1.1f;
    o.seed = 1000 + i;
    o.logprobs = true;
    o.on_event = OnEvent;
    o.ctx = r;
    std::vector<uint32_t> p = Prompt(200 + i, 5 + 3 * i);
    EXPECT_OK(atlas_scheduler_submit(sched_, p.data(), p.size(), &o, nullptr));
  };
  MakeScheduler();
  Result alone;
  submit(3, &alone);
  Drain();
  std::vector<Result> many(6);
  for (uint32_t i = 0; i < 6; ++i) submit(i, &many[i]);
  Drain();
  EXPECT_EQ(alone.tokens.size(), 12u);
  EXPECT_EQ(many[3].tokens, alone.tokens);
  EXPECT_EQ(many[3].logprobs, alone.logprobs);
  // Different seeds draw differently somewhere (not a fixed argmax).
  bool differ = false;
  for (uint32_t i = 0; i < 6; ++i)
    differ = differ || many[i].tokens != many[3].tokens;
  EXPECT_TRUE(differ);
}

// n choices on one prompt (atlas_scheduler_submit_n): options for each.
std::vector<atlas_request_options> Choices(size_t n, size_t max_tokens,
                                           std::vector<Result> *res,
                                           float temperature = 0.0f) {
  std::vector<atlas_request_options> o(n);
  for (size_t i = 0; i < n; ++i) {
    atlas_request_options_init(&o[i]);
    o[i].max_tokens = max_tokens;
    o[i].ignore_eos = true;
    o[i].temperature = temperature;
    o[i].top_k = temperature > 0 ? 40 : 0;
    o[i].seed = 500 + i;
    o[i].on_event = OnEvent;
    o[i].ctx = &(*res)[i];
  }
  return o;
}

void SchedulerTest::SubmitAndCancel(const std::vector<uint32_t> &prompt,
                                    std::vector<Result> *res,
                                    std::initializer_list<size_t> cancel) {
  auto o = Choices(res->size(), 6, res);
  std::vector<uint64_t> ids(res->size());
  ASSERT_OK(atlas_scheduler_submit_n(sched_, prompt.data(), prompt.size(),
                                     o.data(), res->size(), ids.data()));
  for (size_t i : cancel) EXPECT_OK(atlas_scheduler_cancel(sched_, ids[i]));
  Drain();
}

// The choices fork from one prefill: the prompt's positions are computed
// once (21 of them: a part-full last block, copied on the first write),
// every greedy choice is the one-sequence run, and every block comes back.
TEST_F(SchedulerTest, ForkedChoicesPrefillThePromptOnce) {
  std::vector<uint32_t> p = Prompt(11, 21);
  std::vector<uint32_t> want = Alone(p, 9);
  atlas_scheduler_options so;
  atlas_scheduler_options_init(&so);
  so.prefix_cache = false;  // no other way to skip the prompt
  MakeScheduler(&so);
  const size_t kN = 4;
  std::vector<Result> res(kN);
  auto o = Choices(kN, 9, &res);
  uint64_t ids[kN] = {};
  ASSERT_OK(
      atlas_scheduler_submit_n(sched_, p.data(), p.size(), o.data(), kN, ids));
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.waiting, kN);
  Drain();
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_NE(ids[i], 0u);
    EXPECT_EQ(res[i].finals, 1);
    EXPECT_EQ(res[i].finish, ATLAS_SCHED_LENGTH) << res[i].error;
    EXPECT_EQ(res[i].tokens, want) << "choice " << i;
    EXPECT_EQ(res[i].prompt_tokens, p.size());
  }
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.prompt_tokens_computed, p.size());
  EXPECT_EQ(st.tokens, kN * 9);
  EXPECT_EQ(st.kv_blocks_used, 0u);
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  // The same four as separate requests compute the prompt four times.
  std::vector<Result> apart(kN);
  for (size_t i = 0; i < kN; ++i) Submit(p, 9, &apart[i]);
  Drain();
  atlas_scheduler_stats st2;
  atlas_scheduler_stats_get(sched_, &st2);
  EXPECT_EQ(st2.prompt_tokens_computed - st.prompt_tokens_computed,
            kN * p.size());
}

// Sampled choices draw with their own seeds from the shared prefill: each
// is what a request alone with that seed draws, and they differ.
TEST_F(SchedulerTest, ForkedSampledChoicesAreTheRequestsAlone) {
  std::vector<uint32_t> p = Prompt(12, 19);
  atlas_scheduler_options so;
  atlas_scheduler_options_init(&so);
  so.prefix_cache = false;
  MakeScheduler(&so);
  const size_t kN = 5;
  std::vector<Result> forked(kN), alone(kN);
  auto o = Choices(kN, 10, &forked, 0.9f);
  ASSERT_OK(atlas_scheduler_submit_n(sched_, p.data(), p.size(), o.data(), kN,
                                     nullptr));
  Drain();
  auto a = Choices(kN, 10, &alone, 0.9f);
  for (size_t i = 0; i < kN; ++i) {
    ASSERT_OK(
        atlas_scheduler_submit(sched_, p.data(), p.size(), &a[i], nullptr));
    Drain();
  }
  bool differ = false;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(forked[i].tokens.size(), 10u) << forked[i].error;
    EXPECT_EQ(forked[i].tokens, alone[i].tokens) << "choice " << i;
    differ = differ || forked[i].tokens != forked[0].tokens;
  }
  EXPECT_TRUE(differ);
}

// The leader cancelled before it ran, a follower cancelled too: the others
// still run (prefilling themselves), nothing hangs or leaks. And n past the
// running cap: groups of max_running, one prefill each.
TEST_F(SchedulerTest, ForkedGroupsSurviveCancelsAndTheRunningCap) {
  std::vector<uint32_t> p = Prompt(13, 18);
  std::vector<uint32_t> want = Alone(p, 6);
  atlas_scheduler_options so;
  atlas_scheduler_options_init(&so);
  so.prefix_cache = false;
  so.max_running = 2;
  MakeScheduler(&so);
  std::vector<Result> res(3);
  SubmitAndCancel(p, &res, {0, 2});  // 2: the second group's leader
  EXPECT_EQ(res[0].finish, ATLAS_SCHED_ABORT);
  EXPECT_EQ(res[2].finish, ATLAS_SCHED_ABORT);
  EXPECT_TRUE(res[0].tokens.empty());  // cancelled before it ran: no token
  EXPECT_TRUE(res[2].tokens.empty());
  EXPECT_EQ(res[1].finish, ATLAS_SCHED_LENGTH) << res[1].error;
  EXPECT_EQ(res[1].tokens, want);
  for (auto &r : res) EXPECT_EQ(r.finals, 1);
  // A follower cancelled while queued ends with no token.
  std::vector<Result> two(2);
  SubmitAndCancel(p, &two, {1});
  EXPECT_EQ(two[0].tokens, want);
  EXPECT_EQ(two[1].finish, ATLAS_SCHED_ABORT);
  EXPECT_TRUE(two[1].tokens.empty());
  EXPECT_EQ(two[1].finals, 1);
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  uint64_t before = st.prompt_tokens_computed;
  std::vector<Result> five(5);
  auto o5 = Choices(5, 6, &five);
  ASSERT_OK(atlas_scheduler_submit_n(sched_, p.data(), p.size(), o5.data(), 5,
                                     nullptr));
  Drain();
  for (auto &r : five) EXPECT_EQ(r.tokens, want) << r.error;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.prompt_tokens_computed - before, 3 * p.size());  // 2 + 2 + 1
  EXPECT_EQ(st.kv_blocks_used, 0u);
  EXPECT_EQ(st.running + st.waiting, 0u);
}

// A prompt of every position the model has, and one token: admitted (the
// pool holds one such sequence) and answered as the one-sequence run.
TEST_F(SchedulerTest, APromptOfEveryPositionRuns) {
  std::vector<uint32_t> p = Prompt(3, 64);
  std::vector<uint32_t> want = Alone(p, 1);
  MakeScheduler();
  Result r;
  Submit(p, 1, &r);
  Drain();
  EXPECT_EQ(r.finish, ATLAS_SCHED_LENGTH) << r.error;
  EXPECT_EQ(r.tokens, want);
}

// 8 requests sharing a 40-token prompt: the later ones take the first's
// full blocks, and their tokens are the same.
TEST_F(SchedulerTest, SharedPromptsHitThePrefixCache) {
  std::vector<uint32_t> p = Prompt(9, 40);
  std::vector<uint32_t> want = Alone(p, 6);
  MakeScheduler();
  Result first;
  Submit(p, 6, &first);
  Drain();
  std::vector<Result> res(8);
  for (auto &r : res) Submit(p, 6, &r);
  Drain();
  EXPECT_EQ(first.tokens, want);
  for (auto &r : res) EXPECT_EQ(r.tokens, want);
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.prefix_hit_tokens, 8u * 32);
  EXPECT_GT(st.kv_blocks_cached, 0u);
  EXPECT_EQ(st.kv_blocks_used, 0u);
}

// A pool of one sequence's blocks (64 positions: 4 blocks of 16) and four
// requests that together need more: they are preempted and re-prefilled,
// and still give the one-sequence tokens.
TEST_F(SchedulerTest, ASmallPoolPreemptsAndStillAnswersRight) {
  const int kN = 4;
  std::vector<std::vector<uint32_t>> want;
  for (int i = 0; i < kN; ++i) want.push_back(Alone(Prompt(70 + i, 10), 20));
  atlas_scheduler_options o;
  atlas_scheduler_options_init(&o);
  atlas_arch_kv_shape shape;
  atlas_model_arch(model_)->kv_shape(atlas_model_impl(model_), &shape);
  o.kv_budget_bytes = 2ull * shape.layers * 16 * shape.kv_dim * 4 * 4;
  o.prefix_cache = false;
  MakeScheduler(&o);
  std::vector<Result> res(kN);
  for (int i = 0; i < kN; ++i) Submit(Prompt(70 + i, 10), 20, &res[i]);
  Drain();
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(res[i].finish, ATLAS_SCHED_LENGTH) << res[i].error;
    EXPECT_EQ(res[i].tokens, want[i]) << "request " << i;
  }
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.kv_blocks_total, 4u);
  EXPECT_GT(st.preempted, 0u);
  EXPECT_EQ(st.kv_blocks_used, 0u);
}

// A fault at every copy and launch of the batched steps: every request
// ends exactly once (its tokens, or ERROR with a status), the scheduler
// stays usable, and nothing leaks (checked when the model closes).
TEST_F(SchedulerTest, AFaultAtEveryOperationEndsEveryRequestOnce) {
  atlas_backend *be = atlas_model_backend(model_);
  MakeScheduler();
  // A first run makes the model's batch scratch; count one run's ops.
  auto run = [&](atlas_fault_kind kind, uint64_t at, int *errors) {
    std::vector<Result> res(3);
    for (int i = 0; i < 3; ++i) Submit(Prompt(90 + i, 3 + 7 * i), 4, &res[i]);
    uint64_t start = atlas_backend_op_count(be, kind);
    if (at > 0) atlas_backend_inject_fault(be, kind, at);
    for (int k = 0; k < 1000; ++k) {
      bool worked = false;
      atlas_status s = atlas_scheduler_step(sched_, &worked);
      atlas_status_free(s);
      if (!worked) break;
    }
    atlas_backend_inject_fault(be, kind, 0);
    *errors = 0;
    for (auto &r : res) {
      EXPECT_EQ(r.finals, 1);
      if (r.finish == ATLAS_SCHED_ERROR) {
        ++*errors;
        EXPECT_NE(r.error.find("injected"), std::string::npos) << r.error;
      } else {
        EXPECT_EQ(r.finish, ATLAS_SCHED_LENGTH);
      }
    }
    atlas_scheduler_stats st;
    atlas_scheduler_stats_get(sched_, &st);
    EXPECT_EQ(st.running, 0u);
    EXPECT_EQ(st.kv_blocks_used, 0u);
    return atlas_backend_op_count(be, kind) - start;
  };
  int errors = 0;
  run(ATLAS_FAULT_LAUNCH, 0, &errors);
  for (atlas_fault_kind kind : {ATLAS_FAULT_COPY, ATLAS_FAULT_LAUNCH}) {
    uint64_t n = run(kind, 0, &errors);
    EXPECT_EQ(errors, 0);
    for (uint64_t k = 1; k <= n; k += (kind == ATLAS_FAULT_LAUNCH ? 3 : 1)) {
      run(kind, k, &errors);
      EXPECT_GT(errors, 0) << atlas_fault_kind_name(kind) << " " << k;
    }
  }
}

}  // namespace
