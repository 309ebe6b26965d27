// Quantized checkpoints inside the decoder: for every scheme the tests'
// writer makes (quant_model_writer.h), the quantized model and its
// dequantized F32 twin (an ordinary checkpoint) give the same logits, within
// 1e-5 of the row's largest logit, and the same greedy ids, over a prompt and
// decode steps: the prompt in one batched pass (quant_matmul) and token by
// token (quant_matvec, the residual through its accumulate flag). On the
// host backend here; the CUDA form skips without a GPU. Also: the ledger
// shows the projections under their format, and the batch step refuses a
// quantized model by name rather than running it.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/batch.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/quant/quant_model_writer.h"
#include "tests/runtime/test_util.h"

namespace {

std::string Tmp(const std::string &leaf) {
  const char *t = getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + leaf;
}

std::string TinyF32() {
  std::string dir = Tmp("parity_tiny_f32");
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = 52;
  atlas_status_free(atlas_make_checkpoint_preset("tiny", &o.config));
  o.dtype = ATLAS_DTYPE_F32;
  o.shards = 1;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

atlas_status AddLogits(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<std::vector<float>> *>(ctx);
  v->emplace_back(x, x + n);
  return ATLAS_OK;
}

struct Run {
  std::vector<std::vector<float>> logits;  // a row a forward step
  std::vector<uint32_t> ids;
};

// The prompt, then 8 greedy steps; prefill_rows < 0: the prompt token by
// token.
// `quantized`: the ledger must show the projections under their format
// (quant_linear's label), else no quantized weights at all.
Run Generate(const std::string &dir, const char *backend, int64_t prefill_rows,
             bool quantized) {
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = backend;
  spec.max_seq = 32;
  spec.prefill_rows = prefill_rows;
  spec.ignore_eos = true;
  atlas_model *m = nullptr;
  Run r;
  EXPECT_OK(atlas_model_open(&spec, &m));
  if (m == nullptr) return r;
  char *report = nullptr;
  EXPECT_OK(
      atlas_backend_alloc_report(atlas_model_backend(m), 1000, 0.0, &report));
  if (report != nullptr) {
    EXPECT_EQ(strstr(report, "quantized weights (") != nullptr, quantized)
        << report;
    free(report);
  }
  const std::vector<uint32_t> prompt = {1, 7, 3, 42, 9, 5, 11};
  r.ids.resize(8);
  size_t count = 0;
  EXPECT_OK(atlas_model_generate(m, prompt.data(), prompt.size(), r.ids.size(),
                                 r.ids.data(), &count, AddLogits, &r.logits));
  r.ids.resize(count);
  EXPECT_OK(atlas_model_close(m, nullptr));
  return r;
}

// Each row within 1e-5 of its largest |logit|, the ids equal.
void ExpectParity(const Run &q, const Run &twin, const std::string &what) {
  ASSERT_EQ(q.ids, twin.ids) << what;
  ASSERT_EQ(q.logits.size(), twin.logits.size()) << what;
  ASSERT_GT(q.logits.size(), 8u) << what;
  double worst = 0;
  for (size_t r = 0; r < q.logits.size(); ++r) {
    ASSERT_EQ(q.logits[r].size(), twin.logits[r].size());
    double scale = 0, diff = 0;
    for (size_t i = 0; i < q.logits[r].size(); ++i) {
      scale = fmax(scale, fabs((double)twin.logits[r][i]));
      diff = fmax(diff, fabs((double)q.logits[r][i] - twin.logits[r][i]));
    }
    ASSERT_GT(scale, 0) << what << " row " << r;
    EXPECT_LE(diff, 1e-5 * scale) << what << " row " << r;
    worst = fmax(worst, diff / scale);
  }
  printf("%-52s %zu rows, worst %.3g of the row's largest logit\n",
         what.c_str(), q.logits.size(), worst);
}

void ParityOn(const char *backend) {
  const std::string src = TinyF32();
  for (const quant_writer::Scheme &s : quant_writer::AllSchemes()) {
    SCOPED_TRACE(s.Name());
    const std::string qdir = Tmp("parity_" + s.Name());
    const std::string tdir = qdir + "_twin";
    std::string error;
    ASSERT_TRUE(quant_writer::Write(s, src, qdir, tdir, &error)) << error;
    for (int64_t rows : {0, -1}) {
      Run q = Generate(qdir, backend, rows, true);
      Run twin = Generate(tdir, backend, rows, false);
      ExpectParity(q, twin,
                   std::string(backend) + " " + s.Name() +
                       (rows < 0 ? " (token by token)" : " (prefill)"));
    }
  }
}

TEST(QuantDecoderParity, EverySchemeMatchesItsTwinOnTheHost) {
  ParityOn("host");
}

// The paged batch step is not done for quantized projections: refused by
// name before it reads anything.
TEST(QuantDecoderParity, TheBatchStepRefusesAQuantizedModel) {
  const std::string src = TinyF32();
  const quant_writer::Scheme s = quant_writer::AllSchemes().back();
  const std::string qdir = Tmp("batch_" + s.Name());
  std::string error;
  ASSERT_TRUE(quant_writer::Write(s, src, qdir, qdir + "_twin", &error))
      << error;
  atlas_model_spec spec{};
  spec.dir = qdir.c_str();
  spec.backend = "host";
  spec.max_seq = 32;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&spec, &m));
  atlas_arch_batch b{};
  EXPECT_STATUS(atlas_model_arch(m)->forward_batch(atlas_model_impl(m), &b,
                                                   nullptr, nullptr),
                ATLAS_STATUS_UNIMPLEMENTED, "does not run quantized");
  // A serving engine is refused when it is built, not at its first step.
  atlas_batch_engine_options eo{};
  atlas_batch_engine *e = nullptr;
  EXPECT_STATUS(atlas_batch_engine_create(m, &eo, &e),
                ATLAS_STATUS_UNIMPLEMENTED, "quantized weights");
  EXPECT_EQ(e, nullptr);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

TEST(QuantDecoderParity, EverySchemeMatchesItsTwinOnCuda) {
  atlas_backend *probe = nullptr;
  StatusResult r = Take(atlas_cuda_backend_create(nullptr, &probe));
  if (r.code != ATLAS_STATUS_OK) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_OK(atlas_backend_destroy(probe));
  ParityOn("cuda");
}

}  // namespace
