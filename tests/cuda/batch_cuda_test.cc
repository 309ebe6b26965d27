// The batch step on CUDA (the llama_paged kernels, runtime/serve/batch.h):
// sequences of very different lengths in one step against the host
// backend's same step (logits within 1e-4, the same greedy ids) and against
// each sequence alone on CUDA (bit for bit in f32: every row's products and
// attention are computed independently of the others); fork and prefix
// reuse on the device; a 16-bit KV cache's ids against f32's first tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "atlas/runtime/serve/batch.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

struct Side {
  atlas_model *model = nullptr;
  atlas_batch_engine *engine = nullptr;
  size_t vocab = 0;
};

std::vector<uint32_t> Prompt(uint32_t seed, size_t n) {
  std::vector<uint32_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = (seed * 41 + i * 13 + 3) % 256;
  return p;
}

class BatchCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeCheckpoint("batch_cuda", "small", 51, ATLAS_DTYPE_BF16);
  }
  void TearDown() override {
    for (Side *s : {&cuda_, &host_}) Close(s);
  }
  // False (after a skip) when CUDA is not there.
  bool Open(Side *s, const char *backend, atlas_dtype kv) {
    atlas_model_spec spec{};
    spec.dir = dir_.c_str();
    spec.backend = backend;
    spec.max_seq = 256;
    spec.kv_dtype = kv;
    spec.ignore_eos = true;
    atlas_status st = atlas_model_open(&spec, &s->model);
    if (st != ATLAS_OK && std::string(backend) == "cuda") {
      std::string why = atlas_status_message(st);
      atlas_status_free(st);
      s->model = nullptr;
      return false;
    }
    EXPECT_OK(st);
    if (s->model == nullptr) return false;
    atlas_batch_engine_options o{};
    o.prefix_cache = true;
    o.kv_budget_bytes = 64ull << 20;
    EXPECT_OK(atlas_batch_engine_create(s->model, &o, &s->engine));
    s->vocab = (size_t)atlas_model_vocab_size(s->model);
    return s->engine != nullptr;
  }
  void Close(Side *s) {
    if (s->engine != nullptr) EXPECT_OK(atlas_batch_engine_destroy(s->engine));
    s->engine = nullptr;
    if (s->model == nullptr) return;
    atlas_teardown_report rep{};
    EXPECT_OK(atlas_model_close(s->model, &rep));
    EXPECT_EQ(rep.sweep.count, 0u) << (rep.sweep.sites ? rep.sweep.sites : "");
    atlas_sweep_result_free(&rep.sweep);
    s->model = nullptr;
  }
  // Prompts of `lens` together, then `steps` greedy tokens together (or
  // each alone when `alone`): every step's logits and ids per sequence.
  void Run(Side *s, const std::vector<size_t> &lens, size_t steps, bool alone,
           std::vector<std::vector<std::vector<float>>> *logits,
           std::vector<std::vector<uint32_t>> *ids) {
    size_t n = lens.size();
    logits->assign(n, {});
    ids->assign(n, {});
    std::vector<atlas_batch_seq *> seqs(n);
    for (auto &q : seqs) ASSERT_OK(atlas_batch_seq_create(s->engine, &q));
    std::vector<std::vector<uint32_t>> chunk(n);
    for (size_t i = 0; i < n; ++i) chunk[i] = Prompt((uint32_t)i, lens[i]);
    for (size_t step = 0; step <= steps; ++step) {
      std::vector<std::vector<float>> l(n, std::vector<float>(s->vocab));
      std::vector<uint32_t> id(n);
      std::vector<atlas_batch_item> items(n);
      for (size_t i = 0; i < n; ++i) {
        items[i] = {seqs[i], chunk[i].data(), chunk[i].size(), l[i].data(),
                    &id[i]};
      }
      if (alone) {
        for (size_t i = 0; i < n; ++i) {
          ASSERT_OK(atlas_batch_step(s->engine, &items[i], 1));
        }
      } else {
        ASSERT_OK(atlas_batch_step(s->engine, items.data(), n));
      }
      for (size_t i = 0; i < n; ++i) {
        (*logits)[i].push_back(l[i]);
        (*ids)[i].push_back(id[i]);
        chunk[i] = {id[i]};
      }
    }
    for (auto q : seqs) atlas_batch_seq_free(s->engine, q);
  }

  std::string dir_;
  Side cuda_, host_;
};

TEST_F(BatchCudaTest, F32MatchesTheHostAndEachSequenceAlone) {
  if (!Open(&cuda_, "cuda", ATLAS_DTYPE_F32)) {
    ATLAS_CUDA_SKIP("CUDA unavailable or kernels built without nvcc");
  }
  ASSERT_TRUE(Open(&host_, "host", ATLAS_DTYPE_F32));
  const std::vector<size_t> lens = {1, 7, 64, 150};  // <= 256 rows a step
  const size_t steps = 6;
  std::vector<std::vector<std::vector<float>>> cl, ca, hl;
  std::vector<std::vector<uint32_t>> cid, caid, hid;
  Run(&cuda_, lens, steps, false, &cl, &cid);
  Run(&cuda_, lens, steps, true, &ca, &caid);
  Run(&host_, lens, steps, false, &hl, &hid);
  for (size_t i = 0; i < lens.size(); ++i) {
    EXPECT_EQ(cid[i], hid[i]) << "seq " << i;
    EXPECT_EQ(cid[i], caid[i]) << "seq " << i;
    for (size_t s = 0; s <= steps; ++s) {
      EXPECT_EQ(cl[i][s], ca[i][s]) << "seq " << i << " step " << s;
      double worst = 0;
      for (size_t v = 0; v < cl[i][s].size(); ++v) {
        worst = std::fmax(worst, std::fabs(cl[i][s][v] - hl[i][s][v]));
      }
      EXPECT_LT(worst, 1e-4) << "seq " << i << " step " << s;
    }
  }
}

TEST_F(BatchCudaTest, Bf16CacheForkAndPrefixOnTheDevice) {
  if (!Open(&cuda_, "cuda", ATLAS_DTYPE_BF16)) {
    ATLAS_CUDA_SKIP("CUDA unavailable or kernels built without nvcc");
  }
  size_t vocab = cuda_.vocab;
  std::vector<uint32_t> p = Prompt(9, 40);
  atlas_batch_seq *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_OK(atlas_batch_seq_create(cuda_.engine, &a));
  std::vector<float> la(vocab), lb(vocab), lc(vocab);
  atlas_batch_item ia{a, p.data(), p.size(), la.data(), nullptr};
  ASSERT_OK(atlas_batch_step(cuda_.engine, &ia, 1));
  ASSERT_OK(atlas_batch_seq_fork(cuda_.engine, a, &b));
  ASSERT_OK(atlas_batch_seq_create(cuda_.engine, &c));
  size_t reused = 0;
  ASSERT_OK(atlas_batch_seq_reuse_prefix(cuda_.engine, c, p.data(), p.size(),
                                         &reused));
  EXPECT_EQ(reused, 32u);
  atlas_batch_item ic{c, p.data() + reused, p.size() - reused, lc.data(),
                      nullptr};
  ASSERT_OK(atlas_batch_step(cuda_.engine, &ic, 1));
  // The cached blocks hold what the prefill wrote (cuBLASLt may sum rows of
  // another chunk height in another order: near, not equal).
  for (size_t v = 0; v < vocab; ++v) ASSERT_NEAR(la[v], lc[v], 1e-3);
  uint32_t t = 17;
  uint32_t ida = 0, idb = 0;
  atlas_batch_item two[2] = {{a, &t, 1, la.data(), &ida},
                             {b, &t, 1, lb.data(), &idb}};
  ASSERT_OK(atlas_batch_step(cuda_.engine, two, 2));
  EXPECT_EQ(ida, idb);  // a fork fed the same token is the same sequence
  for (size_t v = 0; v < vocab; ++v) ASSERT_NEAR(la[v], lb[v], 1e-3);
  for (auto q : {a, b, c}) atlas_batch_seq_free(cuda_.engine, q);
}

}  // namespace
