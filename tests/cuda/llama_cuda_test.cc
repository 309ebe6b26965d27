// The Llama model end to end on the CUDA backend: logits and tokens match the
// host backend's step for step, and a load failed by a fault at any
// allocation or copy leaves nothing on the ledger and no device memory
// behind. Skips where there is no GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/runtime/test_util.h"

namespace {

std::string MakeCheckpoint(const std::string &leaf, atlas_dtype dtype,
                           bool tied) {
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/atlas_cuda_" + leaf;
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = 11;
  EXPECT_OK(atlas_make_checkpoint_preset("tiny", &o.config));
  o.config.tie_word_embeddings = tied;
  o.dtype = dtype;
  o.shards = 1;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

atlas_status CudaBackend(atlas_backend **out) {
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  return atlas_cuda_backend_create(&o, out);
}

// A CUDA backend without cuBLASLt (ATLAS_CUBLASLT=0, read at creation): the
// 16-bit prefill then runs Atlas's own gemm16 kernels.
atlas_status CudaBackendWithoutCublasLt(atlas_backend **out) {
  const char *old = getenv("ATLAS_CUBLASLT");
  std::string saved = old ? old : "";
  setenv("ATLAS_CUBLASLT", "0", 1);
  atlas_status s = CudaBackend(out);
  if (old) {
    setenv("ATLAS_CUBLASLT", saved.c_str(), 1);
  } else {
    unsetenv("ATLAS_CUBLASLT");
  }
  return s;
}

// After an unload nothing remains on the backend: its own cuBLASLt
// workspace was released before the unload's sweep (release_caches), so the
// sweep found nothing and nothing is left.
void ExpectOnlyTheBackendsOwn(atlas_backend *b) {
  atlas_ledger_entry *entries = nullptr;
  size_t count = 0;
  ASSERT_OK(atlas_ledger_snapshot(atlas_backend_ledger(b), &entries, &count));
  for (size_t i = 0; i < count; ++i) {
    ADD_FAILURE() << entries[i].site.file << ":" << entries[i].site.line << " ("
                  << entries[i].site.func << ") left " << entries[i].bytes
                  << " bytes";
  }
  EXPECT_EQ(count, 0u);
  free(entries);
}

#define CUDA_OR_SKIP(out)                                     \
  do {                                                        \
    StatusResult made_ = Take(CudaBackend(out));              \
    if (made_.code == ATLAS_STATUS_UNAVAILABLE) {             \
      ATLAS_CUDA_SKIP("CUDA unavailable: " << made_.message); \
    }                                                         \
    ASSERT_EQ(made_.code, ATLAS_STATUS_OK) << made_.message;  \
  } while (0)

struct Collected {
  std::vector<std::vector<float>> steps;
};

atlas_status Collect(void *ctx, const float *logits, size_t n) {
  static_cast<Collected *>(ctx)->steps.emplace_back(logits, logits + n);
  return ATLAS_OK;
}

// Loads `dir` on `b`, generates, unloads; the backend must end empty.
void Generate(atlas_backend *b, const std::string &dir,
              const std::vector<uint32_t> &prompt, size_t steps,
              std::vector<uint32_t> *out, Collected *logits,
              atlas_dtype kv_dtype = ATLAS_DTYPE_F32, int64_t max_seq = 32,
              uint32_t attention_blocks = 0) {
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  atlas_decoder_load_options lo{};
  lo.max_seq = max_seq;
  lo.kv_dtype = kv_dtype;
  atlas_decoder_model *model = nullptr;
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, &lo, &model));
  if (attention_blocks != 0) {
    ASSERT_OK(
        atlas_decoder_set_decode_attention_blocks(model, attention_blocks));
  }
  out->assign(steps, 0);
  EXPECT_OK(atlas_decoder_generate(model, prompt.data(), prompt.size(), steps,
                                   out->data(), Collect, logits));
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(model, &r));
  EXPECT_EQ(r.sweep.count, 0u) << (r.sweep.sites ? r.sweep.sites : "");
  EXPECT_EQ(r.failed, 0u);
  atlas_sweep_result_free(&r.sweep);
  ExpectOnlyTheBackendsOwn(b);
  atlas_checkpoint_close(ck);
}

// (weights, tied, KV cache type, cuBLASLt allowed)
class LlamaCuda : public ::testing::TestWithParam<
                      std::tuple<atlas_dtype, bool, atlas_dtype, bool>> {};

TEST_P(LlamaCuda, MatchesTheHostStepForStep) {
  atlas_backend *cuda = nullptr;
  {
    StatusResult made =
        Take(std::get<3>(GetParam()) ? CudaBackend(&cuda)
                                     : CudaBackendWithoutCublasLt(&cuda));
    if (made.code == ATLAS_STATUS_UNAVAILABLE) {
      ATLAS_CUDA_SKIP("CUDA unavailable: " << made.message);
    }
    ASSERT_EQ(made.code, ATLAS_STATUS_OK) << made.message;
  }
  atlas_dtype dtype = std::get<0>(GetParam());
  bool tied = std::get<1>(GetParam());
  std::string dir = MakeCheckpoint("fwd_" + std::to_string(dtype), dtype, tied);
  atlas_backend *host = nullptr;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  ASSERT_OK(atlas_host_backend_create(&o, &host));
  std::vector<uint32_t> prompt = {1, 5, 9, 2}, want_tokens, got_tokens;
  Collected want, got;
  atlas_dtype kv = std::get<2>(GetParam());
  Generate(host, dir, prompt, 12, &want_tokens, &want, kv);
  Generate(cuda, dir, prompt, 12, &got_tokens, &got, kv);
  EXPECT_EQ(got_tokens, want_tokens);
  ASSERT_EQ(got.steps.size(), want.steps.size());
  double max_err = 0, max_ref = 0;
  for (size_t s = 0; s < want.steps.size(); ++s) {
    for (size_t i = 0; i < want.steps[s].size(); ++i) {
      max_err = std::max(max_err,
                         (double)std::fabs(want.steps[s][i] - got.steps[s][i]));
      max_ref = std::max(max_ref, (double)std::fabs(want.steps[s][i]));
    }
  }
  EXPECT_GT(max_ref, 1e-3);
  // A 16-bit cache rounds keys and values that the two sides computed in a
  // different order: an entry may round the other way (one 16-bit step).
  // With a 16-bit cache the prefill also rounds every product's input rows
  // to the weights' type (one term; cuBLASLt, or gemm16 without it) on both
  // sides, bit for bit the same rule: the inputs differ only where the f32
  // values before rounding (summed in a different order, ~1e-7 apart) lie
  // that close to a rounding boundary, and then by one 16-bit step in one of
  // k terms of each sum it feeds: the same mechanism, and a smaller effect,
  // than a cache entry rounding the other way, so the same 2e-3 holds.
  double tolerance = kv == ATLAS_DTYPE_F32 ? 1e-4 : 2e-3;
  EXPECT_LT(max_err / max_ref, tolerance) << "max abs error " << max_err;
  printf(
      "dtype %d, KV %s, cuBLASLt %s: %zu steps, max |cuda - host| / max "
      "|host| = %.3g\n",
      (int)dtype, atlas_dtype_name(kv),
      std::get<3>(GetParam()) ? "allowed" : "off", want.steps.size(),
      max_err / max_ref);
  EXPECT_OK(atlas_backend_destroy(host));
  EXPECT_OK(atlas_backend_destroy(cuda));
}

// Overlapping launches (programmatic dependent launch, on by default on
// sm_90+) change no bit: every kernel waits for its inputs. Races would show
// as differences against launches that wait for each other, graph or eager.
TEST(LlamaCudaOverlap, ChangesNoBitOfTheLogitsNorTheIds) {
  atlas_backend *cuda = nullptr;
  CUDA_OR_SKIP(&cuda);
  std::string dir = MakeCheckpoint("overlap", ATLAS_DTYPE_BF16, false);
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  atlas_decoder_load_options lo{};
  lo.max_seq = 64;
  atlas_decoder_model *model = nullptr;
  ASSERT_OK(atlas_decoder_model_load(cuda, ck, &config, &lo, &model));
  std::vector<uint32_t> prompt = {3, 1, 4, 1, 5};
  std::vector<Collected> runs(3);
  for (int mode = 0; mode < 3; ++mode) {  // overlap+graph, graph, overlap+eager
    ASSERT_OK(atlas_decoder_set_decode_graph(model, mode != 2));
    ASSERT_OK(atlas_decoder_set_decode_overlap(model, mode != 1));
    std::vector<uint32_t> tokens(40, 0);
    ASSERT_OK(atlas_decoder_generate(model, prompt.data(), prompt.size(),
                                     tokens.size(), tokens.data(), Collect,
                                     &runs[mode]));
    // No sink: ids only, the device running a step ahead of the host (each
    // step's argmax feeds the next step's token and position).
    std::vector<uint32_t> quiet(40, 0);
    ASSERT_OK(atlas_decoder_generate(model, prompt.data(), prompt.size(),
                                     quiet.size(), quiet.data(), nullptr,
                                     nullptr));
    EXPECT_EQ(quiet, tokens)
        << "mode " << mode << ": ids without a sink differ";
  }
  ASSERT_EQ(runs[0].steps.size(), 40u + prompt.size() - 1);
  EXPECT_TRUE(runs[0].steps == runs[1].steps)
      << "overlap changed the graph's logits";
  EXPECT_TRUE(runs[2].steps == runs[1].steps)
      << "overlap changed the eager logits";
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(model, &r));
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  EXPECT_OK(atlas_backend_destroy(cuda));
}

// Past 256 keys the decode attention gives a KV head's splits (128 keys at
// this model's head size) to a few blocks, each taking several with a
// running softmax, or a block a split. Asked for 2, the grid keeps room for
// a block per query head and split at two splits: 4 blocks here (group 2),
// the first taking two of the five splits. Both match the host step for step
// over a 600-token context, f32 and a 16-bit cache.
TEST(LlamaCudaDecodeBlocks, FewBlocksOrABlockASplitMatchTheHost) {
  atlas_backend *cuda = nullptr;
  CUDA_OR_SKIP(&cuda);
  atlas_backend *host = nullptr;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  ASSERT_OK(atlas_host_backend_create(&o, &host));
  std::string dir = MakeCheckpoint("blocks", ATLAS_DTYPE_BF16, false);
  std::vector<uint32_t> prompt(600);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = (uint32_t)(i * 7 + 3) % 61;
  for (atlas_dtype kv : {ATLAS_DTYPE_F32, ATLAS_DTYPE_BF16}) {
    std::vector<uint32_t> want_tokens;
    Collected want;
    Generate(host, dir, prompt, 10, &want_tokens, &want, kv, 640);
    for (uint32_t blocks : {2u, UINT32_MAX}) {
      std::vector<uint32_t> got_tokens;
      Collected got;
      Generate(cuda, dir, prompt, 10, &got_tokens, &got, kv, 640, blocks);
      EXPECT_EQ(got_tokens, want_tokens) << "blocks " << blocks;
      ASSERT_EQ(got.steps.size(), want.steps.size());
      double max_err = 0, max_ref = 0;
      // The decode steps: the rows after the prompt's.
      for (size_t s = prompt.size(); s < want.steps.size(); ++s) {
        for (size_t i = 0; i < want.steps[s].size(); ++i) {
          max_err = std::max(
              max_err, (double)std::fabs(want.steps[s][i] - got.steps[s][i]));
          max_ref = std::max(max_ref, (double)std::fabs(want.steps[s][i]));
        }
      }
      EXPECT_GT(max_ref, 1e-3);
      double tolerance = kv == ATLAS_DTYPE_F32 ? 1e-4 : 2e-3;
      EXPECT_LT(max_err / max_ref, tolerance)
          << "KV " << atlas_dtype_name(kv) << ", blocks " << blocks;
      printf(
          "KV %s, decode-attention blocks %u: max |cuda - host| / max |host| = "
          "%.3g\n",
          atlas_dtype_name(kv), blocks, max_err / max_ref);
    }
  }
  EXPECT_OK(atlas_backend_destroy(host));
  EXPECT_OK(atlas_backend_destroy(cuda));
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, LlamaCuda,
    ::testing::Values(
        std::make_tuple(ATLAS_DTYPE_F32, false, ATLAS_DTYPE_F32, true),
        std::make_tuple(ATLAS_DTYPE_F16, false, ATLAS_DTYPE_F32, true),
        std::make_tuple(ATLAS_DTYPE_BF16, true, ATLAS_DTYPE_F32, true),
        std::make_tuple(ATLAS_DTYPE_F16, false, ATLAS_DTYPE_F16, true),
        std::make_tuple(ATLAS_DTYPE_BF16, true, ATLAS_DTYPE_BF16, true),
        std::make_tuple(ATLAS_DTYPE_F16, false, ATLAS_DTYPE_F16, false),
        std::make_tuple(ATLAS_DTYPE_BF16, true, ATLAS_DTYPE_BF16, false),
        std::make_tuple(ATLAS_DTYPE_BF16, false, ATLAS_DTYPE_F16, true)));

TEST(LlamaCudaFaults, FailedLoadAtEveryFaultLeavesNothingOnTheDevice) {
  atlas_backend *b = nullptr;
  CUDA_OR_SKIP(&b);
  std::string dir = MakeCheckpoint("faults", ATLAS_DTYPE_BF16, false);
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  // A clean load counts the operations (and warms the driver's pools).
  atlas_decoder_model *model = nullptr;
  uint64_t a0 = atlas_backend_op_count(b, ATLAS_FAULT_ALLOC);
  uint64_t c0 = atlas_backend_op_count(b, ATLAS_FAULT_COPY);
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
  uint64_t allocs = atlas_backend_op_count(b, ATLAS_FAULT_ALLOC) - a0;
  uint64_t copies = atlas_backend_op_count(b, ATLAS_FAULT_COPY) - c0;
  ASSERT_OK(atlas_decoder_model_unload(model, nullptr));
  size_t free_before = 0, free_after = 0;
  ASSERT_OK(atlas_backend_device_free_memory(b, &free_before));
  ASSERT_GE(allocs, 3u);  // weights, the scan's results, the buffers
  for (int kind = 0; kind < 2; ++kind) {
    uint64_t n = kind == 0 ? allocs : copies;
    for (uint64_t k = 1; k <= n; ++k) {
      atlas_backend_inject_fault(
          b, kind == 0 ? ATLAS_FAULT_ALLOC : ATLAS_FAULT_COPY, k);
      StatusResult r =
          Take(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
      ASSERT_EQ(r.code, ATLAS_STATUS_ABORTED) << "k=" << k << ": " << r.message;
      EXPECT_EQ(model, nullptr);
      ASSERT_EQ(atlas_backend_live_alloc_count(b), 0u) << "fault " << k;
    }
  }
  atlas_backend_inject_fault(b, ATLAS_FAULT_ALLOC, 0);
  atlas_backend_inject_fault(b, ATLAS_FAULT_COPY, 0);
  ASSERT_OK(atlas_backend_device_free_memory(b, &free_after));
  EXPECT_LE((double)free_before - (double)free_after, 2.0 * 1024 * 1024)
      << free_before << " free before " << allocs << "+" << copies
      << " failed loads, " << free_after << " after";
  printf("%llu alloc + %llu copy faults: driver free %zu -> %zu bytes\n",
         (unsigned long long)allocs, (unsigned long long)copies, free_before,
         free_after);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

}  // namespace
