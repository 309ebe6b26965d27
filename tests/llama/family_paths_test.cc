// The descriptor's families (gemma2, gemma3_text, phi3, and the
// mixture-of-experts qwen3_moe, mixtral and qwen2_moe) on the host backend:
// random checkpoints laid out as each family names its tensors (fused q/k/v
// and gate/up, sandwich norms, q/k norms), loaded and decoded token by
// token, in one batched prompt pass and in chunks of 3 rows. The three paths
// run different kernels for the same math (one-token products and
// attentions; batched products, prompt attention; flash-decoding), so their
// logits must agree to f32 rounding, with every greedy id equal, and so must
// the paged batch step (the serving path) fed the same tokens; and Gemma
// 2's final cap must hold every logit inside it. The MoE families run the
// moe module's per-token kernels in one path and its grouped ones (the
// counting sort by expert) in the others, with a dense layer among them.
// (Parity with transformers is tests/arch's; these cases check the decoder's
// paths agree.)
#include <math.h>

#include <string>
#include <vector>

#include "atlas/kernels/ext_kernels.h"
#include "atlas/kernels/moe_kernels.h"
#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/quant_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/arch/arch.h"
#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_moe_weights.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/gemma2/gemma2.h"
#include "atlas/runtime/arch/gemma3/gemma3.h"
#include "atlas/runtime/arch/mixtral/mixtral.h"
#include "atlas/runtime/arch/phi3/phi3.h"
#include "atlas/runtime/arch/qwen2_moe/qwen2_moe.h"
#include "atlas/runtime/arch/qwen3_moe/qwen3_moe.h"
#include "atlas/runtime/device/host_backend.h"
#include "gtest/gtest.h"
#include "tests/model/test_util.h"
#include "tests/runtime/test_util.h"
#include "tools/checkpoint/safetensors_write.h"

namespace {

// Every module the families here need: the base ops, decoder_ext's and moe's.
const atlas_module_def *const kModules[] = {
    &atlas_decoder_module,     &atlas_decoder_batch_module,
    &atlas_weight_scan_module, &atlas_decoder_paged_module,
    &atlas_decoder_ext_module, &atlas_quant_module,
    &atlas_moe_module};
const atlas_module_set kModuleSet = {kModules, 7};

struct Family {
  const char *name;
  const atlas_decoder_family *family;
  std::string config;
};

const char kDims[] =
    "\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, "
    "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
    "\"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-6, ";

std::vector<Family> Families() {
  std::string d = kDims;
  return {
      {"gemma2", &atlas_gemma2_family,
       "{" + d +
           "\"model_type\": \"gemma2\", \"num_hidden_layers\": 3, "
           "\"head_dim\": 16, \"sliding_window\": 4, "
           "\"attn_logit_softcapping\": 1.5, \"final_logit_softcapping\": 3.0, "
           "\"query_pre_attn_scalar\": 24}"},
      {"gemma3_text", &atlas_gemma3_family,
       "{" + d +
           "\"model_type\": \"gemma3_text\", \"num_hidden_layers\": 6, "
           "\"head_dim\": 16, \"sliding_window\": 4, "
           "\"rope_theta\": 1000000.0, \"rope_local_base_freq\": 10000.0, "
           "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}}"},
      {"phi3", &atlas_phi3_family,
       "{" + d +
           "\"model_type\": \"phi3\", \"num_hidden_layers\": 2, "
           "\"tie_word_embeddings\": false, \"sliding_window\": 9, "
           "\"partial_rotary_factor\": 0.75, "
           "\"original_max_position_embeddings\": 10, "
           "\"rope_scaling\": {\"type\": \"longrope\", "
           "\"short_factor\": [1.0, 1.1, 1.2], "
           "\"long_factor\": [1.5, 3.0, 6.0]}}"},
      // Layer 1 keeps a dense MLP (mlp_only_layers); 6 experts, 2 a token.
      {"qwen3_moe", &atlas_qwen3_moe_family,
       "{" + d +
           "\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 3, "
           "\"head_dim\": 16, \"num_experts\": 6, "
           "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 12, "
           "\"norm_topk_prob\": true, \"mlp_only_layers\": [1]}"},
      // 4 experts of intermediate_size, 2 a token, a window on every layer.
      {"mixtral", &atlas_mixtral_family,
       "{" + d +
           "\"model_type\": \"mixtral\", \"num_hidden_layers\": 2, "
           "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, "
           "\"sliding_window\": 9, \"rope_theta\": 10000.0}"},
      // A shared expert and its gate, q/k/v biases, MoE on layers 1 and 3.
      {"qwen2_moe", &atlas_qwen2_moe_family,
       "{" + d +
           "\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 4, "
           "\"num_experts\": 5, \"num_experts_per_tok\": 3, "
           "\"moe_intermediate_size\": 10, "
           "\"shared_expert_intermediate_size\": 20, "
           "\"decoder_sparse_step\": 2}"},
  };
}

// Every tensor the config implies, random (norms near 1 or 0 as the
// family's norms read them), written as one safetensors file.
std::string Write(const Family &f, const atlas_decoder_config &c) {
  std::string dir = atlas_test::TempDir(f.name);
  atlas_test::WriteFile(dir + "/config.json", f.config);
  std::vector<std::vector<float>> data;
  std::vector<std::string> names;
  std::vector<atlas_safetensors_write_tensor> ts;
  uint32_t seed = 12345;
  auto add = [&](const char *name, const atlas_safetensors_write_tensor &t) {
    size_t n = (size_t)t.shape[0] * (size_t)(t.rank == 2 ? t.shape[1] : 1);
    std::vector<float> v(n);
    bool norm = strstr(name, "norm") != nullptr;
    for (float &x : v) {
      seed = seed * 1664525u + 1013904223u;
      float u = (float)(seed >> 8) / 16777216.0f - 0.5f;
      x = norm ? (c.norm_one_plus ? 0.5f * u : 1.0f + 0.5f * u) : 0.6f * u;
    }
    data.push_back(std::move(v));
    names.push_back(name);
    ts.push_back(t);
  };
  for (int l = 0; l < (int)c.num_hidden_layers; ++l) {
    size_t count = atlas_decoder_moe_tensor_count(&c, nullptr, l);
    for (size_t i = 0; i < count; ++i) {
      atlas_decoder_moe_tensor mt;
      EXPECT_EQ(atlas_decoder_moe_tensor_at(&c, nullptr, l, i, &mt), ATLAS_OK);
      atlas_safetensors_write_tensor t{};
      t.shape[0] = mt.shape[0];
      t.shape[1] = mt.shape[1];
      t.rank = mt.rank;
      add(mt.name, t);
    }
  }
  for (int w = 0; w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
    auto weight = static_cast<atlas_decoder_weight>(w);
    if (!atlas_decoder_weight_used(&c, weight)) continue;
    int layers = atlas_decoder_weight_is_per_layer(weight)
                     ? (int)c.num_hidden_layers
                     : 1;
    for (int l = 0; l < layers; ++l) {
      if (!atlas_decoder_weight_in_layer(&c, weight, l)) continue;
      char name[256];
      EXPECT_EQ(atlas_decoder_weight_name(&c, weight, l, name, sizeof(name)),
                ATLAS_OK);
      atlas_safetensors_write_tensor t{};
      atlas_decoder_weight_shape(&c, weight, t.shape, &t.rank);
      add(name, t);
    }
  }
  for (size_t i = 0; i < ts.size(); ++i) {
    ts[i].name = names[i].c_str();
    ts[i].dtype = ATLAS_DTYPE_F32;
    ts[i].data = data[i].data();
  }
  EXPECT_EQ(atlas_safetensors_write((dir + "/model.safetensors").c_str(),
                                    ts.data(), ts.size(), nullptr, 0),
            ATLAS_OK);
  return dir;
}

atlas_status Collect(void *ctx, const float *logits, size_t n) {
  static_cast<std::vector<float> *>(ctx)->insert(
      static_cast<std::vector<float> *>(ctx)->end(), logits, logits + n);
  return ATLAS_OK;
}

// The 14 prompt tokens: past every window, and past phi3's original length
// (10) from the prompt on.
std::vector<uint32_t> Prompt() {
  std::vector<uint32_t> prompt;
  for (uint32_t i = 0; i < 14; ++i) prompt.push_back((i * 37 + 5) % 64);
  return prompt;
}

// The paged batch step (arch.h's forward_batch) as one sequence: the prompt
// in one step, then each id of `ids` fed back, one step each; the logits of
// every step's last row into *logits.
void Paged(const std::string &dir, const atlas_decoder_config &c,
           const std::vector<uint32_t> &ids, std::vector<float> *logits) {
  atlas_backend_options o{};
  o.modules = &kModuleSet;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_load_options lo{};
  lo.max_seq = 32;
  atlas_decoder_model *m = nullptr;
  ASSERT_OK(atlas_decoder_model_load(b, ck, &c, &lo, &m));
  const uint32_t bt = 16, slots = 32;
  size_t kv_dim = (size_t)(c.num_key_value_heads * c.head_dim);
  size_t bytes = (size_t)c.num_hidden_layers * slots * kv_dim * sizeof(float);
  atlas_arch_kv_pages kv{};
  ASSERT_OK(atlas_backend_alloc(b, bytes, &kv.keys));
  ASSERT_OK(atlas_backend_alloc(b, bytes, &kv.values));
  kv.layer_elements = slots * kv_dim;
  kv.dtype = ATLAS_DTYPE_F32;
  kv.block_tokens = bt;
  const uint32_t table[] = {1, 0};  // the second block first: paged for real
  std::vector<uint32_t> tokens = Prompt();
  uint32_t pos = 0;
  for (size_t step = 0; step < ids.size(); ++step) {
    std::vector<uint32_t> positions, slot, seq(tokens.size(), 0);
    for (size_t r = 0; r < tokens.size(); ++r, ++pos) {
      positions.push_back(pos);
      slot.push_back(table[pos / bt] * bt + pos % bt);
    }
    uint32_t last = (uint32_t)tokens.size() - 1;
    atlas_arch_batch batch{};
    batch.kv = &kv;
    batch.rows = tokens.size();
    batch.tokens = tokens.data();
    batch.positions = positions.data();
    batch.slots = slot.data();
    batch.row_seq = seq.data();
    batch.seqs = 1;
    batch.tables = table;
    batch.table_stride = 2;
    batch.last_row = &last;
    std::vector<float> out((size_t)c.vocab_size);
    ASSERT_OK(atlas_decoder_forward_batch(m, &batch, out.data(), nullptr));
    logits->insert(logits->end(), out.begin(), out.end());
    tokens = {ids[step]};
  }
  EXPECT_OK(atlas_backend_free(b, kv.keys));
  EXPECT_OK(atlas_backend_free(b, kv.values));
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(m, &r));
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

// Greedy generation's logits (every forward step) and ids.
void Generate(const std::string &dir, const atlas_decoder_config &c,
              int64_t rows, std::vector<float> *logits,
              std::vector<uint32_t> *ids) {
  atlas_backend_options o{};
  o.modules = &kModuleSet;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &b));
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  atlas_decoder_load_options lo{};
  lo.max_seq = 32;
  lo.prefill_rows = rows;
  atlas_decoder_model *m = nullptr;
  ASSERT_OK(atlas_decoder_model_load(b, ck, &c, &lo, &m));
  std::vector<uint32_t> prompt = Prompt();
  ids->assign(12, 0);
  ASSERT_OK(atlas_decoder_generate(m, prompt.data(), prompt.size(), 12,
                                   ids->data(), Collect, logits));
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(m, &r));
  EXPECT_EQ(r.sweep.count, 0u);
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

TEST(FamilyPaths, TokenByTokenBatchedAndChunkedAgree) {
  for (const Family &f : Families()) {
    SCOPED_TRACE(f.name);
    atlas_decoder_config c{};
    ASSERT_OK(atlas_decoder_config_parse(f.family, f.config.data(),
                                         f.config.size(), "config.json", &c));
    std::string dir = Write(f, c);
    std::vector<float> one, batched, chunked;
    std::vector<uint32_t> ids_one, ids_batched, ids_chunked;
    Generate(dir, c, -1, &one, &ids_one);
    Generate(dir, c, 0, &batched, &ids_batched);
    Generate(dir, c, 3, &chunked, &ids_chunked);
    ASSERT_EQ(one.size(), (size_t)(14 + 11) * 64);
    EXPECT_EQ(ids_one, ids_batched);
    EXPECT_EQ(ids_one, ids_chunked);
    double worst = 0, top = 0;
    for (const std::vector<float> *other : {&batched, &chunked}) {
      ASSERT_EQ(other->size(), one.size());
      for (size_t r = 0; r < one.size() / 64; ++r) {
        double diff = 0, ref = 0;
        for (size_t i = 0; i < 64; ++i) {
          double a = one[r * 64 + i], b = (*other)[r * 64 + i];
          diff += (a - b) * (a - b);
          ref += a * a;
          top = fmax(top, fabs(a));
        }
        worst = fmax(worst, sqrt(diff / fmax(ref, 1e-30)));
      }
    }
    // The paged batch step: the prompt's last row, then each decode step.
    std::vector<float> paged, want;
    Paged(dir, c, ids_one, &paged);
    for (size_t r = 13; r < one.size() / 64; ++r) {
      want.insert(want.end(), one.begin() + (long)(r * 64),
                  one.begin() + (long)((r + 1) * 64));
    }
    ASSERT_EQ(paged.size(), want.size());
    for (size_t r = 0; r < want.size() / 64; ++r) {
      double diff = 0, ref = 0;
      for (size_t i = 0; i < 64; ++i) {
        double a = want[r * 64 + i], b = paged[r * 64 + i];
        diff += (a - b) * (a - b);
        ref += a * a;
      }
      worst = fmax(worst, sqrt(diff / fmax(ref, 1e-30)));
    }
    EXPECT_LE(worst, 1e-5);
    printf("  %-12s worst row %.2e relative L2, largest |logit| %.3f\n", f.name,
           worst, top);
    if (c.final_softcap > 0) {
      EXPECT_LT(top, c.final_softcap);        // the cap holds them
      EXPECT_GT(top, 0.5 * c.final_softcap);  // and they reach it
    }
  }
}

}  // namespace
