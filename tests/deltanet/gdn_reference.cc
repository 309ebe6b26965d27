#include "tests/deltanet/gdn_reference.h"

#include <math.h>

namespace gdn_ref {
namespace {

double Silu(double v) { return v / (1.0 + exp(-v)); }

// transformers' l2norm: x * rsqrt(sum(x^2) + 1e-6).
std::vector<double> L2Norm(const float *x, uint32_t n) {
  double ss = 0;
  for (uint32_t i = 0; i < n; ++i) ss += (double)x[i] * x[i];
  std::vector<double> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = x[i] / sqrt(ss + 1e-6);
  return out;
}

}  // namespace

std::vector<double> DeltaRule(const Shape &s, const float *q, const float *k,
                              const float *v, const float *g, const float *beta,
                              uint32_t n_tokens, uint32_t stride,
                              std::vector<double> *state) {
  std::vector<double> out((size_t)n_tokens * s.hv * s.dv);
  const double scale = 1.0 / sqrt((double)s.dk);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    for (uint32_t h = 0; h < s.hv; ++h) {
      uint32_t hk = h / (s.hv / s.hk);  // repeat_interleave
      std::vector<double> qn =
          L2Norm(q + (size_t)t * stride + (size_t)hk * s.dk, s.dk);
      std::vector<double> kn =
          L2Norm(k + (size_t)t * stride + (size_t)hk * s.dk, s.dk);
      const float *vt = v + (size_t)t * stride + (size_t)h * s.dv;
      double *st = state->data() + (size_t)h * s.dk * s.dv;
      double decay = exp((double)g[(size_t)t * s.hv + h]);
      double b = beta[(size_t)t * s.hv + h];
      for (size_t i = 0; i < (size_t)s.dk * s.dv; ++i) st[i] *= decay;
      for (uint32_t j = 0; j < s.dv; ++j) {
        double mem = 0;
        for (uint32_t i = 0; i < s.dk; ++i) mem += st[i * s.dv + j] * kn[i];
        double delta = (vt[j] - mem) * b;
        for (uint32_t i = 0; i < s.dk; ++i) st[i * s.dv + j] += kn[i] * delta;
      }
      for (uint32_t j = 0; j < s.dv; ++j) {
        double o = 0;
        for (uint32_t i = 0; i < s.dk; ++i) {
          o += st[i * s.dv + j] * qn[i] * scale;
        }
        out[((size_t)t * s.hv + h) * s.dv + j] = o;
      }
    }
  }
  return out;
}

std::vector<double> Conv(const std::vector<float> &x, uint32_t n_tokens,
                         uint32_t channels, const std::vector<float> &weight,
                         const std::vector<float> &bias, uint32_t kernel,
                         std::vector<double> *window) {
  // The padded input: the window, then x; output t reads kernel inputs
  // ending at x[t] (conv1d with padding kernel - 1, first n_tokens kept).
  std::vector<double> out((size_t)n_tokens * channels);
  for (uint32_t c = 0; c < channels; ++c) {
    std::vector<double> seq;
    for (uint32_t j = 0; j + 1 < kernel; ++j) {
      seq.push_back((*window)[(size_t)j * channels + c]);
    }
    for (uint32_t t = 0; t < n_tokens; ++t) {
      seq.push_back(x[(size_t)t * channels + c]);
    }
    for (uint32_t t = 0; t < n_tokens; ++t) {
      double acc = bias.empty() ? 0.0 : bias[c];
      for (uint32_t j = 0; j < kernel; ++j) {
        acc += (double)weight[(size_t)c * kernel + j] * seq[t + j];
      }
      out[(size_t)t * channels + c] = Silu(acc);
    }
    for (uint32_t j = 0; j + 1 < kernel; ++j) {
      (*window)[(size_t)j * channels + c] = seq[seq.size() - (kernel - 1) + j];
    }
  }
  return out;
}

void Gates(const std::vector<float> &a, const std::vector<float> &b,
           const std::vector<float> &a_log, const std::vector<float> &dt_bias,
           std::vector<double> *g, std::vector<double> *beta) {
  const size_t heads = a_log.size();
  g->resize(a.size());
  beta->resize(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    double x = (double)a[i] + dt_bias[i % heads];
    double sp = x > 20.0 ? x : log1p(exp(x));
    (*g)[i] = -exp((double)a_log[i % heads]) * sp;
    (*beta)[i] = 1.0 / (1.0 + exp(-(double)b[i]));
  }
}

std::vector<double> NormGate(const std::vector<float> &x,
                             const std::vector<float> &z,
                             const std::vector<float> &weight, uint32_t dim,
                             double eps) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / dim; ++r) {
    double ss = 0;
    for (uint32_t i = 0; i < dim; ++i)
      ss += (double)x[r * dim + i] * x[r * dim + i];
    double inv = 1.0 / sqrt(ss / dim + eps);
    for (uint32_t i = 0; i < dim; ++i) {
      out[r * dim + i] =
          weight[i] * (x[r * dim + i] * inv) * Silu(z[r * dim + i]);
    }
  }
  return out;
}

}  // namespace gdn_ref
