// The tests' quantizer and whole-model writer (quant_model_writer.h).
#include "tests/quant/quant_model_writer.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <sstream>

#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/formats/safetensors.h"
#include "atlas/runtime/formats/safetensors_convert.h"
#include "atlas/tools/checkpoint/make_checkpoint_lib.h"
#include "atlas/tools/checkpoint/safetensors_write.h"
#include "tests/quant/quant_files.h"

namespace quant_writer {

using quant_ref::Format;
using quant_ref::QuantMatrix;
using quant_ref::ScaleType;

std::string Scheme::Name() const {
  std::ostringstream o;
  o << atlas_quant_method_name(method) << "_";
  if (format == Format::kFp8) {
    o << "fp8_"
      << (block_n == 0 && group_k == 0 ? std::string("tensor")
          : group_k == 0               ? std::string("channel")
                         : "block" + std::to_string(block_n) + "x" +
                               std::to_string(group_k));
  } else {
    o << "int" << bits << "_"
      << (group_k ? "g" + std::to_string(group_k) : std::string("channel"))
      << (asymmetric ? "_asym" : "_sym") << (desc_act ? "_actorder" : "");
  }
  return o.str();
}

std::string Scheme::ConfigJson() const {
  std::ostringstream o;
  switch (method) {
    case ATLAS_QUANT_FP8:
      o << R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": )"
        << R"("dynamic", "weight_block_size": [)" << block_n << ", " << group_k
        << "]}";
      break;
    case ATLAS_QUANT_GPTQ:
      o << R"({"quant_method": "gptq", "bits": )" << bits
        << R"(, "group_size": )" << (group_k ? (int)group_k : -1)
        << R"(, "desc_act": )" << (desc_act ? "true" : "false")
        << R"(, "sym": )" << (asymmetric ? "false" : "true")
        << R"(, "checkpoint_format": "gptq"})";
      break;
    case ATLAS_QUANT_AWQ:
      o << R"({"quant_method": "awq", "bits": 4, "group_size": )" << group_k
        << R"(, "zero_point": true, "version": "gemm"})";
      break;
    default: {
      const bool fp8 = format == Format::kFp8;
      std::string strategy = fp8 ? (block_n == 0   ? "tensor"
                                    : group_k == 0 ? "channel"
                                                   : "block")
                                 : (group_k ? "group" : "channel");
      o << R"({"quant_method": "compressed-tensors", "format": ")"
        << (fp8 ? "float-quantized" : "pack-quantized")
        << R"(", "quantization_status": "compressed", "ignore": ["lm_head"],)"
        << R"( "config_groups": {"group_0": {"targets": ["Linear"],)"
        << R"( "input_activations": null, "weights": {"num_bits": )" << bits
        << R"(, "type": ")" << (fp8 ? "float" : "int") << R"(", "symmetric": )"
        << (asymmetric ? "false" : "true") << R"(, "strategy": ")" << strategy
        << "\"";
      if (!fp8 && group_k) o << R"(, "group_size": )" << group_k;
      if (fp8 && strategy == "block") {
        o << R"(, "block_structure": [)" << block_n << ", " << group_k << "]";
      }
      if (desc_act) o << R"(, "actorder": "group")";
      o << R"(, "dynamic": false}}}})";
    }
  }
  return o.str();
}

std::vector<Scheme> AllSchemes() {
  std::vector<Scheme> v;
  auto add = [&](atlas_quant_method m, Format f, uint32_t bits, uint32_t g,
                 uint32_t bn, bool asym, bool act, ScaleType st) {
    Scheme s;
    s.method = m, s.format = f, s.bits = bits, s.group_k = g, s.block_n = bn;
    s.asymmetric = asym, s.desc_act = act, s.scale_type = st;
    v.push_back(s);
  };
  const auto CT = ATLAS_QUANT_COMPRESSED_TENSORS;
  add(ATLAS_QUANT_FP8, Format::kFp8, 8, 16, 16, false, false, ScaleType::kF32);
  add(CT, Format::kFp8, 8, 0, 0, false, false, ScaleType::kF32);     // tensor
  add(CT, Format::kFp8, 8, 0, 1, false, false, ScaleType::kBf16);    // channel
  add(CT, Format::kFp8, 8, 16, 16, false, false, ScaleType::kBf16);  // block
  add(CT, Format::kIntRows, 4, 32, 1, false, false, ScaleType::kBf16);
  add(CT, Format::kIntRows, 4, 32, 1, true, false, ScaleType::kBf16);
  add(CT, Format::kIntRows, 4, 0, 1, false, false, ScaleType::kF16);
  add(CT, Format::kIntRows, 8, 32, 1, true, true, ScaleType::kF16);
  add(ATLAS_QUANT_GPTQ, Format::kGptq, 4, 32, 1, false, false, ScaleType::kF16);
  add(ATLAS_QUANT_GPTQ, Format::kGptq, 4, 32, 1, true, true, ScaleType::kF16);
  add(ATLAS_QUANT_GPTQ, Format::kGptq, 8, 0, 1, false, false, ScaleType::kF16);
  add(ATLAS_QUANT_AWQ, Format::kAwq, 4, 32, 1, true, false, ScaleType::kF16);
  return v;
}

namespace {

// A scale as the scheme stores it: bits (16-bit types) and the value read
// back from them.
float StoreScale(ScaleType t, float s, uint16_t *bits) {
  if (t == ScaleType::kF32) return s;
  *bits = t == ScaleType::kF16 ? atlas_make_checkpoint_f32_to_f16(s)
                               : atlas_make_checkpoint_f32_to_bf16(s);
  return t == ScaleType::kF16 ? quant_ref::DecodeF16(*bits)
                              : quant_ref::DecodeBf16(*bits);
}

// The F8_E4M3 byte nearest v (finite, saturating at 448).
uint32_t NearestFp8(float v) {
  uint32_t best = 0;
  float err = INFINITY;
  for (uint32_t b = 0; b < 256; ++b) {
    if ((b & 0x7f) == 0x7f) continue;
    float e = fabsf(quant_ref::DecodeFp8E4m3((uint8_t)b) - v);
    if (e < err) err = e, best = b;
  }
  return best;
}

}  // namespace

QuantMatrix Quantize(const Scheme &s, const std::vector<float> &w,
                     uint32_t rows, uint32_t cols, std::mt19937 &rng) {
  QuantMatrix m;
  m.format = s.format;
  m.rows = rows, m.cols = cols, m.bits = s.format == Format::kFp8 ? 8 : s.bits;
  m.group_k = s.group_k;
  m.block_n = s.format == Format::kFp8 ? s.block_n : 1;
  m.zeros = s.format == Format::kGptq || s.format == Format::kAwq ||
            (s.format == Format::kIntRows && s.asymmetric);
  m.zero_offset = s.format == Format::kGptq ? 1 : 0;
  m.scale_type = s.scale_type;
  const uint32_t groups = m.Groups(), gk = s.group_k ? s.group_k : cols;
  if (s.desc_act) quant_ref::UsePermutedGroups(m, rng);
  auto group_of = [&](uint32_t k) {
    return m.use_g_idx ? (uint32_t)m.g_idx[k] : k / gk;
  };
  const size_t n_scales = (size_t)m.ScaleRows() * groups;
  if (s.scale_type == ScaleType::kF32) {
    m.scale32.assign(n_scales, 0.0f);
  } else {
    m.scale16.assign(n_scales, 0);
  }
  m.code.assign((size_t)rows * cols, 0);
  if (m.zeros) m.zero.assign((size_t)rows * groups, 0);
  const uint32_t bn = m.block_n ? m.block_n : rows;
  for (uint32_t sr = 0; sr < m.ScaleRows(); ++sr) {
    for (uint32_t g = 0; g < groups; ++g) {
      // The block's rows and columns, and their range.
      float lo = 0.0f, hi = 0.0f;
      const uint32_t r0 = s.format == Format::kFp8 ? sr * bn : sr;
      const uint32_t r1 =
          s.format == Format::kFp8 ? std::min(rows, r0 + bn) : r0 + 1;
      for (uint32_t r = r0; r < r1; ++r) {
        for (uint32_t k = 0; k < cols; ++k) {
          if (group_of(k) != g) continue;
          lo = std::min(lo, w[(size_t)r * cols + k]);
          hi = std::max(hi, w[(size_t)r * cols + k]);
        }
      }
      const float amax = std::max(-lo, hi);
      const uint32_t qmax = (1u << m.bits) - 1, mid = 1u << (m.bits - 1);
      float scale;
      if (s.format == Format::kFp8) {
        scale = amax > 0 ? amax / 448.0f : 1.0f;
      } else if (m.zeros && s.asymmetric) {
        scale = hi > lo ? (hi - lo) / (float)qmax : 1.0f;
      } else {
        scale = amax > 0 ? amax / (float)(mid - 1) : 1.0f;
      }
      uint16_t bits16 = 0;
      const float stored = StoreScale(s.scale_type, scale, &bits16);
      const size_t si = (size_t)sr * groups + g;
      if (s.scale_type == ScaleType::kF32) {
        m.scale32[si] = stored;
      } else {
        m.scale16[si] = bits16;
      }
      for (uint32_t r = r0; r < r1; ++r) {
        int32_t zero = (int32_t)mid;
        if (m.zeros && s.asymmetric) {
          zero = (int32_t)lrintf(-lo / stored);
          // GPTQ's original format stores zero - 1 in the field.
          const int32_t zlo = (int32_t)m.zero_offset;
          zero = std::max(zlo, std::min((int32_t)qmax, zero));
        }
        if (m.zeros) m.zero[(size_t)r * groups + g] = (uint32_t)zero;
        for (uint32_t k = 0; k < cols; ++k) {
          if (group_of(k) != g) continue;
          const float v = w[(size_t)r * cols + k];
          uint32_t code;
          if (s.format == Format::kFp8) {
            code = NearestFp8(v / stored);
          } else {
            long q = lrintf(v / stored) + zero;
            code = (uint32_t)std::max(0L, std::min((long)qmax, q));
          }
          m.code[(size_t)r * cols + k] = code;
        }
      }
    }
  }
  return m;
}

namespace {

bool Fail(std::string *error, const std::string &what, atlas_status st) {
  *error = what + ": " + atlas_status_message(st);
  atlas_status_free(st);
  return false;
}

// config.json of `src` with quantization_config set (or not) into `dir`.
bool WriteConfig(const std::string &src, const std::string &dir,
                 const std::string *quant_json, std::string *error) {
  json_error_t je;
  json_t *root = json_load_file((src + "/config.json").c_str(), 0, &je);
  if (root == nullptr) {
    *error = std::string("config.json: ") + je.text;
    return false;
  }
  if (quant_json != nullptr) {
    json_t *q = json_loads(quant_json->c_str(), 0, &je);
    if (q == nullptr) {
      json_decref(root);
      *error = "quantization_config: " + std::string(je.text);
      return false;
    }
    json_object_set_new(root, "quantization_config", q);
  }
  int rc = json_dump_file(root, (dir + "/config.json").c_str(), JSON_INDENT(1));
  json_decref(root);
  if (rc != 0) *error = "cannot write " + dir + "/config.json";
  return rc == 0;
}

bool WriteTensors(const std::string &dir,
                  const std::vector<quant_files::Tensor> &ts,
                  std::string *error) {
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
  atlas_status st = atlas_safetensors_write(
      (dir + "/model.safetensors").c_str(), w.data(), w.size(), nullptr, 0);
  return st == ATLAS_OK || Fail(error, dir, st);
}

bool EndsWith(const std::string &s, const char *tail) {
  size_t n = strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

bool Write(const Scheme &s, const std::string &src,
           const std::string &quant_dir, const std::string &twin_dir,
           std::string *error) {
  if (system(("mkdir -p '" + quant_dir + "' '" + twin_dir + "'").c_str()) !=
      0) {
    *error = "cannot make " + quant_dir;
    return false;
  }
  atlas_checkpoint *ck = nullptr;
  atlas_status st = atlas_checkpoint_open(src.c_str(), &ck);
  if (st != ATLAS_OK) return Fail(error, src, st);
  std::mt19937 rng(1234);
  std::vector<quant_files::Tensor> quant, twin;
  for (size_t i = 0; i < atlas_checkpoint_tensor_count(ck); ++i) {
    atlas_checkpoint_tensor t;
    atlas_checkpoint_tensor_at(ck, i, &t);
    const atlas_safetensors_tensor *st_t = t.tensor;
    std::vector<float> v(st_t->elements);
    st = atlas_safetensors_tensor_to_f32(st_t, 0, st_t->elements, v.data());
    if (st != ATLAS_OK) {
      atlas_checkpoint_close(ck);
      return Fail(error, st_t->name, st);
    }
    quant_files::Tensor plain{
        st_t->name, ATLAS_DTYPE_F32,
        std::vector<int64_t>(st_t->shape, st_t->shape + st_t->rank),
        std::vector<uint8_t>(v.size() * 4)};
    memcpy(plain.bytes.data(), v.data(), plain.bytes.size());
    std::string name = st_t->name;
    if (!EndsWith(name, "_proj.weight") || st_t->rank != 2) {
      quant.push_back(plain);
      twin.push_back(plain);
      continue;
    }
    const uint32_t rows = (uint32_t)st_t->shape[0],
                   cols = (uint32_t)st_t->shape[1];
    QuantMatrix m = Quantize(s, v, rows, cols, rng);
    const std::string module = name.substr(0, name.size() - 7);  // ".weight"
    for (quant_files::Tensor &q :
         quant_files::Layer(s.method, m, module.c_str())) {
      quant.push_back(q);
    }
    std::vector<float> d = quant_ref::Dequantize(m);
    memcpy(plain.bytes.data(), d.data(), plain.bytes.size());
    twin.push_back(plain);
  }
  atlas_checkpoint_close(ck);
  const std::string q = s.ConfigJson();
  return WriteConfig(src, quant_dir, &q, error) &&
         WriteConfig(src, twin_dir, nullptr, error) &&
         WriteTensors(quant_dir, quant, error) &&
         WriteTensors(twin_dir, twin, error);
}

}  // namespace quant_writer
