// The CUDA backend's matmul (cuBLASLt, dlopen'ed) against the host backend's
// (plain f32 loops, the reference), and its absence: ATLAS_CUBLASLT=0 or a
// library that is not there leaves matmul UNIMPLEMENTED with one INFO line;
// with background_modules, its start deferred to a thread of its own.
// Skips where there is no GPU (fails under ATLAS_REQUIRE_GPU=1).
#include <stdlib.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/runtime/test_util.h"

namespace {

struct Lines {
  std::vector<std::string> info;
};

// INFO and WARNING lines (a cuBLASLt that will not start says so as a
// WARNING).
void Collect(void *ctx, atlas_log_level level, const char *message) {
  if (level >= ATLAS_LOG_INFO)
    static_cast<Lines *>(ctx)->info.push_back(message);
}

// Backend options whose sink collects into *lines; `background`: cuBLASLt's
// start deferred to atlas_backend_modules_start (background_modules).
atlas_backend_options LinesTo(Lines *lines, bool background) {
  atlas_backend_options o{};
  o.log.fn = Collect;
  o.log.ctx = lines;
  o.background_modules = background;
  return o;
}

struct Shape {
  size_t m, n, k;
};

// out = x w^T on `b` for 16-bit bits w, x; `offset` elements into each
// buffer (an offset of 1 leaves every operand misaligned for wide loads).
// With `start`: out starts as *start and the product is accumulated into it
// in place (ATLAS_MATMUL_ACCUMULATE).
std::vector<float> Multiply(atlas_backend *b, atlas_matmul_type type,
                            const Shape &sh, const std::vector<uint16_t> &w,
                            const std::vector<uint16_t> &x, size_t offset,
                            atlas_stream *stream,
                            const std::vector<float> *start = nullptr) {
  void *dw = nullptr, *dx = nullptr, *dout = nullptr;
  std::vector<float> got =
      start ? *start : std::vector<float>(sh.m * sh.n, NAN);
  EXPECT_OK(atlas_backend_alloc(b, (w.size() + offset) * 2, &dw));
  EXPECT_OK(atlas_backend_alloc(b, (x.size() + offset) * 2, &dx));
  EXPECT_OK(atlas_backend_alloc(b, (got.size() + offset) * 4, &dout));
  uint16_t *w16 = (uint16_t *)dw + offset, *x16 = (uint16_t *)dx + offset;
  float *out = (float *)dout + offset;
  EXPECT_OK(atlas_backend_h2d(b, w16, w.data(), w.size() * 2));
  EXPECT_OK(atlas_backend_h2d(b, x16, x.data(), x.size() * 2));
  EXPECT_OK(
      atlas_backend_h2d(b, out, got.data(), got.size() * 4));  // NaN or start
  EXPECT_OK(atlas_backend_matmul(
      b, stream, out, w16, x16, type, sh.m, sh.n, sh.k,
      start ? ATLAS_MATMUL_ACCUMULATE : ATLAS_MATMUL_WRITE));
  EXPECT_OK(atlas_backend_synchronize(b));
  EXPECT_OK(atlas_backend_d2h(b, got.data(), out, got.size() * 4));
  EXPECT_OK(atlas_backend_free(b, dw));
  EXPECT_OK(atlas_backend_free(b, dx));
  EXPECT_OK(atlas_backend_free(b, dout));
  return got;
}

void Random16(std::mt19937 *rng, atlas_matmul_type type, size_t n,
              std::vector<uint16_t> *bits, std::vector<float> *values) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  bits->resize(n);
  values->resize(n);
  for (size_t i = 0; i < n; ++i) {
    float v = d(*rng);
    uint16_t h =
        type == ATLAS_MATMUL_BF16 ? atlas_f32_to_bf16(v) : atlas_f32_to_f16(v);
    (*bits)[i] = h;
    (*values)[i] =
        type == ATLAS_MATMUL_BF16 ? atlas_bf16_to_f32(h) : atlas_f16_to_f32(h);
  }
}

// Both sides sum exact f32 products (16-bit times 16-bit) in f32, in
// different orders: each is within about k * 2^-24 * sum |x w| of the exact
// sum (the host exactly that, the device twice that for tensor-core adders
// that align before rounding), so they differ by at most 3 * k * 2^-24 *
// sum |x w|. The largest |got - want| as a fraction of that bound (above 1
// or NaN: out of it), and where (*at, row-major).
double WorstOfBound(const Shape &sh, const std::vector<float> &wv,
                    const std::vector<float> &xv, const std::vector<float> &got,
                    const std::vector<float> &want, size_t *at) {
  double worst = 0;
  *at = 0;
  for (size_t i = 0; i < sh.m * sh.n; ++i) {
    const size_t r = i / sh.n, c = i % sh.n;
    double mag = 0;
    for (size_t q = 0; q < sh.k; ++q) {
      mag += std::fabs((double)xv[r * sh.k + q] * (double)wv[c * sh.k + q]);
    }
    const double bound =
        3.0 * (double)sh.k * std::ldexp(1.0, -24) * mag + 1e-30;
    const double ratio = std::fabs((double)got[i] - (double)want[i]) / bound;
    if (std::isnan(ratio) || ratio > worst) {
      worst = ratio;
      *at = i;
      if (std::isnan(ratio)) break;  // an output left unwritten: the worst
    }
  }
  return worst;
}

TEST(CudaMatmul, CublasLtMatchesTheHostBackend) {
  atlas_backend *cuda = nullptr;
  Lines lines;
  atlas_backend_options o = LinesTo(&lines, false);
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  StatusResult asked = Take(
      atlas_backend_matmul(cuda, nullptr, nullptr, nullptr, nullptr,
                           ATLAS_MATMUL_BF16, 0, 0, 0, ATLAS_MATMUL_WRITE));
  if (asked.code == ATLAS_STATUS_UNIMPLEMENTED) {
    std::string why = lines.info.empty() ? asked.message : lines.info[0];
    EXPECT_OK(atlas_backend_destroy(cuda));
    ATLAS_CUDA_SKIP("no cuBLASLt on this machine: " << why);
  }
  ASSERT_EQ(asked.code, ATLAS_STATUS_OK) << asked.message;
  EXPECT_TRUE(lines.info.empty()) << lines.info[0];
  atlas_backend *host = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &host));
  atlas_stream *side = nullptr;
  ASSERT_OK(atlas_backend_stream_create(cuda, &side));
  std::mt19937 rng(7);
  for (atlas_matmul_type type : {ATLAS_MATMUL_F16, ATLAS_MATMUL_BF16}) {
    for (Shape sh :
         {Shape{1, 1, 1}, Shape{1, 4096, 2048}, Shape{1, 1003, 777},
          Shape{7, 129, 65}, Shape{100, 257, 99}, Shape{3, 50, 16384},
          Shape{128, 1024, 2048}, Shape{33, 2048, 512}}) {
      for (size_t offset : {0, 1}) {
        std::vector<uint16_t> wb, xb;
        std::vector<float> wv, xv;
        Random16(&rng, type, sh.n * sh.k, &wb, &wv);
        Random16(&rng, type, sh.m * sh.k, &xb, &xv);
        atlas_stream *stream = offset ? side : nullptr;
        std::vector<float> want =
            Multiply(host, type, sh, wb, xb, offset, nullptr);
        std::vector<float> got =
            Multiply(cuda, type, sh, wb, xb, offset, stream);
        size_t at = 0;
        const double worst = WorstOfBound(sh, wv, xv, got, want, &at);
        ASSERT_LE(worst, 1.0)
            << atlas_matmul_type_name(type) << " " << sh.m << "x" << sh.n << "x"
            << sh.k << " offset " << offset << " at " << at << ": cuda "
            << got[at] << ", host " << want[at];
        printf(
            "cuBLASLt %s %zux%zux%zu offset %zu: worst |cuda - host| %.3g of "
            "the bound\n",
            atlas_matmul_type_name(type), sh.m, sh.n, sh.k, offset, worst);
        // Accumulating in place (beta = 1, C = D = out) onto start values
        // of either sign: the same sums, plus one f32 addition of |c| + sum
        // |x w| at most on each side, in whatever order cuBLASLt folds it in.
        std::uniform_real_distribution<float> d(-50.0f, 50.0f);
        std::vector<float> c(sh.m * sh.n);
        for (float &v : c) v = d(rng);
        want = Multiply(host, type, sh, wb, xb, offset, nullptr, &c);
        got = Multiply(cuda, type, sh, wb, xb, offset, stream, &c);
        for (size_t i = 0; i < sh.m; ++i) {
          for (size_t j = 0; j < sh.n; ++j) {
            size_t o = i * sh.n + j;
            double mag = 0;
            for (size_t q = 0; q < sh.k; ++q) {
              mag += std::fabs((double)xv[i * sh.k + q] *
                               (double)wv[j * sh.k + q]);
            }
            double u = std::ldexp(1.0, -24);
            double bound = 3.0 * (double)sh.k * u * mag +
                           4.0 * u * (mag + std::fabs((double)c[o])) + 1e-30;
            ASSERT_LE(std::fabs((double)got[o] - (double)want[o]), bound)
                << "accumulate " << atlas_matmul_type_name(type) << " " << sh.m
                << "x" << sh.n << "x" << sh.k << " offset " << offset << " at ("
                << i << ", " << j << "): cuda " << got[o] << ", host "
                << want[o] << ", start " << c[o];
          }
        }
      }
    }
  }
  // The workspace is the backend's only allocation left, ledgered by name.
  atlas_ledger_entry *entries = nullptr;
  size_t count = 0;
  ASSERT_OK(
      atlas_ledger_snapshot(atlas_backend_ledger(cuda), &entries, &count));
  EXPECT_LE(count, 1u);
  for (size_t i = 0; i < count; ++i) {
    EXPECT_STREQ(entries[i].site.func, "cublasLt_workspace");
  }
  free(entries);
  // A sweep finds no leak in the backend's own workspace: release_caches
  // frees it first; the next product makes it again.
  atlas_sweep_result swept;
  ASSERT_OK(atlas_backend_sweep_unreleased(cuda, &swept));
  EXPECT_EQ(swept.count, 0u) << (swept.sites ? swept.sites : "");
  atlas_sweep_result_free(&swept);
  EXPECT_EQ(atlas_backend_live_alloc_count(cuda), 0u);
  {
    const size_t m = 64, n = 256, k = 512;
    void *x = nullptr, *w = nullptr;
    float *out = nullptr;
    ASSERT_OK(atlas_backend_alloc(cuda, m * k * 2, &x));
    ASSERT_OK(atlas_backend_alloc(cuda, n * k * 2, &w));
    ASSERT_OK(atlas_backend_alloc(cuda, m * n * 4, (void **)&out));
    ASSERT_OK(atlas_backend_memset(cuda, x, 0, m * k * 2));
    ASSERT_OK(atlas_backend_memset(cuda, w, 0, n * k * 2));
    ASSERT_OK(atlas_backend_matmul(cuda, nullptr, out, w, x, ATLAS_MATMUL_BF16,
                                   m, n, k, ATLAS_MATMUL_WRITE));
    ASSERT_OK(atlas_backend_synchronize(cuda));
    ASSERT_OK(atlas_backend_free(cuda, out));
    ASSERT_OK(atlas_backend_free(cuda, w));
    ASSERT_OK(atlas_backend_free(cuda, x));
  }
  ASSERT_OK(atlas_backend_stream_destroy(cuda, side));
  EXPECT_OK(atlas_backend_destroy(cuda));
  EXPECT_OK(atlas_backend_destroy(host));
}

TEST(CudaMatmul, AtlasCublasLtZeroMeansOwnKernels) {
  ScopedEnv off("ATLAS_CUBLASLT", "0");
  atlas_backend *cuda = nullptr;
  Lines lines;
  atlas_backend_options o = LinesTo(&lines, false);
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  ASSERT_EQ(lines.info.size(), 1u);
  EXPECT_NE(lines.info[0].find("ATLAS_CUBLASLT=0"), std::string::npos)
      << lines.info[0];
  EXPECT_NE(lines.info[0].find("own kernels"), std::string::npos)
      << lines.info[0];
  float out[1];
  uint16_t w[1] = {0x3C00}, x[1] = {0x3C00};
  EXPECT_STATUS(
      atlas_backend_matmul(cuda, nullptr, nullptr, nullptr, nullptr,
                           ATLAS_MATMUL_F16, 0, 0, 0, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_UNIMPLEMENTED, "does not implement matmul");
  EXPECT_STATUS(atlas_backend_matmul(cuda, nullptr, out, w, x, ATLAS_MATMUL_F16,
                                     1, 1, 1, ATLAS_MATMUL_WRITE),
                ATLAS_STATUS_UNIMPLEMENTED, "ATLAS_CUBLASLT=0");
  EXPECT_EQ(atlas_backend_live_alloc_count(cuda), 0u);
  EXPECT_OK(atlas_backend_destroy(cuda));
}

TEST(CudaMatmul, AMissingLibraryMeansOwnKernels) {
  ScopedEnv path("ATLAS_CUBLASLT", "/nonexistent/libcublasLt.so.13");
  atlas_backend *cuda = nullptr;
  Lines lines;
  atlas_backend_options o = LinesTo(&lines, false);
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  ASSERT_EQ(lines.info.size(), 1u);
  EXPECT_NE(lines.info[0].find("cuBLASLt not found"), std::string::npos)
      << lines.info[0];
  EXPECT_STATUS(
      atlas_backend_matmul(cuda, nullptr, nullptr, nullptr, nullptr,
                           ATLAS_MATMUL_BF16, 0, 0, 0, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_UNIMPLEMENTED, "does not implement matmul");
  EXPECT_OK(atlas_backend_destroy(cuda));
}

// background_modules defers cuBLASLt's start to atlas_backend_modules_start
// (a model's load calls it before its upload): create says nothing about
// cuBLASLt, and the first product waits for the start, then multiplies as
// an immediate start does.
TEST(CudaMatmul, DeferredStartMultipliesOnceStarted) {
  atlas_backend *cuda = nullptr;
  Lines lines;
  atlas_backend_options o = LinesTo(&lines, true);
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  EXPECT_TRUE(lines.info.empty()) << lines.info[0];
  atlas_backend_modules_start(cuda);
  atlas_backend_modules_start(cuda);  // a second start is a no-op
  atlas_backend *host = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &host));
  std::mt19937 rng(11);
  const Shape sh{37, 300, 256};
  std::vector<uint16_t> wb, xb;
  std::vector<float> wv, xv;
  Random16(&rng, ATLAS_MATMUL_BF16, sh.n * sh.k, &wb, &wv);
  Random16(&rng, ATLAS_MATMUL_BF16, sh.m * sh.k, &xb, &xv);
  StatusResult asked = Take(
      atlas_backend_matmul(cuda, nullptr, nullptr, nullptr, nullptr,
                           ATLAS_MATMUL_BF16, 0, 0, 0, ATLAS_MATMUL_WRITE));
  if (asked.code == ATLAS_STATUS_UNIMPLEMENTED) {
    // The start's line says why, at the first use rather than at create.
    ASSERT_EQ(lines.info.size(), 1u) << asked.message;
    EXPECT_OK(atlas_backend_destroy(cuda));
    EXPECT_OK(atlas_backend_destroy(host));
    ATLAS_CUDA_SKIP("no cuBLASLt on this machine: " << lines.info[0]);
  }
  ASSERT_EQ(asked.code, ATLAS_STATUS_OK) << asked.message;
  EXPECT_TRUE(lines.info.empty()) << lines.info[0];
  std::vector<float> want =
      Multiply(host, ATLAS_MATMUL_BF16, sh, wb, xb, 0, nullptr);
  std::vector<float> got =
      Multiply(cuda, ATLAS_MATMUL_BF16, sh, wb, xb, 0, nullptr);
  size_t at = 0;
  EXPECT_LE(WorstOfBound(sh, wv, xv, got, want, &at), 1.0)
      << "at " << at << ": cuda " << got[at] << ", host " << want[at];
  EXPECT_OK(atlas_backend_destroy(cuda));
  EXPECT_OK(atlas_backend_destroy(host));
}

// A deferred start that finds no library says so once, at the first use;
// one nobody waited for is waited for, silently, by destroy.
TEST(CudaMatmul, DeferredStartOfAMissingLibrary) {
  ScopedEnv path("ATLAS_CUBLASLT", "/nonexistent/libcublasLt.so.13");
  atlas_backend *cuda = nullptr;
  Lines lines;
  atlas_backend_options o = LinesTo(&lines, true);
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  EXPECT_TRUE(lines.info.empty()) << lines.info[0];
  atlas_backend_modules_start(cuda);
  for (int i = 0; i < 2; ++i) {
    EXPECT_STATUS(
        atlas_backend_matmul(cuda, nullptr, nullptr, nullptr, nullptr,
                             ATLAS_MATMUL_BF16, 0, 0, 0, ATLAS_MATMUL_WRITE),
        ATLAS_STATUS_UNIMPLEMENTED, "does not implement matmul");
  }
  ASSERT_EQ(lines.info.size(), 1u);
  EXPECT_NE(lines.info[0].find("cuBLASLt not found"), std::string::npos)
      << lines.info[0];
  EXPECT_NE(lines.info[0].find("/nonexistent/libcublasLt.so.13"),
            std::string::npos)
      << lines.info[0];
  EXPECT_OK(atlas_backend_destroy(cuda));

  Lines quiet;
  o.log.ctx = &quiet;
  CUDA_CREATE_OR_SKIP(&o, &cuda);
  atlas_backend_modules_start(cuda);
  EXPECT_OK(atlas_backend_destroy(cuda));
  EXPECT_TRUE(quiet.info.empty()) << quiet.info[0];
}

}  // namespace
