#include "tests/moe/moe_reference.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <numeric>

namespace moe_ref {
namespace {

std::vector<float> Uniform(size_t n, float scale, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float &f : v) f = d(rng);
  return v;
}

Ffn RandomFfn(uint32_t hidden, uint32_t inter, std::mt19937 &rng) {
  Ffn f;
  f.gate = Uniform((size_t)inter * hidden, 0.3f, rng);
  f.up = Uniform((size_t)inter * hidden, 0.3f, rng);
  f.down = Uniform((size_t)hidden * inter, 0.3f, rng);
  return f;
}

double Dot(const float *w, const float *x, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += (double)w[i] * x[i];
  return s;
}

// down(silu(gate x) * up x), in double.
std::vector<double> RunFfn(const Ffn &f, uint32_t hidden, uint32_t inter,
                           const float *x) {
  std::vector<double> act(inter);
  for (uint32_t i = 0; i < inter; ++i) {
    double g = Dot(&f.gate[(size_t)i * hidden], x, hidden);
    double u = Dot(&f.up[(size_t)i * hidden], x, hidden);
    act[i] = g / (1.0 + exp(-g)) * u;
  }
  std::vector<double> out(hidden, 0.0);
  for (uint32_t h = 0; h < hidden; ++h) {
    for (uint32_t i = 0; i < inter; ++i) {
      out[h] += (double)f.down[(size_t)h * inter + i] * act[i];
    }
  }
  return out;
}

}  // namespace

Weights Random(const Config &c, std::mt19937 &rng) {
  Weights w;
  w.router = Uniform((size_t)c.n_experts * c.hidden, 0.5f, rng);
  for (uint32_t e = 0; e < c.n_experts; ++e) {
    w.experts.push_back(RandomFfn(c.hidden, c.inter, rng));
  }
  if (c.shared_inter != 0) {
    w.shared = RandomFfn(c.hidden, c.shared_inter, rng);
    w.shared_gate = Uniform(c.hidden, 0.5f, rng);
  }
  return w;
}

Route Router(const Config &c, const Weights &w, const float *x) {
  std::vector<double> p(c.n_experts);
  for (uint32_t e = 0; e < c.n_experts; ++e) {
    p[e] = Dot(&w.router[(size_t)e * c.hidden], x, c.hidden);
  }
  double m = *std::max_element(p.begin(), p.end()), sum = 0;
  for (double &v : p) sum += (v = exp(v - m));
  for (double &v : p) v /= sum;
  std::vector<uint32_t> order(c.n_experts);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
  Route r;
  double chosen = 0;
  for (uint32_t s = 0; s < c.k; ++s) {
    r.ids.push_back(order[s]);
    r.weights.push_back(p[order[s]]);
    chosen += p[order[s]];
  }
  if (c.norm_topk) {
    for (double &v : r.weights) v /= chosen;
  }
  return r;
}

std::vector<double> Forward(const Config &c, const Weights &w,
                            const std::vector<float> &x, uint32_t n_tokens,
                            std::vector<Route> *routes) {
  std::vector<double> out((size_t)n_tokens * c.hidden, 0.0);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const float *xt = &x[(size_t)t * c.hidden];
    Route r = Router(c, w, xt);
    for (uint32_t s = 0; s < c.k; ++s) {
      std::vector<double> y =
          RunFfn(w.experts[r.ids[s]], c.hidden, c.inter, xt);
      for (uint32_t h = 0; h < c.hidden; ++h) {
        out[(size_t)t * c.hidden + h] += r.weights[s] * y[h];
      }
    }
    if (c.shared_inter != 0) {
      double g = Dot(w.shared_gate.data(), xt, c.hidden);
      g = 1.0 / (1.0 + exp(-g));
      std::vector<double> y = RunFfn(w.shared, c.hidden, c.shared_inter, xt);
      for (uint32_t h = 0; h < c.hidden; ++h) {
        out[(size_t)t * c.hidden + h] += g * y[h];
      }
    }
    if (routes != nullptr) routes->push_back(r);
  }
  return out;
}

float RoundBf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float r;
  memcpy(&r, &u, 4);
  return r;
}

}  // namespace moe_ref
