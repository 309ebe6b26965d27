// A quantized layer read from a checkpoint file (runtime/quant/
// quant_tensors.h): files written with the tests' own packer
// (quant_reference.h) in every format, opened with
// ATLAS_SAFETENSORS_QUANTIZED, found and checked, then multiplied by the
// host kernel straight from the tensors the lookup returned: equal, bit for
// bit, to the reference dequantizer's product. Malformed layers are refused
// naming the tensor; without the flag, the old refusal of I32 stands.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/quant_kernels.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/safetensors.h"
#include "atlas/runtime/quant/quant_tensors.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "tests/quant/quant_files.h"
#include "tests/quant/quant_reference.h"
#include "tests/runtime/test_util.h"

namespace {

using quant_files::Case;
using quant_files::Cases;
using quant_files::Config;
using quant_files::kModule;
using quant_files::Layer;
using quant_files::Tensor;
using quant_files::Write;
using quant_ref::Format;
using quant_ref::QuantMatrix;
using quant_ref::ScaleType;
using quant_ref::Stored;

// The tensor's bytes, read from its file.
std::vector<uint8_t> Read(const atlas_checkpoint_tensor &t) {
  std::vector<uint8_t> v(t.tensor ? t.tensor->bytes : 0);
  if (t.tensor)
    EXPECT_OK(atlas_safetensors_read(t.tensor, 0, v.size(), v.data()));
  return v;
}

// Host quant_matvec over what the lookup found.
std::vector<float> Product(const atlas_quant_matrix &qm,
                           const std::vector<float> &x) {
  const atlas_module_def *mods[1] = {&atlas_quant_module};
  atlas_module_set set{mods, 1};
  atlas_backend_options o{};
  o.modules = &set;
  atlas_backend *b = nullptr;
  EXPECT_OK(atlas_host_backend_create(&o, &b));
  std::vector<uint8_t> w = Read(qm.w), s = Read(qm.scales), z = Read(qm.zeros),
                       g = Read(qm.g_idx);
  std::vector<float> out(qm.rows, NAN);
  const atlas_kernel *k = nullptr;
  EXPECT_OK(atlas_backend_kernel_lookup(b, ATLAS_QUANT_MODULE,
                                        ATLAS_QUANT_MATVEC_KERNEL, &k));
  atlas_launch_config c{};
  c.grid = {1, 1, 1};
  c.block = {ATLAS_QUANT_MATVEC_BLOCK, 1, 1};
  std::vector<atlas_arg> args = {ATLAS_ARG_PTR(out.data()),
                                 ATLAS_ARG_PTR(x.data()),
                                 ATLAS_ARG_PTR(w.data()),
                                 ATLAS_ARG_PTR(s.data()),
                                 ATLAS_ARG_PTR(z.empty() ? nullptr : z.data()),
                                 ATLAS_ARG_PTR(g.empty() ? nullptr : g.data())};
  for (uint32_t v : {qm.rows, qm.cols, qm.layout, qm.bits, qm.group_k,
                     qm.block_n, qm.flags, 0u}) {
    args.push_back(ATLAS_ARG_U32(v));
  }
  if (k != nullptr) {
    EXPECT_OK(atlas_backend_launch_typed(b, k, &c, args.data(), args.size()));
  }
  EXPECT_OK(atlas_backend_destroy(b));
  return out;
}

TEST(QuantTensors, EveryFormatFromAFileMultipliesAsTheReference) {
  std::mt19937 rng(3);
  int n = 0;
  for (const Case &cs : Cases()) {
    const QuantMatrix &m = cs.m;
    std::vector<Tensor> layer = Layer(cs.method, m);
    std::string dir = Write("ok" + std::to_string(n++), layer);
    atlas_checkpoint *ck = nullptr;
    ASSERT_OK(atlas_checkpoint_open_with(dir.c_str(),
                                         ATLAS_SAFETENSORS_QUANTIZED, &ck));
    atlas_quant_config c = Config(cs.method, m);
    atlas_quant_matrix qm{};
    StatusResult r =
        Take(atlas_quant_matrix_find(&c, ck, kModule, m.rows, m.cols, &qm));
    ASSERT_EQ(r.code, ATLAS_STATUS_OK)
        << quant_ref::Describe(m) << ": " << r.message;
    uint64_t bytes = 0;
    for (const Tensor &t : layer) {
      if (t.name.find("weight_shape") == std::string::npos) {
        bytes += t.bytes.size();
      }
    }
    EXPECT_EQ(qm.bytes, bytes) << quant_ref::Describe(m);
    std::vector<float> x(m.cols);
    std::uniform_real_distribution<float> d(-1, 1);
    for (float &v : x) v = d(rng);
    std::vector<float> got = Product(qm, x);
    std::vector<float> w = quant_ref::Dequantize(m);
    for (uint32_t row = 0; row < m.rows; ++row) {
      float want = 0.0f;
      for (uint32_t k = 0; k < m.cols; ++k) {
        want += w[(size_t)row * m.cols + k] * x[k];
      }
      ASSERT_EQ(got[row], want) << quant_ref::Describe(m) << " row " << row;
    }
    atlas_checkpoint_close(ck);
  }
}

// Opens a file of `layer` after `edit` and expects the lookup to fail
// naming `needle`.
void ExpectRefused(const Case &cs, const std::string &leaf,
                   void (*edit)(std::vector<Tensor> &),
                   const std::string &needle) {
  std::vector<Tensor> layer = Layer(cs.method, cs.m);
  edit(layer);
  std::string dir = Write(leaf, layer);
  atlas_checkpoint *ck = nullptr;
  ASSERT_OK(atlas_checkpoint_open_with(dir.c_str(), ATLAS_SAFETENSORS_QUANTIZED,
                                       &ck));
  atlas_quant_config c = Config(cs.method, cs.m);
  atlas_quant_matrix qm{};
  StatusResult r =
      Take(atlas_quant_matrix_find(&c, ck, kModule, cs.m.rows, cs.m.cols, &qm));
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS) << leaf;
  EXPECT_NE(r.message.find(needle), std::string::npos)
      << leaf << ": " << r.message;
  EXPECT_NE(r.message.find(kModule), std::string::npos) << r.message;
  atlas_checkpoint_close(ck);
}

Tensor *Named(std::vector<Tensor> &ts, const char *suffix) {
  for (Tensor &t : ts) {
    if (t.name.size() >= strlen(suffix) &&
        t.name.compare(t.name.size() - strlen(suffix), strlen(suffix),
                       suffix) == 0) {
      return &t;
    }
  }
  return nullptr;
}

TEST(QuantTensors, MalformedLayersAreRefusedNamingTheTensor) {
  std::vector<Case> cases = Cases();
  const Case &fp8 = cases[0], &ct4 = cases[4], &ct8 = cases[5],
             &gptq = cases[6], &awq = cases[7];
  ExpectRefused(
      fp8, "no_scale", [](std::vector<Tensor> &t) { t.pop_back(); },
      "weight_scale_inv\" is missing");
  ExpectRefused(
      fp8, "f16_weight",
      [](std::vector<Tensor> &t) {
        Tensor *w = Named(t, ".weight");
        w->dtype = ATLAS_DTYPE_F16;
        w->shape[1] /= 2;
      },
      "is F16, not F8_E4M3");
  ExpectRefused(
      ct4, "scale_shape",
      [](std::vector<Tensor> &t) {
        Tensor *s = Named(t, "weight_scale");
        s->shape = {s->shape[1], s->shape[0]};
      },
      "weight_scale\" has shape");
  ExpectRefused(
      ct4, "weight_shape",
      [](std::vector<Tensor> &t) {
        Tensor *s = Named(t, "weight_shape");
        int64_t dims[2] = {72, 264};
        memcpy(s->bytes.data(), dims, 16);
      },
      "weight_shape\" says [72, 264], not [72, 260]");
  ExpectRefused(
      ct4, "packed_i64",
      [](std::vector<Tensor> &t) {
        Tensor *s = Named(t, "weight_packed");
        s->dtype = ATLAS_DTYPE_I64;
        s->shape[1] /= 2;
      },
      "weight_packed\" is I64, not I32");
  ExpectRefused(
      ct8, "g_idx_range",
      [](std::vector<Tensor> &t) {
        Tensor *g = Named(t, "weight_g_idx");
        int32_t bad = 8;  // 256 / 32 groups: 0 .. 7
        memcpy(g->bytes.data() + 4 * 5, &bad, 4);
      },
      "gives column 5 group 8 (there are 8)");
  ExpectRefused(
      gptq, "no_g_idx", [](std::vector<Tensor> &t) { t.pop_back(); },
      "g_idx\" is missing");
  ExpectRefused(
      gptq, "qzeros_shape",
      [](std::vector<Tensor> &t) {
        Named(t, "qzeros")->shape[0] += 1;
        Named(t, "qzeros")->bytes.resize(Named(t, "qzeros")->bytes.size() + 36);
      },
      "qzeros\" has shape");
  ExpectRefused(
      awq, "no_zeros", [](std::vector<Tensor> &t) { t.erase(t.begin() + 1); },
      "qzeros\" is missing");
}

TEST(QuantTensors, WithoutTheFlagQuantizedDtypesAreRefusedAsBefore) {
  std::vector<Case> cases = Cases();
  std::string dir = Write("no_flag", Layer(ATLAS_QUANT_GPTQ, cases[6].m));
  atlas_checkpoint *ck = nullptr;
  EXPECT_STATUS(atlas_checkpoint_open(dir.c_str(), &ck),
                ATLAS_STATUS_UNIMPLEMENTED,
                "is not supported (supported: F32, F16, BF16)");
  EXPECT_EQ(ck, nullptr);
}

TEST(QuantTensors, KeptModules) {
  atlas_quant_config c{};
  char lm[] = "lm_head", re[] = "re:.*mlp\\.gate$";
  char *keep[] = {lm, re};
  c.keep = keep;
  c.keep_count = 2;
  c.method = ATLAS_QUANT_COMPRESSED_TENSORS;
  bool kept = false;
  ASSERT_OK(atlas_quant_module_kept(&c, "lm_head", &kept));
  EXPECT_TRUE(kept);
  ASSERT_OK(atlas_quant_module_kept(&c, "model.layers.3.mlp.gate", &kept));
  EXPECT_TRUE(kept);
  ASSERT_OK(atlas_quant_module_kept(&c, "model.layers.3.mlp.gate_proj", &kept));
  EXPECT_FALSE(kept);
  ASSERT_OK(atlas_quant_module_kept(&c, "model.lm_head.x", &kept));
  EXPECT_FALSE(kept);          // compressed-tensors: exact names
  c.method = ATLAS_QUANT_FP8;  // transformers: the name holds the entry
  c.keep_count = 1;
  ASSERT_OK(atlas_quant_module_kept(&c, "model.lm_head.x", &kept));
  EXPECT_TRUE(kept);
  char bad[] = "re:(";
  char *bad_keep[] = {bad};
  c.keep = bad_keep;
  c.method = ATLAS_QUANT_COMPRESSED_TENSORS;
  EXPECT_STATUS(atlas_quant_module_kept(&c, "x", &kept),
                ATLAS_STATUS_INVALID_ARGUMENT, "not a regular expression");
}

}  // namespace
