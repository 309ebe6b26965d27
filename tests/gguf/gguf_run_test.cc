// A GGUF file run by the decoder directly (runtime/formats/gguf_checkpoint.h
// through atlas_model_open), on the host backend:
// - F32, F16 and BF16 GGUF files written here from the reference
//   checkpoints in tests/arch/data (transformers names mapped to llama.cpp's
//   by the test's own table, a llama model's q/k rows and biases permuted as
//   convert_hf_to_gguf's LlamaModel.permute does, hyperparameters and rope
//   scaling as its writer keys them) give the very logits and ids of the
//   safetensors checkpoint;
// - a GGUF file whose projections are Q8_0, Q4_0, Q4_K, Q5_K and Q6_K
//   blocks (packed by tests/quant's gguf_blocks_reference), with a Q8_0
//   token embedding and a Q6_K output, gives the logits of its dequantized
//   F32 twin within 1e-5 of each row's largest logit, and the same ids,
//   prompt batched and token by token, its projections ledgered as GGUF
//   (on the host, and on CUDA where a GPU is: the test binary links
//   statically for tools/gpu/gpu_stage.sh); the paged batch step gives the
//   token path's ids and logits for sequences of different lengths at once;
// - metadata and tensors Atlas cannot run are refused naming the key or
//   tensor.
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/gguf_checkpoint.h"
#include "atlas/runtime/formats/safetensors_convert.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/batch.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/quant/gguf_blocks_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using gguf_test::Writer;

std::string Tmp(const std::string &leaf) {
  const char *t = getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + leaf;
}

std::string DataDir(const std::string &name) {
  return "tests/arch/data/" + name;
}

void WriteFile(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
}

// llama.cpp's names for the transformers ones (its tensor_mapping.py).
std::string GgufName(const std::string &hf) {
  static const std::map<std::string, std::string> kGlobal = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::map<std::string, std::string> kLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate_proj.bias", "ffn_gate.bias"},
      {"mlp.up_proj.bias", "ffn_up.bias"},
      {"mlp.down_proj.bias", "ffn_down.bias"},
  };
  auto g = kGlobal.find(hf);
  if (g != kGlobal.end()) return g->second;
  const std::string p = "model.layers.";
  if (hf.compare(0, p.size(), p) != 0) return "";
  size_t dot = hf.find('.', p.size());
  auto l = kLayer.find(hf.substr(dot + 1));
  if (l == kLayer.end()) return "";
  return "blk." + hf.substr(p.size(), dot - p.size()) + "." + l->second;
}

// convert_hf_to_gguf's LlamaModel.permute, from its description: each
// head's rows reshaped (2, head_dim / 2) and the two axes swapped, so
// transformers row h*hd + t*hd/2 + j is written as row h*hd + 2j + t.
std::vector<float> Permute(const std::vector<float> &w, uint64_t rows,
                           uint64_t cols, uint64_t head_dim) {
  std::vector<float> out(w.size());
  for (uint64_t r = 0; r < rows; ++r) {
    uint64_t h = r / head_dim, i = r % head_dim, half = head_dim / 2;
    uint64_t dst = h * head_dim + 2 * (i % half) + i / half;
    memcpy(&out[dst * cols], &w[r * cols], cols * 4);
  }
  return out;
}

int64_t Int(json_t *o, const char *k, int64_t dflt) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

double Real(json_t *o, const char *k, double dflt) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

// An F32 GGUF of the reference checkpoint `name`, as llama.cpp's converter
// lays it out.
std::string GgufOfCheckpoint(const std::string &name) {
  const std::string dir = DataDir(name);
  json_error_t e;
  json_t *c = json_load_file((dir + "/config.json").c_str(), 0, &e);
  EXPECT_NE(c, nullptr) << e.text;
  if (c == nullptr) return "";
  const std::string arch = json_string_value(json_object_get(c, "model_type"));
  const int64_t hidden = Int(c, "hidden_size", 0),
                heads = Int(c, "num_attention_heads", 0),
                kv = Int(c, "num_key_value_heads", heads),
                head_dim = Int(c, "head_dim", hidden / heads);
  Writer w;
  w.KvString("general.architecture", arch);
  w.KvString("general.name", name);
  w.KvU32(arch + ".context_length",
          (uint32_t)Int(c, "max_position_embeddings", 0));
  w.KvU32(arch + ".embedding_length", (uint32_t)hidden);
  w.KvU32(arch + ".block_count", (uint32_t)Int(c, "num_hidden_layers", 0));
  w.KvU32(arch + ".feed_forward_length",
          (uint32_t)Int(c, "intermediate_size", 0));
  w.KvU32(arch + ".attention.head_count", (uint32_t)heads);
  w.KvU32(arch + ".attention.head_count_kv", (uint32_t)kv);
  w.KvU32(arch + ".attention.key_length", (uint32_t)head_dim);
  w.KvU32(arch + ".attention.value_length", (uint32_t)head_dim);
  w.KvU32(arch + ".rope.dimension_count", (uint32_t)head_dim);
  w.KvU32(arch + ".vocab_size", (uint32_t)Int(c, "vocab_size", 0));
  w.KvF32(arch + ".attention.layer_norm_rms_epsilon",
          (float)Real(c, "rms_norm_eps", 1e-6));
  json_t *rope = json_object_get(c, "rope_parameters");
  if (rope == nullptr) rope = json_object_get(c, "rope_scaling");
  w.KvF32(arch + ".rope.freq_base", (float)Real(rope ? rope : c, "rope_theta",
                                                Real(c, "rope_theta", 1e4)));
  const char *type = nullptr;
  if (rope != nullptr) {
    json_t *t = json_object_get(rope, "rope_type");
    if (t == nullptr) t = json_object_get(rope, "type");
    type = json_string_value(t);
  }
  if (type != nullptr && strcmp(type, "llama3") == 0) {
    // convert_hf_to_gguf writes Llama 3's scaling as a factor a frequency
    // (LlamaModel.generate_extra_tensors, in float32 as torch computes it).
    const float theta = (float)Real(rope, "rope_theta", 1e4),
                factor = (float)Real(rope, "factor", 8),
                lf = (float)Real(rope, "low_freq_factor", 1),
                hf = (float)Real(rope, "high_freq_factor", 4),
                old =
                    (float)Int(rope, "original_max_position_embeddings", 8192);
    std::string freqs;
    for (int64_t i = 0; i < head_dim; i += 2) {
      float freq = 1.0f / powf(theta, (float)i / (float)head_dim);
      float wavelen = 2.0f * (float)M_PI / freq, f = 0;
      if (wavelen < old / hf) {
        f = 1.0f;
      } else if (wavelen > old / lf) {
        f = factor;
      } else {
        float smooth = (old / wavelen - lf) / (hf - lf);
        f = 1.0f / ((1.0f - smooth) / factor + smooth);
      }
      freqs.append((const char *)&f, 4);
    }
    w.Tensor("rope_freqs.weight", {(uint64_t)head_dim / 2}, 0, freqs);
  } else if (type != nullptr && strcmp(type, "default") != 0) {
    w.KvString(arch + ".rope.scaling.type", type);
    w.KvF32(arch + ".rope.scaling.factor", (float)Real(rope, "factor", 1));
    if (strcmp(type, "yarn") == 0) {
      w.KvU32(arch + ".rope.scaling.original_context_length",
              (uint32_t)Int(rope, "original_max_position_embeddings", 0));
    }
  }
  json_decref(c);

  atlas_checkpoint *ck = nullptr;
  EXPECT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  if (ck == nullptr) return "";
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
    atlas_checkpoint_tensor t;
    EXPECT_TRUE(atlas_checkpoint_tensor_at(ck, i, &t));
    const std::string hf = t.tensor->name, g = GgufName(hf);
    EXPECT_NE(g, "") << hf;
    std::vector<float> v(t.tensor->elements);
    EXPECT_OK(atlas_safetensors_tensor_to_f32(t.tensor, 0, v.size(), v.data()));
    // The converter keeps a matrix's 16-bit type and writes vectors in F32.
    const bool half = t.tensor->rank == 2 && t.tensor->dtype != ATLAS_DTYPE_F32;
    const bool qk = hf.find("q_proj") != std::string::npos ||
                    hf.find("k_proj") != std::string::npos;
    const uint64_t rows = t.tensor->rank == 2 ? t.tensor->shape[0] : 1,
                   cols = t.tensor->rank == 2 ? t.tensor->shape[1]
                                              : t.tensor->shape[0];
    if (arch == "llama" && qk) {
      // A bias is permuted like a weight of one column.
      v = t.tensor->rank == 2 ? Permute(v, rows, cols, head_dim)
                              : Permute(v, cols, 1, head_dim);
    }
    std::string bytes((const char *)v.data(), v.size() * 4);
    if (half) {
      bytes.clear();
      for (float x : v) {  // exact: the values came from this type
        uint16_t h = t.tensor->dtype == ATLAS_DTYPE_F16 ? atlas_f32_to_f16(x)
                                                        : atlas_f32_to_bf16(x);
        bytes.append((const char *)&h, 2);
      }
    }
    const uint32_t type = !half                                ? 0
                          : t.tensor->dtype == ATLAS_DTYPE_F16 ? 1
                                                               : 30;
    if (t.tensor->rank == 2) {
      w.Tensor(g, {cols, rows}, type, bytes);
    } else {
      w.Tensor(g, {cols}, 0, bytes);
    }
  }
  atlas_checkpoint_close(ck);
  std::string path = Tmp(name + ".gguf");
  WriteFile(path, w.Build());
  return path;
}

atlas_status AddLogits(void *ctx, const float *x, size_t n) {
  auto *v = static_cast<std::vector<std::vector<float>> *>(ctx);
  v->emplace_back(x, x + n);
  return ATLAS_OK;
}

struct Outcome {
  std::vector<std::vector<float>> logits;
  std::vector<uint32_t> ids;
  std::string report;
};

Outcome Generate(const std::string &model, int64_t prefill_rows,
                 const std::vector<uint32_t> &prompt,
                 const char *backend = "host") {
  atlas_model_spec spec{};
  spec.dir = model.c_str();
  spec.backend = backend;
  spec.max_seq = 32;
  spec.prefill_rows = prefill_rows;
  spec.ignore_eos = true;
  atlas_model *m = nullptr;
  Outcome r;
  EXPECT_OK(atlas_model_open(&spec, &m));
  if (m == nullptr) return r;
  char *report = nullptr;
  EXPECT_OK(
      atlas_backend_alloc_report(atlas_model_backend(m), 1000, 0.0, &report));
  if (report != nullptr) r.report = report;
  free(report);
  r.ids.resize(8);
  size_t count = 0;
  EXPECT_OK(atlas_model_generate(m, prompt.data(), prompt.size(), r.ids.size(),
                                 r.ids.data(), &count, AddLogits, &r.logits));
  r.ids.resize(count);
  EXPECT_OK(atlas_model_close(m, nullptr));
  return r;
}

class GgufRunF32 : public ::testing::TestWithParam<const char *> {};

// Bit for bit: the same weights in the same order reach the same kernels.
TEST_P(GgufRunF32, LogitsEqualTheSafetensorsCheckpoint) {
  const std::string name = GetParam();
  const std::string gguf = GgufOfCheckpoint(name);
  ASSERT_FALSE(gguf.empty());
  const std::vector<uint32_t> prompt = {3, 101, 17, 64, 5, 99, 42};
  for (int64_t rows : {0, -1}) {
    Outcome a = Generate(DataDir(name), rows, prompt);
    Outcome b = Generate(gguf, rows, prompt);
    ASSERT_EQ(a.logits.size(), prompt.size() + 7);
    ASSERT_EQ(a.ids, b.ids);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t r = 0; r < a.logits.size(); ++r) {
      ASSERT_EQ(a.logits[r], b.logits[r]) << name << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, GgufRunF32,
                         ::testing::Values("llama_default_f32",
                                           "llama_bias_f32", "llama_linear_f32",
                                           "qwen3_f32", "qwen2_yarn_f32"));

// The quantized model's shape: every matrix's columns whole Q4_K blocks.
constexpr uint32_t kHidden = 256, kHeads = 4, kKv = 2, kHeadDim = 64,
                   kFfn = 256, kVocab = 64, kLayers = 2;

struct QuantFiles {
  std::string gguf, twin;
};

// A llama GGUF of random blocks and its dequantized twin (config.json and
// model.safetensors in F32, transformers names and row order).
QuantFiles WriteQuantized(const std::string &leaf) {
  std::mt19937 rng(520);
  Writer w;
  w.KvString("general.architecture", "llama");
  w.KvU32("llama.context_length", 64);
  w.KvU32("llama.embedding_length", kHidden);
  w.KvU32("llama.block_count", kLayers);
  w.KvU32("llama.feed_forward_length", kFfn);
  w.KvU32("llama.attention.head_count", kHeads);
  w.KvU32("llama.attention.head_count_kv", kKv);
  w.KvU32("llama.vocab_size", kVocab);
  w.KvF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.KvF32("llama.rope.freq_base", 10000.0f);
  // The twin's tensors: names, shapes, values (kept alive until written).
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
  auto quant = [&](const std::string &hf, gguf_ref::Type t, uint32_t type_id,
                   uint32_t rows, uint32_t cols) {
    gguf_ref::Matrix m = gguf_ref::Random(t, rows, cols, rng);
    w.Tensor(GgufName(hf), {cols, rows}, type_id,
             std::string(m.bytes.begin(), m.bytes.end()));
    std::vector<float> v = m.value;  // GGUF row order
    const bool qk = hf.find("q_proj") != std::string::npos ||
                    hf.find("k_proj") != std::string::npos;
    if (qk) {
      // The file holds the permuted rows: the twin holds them in order.
      std::vector<float> in_order(v.size());
      for (uint32_t r = 0; r < rows; ++r) {
        uint32_t h = r / kHeadDim, i = r % kHeadDim, half = kHeadDim / 2;
        uint32_t src = h * kHeadDim + 2 * (i % half) + i / half;
        memcpy(&in_order[(size_t)r * cols], &v[(size_t)src * cols], cols * 4);
      }
      v = in_order;
    }
    names.push_back(hf);
    shapes.push_back({rows, cols});
    values.push_back(v);
  };
  auto norm = [&](const std::string &hf) {
    std::uniform_real_distribution<float> d(0.5f, 1.5f);
    std::vector<float> v(kHidden);
    for (float &x : v) x = d(rng);
    w.Tensor(GgufName(hf), {kHidden}, 0,
             std::string((const char *)v.data(), v.size() * 4));
    names.push_back(hf);
    shapes.push_back({kHidden});
    values.push_back(v);
  };
  using T = gguf_ref::Type;
  quant("model.embed_tokens.weight", T::kQ8_0, 8, kVocab, kHidden);
  norm("model.norm.weight");
  quant("lm_head.weight", T::kQ6_K, 14, kVocab, kHidden);
  for (uint32_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight");
    norm(p + "post_attention_layernorm.weight");
    quant(p + "self_attn.q_proj.weight", l ? T::kQ4_K : T::kQ8_0, l ? 12 : 8,
          kHeads * kHeadDim, kHidden);
    quant(p + "self_attn.k_proj.weight", l ? T::kQ6_K : T::kQ4_K, l ? 14 : 12,
          kKv * kHeadDim, kHidden);
    quant(p + "self_attn.v_proj.weight", T::kQ6_K, 14, kKv * kHeadDim, kHidden);
    quant(p + "self_attn.o_proj.weight", T::kQ5_K, 13, kHidden,
          kHeads * kHeadDim);
    quant(p + "mlp.gate_proj.weight", T::kQ4_0, 2, kFfn, kHidden);
    quant(p + "mlp.up_proj.weight", T::kQ4_K, 12, kFfn, kHidden);
    quant(p + "mlp.down_proj.weight", T::kQ8_0, 8, kHidden, kFfn);
  }
  QuantFiles f;
  f.gguf = Tmp(leaf + ".gguf");
  WriteFile(f.gguf, w.Build());
  f.twin = Tmp(leaf + "_twin");
  mkdir(f.twin.c_str(), 0755);
  std::vector<atlas_safetensors_write_tensor> t(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    t[i].name = names[i].c_str();
    t[i].dtype = ATLAS_DTYPE_F32;
    t[i].rank = (int)shapes[i].size();
    for (size_t d = 0; d < shapes[i].size(); ++d) t[i].shape[d] = shapes[i][d];
    t[i].data = values[i].data();
  }
  EXPECT_OK(atlas_safetensors_write((f.twin + "/model.safetensors").c_str(),
                                    t.data(), t.size(), nullptr, 0));
  char config[1024];
  snprintf(config, sizeof(config),
           "{\"model_type\": \"llama\", \"hidden_size\": %u, "
           "\"intermediate_size\": %u, \"num_hidden_layers\": %u, "
           "\"num_attention_heads\": %u, \"num_key_value_heads\": %u, "
           "\"head_dim\": %u, \"max_position_embeddings\": 64, "
           "\"vocab_size\": %u, \"rms_norm_eps\": 1e-05, \"rope_theta\": "
           "10000.0, \"tie_word_embeddings\": false, \"hidden_act\": "
           "\"silu\"}",
           kHidden, kFfn, kLayers, kHeads, kKv, kHeadDim, kVocab);
  WriteFile(f.twin + "/config.json", config);
  return f;
}

void QuantizedParityOn(const char *backend) {
  QuantFiles f = WriteQuantized(std::string("quantized_") + backend);
  const std::vector<uint32_t> prompt = {1, 7, 3, 42, 9, 5, 11};
  for (int64_t rows : {0, -1}) {
    Outcome q = Generate(f.gguf, rows, prompt, backend);
    Outcome twin = Generate(f.twin, rows, prompt, backend);
    EXPECT_NE(q.report.find("quantized weights (gguf Q4_K)"), std::string::npos)
        << q.report;
    EXPECT_EQ(twin.report.find("quantized weights"), std::string::npos);
    ASSERT_EQ(q.ids, twin.ids);
    ASSERT_EQ(q.logits.size(), twin.logits.size());
    ASSERT_EQ(q.logits.size(), prompt.size() + 7);
    double worst = 0;
    for (size_t r = 0; r < q.logits.size(); ++r) {
      double scale = 0, diff = 0;
      for (size_t i = 0; i < q.logits[r].size(); ++i) {
        scale = fmax(scale, fabs((double)twin.logits[r][i]));
        diff = fmax(diff, fabs((double)q.logits[r][i] - twin.logits[r][i]));
      }
      ASSERT_GT(scale, 0);
      EXPECT_LE(diff, 1e-5 * scale) << "row " << r;
      worst = fmax(worst, diff / scale);
    }
    printf(
        "gguf blocks vs twin (%s, %s): worst %.3g of the row's largest "
        "logit\n",
        backend, rows < 0 ? "token by token" : "prefill", worst);
  }
}

TEST(GgufRunQuantized, BlocksMatchTheirDequantizedTwin) {
  QuantizedParityOn("host");
}

// The same on CUDA (the quant kernels' GGUF layouts); skips without a GPU.
TEST(GgufRunQuantized, BlocksMatchTheirDequantizedTwinOnCuda) {
  atlas_backend *probe = nullptr;
  StatusResult r = Take(atlas_cuda_backend_create(nullptr, &probe));
  if (r.code != ATLAS_STATUS_OK) {
    ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
  }
  ASSERT_OK(atlas_backend_destroy(probe));
  QuantizedParityOn("cuda");
}

Outcome GenerateOn(atlas_model *m, const std::vector<uint32_t> &prompt) {
  Outcome r;
  r.ids.resize(8);
  size_t count = 0;
  EXPECT_OK(atlas_model_generate(m, prompt.data(), prompt.size(), r.ids.size(),
                                 r.ids.data(), &count, AddLogits, &r.logits));
  r.ids.resize(count);
  return r;
}

// The paged batch step (atlas serve, atlas batch) on the GGUF blocks: three
// sequences of different lengths prefilled and decoded together give, each,
// the ids of the model's own token path (atlas_model_generate) and its
// logits within 1e-5 of the row's largest.
TEST(GgufRunQuantized, TheBatchStepMatchesTheTokenPath) {
  QuantFiles f = WriteQuantized("batch");
  atlas_model_spec spec{};
  spec.dir = f.gguf.c_str();
  spec.backend = "host";
  spec.max_seq = 48;
  spec.ignore_eos = true;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&spec, &m));
  const size_t kSeqs = 3, kSteps = 8, lens[kSeqs] = {1, 5, 21};
  std::vector<std::vector<uint32_t>> prompts(kSeqs);
  std::vector<Outcome> alone(kSeqs);
  for (size_t i = 0; i < kSeqs; ++i) {
    for (size_t t = 0; t < lens[i]; ++t) {
      prompts[i].push_back((uint32_t)((i * 29 + t * 13 + 3) % kVocab));
    }
    Outcome &r = alone[i];
    r.ids.resize(kSteps + 1);
    size_t count = 0;
    ASSERT_OK(atlas_model_generate(m, prompts[i].data(), prompts[i].size(),
                                   r.ids.size(), r.ids.data(), &count,
                                   AddLogits, &r.logits));
    ASSERT_EQ(count, kSteps + 1);
    // A row a prompt token, then a row a token fed: keep the predicting ones.
    r.logits.erase(r.logits.begin(), r.logits.begin() + (lens[i] - 1));
    ASSERT_EQ(r.logits.size(), kSteps + 1);
  }
  atlas_batch_engine_options eo{};
  eo.block_tokens = 8;
  atlas_batch_engine *e = nullptr;
  ASSERT_OK(atlas_batch_engine_create(m, &eo, &e));
  std::vector<atlas_batch_seq *> seqs(kSeqs);
  for (auto &q : seqs) ASSERT_OK(atlas_batch_seq_create(e, &q));
  std::vector<std::vector<uint32_t>> chunk = prompts;
  double worst = 0;
  for (size_t step = 0; step <= kSteps; ++step) {
    std::vector<std::vector<float>> logits(kSeqs, std::vector<float>(kVocab));
    std::vector<uint32_t> ids(kSeqs);
    std::vector<atlas_batch_item> items(kSeqs);
    for (size_t i = 0; i < kSeqs; ++i) {
      items[i] = {seqs[i], chunk[i].data(), chunk[i].size(), logits[i].data(),
                  &ids[i]};
    }
    ASSERT_OK(atlas_batch_step(e, items.data(), items.size()));
    for (size_t i = 0; i < kSeqs; ++i) {
      ASSERT_EQ(ids[i], alone[i].ids[step]) << "seq " << i << " step " << step;
      const std::vector<float> &want = alone[i].logits[step];
      double scale = 0, diff = 0;
      for (size_t v = 0; v < kVocab; ++v) {
        scale = fmax(scale, fabs((double)want[v]));
        diff = fmax(diff, fabs((double)logits[i][v] - want[v]));
      }
      ASSERT_GT(scale, 0);
      EXPECT_LE(diff, 1e-5 * scale) << "seq " << i << " step " << step;
      worst = fmax(worst, diff / scale);
      chunk[i] = {ids[i]};
    }
  }
  printf(
      "gguf blocks, batch step vs token path: worst %.3g of the row's "
      "largest logit\n",
      worst);
  for (auto &q : seqs) atlas_batch_seq_free(e, q);
  ASSERT_OK(atlas_batch_engine_destroy(e));
  ASSERT_OK(atlas_model_close(m, nullptr));
}

// What a swap keeps to restore a model it tore down: a host copy of the
// GGUF view (the file's bytes and the view's reordered and dequantized
// tensors) that loads the same model after the file is gone, and that is
// refused once the file changed under the loaded model.
TEST(GgufRunQuantized, AHostSnapshotRestoresTheModelBitForBit) {
  QuantFiles f = WriteQuantized("snapshot");
  const std::vector<uint32_t> prompt = {4, 8, 15, 16, 23, 42};
  atlas_model_spec spec{};
  spec.dir = f.gguf.c_str();
  spec.backend = "host";
  spec.max_seq = 32;
  spec.ignore_eos = true;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&spec, &m));
  Outcome before = GenerateOn(m, prompt);
  atlas_checkpoint *copy = nullptr;
  ASSERT_OK(atlas_checkpoint_snapshot(atlas_model_checkpoint(m), &copy));
  // The file goes: the copy alone must serve.
  WriteFile(f.gguf, "not a GGUF file any more");
  atlas_checkpoint *late = nullptr;
  EXPECT_STATUS(atlas_checkpoint_snapshot(atlas_model_checkpoint(m), &late),
                ATLAS_STATUS_FAILED_PRECONDITION, "snapshot.gguf");
  EXPECT_EQ(late, nullptr);
  atlas_model_spec again = spec;
  again.adopt_checkpoint = copy;
  again.adopt_arch = atlas_model_arch(m);
  again.adopt_config = atlas_model_config(m);
  again.adopt_eos = atlas_model_eos(m);
  atlas_model *restored = nullptr;
  ASSERT_OK(atlas_model_open(&again, &restored));
  Outcome after = GenerateOn(restored, prompt);
  EXPECT_OK(atlas_model_close(restored, nullptr));
  EXPECT_OK(atlas_model_close(m, nullptr));
  ASSERT_EQ(before.ids, after.ids);
  ASSERT_EQ(before.logits, after.logits);
}

// quant_method "gguf" is what a GGUF file's view says; a safetensors
// directory claiming it holds no blocks and is refused, naming the tensor.
TEST(GgufRunQuantized, ASafetensorsDirectoryClaimingGgufIsRefused) {
  QuantFiles f = WriteQuantized("claims_gguf");
  const std::string config =
      "{\"model_type\": \"llama\", \"hidden_size\": 256, "
      "\"intermediate_size\": 256, \"num_hidden_layers\": 2, "
      "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
      "\"head_dim\": 64, \"vocab_size\": 64, \"quantization_config\": "
      "{\"quant_method\": \"gguf\"}}";
  WriteFile(f.twin + "/config.json", config);
  atlas_model_spec spec{};
  spec.dir = f.twin.c_str();
  spec.backend = "host";
  atlas_model *m = nullptr;
  EXPECT_STATUS(atlas_model_open(&spec, &m), ATLAS_STATUS_DATA_LOSS,
                "self_attn.q_proj.weight\" is F32 while the file's other "
                "projections are GGUF blocks");
  EXPECT_EQ(m, nullptr);
}

// --- refusals -------------------------------------------------------------

// A minimal llama file (one layer, F32) with `edit` applied before its
// tensors are written.
std::string Minimal(const std::string &leaf,
                    const std::function<void(Writer &)> &edit,
                    uint32_t q_type = 0, const std::string &arch = "llama") {
  Writer w;
  w.KvString("general.architecture", arch);
  w.KvU32(arch + ".context_length", 64);
  w.KvU32(arch + ".embedding_length", 32);
  w.KvU32(arch + ".block_count", 1);
  w.KvU32(arch + ".feed_forward_length", 64);
  w.KvU32(arch + ".attention.head_count", 4);
  w.KvU32(arch + ".vocab_size", 16);
  edit(w);
  auto f32 = [&](const std::string &n, std::vector<uint64_t> dims) {
    uint64_t e = 1;
    for (uint64_t d : dims) e *= d;
    w.Tensor(n, dims, 0, std::string(e * 4, '\0'));
  };
  f32("token_embd.weight", {32, 16});
  f32("output_norm.weight", {32});
  f32("output.weight", {32, 16});
  f32("blk.0.attn_norm.weight", {32});
  f32("blk.0.ffn_norm.weight", {32});
  if (q_type == 0) {
    f32("blk.0.attn_q.weight", {32, 32});
  } else {
    // 32 rows of one 34-byte Q8_0 block or one 20-byte Q4_1 block.
    w.Tensor("blk.0.attn_q.weight", {32, 32}, q_type,
             std::string(32 * (q_type == 8 ? 34 : 20), '\0'));
  }
  f32("blk.0.attn_k.weight", {32, 32});
  f32("blk.0.attn_v.weight", {32, 32});
  f32("blk.0.attn_output.weight", {32, 32});
  f32("blk.0.ffn_gate.weight", {32, 64});
  f32("blk.0.ffn_up.weight", {32, 64});
  f32("blk.0.ffn_down.weight", {64, 32});
  std::string path = Tmp(leaf + ".gguf");
  WriteFile(path, w.Build());
  return path;
}

StatusResult OpenModel(const std::string &path) {
  atlas_model_spec spec{};
  spec.dir = path.c_str();
  spec.backend = "host";
  spec.max_seq = 16;
  atlas_model *m = nullptr;
  StatusResult r = Take(atlas_model_open(&spec, &m));
  if (m != nullptr) EXPECT_OK(atlas_model_close(m, nullptr));
  return r;
}

TEST(GgufRunRefusals, TheMinimalFileOpens) {
  StatusResult r = OpenModel(Minimal("minimal", [](Writer &) {}));
  EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
}

TEST(GgufRunRefusals, EachIsNamed) {
  struct Case {
    const char *leaf;
    std::function<void(Writer &)> edit;
    uint32_t q_type;
    const char *names;
    const char *arch = "llama";
  };
  const Case cases[] = {
      {"unknown_key",
       [](Writer &w) { w.KvU32("llama.attention.clamp_kqv", 8); }, 0,
       "\"llama.attention.clamp_kqv\" is a hyperparameter"},
      {"rope_type",
       [](Writer &w) { w.KvString("llama.rope.scaling.type", "longrope"); }, 0,
       "llama.rope.scaling.type is \"longrope\""},
      {"rope_dims", [](Writer &w) { w.KvU32("llama.rope.dimension_count", 4); },
       0, "\"llama.rope.dimension_count\" is not the head dimension"},
      {"experts", [](Writer &w) { w.KvU32("llama.expert_count", 8); }, 0,
       "\"llama.expert_count\" is set"},
      {"split", [](Writer &w) { w.KvU32("split.count", 2); }, 0,
       "\"split.count\" is more than 1"},
      {"arch", [](Writer &) {}, 0, "general.architecture \"phi3\"", "phi3"},
      {"rope_freqs",
       [](Writer &w) {
         w.Tensor("rope_freqs.weight", {4}, 0, std::string(16, '\0'));
       },
       0, "rope_freqs.weight holds a factor below 1"},
      {"rope_freqs_fit",
       [](Writer &w) {
         const float f[4] = {1, 3, 2, 8};  // no llama3 ramp gives these
         w.Tensor("rope_freqs.weight", {4}, 0,
                  std::string((const char *)f, 16));
       },
       0, "rope_freqs.weight is not llama3 rope scaling"},
      {"q4_1", [](Writer &) {}, 3, "\"blk.0.attn_q.weight\" has type Q4_1"},
      {"q8_0_bias",
       [](Writer &w) {
         w.Tensor("blk.0.attn_q.bias", {32}, 8, std::string(34, '\0'));
       },
       0, "\"blk.0.attn_q.bias\" is a Q8_0 bias"},
      {"mixed", [](Writer &) {}, 8,
       "self_attn.k_proj.weight\" is F32 while the file's other projections "
       "are GGUF blocks"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.leaf);
    StatusResult r = OpenModel(Minimal(c.leaf, c.edit, c.q_type, c.arch));
    EXPECT_NE(r.code, ATLAS_STATUS_OK);
    EXPECT_NE(r.message.find(c.names), std::string::npos) << r.message;
  }
}

}  // namespace
