// The public API's thread-safety claims (atlas/atlas.h, "Threads" and the
// tokenizer and chat template sections), each checked by running it on
// several threads at once and comparing every result with what one thread
// gets alone:
// - a tokenizer handle may be shared: encode and decode from many threads;
// - a chat template is read-only after loading: threads may share it;
// - different models may run on different threads at once (open, generate,
//   swap, report, close), sharing a tokenizer for their text;
// - one model is used by one thread at a time, not necessarily the same one;
// - log, progress and generation callbacks run on the calling thread.
// Built with --config=tsan (.bazelrc), ThreadSanitizer reports any race the
// comparisons miss; CI runs this suite that way (.ci/run).
//
// Arguments: --corpus FILE, then per real model --model=NAME and its
// package's files (tokenizer.json, tokenizer_config.json), and
// gpt2=PATH (the 665-id synthetic tokenizer the generated text uses).
#include <gtest/gtest.h>
#include <jansson.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "atlas/atlas.h"
#include "tests/api/api_fixture.h"
#include "tests/runtime/test_util.h"
#include "tests/text/reference_files.h"

namespace {

atlas_test::ReferenceFiles g_files;
std::vector<std::string> g_corpus;

using atlas_test::Checkpoint;
using atlas_test::ReadFile;
using atlas_test::TakeMessage;

constexpr int kThreads = 4;

// Starts `n` threads that each wait until all have started, then run
// body(i): the bodies overlap as much as the scheduler lets them.
void RunTogether(int n, const std::function<void(int)> &body) {
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (++ready == n) cv.notify_all();
        cv.wait(lock, [&] { return ready == n; });
      }
      body(i);
    });
  }
  for (auto &t : threads) t.join();
}

atlas_tokenizer *LoadTokenizer(const std::string &name) {
  return atlas_test::LoadTokenizer(g_files, name);
}

// ---- tokenizer ---------------------------------------------------------------

// What one text gives: ids with and without special tokens, and the decodes
// of the first with and without them, and the clean-up of the decode.
struct Coded {
  std::vector<uint32_t> ids, ids_plain;
  std::string text, text_skip, cleaned;
  bool operator==(const Coded &o) const {
    return ids == o.ids && ids_plain == o.ids_plain && text == o.text &&
           text_skip == o.text_skip && cleaned == o.cleaned;
  }
};

std::vector<uint32_t> Encode(atlas_tokenizer *tok, const std::string &text,
                             bool special) {
  uint32_t *ids = nullptr;
  size_t n = 0;
  atlas_status st =
      atlas_tokenizer_encode(tok, text.data(), text.size(), special, &ids, &n);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  std::vector<uint32_t> v(ids, ids + n);
  atlas_free(ids);
  return v;
}

std::string Decode(const atlas_tokenizer *tok, const std::vector<uint32_t> &ids,
                   bool skip) {
  char *text = nullptr;
  size_t len = 0;
  atlas_status st =
      atlas_tokenizer_decode(tok, ids.data(), ids.size(), skip, &text, &len);
  if (st) return "<error: " + TakeMessage(st) + ">";
  std::string s(text, len);
  atlas_free(text);
  return s;
}

Coded Code(atlas_tokenizer *tok, const std::string &text) {
  Coded c;
  c.ids = Encode(tok, text, true);
  c.ids_plain = Encode(tok, text, false);
  c.text = Decode(tok, c.ids, false);
  c.text_skip = Decode(tok, c.ids, true);
  char *clean = nullptr;
  size_t len = 0;
  atlas_status st =
      atlas_tokenizer_clean_up(c.text.data(), c.text.size(), &clean, &len);
  EXPECT_EQ(st, ATLAS_OK) << TakeMessage(st);
  if (clean != nullptr) c.cleaned.assign(clean, len);
  atlas_free(clean);
  return c;
}

// Every corpus text through one fresh shared handle from kThreads threads,
// each starting at a different text (so the word cache fills, and is read,
// with different words at once): the same ids and text as one thread. Llama
// 3 (byte-level BPE, a 128k vocabulary) and Llama 2 (a normalizer, byte
// fallback, a decoder of several steps); Qwen3's tokenizer works as Llama
// 3's does and would only add to the time under ThreadSanitizer.
TEST(ThreadsApi, SharedTokenizerEncodesAndDecodesAsOneThreadDoes) {
  ASSERT_GT(g_corpus.size(), 100u);
  for (const char *name : {"llama3", "llama2"}) {
    SCOPED_TRACE(name);
    atlas_tokenizer *tok = LoadTokenizer(name);
    ASSERT_NE(tok, nullptr);
    // The reference: a fresh handle, one thread.
    std::vector<Coded> alone;
    for (const std::string &t : g_corpus) alone.push_back(Code(tok, t));
    atlas_tokenizer_free(tok);
    tok = LoadTokenizer(name);
    ASSERT_NE(tok, nullptr);
    size_t n = g_corpus.size();
    std::vector<std::vector<Coded>> got(kThreads, std::vector<Coded>(n));
    std::vector<size_t> vocab(kThreads);
    RunTogether(kThreads, [&](int i) {
      for (size_t k = 0; k < n; ++k) {
        size_t at = (k + (size_t)i * n / kThreads) % n;
        got[i][at] = Code(tok, g_corpus[at]);
      }
      vocab[i] = atlas_tokenizer_vocab_size(tok);
    });
    for (int i = 0; i < kThreads; ++i) {
      EXPECT_EQ(vocab[i], atlas_tokenizer_vocab_size(tok));
      size_t wrong = 0;
      for (size_t k = 0; k < n && wrong < 5; ++k) {
        bool same = got[i][k] == alone[k];
        wrong += !same;
        EXPECT_TRUE(same) << "thread " << i << ", corpus[" << k
                          << "]: " << atlas_test::Show(got[i][k].ids)
                          << " alone " << atlas_test::Show(alone[k].ids);
      }
    }
    atlas_tokenizer_free(tok);
  }
}

// Handles are independent: threads loading, using and freeing their own at
// the same time get what one thread gets.
TEST(ThreadsApi, TokenizersLoadedOnSeveralThreadsAtOnceAgree) {
  atlas_tokenizer *tok = LoadTokenizer("llama2");
  ASSERT_NE(tok, nullptr);
  std::vector<Coded> alone;
  for (size_t k = 0; k < 40 && k < g_corpus.size(); ++k) {
    alone.push_back(Code(tok, g_corpus[k]));
  }
  atlas_tokenizer_free(tok);
  std::vector<std::vector<Coded>> got(kThreads);
  RunTogether(kThreads, [&](int i) {
    atlas_tokenizer *mine = LoadTokenizer("llama2");
    if (mine == nullptr) return;
    for (size_t k = 0; k < alone.size(); ++k) {
      got[i].push_back(Code(mine, g_corpus[k]));
    }
    atlas_tokenizer_free(mine);
  });
  for (int i = 0; i < kThreads; ++i)
    EXPECT_TRUE(got[i] == alone) << "thread " << i;
}

// ---- chat templates -------------------------------------------------------------

std::vector<std::vector<atlas_chat_message>> Conversations() {
  return {
      {{"user", "Hello!"}},
      {{"system", "You are terse."}, {"user", "Name a prime."}},
      {{"user", "2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}},
      {{"system", "Héllo, 世界 🌍"},
       {"user", "<|eot_id|> is text here"},
       {"assistant", "ok"},
       {"user", "again"}},
  };
}

std::string Render(const atlas_chat_template *t,
                   const std::vector<atlas_chat_message> &conv, bool gen) {
  char *text = nullptr;
  atlas_status st =
      atlas_chat_template_apply(t, conv.data(), conv.size(), gen, &text);
  if (st) return "<error: " + TakeMessage(st) + ">";
  std::string s = text;
  atlas_free(text);
  return s;
}

// One template per real model that has one, shared by kThreads threads
// rendering every conversation (with and without the generation prompt)
// many times: the same text as one thread.
TEST(ThreadsApi, SharedChatTemplateRendersAsOneThreadDoes) {
  auto convs = Conversations();
  for (const char *name : {"llama3", "qwen3"}) {
    SCOPED_TRACE(name);
    ASSERT_EQ(g_files.config.count(name), 1u);
    atlas_chat_template *t = nullptr;
    atlas_status st =
        atlas_chat_template_load(g_files.config[name].c_str(), &t);
    ASSERT_EQ(st, ATLAS_OK) << TakeMessage(st);
    std::vector<std::string> alone;
    for (const auto &c : convs) {
      for (bool gen : {false, true}) alone.push_back(Render(t, c, gen));
    }
    ASSERT_EQ(alone[0].find("<error"), std::string::npos) << alone[0];
    ASSERT_NE(alone[0].find("Hello!"), std::string::npos) << alone[0];
    std::vector<std::vector<std::string>> got(kThreads);
    RunTogether(kThreads, [&](int i) {
      for (int round = 0; round < 5; ++round) {
        std::vector<std::string> mine;
        for (size_t k = 0; k < convs.size(); ++k) {
          const auto &c = convs[(k + (size_t)i) % convs.size()];
          for (bool gen : {false, true}) mine.push_back(Render(t, c, gen));
        }
        // Back into the reference's order.
        std::vector<std::string> ordered(mine.size());
        for (size_t k = 0; k < convs.size(); ++k) {
          size_t at = (k + (size_t)i) % convs.size();
          ordered[2 * at] = mine[2 * k];
          ordered[2 * at + 1] = mine[2 * k + 1];
        }
        got[i] = ordered;
        if (ordered != alone) return;  // keep the first difference
      }
    });
    for (int i = 0; i < kThreads; ++i)
      EXPECT_EQ(got[i], alone) << "thread " << i;
    atlas_chat_template_free(t);
  }
}

// ---- models ------------------------------------------------------------------

// The synthetic tokenizer's vocabulary: the checkpoints' ids are its.
constexpr int64_t kVocab = 665;

// Each run of digits becomes one '#': log lines carry timings.
std::string NoDigits(const std::string &s) {
  std::string out;
  for (char c : s) {
    bool digit = c >= '0' && c <= '9';
    if (!digit) {
      out += c;
    } else if (out.empty() || out.back() != '#') {
      out += '#';
    }
  }
  return out;
}

// What the callbacks of one model saw, and on which thread.
struct Calls {
  std::thread::id owner;          // the thread making the current call
  std::atomic<int> elsewhere{0};  // callbacks on another thread
  int log_lines = 0, progress_calls = 0, token_calls = 0, logits_calls = 0;
  // Load progress: how many calls is up to the scheduler (the calling
  // thread reports what it uploaded, other lanes upload too), so what is
  // compared is that done_bytes never goes back and each load's last call
  // says done == total, with that total.
  uint64_t last_done = 0;
  int progress_backwards = 0;
  std::vector<uint64_t> loads_finished;
  std::vector<std::string> logs;
  std::vector<float> logits;
  std::string text;
  void Here() {
    if (std::this_thread::get_id() != owner) elsewhere++;
  }
};

void OnLog(void *ctx, atlas_log_level level, const char *message) {
  auto *c = static_cast<Calls *>(ctx);
  c->Here();
  c->log_lines++;
  c->logs.push_back(std::to_string(level) + " " + NoDigits(message));
}

void OnProgress(void *ctx, uint64_t done, uint64_t total) {
  auto *c = static_cast<Calls *>(ctx);
  c->Here();
  c->progress_calls++;
  if (done < c->last_done || done > total) c->progress_backwards++;
  c->last_done = done;
  if (done == total) {
    c->loads_finished.push_back(total);
    c->last_done = 0;  // the next load starts again
  }
}

atlas_status OnLogits(void *ctx, const float *logits, size_t n) {
  auto *c = static_cast<Calls *>(ctx);
  c->Here();
  c->logits_calls++;
  c->logits.insert(c->logits.end(), logits, logits + n);
  return ATLAS_OK;
}

bool OnToken(void *ctx, uint32_t) {
  auto *c = static_cast<Calls *>(ctx);
  c->Here();
  c->token_calls++;
  return true;
}

bool OnText(void *ctx, const char *text, size_t len) {
  auto *c = static_cast<Calls *>(ctx);
  c->Here();
  c->text.append(text, len);
  return true;
}

// Everything a model's life on the public API hands back, for comparing a
// run on one thread with a run beside others.
struct Trace {
  std::vector<std::string> steps;  // what each call returned, in words
  std::vector<std::string> logs;
  std::vector<float> logits;
  int elsewhere = 0, log_lines = 0, progress_calls = 0, token_calls = 0;
  int progress_backwards = 0;
  std::vector<uint64_t> loads_finished;
};

struct Plan {
  std::string first, second;  // directories: open the first, swap to the second
  std::string third_config, third_weights;  // then swap to these in memory
  uint32_t prompt0 = 1;
};

atlas_open_options Options(Calls *calls) {
  atlas_open_options o;
  atlas_open_options_init(&o);
  o.backend = "host";
  o.max_seq = 32;
  o.log.fn = OnLog;
  o.log.ctx = calls;
  o.log.min_level = ATLAS_LOG_DEBUG;
  o.progress = OnProgress;
  o.progress_ctx = calls;
  return o;
}

void Generate(atlas_model *m, const atlas_tokenizer *tok, uint32_t prompt0,
              Calls *calls, Trace *tr) {
  const uint32_t prompt[] = {prompt0, prompt0 + 7, prompt0 + 30};
  atlas_generate_options g;
  atlas_generate_options_init(&g);
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  g.on_logits = OnLogits;
  g.on_token = OnToken;
  g.on_text = OnText;
  g.ctx = calls;
  g.tokenizer = tok;
  uint32_t out[6];
  size_t n = 0;
  calls->text.clear();
  atlas_status st = atlas_generate(m, prompt, 3, &g, out, &n);
  std::string s = "generate:";
  if (st) s += " error " + TakeMessage(st);
  for (size_t i = 0; i < n; ++i) s += " " + std::to_string(out[i]);
  tr->steps.push_back(s + " text=" + calls->text);
  // Sampled too, with a seed: the PRNG is the call's own.
  g.temperature = 0.8f;
  g.top_k = 50;
  g.seed = prompt0;
  g.on_logits = nullptr;
  st = atlas_generate(m, prompt, 3, &g, out, &n);
  s = "sample:";
  if (st) s += " error " + TakeMessage(st);
  for (size_t i = 0; i < n; ++i) s += " " + std::to_string(out[i]);
  tr->steps.push_back(s);
}

void Report(const atlas_model *m, Trace *tr) {
  atlas_model_info info;
  info.struct_size = sizeof(info);
  atlas_status st = atlas_model_info_get(m, &info);
  if (st) {
    tr->steps.push_back("info: error " + TakeMessage(st));
  } else {
    tr->steps.push_back(
        std::string("info: ") + info.name + " " + info.architecture + " " +
        info.backend + " " + std::to_string(info.vocab_size) + " " +
        std::to_string(info.max_seq) + " " + std::to_string(info.live_bytes));
  }
  for (atlas_report_format f : {ATLAS_REPORT_TEXT, ATLAS_REPORT_JSON}) {
    char *text = nullptr;
    st = atlas_report(m, f, nullptr, &text);
    tr->steps.push_back(st ? "report: error " + TakeMessage(st)
                           : std::string("report: ") + text);
    atlas_free(text);
  }
}

std::string Swapped(atlas_status st, const atlas_swap_info &info) {
  std::string s = "swap: outcome " + std::to_string(info.outcome) +
                  " side_by_side " + std::to_string(info.side_by_side) +
                  " needed " + std::to_string(info.needed_bytes) +
                  " releasable " + std::to_string(info.releasable_bytes);
  if (st) s += " error " + TakeMessage(st);
  return s;
}

// A model's life: open, generate, report, swap, generate, report, swap to a
// checkpoint in memory, generate, report, close. `step` runs each call
// (here, or handed to another thread) and sets calls.owner to the thread
// that makes it.
Trace Life(const Plan &p, const atlas_tokenizer *tok,
           const std::function<void(const std::function<void()> &)> &step) {
  Trace tr;
  Calls calls;
  atlas_open_options o = Options(&calls);
  atlas_model *m = nullptr;
  auto call = [&](const std::function<void()> &f) {
    step([&] {
      calls.owner = std::this_thread::get_id();
      f();
    });
  };
  call([&] {
    atlas_status st = atlas_open(p.first.c_str(), &o, &m);
    tr.steps.push_back(st ? "open: error " + TakeMessage(st) : "open: ok");
  });
  if (m == nullptr) return tr;
  call([&] {
    Generate(m, tok, p.prompt0, &calls, &tr);
    Report(m, &tr);
  });
  call([&] {
    atlas_swap_info info;
    atlas_status st = atlas_swap(&m, p.second.c_str(), nullptr, &info);
    tr.steps.push_back(Swapped(st, info));
  });
  call([&] {
    Generate(m, tok, p.prompt0 + 1, &calls, &tr);
    Report(m, &tr);
  });
  call([&] {
    atlas_swap_info info;
    atlas_status st = atlas_swap_memory(
        &m, "in-memory", p.third_config.data(), p.third_config.size(),
        p.third_weights.data(), p.third_weights.size(), &o, &info);
    tr.steps.push_back(Swapped(st, info));
  });
  call([&] {
    Generate(m, tok, p.prompt0 + 2, &calls, &tr);
    Report(m, &tr);
  });
  call([&] {
    atlas_close_report r;
    atlas_status st = atlas_close(m, &r);
    tr.steps.push_back((st ? "close: error " + TakeMessage(st) : "close: ok") +
                       " leaked " + std::to_string(r.leaked_bytes) + " in " +
                       std::to_string(r.leaked_allocations) + ", released " +
                       std::to_string(r.released));
  });
  tr.logs = calls.logs;
  tr.logits = calls.logits;
  tr.elsewhere = calls.elsewhere;
  tr.log_lines = calls.log_lines;
  tr.progress_calls = calls.progress_calls;
  tr.progress_backwards = calls.progress_backwards;
  tr.loads_finished = calls.loads_finished;
  tr.token_calls = calls.token_calls;
  return tr;
}

void Here(const std::function<void()> &f) { f(); }

void ExpectSame(const Trace &got, const Trace &alone) {
  EXPECT_EQ(got.steps, alone.steps);
  EXPECT_EQ(got.logs, alone.logs);
  EXPECT_TRUE(got.logits == alone.logits) << "logits differ";
  EXPECT_EQ(got.elsewhere, 0) << "callbacks ran on another thread";
  EXPECT_EQ(got.progress_backwards, 0);
  EXPECT_EQ(got.loads_finished, alone.loads_finished);
  EXPECT_EQ(got.token_calls, alone.token_calls);
}

// The checkpoints the model tests share: three each, per thread, of two sizes.
struct Models {
  std::vector<Plan> plans;
  atlas_tokenizer *tok = nullptr;
  Models() {
    for (int i = 0; i < 3; ++i) {
      Plan p;
      std::string tag = std::to_string(i);
      p.first = Checkpoint("threads_a" + tag, i % 2 ? "small" : "tiny", 10 + i,
                           kVocab);
      p.second = Checkpoint("threads_b" + tag, i % 2 ? "tiny" : "small", 20 + i,
                            kVocab);
      std::string third = Checkpoint("threads_c" + tag, "tiny", 30 + i, kVocab);
      p.third_config = ReadFile(third + "/config.json");
      p.third_weights = ReadFile(third + "/model.safetensors");
      p.prompt0 = 1 + 100 * (uint32_t)i;
      plans.push_back(p);
    }
    tok = LoadTokenizer("gpt2");
  }
  ~Models() { atlas_tokenizer_free(tok); }
};

// Three models, each on its own thread, through open, generation (with one
// shared tokenizer streaming their text), reports, two swaps and close, all
// at once: every call returns what it returns on one thread, every log line
// is the same, and every callback runs on the thread that made the call.
TEST(ThreadsApi, ModelsOnSeparateThreadsMatchOneAfterTheOther) {
  Models models;
  ASSERT_NE(models.tok, nullptr);
  std::vector<Trace> alone;
  for (const Plan &p : models.plans) alone.push_back(Life(p, models.tok, Here));
  for (const Trace &t : alone) {
    // The comparisons below are not empty.
    ASSERT_EQ(t.steps.size(), 19u);
    EXPECT_EQ(t.steps.back().rfind("close: ok leaked 0 in 0", 0), 0u)
        << t.steps.back();
    EXPECT_GT(t.log_lines, 0);
    EXPECT_GT(t.progress_calls, 0);
    // open, swap, swap: three loads, each ending at its total.
    EXPECT_EQ(t.loads_finished.size(), 3u);
    EXPECT_EQ(t.progress_backwards, 0);
    EXPECT_GT(t.token_calls, 0);
    EXPECT_FALSE(t.logits.empty());
    EXPECT_EQ(t.elsewhere, 0);
  }
  EXPECT_NE(alone[0].logits, alone[1].logits);
  for (int round = 0; round < 2; ++round) {
    std::vector<Trace> got(models.plans.size());
    RunTogether((int)models.plans.size(), [&](int i) {
      got[i] = Life(models.plans[i], models.tok, Here);
    });
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("model " + std::to_string(i));
      ExpectSame(got[i], alone[i]);
    }
  }
}

// One model used by one thread at a time, but a different thread for every
// call (each joined before the next starts): the same results, and the
// callbacks of each call on the thread that made it.
TEST(ThreadsApi, AModelMayMoveBetweenThreads) {
  Models models;
  ASSERT_NE(models.tok, nullptr);
  const Plan &p = models.plans[1];
  Trace alone = Life(p, models.tok, Here);
  int calls = 0;
  Trace moved = Life(p, models.tok, [&](const std::function<void()> &f) {
    std::thread t(f);
    t.join();
    calls++;
  });
  EXPECT_EQ(calls, 7);
  ExpectSame(moved, alone);
}

// The owner of one model reads its report and info over and over while
// other threads open, run, swap and close their own: the reports never
// change.
TEST(ThreadsApi, ReportsFromTheOwningThreadWhileOtherModelsWork) {
  Models models;
  ASSERT_NE(models.tok, nullptr);
  atlas_open_options o;
  atlas_open_options_init(&o);
  o.backend = "host";
  atlas_model *mine = nullptr;
  ASSERT_OK(atlas_open(models.plans[0].first.c_str(), &o, &mine));
  Trace before;
  Report(mine, &before);
  ASSERT_EQ(before.steps.size(), 3u);
  std::vector<Trace> alone;
  for (size_t i = 1; i < models.plans.size(); ++i) {
    alone.push_back(Life(models.plans[i], models.tok, Here));
  }
  std::vector<Trace> got(alone.size());
  int differing = 0;
  RunTogether((int)alone.size() + 1, [&](int i) {
    if (i == 0) {
      for (int k = 0; k < 20; ++k) {
        Trace now;
        Report(mine, &now);
        differing += now.steps != before.steps;
      }
    } else {
      got[i - 1] = Life(models.plans[i], models.tok, Here);
    }
  });
  EXPECT_EQ(differing, 0);
  for (size_t i = 0; i < got.size(); ++i) ExpectSame(got[i], alone[i]);
  atlas_close_report r;
  ASSERT_OK(atlas_close(mine, &r));
  EXPECT_EQ(r.leaked_bytes, 0u);
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  g_files = atlas_test::ParseReferenceArgs(argc, argv);
  if (g_files.corpus.empty() || g_files.tokenizer.count("gpt2") == 0) {
    fprintf(stderr,
            "usage: threads_api_test --corpus FILE gpt2=PATH "
            "--model=NAME FILES...\n");
    return 2;
  }
  json_error_t err;
  json_t *corpus = json_load_file(g_files.corpus.c_str(), JSON_ALLOW_NUL, &err);
  if (corpus == nullptr) {
    fprintf(stderr, "%s: %s\n", g_files.corpus.c_str(), err.text);
    return 2;
  }
  for (size_t i = 0; i < json_array_size(corpus); ++i) {
    json_t *t = json_array_get(corpus, i);
    g_corpus.emplace_back(json_string_value(t), json_string_length(t));
  }
  json_decref(corpus);
  return RUN_ALL_TESTS();
}
