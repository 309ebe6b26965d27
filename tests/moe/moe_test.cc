// Module "moe" on the host and on CUDA against the tests' own reference
// (moe_reference.h): the router (top-k ties, norm_topk_prob on and off,
// k = 1, 2, 8), the counting sort by expert, the grouped (prefill) and
// per-assignment (decode) expert products, the shared expert with its
// sigmoid gate, an expert no token picks, and expert weights one tensor
// per expert or slices of the fused 3-D tensors. Outputs within 1e-5 of the
// reference's row (largest difference over the row's largest magnitude).
// CUDA cases skip where there is no GPU.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/moe_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/moe/moe_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using moe_ref::Config;
using moe_ref::Weights;

enum class Dtype { kF32, kF16, kBf16 };

const char *Suffix(Dtype d) {
  return d == Dtype::kF32 ? "f32" : d == Dtype::kF16 ? "f16" : "bf16";
}

// f16 bits of a value f16 holds exactly (the weights are multiples of 2^-8
// below 1, so f32, f16 and bf16 all hold them exactly).
uint16_t F16Bits(float v) {
  if (v == 0.0f) return 0;
  int e = 0;
  double m = frexp(fabs(v), &e);  // |v| = m 2^e, m in [0.5, 1)
  uint32_t frac = (uint32_t)lround((m * 2.0 - 1.0) * 1024.0);
  uint16_t bits = (uint16_t)(((uint32_t)(e - 1 + 15) << 10) | frac);
  return v < 0 ? (uint16_t)(bits | 0x8000u) : bits;
}

std::vector<uint8_t> Encode(const std::vector<float> &v, Dtype d) {
  std::vector<uint8_t> out;
  if (d == Dtype::kF32) {
    out.resize(v.size() * 4);
    memcpy(out.data(), v.data(), out.size());
    return out;
  }
  out.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    if (d == Dtype::kF16) {
      h = F16Bits(v[i]);
    } else {
      uint32_t u;
      memcpy(&u, &v[i], 4);
      h = (uint16_t)(u >> 16);
    }
    memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

// Weights on a 2^-8 grid, exact in every dtype the kernels read.
void OnGrid(std::vector<float> &v) {
  for (float &f : v) f = roundf(f * 256.0f) / 256.0f;
}

struct Case {
  std::string name;
  Config c;
  uint32_t n_tokens;
  bool positive_x;  // with router row n_experts-1 all -1: never picked
};

std::vector<Case> Cases() {
  std::vector<Case> v;
  Config c;
  c.hidden = 72, c.inter = 80;
  // Mixtral: 8 experts, k = 2, always normalised.
  c.n_experts = 8, c.k = 2, c.norm_topk = true;
  v.push_back({"mixtral_k2_norm", c, 37, false});
  // Qwen3-MoE without norm_topk_prob, k = 1; expert 15 never picked.
  c.n_experts = 16, c.k = 1, c.norm_topk = false;
  v.push_back({"k1_nonorm_unpicked", c, 37, true});
  // Qwen2-MoE: k = 8 of 16 with the shared expert, norm off and on.
  c.k = 8, c.shared_inter = 100;
  v.push_back({"qwen2moe_k8_shared", c, 37, true});
  c.norm_topk = true;
  v.push_back({"qwen2moe_k8_shared_norm", c, 21, false});
  // Few experts, many tokens: experts with several tiles of rows; rows
  // not a whole number of 16-byte loads (the decode kernels' other path).
  c.n_experts = 4, c.k = 2, c.shared_inter = 0, c.norm_topk = false;
  c.hidden = 70, c.inter = 60;
  v.push_back({"multi_tile", c, 70, false});
  return v;
}

struct Inputs {
  Weights w;
  std::vector<float> x, residual;
};

Inputs MakeInputs(const Case &k, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  in.w = moe_ref::Random(k.c, rng);
  const uint32_t h = k.c.hidden, e_n = k.c.n_experts;
  // Equal router rows for experts 2 and 5 (when present), scaled so that
  // they are often chosen together: equal probabilities, lower index first.
  if (e_n > 5) {
    for (uint32_t i = 0; i < h; ++i) {
      in.w.router[2 * h + i] *= 2.0f;
      in.w.router[5 * h + i] = in.w.router[2 * h + i];
    }
  }
  if (k.positive_x) {
    for (uint32_t i = 0; i < h; ++i) in.w.router[(e_n - 1) * h + i] = -1.0f;
  }
  OnGrid(in.w.router);
  OnGrid(in.w.shared_gate);
  OnGrid(in.w.shared.gate), OnGrid(in.w.shared.up), OnGrid(in.w.shared.down);
  for (auto &f : in.w.experts) OnGrid(f.gate), OnGrid(f.up), OnGrid(f.down);
  std::uniform_real_distribution<float> dx(k.positive_x ? 0.05f : -1.0f, 1.0f);
  in.x.resize((size_t)k.n_tokens * h);
  for (float &f : in.x) f = dx(rng);
  // Token 1 is all zeros: every probability equal, so the first k experts.
  for (uint32_t i = 0; i < h; ++i) in.x[h + i] = 0.0f;
  in.residual.resize(in.x.size());
  for (float &f : in.residual) f = dx(rng);
  return in;
}

struct Result {
  std::vector<float> out, weights;
  std::vector<uint32_t> ids, offsets, rows;
};

// The buffers of one run on one backend, freed at the end.
class Device {
 public:
  explicit Device(atlas_backend *b) : b_(b) {}
  ~Device() {
    for (void *p : bufs_) EXPECT_OK(atlas_backend_free(b_, p));
  }
  void *Upload(const void *data, size_t bytes) {
    void *p = Alloc(bytes);
    EXPECT_OK(atlas_backend_h2d(b_, p, data, bytes));
    return p;
  }
  template <typename T>
  void *Upload(const std::vector<T> &v) {
    return Upload(v.data(), v.size() * sizeof(T));
  }
  // NaN-filled (0xff bytes), so what a kernel fails to write shows.
  void *Alloc(size_t bytes) {
    void *p = nullptr;
    EXPECT_OK(atlas_backend_alloc(b_, bytes ? bytes : 4, &p));
    std::vector<uint8_t> poison(bytes ? bytes : 4, 0xff);
    EXPECT_OK(atlas_backend_h2d(b_, p, poison.data(), poison.size()));
    bufs_.push_back(p);
    return p;
  }
  template <typename T>
  std::vector<T> Read(const void *p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(atlas_backend_d2h(b_, v.data(), p, n * sizeof(T)));
    return v;
  }
  void Launch(const std::string &name, uint32_t gx, uint32_t gy,
              uint32_t shared, std::vector<atlas_arg> args) {
    const atlas_kernel *k = nullptr;
    EXPECT_OK(
        atlas_backend_kernel_lookup(b_, ATLAS_MOE_MODULE, name.c_str(), &k));
    if (k == nullptr) return;
    atlas_launch_config c{};
    c.grid = {gx, gy, 1};
    c.block = {ATLAS_MOE_BLOCK, 1, 1};
    c.shared_bytes = shared;
    SCOPED_TRACE(name);
    EXPECT_OK(atlas_backend_launch_typed(b_, k, &c, args.data(), args.size()));
  }
  // A table of device addresses of one tensor per expert.
  void *Table(const std::vector<const std::vector<float> *> &ws, Dtype d) {
    std::vector<uint64_t> addr;
    for (const auto *w : ws) {
      addr.push_back((uint64_t)(uintptr_t)Upload(Encode(*w, d)));
    }
    return Upload(addr);
  }
  // Tables into one fused 3-D tensor [n][a.size() + b.size()] per expert
  // (transformers' gate_up_proj: gate rows, then up rows): *out_a points
  // at each expert's first part, *out_b (b not empty) at its second.
  void FusedTables(const std::vector<const std::vector<float> *> &a,
                   const std::vector<const std::vector<float> *> &b, Dtype d,
                   void **out_a, void **out_b) {
    std::vector<float> fused;
    for (size_t e = 0; e < a.size(); ++e) {
      fused.insert(fused.end(), a[e]->begin(), a[e]->end());
      if (!b.empty()) fused.insert(fused.end(), b[e]->begin(), b[e]->end());
    }
    const size_t es = d == Dtype::kF32 ? 4 : 2;
    const size_t na = a[0]->size(), nb = b.empty() ? 0 : b[0]->size();
    uint8_t *base = (uint8_t *)Upload(Encode(fused, d));
    std::vector<uint64_t> ta, tb;
    for (size_t e = 0; e < a.size(); ++e) {
      uint8_t *first = base + e * (na + nb) * es;
      ta.push_back((uint64_t)(uintptr_t)first);
      tb.push_back((uint64_t)(uintptr_t)(first + na * es));
    }
    *out_a = Upload(ta);
    if (out_b != nullptr) *out_b = Upload(tb);
  }
  atlas_backend *b_;
  std::vector<void *> bufs_;
};

uint32_t Ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// Expert products for n_assign assignments (ids on the device) into y
// [n_assign][hidden]; grouped: through the counting sort, whose offsets and
// rows it returns.
void Experts(Device &d, Dtype dt, bool grouped, void *d_x, void *d_ids,
             uint32_t n_assign, uint32_t n_experts, uint32_t k, uint32_t hidden,
             uint32_t inter, void *gate, void *up, void *down, void *d_y,
             Result *r) {
  const std::string s = Suffix(dt);
  void *d_act = d.Alloc((size_t)n_assign * inter * 4);
  if (!grouped) {
    d.Launch("moe_gate_up_vec_" + s, Ceil(inter, 8), n_assign, 0,
             {ATLAS_ARG_PTR(d_act), ATLAS_ARG_PTR(d_x), ATLAS_ARG_PTR(d_ids),
              ATLAS_ARG_PTR(gate), ATLAS_ARG_PTR(up), ATLAS_ARG_U32(n_assign),
              ATLAS_ARG_U32(k), ATLAS_ARG_U32(hidden), ATLAS_ARG_U32(inter)});
    d.Launch("moe_down_vec_" + s, Ceil(hidden, 8), n_assign, 0,
             {ATLAS_ARG_PTR(d_y), ATLAS_ARG_PTR(d_act), ATLAS_ARG_PTR(d_ids),
              ATLAS_ARG_PTR(down), ATLAS_ARG_U32(n_assign),
              ATLAS_ARG_U32(hidden), ATLAS_ARG_U32(inter)});
    return;
  }
  void *counts = d.Alloc(n_experts * 4);
  void *offsets = d.Alloc((n_experts + 1) * 4);
  void *tiles = d.Alloc((n_experts + 1) * 4);
  void *rows = d.Alloc((size_t)n_assign * 4);
  d.Launch("moe_count", Ceil(n_experts, 8), 1, 0,
           {ATLAS_ARG_PTR(counts), ATLAS_ARG_PTR(d_ids),
            ATLAS_ARG_U32(n_assign), ATLAS_ARG_U32(n_experts)});
  d.Launch("moe_scatter", Ceil(n_experts, 8), 1, 0,
           {ATLAS_ARG_PTR(offsets), ATLAS_ARG_PTR(tiles), ATLAS_ARG_PTR(rows),
            ATLAS_ARG_PTR(counts), ATLAS_ARG_PTR(d_ids),
            ATLAS_ARG_U32(n_assign), ATLAS_ARG_U32(n_experts)});
  uint32_t gy = atlas_moe_tile_rows(n_assign, n_experts);
  d.Launch("moe_gate_up_" + s, Ceil(inter, ATLAS_MOE_TILE_COLS), gy, 0,
           {ATLAS_ARG_PTR(d_act), ATLAS_ARG_PTR(d_x), ATLAS_ARG_PTR(rows),
            ATLAS_ARG_PTR(offsets), ATLAS_ARG_PTR(tiles), ATLAS_ARG_PTR(gate),
            ATLAS_ARG_PTR(up), ATLAS_ARG_U32(n_experts), ATLAS_ARG_U32(k),
            ATLAS_ARG_U32(hidden), ATLAS_ARG_U32(inter)});
  d.Launch(
      "moe_down_" + s, Ceil(hidden, ATLAS_MOE_TILE_COLS), gy, 0,
      {ATLAS_ARG_PTR(d_y), ATLAS_ARG_PTR(d_act), ATLAS_ARG_PTR(rows),
       ATLAS_ARG_PTR(offsets), ATLAS_ARG_PTR(tiles), ATLAS_ARG_PTR(down),
       ATLAS_ARG_U32(n_experts), ATLAS_ARG_U32(hidden), ATLAS_ARG_U32(inter)});
  if (r != nullptr) {
    r->offsets = d.Read<uint32_t>(offsets, n_experts + 1);
    r->rows = d.Read<uint32_t>(rows, n_assign);
    std::vector<uint32_t> t = d.Read<uint32_t>(tiles, n_experts + 1);
    std::vector<uint32_t> n = d.Read<uint32_t>(counts, n_experts);
    for (uint32_t e = 0; e < n_experts; ++e) {
      EXPECT_EQ(t[e + 1] - t[e], Ceil(n[e], ATLAS_MOE_TILE_ROWS)) << e;
      EXPECT_EQ(r->offsets[e + 1] - r->offsets[e], n[e]) << e;
    }
  }
}

// The whole block on `b`: out = residual + MoE(x).
// fused: the experts' weights as the fused 3-D tensors newer transformers
// writes (gate_up_proj [E][2 inter][hidden], down_proj [E][hidden][inter]).
Result Forward(atlas_backend *b, const Case &k, const Inputs &in, Dtype dt,
               bool grouped, bool fused) {
  const Config &c = k.c;
  const uint32_t t_n = k.n_tokens, a_n = t_n * c.k;
  Device d(b);
  std::vector<const std::vector<float> *> g, u, dn;
  for (const auto &f : in.w.experts) {
    g.push_back(&f.gate), u.push_back(&f.up), dn.push_back(&f.down);
  }
  void *gate = nullptr, *up = nullptr, *down = nullptr;
  if (fused) {
    d.FusedTables(g, u, dt, &gate, &up);
    d.FusedTables(dn, {}, dt, &down, nullptr);
  } else {
    gate = d.Table(g, dt), up = d.Table(u, dt), down = d.Table(dn, dt);
  }
  void *d_router = d.Upload(Encode(in.w.router, dt));
  void *d_sgw =
      c.shared_inter ? d.Upload(Encode(in.w.shared_gate, dt)) : nullptr;
  void *d_x = d.Upload(in.x);
  void *d_ids = d.Alloc((size_t)a_n * 4), *d_w = d.Alloc((size_t)a_n * 4);
  void *d_sg = d.Alloc((size_t)t_n * 4);
  void *d_y = d.Alloc((size_t)a_n * c.hidden * 4);
  void *d_out = d.Upload(in.residual);
  d.Launch(std::string("moe_router_") + Suffix(dt), t_n, 1, c.n_experts * 4,
           {ATLAS_ARG_PTR(d_ids), ATLAS_ARG_PTR(d_w), ATLAS_ARG_PTR(d_sg),
            ATLAS_ARG_PTR(d_x), ATLAS_ARG_PTR(d_router), ATLAS_ARG_PTR(d_sgw),
            ATLAS_ARG_U32(t_n), ATLAS_ARG_U32(c.n_experts),
            ATLAS_ARG_U32(c.hidden), ATLAS_ARG_U32(c.k),
            ATLAS_ARG_U32(c.norm_topk ? ATLAS_MOE_NORM_TOPK : 0u)});
  Result r;
  Experts(d, dt, grouped, d_x, d_ids, a_n, c.n_experts, c.k, c.hidden, c.inter,
          gate, up, down, d_y, &r);
  void *d_shared = nullptr;
  if (c.shared_inter != 0) {
    // The shared expert: one expert every token picks, k = 1.
    void *sg = d.Table({&in.w.shared.gate}, dt);
    void *su = d.Table({&in.w.shared.up}, dt);
    void *sd = d.Table({&in.w.shared.down}, dt);
    void *zeros = d.Upload(std::vector<uint32_t>(t_n, 0u));
    d_shared = d.Alloc((size_t)t_n * c.hidden * 4);
    Experts(d, dt, grouped, d_x, zeros, t_n, 1, 1, c.hidden, c.shared_inter, sg,
            su, sd, d_shared, nullptr);
  }
  d.Launch("moe_combine", Ceil(t_n * c.hidden, ATLAS_MOE_BLOCK), 1, 0,
           {ATLAS_ARG_PTR(d_out), ATLAS_ARG_PTR(d_y), ATLAS_ARG_PTR(d_w),
            ATLAS_ARG_PTR(d_shared),
            ATLAS_ARG_PTR(c.shared_inter ? d_sg : nullptr), ATLAS_ARG_U32(t_n),
            ATLAS_ARG_U32(c.k), ATLAS_ARG_U32(c.hidden), ATLAS_ARG_U32(1)});
  EXPECT_OK(atlas_backend_synchronize(b));
  r.out = d.Read<float>(d_out, (size_t)t_n * c.hidden);
  r.ids = d.Read<uint32_t>(d_ids, a_n);
  r.weights = d.Read<float>(d_w, a_n);
  return r;
}

// Checks r against the reference; returns the worst row error.
// tied_pairs counts the tokens that chose both experts 2 and 5 (equal
// router rows).
double Check(const Case &k, const Inputs &in, const Result &r, bool grouped,
             const std::string &what, int *tied_pairs) {
  const Config &c = k.c;
  std::vector<moe_ref::Route> routes;
  std::vector<double> want =
      moe_ref::Forward(c, in.w, in.x, k.n_tokens, &routes);
  std::vector<uint32_t> flat;
  for (uint32_t t = 0; t < k.n_tokens; ++t) {
    bool has2 = false, has5 = false;
    for (uint32_t id : routes[t].ids) has2 |= id == 2, has5 |= id == 5;
    if (has2 && has5) ++*tied_pairs;
    for (uint32_t s = 0; s < c.k; ++s) {
      size_t a = (size_t)t * c.k + s;
      flat.push_back(routes[t].ids[s]);
      EXPECT_EQ(r.ids[a], routes[t].ids[s])
          << what << " token " << t << " choice " << s;
      EXPECT_NEAR(r.weights[a], routes[t].weights[s],
                  1e-5 * routes[t].weights[s])
          << what << " token " << t << " choice " << s;
    }
  }
  // Token 1 (all zeros): the first k experts, weight 1/n (or 1/k).
  for (uint32_t s = 0; s < c.k; ++s) {
    EXPECT_EQ(r.ids[c.k + s], s) << what;
    EXPECT_NEAR(r.weights[c.k + s], c.norm_topk ? 1.0 / c.k : 1.0 / c.n_experts,
                1e-6)
        << what;
  }
  if (k.positive_x) {
    for (uint32_t id : r.ids) EXPECT_NE(id, c.n_experts - 1) << what;
  }
  if (grouped) {
    // A stable counting sort of the reference's choices.
    std::vector<uint32_t> off(c.n_experts + 1, 0), rows;
    for (uint32_t e = 0; e < c.n_experts; ++e) {
      for (uint32_t a = 0; a < flat.size(); ++a) {
        if (flat[a] == e) rows.push_back(a);
      }
      off[e + 1] = (uint32_t)rows.size();
    }
    EXPECT_EQ(r.offsets, off) << what;
    EXPECT_EQ(r.rows, rows) << what;
    if (k.positive_x) {
      EXPECT_EQ(off[c.n_experts], off[c.n_experts - 1]) << what;
    }
  }
  double worst = 0;
  for (uint32_t t = 0; t < k.n_tokens; ++t) {
    double diff = 0, mag = 0;
    for (uint32_t h = 0; h < c.hidden; ++h) {
      size_t i = (size_t)t * c.hidden + h;
      double ref = want[i] + in.residual[i];
      EXPECT_FALSE(std::isnan(r.out[i])) << what << " token " << t;
      diff = fmax(diff, fabs(r.out[i] - ref));
      mag = fmax(mag, fabs(ref));
    }
    double err = diff / (mag > 0 ? mag : 1.0);
    worst = fmax(worst, err);
    EXPECT_LE(err, 1e-5) << what << " token " << t;
  }
  return worst;
}

const atlas_module_def *kMods[1] = {&atlas_moe_module};
const atlas_module_set kSet = {kMods, 1};

void RunAll(atlas_backend *b, const char *backend) {
  uint32_t seed = 1;
  int n = 0, tied_pairs = 0;
  for (const Case &k : Cases()) {
    Inputs in = MakeInputs(k, seed++);
    for (Dtype dt : {Dtype::kF32, Dtype::kF16, Dtype::kBf16}) {
      for (int path = 0; path < 3; ++path) {
        // Grouped (prefill), per assignment (decode), and grouped over
        // fused 3-D expert tensors.
        const bool grouped = path != 1, fused = path == 2;
        std::string what = std::string(backend) + " " + k.name + " " +
                           Suffix(dt) +
                           (fused     ? " grouped fused"
                            : grouped ? " grouped"
                                      : " decode");
        Result r = Forward(b, k, in, dt, grouped, fused);
        double worst = Check(k, in, r, grouped, what, &tied_pairs);
        printf("moe (%s): worst row error %.3g\n", what.c_str(), worst);
        ++n;
      }
    }
  }
  // The equal router rows were exercised: tokens chose both.
  EXPECT_GT(tied_pairs, 0);
  printf(
      "moe (%s): %d runs match the reference (%d tokens chose both tied "
      "experts)\n",
      backend, n, tied_pairs);
}

TEST(MoeKernels, HostMatchesTheReference) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &kSet;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  RunAll(b, "host");
  EXPECT_OK(atlas_backend_destroy(b));
}

TEST(MoeKernels, CudaMatchesTheReference) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &kSet;
  StatusResult r = Take(atlas_cuda_backend_create(&o, &b));
  if (r.code == ATLAS_STATUS_UNAVAILABLE) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  RunAll(b, "cuda");
  EXPECT_OK(atlas_backend_destroy(b));
}

// The reference's own tie rule, checked by hand: equal probabilities keep
// the lower expert first, and norm_topk_prob divides by the chosen sum.
TEST(MoeReference, TiesAndNormalisation) {
  Config c;
  c.hidden = 1, c.n_experts = 4, c.k = 2;
  Weights w;
  w.router = {1.0f, 2.0f, 2.0f, 0.5f};
  float x = 1.0f;
  moe_ref::Route r = moe_ref::Router(c, w, &x);
  ASSERT_EQ(r.ids, (std::vector<uint32_t>{1, 2}));
  double z = exp(1.0) + 2 * exp(2.0) + exp(0.5);
  EXPECT_NEAR(r.weights[0], exp(2.0) / z, 1e-12);
  c.norm_topk = true;
  r = moe_ref::Router(c, w, &x);
  EXPECT_NEAR(r.weights[0], 0.5, 1e-12);
  EXPECT_NEAR(r.weights[1], 0.5, 1e-12);
}

}  // namespace
