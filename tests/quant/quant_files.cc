// Quantized layers written to checkpoint files (quant_files.h).
#include "tests/quant/quant_files.h"

#include <stdlib.h>
#include <string.h>

#include <random>

#include <gtest/gtest.h>

#include "atlas/kernels/quant_decode.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "tests/runtime/test_util.h"

namespace quant_files {

using quant_ref::Format;
using quant_ref::QuantMatrix;
using quant_ref::ScaleType;
using quant_ref::Stored;

const char kModule[] = "model.layers.0.mlp.down_proj";

static atlas_dtype ScaleDtype(ScaleType t) {
  return t == ScaleType::kF32   ? ATLAS_DTYPE_F32
         : t == ScaleType::kF16 ? ATLAS_DTYPE_F16
                                : ATLAS_DTYPE_BF16;
}

// The tensors a checkpoint of `method` stores for `m` (via the packer).
std::vector<Tensor> Layer(atlas_quant_method method, const QuantMatrix &m,
                          const char *module) {
  Stored s = quant_ref::Pack(m);
  const std::string p = std::string(module) + ".";
  const int64_t rows = m.rows, cols = m.cols, ppw = 32 / m.bits;
  const int64_t groups = m.Groups();
  std::vector<Tensor> t;
  atlas_dtype sd = ScaleDtype(m.scale_type);
  if (m.format == Format::kFp8) {
    t.push_back({p + "weight", ATLAS_DTYPE_F8_E4M3, {rows, cols}, s.w});
    const bool ct = method == ATLAS_QUANT_COMPRESSED_TENSORS;
    std::vector<int64_t> sshape = {(int64_t)m.ScaleRows(), groups};
    if (ct && m.block_n == 0) sshape = {1};
    t.push_back(
        {p + (ct ? "weight_scale" : "weight_scale_inv"), sd, sshape, s.scales});
  } else if (m.format == Format::kIntRows) {
    t.push_back({p + "weight_packed",
                 ATLAS_DTYPE_I32,
                 {rows, (cols + ppw - 1) / ppw},
                 s.w});
    t.push_back({p + "weight_scale", sd, {rows, groups}, s.scales});
    if (m.zeros) {
      t.push_back({p + "weight_zero_point",
                   ATLAS_DTYPE_I32,
                   {(rows + ppw - 1) / ppw, groups},
                   s.zeros});
    }
    std::vector<uint8_t> shape(16);
    int64_t dims[2] = {rows, cols};
    memcpy(shape.data(), dims, 16);
    t.push_back({p + "weight_shape", ATLAS_DTYPE_I64, {2}, shape});
  } else {
    const bool gptq = m.format == Format::kGptq;
    t.push_back({p + "qweight", ATLAS_DTYPE_I32,
                 gptq ? std::vector<int64_t>{cols / ppw, rows}
                      : std::vector<int64_t>{cols, rows / 8},
                 s.w});
    t.push_back({p + "qzeros",
                 ATLAS_DTYPE_I32,
                 {groups, gptq ? (rows + ppw - 1) / ppw : rows / 8},
                 s.zeros});
    t.push_back({p + "scales", sd, {groups, rows}, s.scales});
  }
  if (!s.g_idx.empty()) {
    std::vector<uint8_t> g(s.g_idx.size() * 4);
    memcpy(g.data(), s.g_idx.data(), g.size());
    t.push_back({p + (m.format == Format::kIntRows ? "weight_g_idx" : "g_idx"),
                 ATLAS_DTYPE_I32,
                 {cols},
                 g});
  }
  return t;
}

std::string Write(const std::string &leaf, const std::vector<Tensor> &ts) {
  const char *tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + leaf;
  EXPECT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::vector<atlas_safetensors_write_tensor> w(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    w[i].name = ts[i].name.c_str();
    w[i].dtype = ts[i].dtype;
    w[i].rank = (int)ts[i].shape.size();
    for (size_t d = 0; d < ts[i].shape.size(); ++d) {
      w[i].shape[d] = ts[i].shape[d];
    }
    w[i].data = ts[i].bytes.data();
  }
  std::string path = dir + "/model.safetensors";
  EXPECT_OK(
      atlas_safetensors_write(path.c_str(), w.data(), w.size(), nullptr, 0));
  return dir;
}

atlas_quant_config Config(atlas_quant_method method, const QuantMatrix &m) {
  atlas_quant_config c{};
  c.method = method;
  c.bits = m.bits;
  c.group_k = m.group_k;
  c.block_n = m.format == Format::kFp8 ? m.block_n : 1;
  c.zeros = m.zeros;
  c.zero_offset = m.zero_offset;
  c.g_idx = m.use_g_idx;
  c.layout = m.format == Format::kFp8       ? ATLAS_QUANT_LAYOUT_FP8
             : m.format == Format::kIntRows ? ATLAS_QUANT_LAYOUT_INT_ROWS
             : m.format == Format::kGptq    ? ATLAS_QUANT_LAYOUT_GPTQ
                                            : ATLAS_QUANT_LAYOUT_AWQ;
  return c;
}

std::vector<Case> Cases() {
  std::mt19937 rng(21);
  std::vector<Case> c;
  QuantMatrix m = quant_ref::Random(Format::kFp8, 200, 260, 8, 128, false,
                                    ScaleType::kF32, rng);
  m.block_n = 128;
  m.scale32.resize((size_t)m.ScaleRows() * m.Groups());
  c.push_back({ATLAS_QUANT_FP8, m});
  m = quant_ref::Random(Format::kFp8, 64, 96, 8, 0, false, ScaleType::kF32,
                        rng);
  m.block_n = 0;
  m.scale32.resize(1);
  c.push_back({ATLAS_QUANT_COMPRESSED_TENSORS, m});
  m = quant_ref::Random(Format::kFp8, 64, 96, 8, 0, false, ScaleType::kBf16,
                        rng);
  c.push_back({ATLAS_QUANT_COMPRESSED_TENSORS, m});  // channel
  for (bool zeros : {false, true}) {
    c.push_back({ATLAS_QUANT_COMPRESSED_TENSORS,
                 quant_ref::Random(Format::kIntRows, 72, 260, 4, 64, zeros,
                                   ScaleType::kBf16, rng)});
  }
  m = quant_ref::Random(Format::kIntRows, 40, 256, 8, 32, true, ScaleType::kF16,
                        rng);
  quant_ref::UsePermutedGroups(m, rng);
  c.push_back({ATLAS_QUANT_COMPRESSED_TENSORS, m});
  m = quant_ref::Random(Format::kGptq, 68, 256, 4, 128, true, ScaleType::kF16,
                        rng);
  quant_ref::UseZeroOffset(m, 1);
  quant_ref::UsePermutedGroups(m, rng);
  c.push_back({ATLAS_QUANT_GPTQ, m});
  c.push_back({ATLAS_QUANT_AWQ, quant_ref::Random(Format::kAwq, 96, 384, 4, 128,
                                                  true, ScaleType::kF16, rng)});
  return c;
}

}  // namespace quant_files
