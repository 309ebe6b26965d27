// The sampler against transformers' definitions: exact distributions from
// reference.json (written by gen_reference.py: transformers' logits processors,
// or a transcription of them), and draws whose frequencies match those
// distributions within a chi-square bound at a fixed seed.
#include "atlas/runtime/sampling/sampler.h"

#include <gtest/gtest.h>
#include <jansson.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Case {
  std::string name;
  std::vector<float> logits;
  std::vector<int32_t> history;
  atlas_sampler_config config;
  std::vector<double> probs;
};

std::vector<Case> LoadCases() {
  json_error_t err;
  json_t *root = json_load_file("tests/sampling/reference.json", 0, &err);
  EXPECT_NE(root, nullptr) << err.text;
  std::vector<Case> out;
  if (!root) return out;
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(root, "cases"), i, c) {
    Case k;
    k.name = json_string_value(json_object_get(c, "name"));
    size_t j;
    json_t *v;
    json_array_foreach(json_object_get(c, "logits"), j, v)
        k.logits.push_back((float)json_number_value(v));
    json_array_foreach(json_object_get(c, "history"), j, v)
        k.history.push_back((int32_t)json_integer_value(v));
    json_array_foreach(json_object_get(c, "probs"), j, v)
        k.probs.push_back(json_number_value(v));
    k.config = atlas_sampler_config_default();
    json_t *o = json_object_get(c, "options");
    if (json_t *x = json_object_get(o, "temperature"))
      k.config.temperature = (float)json_number_value(x);
    if (json_t *x = json_object_get(o, "top_k"))
      k.config.top_k = (int32_t)json_integer_value(x);
    if (json_t *x = json_object_get(o, "top_p"))
      k.config.top_p = (float)json_number_value(x);
    if (json_t *x = json_object_get(o, "min_p"))
      k.config.min_p = (float)json_number_value(x);
    if (json_t *x = json_object_get(o, "repetition_penalty"))
      k.config.repetition_penalty = (float)json_number_value(x);
    out.push_back(k);
  }
  json_decref(root);
  return out;
}

struct Sampler {
  atlas_sampler s;
  explicit Sampler(const atlas_sampler_config &c, size_t vocab) {
    atlas_status st = atlas_sampler_init(&s, &c, vocab);
    EXPECT_EQ(st, ATLAS_OK) << atlas_status_message(st);
    atlas_status_free(st);
  }
  ~Sampler() { atlas_sampler_deinit(&s); }
  int32_t Draw(const std::vector<float> &logits,
               const std::vector<int32_t> &hist) {
    int32_t t = -1;
    atlas_status st = atlas_sampler_sample(&s, logits.data(), logits.size(),
                                           hist.data(), hist.size(), &t);
    EXPECT_EQ(st, ATLAS_OK) << atlas_status_message(st);
    atlas_status_free(st);
    return t;
  }
  std::vector<double> Dist(const std::vector<float> &logits,
                           const std::vector<int32_t> &hist) {
    std::vector<double> p(logits.size());
    atlas_status st = atlas_sampler_distribution(
        &s, logits.data(), logits.size(), hist.data(), hist.size(), p.data());
    EXPECT_EQ(st, ATLAS_OK) << atlas_status_message(st);
    atlas_status_free(st);
    return p;
  }
};

// Chi-square critical values at p = 0.001 for 1..10 degrees of freedom.
double ChiSquareCritical(size_t dof) {
  static const double kTable[] = {10.83, 13.82, 16.27, 18.47, 20.52,
                                  22.46, 24.32, 26.12, 27.88, 29.59};
  return kTable[dof - 1];
}

TEST(Sampler, DistributionsMatchReference) {
  std::vector<Case> cases = LoadCases();
  ASSERT_GE(cases.size(), 10u);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    Sampler s(c.config, c.logits.size());
    std::vector<double> p = s.Dist(c.logits, c.history);
    ASSERT_EQ(p.size(), c.probs.size());
    for (size_t i = 0; i < p.size(); ++i) {
      EXPECT_NEAR(p[i], c.probs[i], 2e-6) << "id " << i;
      // Exclusion sets are exact: removed in the reference means never drawn.
      EXPECT_EQ(p[i] == 0.0, c.probs[i] == 0.0) << "id " << i;
    }
  }
}

TEST(Sampler, DrawFrequenciesFollowTheDistribution) {
  for (const Case &c : LoadCases()) {
    SCOPED_TRACE(c.name);
    Sampler s(c.config, c.logits.size());
    const int n = 40000;
    std::vector<int> count(c.logits.size());
    for (int i = 0; i < n; ++i) {
      int32_t t = s.Draw(c.logits, c.history);
      ASSERT_GE(t, 0);
      ASSERT_LT((size_t)t, c.logits.size());
      count[t]++;
    }
    double chi2 = 0;
    size_t dof = 0;
    for (size_t i = 0; i < count.size(); ++i) {
      if (c.probs[i] == 0) {
        EXPECT_EQ(count[i], 0) << "id " << i << " is excluded but was drawn";
        continue;
      }
      const double e = c.probs[i] * n;
      chi2 += (count[i] - e) * (count[i] - e) / e;
      ++dof;
    }
    if (dof >= 2) {
      EXPECT_LT(chi2, ChiSquareCritical(dof - 1));
    }
  }
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin((float)i) * 2;
  atlas_sampler_config c = atlas_sampler_config_default();
  c.seed = 1234;
  c.top_k = 40;
  c.top_p = 0.95f;
  Sampler a(c, logits.size()), b(c, logits.size());
  c.seed = 1235;
  Sampler other(c, logits.size());
  std::vector<int32_t> sa, sb, so;
  for (int i = 0; i < 500; ++i) {
    sa.push_back(a.Draw(logits, sa));
    sb.push_back(b.Draw(logits, sb));
    so.push_back(other.Draw(logits, so));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, so);
  // Reseeding restarts the sequence.
  atlas_sampler_reseed(&a.s, 1234);
  std::vector<int32_t> again;
  for (int i = 0; i < 500; ++i) again.push_back(a.Draw(logits, again));
  EXPECT_EQ(again, sa);
}

TEST(Sampler, TemperatureZeroIsArgmaxFirstOnTies) {
  atlas_sampler_config c = atlas_sampler_config_default();
  c.temperature = 0;
  Sampler s(c, 5);
  EXPECT_EQ(s.Draw({0.f, 3.f, 1.f, 3.f, -2.f}, {}), 1);
  // The repetition penalty still applies to greedy (it is a processor, not a
  // warper).
  c.repetition_penalty = 2.0f;
  Sampler p(c, 5);
  EXPECT_EQ(p.Draw({0.f, 3.f, 1.f, 2.f, -2.f}, {1}), 3);
  std::vector<double> d = p.Dist({0.f, 3.f, 1.f, 2.f, -2.f}, {1});
  EXPECT_EQ(d[3], 1.0);
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  const std::vector<float> logits = {0.f, 1.f};
  for (float t : {0.5f, 1.0f, 2.0f}) {
    atlas_sampler_config c = atlas_sampler_config_default();
    c.temperature = t;
    Sampler s(c, 2);
    std::vector<double> p = s.Dist(logits, {});
    // p1/p0 = exp((1 - 0) / T)
    EXPECT_NEAR(p[1] / p[0], std::exp(1.0 / t), 1e-9);
  }
}

TEST(Sampler, TopKNeverEmitsBeyondK) {
  std::vector<float> logits(100);
  for (size_t i = 0; i < logits.size(); ++i)
    logits[i] = (float)i * 0.01f;  // distinct, nearly flat
  atlas_sampler_config c = atlas_sampler_config_default();
  c.top_k = 7;
  c.seed = 9;
  Sampler s(c, logits.size());
  std::vector<int> seen(logits.size());
  for (int i = 0; i < 20000; ++i) seen[s.Draw(logits, {})]++;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i >= 93) {
      EXPECT_GT(seen[i], 0) << i;
    } else {
      EXPECT_EQ(seen[i], 0) << i;
    }
  }
}

// Large vocabularies with ties: the kept set and the probabilities follow the
// definition (computed here with a full sort) for small and large k, with and
// without top-p.
TEST(Sampler, TopKOnALargeVocabularyFollowsTheDefinition) {
  const size_t v = 5000;
  std::vector<float> logits(v);
  uint64_t x = 12345;
  for (size_t i = 0; i < v; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    logits[i] = (float)((x >> 40) % 200) / 20.0f;  // many ties
  }
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  for (int k : {1, 7, 100, 4999, 5000, 6000}) {
    for (float top_p : {1.0f, 0.5f}) {
      SCOPED_TRACE("k=" + std::to_string(k) +
                   " top_p=" + std::to_string(top_p));
      atlas_sampler_config c = atlas_sampler_config_default();
      c.top_k = k;
      c.top_p = top_p;
      Sampler s(c, v);
      std::vector<double> p = s.Dist(logits, {});
      const float kth = sorted[std::min<size_t>((size_t)k, v) - 1];
      // Expected: softmax over logits >= kth, then top-p on that.
      std::vector<double> e(v, 0.0);
      double mx = sorted[0], sum = 0;
      for (size_t i = 0; i < v; ++i) {
        if (logits[i] >= kth) sum += (e[i] = std::exp((double)logits[i] - mx));
      }
      for (double &q : e) q /= sum;
      if (top_p < 1.0f) {
        std::vector<size_t> order(v);
        for (size_t i = 0; i < v; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
          return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
        });
        double cum = 0, kept = 0;
        std::vector<bool> remove(v, false);
        for (size_t r = v; r-- > 1;) {  // ascending walk
          cum += e[order[r]];
          if (cum <= 1.0 - (double)top_p)
            remove[order[r]] = true;
          else
            break;
        }
        for (size_t i = 0; i < v; ++i)
          if (!remove[i]) kept += e[i];
        for (size_t i = 0; i < v; ++i) e[i] = remove[i] ? 0 : e[i] / kept;
      }
      size_t nonzero = 0;
      for (size_t i = 0; i < v; ++i) {
        ASSERT_NEAR(p[i], e[i], 1e-9) << "id " << i;
        nonzero += p[i] > 0;
      }
      if (top_p == 1.0f) {
        EXPECT_GE(nonzero, std::min<size_t>((size_t)k, v));
      }
    }
  }
}

// One penalised id among equals: its probability ratio to an unpenalised one is
// exp(l / theta - l); the drawn count is binomial around it.
TEST(Sampler, RepetitionPenaltyLowersFrequencyByPredictedRatio) {
  const float l = 1.0f;
  const float theta = 1.8f;
  const std::vector<float> logits = {l, l, l, l};
  atlas_sampler_config c = atlas_sampler_config_default();
  c.repetition_penalty = theta;
  c.seed = 77;
  Sampler s(c, 4);
  const double w = std::exp((double)l / theta - l);  // relative weight of id 0
  const double p0 = w / (w + 3);
  const int n = 60000;
  int k = 0;
  for (int i = 0; i < n; ++i) k += s.Draw(logits, {0, 0}) == 0;
  const double sd = std::sqrt(n * p0 * (1 - p0));
  EXPECT_NEAR(k, n * p0, 4 * sd);
  // Negative logits are multiplied: the penalised id gets rarer too.
  const std::vector<float> neg = {-1.f, -1.f};
  Sampler t(c, 2);
  std::vector<double> d = t.Dist(neg, {1});
  EXPECT_NEAR(d[1] / d[0], std::exp(-1.0 * theta + 1.0), 1e-6);
}

TEST(Sampler, RefusesBadOptionsByName) {
  struct Bad {
    const char *word;
    void (*set)(atlas_sampler_config *);
  } bad[] = {
      {"temperature", [](atlas_sampler_config *c) { c->temperature = -1; }},
      {"top_k", [](atlas_sampler_config *c) { c->top_k = -3; }},
      {"top_p", [](atlas_sampler_config *c) { c->top_p = 0; }},
      {"min_p", [](atlas_sampler_config *c) { c->min_p = 1.5f; }},
      {"repetition_penalty",
       [](atlas_sampler_config *c) { c->repetition_penalty = 0; }},
  };
  for (const Bad &b : bad) {
    atlas_sampler_config c = atlas_sampler_config_default();
    b.set(&c);
    atlas_sampler s;
    atlas_status st = atlas_sampler_init(&s, &c, 10);
    ASSERT_NE(st, ATLAS_OK);
    EXPECT_NE(std::string(atlas_status_message(st)).find(b.word),
              std::string::npos)
        << atlas_status_message(st);
    atlas_status_free(st);
    atlas_sampler_deinit(&s);
  }
  atlas_sampler_config c = atlas_sampler_config_default();
  Sampler s(c, 3);
  int32_t t;
  std::vector<float> two = {1.f, 2.f};
  atlas_status st = atlas_sampler_sample(&s.s, two.data(), 2, nullptr, 0, &t);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_status_free(st);
  std::vector<float> three = {1.f, 2.f, 3.f};
  int32_t hist[] = {5};
  st = atlas_sampler_sample(&s.s, three.data(), 3, hist, 1, &t);
  EXPECT_NE(std::string(atlas_status_message(st)).find("history[0] = 5"),
            std::string::npos);
  atlas_status_free(st);
  std::vector<float> nan = {1.f, NAN, 3.f};
  st = atlas_sampler_sample(&s.s, nan.data(), 3, nullptr, 0, &t);
  EXPECT_NE(std::string(atlas_status_message(st)).find("id 1 is NaN"),
            std::string::npos);
  atlas_status_free(st);
  std::vector<float> dead = {-INFINITY, -INFINITY, -INFINITY};
  st = atlas_sampler_sample(&s.s, dead.data(), 3, nullptr, 0, &t);
  EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
  atlas_status_free(st);
}

}  // namespace
