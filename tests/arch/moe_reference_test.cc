// The decoder's mixture-of-experts FFN against a reference written apart
// from its kernels: tests/arch/moe_reference.py, whole qwen3_moe, mixtral
// and qwen2_moe (a shared expert and its gate) decoders in plain Python
// float64 (data_moe/: config.json,
// model.safetensors, logits.f32 and ref.json in the parity format). The
// routing there covers an expert no token picks and two experts of equal
// probability at every token, one of which must lose to the other's lower
// index where only one fits (ref.json counts both). Host backend, loaded
// through each family's descriptor (their registry rows wait for
// transformers' references); token by token (the moe module's per-token
// kernels), in one prompt pass and in chunks of 5 rows (its grouped
// kernels): every row within 1e-5 relative L2 and every greedy id equal;
// and the paged batch step with a second sequence beside the case's, their
// tokens grouped by expert together.
//
// The same harness checks transformers' cases for these families (written
// by gen_reference.py, parity format) while their registry rows wait:
// ATLAS_MOE_REF_DIR names their folder and ATLAS_ARCH_BACKENDS the backends
// (default "host"; tests/arch/gpu_moe_refs.sh runs "host,cuda"). A bf16
// case runs twice: with an f32 KV cache (1e-5, ids equal) and in the 16-bit
// mode (the cache in the weights' type: ids equal).
#include <dirent.h>
#include <math.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/arch/mixtral/mixtral.h"
#include "atlas/runtime/arch/qwen2_moe/qwen2_moe.h"
#include "atlas/runtime/arch/qwen3_moe/qwen3_moe.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "gtest/gtest.h"
#include "jansson.h"
#include "tests/runtime/test_util.h"

namespace {

constexpr double kTolerance = 1e-5;
const char kRoot[] = "tests/arch/data_moe";

struct Case {
  std::string dir, name, family, dtype;
  std::vector<uint32_t> prompt, ids;
  size_t steps = 0, rows = 0, vocab = 0;
  long long unpicked_picks = -1, tie_straddles = 0;
  std::vector<float> logits;
};

bool LoadCase(const std::string &dir, Case *c) {
  json_error_t err;
  json_t *root = json_load_file((dir + "/ref.json").c_str(), 0, &err);
  if (root == nullptr) return false;
  c->dir = dir;
  c->name = json_string_value(json_object_get(root, "name"));
  c->family = json_string_value(json_object_get(root, "family"));
  const char *dtype = json_string_value(json_object_get(root, "dtype"));
  c->dtype = dtype != nullptr ? dtype : "f32";
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(root, "prompt"), i, v) {
    c->prompt.push_back((uint32_t)json_integer_value(v));
  }
  json_array_foreach(json_object_get(root, "ids"), i, v) {
    c->ids.push_back((uint32_t)json_integer_value(v));
  }
  c->steps = (size_t)json_integer_value(json_object_get(root, "steps"));
  c->rows = (size_t)json_integer_value(json_object_get(root, "rows"));
  c->vocab = (size_t)json_integer_value(json_object_get(root, "vocab"));
  json_t *routing = json_object_get(root, "routing");  // may be null
  json_t *picks = json_object_get(routing, "picks");
  c->unpicked_picks =
      json_integer_value(json_array_get(picks, json_array_size(picks) - 1));
  c->tie_straddles =
      json_integer_value(json_object_get(routing, "tie_straddles"));
  json_decref(root);
  std::ifstream f(dir + "/logits.f32", std::ios::binary);
  c->logits.resize(c->rows * c->vocab);
  f.read(reinterpret_cast<char *>(c->logits.data()),
         (std::streamsize)(c->logits.size() * sizeof(float)));
  return (size_t)f.gcount() == c->logits.size() * sizeof(float);
}

const atlas_decoder_family *FamilyOf(const std::string &name) {
  if (name == "qwen3_moe") return &atlas_qwen3_moe_family;
  if (name == "mixtral") return &atlas_mixtral_family;
  if (name == "qwen2_moe") return &atlas_qwen2_moe_family;
  return nullptr;
}

atlas_status Collect(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<float> *>(ctx);
  v->insert(v->end(), x, x + n);
  return ATLAS_OK;
}

std::vector<std::string> Split(const char *env, const char *fallback) {
  std::string list = env != nullptr ? env : fallback;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Greedy generation of the case's steps on `backend` with `rows` prefill
// rows (-1: token by token), the KV cache in f32 or (kv_auto) the weights'
// 16-bit type; every forward row's logits and the ids.
void Generate(const Case &c, const atlas_decoder_config &config,
              const std::string &backend, int64_t rows, bool kv_auto,
              std::vector<float> *logits, std::vector<uint32_t> *ids) {
  atlas_backend_options o{};
  o.modules = &atlas_decoder_moe_module_set;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_backend_factory_create(backend.c_str(), &o, &b));
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(c.dir.c_str(), &ck));
  atlas_decoder_load_options lo{};
  lo.max_seq = (int64_t)(c.prompt.size() + c.steps + 8);
  lo.prefill_rows = rows;
  lo.kv_dtype_auto = kv_auto;
  atlas_decoder_model *m = nullptr;
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, &lo, &m));
  // The experts, their address tables and activations come from the load's
  // few allocations (weights, buffers, the pinned ring), and the figure a
  // swap budgets with covers them.
  EXPECT_EQ(atlas_backend_live_alloc_count(b), 3u);
  uint64_t required = 0;
  EXPECT_OK(atlas_decoder_required_bytes(&config, ck, lo.max_seq, &required));
  EXPECT_GE(required, atlas_backend_live_bytes(b));
  ids->assign(c.steps, 0);
  ASSERT_OK(atlas_decoder_generate(m, c.prompt.data(), c.prompt.size(), c.steps,
                                   ids->data(), Collect, logits));
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(m, &r));
  EXPECT_EQ(r.sweep.count, 0u);
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

double WorstRow(const Case &c, const std::vector<float> &logits) {
  double worst = 0;
  for (size_t r = 0; r < c.rows; ++r) {
    double diff = 0, ref = 0;
    for (size_t i = 0; i < c.vocab; ++i) {
      double a = c.logits[r * c.vocab + i], b = logits[r * c.vocab + i];
      diff += (a - b) * (a - b);
      ref += a * a;
    }
    worst = fmax(worst, sqrt(diff / fmax(ref, 1e-30)));
  }
  return worst;
}

TEST(MoeReference, DecoderMatchesTheReference) {
  const char *env = getenv("ATLAS_MOE_REF_DIR");
  std::string root = env != nullptr ? env : kRoot;
  std::vector<std::string> dirs;
  if (DIR *d = opendir(root.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      std::ifstream probe(root + "/" + name + "/ref.json");
      if (name[0] != '.' && probe.good()) dirs.push_back(root + "/" + name);
    }
    closedir(d);
  }
  std::sort(dirs.begin(), dirs.end());
  if (env == nullptr) {
    ASSERT_EQ(dirs.size(), 6u)
        << "the qwen3_moe and mixtral (and both with fused experts) and "
           "qwen2_moe (f32 and bf16) cases in "
        << root;
  }
  ASSERT_FALSE(dirs.empty()) << "no cases in " << root;
  for (const std::string &dir : dirs) {
    Case c;
    ASSERT_TRUE(LoadCase(dir, &c)) << dir;
    SCOPED_TRACE(c.name);
    // The routing the case was built to cover (moe_routing / moe_reference).
    EXPECT_EQ(c.unpicked_picks, 0);
    if (env == nullptr) EXPECT_GT(c.tie_straddles, 0);
    const atlas_decoder_family *family = FamilyOf(c.family);
    ASSERT_NE(family, nullptr) << c.family;
    std::ifstream cf(dir + "/config.json");
    std::stringstream text;
    text << cf.rdbuf();
    std::string json = text.str();
    atlas_decoder_config config{};
    ASSERT_OK(atlas_decoder_config_parse(family, json.data(), json.size(),
                                         "config.json", &config));
    ASSERT_GT(config.num_experts, 0);
    for (const std::string &backend :
         Split(getenv("ATLAS_ARCH_BACKENDS"), "host")) {
      for (bool kv_auto : {false, true}) {
        if (kv_auto && c.dtype == "f32") continue;  // the same run
        for (int64_t rows : {-1, 0, 5}) {
          SCOPED_TRACE(backend + (kv_auto ? " 16-bit" : " f32 KV") +
                       " prefill rows " + std::to_string(rows));
          std::vector<float> logits;
          std::vector<uint32_t> ids;
          Generate(c, config, backend, rows, kv_auto, &logits, &ids);
          EXPECT_EQ(ids, c.ids);
          ASSERT_EQ(logits.size(), c.logits.size());
          double worst = WorstRow(c, logits);
          // The 16-bit mode rounds the cache and the products' inputs to
          // bf16 (tests/arch/parity_test.cc's default-mode bound).
          EXPECT_LE(worst, kv_auto ? 6e-2 : kTolerance);
          printf(
              "  %-20s %-5s %s prefill rows %2lld: worst row %.2e "
              "relative L2\n",
              c.name.c_str(), backend.c_str(), kv_auto ? "16-bit" : "f32KV",
              (long long)rows, worst);
        }
      }
    }
  }
}

// The paged batch step (arch.h's forward_batch) over `prompts.size()`
// sequences at once: their prompts in one step, then feeds[s][step] fed to
// sequence s, one token a sequence a step; every step's logits of each
// sequence's last row into (*out)[s]. The sequences' blocks interleave in
// the pool.
void PagedRun(const Case &c, const atlas_decoder_config &config,
              const std::vector<std::vector<uint32_t>> &prompts,
              const std::vector<std::vector<uint32_t>> &feeds,
              std::vector<std::vector<float>> *out) {
  atlas_backend_options o{};
  o.modules = &atlas_decoder_moe_module_set;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_backend_factory_create("host", &o, &b));
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(c.dir.c_str(), &ck));
  atlas_decoder_load_options lo{};
  lo.max_seq = 64;
  atlas_decoder_model *m = nullptr;
  ASSERT_OK(atlas_decoder_model_load(b, ck, &config, &lo, &m));
  const uint32_t bt = 16, per_seq = 4;  // blocks a sequence
  size_t seqs = prompts.size(), blocks = seqs * per_seq;
  size_t kv_dim = (size_t)(config.num_key_value_heads * config.head_dim);
  size_t bytes =
      (size_t)config.num_hidden_layers * blocks * bt * kv_dim * sizeof(float);
  atlas_arch_kv_pages kv{};
  ASSERT_OK(atlas_backend_alloc(b, bytes, &kv.keys));
  ASSERT_OK(atlas_backend_alloc(b, bytes, &kv.values));
  kv.layer_elements = blocks * bt * kv_dim;
  kv.dtype = ATLAS_DTYPE_F32;
  kv.block_tokens = bt;
  std::vector<uint32_t> table;  // sequence s: blocks s, s + seqs, ...
  for (size_t s = 0; s < seqs; ++s) {
    for (uint32_t j = 0; j < per_seq; ++j) {
      table.push_back((uint32_t)(seqs - 1 - s + j * seqs));
    }
  }
  std::vector<uint32_t> pos(seqs, 0);
  out->assign(seqs, {});
  for (size_t step = 0; step <= feeds[0].size(); ++step) {
    std::vector<uint32_t> tokens, positions, slots, row_seq, last;
    for (size_t s = 0; s < seqs; ++s) {
      std::vector<uint32_t> in =
          step == 0 ? prompts[s] : std::vector<uint32_t>{feeds[s][step - 1]};
      for (uint32_t t : in) {
        tokens.push_back(t);
        positions.push_back(pos[s]);
        slots.push_back(table[s * per_seq + pos[s] / bt] * bt + pos[s] % bt);
        row_seq.push_back((uint32_t)s);
        ++pos[s];
      }
      last.push_back((uint32_t)tokens.size() - 1);
    }
    atlas_arch_batch batch{};
    batch.kv = &kv;
    batch.rows = tokens.size();
    batch.tokens = tokens.data();
    batch.positions = positions.data();
    batch.slots = slots.data();
    batch.row_seq = row_seq.data();
    batch.seqs = seqs;
    batch.tables = table.data();
    batch.table_stride = per_seq;
    batch.last_row = last.data();
    std::vector<float> logits(seqs * c.vocab);
    ASSERT_OK(atlas_decoder_forward_batch(m, &batch, logits.data(), nullptr));
    for (size_t s = 0; s < seqs; ++s) {
      (*out)[s].insert((*out)[s].end(), logits.begin() + (long)(s * c.vocab),
                       logits.begin() + (long)((s + 1) * c.vocab));
    }
  }
  EXPECT_OK(atlas_backend_free(b, kv.keys));
  EXPECT_OK(atlas_backend_free(b, kv.values));
  atlas_teardown_report r;
  EXPECT_OK(atlas_decoder_model_unload(m, &r));
  atlas_sweep_result_free(&r.sweep);
  atlas_checkpoint_close(ck);
  ASSERT_OK(atlas_backend_destroy(b));
}

double RelL2(const float *a, const float *b, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    ref += (double)a[i] * a[i];
  }
  return sqrt(diff / fmax(ref, 1e-30));
}

// Two sequences in one paged batch step, their tokens grouped by expert
// together: the case's prompt gives the reference's rows, and a second
// sequence beside it gives what it gives alone (a sequence's output does not
// depend on what shares its batch).
TEST(MoeReference, BatchedSequencesMatchTheirOwnRuns) {
  for (const char *name : {"qwen3_moe_host_f32", "qwen2_moe_host_f32"}) {
    SCOPED_TRACE(name);
    Case c;
    ASSERT_TRUE(LoadCase(std::string(kRoot) + "/" + name, &c));
    std::ifstream cf(c.dir + "/config.json");
    std::stringstream text;
    text << cf.rdbuf();
    std::string json = text.str();
    atlas_decoder_config config{};
    ASSERT_OK(atlas_decoder_config_parse(FamilyOf(c.family), json.data(),
                                         json.size(), "config.json", &config));
    std::vector<uint32_t> other, feed_a(c.ids.begin(), c.ids.end() - 1);
    for (uint32_t i = 0; i < 13; ++i) other.push_back((i * 29 + 3) % 64);
    std::vector<uint32_t> feed_b;
    for (size_t i = 0; i < feed_a.size(); ++i) {
      feed_b.push_back((uint32_t)(i * 11 + 7) % 64);
    }
    std::vector<std::vector<float>> both, alone;
    PagedRun(c, config, {c.prompt, other}, {feed_a, feed_b}, &both);
    PagedRun(c, config, {other}, {feed_b}, &alone);
    ASSERT_EQ(both.size(), 2u);
    ASSERT_EQ(both[0].size(), c.ids.size() * c.vocab);
    double worst = 0;
    for (size_t step = 0; step < c.ids.size(); ++step) {
      // Row prompt - 1 + step of the reference: the prompt's last, then
      // each generated token's.
      size_t row = c.prompt.size() - 1 + step;
      worst = fmax(worst, RelL2(&c.logits[row * c.vocab],
                                &both[0][step * c.vocab], c.vocab));
    }
    EXPECT_LE(worst, kTolerance);
    ASSERT_EQ(alone[0].size(), both[1].size());
    EXPECT_LE(RelL2(alone[0].data(), both[1].data(), alone[0].size()),
              kTolerance);
    printf("  %-20s paged, two sequences: worst row %.2e relative L2\n", name,
           worst);
  }
}

// Config keys that change the MoE's math and are not implemented, refused
// by name; the routing's keys read as the config classes default them.
std::string Qwen3Moe(const std::string &extra) {
  return "{\"model_type\": \"qwen3_moe\", \"vocab_size\": 64, "
         "\"hidden_size\": 32, \"intermediate_size\": 20, "
         "\"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
         "\"moe_intermediate_size\": 12" +
         extra + "}";
}

atlas_status Parse(const atlas_decoder_family *f, const std::string &text,
                   atlas_decoder_config *out) {
  return atlas_decoder_config_parse(f, text.data(), text.size(), "config.json",
                                    out);
}

TEST(MoeConfig, ReadsTheRoutingKeysAndRefusesWhatItDoesNotRun) {
  atlas_decoder_config c{};
  ASSERT_OK(Parse(&atlas_qwen3_moe_family, Qwen3Moe(""), &c));
  EXPECT_EQ(c.num_experts, 128);  // Qwen3MoeConfig's defaults
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_FALSE(c.norm_topk_prob);
  for (int l = 0; l < 4; ++l) EXPECT_TRUE(atlas_decoder_layer_moe(&c, l));
  // decoder_sparse_step 2: layers 1 and 3; mlp_only_layers takes 3 away
  // (an index past the last layer names none, as in transformers).
  ASSERT_OK(Parse(&atlas_qwen3_moe_family,
                  Qwen3Moe(", \"num_experts\": 4, \"num_experts_per_tok\": 1, "
                           "\"decoder_sparse_step\": 2, "
                           "\"mlp_only_layers\": [3, 9], "
                           "\"router_aux_loss_coef\": 0.5, "
                           "\"output_router_logits\": true"),
                  &c));
  EXPECT_FALSE(atlas_decoder_layer_moe(&c, 0));
  EXPECT_TRUE(atlas_decoder_layer_moe(&c, 1));
  EXPECT_FALSE(atlas_decoder_layer_moe(&c, 2));
  EXPECT_FALSE(atlas_decoder_layer_moe(&c, 3));
  // num_experts 0: every MLP dense.
  ASSERT_OK(
      Parse(&atlas_qwen3_moe_family, Qwen3Moe(", \"num_experts\": 0"), &c));
  EXPECT_FALSE(atlas_decoder_layer_moe(&c, 0));
  EXPECT_STATUS(Parse(&atlas_qwen3_moe_family,
                      Qwen3Moe(", \"num_experts\": 4, "
                               "\"num_experts_per_tok\": 5"),
                      &c),
                ATLAS_STATUS_UNIMPLEMENTED, "num_experts_per_tok 5");
  EXPECT_STATUS(Parse(&atlas_qwen3_moe_family,
                      Qwen3Moe(", \"quantization_config\": {\"quant_method\": "
                               "\"awq\", \"bits\": 4, \"group_size\": 32, "
                               "\"version\": \"gemm\", \"zero_point\": true}"),
                      &c),
                ATLAS_STATUS_UNIMPLEMENTED, "quantized experts");
  EXPECT_STATUS(Parse(&atlas_qwen3_moe_family,
                      Qwen3Moe(", \"shared_expert_intermediate_size\": 8"), &c),
                ATLAS_STATUS_UNIMPLEMENTED, "shared_expert_intermediate_size");
  EXPECT_STATUS(Parse(&atlas_qwen3_moe_family,
                      Qwen3Moe(", \"mlp_only_layers\": [\"1\"]"), &c),
                ATLAS_STATUS_INVALID_ARGUMENT, "mlp_only_layers");
  EXPECT_STATUS(Parse(&atlas_qwen3_moe_family,
                      "{\"model_type\": "
                      "\"qwen3_moe\", \"vocab_size\": 64, "
                      "\"hidden_size\": 32, \"intermediate_size\": 20, "
                      "\"num_hidden_layers\": 4, \"num_attention_heads\": 4}",
                      &c),
                ATLAS_STATUS_INVALID_ARGUMENT, "moe_intermediate_size");
  // Mixtral: every layer, always renormalised, its config's defaults.
  std::string mixtral =
      "{\"model_type\": \"mixtral\", \"vocab_size\": 64, "
      "\"hidden_size\": 32, \"intermediate_size\": 20, "
      "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
      "\"num_key_value_heads\": 2";
  ASSERT_OK(Parse(&atlas_mixtral_family, mixtral + "}", &c));
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.moe_intermediate_size, 20);
  EXPECT_EQ(c.rope.theta, 1000000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_STATUS(Parse(&atlas_mixtral_family,
                      mixtral + ", \"layer_types\": [\"full_attention\", "
                                "\"full_attention\"]}",
                      &c),
                ATLAS_STATUS_UNIMPLEMENTED, "layer_types");
  EXPECT_STATUS(
      Parse(&atlas_mixtral_family, mixtral + ", \"hidden_act\": \"gelu\"}", &c),
      ATLAS_STATUS_UNIMPLEMENTED, "gelu");
}

// A checkpoint whose router or experts the config does not imply, or that
// holds expert tensors the config would not read, is refused naming them.
TEST(MoeConfig, ChecksTheExpertTensors) {
  std::string src = std::string(kRoot) + "/qwen3_moe_host_f32";
  std::ifstream cf(src + "/config.json");
  std::stringstream text;
  text << cf.rdbuf();
  std::string json = text.str();
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(src.c_str(), &ck));
  atlas_decoder_config c{};
  ASSERT_OK(Parse(&atlas_qwen3_moe_family, json, &c));
  EXPECT_OK(atlas_decoder_check_checkpoint(&c, ck, nullptr));
  c.num_experts = 9;  // one more than the checkpoint has
  EXPECT_STATUS(atlas_decoder_check_checkpoint(&c, ck, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT,
                "\"model.layers.0.mlp.gate.weight\" has shape [8, 32], but "
                "the config implies [9, 32]");
  atlas_checkpoint_close(ck);
  // Layer 1 is dense in the config; called MoE, its experts are missing.
  ASSERT_OK(Parse(&atlas_qwen3_moe_family, json, &c));
  c.moe_layers[0] |= 1u << 1;
  ASSERT_OK(atlas_checkpoint_open(src.c_str(), &ck));
  EXPECT_STATUS(atlas_decoder_check_checkpoint(&c, ck, nullptr),
                ATLAS_STATUS_NOT_FOUND, "model.layers.1.mlp.gate.weight");
  atlas_checkpoint_close(ck);
  // qwen2_moe without its shared expert: those tensors would be ignored.
  src = std::string(kRoot) + "/qwen2_moe_host_f32";
  std::ifstream qf(src + "/config.json");
  std::stringstream qtext;
  qtext << qf.rdbuf();
  ASSERT_OK(Parse(&atlas_qwen2_moe_family, qtext.str(), &c));
  ASSERT_OK(atlas_checkpoint_open(src.c_str(), &ck));
  EXPECT_OK(atlas_decoder_check_checkpoint(&c, ck, nullptr));
  c.shared_expert_intermediate_size = 0;
  EXPECT_STATUS(atlas_decoder_check_checkpoint(&c, ck, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "mlp.shared_expert");
  atlas_checkpoint_close(ck);
}

}  // namespace
