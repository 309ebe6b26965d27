// Quantized layers written to checkpoint files by the tests' own packer
// (quant_reference.h): the tensors each format stores, its config, and a
// case list covering every format. Shared by the quant_tensors and
// quant_linear tests.
#ifndef ATLAS_TESTS_QUANT_QUANT_FILES_H_
#define ATLAS_TESTS_QUANT_QUANT_FILES_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "atlas/runtime/formats/safetensors.h"
#include "atlas/runtime/quant/quant_config.h"
#include "tests/quant/quant_reference.h"

namespace quant_files {

extern const char kModule[];

struct Tensor {
  std::string name;
  atlas_dtype dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// The tensors a checkpoint of `method` stores for `m` as layer `module`.
std::vector<Tensor> Layer(atlas_quant_method method,
                          const quant_ref::QuantMatrix &m,
                          const char *module = kModule);
// TEST_TMPDIR/<leaf>/model.safetensors holding `ts`; returns the directory.
std::string Write(const std::string &leaf, const std::vector<Tensor> &ts);
// The quantization_config that describes `m`.
atlas_quant_config Config(atlas_quant_method method,
                          const quant_ref::QuantMatrix &m);

struct Case {
  atlas_quant_method method;
  quant_ref::QuantMatrix m;
};
// fp8 block; compressed-tensors fp8 tensor and channel, int4 symmetric and
// not, int8 with actorder; gptq (original format, desc_act); awq.
std::vector<Case> Cases();

}  // namespace quant_files

#endif  // ATLAS_TESTS_QUANT_QUANT_FILES_H_
