// Gated DeltaNet written from transformers' Qwen3-Next
// (torch_recurrent_gated_delta_rule, torch_causal_conv1d_update,
// Qwen3NextRMSNormGated and the gates of Qwen3NextGatedDeltaNet.forward),
// apart from the kernels (no code shared with kernels/deltanet*): double
// precision, token by token, the state in transformers' layout
// [Hv][dk][dv].
#ifndef ATLAS_TESTS_DELTANET_GDN_REFERENCE_H_
#define ATLAS_TESTS_DELTANET_GDN_REFERENCE_H_

#include <stdint.h>

#include <vector>

namespace gdn_ref {

struct Shape {
  uint32_t hk = 1, hv = 1, dk = 1, dv = 1;
};

// Rows of q, k and v at q + t * stride + head * dk (v: + head * dv);
// g, beta [T][Hv]; state [Hv][dk][dv] in and out; returns out [T][Hv][dv].
std::vector<double> DeltaRule(const Shape &s, const float *q, const float *k,
                              const float *v, const float *g, const float *beta,
                              uint32_t n_tokens, uint32_t stride,
                              std::vector<double> *state);

// Causal depthwise conv with SiLU over x [T][C]; window [K-1][C] in and out
// (the inputs before x[0], oldest first); bias may be empty.
std::vector<double> Conv(const std::vector<float> &x, uint32_t n_tokens,
                         uint32_t channels, const std::vector<float> &weight,
                         const std::vector<float> &bias, uint32_t kernel,
                         std::vector<double> *window);

// g = -exp(a_log) softplus(a + dt_bias), beta = sigmoid(b).
void Gates(const std::vector<float> &a, const std::vector<float> &b,
           const std::vector<float> &a_log, const std::vector<float> &dt_bias,
           std::vector<double> *g, std::vector<double> *beta);

// weight * rmsnorm(x) * silu(z) per row of dim.
std::vector<double> NormGate(const std::vector<float> &x,
                             const std::vector<float> &z,
                             const std::vector<float> &weight, uint32_t dim,
                             double eps);

}  // namespace gdn_ref

#endif  // ATLAS_TESTS_DELTANET_GDN_REFERENCE_H_
