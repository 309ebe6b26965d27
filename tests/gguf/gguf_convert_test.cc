// GGUF to an ordinary checkpoint (tools/checkpoint/gguf_convert.h): a llama
// file whose tensors are of every type Atlas reads (blocks packed by the
// tests' own gguf_blocks_reference, q and k rows permuted as llama.cpp's
// converter does) becomes config.json and F32 tensors with transformers
// names, every value the reference's, q and k rows back in order; the
// directory opens as an Atlas model.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/gguf_model.h"
#include "atlas/runtime/formats/safetensors_convert.h"
#include "atlas/runtime/model/model.h"
#include "atlas/tools/checkpoint/gguf_convert.h"
#include "tests/gguf/gguf_writer.h"
#include "tests/quant/gguf_blocks_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using gguf_test::Writer;

constexpr uint32_t kHidden = 256, kHeads = 8, kKv = 2, kHeadDim = 32,
                   kVocab = 16, kFfn = 256;

struct Want {
  uint32_t rows, cols;
  std::vector<float> value;  // GGUF row order
  bool permuted;
};

// A plain tensor (F32, F16 or BF16) of random values: its bytes and values.
std::string Plain(uint32_t type, uint32_t n, std::mt19937 &rng,
                  std::vector<float> *value) {
  std::uniform_real_distribution<float> d(-1, 1);
  std::string bytes;
  for (uint32_t i = 0; i < n; ++i) {
    float v = d(rng);
    if (type == 0) {
      bytes.append((const char *)&v, 4);
    } else {
      uint16_t h = type == 1 ? atlas_f32_to_f16(v) : atlas_f32_to_bf16(v);
      v = type == 1 ? atlas_f16_to_f32(h) : atlas_bf16_to_f32(h);
      bytes.append((const char *)&h, 2);
    }
    value->push_back(v);
  }
  return bytes;
}

TEST(GgufConvert, EveryTypeAndTheQkRows) {
  std::mt19937 rng(52);
  Writer w;
  w.KvString("general.architecture", "llama");
  w.KvU32("llama.context_length", 128);
  w.KvU32("llama.embedding_length", kHidden);
  w.KvU32("llama.block_count", 1);
  w.KvU32("llama.feed_forward_length", kFfn);
  w.KvU32("llama.attention.head_count", kHeads);
  w.KvU32("llama.attention.head_count_kv", kKv);
  w.KvF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.KvStrings("tokenizer.ggml.tokens", std::vector<std::string>(kVocab, "t"));
  std::map<std::string, Want> want;
  auto quant = [&](const std::string &name, gguf_ref::Type t, uint32_t rows,
                   uint32_t cols, uint32_t type_id) {
    gguf_ref::Matrix m = gguf_ref::Random(t, rows, cols, rng);
    w.Tensor(name, {cols, rows}, type_id,
             std::string(m.bytes.begin(), m.bytes.end()));
    want[name] = {rows, cols, m.value,
                  atlas_gguf_is_permuted("llama", name.c_str()) != 0};
  };
  auto plain = [&](const std::string &name, uint32_t type_id, uint32_t rows,
                   uint32_t cols) {
    std::vector<float> v;
    std::string bytes = Plain(type_id, rows * cols, rng, &v);
    if (rows == 1) {
      w.Tensor(name, {cols}, type_id, bytes);
    } else {
      w.Tensor(name, {cols, rows}, type_id, bytes);
    }
    want[name] = {rows, cols, v, false};
  };
  plain("token_embd.weight", 0, kVocab, kHidden);
  plain("output_norm.weight", 0, 1, kHidden);
  quant("output.weight", gguf_ref::Type::kQ8_0, kVocab, kHidden, 8);
  plain("blk.0.attn_norm.weight", 0, 1, kHidden);
  plain("blk.0.ffn_norm.weight", 0, 1, kHidden);
  quant("blk.0.attn_q.weight", gguf_ref::Type::kQ8_0, kHeads * kHeadDim,
        kHidden, 8);
  quant("blk.0.attn_k.weight", gguf_ref::Type::kQ4_K, kKv * kHeadDim, kHidden,
        12);
  quant("blk.0.attn_v.weight", gguf_ref::Type::kQ6_K, kKv * kHeadDim, kHidden,
        14);
  quant("blk.0.attn_output.weight", gguf_ref::Type::kQ5_K, kHidden,
        kHeads * kHeadDim, 13);
  quant("blk.0.ffn_gate.weight", gguf_ref::Type::kQ4_0, kFfn, kHidden, 2);
  plain("blk.0.ffn_up.weight", 1, kFfn, kHidden);
  plain("blk.0.ffn_down.weight", 30, kHidden, kFfn);

  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/converted";
  mkdir(dir.c_str(), 0755);
  std::string bytes = w.Build(), path = dir + "/../model.gguf";
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
  ASSERT_OK(atlas_gguf_convert(path.c_str(), dir.c_str()));

  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open(dir.c_str(), &ck));
  EXPECT_EQ(atlas_checkpoint_tensor_count(ck), want.size());
  for (const auto &[gguf_name, wt] : want) {
    char hf[256];
    ASSERT_OK(atlas_gguf_hf_name(gguf_name.c_str(), hf, sizeof(hf)));
    atlas_checkpoint_tensor t;
    ASSERT_TRUE(atlas_checkpoint_lookup(ck, hf, &t)) << hf;
    ASSERT_EQ(t.tensor->elements, (uint64_t)wt.rows * wt.cols) << hf;
    if (wt.rows > 1) {
      EXPECT_EQ(t.tensor->shape[0], wt.rows) << hf;
      EXPECT_EQ(t.tensor->shape[1], wt.cols) << hf;
    }
    std::vector<float> got(t.tensor->elements);
    ASSERT_OK(
        atlas_safetensors_tensor_to_f32(t.tensor, 0, got.size(), got.data()));
    for (uint32_t r = 0; r < wt.rows; ++r) {
      // The converter interleaved each head's halves: HF row r was GGUF
      // row h*hd + 2j + t for r = h*hd + t*hd/2 + j.
      uint32_t h = r / kHeadDim, i = r % kHeadDim;
      uint32_t src = wt.permuted ? h * kHeadDim + 2 * (i % (kHeadDim / 2)) +
                                       i / (kHeadDim / 2)
                                 : r;
      for (uint32_t k = 0; k < wt.cols; ++k) {
        ASSERT_EQ(got[(size_t)r * wt.cols + k],
                  wt.value[(size_t)src * wt.cols + k])
            << hf << " row " << r << " col " << k;
      }
    }
  }
  atlas_checkpoint_close(ck);

  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = 16;
  atlas_model *m = nullptr;
  ASSERT_OK(atlas_model_open(&spec, &m));
  EXPECT_OK(atlas_model_close(m, nullptr));
}

TEST(GgufConvert, UnreadTypesAreRefusedByName) {
  Writer w;
  w.KvString("general.architecture", "qwen2");
  w.KvU32("qwen2.context_length", 128);
  w.KvU32("qwen2.embedding_length", 32);
  w.KvU32("qwen2.block_count", 1);
  w.KvU32("qwen2.feed_forward_length", 64);
  w.KvU32("qwen2.attention.head_count", 4);
  w.KvU32("qwen2.vocab_size", 8);
  w.Tensor("token_embd.weight", {32, 8}, 3, std::string(8 * 20, '\0'));
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/q41";
  mkdir(dir.c_str(), 0755);
  std::string bytes = w.Build(), path = dir + "/../q41.gguf";
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
  EXPECT_STATUS(atlas_gguf_convert(path.c_str(), dir.c_str()),
                ATLAS_STATUS_UNIMPLEMENTED,
                "\"token_embd.weight\" has type Q4_1");
}

}  // namespace
