// The Llama model and hot swap on the CUDA backend. Without a GPU every test
// skips, saying why; on the H200 they all run.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "atlas/runtime/model/swap.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

// Skips unless a CUDA backend can be built here.
#define REQUIRE_CUDA()                                                   \
  do {                                                                   \
    atlas_backend *probe_ = nullptr;                                     \
    StatusResult r_ = Take(atlas_cuda_backend_create(nullptr, &probe_)); \
    if (r_.code != ATLAS_STATUS_OK) {                                    \
      ATLAS_CUDA_SKIP("CUDA unavailable: " << r_.message);               \
    }                                                                    \
    ASSERT_OK(atlas_backend_destroy(probe_));                            \
  } while (0)

atlas_model_spec Spec(const std::string &dir, const char *kind) {
  atlas_model_spec s{};
  s.dir = dir.c_str();
  s.backend = kind;
  s.max_seq = 16;
  return s;
}

atlas_status AddLogits(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<float> *>(ctx);
  v->insert(v->end(), x, x + n);
  return ATLAS_OK;
}

std::vector<float> Logits(atlas_model *m,
                          std::vector<uint32_t> *tokens = nullptr) {
  std::vector<uint32_t> prompt = {1, 2, 3}, out(5);
  std::vector<float> all;
  EXPECT_OK(atlas_model_generate(m, prompt.data(), 3, 5, out.data(), nullptr,
                                 AddLogits, &all));
  if (tokens) *tokens = out;
  return all;
}

size_t DriverFree(atlas_model *m) {
  size_t f = 0;
  EXPECT_OK(atlas_backend_device_free_memory(atlas_model_backend(m), &f));
  return f;
}

// The checkpoint in `dir` on the host and on CUDA: logits within `tol`
// (relative to the largest host logit), the same tokens. The CUDA model's
// teardown report goes to *r.
void ExpectCudaMatchesHost(const std::string &dir, double tol,
                           atlas_teardown_report *r) {
  atlas_model_spec hs = Spec(dir, "host"), cs = Spec(dir, "cuda");
  atlas_model *h = nullptr, *c = nullptr;
  ASSERT_OK(atlas_model_open(&hs, &h));
  ASSERT_OK(atlas_model_open(&cs, &c));
  std::vector<uint32_t> ht, ct;
  std::vector<float> hl = Logits(h, &ht), cl = Logits(c, &ct);
  ASSERT_EQ(hl.size(), cl.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < hl.size(); ++i) {
    err = std::max(err, (double)std::fabs(hl[i] - cl[i]));
    ref = std::max(ref, (double)std::fabs(hl[i]));
  }
  EXPECT_LT(err / ref, tol) << "max abs diff " << err;
  EXPECT_EQ(ht, ct);
  ASSERT_OK(atlas_model_close(c, r));
  ASSERT_OK(atlas_model_close(h, nullptr));
}

class CudaModel : public ::testing::TestWithParam<atlas_dtype> {};

TEST_P(CudaModel, MatchesTheHostBackend) {
  REQUIRE_CUDA();
  std::string dir =
      MakeCheckpoint("atlas_cuda_match" + std::to_string(GetParam()), "small",
                     5, GetParam(), GetParam() == ATLAS_DTYPE_BF16);
  atlas_teardown_report r{};
  ExpectCudaMatchesHost(dir, 1e-4, &r);
  if (HasFatalFailure()) return;
  EXPECT_EQ(r.sweep.count, 0u);
  atlas_sweep_result_free(&r.sweep);
}

// k_proj and up_proj in another type: q/k/v and gate/up as separate
// products (matvec, the norm a warp at a time), against the host backend.
TEST_P(CudaModel, MixedWeightTypesMatchTheHostBackend) {
  REQUIRE_CUDA();
  std::string dir =
      MakeCheckpoint("atlas_cuda_mixed" + std::to_string(GetParam()), "small",
                     6, GetParam(), false, 1, 0, true);
  ExpectCudaMatchesHost(dir, 1e-4, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaModel,
                         ::testing::Values(ATLAS_DTYPE_F32, ATLAS_DTYPE_F16,
                                           ATLAS_DTYPE_BF16));

// qkv_rope and gate_up normalise the hidden state a warp at a time, with no
// shared memory, at any width: hidden 12256 (the widest a block-staged copy
// fits, in 48 KiB beside 128 bytes) and 12288 (past it) both against the
// host backend, which runs rmsnorm then the products. With Qwen3's q/k
// norms, q/k/v go through matvec_qkv, which does stage the norm a block at a
// time where it fits (12256) and takes an rmsnorm launch where not (12288).
TEST(CudaModelWide, BothSidesOfTheFoldedNormLimitMatchTheHostBackend) {
  REQUIRE_CUDA();
  for (bool qk_norm : {false, true}) {
    for (int64_t hidden : {12256, 12288}) {
      SCOPED_TRACE("hidden " + std::to_string(hidden) +
                   (qk_norm ? ", q/k norm" : ""));
      std::string dir = MakeWideCheckpoint(
          "atlas_cuda_wide" + std::to_string(hidden) + (qk_norm ? "_qk" : ""),
          hidden, 3, ATLAS_DTYPE_BF16, qk_norm);
      // 3e-4, not the small models' 1e-4: sums over 12256 terms (the H200
      // measured 1.2e-4 at 12256 and under 1e-4 at 12288).
      ExpectCudaMatchesHost(dir, 3e-4, nullptr);
    }
  }
}

TEST(CudaSwap, FaultAtEveryPointRestoresTheOldModel) {
  REQUIRE_CUDA();
  std::string a_dir =
      MakeCheckpoint("atlas_cuda_fa", "tiny", 1, ATLAS_DTYPE_F32);
  std::string b_dir =
      MakeCheckpoint("atlas_cuda_fb", "small", 2, ATLAS_DTYPE_BF16);
  atlas_model_spec a = Spec(a_dir, "cuda"), b = Spec(b_dir, "cuda");
  uint64_t need_a = 0, need_b = 0;
  ASSERT_OK(atlas_model_required_bytes(&a, &need_a));
  ASSERT_OK(atlas_model_required_bytes(&b, &need_b));
  // A budget in which only one model fits forces the replace path.
  uint64_t budget = std::max(need_a, need_b) + std::min(need_a, need_b) / 2;
  a.device_budget_bytes = b.device_budget_bytes = budget;
  atlas_model *probe = nullptr;
  ASSERT_OK(atlas_model_open(&b, &probe));
  uint64_t allocs =
      atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_ALLOC);
  uint64_t copies =
      atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_COPY);
  ASSERT_OK(atlas_model_close(probe, nullptr));

  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&a, &m));
  std::vector<float> before = Logits(m);
  size_t live_count = atlas_backend_live_alloc_count(atlas_model_backend(m));
  size_t live_bytes = atlas_backend_live_bytes(atlas_model_backend(m));
  size_t free_before = DriverFree(m);
  long modules_before = atlas_cuda_host_loaded_modules();
  int runs = 0;
  for (int kind = 0; kind < 3; ++kind) {
    uint64_t n = kind == 0 ? allocs : kind == 1 ? copies : 1;
    for (uint64_t k = 1; k <= n; ++k) {
      atlas_model_spec bad = b;
      if (kind == 2) {
        bad.fail_module_load_at = 1;
      } else {
        bad.fault_kind = kind == 0 ? ATLAS_FAULT_ALLOC : ATLAS_FAULT_COPY;
        bad.fault_at = k;
      }
      atlas_swap_report r;
      StatusResult s = Take(atlas_model_swap(&m, &bad, &r));
      ASSERT_EQ(s.code, ATLAS_STATUS_ABORTED) << s.message;
      ASSERT_EQ(r.path, ATLAS_SWAP_REPLACE);
      ASSERT_TRUE(r.restored) << s.message;
      ASSERT_NE(m, nullptr);
      ASSERT_EQ(atlas_backend_live_alloc_count(atlas_model_backend(m)),
                live_count);
      ASSERT_EQ(atlas_backend_live_bytes(atlas_model_backend(m)), live_bytes);
      ASSERT_EQ(Logits(m), before) << "kind " << kind << " k " << k;
      long long drift = (long long)DriverFree(m) - (long long)free_before;
      ASSERT_LE(std::llabs(drift), 2ll << 20) << "driver free memory drifted";
      ASSERT_EQ(atlas_cuda_host_loaded_modules(), modules_before)
          << "a failed load left a module loaded";
      ++runs;
    }
  }
  printf(
      "%d failed swaps on CUDA (allocs %llu, copies %llu, module load 1): "
      "all restored\n",
      runs, (unsigned long long)allocs, (unsigned long long)copies);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

TEST(CudaSwap, SeedScenarioRestoreUsesNearlyAllTheBudget) {
  REQUIRE_CUDA();
  std::string big_dir =
      MakeCheckpoint("atlas_cuda_seed_big", "small", 3, ATLAS_DTYPE_F32);
  std::string small_dir =
      MakeCheckpoint("atlas_cuda_seed_small", "tiny", 4, ATLAS_DTYPE_F32);
  atlas_model_spec big = Spec(big_dir, "cuda");
  atlas_model_spec other = Spec(small_dir, "cuda");
  uint64_t need = 0;
  ASSERT_OK(atlas_model_required_bytes(&big, &need));
  big.device_budget_bytes = other.device_budget_bytes = need + need / 100;
  // The last allocation of a clean load: the weights are in, their buffers
  // (KV cache and scratch, one allocation) fail.
  atlas_model *probe = nullptr;
  ASSERT_OK(atlas_model_open(&other, &probe));
  uint64_t last =
      atlas_backend_op_count(atlas_model_backend(probe), ATLAS_FAULT_ALLOC);
  ASSERT_OK(atlas_model_close(probe, nullptr));
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&big, &m));
  std::vector<float> before = Logits(m);
  other.fault_kind = ATLAS_FAULT_ALLOC;
  other.fault_at = last;
  atlas_swap_report r;
  StatusResult s = Take(atlas_model_swap(&m, &other, &r));
  EXPECT_EQ(s.code, ATLAS_STATUS_ABORTED);
  EXPECT_TRUE(r.restored) << s.message;
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Logits(m), before);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// Memory after many swaps, told apart by who holds it. Atlas's ledger (what
// Atlas allocated and still holds) must come back to the same bytes after
// every swap into the same model: a leak in Atlas shows there. The driver's
// free memory also counts what the driver keeps for itself (module code,
// its allocator's pools): on an H100 (2026-12-07, 4f54801) it was 4 MiB
// lower at swap 5 than after swap 1, which failed the old per-swap 2 MiB
// bound. A driver pool steps and then stays, so that is reported, not
// failed; a leak outside the ledger keeps falling, so the second half of
// the soak must leave the driver's free memory where it was.
TEST(CudaSwap, SoakOfManySwapsKeepsMemoryFlat) {
  REQUIRE_CUDA();
  const char *env = getenv("ATLAS_SOAK_SWAPS");
  int swaps = env ? atoi(env) : 1000;
  ASSERT_GE(swaps, 8) << "ATLAS_SOAK_SWAPS: at least 8 swaps";
  std::string a_dir =
      MakeCheckpoint("atlas_cuda_soak_a", "tiny", 6, ATLAS_DTYPE_F32);
  std::string b_dir =
      MakeCheckpoint("atlas_cuda_soak_b", "small", 7, ATLAS_DTYPE_BF16);
  atlas_model_spec specs[2] = {Spec(a_dir, "cuda"), Spec(b_dir, "cuda")};
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&specs[0], &m));
  std::vector<float> first[2];
  first[0] = Logits(m);
  // Per model (i % 2), after the first swap into it: the ledger's live bytes
  // and the driver's free memory; then the free memory at mid-soak.
  size_t live0[2] = {0, 0}, free0[2] = {0, 0}, free_mid[2] = {0, 0};
  const int mid = swaps / 2;
  long modules_after_first = 0;
  long long worst = 0;
  int worst_at = 0;
  double total_ms = 0;
  for (int i = 1; i <= swaps; ++i) {
    atlas_swap_report r;
    StatusResult sw = Take(atlas_model_swap(&m, &specs[i % 2], &r));
    ASSERT_EQ(sw.code, ATLAS_STATUS_OK) << "swap " << i << ": " << sw.message;
    total_ms += r.total_ms;
    atlas_backend *b = atlas_model_backend(m);
    size_t modules =
        atlas_kernel_registry_module_count(atlas_backend_kernel_registry(b));
    // One registry holding the Llama module set (llama + llama_batch).
    ASSERT_EQ(modules, atlas_decoder_module_set.count) << "swap " << i;
    // Process-wide: the old model's modules were unloaded, none pile up.
    if (i == 1) modules_after_first = atlas_cuda_host_loaded_modules();
    ASSERT_EQ(atlas_cuda_host_loaded_modules(), modules_after_first)
        << "swap " << i;
    size_t live = atlas_backend_live_bytes(b), f = DriverFree(m);
    if (i <= 2) {
      live0[i % 2] = live;
      free0[i % 2] = f;
      if (i == 1) first[1] = Logits(m);
      continue;
    }
    ASSERT_EQ(live, live0[i % 2])
        << "swap " << i << ": Atlas's ledger holds "
        << (long long)live - (long long)live0[i % 2]
        << " bytes more than after the first swap into this model: a leak "
           "in Atlas";
    long long drift = (long long)f - (long long)free0[i % 2];
    if (std::llabs(drift) > worst) worst = std::llabs(drift), worst_at = i;
    if (i == mid || i == mid + 1) free_mid[i % 2] = f;
    if (i > mid + 1) {
      // Driver free memory is the device's: run this test alone on its GPU
      // (another process's allocations move it too).
      long long moved = (long long)f - (long long)free_mid[i % 2];
      ASSERT_LE(std::llabs(moved), 2ll << 20)
          << "swap " << i << ": the driver's free memory moved " << moved
          << " bytes since swap " << mid << " while Atlas's ledger held "
          << live
          << " bytes, as after the first swap: a leak outside the ledger "
             "(driver objects per swap), or another process on this GPU";
    }
    if (i == swaps - 1 || i == swaps) {
      ASSERT_EQ(Logits(m), first[i % 2]);
    }
  }
  printf(
      "soak: %d swaps; Atlas's ledger flat at %zu / %zu bytes; driver free "
      "memory: worst drift %lld bytes (swap %d), flat from swap %d on "
      "(driver pooling, not a leak); %ld modules loaded process-wide after "
      "every swap; mean swap %.3f ms\n",
      swaps, live0[0], live0[1], worst, worst_at, mid, modules_after_first,
      total_ms / swaps);
  ASSERT_OK(atlas_model_close(m, nullptr));
}

}  // namespace
