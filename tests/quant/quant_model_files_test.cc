// Whole quantized models written by the tests' quantizer
// (quant_model_writer.h), one per scheme issue 52 names, each with its
// dequantized F32 twin: config.json's quantization_config reads back as the
// scheme; every linear layer of the quantized checkpoint is found and its
// product on the host equals the twin's weights times the same vector, bit
// for bit; the quantization stays near the original weights; both open as
// models (the quantized one through the decoder's quantized products), and
// quant_decoder_parity_test compares the logits of each pair.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "atlas/kernels/quant_kernels.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/safetensors_convert.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/quant/quant_linear.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "tests/quant/quant_model_writer.h"
#include "tests/runtime/test_util.h"

namespace {

std::string Tmp(const std::string &leaf) {
  const char *t = getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + leaf;
}

std::string TinyF32() {
  std::string dir = Tmp("tiny_f32");
  atlas_make_checkpoint_options o{};
  o.out_dir = dir.c_str();
  o.seed = 52;
  atlas_status_free(atlas_make_checkpoint_preset("tiny", &o.config));
  o.dtype = ATLAS_DTYPE_F32;
  o.shards = 1;
  EXPECT_OK(atlas_make_checkpoint_write(&o));
  return dir;
}

std::vector<float> ReadF32(const atlas_checkpoint *ck, const std::string &name,
                           int64_t *rows, int64_t *cols) {
  atlas_checkpoint_tensor t;
  EXPECT_TRUE(atlas_checkpoint_lookup(ck, name.c_str(), &t)) << name;
  std::vector<float> v(t.tensor ? t.tensor->elements : 0);
  if (t.tensor == nullptr) return v;
  EXPECT_OK(atlas_safetensors_tensor_to_f32(t.tensor, 0, v.size(), v.data()));
  *rows = t.tensor->shape[0];
  *cols = t.tensor->rank > 1 ? t.tensor->shape[1] : 1;
  return v;
}

atlas_status OpenModel(const std::string &dir) {
  atlas_model_spec spec{};
  spec.dir = dir.c_str();
  spec.backend = "host";
  spec.max_seq = 16;
  atlas_model *m = nullptr;
  atlas_status s = atlas_model_open(&spec, &m);
  if (m != nullptr) EXPECT_OK(atlas_model_close(m, nullptr));
  return s;
}

TEST(QuantModelFiles, EverySchemeWritesAModelAndItsTwin) {
  const std::string src = TinyF32();
  atlas_checkpoint *orig = nullptr;
  ASSERT_OK(atlas_checkpoint_open(src.c_str(), &orig));
  const atlas_module_def *mods[1] = {&atlas_quant_module};
  atlas_module_set set{mods, 1};
  atlas_backend_options bo{};
  bo.modules = &set;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&bo, &b));
  atlas_quant_kernels k;
  ASSERT_OK(atlas_quant_kernels_resolve(b, &k));
  std::mt19937 rng(9);
  for (const quant_writer::Scheme &s : quant_writer::AllSchemes()) {
    SCOPED_TRACE(s.Name());
    const std::string qdir = Tmp(s.Name()), tdir = Tmp(s.Name() + "_twin");
    std::string error;
    ASSERT_TRUE(quant_writer::Write(s, src, qdir, tdir, &error)) << error;
    // The config reads back as the scheme.
    char *text = nullptr;
    size_t len = 0;
    ASSERT_OK(atlas_file_read_small((qdir + "/config.json").c_str(),
                                    "config.json", 1 << 20, &text, &len));
    atlas_quant_config c{};
    ASSERT_OK(atlas_quant_config_parse(text, len, "config.json", &c));
    free(text);
    EXPECT_EQ(c.method, s.method);
    char what[128];
    atlas_quant_config_describe(&c, what, sizeof(what));
    printf("%-44s %s\n", s.Name().c_str(), what);

    atlas_checkpoint *qck = nullptr, *tck = nullptr;
    ASSERT_OK(atlas_checkpoint_open_with(qdir.c_str(),
                                         ATLAS_SAFETENSORS_QUANTIZED, &qck));
    ASSERT_OK(atlas_checkpoint_open(tdir.c_str(), &tck));
    int layers = 0;
    double worst_rel = 0;
    for (size_t i = 0; i < atlas_checkpoint_tensor_count(tck); ++i) {
      atlas_checkpoint_tensor t;
      ASSERT_TRUE(atlas_checkpoint_tensor_at(tck, i, &t));
      std::string name = t.tensor->name;
      if (name.size() < 12 ||
          name.compare(name.size() - 12, 12, "_proj.weight") != 0) {
        continue;
      }
      const std::string module = name.substr(0, name.size() - 7);
      int64_t rows = 0, cols = 0;
      std::vector<float> tw = ReadF32(tck, name, &rows, &cols);
      std::vector<float> ow = ReadF32(orig, name, &rows, &cols);
      atlas_quant_matrix qm{};
      ASSERT_OK(atlas_quant_matrix_find(&c, qck, module.c_str(), (uint32_t)rows,
                                        (uint32_t)cols, &qm));
      atlas_quant_linear l{};
      atlas_upload_job jobs[4];
      size_t n = 0;
      ASSERT_OK(atlas_quant_linear_alloc(b, &qm, &l, jobs, &n));
      ASSERT_OK(atlas_upload_run(b, jobs, n, nullptr));
      std::vector<float> x(cols), out(rows, NAN);
      std::uniform_real_distribution<float> d(-1, 1);
      for (float &v : x) v = d(rng);
      ASSERT_OK(atlas_quant_linear_matvec(b, &k, nullptr, &l, x.data(),
                                          out.data(), false));
      double diff = 0, ref = 0;
      for (int64_t r = 0; r < rows; ++r) {
        float want = 0.0f;
        for (int64_t kk = 0; kk < cols; ++kk) {
          want += tw[r * cols + kk] * x[kk];
          double e = (double)tw[r * cols + kk] - ow[r * cols + kk];
          diff += e * e;
          ref += (double)ow[r * cols + kk] * ow[r * cols + kk];
        }
        ASSERT_EQ(out[r], want) << module << " row " << r;
      }
      worst_rel = fmax(worst_rel, sqrt(diff / ref));
      ASSERT_OK(atlas_quant_linear_free(b, &l));
      ++layers;
    }
    EXPECT_EQ(layers, 2 * 7);  // tiny: 2 layers of q, k, v, o, gate, up, down
    // 4 bits: about 1/15 of a group's range; 8 bits and FP8 much less.
    EXPECT_LT(worst_rel, s.bits == 4 ? 0.2 : 0.05);
    printf("%-44s weights within %.3g (relative L2) of the original\n",
           s.Name().c_str(), worst_rel);
    atlas_checkpoint_close(qck);
    atlas_checkpoint_close(tck);
    atlas_quant_config_free(&c);
    EXPECT_OK(OpenModel(tdir));
    EXPECT_OK(OpenModel(qdir));
  }
  EXPECT_OK(atlas_backend_destroy(b));
  atlas_checkpoint_close(orig);
}

}  // namespace
