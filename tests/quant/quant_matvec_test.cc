// Module "quant"'s matrix-vector product on the host and on CUDA against the
// tests' own dequantizer (quant_reference.h): hand-made packed tensors of
// every layout, scale type and grouping the formats use. The host twin sums
// each row in column order, so it must equal the reference's f32 sum bit for
// bit; CUDA sums in another order and must agree within 1e-5 of the row's
// sum of |w x|. CUDA cases skip where there is no GPU.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/quant_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/quant/gguf_blocks_reference.h"
#include "tests/quant/quant_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using quant_ref::Format;
using quant_ref::QuantMatrix;
using quant_ref::ScaleType;
using quant_ref::Stored;

uint32_t LayoutOf(Format f) {
  switch (f) {
    case Format::kFp8:
      return ATLAS_QUANT_LAYOUT_FP8;
    case Format::kIntRows:
      return ATLAS_QUANT_LAYOUT_INT_ROWS;
    case Format::kGptq:
      return ATLAS_QUANT_LAYOUT_GPTQ;
    case Format::kAwq:
      return ATLAS_QUANT_LAYOUT_AWQ;
  }
  return 0;
}

uint32_t FlagsOf(const QuantMatrix &m) {
  uint32_t f = m.scale_type == ScaleType::kF32   ? ATLAS_QUANT_SCALE_F32
               : m.scale_type == ScaleType::kF16 ? ATLAS_QUANT_SCALE_F16
                                                 : ATLAS_QUANT_SCALE_BF16;
  if (m.zeros) f |= ATLAS_QUANT_FLAG_ZEROS;
  return f | (m.zero_offset << ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT);
}

// The cases: every format with the groupings and options its checkpoints use.
// FP8's scale blocks set after Random: keep the scales the blocks need.
void FitScales(QuantMatrix &m) {
  size_t n = (size_t)m.ScaleRows() * m.Groups();
  if (!m.scale32.empty()) m.scale32.resize(n);
  if (!m.scale16.empty()) m.scale16.resize(n);
}

std::vector<QuantMatrix> Cases() {
  std::mt19937 rng(52);
  std::vector<QuantMatrix> c;
  // fp8 (block 128 x 128, F32 weight_scale_inv), partial blocks at the edges.
  QuantMatrix m = quant_ref::Random(Format::kFp8, 300, 520, 8, 128, false,
                                    ScaleType::kF32, rng);
  m.block_n = 128;
  FitScales(m);
  c.push_back(m);
  // compressed-tensors float-quantized: tensor, channel, block.
  m = quant_ref::Random(Format::kFp8, 64, 96, 8, 0, false, ScaleType::kF32,
                        rng);
  m.block_n = 0;
  FitScales(m);
  c.push_back(m);
  m = quant_ref::Random(Format::kFp8, 96, 200, 8, 0, false, ScaleType::kBf16,
                        rng);
  c.push_back(m);
  m = quant_ref::Random(Format::kFp8, 130, 256, 8, 128, false, ScaleType::kBf16,
                        rng);
  m.block_n = 128;
  FitScales(m);
  c.push_back(m);
  // compressed-tensors pack-quantized: int4 and int8, groups 32 / 64 / 128
  // and channel, symmetric or with zero points, actorder; columns that do
  // not fill the last word.
  for (uint32_t bits : {4u, 8u}) {
    for (uint32_t group : {32u, 64u, 128u, 0u}) {
      for (bool zeros : {false, true}) {
        c.push_back(quant_ref::Random(Format::kIntRows, 72, 260, bits, group,
                                      zeros, ScaleType::kBf16, rng));
      }
    }
  }
  m = quant_ref::Random(Format::kIntRows, 40, 256, 4, 64, true, ScaleType::kF16,
                        rng);
  quant_ref::UsePermutedGroups(m, rng);
  c.push_back(m);
  // GPTQ: 4 and 8 bits, groups and channel, sym (zeros stored all the
  // same) or not, the original format's zero - 1, desc_act.
  for (uint32_t bits : {4u, 8u}) {
    for (uint32_t group : {32u, 128u, 0u}) {
      for (bool desc_act : {false, true}) {
        m = quant_ref::Random(Format::kGptq, 68, 256, bits, group, true,
                              ScaleType::kF16, rng);
        quant_ref::UseZeroOffset(m, 1);
        if (desc_act) quant_ref::UsePermutedGroups(m, rng);
        c.push_back(m);
      }
    }
  }
  m = quant_ref::Random(Format::kGptq, 64, 128, 4, 64, true, ScaleType::kF16,
                        rng);
  c.push_back(m);  // gptq_v2: zeros as they are
  // AWQ gemm: 4 bits, groups 64 and 128, zero points in AWQ's order.
  for (uint32_t group : {64u, 128u}) {
    c.push_back(quant_ref::Random(Format::kAwq, 96, 384, 4, group, true,
                                  ScaleType::kF16, rng));
  }
  return c;
}

// Runs quant_matvec (count 0) or quant_matmul (count rows of x) on `b`;
// returns out (count x rows), which starts as `start` (NaN: every element
// must be written) and is added to with `accumulate`.
std::vector<float> RunKernel(atlas_backend *b, const QuantMatrix &m,
                             const Stored &s, const std::vector<float> &x,
                             uint32_t count = 0, uint32_t accumulate = 0,
                             float start = NAN, uint32_t layout = 0) {
  std::vector<void *> bufs;
  auto upload = [&](const void *data, size_t bytes) -> void * {
    if (bytes == 0) return nullptr;
    void *p = nullptr;
    EXPECT_OK(atlas_backend_alloc(b, bytes, &p));
    EXPECT_OK(atlas_backend_h2d(b, p, data, bytes));
    bufs.push_back(p);
    return p;
  };
  const size_t n_out = (size_t)m.rows * (count ? count : 1);
  std::vector<float> poison(n_out, start), out(n_out, 0.0f);
  void *d_out = upload(poison.data(), poison.size() * 4);
  void *d_x = upload(x.data(), x.size() * 4);
  void *d_w = upload(s.w.data(), s.w.size());
  void *d_s = upload(s.scales.data(), s.scales.size());
  void *d_z = upload(s.zeros.data(), s.zeros.size());
  void *d_g = upload(s.g_idx.data(), s.g_idx.size() * 4);
  const atlas_kernel *k = nullptr;
  EXPECT_OK(atlas_backend_kernel_lookup(
      b, ATLAS_QUANT_MODULE,
      count ? ATLAS_QUANT_MATMUL_KERNEL : ATLAS_QUANT_MATVEC_KERNEL, &k));
  atlas_launch_config c{};
  c.grid = {(m.rows + ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK - 1) /
                ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK,
            count ? (count + ATLAS_QUANT_MATMUL_X_ROWS - 1) /
                        ATLAS_QUANT_MATMUL_X_ROWS
                  : 1,
            1};
  c.block = {ATLAS_QUANT_MATVEC_BLOCK, 1, 1};
  std::vector<atlas_arg> args = {ATLAS_ARG_PTR(d_out), ATLAS_ARG_PTR(d_x),
                                 ATLAS_ARG_PTR(d_w),   ATLAS_ARG_PTR(d_s),
                                 ATLAS_ARG_PTR(d_z),   ATLAS_ARG_PTR(d_g)};
  if (count) args.push_back(ATLAS_ARG_U32(count));
  for (uint32_t v : {m.rows, m.cols, layout ? layout : LayoutOf(m.format),
                     m.bits, m.group_k, m.block_n, FlagsOf(m), accumulate}) {
    args.push_back(ATLAS_ARG_U32(v));
  }
  if (k != nullptr) {
    EXPECT_OK(atlas_backend_launch_typed(b, k, &c, args.data(), args.size()));
    EXPECT_OK(atlas_backend_synchronize(b));
  }
  EXPECT_OK(atlas_backend_d2h(b, out.data(), d_out, out.size() * 4));
  for (void *p : bufs) EXPECT_OK(atlas_backend_free(b, p));
  return out;
}

std::vector<float> RunMatvec(atlas_backend *b, const QuantMatrix &m,
                             const Stored &s, const std::vector<float> &x) {
  return RunKernel(b, m, s, x);
}

std::vector<float> RandomX(uint32_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float &v : x) v = d(rng);
  return x;
}

// A GGUF matrix through the quant kernels: out (count x rows; count 0: one
// vector) from `x`, added to `start` with accumulate.
uint32_t GgufLayout(gguf_ref::Type t) {
  switch (t) {
    case gguf_ref::Type::kQ8_0:
      return ATLAS_QUANT_LAYOUT_GGUF_Q8_0;
    case gguf_ref::Type::kQ4_0:
      return ATLAS_QUANT_LAYOUT_GGUF_Q4_0;
    case gguf_ref::Type::kQ4_K:
      return ATLAS_QUANT_LAYOUT_GGUF_Q4_K;
    case gguf_ref::Type::kQ5_K:
      return ATLAS_QUANT_LAYOUT_GGUF_Q5_K;
    case gguf_ref::Type::kQ6_K:
      return ATLAS_QUANT_LAYOUT_GGUF_Q6_K;
  }
  return 0;
}

std::vector<float> RunGguf(atlas_backend *b, const gguf_ref::Matrix &g,
                           const std::vector<float> &x, uint32_t count,
                           uint32_t accumulate, float start) {
  QuantMatrix m;
  m.format = Format::kFp8;  // unused: the layout is given
  m.rows = g.rows, m.cols = g.cols, m.bits = 8, m.group_k = 0, m.block_n = 0;
  Stored s;
  s.w = g.bytes;
  return RunKernel(b, m, s, x, count, accumulate, start, GgufLayout(g.type));
}

std::vector<gguf_ref::Matrix> GgufCases() {
  std::mt19937 rng(77);
  std::vector<gguf_ref::Matrix> c;
  for (gguf_ref::Type t :
       {gguf_ref::Type::kQ8_0, gguf_ref::Type::kQ4_0, gguf_ref::Type::kQ4_K,
        gguf_ref::Type::kQ5_K, gguf_ref::Type::kQ6_K}) {
    c.push_back(gguf_ref::Random(t, 40, 512, rng));
  }
  return c;
}

class QuantMatvec : public ::testing::Test {
 protected:
  const atlas_module_def *mods_[1] = {&atlas_quant_module};
  atlas_module_set set_{mods_, 1};
};

// The tests' packer and unpacker agree: what Pack stores, Unpack reads back.
TEST(QuantReference, PackThenUnpackGivesTheMatrixBack) {
  for (const QuantMatrix &m : Cases()) {
    QuantMatrix back = quant_ref::Unpack(m, quant_ref::Pack(m));
    EXPECT_EQ(back.code, m.code) << quant_ref::Describe(m);
    EXPECT_EQ(back.zero, m.zero) << quant_ref::Describe(m);
    EXPECT_EQ(back.scale32, m.scale32) << quant_ref::Describe(m);
    EXPECT_EQ(back.scale16, m.scale16) << quant_ref::Describe(m);
    EXPECT_EQ(back.g_idx, m.g_idx) << quant_ref::Describe(m);
  }
}

// Words written by hand from the formats' descriptions, so that a packing
// convention the packer and the kernel might share wrongly cannot pass.
TEST_F(QuantMatvec, HandPackedWordsReadAsTheFormatsSay) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  auto run = [&](uint32_t layout, uint32_t rows, uint32_t cols,
                 std::vector<uint32_t> w, std::vector<float> scales,
                 std::vector<uint32_t> zeros, uint32_t flags,
                 std::vector<float> x) {
    QuantMatrix m;
    m.rows = rows, m.cols = cols, m.bits = 4, m.group_k = 0;
    m.format = layout == ATLAS_QUANT_LAYOUT_AWQ    ? Format::kAwq
               : layout == ATLAS_QUANT_LAYOUT_GPTQ ? Format::kGptq
                                                   : Format::kIntRows;
    m.zero_offset = flags >> ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT;
    m.zeros = (flags & ATLAS_QUANT_FLAG_ZEROS) != 0;
    Stored s;
    s.w.resize(w.size() * 4);
    memcpy(s.w.data(), w.data(), s.w.size());
    s.scales.resize(scales.size() * 4);
    memcpy(s.scales.data(), scales.data(), s.scales.size());
    s.zeros.resize(zeros.size() * 4);
    if (!zeros.empty()) memcpy(s.zeros.data(), zeros.data(), s.zeros.size());
    return RunMatvec(b, m, s, x);
  };
  // AWQ: one word holds rows 0..7 of column 0 in the order 0 2 4 6 1 3 5 7;
  // rows 0..7 hold codes 1..8, zero 0, scale 1.
  std::vector<float> got =
      run(ATLAS_QUANT_LAYOUT_AWQ, 8, 1, {0x86427531u}, {1, 1, 1, 1, 1, 1, 1, 1},
          {0u}, ATLAS_QUANT_FLAG_ZEROS, {1.0f});
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  // GPTQ: one word holds columns 0..7 of row 0, lowest nibble first; the
  // stored zero 7 means 8 in the original format; scale 0.5.
  got = run(ATLAS_QUANT_LAYOUT_GPTQ, 1, 8, {0xfedcba98u}, {0.5f}, {7u},
            ATLAS_QUANT_FLAG_ZEROS | (1u << ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT),
            {1, 0, 0, 0, 0, 0, 0, 100});
  // codes 8 (col 0) and 15 (col 7): (8-8)*0.5*1 + (15-8)*0.5*100 = 350.
  EXPECT_EQ(got, (std::vector<float>{350.0f}));
  // compressed-tensors int4, symmetric: code 0 is -8, code 15 is +7.
  got = run(ATLAS_QUANT_LAYOUT_INT_ROWS, 1, 8, {0xf0000000u}, {2.0f}, {}, 0,
            {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(got, (std::vector<float>{2.0f * (-8 * 7 + 7)}));
  EXPECT_OK(atlas_backend_destroy(b));
}

// Host twin: equal, bit for bit, to the f32 sum in column order over the
// reference's dequantized matrix.
TEST_F(QuantMatvec, HostEqualsTheReferenceDequantizer) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  std::mt19937 rng(7);
  int n = 0;
  for (const QuantMatrix &m : Cases()) {
    Stored s = quant_ref::Pack(m);
    std::vector<float> w = quant_ref::Dequantize(quant_ref::Unpack(m, s));
    std::vector<float> x = RandomX(m.cols, rng);
    std::vector<float> got = RunMatvec(b, m, s, x);
    for (uint32_t r = 0; r < m.rows; ++r) {
      float want = 0.0f;
      for (uint32_t k = 0; k < m.cols; ++k) {
        want += w[(size_t)r * m.cols + k] * x[k];
      }
      ASSERT_EQ(got[r], want) << quant_ref::Describe(m) << " row " << r;
    }
    ++n;
  }
  printf("quant_matvec (host): %d layouts equal the reference\n", n);
  EXPECT_OK(atlas_backend_destroy(b));
}

// quant_matmul on the host: row i of the product equals the reference's
// sum for x[i] bit for bit; accumulate adds one f32 sum to what out held.
TEST_F(QuantMatvec, HostMatmulEqualsTheReferenceRowByRow) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  std::mt19937 rng(11);
  std::vector<QuantMatrix> cases = Cases();
  for (size_t ci = 0; ci < cases.size(); ci += 3) {
    const QuantMatrix &m = cases[ci];
    Stored s = quant_ref::Pack(m);
    std::vector<float> w = quant_ref::Dequantize(quant_ref::Unpack(m, s));
    const uint32_t count = 11;
    std::vector<float> x = RandomX(m.cols * count, rng);
    std::vector<float> got = RunKernel(b, m, s, x, count);
    std::vector<float> acc = RunKernel(b, m, s, x, count, 1, 0.5f);
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t r = 0; r < m.rows; ++r) {
        float want = 0.0f;
        for (uint32_t k = 0; k < m.cols; ++k) {
          want += w[(size_t)r * m.cols + k] * x[(size_t)i * m.cols + k];
        }
        ASSERT_EQ(got[(size_t)i * m.rows + r], want)
            << quant_ref::Describe(m) << " x row " << i << " row " << r;
        ASSERT_EQ(acc[(size_t)i * m.rows + r], 0.5f + want);
      }
    }
  }
  EXPECT_OK(atlas_backend_destroy(b));
}

TEST_F(QuantMatvec, CudaMatchesTheReferenceDequantizer) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  StatusResult r = Take(atlas_cuda_backend_create(&o, &b));
  if (r.code == ATLAS_STATUS_UNAVAILABLE) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  std::mt19937 rng(7);
  int n = 0;
  for (const QuantMatrix &m : Cases()) {
    Stored s = quant_ref::Pack(m);
    std::vector<float> w = quant_ref::Dequantize(quant_ref::Unpack(m, s));
    std::vector<float> x = RandomX(m.cols, rng);
    std::vector<float> got = RunMatvec(b, m, s, x);
    double worst = 0;
    for (uint32_t row = 0; row < m.rows; ++row) {
      double want = 0, mag = 0;
      for (uint32_t k = 0; k < m.cols; ++k) {
        double p = (double)w[(size_t)row * m.cols + k] * x[k];
        want += p;
        mag += fabs(p);
      }
      ASSERT_FALSE(std::isnan(got[row])) << quant_ref::Describe(m);
      double err = fabs(got[row] - want) / (mag > 0 ? mag : 1.0);
      if (err > worst) worst = err;
      ASSERT_LE(err, 1e-5) << quant_ref::Describe(m) << " row " << row;
    }
    // The product over 11 rows of x (two blocks of 8 along y), added to 0.5.
    const uint32_t count = 11;
    std::vector<float> xs = RandomX(m.cols * count, rng);
    std::vector<float> got2 = RunKernel(b, m, s, xs, count, 1, 0.5f);
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t row = 0; row < m.rows; ++row) {
        double want = 0.5, mag = 0.5;
        for (uint32_t k = 0; k < m.cols; ++k) {
          double p =
              (double)w[(size_t)row * m.cols + k] * xs[(size_t)i * m.cols + k];
          want += p;
          mag += fabs(p);
        }
        double err = fabs(got2[(size_t)i * m.rows + row] - want) / mag;
        if (err > worst) worst = err;
        ASSERT_LE(err, 1e-5) << quant_ref::Describe(m) << " matmul x row " << i
                             << " row " << row;
      }
    }
    printf("quant_matvec, quant_matmul (cuda): %-60s worst %.3g\n",
           quant_ref::Describe(m).c_str(), worst);
    ++n;
  }
  printf("quant_matvec (cuda): %d layouts match the reference\n", n);
  EXPECT_OK(atlas_backend_destroy(b));
}

// GGUF blocks on the host: one vector and 11 rows with accumulate, each
// output equal bit for bit to the reference's f32 sum in column order.
TEST_F(QuantMatvec, HostGgufBlocksEqualTheReference) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  std::mt19937 rng(8);
  for (const gguf_ref::Matrix &g : GgufCases()) {
    const uint32_t count = 11;
    std::vector<float> x = RandomX(g.cols * count, rng);
    std::vector<float> v = RunGguf(b, g, x, 0, 0, NAN);
    std::vector<float> mm = RunGguf(b, g, x, count, 1, 0.5f);
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t r = 0; r < g.rows; ++r) {
        float want = 0.0f;
        for (uint32_t k = 0; k < g.cols; ++k) {
          want += g.value[(size_t)r * g.cols + k] * x[(size_t)i * g.cols + k];
        }
        if (i == 0) ASSERT_EQ(v[r], want) << gguf_ref::Name(g.type);
        ASSERT_EQ(mm[(size_t)i * g.rows + r], 0.5f + want)
            << gguf_ref::Name(g.type) << " x row " << i << " row " << r;
      }
    }
  }
  EXPECT_OK(atlas_backend_destroy(b));
}

TEST_F(QuantMatvec, CudaGgufBlocksMatchTheReference) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &set_;
  StatusResult r = Take(atlas_cuda_backend_create(&o, &b));
  if (r.code == ATLAS_STATUS_UNAVAILABLE) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  std::mt19937 rng(8);
  for (const gguf_ref::Matrix &g : GgufCases()) {
    const uint32_t count = 11;
    std::vector<float> x = RandomX(g.cols * count, rng);
    std::vector<float> v = RunGguf(b, g, x, 0, 0, NAN);
    std::vector<float> mm = RunGguf(b, g, x, count, 1, 0.5f);
    double worst = 0;
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t row = 0; row < g.rows; ++row) {
        double want = 0, mag = 0;
        for (uint32_t k = 0; k < g.cols; ++k) {
          double p = (double)g.value[(size_t)row * g.cols + k] *
                     x[(size_t)i * g.cols + k];
          want += p;
          mag += fabs(p);
        }
        double e =
            fabs(mm[(size_t)i * g.rows + row] - (0.5 + want)) / (mag + 0.5);
        if (i == 0) e = fmax(e, fabs(v[row] - want) / mag);
        worst = fmax(worst, e);
        ASSERT_LE(e, 1e-5) << gguf_ref::Name(g.type) << " row " << row;
      }
    }
    printf("quant_matvec, quant_matmul (cuda): gguf %s %ux%u worst %.3g\n",
           gguf_ref::Name(g.type), g.rows, g.cols, worst);
  }
  EXPECT_OK(atlas_backend_destroy(b));
}

}  // namespace
