// The public C API's models (atlas/atlas.h): what a swap says and frees, what
// generation hands to its callbacks, the budget at open, load progress and
// the SVG report, through the calls an embedder makes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <jansson.h>

#include "atlas/atlas.h"
#include "atlas/atlas_testing.h"
#include "atlas/runtime/model/model.h"
#include "tests/api/api_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

std::string g_tokenizer;  // --tokenizer: a tokenizer.json of 665 ids
std::string g_llama3;     // Llama 3's tokenizer.json (a data argument)

using atlas_test::Checkpoint;
using atlas_test::ReadFile;

uint64_t Required(const std::string &dir) {
  atlas_model_spec s{};
  s.dir = dir.c_str();
  s.backend = "host";
  uint64_t need = 0;
  EXPECT_OK(atlas_model_required_bytes(&s, &need));
  return need;
}

atlas_open_options HostOptions() {
  atlas_open_options o;
  atlas_open_options_init(&o);
  o.backend = "host";
  return o;
}

// A budget where only one of the two fits: the swap tears the old one down
// first.
uint64_t OneAtATime(const std::string &a, const std::string &b) {
  uint64_t na = Required(a), nb = Required(b);
  return std::max(na, nb) + std::min(na, nb) / 2;
}

// atlas_swap(..., NULL options) takes the current model's options: its
// backend name is the model's own string, freed with it when only one fits.
// (ASan, CI's second run, sees a use after free if the swap reads it late.)
TEST(ModelApi, SwapWithTheCurrentOptionsWhenOnlyOneFits) {
  std::string a = Checkpoint("api_swap_a", "tiny", 1);
  std::string b = Checkpoint("api_swap_b", "small", 2);
  atlas_open_options o = HostOptions();
  o.device_budget_bytes = OneAtATime(a, b);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  atlas_swap_info info;
  ASSERT_OK(atlas_swap(&m, b.c_str(), nullptr, &info));
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_SWAPPED);
  EXPECT_FALSE(info.side_by_side);
  atlas_model_info mi;
  mi.struct_size = sizeof(mi);
  ASSERT_OK(atlas_model_info_get(m, &mi));
  EXPECT_STREQ(mi.backend, "host");
  EXPECT_EQ(mi.vocab_size, 256u);  // the small preset: the new model serves
  // And back, naming the directory by the model's own string.
  std::string name = mi.name;
  ASSERT_OK(atlas_swap(&m, a.c_str(), nullptr, &info));
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_SWAPPED);
  atlas_close_report r;
  ASSERT_OK(atlas_close(m, &r));
  EXPECT_EQ(r.leaked_bytes, 0u);
  EXPECT_EQ(name, b);
}

// Failures before the swap starts leave the old model serving: the outcome
// says REFUSED, never the zero value SWAPPED.
TEST(ModelApi, EarlySwapFailuresSayRefused) {
  std::string a = Checkpoint("api_refused_a", "tiny", 1);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  atlas_model *before = m;
  atlas_swap_info info;

  atlas_open_options bad = HostOptions();
  bad.backend = "tpu";
  EXPECT_STATUS(atlas_swap(&m, a.c_str(), &bad, &info), ATLAS_STATUS_NOT_FOUND,
                "backend");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);

  bad = HostOptions();
  bad.kv_cache_type = "f8";
  EXPECT_STATUS(atlas_swap(&m, a.c_str(), &bad, &info),
                ATLAS_STATUS_INVALID_ARGUMENT, "kv_cache_type");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);

  EXPECT_STATUS(atlas_swap(&m, nullptr, &o, &info),
                ATLAS_STATUS_INVALID_ARGUMENT, "NULL");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);

  EXPECT_STATUS(atlas_swap_memory(&m, nullptr, "{}", 2, "", 0, &o, &info),
                ATLAS_STATUS_INVALID_ARGUMENT, "name");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);

  std::string missing = a + "/nowhere";
  EXPECT_STATUS(atlas_swap(&m, missing.c_str(), &o, &info),
                ATLAS_STATUS_NOT_FOUND, "nowhere");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);
  EXPECT_EQ(info.needed_bytes, 0u);

  EXPECT_EQ(m, before);
  ASSERT_OK(atlas_close(m, nullptr));
}

// The one outcome ATLAS_FAULT cannot reach (a restore ignores it): the new
// model fails and so does the restore of the old one. *model is NULL and
// the outcome and the status both say no model is loaded; side by side
// there is nothing to restore, so the same hook keeps the old model.
TEST(ModelApi, TestingHookEndsASwapWithNoModel) {
  std::string a = Checkpoint("api_lost_a", "tiny", 1);
  std::string b = Checkpoint("api_lost_b", "small", 2);
  atlas_open_options o = HostOptions();
  o.device_budget_bytes = OneAtATime(a, b);
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  atlas_swap_info info;
  EXPECT_STATUS(
      atlas_testing_swap(&m, b.c_str(), &o,
                         ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE, 1, &info),
      ATLAS_STATUS_ABORTED, "no model is loaded");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_LOST);
  EXPECT_FALSE(info.side_by_side);
  EXPECT_EQ(m, nullptr);

  atlas_open_options wide = HostOptions();
  ASSERT_OK(atlas_open(a.c_str(), &wide, &m));
  atlas_model *before = m;
  EXPECT_STATUS(
      atlas_testing_swap(&m, b.c_str(), &wide,
                         ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE, 1, &info),
      ATLAS_STATUS_ABORTED, "never unloaded");
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_KEPT);
  EXPECT_EQ(m, before);
  atlas_close_report r;
  ASSERT_OK(atlas_close(m, &r));
  EXPECT_EQ(r.leaked_bytes, 0u);
}

// vocab_needed: a checkpoint whose vocabulary lacks the caller's ids is
// refused at open and at a swap before anything changes (the swap used to
// happen, leaving a model that could not read the prompt), naming the id
// and the vocabulary; the old model serves on, giving the same tokens.
TEST(ModelApi, SwapRefusesAModelWhoseVocabularyLacksThePromptIds) {
  std::string small = Checkpoint("api_vocab_small", "small", 2);  // 256 ids
  std::string tiny = Checkpoint("api_vocab_tiny", "tiny", 1);     // 64 ids
  atlas_open_options o = HostOptions();
  o.vocab_needed = 201;  // the prompt below holds id 200
  atlas_model *m = nullptr;
  EXPECT_STATUS(atlas_open(tiny.c_str(), &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                "token id 200 is outside the vocabulary of " + tiny +
                    ": 64 ids, 0 to 63 (config.json vocab_size)");
  EXPECT_EQ(m, nullptr);
  ASSERT_OK(atlas_open(small.c_str(), &o, &m));
  const uint32_t prompt[] = {1, 2, 200};
  atlas_generate_options go;
  atlas_generate_options_init(&go);
  go.max_new_tokens = 3;
  uint32_t before[3], after[3];
  size_t n_before = 0, n_after = 0;
  ASSERT_OK(atlas_generate(m, prompt, 3, &go, before, &n_before));
  atlas_model *serving = m;
  for (int path = 0; path < 2; ++path) {
    SCOPED_TRACE(path ? "only one fits" : "both fit");
    atlas_open_options next = o;
    if (path) next.device_budget_bytes = OneAtATime(small, tiny);
    atlas_swap_info info;
    EXPECT_STATUS(atlas_swap(&m, tiny.c_str(), &next, &info),
                  ATLAS_STATUS_INVALID_ARGUMENT, "token id 200");
    EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);
    EXPECT_EQ(m, serving);
    // NULL options: the current model's, vocab_needed included.
    EXPECT_STATUS(atlas_swap(&m, tiny.c_str(), nullptr, &info),
                  ATLAS_STATUS_INVALID_ARGUMENT, "token id 200");
    EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_REFUSED);
    EXPECT_EQ(m, serving);
    ASSERT_OK(atlas_generate(m, prompt, 3, &go, after, &n_after));
    EXPECT_EQ(std::vector<uint32_t>(after, after + n_after),
              std::vector<uint32_t>(before, before + n_before));
  }
  o.vocab_needed = 64;  // ids up to 63: tiny knows them all
  atlas_swap_info info;
  ASSERT_OK(atlas_swap(&m, tiny.c_str(), &o, &info));
  EXPECT_EQ(info.outcome, ATLAS_SWAP_OUTCOME_SWAPPED);
  o.vocab_needed = -1;
  EXPECT_STATUS(atlas_swap(&m, small.c_str(), &o, &info),
                ATLAS_STATUS_INVALID_ARGUMENT, "vocab_needed (-1) is negative");
  atlas_close_report r;
  ASSERT_OK(atlas_close(m, &r));
  EXPECT_EQ(r.leaked_bytes, 0u);
}

// An options struct that skipped its init function is refused by name, not
// read as "all defaults"; kv_cache_type takes any case, as atlas.h says.
TEST(ModelApi, OptionsWithoutInitAreRefusedAndNamesTakeAnyCase) {
  std::string a = Checkpoint("api_sized", "tiny", 1);
  atlas_open_options o;
  memset(&o, 0, sizeof(o));
  o.backend = "host";
  atlas_model *m = nullptr;
  EXPECT_STATUS(atlas_open(a.c_str(), &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                "atlas_open_options.struct_size is 0");
  EXPECT_EQ(m, nullptr);
  o = HostOptions();
  o.kv_cache_type = "AUTO";
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  const uint32_t prompt[] = {1};
  uint32_t out[2];
  size_t n = 0;
  atlas_generate_options g;
  memset(&g, 0, sizeof(g));
  g.max_new_tokens = 2;
  EXPECT_STATUS(atlas_generate(m, prompt, 1, &g, out, &n),
                ATLAS_STATUS_INVALID_ARGUMENT,
                "atlas_generate_options.struct_size");
  atlas_report_options r;
  memset(&r, 0, sizeof(r));
  char *text = nullptr;
  EXPECT_STATUS(atlas_report(m, ATLAS_REPORT_TEXT, &r, &text),
                ATLAS_STATUS_INVALID_ARGUMENT,
                "atlas_report_options.struct_size");
  EXPECT_EQ(text, nullptr);
  ASSERT_OK(atlas_close(m, nullptr));
}

// atlas.h: the environment switches are read when the backend is made, and
// a malformed value fails the open naming the variable (ATLAS_DEBUG_SYNC=yes
// used to turn the switch on unseen).
TEST(ModelApi, MalformedEnvironmentSwitchesFailTheOpen) {
  std::string a = Checkpoint("api_env", "tiny", 1);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  const struct {
    const char *name, *value;
  } bad[] = {{"ATLAS_DEBUG_SYNC", "yes"},
             {"ATLAS_DEBUG_SYNC", "2"},
             {"ATLAS_REDZONE", "abc"},
             {"ATLAS_FAULT", "alloc"}};
  for (const auto &b : bad) {
    SCOPED_TRACE(std::string(b.name) + "=" + b.value);
    ASSERT_EQ(setenv(b.name, b.value, 1), 0);
    EXPECT_STATUS(atlas_open(a.c_str(), &o, &m), ATLAS_STATUS_INVALID_ARGUMENT,
                  b.name);
    EXPECT_EQ(m, nullptr);
    unsetenv(b.name);
  }
  for (const char *value : {"0", "1", ""}) {
    SCOPED_TRACE(std::string("ATLAS_DEBUG_SYNC=") + value);
    ASSERT_EQ(setenv("ATLAS_DEBUG_SYNC", value, 1), 0);
    ASSERT_OK(atlas_open(a.c_str(), &o, &m));
    ASSERT_OK(atlas_close(m, nullptr));
    unsetenv("ATLAS_DEBUG_SYNC");
  }
}

// device_budget_bytes holds at open, before anything is allocated, as it
// does at a swap.
TEST(ModelApi, OpenHonoursTheDeviceBudget) {
  std::string a = Checkpoint("api_budget", "tiny", 1);
  uint64_t need = Required(a);
  atlas_open_options o = HostOptions();
  o.device_budget_bytes = need - 1;
  atlas_model *m = nullptr;
  EXPECT_STATUS(atlas_open(a.c_str(), &o, &m), ATLAS_STATUS_RESOURCE_EXHAUSTED,
                "device budget");
  EXPECT_EQ(m, nullptr);
  o.device_budget_bytes = need;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  atlas_model_info mi;
  mi.struct_size = sizeof(mi);
  ASSERT_OK(atlas_model_info_get(m, &mi));
  EXPECT_LE(mi.live_bytes, need);
  ASSERT_OK(atlas_close(m, nullptr));
}

struct ProgressLog {
  std::vector<uint64_t> done, total;
};

void OnProgress(void *ctx, uint64_t done, uint64_t total) {
  auto *p = static_cast<ProgressLog *>(ctx);
  p->done.push_back(done);
  p->total.push_back(total);
}

// Progress climbs to its total, never past it, and ends there.
TEST(ModelApi, LoadProgressEndsExactlyAtItsTotal) {
  std::string a = Checkpoint("api_progress", "small", 4);
  for (int round = 0; round < 5; ++round) {
    ProgressLog log;
    atlas_open_options o = HostOptions();
    o.progress = OnProgress;
    o.progress_ctx = &log;
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_open(a.c_str(), &o, &m));
    ASSERT_FALSE(log.done.empty());
    for (size_t i = 0; i < log.done.size(); ++i) {
      EXPECT_EQ(log.total[i], log.total[0]) << "call " << i;
      EXPECT_LE(log.done[i], log.total[i]) << "call " << i;
      if (i > 0) {
        EXPECT_GE(log.done[i], log.done[i - 1]) << "call " << i;
      }
    }
    EXPECT_EQ(log.done.back(), log.total.back());
    ASSERT_OK(atlas_close(m, nullptr));
  }
}

struct Seen {
  std::vector<uint32_t> tokens;
  int text_calls = 0;
  bool stop_text = false;
};

bool OnToken(void *ctx, uint32_t token) {
  static_cast<Seen *>(ctx)->tokens.push_back(token);
  return true;
}

bool OnText(void *ctx, const char *, size_t) {
  auto *s = static_cast<Seen *>(ctx);
  s->text_calls++;
  return !s->stop_text;
}

// Sampling options are checked whatever the temperature: greedy refuses
// the same out-of-range values sampling does.
TEST(ModelApi, GreedyRefusesOutOfRangeSamplingOptions) {
  std::string a = Checkpoint("api_greedy", "tiny", 1);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  const uint32_t prompt[] = {1, 2, 3};
  uint32_t out[4];
  size_t n = 0;
  struct Case {
    const char *name;
    void (*set)(atlas_generate_options *);
  } cases[] = {
      {"top_p", [](atlas_generate_options *g) { g->top_p = 0.0f; }},
      {"top_p", [](atlas_generate_options *g) { g->top_p = 1.5f; }},
      {"min_p", [](atlas_generate_options *g) { g->min_p = -0.1f; }},
      {"top_k", [](atlas_generate_options *g) { g->top_k = -1; }},
      {"temperature",
       [](atlas_generate_options *g) { g->temperature = -1.0f; }},
      {"repetition_penalty",
       [](atlas_generate_options *g) { g->repetition_penalty = 0.0f; }},
  };
  for (const Case &c : cases) {
    atlas_generate_options g;
    atlas_generate_options_init(&g);
    g.max_new_tokens = 4;
    c.set(&g);
    EXPECT_STATUS(atlas_generate(m, prompt, 3, &g, out, &n),
                  ATLAS_STATUS_INVALID_ARGUMENT, c.name);
    EXPECT_EQ(n, 0u);
  }
  ASSERT_OK(atlas_close(m, nullptr));
}

// Every token in out_tokens reaches on_token: the EOS that ends generation,
// and the token whose text on_text declined.
TEST(ModelApi, OnTokenSeesEveryTokenInTheOutput) {
  std::string a = Checkpoint("api_ontoken", "tiny", 5, 665);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  const uint32_t prompt[] = {5, 6, 7};
  uint32_t free_run[8];
  size_t n = 0;
  atlas_generate_options g;
  atlas_generate_options_init(&g);
  g.max_new_tokens = 8;
  g.ignore_eos = true;
  ASSERT_OK(atlas_generate(m, prompt, 3, &g, free_run, &n));
  ASSERT_EQ(n, 8u);
  ASSERT_OK(atlas_close(m, nullptr));

  // The third token generated becomes the EOS id.
  uint32_t eos = free_run[2];
  size_t first = 0;
  while (free_run[first] != eos) ++first;
  {
    std::ofstream gen(a + "/generation_config.json");
    gen << "{\"eos_token_id\": " << eos << "}";
  }
  ASSERT_OK(atlas_open(a.c_str(), &o, &m));
  Seen seen;
  uint32_t out[8];
  atlas_generate_options_init(&g);
  g.max_new_tokens = 8;
  g.on_token = OnToken;
  g.ctx = &seen;
  ASSERT_OK(atlas_generate(m, prompt, 3, &g, out, &n));
  ASSERT_EQ(n, first + 1);
  EXPECT_EQ(out[n - 1], eos);
  EXPECT_EQ(seen.tokens, std::vector<uint32_t>(out, out + n));

  // on_text declining the first text: generation stops at that token, and
  // on_token saw it.
  atlas_tokenizer *tok = nullptr;
  ASSERT_OK(atlas_tokenizer_load(g_tokenizer.c_str(), &tok));
  seen = Seen{};
  seen.stop_text = true;
  g.ignore_eos = true;
  g.tokenizer = tok;
  g.on_text = OnText;
  ASSERT_OK(atlas_generate(m, prompt, 3, &g, out, &n));
  ASSERT_GE(n, 1u);
  EXPECT_EQ(seen.text_calls, 1);
  EXPECT_EQ(seen.tokens, std::vector<uint32_t>(out, out + n));
  atlas_tokenizer_free(tok);
  ASSERT_OK(atlas_close(m, nullptr));
}

// A checkpoint whose greedy output follows `chain`: after chain[i] comes
// chain[i + 1]. Every layer's weights are zero, so the residual stream stays
// the token's one-hot embedding (norms are 1), and lm_head maps each chain
// token's dimension to its successor. Text of exact ids, without training.
std::string ChainCheckpoint(const std::string &leaf, int64_t vocab,
                            const std::vector<uint32_t> &chain) {
  std::string dir = Checkpoint(leaf, "tiny", 1, vocab);
  std::string path = dir + "/model.safetensors";
  std::string bytes = ReadFile(path);
  uint64_t n = 0;
  memcpy(&n, bytes.data(), 8);
  json_error_t err;
  json_t *header = json_loadb(bytes.data() + 8, n, 0, &err);
  EXPECT_NE(header, nullptr) << err.text;
  if (header == nullptr) return dir;
  json_t *embed = json_object_get(header, "model.embed_tokens.weight");
  int64_t hidden =
      json_integer_value(json_array_get(json_object_get(embed, "shape"), 1));
  std::map<uint32_t, int64_t> dim;
  for (uint32_t t : chain) dim.emplace(t, (int64_t)dim.size());
  EXPECT_LE((int64_t)dim.size(), hidden);
  const char *name;
  json_t *info;
  json_object_foreach(header, name, info) {
    if (strcmp(name, "__metadata__") == 0) continue;
    EXPECT_STREQ(json_string_value(json_object_get(info, "dtype")), "F32")
        << name;
    json_t *off = json_object_get(info, "data_offsets");
    size_t begin = 8 + n + (size_t)json_integer_value(json_array_get(off, 0));
    size_t end = 8 + n + (size_t)json_integer_value(json_array_get(off, 1));
    std::vector<float> v((end - begin) / 4, 0.0f);
    std::string key = name;
    if (key.size() > 11 &&
        key.compare(key.size() - 11, 11, "norm.weight") == 0) {
      std::fill(v.begin(), v.end(), 1.0f);
    } else if (key == "model.embed_tokens.weight") {
      for (const auto &[t, d] : dim) v[(size_t)(t * hidden + d)] = 1.0f;
    } else if (key == "lm_head.weight") {
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        v[(size_t)(chain[i + 1] * hidden + dim[chain[i]])] = 50.0f;
      }
    }
    memcpy(&bytes[begin], v.data(), end - begin);
  }
  EXPECT_NE(json_object_get(header, "lm_head.weight"), nullptr)
      << "tied embeddings";
  json_decref(header);
  std::ofstream(path, std::ios::binary) << bytes;
  return dir;
}

struct TextSeen {
  std::string text;
};

bool CollectText(void *ctx, const char *text, size_t len) {
  static_cast<TextSeen *>(ctx)->text.append(text, len);
  return true;
}

// Llama 3 ids: "Hello", " " with the first byte of U+20AC, its other two
// bytes, " world", "\n" (the chain starts from '"', id 1).
const std::vector<uint32_t> kEuroChain = {1, 9906, 2928, 224, 105, 1917, 198};

// Generation that ends inside a character passes on the whole characters
// before it (the decode of the ids, less its final U+FFFD), nothing else.
TEST(ModelApi, TextUpToAnIncompleteCharacterAtTheEnd) {
  std::string dir = ChainCheckpoint("api_chain_end", 128256, kEuroChain);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(dir.c_str(), &o, &m));
  atlas_tokenizer *tok = nullptr;
  ASSERT_OK(atlas_tokenizer_load(g_llama3.c_str(), &tok));
  const uint32_t prompt[] = {1};
  const std::pair<size_t, const char *> cases[] = {
      {1, "Hello"},
      {2, "Hello "},
      {3, "Hello "},
      {4, "Hello \xE2\x82\xAC"},
      {6, "Hello \xE2\x82\xAC world\n"}};
  for (const auto &[steps, want] : cases) {
    SCOPED_TRACE(steps);
    uint32_t out[8];
    size_t n = 0;
    TextSeen seen;
    atlas_generate_options g;
    atlas_generate_options_init(&g);
    g.max_new_tokens = steps;
    g.ignore_eos = true;
    g.tokenizer = tok;
    g.on_text = CollectText;
    g.ctx = &seen;
    ASSERT_OK(atlas_generate(m, prompt, 1, &g, out, &n));
    ASSERT_EQ(n, steps);
    EXPECT_EQ(std::vector<uint32_t>(out, out + n),
              std::vector<uint32_t>(kEuroChain.begin() + 1,
                                    kEuroChain.begin() + 1 + steps));
    EXPECT_EQ(seen.text, want);
  }
  atlas_tokenizer_free(tok);
  ASSERT_OK(atlas_close(m, nullptr));
}

// A stop string in text the stream holds back (whole characters before an
// incomplete one) ends generation at the token that completed it, and its
// tokens are the last in out_tokens.
TEST(ModelApi, StopStringBeforeAnIncompleteCharacterStopsAtOnce) {
  std::string dir = ChainCheckpoint("api_chain_stop", 128256, kEuroChain);
  atlas_open_options o = HostOptions();
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_open(dir.c_str(), &o, &m));
  atlas_tokenizer *tok = nullptr;
  ASSERT_OK(atlas_tokenizer_load(g_llama3.c_str(), &tok));
  const uint32_t prompt[] = {1};
  const char *stops[] = {" "};
  uint32_t out[8];
  size_t n = 0;
  TextSeen seen;
  atlas_generate_options g;
  atlas_generate_options_init(&g);
  g.max_new_tokens = 6;
  g.ignore_eos = true;
  g.tokenizer = tok;
  g.on_text = CollectText;
  g.ctx = &seen;
  g.stop_strings = stops;
  g.stop_count = 1;
  ASSERT_OK(atlas_generate(m, prompt, 1, &g, out, &n));
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(seen.text, "Hello");
  atlas_tokenizer_free(tok);
  ASSERT_OK(atlas_close(m, nullptr));
}

// Whether `s` is UTF-8 that XML 1.0 can hold as character data.
bool XmlCharacters(const std::string &s, std::string *why) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80         ? 1
                 : (c >> 5) == 6  ? 2
                 : (c >> 4) == 14 ? 3
                 : (c >> 3) == 30 ? 4
                                  : 0;
    if (len == 0 || i + len > s.size()) {
      *why = "byte " + std::to_string(i) + " starts no UTF-8 character";
      return false;
    }
    for (size_t k = 1; k < len; ++k) {
      if (((unsigned char)s[i + k] >> 6) != 2) {
        *why = "byte " + std::to_string(i) + ": a broken UTF-8 sequence";
        return false;
      }
    }
    if (len == 1 && c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      *why = "byte " + std::to_string(i) + " is a control character";
      return false;
    }
    i += len;
  }
  return true;
}

// The SVG's title holds the model's name whole, whatever its bytes: long
// names of multi-byte characters, control characters, bytes that are not
// UTF-8.
TEST(ModelApi, SvgReportIsWellFormedForAnyModelName) {
  std::string a = Checkpoint("api_svg", "tiny", 1);
  std::string config = ReadFile(a + "/config.json");
  std::string weights = ReadFile(a + "/model.safetensors");
  std::string names[] = {
      std::string(300, 'x') +
          [] {
            std::string s;
            for (int i = 0; i < 200; ++i) s += "\xc3\xa9";  // é
            return s;
          }(),
      std::string("bell\a tab\t <&\"> \xff\xfe half \xe2\x82"),
  };
  for (const std::string &name : names) {
    atlas_open_options o = HostOptions();
    atlas_model *m = nullptr;
    ASSERT_OK(atlas_open_memory(name.c_str(), config.data(), config.size(),
                                weights.data(), weights.size(), &o, &m));
    char *svg = nullptr;
    ASSERT_OK(atlas_report(m, ATLAS_REPORT_SVG, nullptr, &svg));
    std::string text(svg);
    atlas_free(svg);
    std::string why;
    EXPECT_TRUE(XmlCharacters(text, &why)) << why;
    EXPECT_NE(text.find("</svg>"), std::string::npos);
    if (name[0] == 'x') {
      // All 200 characters survive: nothing cut the title short.
      std::string tail;
      for (int i = 0; i < 200; ++i) tail += "\xc3\xa9";
      EXPECT_NE(text.find(tail + " on host"), std::string::npos);
    } else {
      EXPECT_NE(text.find("&lt;&amp;&quot;&gt;"), std::string::npos);
    }
    ASSERT_OK(atlas_close(m, nullptr));
  }
}

}  // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--tokenizer=", 12) == 0) g_tokenizer = argv[i] + 12;
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.find("tokenizer_llama3") != std::string::npos && a.size() > 15 &&
        a.compare(a.size() - 15, 15, "/tokenizer.json") == 0) {
      g_llama3 = a;
    }
  }
  if (g_tokenizer.empty() || g_llama3.empty()) {
    fprintf(stderr, "usage: model_api_test --tokenizer=PATH LLAMA3_FILES...\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
