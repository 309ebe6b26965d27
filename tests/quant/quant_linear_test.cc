// Quantized layers on a backend (runtime/quant/quant_linear.h): each format
// written by the tests' packer, found in its checkpoint, uploaded into one
// ledgered block labelled by format, multiplied through module quant (one
// vector, and 11 rows with accumulate) and compared with the reference
// dequantizer: bit for bit on the host, within 1e-5 of sum |w x| on CUDA
// (which skips without a GPU). Freeing gives every byte back.
#include <math.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/quant_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/quant/quant_linear.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/quant/quant_files.h"
#include "tests/quant/quant_reference.h"
#include "tests/runtime/test_util.h"

namespace {

void *Upload(atlas_backend *b, const std::vector<float> &v) {
  void *p = nullptr;
  EXPECT_OK(atlas_backend_alloc(b, v.size() * 4, &p));
  EXPECT_OK(atlas_backend_h2d(b, p, v.data(), v.size() * 4));
  return p;
}

std::vector<float> Download(atlas_backend *b, const void *p, size_t n) {
  std::vector<float> v(n);
  EXPECT_OK(atlas_backend_d2h(b, v.data(), p, n * 4));
  return v;
}

// Every case on backend `b`; exact: the host's bit-for-bit check.
void RunAll(atlas_backend *b, bool exact) {
  atlas_quant_kernels k;
  ASSERT_OK(atlas_quant_kernels_resolve(b, &k));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  int n = 0;
  for (const quant_files::Case &cs : quant_files::Cases()) {
    const quant_ref::QuantMatrix &m = cs.m;
    std::string dir = quant_files::Write(
        std::string(exact ? "host" : "cuda") + std::to_string(n++),
        quant_files::Layer(cs.method, m));
    atlas_checkpoint *ck = nullptr;
    ASSERT_OK(atlas_checkpoint_open_with(dir.c_str(),
                                         ATLAS_SAFETENSORS_QUANTIZED, &ck));
    atlas_quant_config c = quant_files::Config(cs.method, m);
    atlas_quant_matrix qm{};
    ASSERT_OK(atlas_quant_matrix_find(&c, ck, quant_files::kModule, m.rows,
                                      m.cols, &qm));
    const size_t live = atlas_backend_live_bytes(b);
    atlas_quant_linear l{};
    atlas_upload_job jobs[4];
    size_t jobs_n = 0;
    ASSERT_OK(atlas_quant_linear_alloc(b, &qm, &l, jobs, &jobs_n));
    ASSERT_OK(atlas_upload_run(b, jobs, jobs_n, nullptr));
    EXPECT_EQ(atlas_backend_live_bytes(b), live + l.bytes);
    EXPECT_GE(l.bytes, qm.bytes);
    char *report = nullptr;
    ASSERT_OK(atlas_backend_alloc_report(b, 10, 0.0, &report));
    EXPECT_NE(std::string(report).find(atlas_quant_ledger_label(qm.layout)),
              std::string::npos)
        << report;
    free(report);

    const uint32_t count = 11;
    std::vector<float> x(m.cols * count);
    for (float &v : x) v = d(rng);
    std::vector<float> init(m.rows * count, 0.25f), nan(m.rows, NAN);
    void *dx = Upload(b, x), *dv = Upload(b, nan), *dm = Upload(b, init);
    ASSERT_OK(atlas_quant_linear_matvec(b, &k, nullptr, &l, (float *)dx,
                                        (float *)dv, false));
    ASSERT_OK(atlas_quant_linear_matmul(b, &k, nullptr, &l, (float *)dx, count,
                                        (float *)dm, true));
    ASSERT_OK(atlas_backend_synchronize(b));
    std::vector<float> v = Download(b, dv, m.rows);
    std::vector<float> mm = Download(b, dm, (size_t)m.rows * count);
    std::vector<float> w = quant_ref::Dequantize(m);
    double worst = 0;
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t r = 0; r < m.rows; ++r) {
        float want = 0.0f;
        double want_d = 0, mag = 0;
        for (uint32_t kk = 0; kk < m.cols; ++kk) {
          const float p =
              w[(size_t)r * m.cols + kk] * x[(size_t)i * m.cols + kk];
          want += p;
          want_d +=
              (double)w[(size_t)r * m.cols + kk] * x[(size_t)i * m.cols + kk];
          mag += fabs((double)w[(size_t)r * m.cols + kk] *
                      x[(size_t)i * m.cols + kk]);
        }
        const float got_m = mm[(size_t)i * m.rows + r];
        if (exact) {
          if (i == 0) ASSERT_EQ(v[r], want) << quant_ref::Describe(m);
          ASSERT_EQ(got_m, 0.25f + want) << quant_ref::Describe(m);
        } else {
          double e = fabs(got_m - (0.25 + want_d)) / (mag + 0.25);
          if (i == 0) e = fmax(e, fabs(v[r] - want_d) / mag);
          worst = fmax(worst, e);
          ASSERT_LE(e, 1e-5) << quant_ref::Describe(m) << " row " << r;
        }
      }
    }
    if (!exact) {
      printf("quant_linear (cuda): %-60s worst %.3g\n",
             quant_ref::Describe(m).c_str(), worst);
    }
    for (void *p : {dx, dv, dm}) EXPECT_OK(atlas_backend_free(b, p));
    ASSERT_OK(atlas_quant_linear_free(b, &l));
    EXPECT_EQ(atlas_backend_live_bytes(b), live);
    atlas_checkpoint_close(ck);
  }
}

class QuantLinear : public ::testing::Test {
 protected:
  const atlas_module_def *mods_[1] = {&atlas_quant_module};
  atlas_module_set set_{mods_, 1};
};

TEST_F(QuantLinear, HostEqualsTheReference) {
  atlas_backend_options o{};
  o.modules = &set_;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  RunAll(b, true);
  EXPECT_OK(atlas_backend_destroy(b));
}

TEST_F(QuantLinear, CudaMatchesTheReference) {
  atlas_backend_options o{};
  o.modules = &set_;
  atlas_backend *b = nullptr;
  StatusResult r = Take(atlas_cuda_backend_create(&o, &b));
  if (r.code == ATLAS_STATUS_UNAVAILABLE) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  RunAll(b, false);
  EXPECT_OK(atlas_backend_destroy(b));
}

}  // namespace
