// Quantized checkpoints inside the decoder: for every scheme the tests'
// writer makes (quant_model_writer.h), the quantized model and its
// dequantized F32 twin (an ordinary checkpoint) give the same logits, within
// 1e-5 of the row's largest logit, and the same greedy ids, over a prompt and
// decode steps: the prompt in one batched pass (quant_matmul) and token by
// token (quant_matvec, the residual through its accumulate flag). On the
// host backend here; the CUDA form skips without a GPU. Also: the ledger
// shows the projections under their format, and the paged batch step
// agrees with the token path on a quantized model, forks included (host;
// its CUDA form skips without a GPU too).
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

// The paged batch step (atlas serve, atlas batch) on a quantized model:
// sequences of different lengths prefilled and decoded together in one step
// give, each, the ids of the model's own token path (atlas_model_generate:
// the prompt batched, then token by token) and its logits within the
// tolerance above; a fork's step equals a fresh sequence fed the same
// tokens, bit for bit (the same products, the host's quant_matmul summing
// each row in column order).
void BatchMatchesTokenPath(const char *backend, const quant_writer::Scheme &s,
                           const std::string &src) {
  const std::string qdir = Tmp("batch_" + s.Name());
  std::string error;
  ASSERT_TRUE(quant_writer::Write(s, src, qdir, qdir + "_twin", &error))
      << error;
  atlas_model_spec spec{};
  spec.dir = qdir.c_str();
  spec.backend = backend;
  spec.max_seq = 48;
  spec.ignore_eos = true;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&spec, &m));
  const size_t vocab = (size_t)atlas_model_vocab_size(m);
  const size_t kSeqs = 3, kSteps = 8, lens[kSeqs] = {1, 6, 19};
  std::vector<std::vector<uint32_t>> prompts(kSeqs);
  std::vector<Run> alone(kSeqs);
  for (size_t i = 0; i < kSeqs; ++i) {
    for (size_t t = 0; t < lens[i]; ++t) {
      prompts[i].push_back((uint32_t)((i * 37 + t * 11 + 5) % vocab));
    }
    Run &r = alone[i];
    r.ids.resize(kSteps + 1);
    size_t count = 0;
    ASSERT_OK(atlas_model_generate(m, prompts[i].data(), prompts[i].size(),
                                   r.ids.size(), r.ids.data(), &count,
                                   AddLogits, &r.logits));
    ASSERT_EQ(count, kSteps + 1);
    // The prompt's rows, then a row a token fed: keep the predicting ones.
    r.logits.erase(r.logits.begin(), r.logits.begin() + (lens[i] - 1));
    ASSERT_EQ(r.logits.size(), kSteps + 1);
  }
  atlas_batch_engine_options eo{};
  eo.block_tokens = 4;  // sequences over several blocks, partial ones too
  atlas_batch_engine *e = nullptr;
  ASSERT_OK(atlas_batch_engine_create(m, &eo, &e));
  std::vector<atlas_batch_seq *> seqs(kSeqs);
  for (auto &q : seqs) ASSERT_OK(atlas_batch_seq_create(e, &q));
  std::vector<Run> together(kSeqs);
  std::vector<std::vector<uint32_t>> chunk = prompts;
  for (size_t step = 0; step <= kSteps; ++step) {
    std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(vocab));
    std::vector<uint32_t> ids(kSeqs);
    std::vector<atlas_batch_item> items(kSeqs);
    for (size_t i = 0; i < kSeqs; ++i) {
      items[i] = {seqs[i], chunk[i].data(), chunk[i].size(), logits[i].data(),
                  &ids[i]};
    }
    ASSERT_OK(atlas_batch_step(e, items.data(), items.size()));
    for (size_t i = 0; i < kSeqs; ++i) {
      together[i].ids.push_back(ids[i]);
      together[i].logits.push_back(logits[i]);
      chunk[i] = {ids[i]};
    }
  }
  for (size_t i = 0; i < kSeqs; ++i) {
    ExpectParity(together[i], alone[i],
                 std::string(backend) + " batch step " + s.Name() + " seq " +
                     std::to_string(i));
  }
  // Fork the longest after its prompt and steps; parent and child each take
  // another token in one step.
  atlas_batch_seq *child = nullptr;
  ASSERT_OK(atlas_batch_seq_fork(e, seqs[2], &child));
  uint32_t xa = 9, xb = 50;
  std::vector<float> la(vocab), lb(vocab);
  atlas_batch_item pair[2] = {{seqs[2], &xa, 1, la.data(), nullptr},
                              {child, &xb, 1, lb.data(), nullptr}};
  ASSERT_OK(atlas_batch_step(e, pair, 2));
  EXPECT_NE(la, lb);
  for (int k = 0; k < 2; ++k) {
    std::vector<uint32_t> fed = prompts[2];
    fed.insert(fed.end(), together[2].ids.begin(), together[2].ids.end() - 1);
    fed.push_back(k == 0 ? xa : xb);
    atlas_batch_seq *f = nullptr;
    ASSERT_OK(atlas_batch_seq_create(e, &f));
    std::vector<float> lf(vocab);
    atlas_batch_item fi{f, fed.data(), fed.size(), lf.data(), nullptr};
    ASSERT_OK(atlas_batch_step(e, &fi, 1));
    const std::vector<float> &want = k == 0 ? la : lb;
    if (strcmp(backend, "host") == 0) {
      EXPECT_EQ(lf, want) << s.Name() << " fork " << k;
    } else {  // CUDA's products may sum in another order at other row counts
      double scale = 0, diff = 0;
      for (size_t v = 0; v < vocab; ++v) {
        scale = fmax(scale, fabs((double)want[v]));
        diff = fmax(diff, fabs((double)lf[v] - want[v]));
      }
      EXPECT_LE(diff, 1e-5 * scale) << s.Name() << " fork " << k;
    }
    atlas_batch_seq_free(e, f);
  }
  atlas_batch_seq_free(e, child);
  for (auto &q : seqs) atlas_batch_seq_free(e, q);
  atlas_kv_pool_stats st;
  atlas_kv_pool_stats_get(atlas_batch_engine_pool(e), &st);
  EXPECT_EQ(st.used, 0u);
  ASSERT_OK(atlas_batch_engine_destroy(e));
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// fp8 block, compressed-tensors int4 group, gptq with g_idx (desc_act),
// awq: each weight layout the batch step's products read.
void BatchOn(const char *backend) {
  const std::string src = TinyF32();
  int seen = 0;
  for (const quant_writer::Scheme &s : quant_writer::AllSchemes()) {
    const bool pick = (s.method == ATLAS_QUANT_FP8) ||
                      (s.method == ATLAS_QUANT_COMPRESSED_TENSORS &&
                       s.format == quant_ref::Format::kIntRows && s.bits == 4 &&
                       s.group_k != 0 && !s.asymmetric) ||
                      (s.method == ATLAS_QUANT_GPTQ && s.desc_act) ||
                      (s.method == ATLAS_QUANT_AWQ);
    if (!pick) continue;
    SCOPED_TRACE(s.Name());
    BatchMatchesTokenPath(backend, s, src);
    ++seen;
  }
  EXPECT_EQ(seen, 4);
}

TEST(QuantDecoderParity, TheBatchStepMatchesTheTokenPathOnTheHost) {
  BatchOn("host");
}

TEST(QuantDecoderParity, TheBatchStepMatchesTheTokenPathOnCuda) {
  atlas_backend *probe = nullptr;
  StatusResult r = Take(atlas_cuda_backend_create(nullptr, &probe));
  if (r.code != ATLAS_STATUS_OK) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_OK(atlas_backend_destroy(probe));
  BatchOn("cuda");
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
