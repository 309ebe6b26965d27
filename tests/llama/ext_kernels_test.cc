// The decoder_ext module's host kernels (kernels/ext_kernels.h) against the
// formulas they stand for, computed here in double: the embedding's scale,
// the logits' soft-cap, GELU-tanh times up, and the attention whose scores
// take a scale and a cap (with 1 / sqrt(head_dim) and no cap it is the base
// attention, bit for bit).
#include <math.h>

#include <vector>

#include "atlas/kernels/ext_kernels.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/forward.h"
#include "atlas/runtime/device/host_backend.h"
#include "gtest/gtest.h"
#include "tests/runtime/test_util.h"

namespace {

#define P(x) ATLAS_ARG_PTR(x)
#define U(x) ATLAS_ARG_U32(x)
#define F(x) ATLAS_ARG_F32(x)

class ExtKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    atlas_backend_options o{};
    o.modules = &atlas_decoder_ext_module_set;
    ASSERT_OK(atlas_host_backend_create(&o, &b_));
    ASSERT_OK(atlas_forward_ctx_make(b_, nullptr, &ctx_));
  }
  void TearDown() override {
    for (void *p : live_) EXPECT_OK(atlas_backend_free(b_, p));
    ASSERT_OK(atlas_backend_destroy(b_));
  }
  float *Put(const std::vector<float> &v) {
    void *p = nullptr;
    EXPECT_OK(atlas_backend_alloc(b_, v.size() * sizeof(float), &p));
    EXPECT_OK(atlas_backend_h2d(b_, p, v.data(), v.size() * sizeof(float)));
    live_.push_back(p);
    return static_cast<float *>(p);
  }
  std::vector<float> Get(const float *p, size_t n) {
    std::vector<float> v(n);
    EXPECT_OK(atlas_backend_d2h(b_, v.data(), p, n * sizeof(float)));
    return v;
  }
  void Run(const char *module, const char *name, const atlas_arg *args,
           size_t n) {
    ASSERT_OK(atlas_forward_dispatch(&ctx_, module, name, {1, 1, 1}, {1, 1, 1},
                                     args, n));
  }
  atlas_backend *b_ = nullptr;
  atlas_forward_ctx ctx_{};
  std::vector<void *> live_;
};

std::vector<float> Ramp(size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * (float)i / (float)(n - 1);
  return v;
}

TEST_F(ExtKernels, ScaleSoftcapGelu) {
  std::vector<float> x = Ramp(101, -80.0f, 80.0f);
  float *d = Put(x);
  atlas_arg s[] = {P(d), U(101), F(3.5f)};
  Run(ATLAS_DECODER_EXT_MODULE, "scale", s, 3);
  std::vector<float> got = Get(d, 101);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], x[i] * 3.5f);

  float *c = Put(x);
  atlas_arg cap[] = {P(c), U(101), F(30.0f)};
  Run(ATLAS_DECODER_EXT_MODULE, "softcap", cap, 3);
  got = Get(c, 101);
  for (size_t i = 0; i < x.size(); ++i) {
    double want = 30.0 * tanh((double)x[i] / 30.0);
    EXPECT_NEAR(got[i], want, 1e-5 * 30.0) << x[i];
    EXPECT_LT(fabs(got[i]), 30.0f);  // it caps: |x| reaches 80
  }

  std::vector<float> a = Ramp(101, -6.0f, 6.0f), up = Ramp(101, 2.0f, -1.0f);
  float *da = Put(a), *du = Put(up);
  atlas_arg g[] = {P(da), P(du), U(101)};
  Run(ATLAS_DECODER_EXT_MODULE, "gelu_tanh_mul", g, 3);
  got = Get(da, 101);
  for (size_t i = 0; i < a.size(); ++i) {
    double v = a[i];
    double gelu =
        0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(got[i], gelu * up[i], 2e-6 * (1 + fabs(gelu * up[i]))) << v;
  }
}

// One query token over 7 cached positions, 2 query heads on 1 KV head.
TEST_F(ExtKernels, AttentionScaleAndCap) {
  const uint32_t heads = 2, kv = 1, hd = 4, seq = 7;
  std::vector<float> q = Ramp(heads * hd, -2.0f, 3.0f);
  std::vector<float> k = Ramp(seq * kv * hd, 1.5f, -2.5f);
  std::vector<float> v = Ramp(seq * kv * hd, -1.0f, 1.0f);
  float *dq = Put(q), *dk = Put(k), *dv = Put(v);
  float *att = Put(std::vector<float>(heads * seq));
  std::vector<uint32_t> step = {0, seq - 1};
  void *dstep = nullptr;
  ASSERT_OK(atlas_backend_alloc(b_, 8, &dstep));
  ASSERT_OK(atlas_backend_h2d(b_, dstep, step.data(), 8));
  live_.push_back(dstep);
  float *base = Put(std::vector<float>(heads * hd));
  float *ext = Put(std::vector<float>(heads * hd));
  atlas_arg a[] = {P(base), P(dq), P(dk),    P(dv), P(att), U(heads),
                   U(kv),   U(hd), P(dstep), U(0),  F(0),   F(0)};
  Run("token", "attention_f32", a, 10);
  a[0] = P(ext);
  a[10] = F(1.0f / sqrtf((float)hd));
  Run(ATLAS_DECODER_EXT_MODULE, "attention_ext_f32", a, 12);
  EXPECT_EQ(Get(base, heads * hd), Get(ext, heads * hd));
  // A scale of 0.9 and a cap of 1.5 (the scores reach about 6).
  a[10] = F(0.9f);
  a[11] = F(1.5f);
  Run(ATLAS_DECODER_EXT_MODULE, "attention_ext_f32", a, 12);
  std::vector<float> got = Get(ext, heads * hd);
  for (uint32_t h = 0; h < heads; ++h) {
    double w[seq], sum = 0, top = -1e300;
    for (uint32_t t = 0; t < seq; ++t) {
      double s = 0;
      for (uint32_t i = 0; i < hd; ++i)
        s += (double)q[h * hd + i] * k[t * hd + i];
      w[t] = 1.5 * tanh(s * 0.9 / 1.5);
      top = fmax(top, w[t]);
    }
    for (uint32_t t = 0; t < seq; ++t) sum += (w[t] = exp(w[t] - top));
    for (uint32_t i = 0; i < hd; ++i) {
      double o = 0;
      for (uint32_t t = 0; t < seq; ++t) o += w[t] / sum * v[t * hd + i];
      EXPECT_NEAR(got[h * hd + i], o, 1e-5) << "head " << h << " dim " << i;
    }
  }
}

}  // namespace
