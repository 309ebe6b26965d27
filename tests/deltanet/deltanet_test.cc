// Module "deltanet" on the host and on CUDA against the tests' own
// reference (gdn_reference.h): the delta rule token by token and in chunks
// over prompts longer than one chunk (outputs and final state), a prompt
// in pieces, a batch of sequences each with its state slot, the causal
// conv with its state, the gates and the gated norm. Within 1e-5 of the
// reference's row (largest difference over the row's largest magnitude; a
// row of the delta rule's output is one token's over all heads, of its
// state one head's matrix).
// CUDA cases skip where there is no GPU.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/deltanet_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/deltanet/gdn_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using gdn_ref::Shape;

constexpr double kTol = 1e-5;

// The worst row error of got against want, rows of `row` values.
double RowError(const std::vector<float> &got, const std::vector<double> &want,
                size_t row) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t r0 = 0; r0 + row <= want.size() && r0 < got.size(); r0 += row) {
    double diff = 0, mag = 0;
    for (size_t i = r0; i < r0 + row; ++i) {
      if (std::isnan(got[i])) return INFINITY;
      diff = fmax(diff, fabs(got[i] - want[i]));
      mag = fmax(mag, fabs(want[i]));
    }
    worst = fmax(worst, diff / (mag > 0 ? mag : 1.0));
  }
  return worst;
}

std::vector<float> Uniform(size_t n, float lo, float hi, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &f : v) f = d(rng);
  return v;
}

// The buffers of one run on one backend, freed at the end.
class Device {
 public:
  explicit Device(atlas_backend *b) : b_(b) {}
  ~Device() {
    for (void *p : bufs_) EXPECT_OK(atlas_backend_free(b_, p));
  }
  template <typename T>
  T *Upload(const std::vector<T> &v) {
    T *p = Alloc<T>(v.size());
    EXPECT_OK(atlas_backend_h2d(b_, p, v.data(), v.size() * sizeof(T)));
    return p;
  }
  // NaN-filled, so what a kernel fails to write shows.
  template <typename T>
  T *Alloc(size_t n) {
    void *p = nullptr;
    size_t bytes = n ? n * sizeof(T) : 4;
    EXPECT_OK(atlas_backend_alloc(b_, bytes, &p));
    std::vector<uint8_t> poison(bytes, 0xff);
    EXPECT_OK(atlas_backend_h2d(b_, p, poison.data(), bytes));
    bufs_.push_back(p);
    return (T *)p;
  }
  template <typename T>
  std::vector<T> Read(const T *p, size_t n) {
    std::vector<T> v(n);
    EXPECT_OK(atlas_backend_d2h(b_, v.data(), p, n * sizeof(T)));
    return v;
  }
  void Launch(const char *name, atlas_dim3 grid, std::vector<atlas_arg> args) {
    const atlas_kernel *k = nullptr;
    EXPECT_OK(atlas_backend_kernel_lookup(b_, ATLAS_GDN_MODULE, name, &k));
    if (k == nullptr) return;
    atlas_launch_config c{};
    c.grid = grid;
    c.block = {ATLAS_GDN_BLOCK, 1, 1};
    SCOPED_TRACE(name);
    EXPECT_OK(atlas_backend_launch_typed(b_, k, &c, args.data(), args.size()));
  }
  void Sync() { EXPECT_OK(atlas_backend_synchronize(b_)); }
  atlas_backend *b_;
  std::vector<void *> bufs_;
};

uint32_t Ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// One layer's inputs: q | k | v packed per row as the conv leaves them
// (plus 3 unused floats a row, so the stride is not the tight one).
struct Inputs {
  Shape s;
  uint32_t n_tokens, stride;
  std::vector<float> qkv, g, beta;
  std::vector<float> state;  // the initial state, kernels' layout [Hv][dv][dk]
  uint32_t QOff() const { return 0; }
  uint32_t KOff() const { return s.hk * s.dk; }
  uint32_t VOff() const { return 2 * s.hk * s.dk; }
};

Inputs MakeInputs(Shape s, uint32_t n_tokens, bool zero_state, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  in.s = s;
  in.n_tokens = n_tokens;
  in.stride = 2 * s.hk * s.dk + s.hv * s.dv + 3;
  in.qkv = Uniform((size_t)n_tokens * in.stride, -1.0f, 1.0f, rng);
  // Slow and fast decays by head (Qwen3-Next's A spans 0 to 16).
  in.g.resize((size_t)n_tokens * s.hv);
  for (size_t i = 0; i < in.g.size(); ++i) {
    bool slow = (i % s.hv) % 2 == 0;
    in.g[i] = slow ? Uniform(1, -0.3f, -0.001f, rng)[0]
                   : Uniform(1, -4.0f, -0.5f, rng)[0];
  }
  in.beta = Uniform((size_t)n_tokens * s.hv, 0.05f, 0.95f, rng);
  size_t n = (size_t)s.hv * s.dv * s.dk;
  in.state =
      zero_state ? std::vector<float>(n, 0.0f) : Uniform(n, -0.5f, 0.5f, rng);
  return in;
}

// The reference over tokens [t0, t0 + n) from `state` (transformers' layout).
std::vector<double> Reference(const Inputs &in, uint32_t t0, uint32_t n,
                              std::vector<double> *state) {
  const float *base = in.qkv.data() + (size_t)t0 * in.stride;
  return gdn_ref::DeltaRule(
      in.s, base + in.QOff(), base + in.KOff(), base + in.VOff(),
      in.g.data() + (size_t)t0 * in.s.hv, in.beta.data() + (size_t)t0 * in.s.hv,
      n, in.stride, state);
}

// Kernels' [Hv][dv][dk] to transformers' [Hv][dk][dv] and back.
std::vector<double> ToRef(const Shape &s, const std::vector<float> &st) {
  std::vector<double> r(st.size());
  for (uint32_t h = 0; h < s.hv; ++h) {
    for (uint32_t j = 0; j < s.dv; ++j) {
      for (uint32_t i = 0; i < s.dk; ++i) {
        r[((size_t)h * s.dk + i) * s.dv + j] =
            st[((size_t)h * s.dv + j) * s.dk + i];
      }
    }
  }
  return r;
}
std::vector<float> FromRef(const Shape &s, const std::vector<double> &r) {
  std::vector<float> st(r.size());
  for (uint32_t h = 0; h < s.hv; ++h) {
    for (uint32_t j = 0; j < s.dv; ++j) {
      for (uint32_t i = 0; i < s.dk; ++i) {
        st[((size_t)h * s.dv + j) * s.dk + i] =
            (float)r[((size_t)h * s.dk + i) * s.dv + j];
      }
    }
  }
  return st;
}

struct RuleOut {
  std::vector<float> out, state;
};

enum class Mode { kRecurrentAll, kTokenAtATime, kChunkedAll, kChunkedPieces };

const char *ModeName(Mode m) {
  switch (m) {
    case Mode::kRecurrentAll:
      return "recurrent";
    case Mode::kTokenAtATime:
      return "token-at-a-time";
    case Mode::kChunkedAll:
      return "chunked";
    case Mode::kChunkedPieces:
      return "chunked-in-pieces";
  }
  return "";
}

// Launches over tokens [t0, t0 + n) of `in` on the device copies.
void RuleLaunch(Device &d, const Inputs &in, bool chunked, float *out,
                float *state, const float *qkv, const float *g,
                const float *beta, uint32_t t0, uint32_t n) {
  const Shape &s = in.s;
  const float *row = qkv + (size_t)t0 * in.stride;
  float *o = out + (size_t)t0 * s.hv * s.dv;
  const float *gt = g + (size_t)t0 * s.hv, *bt = beta + (size_t)t0 * s.hv;
  if (chunked) {
    d.Launch(
        "gdn_chunked", {Ceil(s.dv, ATLAS_GDN_SLICE), s.hv, 1},
        {ATLAS_ARG_PTR(o), ATLAS_ARG_PTR(state), ATLAS_ARG_PTR(row + in.QOff()),
         ATLAS_ARG_PTR(row + in.KOff()), ATLAS_ARG_PTR(row + in.VOff()),
         ATLAS_ARG_PTR(gt), ATLAS_ARG_PTR(bt), ATLAS_ARG_U32(0),
         ATLAS_ARG_U32(n), ATLAS_ARG_U32(s.hk), ATLAS_ARG_U32(s.hv),
         ATLAS_ARG_U32(s.dk), ATLAS_ARG_U32(s.dv), ATLAS_ARG_U32(in.stride)});
  } else {
    d.Launch(
        "gdn_recurrent", {Ceil(s.dv, 8), s.hv, 1},
        {ATLAS_ARG_PTR(o), ATLAS_ARG_PTR(state), ATLAS_ARG_PTR(row + in.QOff()),
         ATLAS_ARG_PTR(row + in.KOff()), ATLAS_ARG_PTR(row + in.VOff()),
         ATLAS_ARG_PTR(gt), ATLAS_ARG_PTR(bt), ATLAS_ARG_PTR(nullptr),
         ATLAS_ARG_U32(1), ATLAS_ARG_U32(n), ATLAS_ARG_U32(s.hk),
         ATLAS_ARG_U32(s.hv), ATLAS_ARG_U32(s.dk), ATLAS_ARG_U32(s.dv),
         ATLAS_ARG_U32(in.stride)});
  }
}

RuleOut RunRule(atlas_backend *b, const Inputs &in, Mode m) {
  Device d(b);
  const Shape &s = in.s;
  float *qkv = d.Upload(in.qkv), *g = d.Upload(in.g);
  float *beta = d.Upload(in.beta), *state = d.Upload(in.state);
  float *out = d.Alloc<float>((size_t)in.n_tokens * s.hv * s.dv);
  switch (m) {
    case Mode::kRecurrentAll:
      RuleLaunch(d, in, false, out, state, qkv, g, beta, 0, in.n_tokens);
      break;
    case Mode::kTokenAtATime:
      for (uint32_t t = 0; t < in.n_tokens; ++t) {
        RuleLaunch(d, in, false, out, state, qkv, g, beta, t, 1);
      }
      break;
    case Mode::kChunkedAll:
      RuleLaunch(d, in, true, out, state, qkv, g, beta, 0, in.n_tokens);
      break;
    case Mode::kChunkedPieces: {
      // A prompt in pieces of 70 and the rest: the second continues from
      // the state the first left, in the middle of a chunk's worth.
      uint32_t first = in.n_tokens < 70 ? in.n_tokens / 2 : 70;
      RuleLaunch(d, in, true, out, state, qkv, g, beta, 0, first);
      RuleLaunch(d, in, true, out, state, qkv, g, beta, first,
                 in.n_tokens - first);
      break;
    }
  }
  d.Sync();
  RuleOut r;
  r.out = d.Read(out, (size_t)in.n_tokens * s.hv * s.dv);
  r.state = d.Read(state, in.state.size());
  return r;
}

struct RuleCase {
  const char *name;
  Shape s;
  uint32_t n_tokens;
  bool zero_state;
};

std::vector<RuleCase> RuleCases() {
  return {
      // Grouped heads (Hv = 2 Hk), dv not a multiple of the slice.
      {"gqa2_dk32_dv24", {2, 4, 32, 24}, 150, true},
      // Qwen3-Next's head size, from a state left by earlier tokens.
      {"dk128_dv128", {1, 2, 128, 128}, 133, false},
      // Odd sizes; exactly two chunks.
      {"dk40_dv48", {2, 2, 40, 48}, 128, false},
      // Shorter than one chunk.
      {"short", {1, 1, 16, 16}, 9, true},
  };
}

void RunRules(atlas_backend *b, const char *backend) {
  uint32_t seed = 11;
  for (const RuleCase &c : RuleCases()) {
    Inputs in = MakeInputs(c.s, c.n_tokens, c.zero_state, seed++);
    std::vector<double> ref_state = ToRef(c.s, in.state);
    std::vector<double> want = Reference(in, 0, c.n_tokens, &ref_state);
    std::vector<float> want_state_k = FromRef(c.s, ref_state);
    std::vector<double> want_state(want_state_k.begin(), want_state_k.end());
    RuleOut token;
    for (Mode m : {Mode::kTokenAtATime, Mode::kRecurrentAll, Mode::kChunkedAll,
                   Mode::kChunkedPieces}) {
      std::string what =
          std::string(backend) + " " + c.name + " " + ModeName(m);
      RuleOut r = RunRule(b, in, m);
      // A row: one token's output over every head.
      double e_out = RowError(r.out, want, (size_t)c.s.hv * c.s.dv);
      double e_state = RowError(r.state, want_state, (size_t)c.s.dv * c.s.dk);
      EXPECT_LE(e_out, kTol) << what << ": outputs";
      EXPECT_LE(e_state, kTol) << what << ": final state";
      printf("deltanet (%s): vs reference: outputs %.3g, state %.3g\n",
             what.c_str(), e_out, e_state);
      if (m == Mode::kTokenAtATime) {
        token = r;
        continue;
      }
      // Against token-at-a-time directly, as a prefill must.
      std::vector<double> tok_out(token.out.begin(), token.out.end());
      std::vector<double> tok_state(token.state.begin(), token.state.end());
      double d_out = RowError(r.out, tok_out, (size_t)c.s.hv * c.s.dv);
      double d_state = RowError(r.state, tok_state, (size_t)c.s.dv * c.s.dk);
      EXPECT_LE(d_out, kTol) << what << ": outputs vs token-at-a-time";
      EXPECT_LE(d_state, kTol) << what << ": state vs token-at-a-time";
    }
  }
}

// A decode step of three sequences, each in its own slot of a pool of four
// (slots 2, 0, 3; slot 1 must stay as it was), one token each.
void RunBatch(atlas_backend *b, const char *backend) {
  Shape s{2, 4, 32, 24};
  const uint32_t n_seqs = 3, pool = 4;
  const std::vector<uint32_t> slots = {2, 0, 3};
  Inputs in = MakeInputs(s, n_seqs, false, 5);
  std::mt19937 rng(6);
  const size_t per = (size_t)s.hv * s.dv * s.dk;
  std::vector<float> states = Uniform(per * pool, -0.5f, 0.5f, rng);
  Device d(b);
  float *qkv = d.Upload(in.qkv), *g = d.Upload(in.g);
  float *beta = d.Upload(in.beta), *st = d.Upload(states);
  uint32_t *sl = d.Upload(slots);
  float *out = d.Alloc<float>((size_t)n_seqs * s.hv * s.dv);
  d.Launch(
      "gdn_recurrent", {Ceil(s.dv, 8), s.hv, n_seqs},
      {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(st), ATLAS_ARG_PTR(qkv + in.QOff()),
       ATLAS_ARG_PTR(qkv + in.KOff()), ATLAS_ARG_PTR(qkv + in.VOff()),
       ATLAS_ARG_PTR(g), ATLAS_ARG_PTR(beta), ATLAS_ARG_PTR(sl),
       ATLAS_ARG_U32(n_seqs), ATLAS_ARG_U32(1), ATLAS_ARG_U32(s.hk),
       ATLAS_ARG_U32(s.hv), ATLAS_ARG_U32(s.dk), ATLAS_ARG_U32(s.dv),
       ATLAS_ARG_U32(in.stride)});
  d.Sync();
  std::vector<float> got = d.Read(out, (size_t)n_seqs * s.hv * s.dv);
  std::vector<float> got_states = d.Read(st, states.size());
  for (uint32_t q = 0; q < n_seqs; ++q) {
    std::vector<float> mine(states.begin() + slots[q] * per,
                            states.begin() + (slots[q] + 1) * per);
    std::vector<double> ref_state = ToRef(s, mine);
    std::vector<double> want = Reference(in, q, 1, &ref_state);
    std::vector<float> row(got.begin() + (size_t)q * s.hv * s.dv,
                           got.begin() + (size_t)(q + 1) * s.hv * s.dv);
    EXPECT_LE(RowError(row, want, (size_t)s.hv * s.dv), kTol)
        << backend << " seq " << q;
    std::vector<float> ws = FromRef(s, ref_state);
    std::vector<float> gs(got_states.begin() + slots[q] * per,
                          got_states.begin() + (slots[q] + 1) * per);
    EXPECT_LE(RowError(gs, std::vector<double>(ws.begin(), ws.end()), per),
              kTol)
        << backend << " seq " << q << " state";
  }
  // Slot 1 belongs to no sequence of this step.
  EXPECT_TRUE(std::equal(states.begin() + per, states.begin() + 2 * per,
                         got_states.begin() + per))
      << backend;
}

// The conv over a prompt in one launch, then two decode steps of a batch of
// two sequences (slots 1 and 0), against the reference's window.
void RunConv(atlas_backend *b, const char *backend, bool with_bias) {
  const uint32_t ch = 200, kernel = 4, n_tokens = 37;
  std::mt19937 rng(with_bias ? 21 : 22);
  std::vector<float> x = Uniform((size_t)n_tokens * ch, -2.0f, 2.0f, rng);
  std::vector<float> w = Uniform((size_t)ch * kernel, -1.0f, 1.0f, rng);
  std::vector<float> bias =
      with_bias ? Uniform(ch, -0.5f, 0.5f, rng) : std::vector<float>();
  const size_t win = (size_t)(kernel - 1) * ch;
  std::vector<float> states = Uniform(2 * win, -1.0f, 1.0f, rng);
  Device d(b);
  float *dx = d.Upload(x), *dw = d.Upload(w);
  float *db = with_bias ? d.Upload(bias) : nullptr;
  float *ds = d.Upload(states);
  float *out = d.Alloc<float>(x.size());
  // Prompt of sequence 0, whose window is slot 1 (a prefill continuing).
  const std::vector<uint32_t> one = {1};
  uint32_t *d_one = d.Upload(one);
  d.Launch("gdn_conv", {Ceil(ch, ATLAS_GDN_BLOCK), 1, 1},
           {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dx), ATLAS_ARG_PTR(ds),
            ATLAS_ARG_PTR(dw), ATLAS_ARG_PTR(db), ATLAS_ARG_PTR(d_one),
            ATLAS_ARG_U32(1), ATLAS_ARG_U32(n_tokens), ATLAS_ARG_U32(ch),
            ATLAS_ARG_U32(kernel)});
  d.Sync();
  std::vector<double> w1(states.begin() + win, states.end());
  std::vector<double> want =
      gdn_ref::Conv(x, n_tokens, ch, w, bias, kernel, &w1);
  EXPECT_LE(RowError(d.Read(out, x.size()), want, ch), kTol) << backend;
  // Two decode steps for two sequences: slot 1 (went on from the prompt)
  // and slot 0; the step's rows are [seq][1][ch].
  std::vector<double> w0(states.begin(), states.begin() + win);
  const std::vector<uint32_t> two = {1, 0};
  uint32_t *d_two = d.Upload(two);
  for (uint32_t step = 0; step < 2; ++step) {
    std::vector<float> xs = Uniform(2 * ch, -2.0f, 2.0f, rng);
    float *dxs = d.Upload(xs);
    float *outs = d.Alloc<float>(xs.size());
    d.Launch("gdn_conv", {Ceil(ch, ATLAS_GDN_BLOCK), 2, 1},
             {ATLAS_ARG_PTR(outs), ATLAS_ARG_PTR(dxs), ATLAS_ARG_PTR(ds),
              ATLAS_ARG_PTR(dw), ATLAS_ARG_PTR(db), ATLAS_ARG_PTR(d_two),
              ATLAS_ARG_U32(2), ATLAS_ARG_U32(1), ATLAS_ARG_U32(ch),
              ATLAS_ARG_U32(kernel)});
    d.Sync();
    std::vector<float> got = d.Read(outs, xs.size());
    std::vector<float> x1(xs.begin(), xs.begin() + ch);
    std::vector<float> x0(xs.begin() + ch, xs.end());
    std::vector<double> want1 = gdn_ref::Conv(x1, 1, ch, w, bias, kernel, &w1);
    std::vector<double> want0 = gdn_ref::Conv(x0, 1, ch, w, bias, kernel, &w0);
    want1.insert(want1.end(), want0.begin(), want0.end());
    EXPECT_LE(RowError(got, want1, ch), kTol) << backend << " step " << step;
  }
  std::vector<float> got_states = d.Read(ds, states.size());
  std::vector<double> want_states(w0.begin(), w0.end());
  want_states.insert(want_states.end(), w1.begin(), w1.end());
  EXPECT_LE(RowError(got_states, want_states, ch), kTol) << backend;
}

void RunGatesAndNorm(atlas_backend *b, const char *backend) {
  std::mt19937 rng(31);
  const uint32_t rows = 19, heads = 6, dim = 40;
  std::vector<float> a = Uniform((size_t)rows * heads, -4.0f, 4.0f, rng);
  a[3] = 30.0f;  // softplus's linear branch (above 20)
  std::vector<float> bb = Uniform(a.size(), -4.0f, 4.0f, rng);
  std::vector<float> a_log(heads), dt_bias = Uniform(heads, 0.5f, 1.5f, rng);
  for (float &f : a_log) f = logf(Uniform(1, 0.01f, 16.0f, rng)[0]);
  std::vector<float> x = Uniform((size_t)rows * dim, -2.0f, 2.0f, rng);
  std::vector<float> z = Uniform(x.size(), -3.0f, 3.0f, rng);
  std::vector<float> nw = Uniform(dim, 0.5f, 1.5f, rng);
  Device d(b);
  float *dg = d.Alloc<float>(a.size()), *dbeta = d.Alloc<float>(a.size());
  float *dn = d.Alloc<float>(x.size());
  d.Launch("gdn_gates", {Ceil(rows * heads, ATLAS_GDN_BLOCK), 1, 1},
           {ATLAS_ARG_PTR(dg), ATLAS_ARG_PTR(dbeta), ATLAS_ARG_PTR(d.Upload(a)),
            ATLAS_ARG_PTR(d.Upload(bb)), ATLAS_ARG_PTR(d.Upload(a_log)),
            ATLAS_ARG_PTR(d.Upload(dt_bias)), ATLAS_ARG_U32(rows),
            ATLAS_ARG_U32(heads)});
  d.Launch("gdn_norm_gate", {Ceil(rows, 8), 1, 1},
           {ATLAS_ARG_PTR(dn), ATLAS_ARG_PTR(d.Upload(x)),
            ATLAS_ARG_PTR(d.Upload(z)), ATLAS_ARG_PTR(d.Upload(nw)),
            ATLAS_ARG_U32(rows), ATLAS_ARG_U32(dim), ATLAS_ARG_F32(1e-6f)});
  d.Sync();
  std::vector<double> g, beta;
  gdn_ref::Gates(a, bb, a_log, dt_bias, &g, &beta);
  EXPECT_LE(RowError(d.Read(dg, a.size()), g, 1), kTol) << backend;
  EXPECT_LE(RowError(d.Read(dbeta, a.size()), beta, 1), kTol) << backend;
  EXPECT_LE(RowError(d.Read(dn, x.size()),
                     gdn_ref::NormGate(x, z, nw, dim, 1e-6), dim),
            kTol)
      << backend;
}

const atlas_module_def *kMods[1] = {&atlas_gdn_module};
const atlas_module_set kSet = {kMods, 1};

void RunAll(atlas_backend *b, const char *backend) {
  RunRules(b, backend);
  RunBatch(b, backend);
  RunConv(b, backend, true);
  RunConv(b, backend, false);
  RunGatesAndNorm(b, backend);
}

TEST(DeltaNetKernels, HostMatchesTheReference) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &kSet;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  RunAll(b, "host");
  EXPECT_OK(atlas_backend_destroy(b));
}

TEST(DeltaNetKernels, CudaMatchesTheReference) {
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

}  // namespace
