// A mixture-of-experts FFN written from transformers' Qwen2-MoE / Qwen3-MoE /
// Mixtral blocks, apart from the kernels (no code shared with kernels/moe*):
// logits, softmax and experts in double, top-k by a stable sort (equal
// probabilities keep the lower expert first).
#ifndef ATLAS_TESTS_MOE_MOE_REFERENCE_H_
#define ATLAS_TESTS_MOE_MOE_REFERENCE_H_

#include <stdint.h>

#include <random>
#include <vector>

namespace moe_ref {

struct Config {
  uint32_t hidden = 0, inter = 0, n_experts = 0, k = 0;
  bool norm_topk = false;
  uint32_t shared_inter = 0;  // 0: no shared expert
};

// One dense SiLU FFN: gate and up [inter][hidden], down [hidden][inter].
struct Ffn {
  std::vector<float> gate, up, down;
};

struct Weights {
  std::vector<float> router;  // [n_experts][hidden]
  std::vector<Ffn> experts;
  Ffn shared;
  std::vector<float> shared_gate;  // [hidden]
};

struct Route {
  std::vector<uint32_t> ids;
  std::vector<double> weights;
};

Weights Random(const Config &c, std::mt19937 &rng);
Route Router(const Config &c, const Weights &w, const float *x);
// out[t] = the block's output for token t (no residual).
std::vector<double> Forward(const Config &c, const Weights &w,
                            const std::vector<float> &x, uint32_t n_tokens,
                            std::vector<Route> *routes);
// x rounded to the nearest bf16 (ties to even), as f32.
float RoundBf16(float x);

}  // namespace moe_ref

#endif  // ATLAS_TESTS_MOE_MOE_REFERENCE_H_
