#include "atlas/runtime/sampling/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct atlas_sampler_cand {
  double logit;
  int32_t id;
};

atlas_sampler_config atlas_sampler_config_default(void) {
  atlas_sampler_config c;
  c.temperature = 1.0f;
  c.top_k = 0;
  c.top_p = 1.0f;
  c.min_p = 0.0f;
  c.repetition_penalty = 1.0f;
  c.seed = 0;
  return c;
}

atlas_status atlas_sampler_config_check(const atlas_sampler_config *c) {
  if (!(c->temperature >= 0.0f) || isinf(c->temperature)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "sampler: temperature must be a finite number >= "
                             "0 (0 = greedy), got %g",
                             (double)c->temperature);
  }
  if (c->top_k < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "sampler: top_k must be >= 0 (0 = off), got %d",
                             (int)c->top_k);
  }
  if (!(c->top_p > 0.0f && c->top_p <= 1.0f)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "sampler: top_p must be in (0, 1] (1 = off), got %g", (double)c->top_p);
  }
  if (!(c->min_p >= 0.0f && c->min_p <= 1.0f)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "sampler: min_p must be in [0, 1] (0 = off), got %g", (double)c->min_p);
  }
  if (!(c->repetition_penalty > 0.0f) || isinf(c->repetition_penalty)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "sampler: repetition_penalty must be a finite "
                             "number > 0 (1 = off), got %g",
                             (double)c->repetition_penalty);
  }
  return ATLAS_OK;
}

atlas_status atlas_sampler_init(atlas_sampler *sampler,
                                const atlas_sampler_config *config,
                                size_t vocab_size) {
  memset(sampler, 0, sizeof(*sampler));
  ATLAS_RETURN_IF_ERROR(atlas_sampler_config_check(config));
  if (vocab_size == 0 || vocab_size > (size_t)INT32_MAX) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "sampler: vocabulary size %zu is out of range (1..%d)", vocab_size,
        INT32_MAX);
  }
  sampler->config = *config;
  sampler->vocab_size = vocab_size;
  sampler->logits = malloc(vocab_size * sizeof(double));
  sampler->cands = malloc(vocab_size * sizeof(struct atlas_sampler_cand));
  sampler->seen = calloc(vocab_size, sizeof(uint32_t));
  if (!sampler->logits || !sampler->cands || !sampler->seen) {
    atlas_sampler_deinit(sampler);
    return atlas_status_make(
        ATLAS_STATUS_OUT_OF_MEMORY,
        "sampler: no memory for the scratch of a %zu-id vocabulary",
        vocab_size);
  }
  atlas_rng_seed(&sampler->rng, config->seed);
  return ATLAS_OK;
}

void atlas_sampler_deinit(atlas_sampler *sampler) {
  free(sampler->logits);
  free(sampler->cands);
  free(sampler->seen);
  memset(sampler, 0, sizeof(*sampler));
}

void atlas_sampler_reseed(atlas_sampler *sampler, uint64_t seed) {
  sampler->config.seed = seed;
  atlas_rng_seed(&sampler->rng, seed);
}

// Descending by logit; equal logits by ascending id, so the order (and with it
// every draw) is fully determined.
static int cand_desc(const void *a, const void *b) {
  const struct atlas_sampler_cand *x = a, *y = b;
  if (x->logit > y->logit) return -1;
  if (x->logit < y->logit) return 1;
  return (x->id > y->id) - (x->id < y->id);
}

// Reorders c[0..n) so that c[0..k) hold the k first candidates in
// cand_desc order (unsorted among themselves): quickselect, O(n) on average.
static void select_top(struct atlas_sampler_cand *c, size_t n, size_t k) {
  size_t lo = 0, hi = n;  // the k-th boundary lies in [lo, hi)
  while (hi - lo > 1) {
    // Median of three as the pivot, moved to the end.
    const size_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (cand_desc(&c[mid], &c[lo]) < 0) {
      struct atlas_sampler_cand t = c[mid];
      c[mid] = c[lo];
      c[lo] = t;
    }
    if (cand_desc(&c[last], &c[lo]) < 0) {
      struct atlas_sampler_cand t = c[last];
      c[last] = c[lo];
      c[lo] = t;
    }
    if (cand_desc(&c[mid], &c[last]) < 0) {
      struct atlas_sampler_cand t = c[mid];
      c[mid] = c[last];
      c[last] = t;
    }
    const struct atlas_sampler_cand pivot = c[last];
    size_t store = lo;
    for (size_t i = lo; i < last; ++i) {
      if (cand_desc(&c[i], &pivot) < 0) {
        struct atlas_sampler_cand t = c[i];
        c[i] = c[store];
        c[store] = t;
        ++store;
      }
    }
    c[last] = c[store];
    c[store] = pivot;
    if (store == k || store + 1 == k) return;  // c[0..k) are the first k
    if (store > k) {
      hi = store;
    } else {
      lo = store + 1;
    }
  }
}

static atlas_status load_logits(atlas_sampler *s, const float *logits, size_t n,
                                const int32_t *history, size_t history_len) {
  if (s->logits == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "sampler: used before atlas_sampler_init succeeded");
  }
  if (n != s->vocab_size) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "sampler: got %zu logits for a vocabulary of %zu ids", n,
        s->vocab_size);
  }
  if (history_len > 0 && history == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "sampler: history has length %zu but no ids",
                             history_len);
  }
  for (size_t i = 0; i < n; ++i) {
    if (isnan(logits[i])) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "sampler: logit of id %zu is NaN", i);
    }
    s->logits[i] = logits[i];
  }
  for (size_t i = 0; i < history_len; ++i) {
    if (history[i] < 0 || (size_t)history[i] >= n) {
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "sampler: history[%zu] = %d is not an id of a %zu-id vocabulary", i,
          (int)history[i], n);
    }
  }
  // Repetition penalty, once per distinct id (transformers gathers and
  // scatters, so an id seen twice is still penalised once).
  const double penalty = s->config.repetition_penalty;
  if (penalty != 1.0 && history_len > 0) {
    if (++s->stamp == 0) {
      memset(s->seen, 0, n * sizeof(uint32_t));
      s->stamp = 1;
    }
    for (size_t i = 0; i < history_len; ++i) {
      const int32_t id = history[i];
      if (s->seen[id] == s->stamp) continue;
      s->seen[id] = s->stamp;
      double *v = &s->logits[id];
      *v = *v < 0 ? *v * penalty : *v / penalty;
    }
  }
  return ATLAS_OK;
}

static size_t argmax(const double *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}

// Applies temperature, top-k, top-p and min-p to s->logits. On return
// s->cands[0..*out_count) holds the surviving ids with their probabilities in
// place of logits, in the order a draw walks them. Fails when every logit is
// -inf.
static atlas_status warp(atlas_sampler *s, size_t *out_count) {
  const size_t n = s->vocab_size;
  double *lg = s->logits;
  const atlas_sampler_config *c = &s->config;

  if (c->temperature != 1.0f) {
    for (size_t i = 0; i < n; ++i) lg[i] /= (double)c->temperature;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (lg[i] > -INFINITY) {
      s->cands[m].logit = lg[i];
      s->cands[m].id = (int32_t)i;
      ++m;
    }
  }
  if (m == 0) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "sampler: every logit is -inf, there is nothing to sample");
  }
  // top-k: remove logits below the k-th largest (ties with it stay, as
  // `scores < topk(scores, k).values[-1]` keeps them). -inf ids count toward k
  // in transformers too, but they are removed whatever the threshold. Only
  // what survives is sorted.
  if (c->top_k > 0 && (size_t)c->top_k < m) {
    const size_t k = (size_t)c->top_k;
    select_top(s->cands, m, k);
    double kth = s->cands[0].logit;
    for (size_t i = 1; i < k; ++i) {
      if (s->cands[i].logit < kth) kth = s->cands[i].logit;
    }
    size_t keep = k;
    for (size_t i = k; i < m; ++i) {
      if (s->cands[i].logit >= kth) {
        struct atlas_sampler_cand t = s->cands[keep];
        s->cands[keep++] = s->cands[i];
        s->cands[i] = t;
      }
    }
    m = keep;
  }
  if (c->top_k > 0 || c->top_p < 1.0f)
    qsort(s->cands, m, sizeof(s->cands[0]), cand_desc);

  // Probabilities of what is left (the max is cands[0] when sorted).
  double max = -INFINITY;
  for (size_t i = 0; i < m; ++i) {
    if (s->cands[i].logit > max) max = s->cands[i].logit;
  }
  double sum = 0;
  for (size_t i = 0; i < m; ++i) {
    s->cands[i].logit = exp(s->cands[i].logit - max);
    sum += s->cands[i].logit;
  }
  for (size_t i = 0; i < m; ++i) s->cands[i].logit /= sum;

  // top-p: ascending cumulative sum; remove while it is <= 1 - top_p; the
  // largest is always kept. Walking the descending array from its tail is the
  // ascending walk.
  if (c->top_p < 1.0f) {
    const double limit = 1.0 - (double)c->top_p;
    double cum = 0;
    size_t keep = m;
    for (size_t i = m; i-- > 1;) {
      cum += s->cands[i].logit;
      if (cum <= limit) {
        keep = i;
      } else {
        break;
      }
    }
    if (keep < m) {
      m = keep;
      sum = 0;
      for (size_t i = 0; i < m; ++i) sum += s->cands[i].logit;
      for (size_t i = 0; i < m; ++i) s->cands[i].logit /= sum;
    }
  }

  // min-p: remove probabilities below min_p times the top probability; the
  // top one stays (it never falls below min_p <= 1 times itself).
  if (c->min_p > 0.0f) {
    double top = 0;
    for (size_t i = 0; i < m; ++i) {
      if (s->cands[i].logit > top) top = s->cands[i].logit;
    }
    const double threshold = (double)c->min_p * top;
    size_t w = 0;
    sum = 0;
    for (size_t i = 0; i < m; ++i) {
      if (s->cands[i].logit >= threshold) {
        s->cands[w++] = s->cands[i];
        sum += s->cands[i].logit;
      }
    }
    m = w;
    for (size_t i = 0; i < m; ++i) s->cands[i].logit /= sum;
  }
  *out_count = m;
  return ATLAS_OK;
}

atlas_status atlas_sampler_distribution(atlas_sampler *sampler,
                                        const float *logits, size_t n_logits,
                                        const int32_t *history,
                                        size_t history_len, double *out_probs) {
  ATLAS_RETURN_IF_ERROR(
      load_logits(sampler, logits, n_logits, history, history_len));
  memset(out_probs, 0, n_logits * sizeof(double));
  if (sampler->config.temperature == 0.0f) {
    out_probs[argmax(sampler->logits, n_logits)] = 1.0;
    return ATLAS_OK;
  }
  size_t m = 0;
  ATLAS_RETURN_IF_ERROR(warp(sampler, &m));
  for (size_t i = 0; i < m; ++i)
    out_probs[sampler->cands[i].id] = sampler->cands[i].logit;
  return ATLAS_OK;
}

atlas_status atlas_sampler_sample(atlas_sampler *sampler, const float *logits,
                                  size_t n_logits, const int32_t *history,
                                  size_t history_len, int32_t *out_token) {
  ATLAS_RETURN_IF_ERROR(
      load_logits(sampler, logits, n_logits, history, history_len));
  if (sampler->config.temperature == 0.0f) {
    *out_token = (int32_t)argmax(sampler->logits, n_logits);
    return ATLAS_OK;
  }
  size_t m = 0;
  ATLAS_RETURN_IF_ERROR(warp(sampler, &m));
  const double u = atlas_rng_next_double(&sampler->rng);
  double cum = 0;
  for (size_t i = 0; i < m; ++i) {
    cum += sampler->cands[i].logit;
    if (u < cum) {
      *out_token = sampler->cands[i].id;
      return ATLAS_OK;
    }
  }
  // Rounding left the total a hair below u: the last candidate takes it.
  *out_token = sampler->cands[m - 1].id;
  return ATLAS_OK;
}
