// The Llama forward pass on the host backend against an independent
// double-precision reference, plus loading, teardown and determinism.
#include "atlas/runtime/arch/llama/llama.h"
#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/qwen3/qwen3.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/token_host.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/arch/decoder/decoder_prefill.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/base/half.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/llama/checkpoint_fixture.h"
#include "tests/runtime/test_util.h"

namespace {

// ---- an independent reference: plain loops in double --------------------

struct RefModel {
  atlas_decoder_config c;
  const atlas_checkpoint *ck;

  std::vector<double> Tensor(const std::string &name) const {
    atlas_checkpoint_tensor t;
    StatusResult r = Take(atlas_checkpoint_find(ck, name.c_str(), &t));
    EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
    std::vector<double> out(t.tensor->elements);
    std::vector<unsigned char> bytes(t.tensor->bytes);
    StatusResult rr = Take(
        atlas_safetensors_read(t.tensor, 0, t.tensor->bytes, bytes.data()));
    EXPECT_EQ(rr.code, ATLAS_STATUS_OK) << rr.message;
    const unsigned char *p = bytes.data();
    for (uint64_t i = 0; i < t.tensor->elements; ++i) {
      if (t.tensor->dtype == ATLAS_DTYPE_F32) {
        float f;
        memcpy(&f, p + i * 4, 4);
        out[i] = f;
      } else {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        if (t.tensor->dtype == ATLAS_DTYPE_BF16) {
          uint32_t bits = (uint32_t)h << 16;
          float f;
          memcpy(&f, &bits, 4);
          out[i] = f;
        } else {
          // IEEE half by hand (independent of the runtime's converter).
          int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
          double v = exp == 0 ? std::ldexp(man, -24)
                              : std::ldexp(1024 + man, exp - 25);
          out[i] = sign ? -v : v;
        }
      }
    }
    return out;
  }

  std::string L(int l, const char *suffix) const {
    return "model.layers." + std::to_string(l) + "." + suffix;
  }

  static std::vector<double> MatVec(const std::vector<double> &w,
                                    const std::vector<double> &x, size_t rows) {
    size_t cols = x.size();
    std::vector<double> out(rows, 0.0);
    for (size_t r = 0; r < rows; ++r)
      for (size_t k = 0; k < cols; ++k) out[r] += w[r * cols + k] * x[k];
    return out;
  }

  std::vector<double> Norm(const std::vector<double> &x,
                           const std::vector<double> &w) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    double scale = 1.0 / std::sqrt(ss / x.size() + c.rms_norm_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = w[i] * x[i] * scale;
    return out;
  }

  void HeadNorm(std::vector<double> &v, size_t heads,
                const std::vector<double> &w) const {
    size_t hd = (size_t)c.head_dim;
    for (size_t h = 0; h < heads; ++h) {
      std::vector<double> one(v.begin() + h * hd, v.begin() + (h + 1) * hd);
      one = Norm(one, w);
      std::copy(one.begin(), one.end(), v.begin() + h * hd);
    }
  }

  void Rope(std::vector<double> &v, size_t heads, size_t pos) const {
    size_t hd = (size_t)c.head_dim, half = hd / 2;
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < half; ++i) {
        double inv_freq = 1.0 / std::pow(c.rope_theta, (2.0 * i) / hd);
        double a = pos * inv_freq;
        double x0 = v[h * hd + i], x1 = v[h * hd + i + half];
        v[h * hd + i] = x0 * std::cos(a) - x1 * std::sin(a);
        v[h * hd + i + half] = x1 * std::cos(a) + x0 * std::sin(a);
      }
    }
  }

  // Logits for every position of `tokens` (full causal attention).
  std::vector<std::vector<double>> Run(
      const std::vector<uint32_t> &tokens) const {
    size_t H = (size_t)c.hidden_size, hd = (size_t)c.head_dim;
    size_t nh = (size_t)c.num_attention_heads,
           nkv = (size_t)c.num_key_value_heads;
    std::vector<double> emb = Tensor("model.embed_tokens.weight");
    std::vector<double> head =
        c.tie_word_embeddings ? emb : Tensor("lm_head.weight");
    std::vector<std::vector<std::vector<double>>> K(c.num_hidden_layers),
        V(c.num_hidden_layers);
    std::vector<std::vector<double>> all;
    for (size_t pos = 0; pos < tokens.size(); ++pos) {
      std::vector<double> x(emb.begin() + tokens[pos] * H,
                            emb.begin() + (tokens[pos] + 1) * H);
      for (int l = 0; l < c.num_hidden_layers; ++l) {
        std::vector<double> xb =
            Norm(x, Tensor(L(l, "input_layernorm.weight")));
        std::vector<double> q =
            MatVec(Tensor(L(l, "self_attn.q_proj.weight")), xb, nh * hd);
        std::vector<double> k =
            MatVec(Tensor(L(l, "self_attn.k_proj.weight")), xb, nkv * hd);
        std::vector<double> v =
            MatVec(Tensor(L(l, "self_attn.v_proj.weight")), xb, nkv * hd);
        if (c.qk_norm) {  // Qwen3: each head's q and k RMSNorm'd before RoPE
          HeadNorm(q, nh, Tensor(L(l, "self_attn.q_norm.weight")));
          HeadNorm(k, nkv, Tensor(L(l, "self_attn.k_norm.weight")));
        }
        Rope(q, nh, pos);
        Rope(k, nkv, pos);
        K[l].push_back(k);
        V[l].push_back(v);
        std::vector<double> att(nh * hd, 0.0);
        for (size_t h = 0; h < nh; ++h) {
          size_t kvh = h / (nh / nkv);
          std::vector<double> s(pos + 1);
          double mx = -1e300;
          for (size_t t = 0; t <= pos; ++t) {
            double d = 0;
            for (size_t i = 0; i < hd; ++i)
              d += q[h * hd + i] * K[l][t][kvh * hd + i];
            s[t] = d / std::sqrt((double)hd);
            mx = std::max(mx, s[t]);
          }
          double sum = 0;
          for (double &e : s) sum += (e = std::exp(e - mx));
          for (size_t t = 0; t <= pos; ++t)
            for (size_t i = 0; i < hd; ++i)
              att[h * hd + i] += s[t] / sum * V[l][t][kvh * hd + i];
        }
        std::vector<double> o =
            MatVec(Tensor(L(l, "self_attn.o_proj.weight")), att, H);
        for (size_t i = 0; i < H; ++i) x[i] += o[i];
        xb = Norm(x, Tensor(L(l, "post_attention_layernorm.weight")));
        size_t I = (size_t)c.intermediate_size;
        std::vector<double> g =
            MatVec(Tensor(L(l, "mlp.gate_proj.weight")), xb, I);
        std::vector<double> u =
            MatVec(Tensor(L(l, "mlp.up_proj.weight")), xb, I);
        for (size_t i = 0; i < I; ++i)
          g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
        std::vector<double> d =
            MatVec(Tensor(L(l, "mlp.down_proj.weight")), g, H);
        for (size_t i = 0; i < H; ++i) x[i] += d[i];
      }
      x = Norm(x, Tensor("model.norm.weight"));
      all.push_back(MatVec(head, x, (size_t)c.vocab_size));
    }
    return all;
  }
};

// A model on a fresh host backend, and everything needed to close it.
struct Loaded {
  atlas_backend *backend = nullptr;
  atlas_checkpoint *ck = nullptr;
  atlas_decoder_config config{};
  atlas_decoder_model *model = nullptr;

  // `family`: how config.json is read (the front door picks it by
  // model_type; this test links the Llama code alone).
  void Open(const std::string &dir, int64_t prefill_rows = 0,
            atlas_dtype kv_dtype = ATLAS_DTYPE_F32,
            const atlas_decoder_family *family = &atlas_llama_family) {
    atlas_backend_options o{};
    o.modules = &atlas_decoder_module_set;
    ASSERT_OK(atlas_host_backend_create(&o, &backend));
    ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
    ASSERT_OK(atlas_decoder_config_load(family, (dir + "/config.json").c_str(),
                                        &config));
    atlas_decoder_load_options lo{};
    lo.max_seq = 32;
    lo.prefill_rows = prefill_rows;
    lo.kv_dtype = kv_dtype;
    ASSERT_OK(atlas_decoder_model_load(backend, ck, &config, &lo, &model));
  }
  ~Loaded() {
    if (model) {
      atlas_teardown_report r;
      EXPECT_OK(atlas_decoder_model_unload(model, &r));
      EXPECT_EQ(r.sweep.count, 0u) << (r.sweep.sites ? r.sweep.sites : "");
      EXPECT_EQ(r.failed, 0u);
      atlas_sweep_result_free(&r.sweep);
      EXPECT_EQ(atlas_backend_live_alloc_count(backend), 0u);
    }
    if (ck) atlas_checkpoint_close(ck);
    if (backend) EXPECT_OK(atlas_backend_destroy(backend));
  }
};

struct Collected {
  std::vector<std::vector<float>> steps;
};

atlas_status Collect(void *ctx, const float *logits, size_t n) {
  static_cast<Collected *>(ctx)->steps.emplace_back(logits, logits + n);
  return ATLAS_OK;
}

// Generates from the checkpoint in `dir` and checks every step's logits
// and every greedy id against RefModel.
void ExpectMatchesReference(
    const std::string &dir,
    const atlas_decoder_family *family = &atlas_llama_family) {
  Loaded m;
  m.Open(dir, 0, ATLAS_DTYPE_F32, family);
  ASSERT_NE(m.model, nullptr);
  std::vector<uint32_t> prompt = {1, 5, 9, 2};
  const size_t steps = 6;
  std::vector<uint32_t> out(steps);
  Collected got;
  ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), steps,
                                   out.data(), Collect, &got));
  ASSERT_EQ(got.steps.size(), prompt.size() + steps - 1);
  // Feed the reference the same token sequence the model consumed.
  std::vector<uint32_t> seq = prompt;
  seq.insert(seq.end(), out.begin(), out.end() - 1);
  RefModel ref{m.config, m.ck};
  std::vector<std::vector<double>> want = ref.Run(seq);
  double max_err = 0, max_ref = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    for (size_t i = 0; i < want[s].size(); ++i) {
      max_err = std::max(max_err, std::fabs(want[s][i] - got.steps[s][i]));
      max_ref = std::max(max_ref, std::fabs(want[s][i]));
    }
  }
  EXPECT_GT(max_ref, 1e-3) << "logits should not be trivially zero";
  EXPECT_LT(max_err / max_ref, 1e-4) << "max abs error " << max_err;
  // Greedy: every generated token is the argmax of the previous step.
  for (size_t g = 0; g < steps; ++g) {
    const std::vector<double> &row = want[prompt.size() - 1 + g];
    size_t best = std::max_element(row.begin(), row.end()) - row.begin();
    EXPECT_EQ(out[g], best) << "step " << g;
  }
}

class LlamaForward
    : public ::testing::TestWithParam<std::tuple<atlas_dtype, bool>> {};

TEST_P(LlamaForward, MatchesDoublePrecisionReference) {
  atlas_dtype dtype = std::get<0>(GetParam());
  bool tied = std::get<1>(GetParam());
  ExpectMatchesReference(
      MakeCheckpoint("ref_" + std::to_string(dtype) + (tied ? "_tied" : ""),
                     "tiny", 7, dtype, tied));
}

// The launches of one eager decode step of the model in `dir`.
void StepLaunches(const std::string &dir, uint64_t *out,
                  const atlas_decoder_family *family = &atlas_llama_family) {
  Loaded m;
  m.Open(dir, 0, ATLAS_DTYPE_F32, family);
  ASSERT_NE(m.model, nullptr);
  ASSERT_OK(atlas_decoder_set_decode_graph(m.model, false));  // eager launches
  std::vector<float> logits(m.config.vocab_size);
  uint64_t before = atlas_backend_op_count(m.backend, ATLAS_FAULT_LAUNCH);
  ASSERT_OK(atlas_decoder_forward(m.model, 1, 0, logits.data()));
  *out = atlas_backend_op_count(m.backend, ATLAS_FAULT_LAUNCH) - before;
}

// Hidden 12256 and 12288 (Qwen3's q/k norms or not) against the reference;
// `launches` gets each one's launches a step.
void WideHiddenStates(bool qk_norm, uint64_t (&launches)[2]) {
  const int64_t hiddens[2] = {12256, 12288};
  const atlas_decoder_family *family =
      qk_norm ? &atlas_qwen3_family : &atlas_llama_family;
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("hidden " + std::to_string(hiddens[i]));
    std::string dir = MakeWideCheckpoint(
        (qk_norm ? "wide_qk_" : "wide_") + std::to_string(hiddens[i]),
        hiddens[i], qk_norm ? 4 : 3, ATLAS_DTYPE_BF16, qk_norm);
    ExpectMatchesReference(dir, family);
    StepLaunches(dir, &launches[i], family);
  }
}

// q/k/v's and the MLP's products normalise the hidden state a warp at a
// time, which needs no shared memory: at hidden 12256 and at 12288 (past
// the 48 KiB a block-staged copy fits in beside its 32-float reduction
// buffer) a step makes the same launches (only the final norm is one on
// both). Both sides against the reference.
TEST(Llama, WideHiddenStatesOnBothSidesOfTheFoldedNormLimit) {
  uint64_t launches[2] = {0, 0};
  WideHiddenStates(false, launches);
  EXPECT_EQ(launches[1], launches[0])
      << "12256: " << launches[0] << " launches a step, 12288: " << launches[1];
}

// Qwen3's q/k norms keep q, k and v in matvec_qkv (RoPE apart), which
// stages the normalised hidden state a block at a time in shared memory:
// at 12256 it fits (48 KiB beside the 32-float reduction buffer), at 12288
// an rmsnorm launch takes its place. Both against the reference.
TEST(Llama, QkNormWideHiddenStatesOnBothSidesOfTheStagedNormLimit) {
  uint64_t launches[2] = {0, 0};
  WideHiddenStates(true, launches);
  EXPECT_EQ(launches[1], launches[0] + 1)
      << "12256: " << launches[0] << " launches a step, 12288: " << launches[1];
}

// k_proj and up_proj in another type than the rest: the step runs q, k and
// v as three products and gate and up as two, each normalising its input a
// warp at a time (more launches than one type's fused step), against the
// reference.
TEST(Llama, LayersOfMixedWeightTypesMatchTheReference) {
  for (atlas_dtype dtype : {ATLAS_DTYPE_BF16, ATLAS_DTYPE_F32}) {
    SCOPED_TRACE("dtype " + std::to_string(dtype));
    uint64_t launches[2] = {0, 0};
    for (bool mixed : {false, true}) {
      std::string dir = MakeCheckpoint(
          "mixed_" + std::to_string(dtype) + (mixed ? "_yes" : "_no"), "tiny",
          11, dtype, false, 1, 0, mixed);
      ExpectMatchesReference(dir);
      StepLaunches(dir, &launches[mixed]);
    }
    EXPECT_GT(launches[1], launches[0])
        << "the mixed layers took the separate products";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, LlamaForward,
    ::testing::Values(std::make_tuple(ATLAS_DTYPE_F32, false),
                      std::make_tuple(ATLAS_DTYPE_F16, false),
                      std::make_tuple(ATLAS_DTYPE_BF16, true)));

TEST(Llama, GenerationIsDeterministicAcrossLoads) {
  std::string dir = MakeCheckpoint("det", "tiny", 7, ATLAS_DTYPE_F32, false, 2);
  std::vector<uint32_t> prompt = {3, 4};
  std::vector<uint32_t> a(8), b(8);
  {
    Loaded m;
    m.Open(dir);
    ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), 2, 8, a.data(),
                                     nullptr, nullptr));
  }
  {
    Loaded m;
    m.Open(dir);
    ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), 2, 8, b.data(),
                                     nullptr, nullptr));
  }
  EXPECT_EQ(a, b);
}

TEST(Llama, BadTokensAndPositionsAreClearErrors) {
  Loaded m;
  m.Open(MakeCheckpoint("bad", "tiny", 7, ATLAS_DTYPE_F32));
  std::vector<float> logits(m.config.vocab_size);
  EXPECT_STATUS(atlas_decoder_forward(m.model, 64, 0, logits.data()),
                ATLAS_STATUS_INVALID_ARGUMENT, "outside the vocabulary");
  EXPECT_STATUS(atlas_decoder_forward(m.model, 1, 32, logits.data()),
                ATLAS_STATUS_INVALID_ARGUMENT, "past the KV cache");
  uint32_t p = 1, out[64];
  EXPECT_STATUS(
      atlas_decoder_generate(m.model, &p, 1, 40, out, nullptr, nullptr),
      ATLAS_STATUS_INVALID_ARGUMENT, "the KV cache holds 32");
}

TEST(Llama, FailedLoadAtEveryAllocationLeavesNothing) {
  std::string dir = MakeCheckpoint("faults", "tiny", 7, ATLAS_DTYPE_BF16);
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  // Count what a clean load does.
  atlas_decoder_model *model = nullptr;
  const atlas_fault_kind kinds[] = {ATLAS_FAULT_ALLOC, ATLAS_FAULT_COPY,
                                    ATLAS_FAULT_EVENT, ATLAS_FAULT_HOST_ALLOC};
  uint64_t before[4], ops[4];
  for (int i = 0; i < 4; ++i) before[i] = atlas_backend_op_count(b, kinds[i]);
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
  for (int i = 0; i < 4; ++i)
    ops[i] = atlas_backend_op_count(b, kinds[i]) - before[i];
  ASSERT_OK(atlas_decoder_model_unload(model, nullptr));
  ASSERT_GE(ops[0], 3u);  // weights, the scan's results, the buffers
  ASSERT_GE(ops[2], 2u);  // the decode_ahead events
  ASSERT_GE(ops[3], 1u);  // the decode_ahead ring (and the upload's staging)
  for (int i = 0; i < 4; ++i) {
    for (uint64_t k = 1; k <= ops[i]; ++k) {
      SCOPED_TRACE(std::string(atlas_fault_kind_name(kinds[i])) + " " +
                   std::to_string(k));
      atlas_backend_inject_fault(b, kinds[i], k);
      StatusResult r =
          Take(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
      atlas_backend_inject_fault(b, kinds[i], 0);
      ASSERT_EQ(r.code, ATLAS_STATUS_ABORTED) << r.message;
      EXPECT_NE(r.message.find(dir), std::string::npos) << r.message;
      EXPECT_EQ(model, nullptr);
      ASSERT_EQ(atlas_backend_live_alloc_count(b), 0u);
    }
  }
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

void CollectLines(void *ctx, atlas_log_level, const char *message) {
  static_cast<std::vector<std::string> *>(ctx)->push_back(message);
}

// A load that fails and whose cleanup then fails too (a free the device
// refuses) says both: the caller learns that memory was left behind, once
// (the status; no log line repeats it), and the ledger still holds that
// memory until the backend's sweep frees it and names its site.
TEST(Llama, FailedLoadWhoseCleanupFailsReportsBoth) {
  std::string dir = MakeCheckpoint("cleanup_fault", "tiny", 7, ATLAS_DTYPE_F32);
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  std::vector<std::string> lines;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  o.log = atlas_log_sink{CollectLines, &lines, ATLAS_LOG_INFO};
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  // The last allocation of a clean load fails; by then the weights are
  // built, so the cleanup has frees to make. Its last one (the weights, the
  // first resource registered) is refused.
  atlas_decoder_model *model = nullptr;
  uint64_t before = atlas_backend_op_count(b, ATLAS_FAULT_ALLOC);
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
  uint64_t allocs = atlas_backend_op_count(b, ATLAS_FAULT_ALLOC) - before;
  ASSERT_OK(atlas_decoder_model_unload(model, nullptr));
  ASSERT_GE(allocs, 2u);
  before = atlas_backend_op_count(b, ATLAS_FAULT_FREE);
  atlas_backend_inject_fault(b, ATLAS_FAULT_ALLOC, allocs);
  EXPECT_STATUS(atlas_decoder_model_load(b, ck, &config, nullptr, &model),
                ATLAS_STATUS_ABORTED, "injected fault: allocation");
  uint64_t frees = atlas_backend_op_count(b, ATLAS_FAULT_FREE) - before;
  ASSERT_GE(frees, 1u);
  ASSERT_EQ(atlas_backend_live_alloc_count(b), 0u);
  lines.clear();
  atlas_backend_inject_fault(b, ATLAS_FAULT_ALLOC, allocs);
  atlas_backend_inject_fault(b, ATLAS_FAULT_FREE, frees);
  StatusResult r =
      Take(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
  atlas_backend_inject_fault(b, ATLAS_FAULT_FREE, 0);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(r.code, ATLAS_STATUS_ABORTED) << r.message;
  EXPECT_NE(r.message.find("injected fault: allocation"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("injected fault: free"), std::string::npos)
      << "the cleanup's failure is lost: " << r.message;
  EXPECT_NE(r.message.find("releasing what the failed load had built"),
            std::string::npos)
      << r.message;
  for (const std::string &line : lines) {
    EXPECT_EQ(line.find("injected fault"), std::string::npos)
        << "reported twice: " << line;
  }
  ASSERT_EQ(atlas_backend_live_alloc_count(b), 1u)
      << "the refused free is still held";
  atlas_sweep_result swept;
  ASSERT_OK(atlas_backend_sweep_unreleased(b, &swept));
  EXPECT_EQ(swept.count, 1u);
  EXPECT_NE(std::string(swept.sites ? swept.sites : "").find("decoder"),
            std::string::npos);
  atlas_sweep_result_free(&swept);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

// Issue #16: the KV cache, the scratch and the prefill scratch are carved
// from one allocation (about 30 before, each a cuMemAlloc at 60-80 us on the
// H200), so a load makes a handful of backend allocations whatever the
// layer count: the weights' arena, the weight scan's results (released at
// the end of the load) and the buffers. The figure the swap budgets with
// still covers what the load leaves live, padding included.
struct LoadCount {
  uint64_t allocs = 0;  // backend allocations the load made
  size_t live = 0;      // left live by it
  size_t live_bytes = 0;
  uint64_t required = 0;  // atlas_decoder_required_bytes
  std::string report;     // the ledger's report by site
  size_t redzone_violations = 0;
};

LoadCount CountLoad(const std::string &leaf, int layers, atlas_dtype dtype) {
  LoadCount out;
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + leaf;
  atlas_make_checkpoint_options mo{};
  mo.out_dir = dir.c_str();
  mo.seed = 5;
  EXPECT_OK(atlas_make_checkpoint_preset("tiny", &mo.config));
  mo.config.num_hidden_layers = layers;
  mo.dtype = dtype;
  mo.shards = 1;
  EXPECT_OK(atlas_make_checkpoint_write(&mo));
  Loaded m;
  m.Open(dir, 0, dtype);  // default prefill rows: the batched scratch too
  if (m.model == nullptr) return out;
  EXPECT_NE(m.model->prefill, nullptr);
  out.allocs = atlas_backend_op_count(m.backend, ATLAS_FAULT_ALLOC);
  out.live = atlas_backend_live_alloc_count(m.backend);
  out.live_bytes = atlas_backend_live_bytes(m.backend);
  EXPECT_OK(atlas_decoder_required_bytes(&m.config, m.ck, 32, &out.required));
  char *text = nullptr;
  EXPECT_OK(atlas_backend_alloc_report(m.backend, 0, 0, &text));
  if (text != nullptr) out.report = text;
  free(text);
  // A step over every buffer, then the guard bands (when there are any).
  std::vector<float> logits((size_t)m.config.vocab_size);
  uint32_t prompt[3] = {1, 2, 3};
  EXPECT_OK(
      atlas_decoder_prefill(m.model, prompt, 3, 0, nullptr, nullptr, nullptr));
  EXPECT_OK(atlas_decoder_forward(m.model, 4, 3, logits.data()));
  EXPECT_OK(atlas_backend_scan_redzones(m.backend, nullptr, 0,
                                        &out.redzone_violations));
  return out;
}

TEST(Llama, LoadAllocationsDoNotGrowWithLayers) {
  for (atlas_dtype dtype : {ATLAS_DTYPE_F32, ATLAS_DTYPE_BF16}) {
    SCOPED_TRACE(atlas_dtype_name(dtype));
    std::string d = std::to_string(dtype);
    LoadCount two = CountLoad("count2_" + d, 2, dtype);
    LoadCount twelve = CountLoad("count12_" + d, 12, dtype);
    EXPECT_EQ(two.allocs, twelve.allocs);
    EXPECT_LE(twelve.allocs, 4u) << twelve.report;
    // weights, buffers, the decode_ahead ring (pinned host memory)
    EXPECT_EQ(twelve.live, 3u) << twelve.report;
    EXPECT_NE(twelve.report.find("make_ahead"), std::string::npos)
        << twelve.report;
    EXPECT_NE(twelve.report.find("kv_cache, scratch, prefill_scratch"),
              std::string::npos)
        << twelve.report;
    EXPECT_GE(two.required, two.live_bytes);
    EXPECT_GE(twelve.required, twelve.live_bytes);
  }
}

// With ATLAS_REDZONE the buffers keep one allocation per piece, each at its
// own call site with its own guard band (decoder_buffers.h says why).
TEST(Llama, RedZonesKeepOneAllocationPerBuffer) {
  ScopedEnv redzone("ATLAS_REDZONE", "64");
  LoadCount two = CountLoad("rz2", 2, ATLAS_DTYPE_F32);
  LoadCount four = CountLoad("rz4", 4, ATLAS_DTYPE_F32);
  // weights + 2 KV + 13 scratch + 12 prefill (no 16-bit rows in f32 mode) +
  // the decode_ahead ring
  EXPECT_EQ(two.live, 29u) << two.report;
  EXPECT_EQ(four.live, two.live);
  EXPECT_NE(two.report.find("take_scratch"), std::string::npos) << two.report;
  EXPECT_NE(two.report.find("atlas_decoder_prefill_take"), std::string::npos)
      << two.report;
  EXPECT_EQ(two.redzone_violations, 0u);
  EXPECT_GE(two.required, two.live_bytes);
  // A load that fails at any of those allocations leaves none behind.
  std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/rz2";
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config;
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  for (uint64_t k = 1; k <= two.allocs; ++k) {
    atlas_backend_inject_fault(b, ATLAS_FAULT_ALLOC, k);
    atlas_decoder_model *model = nullptr;
    StatusResult r =
        Take(atlas_decoder_model_load(b, ck, &config, nullptr, &model));
    ASSERT_EQ(r.code, ATLAS_STATUS_ABORTED) << "k=" << k << ": " << r.message;
    ASSERT_EQ(atlas_backend_live_alloc_count(b), 0u) << "fault " << k;
  }
  atlas_backend_inject_fault(b, ATLAS_FAULT_ALLOC, 0);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

// The batched prefill against the one-token path on the same host backend:
// whole prompt in one pass, in chunks of 3 (attention over earlier chunks'
// cache rows), and token by token must give the same logits for every row.
TEST(Llama, BatchedPrefillMatchesTokenByToken) {
  for (atlas_dtype dtype : {ATLAS_DTYPE_F32, ATLAS_DTYPE_BF16}) {
    std::string dir =
        MakeCheckpoint("prefill_" + std::to_string(dtype), "tiny", 11, dtype);
    std::vector<uint32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
    std::vector<std::vector<std::vector<float>>> runs;
    std::vector<std::vector<uint32_t>> outs;
    for (int64_t rows : {-1, 0, 3}) {
      Loaded m;
      m.Open(dir, rows);
      ASSERT_NE(m.model, nullptr);
      Collected got;
      std::vector<uint32_t> out(4);
      ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(),
                                       out.size(), out.data(), Collect, &got));
      ASSERT_EQ(got.steps.size(), prompt.size() + out.size() - 1);
      runs.push_back(got.steps);
      outs.push_back(out);
    }
    for (size_t r = 1; r < runs.size(); ++r) {
      EXPECT_EQ(outs[r], outs[0]) << "dtype " << dtype << " run " << r;
      for (size_t s = 0; s < runs[0].size(); ++s) {
        double diff = 0, ref = 0;
        for (size_t i = 0; i < runs[0][s].size(); ++i) {
          double d = (double)runs[r][s][i] - runs[0][s][i];
          diff += d * d;
          ref += (double)runs[0][s][i] * runs[0][s][i];
        }
        EXPECT_LE(std::sqrt(diff / ref), 1e-5)
            << "dtype " << dtype << " run " << r << " row " << s;
      }
    }
  }
}

// The decode step captured once and replayed (the default) computes exactly
// what the same kernels launched one by one compute, with and without the
// split-context attention, and greedy ids chosen on the device equal the
// host's argmax of the copied logits.
TEST(Llama, CapturedDecodeStepMatchesEagerLaunches) {
  for (atlas_dtype dtype : {ATLAS_DTYPE_F32, ATLAS_DTYPE_BF16}) {
    std::string dir =
        MakeCheckpoint("graph_" + std::to_string(dtype), "tiny", 13, dtype);
    std::vector<uint32_t> prompt = {3, 1, 4, 1, 5};
    for (int64_t rows : {-1, 0}) {
      std::vector<std::vector<float>> logits[2];
      std::vector<uint32_t> ids[2], quiet(6);
      for (int eager = 0; eager <= 1; ++eager) {
        Loaded m;
        m.Open(dir, rows);
        ASSERT_NE(m.model, nullptr);
        ASSERT_OK(atlas_decoder_set_decode_graph(m.model, eager == 0));
        Collected got;
        ids[eager].resize(6);
        ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(),
                                         6, ids[eager].data(), Collect, &got));
        logits[eager] = got.steps;
        if (eager == 0) {
          // No sink: only ids cross back, chosen on the device.
          ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(),
                                           prompt.size(), 6, quiet.data(),
                                           nullptr, nullptr));
        }
      }
      EXPECT_EQ(logits[0], logits[1]) << "dtype " << dtype << " rows " << rows;
      EXPECT_EQ(ids[0], ids[1]);
      EXPECT_EQ(quiet, ids[0]);
      for (size_t s = prompt.size() - 1; s < logits[1].size(); ++s) {
        const std::vector<float> &row = logits[1][s];
        uint32_t best =
            (uint32_t)(std::max_element(row.begin(), row.end()) - row.begin());
        EXPECT_EQ(ids[1][s - (prompt.size() - 1)], best) << "step " << s;
      }
    }
  }
}

bool StopAfterTwo(void *ctx, uint32_t token) {
  auto *seen = static_cast<std::vector<uint32_t> *>(ctx);
  seen->push_back(token);
  return seen->size() < 2;
}

// Greedy generation with nothing reading logits runs the device a step
// ahead of the host (each step's argmax writes the next step's token and
// position). It must choose what the host reading each id chooses, stop at
// the same EOS or on_token answer, report the same count, and leave the
// model as a later generation expects it; the ids with a sink are checked
// against the host's argmax of the logits in CapturedDecodeStepMatchesEager.
TEST(Llama, DeviceRunningAheadEqualsHostReadingEachId) {
  std::string dir = MakeCheckpoint("ahead", "tiny", 21, ATLAS_DTYPE_BF16);
  const std::vector<uint32_t> prompt = {7, 3, 9};
  for (int64_t rows : {-1, 0}) {
    SCOPED_TRACE("prefill_rows " + std::to_string(rows));
    Loaded m;
    m.Open(dir, rows);
    ASSERT_NE(m.model, nullptr);
    // The reference: ids with a sink (the host reads every step).
    std::vector<uint32_t> want(12);
    Collected got;
    ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), 12,
                                     want.data(), Collect, &got));
    const uint32_t eos[] = {want[4]};
    size_t first_eos = 0;
    while (want[first_eos] != eos[0]) ++first_eos;
    for (bool ahead : {true, false}) {
      SCOPED_TRACE(ahead ? "ahead" : "host reads each id");
      ASSERT_OK(atlas_decoder_set_decode_ahead(m.model, ahead));
      for (size_t steps : {size_t{1}, size_t{2}, size_t{12}}) {
        std::vector<uint32_t> ids(steps);
        size_t count = 0;
        ASSERT_OK(atlas_decoder_generate_ex(
            m.model, prompt.data(), prompt.size(), steps, nullptr, ids.data(),
            &count, nullptr, nullptr));
        EXPECT_EQ(count, steps);
        EXPECT_EQ(ids,
                  std::vector<uint32_t>(want.begin(), want.begin() + steps));
      }
      atlas_arch_generate_options o{};
      o.eos = eos;
      o.eos_count = 1;
      std::vector<uint32_t> ids(12, 0xFFFFFFFFu);
      size_t count = 0;
      ASSERT_OK(atlas_decoder_generate_ex(m.model, prompt.data(), prompt.size(),
                                          12, &o, ids.data(), &count, nullptr,
                                          nullptr));
      EXPECT_EQ(count, first_eos + 1);
      EXPECT_EQ(std::vector<uint32_t>(ids.begin(), ids.begin() + count),
                std::vector<uint32_t>(want.begin(), want.begin() + count));
      EXPECT_EQ(ids[count], 0xFFFFFFFFu) << "an id past the EOS was written";
      std::vector<uint32_t> seen;
      atlas_arch_generate_options stop{};
      stop.on_token = StopAfterTwo;
      stop.token_ctx = &seen;
      ASSERT_OK(atlas_decoder_generate_ex(m.model, prompt.data(), prompt.size(),
                                          12, &stop, ids.data(), &count,
                                          nullptr, nullptr));
      EXPECT_EQ(count, 2u);
      EXPECT_EQ(seen, std::vector<uint32_t>(want.begin(), want.begin() + 2));
      // The decode loop alone, from the prompt's last token.
      std::vector<uint32_t> loop(6);
      std::vector<float> logits(m.config.vocab_size);
      for (size_t i = 0; i + 1 < prompt.size(); ++i) {
        ASSERT_OK(atlas_decoder_forward(m.model, prompt[i], (uint32_t)i,
                                        logits.data()));
      }
      ASSERT_OK(atlas_decoder_decode_greedy(
          m.model, prompt.back(), (uint32_t)prompt.size() - 1, 6, loop.data()));
      EXPECT_EQ(loop, std::vector<uint32_t>(want.begin(), want.begin() + 6));
    }
    // Afterwards, with a sink again: the same logits as the first run.
    Collected again;
    std::vector<uint32_t> ids(12);
    ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), 12,
                                     ids.data(), Collect, &again));
    EXPECT_EQ(ids, want);
    EXPECT_EQ(again.steps, got.steps);
  }
}

atlas_status ChooseZero(void *ctx, const float *logits, size_t vocab,
                        uint32_t *out) {
  (void)logits;
  (void)vocab;
  ++*static_cast<size_t *>(ctx);
  *out = 0;
  return ATLAS_OK;
}

// Steps 0 runs the prompt for its logits only (`run --steps 0`): no token is
// generated, so on_token and the chooser see none. They did: the prompt's
// last position chose a token and handed it to on_token, which atlas_generate
// turned into text that `run --prompt TEXT --steps 0` printed.
TEST(Llama, StepsZeroGeneratesNoToken) {
  std::string dir = MakeCheckpoint("steps0", "tiny", 23, ATLAS_DTYPE_F32);
  for (const std::vector<uint32_t> &prompt :
       {std::vector<uint32_t>{5}, std::vector<uint32_t>{7, 3, 9}}) {
    for (int64_t rows : {-1, 0}) {
      SCOPED_TRACE("prompt " + std::to_string(prompt.size()) +
                   ", prefill_rows " + std::to_string(rows));
      Loaded m;
      m.Open(dir, rows);
      ASSERT_NE(m.model, nullptr);
      for (bool ahead : {true, false}) {
        ASSERT_OK(atlas_decoder_set_decode_ahead(m.model, ahead));
        for (bool chooser : {false, true}) {
          SCOPED_TRACE(std::string(ahead ? "ahead" : "host reads") +
                       (chooser ? ", chooser" : ", argmax"));
          std::vector<uint32_t> seen;
          size_t chosen = 0;
          atlas_arch_generate_options o{};
          o.on_token = StopAfterTwo;  // records every token it sees
          o.token_ctx = &seen;
          if (chooser) {
            o.choose = ChooseZero;
            o.choose_ctx = &chosen;
          }
          size_t count = 99;
          ASSERT_OK(atlas_decoder_generate_ex(m.model, prompt.data(),
                                              prompt.size(), 0, &o, nullptr,
                                              &count, nullptr, nullptr));
          EXPECT_EQ(count, 0u);
          EXPECT_TRUE(seen.empty())
              << "on_token saw " << seen.size() << " token(s)";
          EXPECT_EQ(chosen, 0u);
          Collected rows_seen;
          ASSERT_OK(atlas_decoder_generate_ex(m.model, prompt.data(),
                                              prompt.size(), 0, &o, nullptr,
                                              &count, Collect, &rows_seen));
          EXPECT_EQ(rows_seen.steps.size(), prompt.size())
              << "one logits row a prompt token";
          EXPECT_TRUE(seen.empty());
          EXPECT_EQ(chosen, 0u);
        }
      }
    }
  }
}

// prompt + steps - 1 positions, compared without the sum: at steps SIZE_MAX
// it wrapped to 0, passed the check and generated a token past the buffer
// the caller sized for nothing like that.
TEST(Llama, StepsPastTheCacheAreRefusedWithoutWrapping) {
  std::string dir = MakeCheckpoint("steps_wrap", "tiny", 24, ATLAS_DTYPE_F32);
  Loaded m;
  m.Open(dir);
  ASSERT_NE(m.model, nullptr);
  const std::vector<uint32_t> prompt = {7, 3};
  for (size_t steps : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2}) {
    SCOPED_TRACE("steps " + std::to_string(steps));
    std::vector<uint32_t> ids(4, 0xFFFFFFFFu);
    size_t count = 99;
    atlas_status st = atlas_decoder_generate_ex(
        m.model, prompt.data(), prompt.size(), steps, nullptr, ids.data(),
        &count, nullptr, nullptr);
    EXPECT_EQ(atlas_status_code_of(st), ATLAS_STATUS_INVALID_ARGUMENT);
    atlas_status_free(st);
    EXPECT_EQ(count, 0u);
    EXPECT_EQ(ids[0], 0xFFFFFFFFu) << "a token was generated";
  }
}

// A fault at any copy or launch of a generation with the device running
// ahead is an error (ABORTED, injected), never ids with exit 0; the steps
// already queued drain, and the model then generates what it generated
// before. The ring and events are the model's (made at load): a generation
// creates no event and allocates no pinned memory. Loaded's teardown checks
// that nothing is left.
TEST(Llama, DeviceRunningAheadFailsCleanlyAtEveryFault) {
  std::string dir = MakeCheckpoint("ahead_faults", "tiny", 22, ATLAS_DTYPE_F32);
  const std::vector<uint32_t> prompt = {4, 2};
  for (int64_t rows : {-1, 0}) {
    SCOPED_TRACE("prefill_rows " + std::to_string(rows));
    Loaded m;
    m.Open(dir, rows);
    ASSERT_NE(m.model, nullptr);
    std::vector<uint32_t> want(6);
    ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), 6,
                                     want.data(), nullptr, nullptr));
    for (atlas_fault_kind kind :
         {ATLAS_FAULT_COPY, ATLAS_FAULT_EVENT, ATLAS_FAULT_LAUNCH,
          ATLAS_FAULT_HOST_ALLOC, ATLAS_FAULT_ALLOC}) {
      uint64_t before = atlas_backend_op_count(m.backend, kind);
      std::vector<uint32_t> ids(6);
      ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), 6,
                                       ids.data(), nullptr, nullptr));
      uint64_t ops = atlas_backend_op_count(m.backend, kind) - before;
      bool makes = kind == ATLAS_FAULT_COPY || kind == ATLAS_FAULT_LAUNCH;
      ASSERT_EQ(ops > 0, makes) << atlas_fault_kind_name(kind) << ": " << ops;
      for (uint64_t k = 1; k <= ops; ++k) {
        SCOPED_TRACE(std::string(atlas_fault_kind_name(kind)) + " " +
                     std::to_string(k));
        atlas_backend_inject_fault(m.backend, kind, k);
        StatusResult r =
            Take(atlas_decoder_generate(m.model, prompt.data(), prompt.size(),
                                        6, ids.data(), nullptr, nullptr));
        atlas_backend_inject_fault(m.backend, kind, 0);
        EXPECT_EQ(r.code, ATLAS_STATUS_ABORTED) << r.message;
        std::fill(ids.begin(), ids.end(), 0u);
        ASSERT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(),
                                         6, ids.data(), nullptr, nullptr));
        EXPECT_EQ(ids, want);
      }
    }
  }
}

// A 16-bit KV cache is also the prefill's stated-error mode
// (atlas_decoder_prefill_one_term): each product with 16-bit weights rounds its
// input rows once to the weights' type. The token-by-token steps keep f32
// inputs, so batched and stepped logits now differ by that rounding, and
// against an f32 cache the logits move by it plus what rounding keys and
// values to 8 (BF16) or 11 (F16) bits costs.
//
// The tolerance for the input rounding, derived: a value rounded to a type
// of unit roundoff u (BF16 2^-8, F16 2^-11) moves by a relative error spread
// over [-u, u], RMS about u / sqrt(3); a row of logits passes P rounded
// inputs (per layer: attention input (q, k, v share it), o's input, the MLP
// input (gate, up share it), down's input; then lm_head's: P = 4 L + 1), and
// independent relative errors add in quadrature: about sqrt(P) u / sqrt(3)
// relative L2 per row. A key or value that moved is then stored in the
// cache, where it may round to a neighbour one cache step away: so u is the
// coarser of the weights' and the cache's types. We allow 1.5 times that.
// (Measured on this model, L = 2: 2.2e-3 to 2.9e-3 with BF16 weights, 3.6e-4
// with F16 weights and cache, 1.3e-3 with F16 weights and a BF16 cache.)
TEST(Llama, SixteenBitKvCache) {
  std::vector<uint32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  auto worst = [](const std::vector<std::vector<float>> &a,
                  const std::vector<std::vector<float>> &b) {
    double w = 0;
    for (size_t s = 0; s < a.size(); ++s) {
      double diff = 0, ref = 0;
      for (size_t i = 0; i < a[s].size(); ++i) {
        double d = (double)a[s][i] - b[s][i];
        diff += d * d;
        ref += (double)b[s][i] * b[s][i];
      }
      w = std::max(w, std::sqrt(diff / ref));
    }
    return w;
  };
  EXPECT_FALSE(atlas_decoder_prefill_one_term(ATLAS_DTYPE_F32));
  EXPECT_TRUE(atlas_decoder_prefill_one_term(ATLAS_DTYPE_F16));
  EXPECT_TRUE(atlas_decoder_prefill_one_term(ATLAS_DTYPE_BF16));
  for (atlas_dtype weights :
       {ATLAS_DTYPE_BF16, ATLAS_DTYPE_F16, ATLAS_DTYPE_F32}) {
    std::string dir =
        MakeCheckpoint("kv16_" + std::to_string(weights), "tiny", 19, weights);
    auto run = [&](int64_t rows, atlas_dtype kv, std::vector<uint32_t> *ids) {
      Loaded m;
      m.Open(dir, rows, kv);
      Collected got;
      ids->assign(6, 0);
      EXPECT_OK(atlas_decoder_generate(m.model, prompt.data(), prompt.size(), 6,
                                       ids->data(), Collect, &got));
      return got.steps;
    };
    const double layers = 2;  // the "tiny" preset
    auto unit = [](atlas_dtype t) {
      return t == ATLAS_DTYPE_BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
    };
    std::vector<uint32_t> ids32, ids_a, ids_b;
    std::vector<std::vector<float>> f32 = run(0, ATLAS_DTYPE_F32, &ids32);
    for (atlas_dtype kv : {ATLAS_DTYPE_F16, ATLAS_DTYPE_BF16}) {
      double u = std::max(unit(weights), unit(kv));
      double rounding = 1.5 * std::sqrt(4 * layers + 1) * u / std::sqrt(3.0);
      std::vector<std::vector<float>> batched = run(0, kv, &ids_a);
      std::vector<std::vector<float>> stepped = run(-1, kv, &ids_b);
      ASSERT_EQ(batched.size(), f32.size());
      EXPECT_EQ(ids_a, ids_b);
      double apart = worst(batched, stepped);
      // f32 weights: no product rounds its input, the paths agree as in f32.
      EXPECT_LE(apart, weights == ATLAS_DTYPE_F32 ? 1e-5 : rounding)
          << atlas_dtype_name(weights) << " weights, KV "
          << atlas_dtype_name(kv);
      if (weights != ATLAS_DTYPE_F32) {
        EXPECT_GT(apart, 1e-6) << "inputs were rounded";
      }
      double err = worst(batched, f32);
      double kv_cost = kv == ATLAS_DTYPE_BF16 ? 5e-3 : 1e-3;
      EXPECT_GT(err, 0.0) << "a 16-bit cache rounds something";
      EXPECT_LE(err, kv_cost + rounding)
          << atlas_dtype_name(weights) << " weights, KV "
          << atlas_dtype_name(kv);
      EXPECT_EQ(ids_a, ids32) << atlas_dtype_name(kv);
      printf(
          "%s weights, KV %s: batched vs stepped %.3g (allowed %.3g), worst "
          "row %.3g relative L2 against an f32 cache, ids %s\n",
          atlas_dtype_name(weights), atlas_dtype_name(kv), apart,
          weights == ATLAS_DTYPE_F32 ? 1e-5 : rounding, err,
          ids_a == ids32 ? "equal" : "differ");
    }
  }
}

struct LogLines {
  std::vector<std::string> lines;
  static void Add(void *ctx, atlas_log_level, const char *message) {
    static_cast<LogLines *>(ctx)->lines.push_back(message);
  }
};

// A capture that cannot start (here: the stream is already capturing) is
// aborted, the stream works again, and decoding falls back to separate
// launches with one log line, computing the same logits.
TEST(Llama, FailedCaptureFallsBackToEagerWithOneLogLine) {
  std::string dir =
      MakeCheckpoint("graph_fallback", "tiny", 17, ATLAS_DTYPE_F32);
  LogLines log;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  o.log.fn = LogLines::Add;
  o.log.ctx = &log;
  o.log.min_level = ATLAS_LOG_INFO;  // the load's DEBUG phase line aside
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &backend));
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_config config{};
  ASSERT_OK(atlas_llama_config_load((dir + "/config.json").c_str(), &config));
  atlas_decoder_load_options lo{};
  lo.max_seq = 16;
  atlas_decoder_model *model = nullptr;
  ASSERT_OK(atlas_decoder_model_load(backend, ck, &config, &lo, &model));
  std::vector<float> want((size_t)config.vocab_size), got(want.size());
  ASSERT_OK(atlas_decoder_set_decode_graph(model, false));
  ASSERT_OK(atlas_decoder_forward(model, 3, 0, want.data()));
  // Another token last, so a lost upload of the next step would show.
  ASSERT_OK(atlas_decoder_forward(model, 9, 0, got.data()));
  ASSERT_NE(got, want);
  ASSERT_OK(atlas_decoder_set_decode_graph(model, true));
  ASSERT_OK(atlas_backend_begin_capture(backend,
                                        atlas_backend_default_stream(backend)));
  ASSERT_OK(atlas_decoder_forward(model, 3, 0, got.data()));
  EXPECT_EQ(got, want);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("capturing it as a graph failed"),
            std::string::npos)
      << log.lines[0];
  bool capturing = true;
  ASSERT_OK(atlas_backend_stream_is_capturing(
      backend, atlas_backend_default_stream(backend), &capturing));
  EXPECT_FALSE(capturing);
  ASSERT_OK(atlas_decoder_forward(model, 3, 0, got.data()));
  EXPECT_EQ(got, want);
  EXPECT_EQ(log.lines.size(), 1u) << "the fallback is logged once";
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(model, &r));
  EXPECT_EQ(r.sweep.count, 0u);
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  EXPECT_OK(atlas_backend_destroy(backend));
}

TEST(Llama, PrefillRefusesBadTokensAndOverlongPrompts) {
  Loaded m;
  m.Open(MakeCheckpoint("bad_prefill", "tiny", 7, ATLAS_DTYPE_F32));
  std::vector<float> logits(m.config.vocab_size);
  std::vector<uint32_t> bad = {1, 64};
  EXPECT_STATUS(atlas_decoder_prefill(m.model, bad.data(), bad.size(), 0,
                                      logits.data(), nullptr, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "outside the vocabulary");
  std::vector<uint32_t> many(33, 1);
  EXPECT_STATUS(atlas_decoder_prefill(m.model, many.data(), many.size(), 0,
                                      logits.data(), nullptr, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "holds 32 positions");
}

// The one-term kernels' host twins: gemm16 against the host backend's
// matmul (the reference: the same f32 sums in the same order, so equal bit
// for bit) and round_rows against half.h, for both 16-bit types.
TEST(Llama, OneTermHostTwinsMatchTheBackendMatmul) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  const uint32_t m = 5, n = 7, k = 33;
  std::vector<float> x(m * k), w(n * k);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.37 * (double)i) * 3.0f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11 * (double)i);
  for (const char *t : {"f16", "bf16"}) {
    bool bf = std::string(t) == "bf16";
    std::vector<uint16_t> x16(x.size()), w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w16[i] = bf ? atlas_f32_to_bf16(w[i]) : atlas_f32_to_f16(w[i]);
    }
    const atlas_kernel *round = nullptr, *gemm = nullptr;
    ASSERT_OK(atlas_backend_kernel_lookup(
        b, ATLAS_DECODER_BATCH_MODULE, (std::string("round_rows_") + t).c_str(),
        &round));
    ASSERT_OK(atlas_backend_kernel_lookup(b, ATLAS_DECODER_BATCH_MODULE,
                                          (std::string("gemm16_") + t).c_str(),
                                          &gemm));
    atlas_launch_config c{};
    c.grid = {1, 1, 1};
    c.block = {256, 1, 1};
    atlas_arg ra[] = {ATLAS_ARG_PTR(x16.data()), ATLAS_ARG_PTR(x.data()),
                      ATLAS_ARG_U32(m * k)};
    ASSERT_OK(atlas_backend_launch_typed(b, round, &c, ra, 3));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x16[i], bf ? atlas_f32_to_bf16(x[i]) : atlas_f32_to_f16(x[i]))
          << t << " " << i;
    }
    std::vector<float> got(m * n, NAN), want(m * n, NAN);
    atlas_arg ga[] = {ATLAS_ARG_PTR(got.data()), ATLAS_ARG_PTR(w16.data()),
                      ATLAS_ARG_PTR(x16.data()), ATLAS_ARG_U32(m),
                      ATLAS_ARG_U32(n),          ATLAS_ARG_U32(k)};
    ASSERT_OK(atlas_backend_launch_typed(b, gemm, &c, ga, 6));
    ASSERT_OK(atlas_backend_matmul(b, nullptr, want.data(), w16.data(),
                                   x16.data(),
                                   bf ? ATLAS_MATMUL_BF16 : ATLAS_MATMUL_F16, m,
                                   n, k, ATLAS_MATMUL_WRITE));
    EXPECT_EQ(got, want) << t;
  }
  ASSERT_OK(atlas_backend_destroy(b));
}

// The 16-bit mode's fused kernels against the two launches they replace,
// bit for bit: rmsnorm_rows_{t} = rmsnorm_rows then round_rows_{t}, and
// silu_mul_round_{t} = the one-token silu_mul then round_rows_{t}; odd row
// lengths, values that round to ties, overflow and subnormals included.
TEST(Llama, FusedRoundingKernelsEqualTheLaunchesTheyReplace) {
  atlas_backend *b = nullptr;
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  auto run = [&](const char *module, const std::string &name,
                 std::vector<atlas_arg> args) {
    const atlas_kernel *k = nullptr;
    ASSERT_OK(atlas_backend_kernel_lookup(b, module, name.c_str(), &k));
    atlas_launch_config c{};
    c.grid = {1, 1, 1};
    c.block = {256, 1, 1};
    ASSERT_OK(atlas_backend_launch_typed(b, k, &c, args.data(), args.size()));
  };
  for (const char *t : {"f16", "bf16"}) {
    for (uint32_t dim : {1u, 31u, 32u, 257u, 4099u}) {
      const uint32_t n = 3;
      std::vector<float> x((size_t)n * dim), w(dim);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = (float)(std::sin(0.7 * (double)i) * 40.0);
      for (size_t i = 0; i < w.size(); ++i)
        w[i] = (float)(0.5 + std::cos(0.3 * (double)i));
      if (dim > 4) {
        w[1] = 1e4f;   // past F16's range once normalised
        w[2] = 1e-7f;  // subnormal in F16
      }
      std::vector<float> f32(x.size(), NAN);
      std::vector<uint16_t> want(x.size(), 0x7E01), got(x.size(), 0x7E01);
      float eps = 1e-5f;
      run(ATLAS_DECODER_BATCH_MODULE, "rmsnorm_rows",
          {ATLAS_ARG_PTR(f32.data()), ATLAS_ARG_PTR(x.data()),
           ATLAS_ARG_PTR(w.data()), ATLAS_ARG_U32(dim), ATLAS_ARG_F32(eps),
           ATLAS_ARG_U32(n)});
      run(ATLAS_DECODER_BATCH_MODULE, std::string("round_rows_") + t,
          {ATLAS_ARG_PTR(want.data()), ATLAS_ARG_PTR(f32.data()),
           ATLAS_ARG_U32(n * dim)});
      run(ATLAS_DECODER_BATCH_MODULE, std::string("rmsnorm_rows_") + t,
          {ATLAS_ARG_PTR(got.data()), ATLAS_ARG_PTR(x.data()),
           ATLAS_ARG_PTR(w.data()), ATLAS_ARG_U32(dim), ATLAS_ARG_F32(eps),
           ATLAS_ARG_U32(n)});
      EXPECT_EQ(got, want) << "rmsnorm_rows_" << t << " dim " << dim;
    }
    for (uint32_t count : {1u, 255u, 1000u}) {
      std::vector<float> a(count), bb(count);
      for (uint32_t i = 0; i < count; ++i) {
        a[i] = (float)(std::sin(0.9 * i) * 12.0);
        bb[i] = (float)(std::cos(0.4 * i) * (i % 7 == 0 ? 9000.0 : 3.0));
      }
      const std::vector<float> a0 = a, b0 = bb;
      std::vector<uint16_t> want(count, 0x7E01), got(count, 0x7E01);
      run(ATLAS_DECODER_BATCH_MODULE, std::string("silu_mul_round_") + t,
          {ATLAS_ARG_PTR(got.data()), ATLAS_ARG_PTR(a.data()),
           ATLAS_ARG_PTR(bb.data()), ATLAS_ARG_U32(count)});
      EXPECT_EQ(a, a0) << "silu_mul_round leaves its inputs";
      EXPECT_EQ(bb, b0);
      run(ATLAS_DECODER_MODULE, "silu_mul",
          {ATLAS_ARG_PTR(a.data()), ATLAS_ARG_PTR(bb.data()),
           ATLAS_ARG_U32(count)});
      run(ATLAS_DECODER_BATCH_MODULE, std::string("round_rows_") + t,
          {ATLAS_ARG_PTR(want.data()), ATLAS_ARG_PTR(a.data()),
           ATLAS_ARG_U32(count)});
      EXPECT_EQ(got, want) << "silu_mul_round_" << t << " count " << count;
    }
  }
  ASSERT_OK(atlas_backend_destroy(b));
}

// The host backend with the Llama module set, launching kernels by name
// (one block of 256 threads: the host kernels ignore the shape).
class HostLlamaKernels {
 public:
  HostLlamaKernels() {
    atlas_backend_options o{};
    o.modules = &atlas_decoder_module_set;
    EXPECT_OK(atlas_host_backend_create(&o, &b_));
  }
  ~HostLlamaKernels() {
    if (b_ != nullptr) EXPECT_OK(atlas_backend_destroy(b_));
  }
  void Run(const std::string &name, std::vector<atlas_arg> args) {
    ASSERT_NE(b_, nullptr);
    const atlas_kernel *k = nullptr;
    ASSERT_OK(atlas_backend_kernel_lookup(b_, ATLAS_DECODER_MODULE,
                                          name.c_str(), &k));
    atlas_launch_config c{};
    c.grid = {1, 1, 1};
    c.block = {256, 1, 1};
    ASSERT_OK(atlas_backend_launch_typed(b_, k, &c, args.data(), args.size()));
  }

 private:
  atlas_backend *b_ = nullptr;
};

// The decode products with the RMSNorm folded in (norm_w != NULL) against
// the two launches they replace, rmsnorm then the product on its output, bit
// for bit, for every weight type, odd and 16-byte column counts, and F32
// weights off 4-byte alignment (matvec_f32's element-load path); the plain
// product with the norm against a double-precision loop as well.
TEST(Llama, NormFoldedProductsEqualRmsnormThenTheProduct) {
  HostLlamaKernels host;
  auto run = [&](const std::string &name, std::vector<atlas_arg> args) {
    host.Run(name, std::move(args));
  };
  auto same_bits = [](const std::vector<float> &a,
                      const std::vector<float> &b) {
    return a.size() == b.size() &&
           memcmp(a.data(), b.data(), a.size() * 4) == 0;
  };
  const float eps = 1e-5f;
  const uint32_t rq = 12, rkv = 5, rows = 9;
  struct Case {
    const char *dtype;
    size_t weight_offset;  // bytes past an aligned start
  };
  for (Case cs :
       {Case{"f32", 0}, Case{"f32", 1}, Case{"f16", 0}, Case{"bf16", 0}}) {
    const std::string t = cs.dtype;
    const size_t es = t == "f32" ? 4 : 2;
    for (uint32_t cols : {1u, 31u, 777u, 2048u}) {
      std::string what = t + " cols " + std::to_string(cols) +
                         (cs.weight_offset ? " weights off alignment" : "");
      std::vector<float> x(cols), nw(cols);
      for (uint32_t i = 0; i < cols; ++i) {
        x[i] = (float)(std::sin(0.7 * i + 0.3) * 5.0);
        nw[i] = (float)(0.5 + std::cos(0.3 * i) * 0.4);
      }
      // Weight matrices of `n` rows: values and their bytes at the offset.
      std::vector<std::vector<float>> wval;
      std::vector<std::vector<unsigned char>> wbytes;
      auto matrix = [&](uint32_t n) {
        std::vector<float> v((size_t)n * cols);
        std::vector<unsigned char> bytes(v.size() * es + cs.weight_offset + 16);
        unsigned char *at = bytes.data() + cs.weight_offset;
        for (size_t i = 0; i < v.size(); ++i) {
          float f =
              (float)std::cos(0.013 * (double)(i + wval.size() * 7919) + 0.5);
          if (t == "f32") {
            memcpy(at + i * 4, &f, 4);
          } else {
            uint16_t h =
                t == "f16" ? atlas_f32_to_f16(f) : atlas_f32_to_bf16(f);
            f = t == "f16" ? atlas_f16_to_f32(h) : atlas_bf16_to_f32(h);
            memcpy(at + i * 2, &h, 2);
          }
          v[i] = f;
        }
        wval.push_back(v);
        wbytes.push_back(std::move(bytes));
        return (void *)(wbytes.back().data() + cs.weight_offset);
      };
      wval.reserve(5);
      wbytes.reserve(5);
      void *wq = matrix(rq), *wk = matrix(rkv), *wv = matrix(rkv);
      void *wg = matrix(rows), *wu = matrix(rows);
      std::vector<float> bq(rq), bk(rkv), bv(rkv), bg(rows), bu(rows);
      for (uint32_t i = 0; i < rq; ++i) bq[i] = 0.01f * (float)i;
      for (uint32_t i = 0; i < rkv; ++i)
        bk[i] = -0.02f * (float)i, bv[i] = 0.03f;
      for (uint32_t i = 0; i < rows; ++i)
        bg[i] = 0.1f, bu[i] = -0.05f * (float)i;

      std::vector<float> xb(cols, NAN);
      run("rmsnorm",
          {ATLAS_ARG_PTR(xb.data()), ATLAS_ARG_PTR(x.data()),
           ATLAS_ARG_PTR(nw.data()), ATLAS_ARG_U32(cols), ATLAS_ARG_F32(eps)});
      const std::vector<float> x0 = x;

      // matvec: plain on rmsnorm's output, and with the norm folded in.
      std::vector<float> want(rows, NAN), got(rows, NAN);
      run("matvec_" + t,
          {ATLAS_ARG_PTR(want.data()), ATLAS_ARG_PTR(wg),
           ATLAS_ARG_PTR(xb.data()), ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols),
           ATLAS_ARG_PTR(nullptr), ATLAS_ARG_F32(eps)});
      run("matvec_" + t,
          {ATLAS_ARG_PTR(got.data()), ATLAS_ARG_PTR(wg),
           ATLAS_ARG_PTR(x.data()), ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols),
           ATLAS_ARG_PTR(nw.data()), ATLAS_ARG_F32(eps)});
      EXPECT_TRUE(same_bits(got, want)) << "matvec " << what;
      EXPECT_EQ(x, x0) << "the folded norm leaves x as it was";
      // The independent reference: RMSNorm and the product in double.
      double ss = 0;
      for (float v : x) ss += (double)v * v;
      double inv = 1.0 / std::sqrt(ss / cols + eps), diff = 0, ref = 0;
      for (uint32_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (uint32_t k = 0; k < cols; ++k) {
          acc += (double)wval[3][(size_t)r * cols + k] * nw[k] * x[k] * inv;
        }
        diff += (got[r] - acc) * (got[r] - acc);
        ref += acc * acc;
      }
      EXPECT_LE(std::sqrt(diff / ref), 1e-5)
          << "matvec against double " << what;

      // matvec_qkv, biases included.
      std::vector<float> q0(rq, NAN), k0(rkv, NAN), v0(rkv, NAN);
      std::vector<float> q1(rq, NAN), k1(rkv, NAN), v1(rkv, NAN);
      for (int fold = 0; fold < 2; ++fold) {
        run("matvec_qkv_" + t,
            {ATLAS_ARG_PTR(fold ? q1.data() : q0.data()),
             ATLAS_ARG_PTR(fold ? k1.data() : k0.data()),
             ATLAS_ARG_PTR(fold ? v1.data() : v0.data()), ATLAS_ARG_PTR(wq),
             ATLAS_ARG_PTR(wk), ATLAS_ARG_PTR(wv), ATLAS_ARG_PTR(bq.data()),
             ATLAS_ARG_PTR(bk.data()), ATLAS_ARG_PTR(bv.data()),
             ATLAS_ARG_PTR(fold ? x.data() : xb.data()), ATLAS_ARG_U32(rq),
             ATLAS_ARG_U32(rkv), ATLAS_ARG_U32(cols),
             ATLAS_ARG_PTR(fold ? nw.data() : nullptr), ATLAS_ARG_F32(eps)});
      }
      EXPECT_TRUE(same_bits(q1, q0)) << "matvec_qkv q " << what;
      EXPECT_TRUE(same_bits(k1, k0)) << "matvec_qkv k " << what;
      EXPECT_TRUE(same_bits(v1, v0)) << "matvec_qkv v " << what;

      // gate_up, biases included.
      std::vector<float> h0(rows, NAN), h1(rows, NAN);
      for (int fold = 0; fold < 2; ++fold) {
        run("gate_up_" + t,
            {ATLAS_ARG_PTR(fold ? h1.data() : h0.data()), ATLAS_ARG_PTR(wg),
             ATLAS_ARG_PTR(wu), ATLAS_ARG_PTR(bg.data()),
             ATLAS_ARG_PTR(bu.data()),
             ATLAS_ARG_PTR(fold ? x.data() : xb.data()), ATLAS_ARG_U32(rows),
             ATLAS_ARG_U32(cols), ATLAS_ARG_PTR(fold ? nw.data() : nullptr),
             ATLAS_ARG_F32(eps)});
      }
      EXPECT_TRUE(same_bits(h1, h0)) << "gate_up " << what;
      for (float h : h1) ASSERT_FALSE(std::isnan(h)) << "gate_up " << what;
    }
  }
}

// qkv_rope (the decode step's q, k, v with RoPE and the cache store in one
// launch) against the two launches it replaces, matvec_qkv then rope_store,
// bit for bit: every weight and cache type, full and partial rotary
// dimensions, biases and the folded norm; the cache's other rows untouched.
TEST(Llama, QkvRopeEqualsTheProductsThenRopeStore) {
  HostLlamaKernels host;
  auto run = [&](const std::string &name, std::vector<atlas_arg> args) {
    host.Run(name, std::move(args));
  };
  const uint32_t n_heads = 4, n_kv = 2, hd = 8, cols = 33, seq = 5, pos = 3;
  const uint32_t rq = n_heads * hd, rkv = n_kv * hd;
  const float eps = 1e-5f;
  std::vector<float> x(cols), nw(cols), bq(rq), bk(rkv), bv(rkv);
  for (uint32_t i = 0; i < cols; ++i) {
    x[i] = (float)std::sin(0.7 * i + 0.3) * 3.0f;
    nw[i] = (float)(0.5 + std::cos(0.3 * i) * 0.4);
  }
  for (uint32_t i = 0; i < rq; ++i) bq[i] = 0.01f * (float)i;
  for (uint32_t i = 0; i < rkv; ++i) bk[i] = -0.02f * (float)i, bv[i] = 0.03f;
  for (std::string wt : {"f32", "f16", "bf16"}) {
    size_t ws = wt == "f32" ? 4 : 2;
    // Weights: f32 values stored as the type (the products convert).
    auto matrix = [&](uint32_t rows, double seed) {
      std::vector<unsigned char> bytes((size_t)rows * cols * ws);
      for (size_t i = 0; i < (size_t)rows * cols; ++i) {
        float f = (float)std::cos(0.013 * (double)i + seed);
        if (ws == 4) {
          memcpy(&bytes[i * 4], &f, 4);
        } else {
          uint16_t h = wt == "f16" ? atlas_f32_to_f16(f) : atlas_f32_to_bf16(f);
          memcpy(&bytes[i * 2], &h, 2);
        }
      }
      return bytes;
    };
    std::vector<unsigned char> wq = matrix(rq, 0.5), wk = matrix(rkv, 1.5),
                               wv = matrix(rkv, 2.5);
    for (std::string kt : {"f32", "f16", "bf16"}) {
      size_t ks = kt == "f32" ? 4 : 2;
      for (uint32_t rot : {hd, hd / 2}) {
        std::vector<float> inv(rot / 2);
        for (uint32_t i = 0; i < rot / 2; ++i) {
          inv[i] = (float)(1.0 / std::pow(10000.0, 2.0 * i / rot));
        }
        std::string what =
            wt + " weights, " + kt + " cache, rot " + std::to_string(rot);
        uint32_t step[2] = {0, pos};
        // Two launches: matvec_qkv, rope_store.
        std::vector<float> q0(rq, NAN), k0(rkv, NAN), v0(rkv, NAN);
        std::vector<unsigned char> kc0((size_t)seq * rkv * ks, 0xA5), vc0 = kc0;
        run("matvec_qkv_" + wt,
            {ATLAS_ARG_PTR(q0.data()), ATLAS_ARG_PTR(k0.data()),
             ATLAS_ARG_PTR(v0.data()), ATLAS_ARG_PTR(wq.data()),
             ATLAS_ARG_PTR(wk.data()), ATLAS_ARG_PTR(wv.data()),
             ATLAS_ARG_PTR(bq.data()), ATLAS_ARG_PTR(bk.data()),
             ATLAS_ARG_PTR(bv.data()), ATLAS_ARG_PTR(x.data()),
             ATLAS_ARG_U32(rq), ATLAS_ARG_U32(rkv), ATLAS_ARG_U32(cols),
             ATLAS_ARG_PTR(nw.data()), ATLAS_ARG_F32(eps)});
        run("rope_store_" + kt,
            {ATLAS_ARG_PTR(q0.data()), ATLAS_ARG_PTR(k0.data()),
             ATLAS_ARG_PTR(v0.data()), ATLAS_ARG_PTR(kc0.data()),
             ATLAS_ARG_PTR(vc0.data()), ATLAS_ARG_PTR(inv.data()),
             ATLAS_ARG_U32(n_heads), ATLAS_ARG_U32(n_kv), ATLAS_ARG_U32(hd),
             ATLAS_ARG_U32(rot), ATLAS_ARG_PTR(step), ATLAS_ARG_F32(1.25f)});
        // One launch.
        std::vector<float> q1(rq, NAN);
        std::vector<unsigned char> kc1((size_t)seq * rkv * ks, 0xA5), vc1 = kc1;
        run("qkv_rope_" + wt + "_" + kt,
            {ATLAS_ARG_PTR(q1.data()),  ATLAS_ARG_PTR(kc1.data()),
             ATLAS_ARG_PTR(vc1.data()), ATLAS_ARG_PTR(wq.data()),
             ATLAS_ARG_PTR(wk.data()),  ATLAS_ARG_PTR(wv.data()),
             ATLAS_ARG_PTR(bq.data()),  ATLAS_ARG_PTR(bk.data()),
             ATLAS_ARG_PTR(bv.data()),  ATLAS_ARG_PTR(x.data()),
             ATLAS_ARG_U32(rq),         ATLAS_ARG_U32(rkv),
             ATLAS_ARG_U32(cols),       ATLAS_ARG_PTR(nw.data()),
             ATLAS_ARG_F32(eps),        ATLAS_ARG_PTR(inv.data()),
             ATLAS_ARG_U32(hd),         ATLAS_ARG_U32(rot),
             ATLAS_ARG_PTR(step),       ATLAS_ARG_F32(1.25f)});
        EXPECT_EQ(memcmp(q1.data(), q0.data(), rq * 4), 0) << "q, " << what;
        EXPECT_EQ(kc1, kc0) << "k cache, " << what;
        EXPECT_EQ(vc1, vc0) << "v cache, " << what;
        // The step's row was written (differs from the fill), the others not.
        EXPECT_NE(kc1[(size_t)pos * rkv * ks], 0xA5) << what;
        EXPECT_EQ(kc1[0], 0xA5) << what;
        for (float v : q1) ASSERT_FALSE(std::isnan(v)) << what;
      }
    }
  }
}

TEST(Llama, BatchKernelTableIsComplete) {
  for (size_t i = 0; i < ATLAS_DECODER_BATCH_KERNEL_COUNT; ++i) {
    EXPECT_NE(atlas_decoder_batch_kernel_defs[i].name, nullptr) << i;
    EXPECT_NE(atlas_decoder_batch_kernel_defs[i].host_fn, nullptr) << i;
  }
}

TEST(Llama, KernelTableIsComplete) {
  for (size_t i = 0; i < ATLAS_DECODER_KERNEL_COUNT; ++i) {
    EXPECT_NE(atlas_decoder_kernel_defs[i].name, nullptr) << i;
    EXPECT_NE(atlas_decoder_kernel_defs[i].host_fn, nullptr) << i;
  }
}

}  // namespace
