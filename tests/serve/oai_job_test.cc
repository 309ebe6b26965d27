// oai_job (runtime/serve/openai/oai_job.h) on a real scheduler and a tiny
// host model: a body's text is the one-sequence run's, a stream's chunks
// make the same text, a swap's shutdown requeues a request that had no
// token yet and it then runs whole on the next scheduler, a refusal of n
// choices refuses them all, top logprobs are the one-sequence run's log
// softmax, bad fields are named.
#include "atlas/runtime/serve/openai/oai_job.h"

#include <gtest/gtest.h>
#include <jansson.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/openai/oai_response.h"
#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

const char kTokenizer[] = "tests/text/synthetic/gpt2_style.json";

class OaiJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeCheckpoint("oai_job", "tiny", 3, ATLAS_DTYPE_F32, false, 1, 665);
    atlas_model_spec s{};
    s.dir = dir_.c_str();
    s.backend = "host";
    s.max_seq = 64;
    ASSERT_OK(atlas_model_open(&s, &model_));
    ASSERT_OK(atlas_tokenizer_load(kTokenizer, &tok_));
  }
  void TearDown() override {
    StopDriver();
    if (sched_ != nullptr) EXPECT_OK(atlas_scheduler_destroy(sched_));
    atlas_tokenizer_free(tok_);
    atlas_teardown_report rep{};
    EXPECT_OK(atlas_model_close(model_, &rep));
    EXPECT_EQ(rep.sweep.count, 0u);
    atlas_sweep_result_free(&rep.sweep);
  }
  void MakeScheduler(size_t max_waiting = 0) {
    atlas_scheduler_options o;
    atlas_scheduler_options_init(&o);
    o.max_waiting = max_waiting;
    ASSERT_OK(atlas_scheduler_create(model_, &o, &sched_));
  }
  void StartDriver() {
    driver_ = std::thread([this] { EXPECT_OK(atlas_scheduler_run(sched_)); });
  }
  void StopDriver() {
    if (!driver_.joinable()) return;
    atlas_scheduler_shutdown(sched_);
    driver_.join();
  }
  atlas_oai_env Env() {
    atlas_oai_env e{};
    e.sched = sched_;
    e.tokenizer = tok_;
    e.vocab_size = 665;
    e.max_seq = 64;
    e.model_name = "tiny";
    e.swapping = [](void *ctx) {
      return static_cast<std::atomic<bool> *>(ctx)->load();
    };
    e.swapping_ctx = &swapping_;
    return e;
  }
  atlas_oai_job *Job(const std::string &body,
                     atlas_oai_endpoint ep = ATLAS_OAI_COMPLETIONS) {
    atlas_oai_request *r = nullptr;
    atlas_oai_error err;
    EXPECT_OK(atlas_oai_request_parse(body.data(), body.size(), ep, &r, &err));
    atlas_oai_job *j = nullptr;
    EXPECT_OK(atlas_oai_job_create(r, "cmpl-test", 1, 42, &j));
    return j;
  }
  // The greedy text the model's own loop makes for `prompt`, as a stream
  // shows it (a character still incomplete at the end left out).
  std::string Alone(const std::vector<uint32_t> &prompt, size_t n) {
    std::vector<uint32_t> out(n);
    size_t count = 0;
    EXPECT_OK(atlas_model_generate(model_, prompt.data(), prompt.size(), n,
                                   out.data(), &count, nullptr, nullptr));
    char *text = nullptr;
    size_t len = 0;
    EXPECT_OK(
        atlas_tokenizer_decode(tok_, out.data(), count, true, &text, &len));
    std::string s(text, len);
    free(text);
    while (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0) {
      s.resize(s.size() - 3);
    }
    return s;
  }
  // Submits a job and waits for its end; its body as Result gives it.
  json_t *RunWhole(atlas_oai_job *j, int *http) {
    atlas_oai_env env = Env();
    atlas_oai_error err;
    atlas_status s = atlas_oai_job_submit(j, &env, &err, http);
    EXPECT_OK(s);
    if (s != ATLAS_OK) return nullptr;
    EXPECT_EQ(atlas_oai_job_wait_end(j), ATLAS_OAI_JOB_DONE);
    return Result(j, http);
  }
  // The body of a finished job: status and parsed JSON (the caller's).
  json_t *Result(atlas_oai_job *j, int *http) {
    char *body = nullptr;
    EXPECT_OK(atlas_oai_job_result(j, http, &body));
    json_t *root = json_loads(body ? body : "", JSON_ALLOW_NUL, nullptr);
    free(body);
    return root;
  }

  std::string dir_;
  atlas_model *model_ = nullptr;
  atlas_tokenizer *tok_ = nullptr;
  atlas_scheduler *sched_ = nullptr;
  std::thread driver_;
  std::atomic<bool> swapping_{false};
};

// A choice's text, NUL bytes included (a random model may pick byte 0).
std::string ChoiceText(json_t *root, size_t i) {
  json_t *t = json_object_get(
      json_array_get(json_object_get(root, "choices"), i), "text");
  return std::string(json_string_value(t), json_string_length(t));
}

TEST_F(OaiJobTest, BodyIsTheOneSequenceRun) {
  MakeScheduler();
  StartDriver();
  atlas_oai_job *j =
      Job(R"({"prompt":[1,2,3],"max_tokens":8,"temperature":0,"n":2})");
  int http = 0;
  json_t *root = RunWhole(j, &http);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(http, 200);
  std::string want = Alone({1, 2, 3}, 8);
  EXPECT_EQ(ChoiceText(root, 0), want);
  EXPECT_EQ(ChoiceText(root, 1), want);  // greedy: both choices alike
  json_t *usage = json_object_get(root, "usage");
  EXPECT_EQ(json_integer_value(json_object_get(usage, "prompt_tokens")), 3);
  EXPECT_EQ(json_integer_value(json_object_get(usage, "completion_tokens")),
            16);
  json_decref(root);
  atlas_oai_job_free(j);
}

TEST_F(OaiJobTest, StreamChunksMakeTheSameText) {
  MakeScheduler();
  StartDriver();
  atlas_oai_job *j =
      Job(R"({"prompt":[1,2,3],"max_tokens":8,"temperature":0,"stream":true,)"
          R"("stream_options":{"include_usage":true}})");
  atlas_oai_env env = Env();
  atlas_oai_error err;
  int http = 0;
  ASSERT_OK(atlas_oai_job_submit(j, &env, &err, &http));
  std::string sse;
  bool complete = false;
  for (int i = 0; i < 10000 && !complete; ++i) {
    atlas_oai_job_wait(j, atlas_oai_now() + 1);
    char *out = nullptr;
    size_t len = 0;
    ASSERT_OK(atlas_oai_job_take_stream(j, &out, &len, &complete));
    if (out != nullptr) sse.append(out, len);
    free(out);
  }
  ASSERT_TRUE(complete);
  std::string text, last;
  size_t at = 0;
  json_t *usage_chunk = nullptr;
  while ((at = sse.find("data: ", at)) != std::string::npos) {
    size_t end = sse.find("\n\n", at);
    ASSERT_NE(end, std::string::npos);
    last = sse.substr(at + 6, end - at - 6);
    at = end + 2;
    if (last == "[DONE]") continue;
    json_t *chunk = json_loads(last.c_str(), JSON_ALLOW_NUL, nullptr);
    ASSERT_NE(chunk, nullptr) << last;
    json_t *choices = json_object_get(chunk, "choices");
    if (json_array_size(choices) == 0) {
      json_decref(usage_chunk);
      usage_chunk = chunk;
      continue;
    }
    text += ChoiceText(chunk, 0);
    json_decref(chunk);
  }
  EXPECT_EQ(last, "[DONE]");
  EXPECT_EQ(text, Alone({1, 2, 3}, 8));
  ASSERT_NE(usage_chunk, nullptr);
  EXPECT_EQ(json_integer_value(json_object_get(
                json_object_get(usage_chunk, "usage"), "completion_tokens")),
            8);
  json_decref(usage_chunk);
  atlas_oai_job_free(j);
}

TEST_F(OaiJobTest, ASwapsShutdownRequeuesARequestWithoutTokens) {
  MakeScheduler();  // no driver yet: the request stays queued
  atlas_oai_job *j = Job(R"({"prompt":[4,5],"max_tokens":6,"temperature":0})");
  atlas_oai_env env = Env();
  atlas_oai_error err;
  int http = 0;
  ASSERT_OK(atlas_oai_job_submit(j, &env, &err, &http));
  swapping_ = true;
  atlas_scheduler_shutdown(sched_);
  ASSERT_OK(atlas_scheduler_run(sched_));  // aborts what is queued
  EXPECT_EQ(atlas_oai_job_state_get(j), ATLAS_OAI_JOB_REQUEUE);
  ASSERT_OK(atlas_scheduler_destroy(sched_));
  sched_ = nullptr;
  swapping_ = false;
  MakeScheduler();  // "the model serving after the swap"
  StartDriver();
  env = Env();
  ASSERT_OK(atlas_oai_job_submit(j, &env, &err, &http));
  EXPECT_EQ(atlas_oai_job_wait_end(j), ATLAS_OAI_JOB_DONE);
  json_t *root = Result(j, &http);
  EXPECT_EQ(http, 200);
  EXPECT_EQ(ChoiceText(root, 0), Alone({4, 5}, 6));
  json_decref(root);
  atlas_oai_job_free(j);
}

TEST_F(OaiJobTest, ACancelledRequeueEndsWithItsReason) {
  MakeScheduler();
  atlas_oai_job *j = Job(R"({"prompt":[4,5],"max_tokens":6})");
  atlas_oai_env env = Env();
  atlas_oai_error err;
  int http = 0;
  ASSERT_OK(atlas_oai_job_submit(j, &env, &err, &http));
  swapping_ = true;
  atlas_scheduler_shutdown(sched_);
  ASSERT_OK(atlas_scheduler_run(sched_));
  ASSERT_EQ(atlas_oai_job_state_get(j), ATLAS_OAI_JOB_REQUEUE);
  atlas_oai_job_cancel(j, 504, "too slow");
  EXPECT_EQ(atlas_oai_job_state_get(j), ATLAS_OAI_JOB_DONE);
  json_t *root = Result(j, &http);
  EXPECT_EQ(http, 504);
  EXPECT_STREQ(json_string_value(
                   json_object_get(json_object_get(root, "error"), "message")),
               "too slow");
  json_decref(root);
  atlas_oai_job_free(j);
}

TEST_F(OaiJobTest, ARefusalRefusesEveryChoice) {
  MakeScheduler(/*max_waiting=*/2);  // room for two of the three choices
  atlas_oai_job *j = Job(R"({"prompt":[1],"max_tokens":4,"n":3})");
  atlas_oai_env env = Env();
  atlas_oai_error err;
  int http = 0;
  atlas_status s = atlas_oai_job_submit(j, &env, &err, &http);
  EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_RESOURCE_EXHAUSTED);
  atlas_status_free(s);
  EXPECT_EQ(http, 429);
  // Nothing was queued: the job is over at once.
  EXPECT_EQ(atlas_oai_job_state_get(j), ATLAS_OAI_JOB_DONE);
  atlas_scheduler_stats st;
  atlas_scheduler_stats_get(sched_, &st);
  EXPECT_EQ(st.waiting, 0u);
  json_t *root = Result(j, &http);
  EXPECT_EQ(http, 429);
  EXPECT_NE(json_object_get(root, "error"), nullptr);
  json_decref(root);
  atlas_oai_job_free(j);
}

// The one-sequence run's logits at each step (the model's own loop, not
// the batch step), choosing the first largest.
struct StepLogits {
  std::vector<std::vector<float>> rows;
};
atlas_status KeepLogits(void *ctx, const float *logits, size_t n,
                        uint32_t *out_token) {
  auto *k = static_cast<StepLogits *>(ctx);
  k->rows.emplace_back(logits, logits + n);
  uint32_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = static_cast<uint32_t>(i);
  }
  *out_token = best;
  return ATLAS_OK;
}

// log softmax in double over the whole vocabulary.
std::vector<double> LogSoftmax(const std::vector<float> &row) {
  double mx = -INFINITY;
  for (float v : row) mx = v > mx ? v : mx;
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - mx);
  std::vector<double> out(row.size());
  for (size_t i = 0; i < row.size(); ++i) out[i] = row[i] - mx - std::log(sum);
  return out;
}

// logprobs: 5 on completions, n 2: each choice's tokens are the greedy
// run's; each token_logprob and each of the 5 alternatives (keyed by their
// text, OpenAI's shape) is log softmax of that step's logits from an
// independent run, within 1e-5.
TEST_F(OaiJobTest, TopLogprobsAreLogSoftmaxOfTheOneSequenceLogits) {
  const std::vector<uint32_t> prompt = {5, 9, 2, 7};
  const size_t kSteps = 6;
  StepLogits keep;
  atlas_model_generate_hooks hooks{};
  hooks.choose = KeepLogits;
  hooks.choose_ctx = &keep;
  std::vector<uint32_t> ids(kSteps);
  size_t count = 0;
  ASSERT_OK(atlas_model_generate_hooked(model_, prompt.data(), prompt.size(),
                                        kSteps, &hooks, ids.data(), &count));
  ASSERT_GT(count, 0u);
  MakeScheduler();
  StartDriver();
  atlas_oai_job *j =
      Job(R"({"prompt":[5,9,2,7],"max_tokens":6,"temperature":0,"logprobs":5,)"
          R"("n":2})");
  int http = 0;
  json_t *root = RunWhole(j, &http);
  ASSERT_NE(root, nullptr);
  ASSERT_EQ(http, 200);
  for (size_t c = 0; c < 2; ++c) {
    json_t *lp = json_object_get(
        json_array_get(json_object_get(root, "choices"), c), "logprobs");
    json_t *chosen = json_object_get(lp, "token_logprobs");
    json_t *tops = json_object_get(lp, "top_logprobs");
    ASSERT_EQ(json_array_size(chosen), count) << "choice " << c;
    ASSERT_EQ(json_array_size(tops), count);
    for (size_t t = 0; t < count; ++t) {
      std::vector<double> want = LogSoftmax(keep.rows[t]);
      EXPECT_NEAR(json_real_value(json_array_get(chosen, t)), want[ids[t]],
                  1e-5)
          << "choice " << c << " token " << t;
      // The five largest, by logit then id.
      std::vector<uint32_t> order(want.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = (uint32_t)i;
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return keep.rows[t][a] > keep.rows[t][b];
      });
      json_t *top = json_array_get(tops, t);
      // Keys as the response writes them (invalid UTF-8 as U+FFFD); a key
      // two alternatives share holds one of them, so it is not compared.
      std::vector<std::string> keys;
      for (size_t k = 0; k < 5; ++k) {
        char *text = nullptr;
        size_t len = 0;
        ASSERT_OK(
            atlas_tokenizer_decode(tok_, &order[k], 1, false, &text, &len));
        char *lossy = atlas_oai_utf8_lossy(text, len);
        keys.emplace_back(lossy);
        free(lossy);
        free(text);
      }
      size_t distinct = 0;
      for (size_t k = 0; k < 5; ++k) {
        size_t same = std::count(keys.begin(), keys.end(), keys[k]);
        distinct +=
            std::find(keys.begin(), keys.end(), keys[k]) == keys.begin() + k;
        if (same > 1) continue;
        json_t *v = json_object_getn(top, keys[k].data(), keys[k].size());
        ASSERT_NE(v, nullptr) << "token " << t << ": no " << keys[k];
        EXPECT_NEAR(json_real_value(v), want[order[k]], 1e-5)
            << "token " << t << " alternative " << k;
      }
      EXPECT_EQ(json_object_size(top), distinct) << "token " << t;
    }
  }
  json_decref(root);
  atlas_oai_job_free(j);
}

TEST_F(OaiJobTest, BadFieldsAreNamedAndLeaveTheJobNew) {
  MakeScheduler();
  struct {
    const char *body;
    const char *param;
  } cases[] = {
      {R"({"prompt":[1,665]})", "prompt[1]"},
      {R"({"prompt":[1,2],"max_tokens":64})", "max_tokens"},
  };
  for (const auto &c : cases) {
    atlas_oai_job *j = Job(c.body);
    atlas_oai_env env = Env();
    atlas_oai_error err;
    int http = 0;
    atlas_status s = atlas_oai_job_submit(j, &env, &err, &http);
    EXPECT_EQ(atlas_status_code_of(s), ATLAS_STATUS_INVALID_ARGUMENT) << c.body;
    EXPECT_NE(std::string(atlas_status_message(s)).find(c.param),
              std::string::npos)
        << atlas_status_message(s);
    atlas_status_free(s);
    EXPECT_EQ(http, 400);
    EXPECT_STREQ(err.param, c.param);
    EXPECT_EQ(atlas_oai_job_state_get(j), ATLAS_OAI_JOB_NEW);
    atlas_oai_job_free(j);
  }
  // Chat without a template is refused by name.
  atlas_oai_job *j =
      Job(R"({"messages":[{"role":"user","content":"hi"}]})", ATLAS_OAI_CHAT);
  atlas_oai_env env = Env();
  atlas_oai_error err;
  int http = 0;
  atlas_status s = atlas_oai_job_submit(j, &env, &err, &http);
  EXPECT_EQ(http, 400);
  EXPECT_STREQ(err.param, "messages");
  atlas_status_free(s);
  atlas_oai_job_free(j);
}

}  // namespace
