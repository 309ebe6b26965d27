// llama.cpp's quantized blocks as the tests picture them (ggml-common.h's
// structs, packed here from their description, apart from the kernels):
// random logical content (codes, sub-block scales and mins, the f16 super
// scales), its bytes, and each element's value computed from the content,
// in the operations and order ggml's dequantize_row_* uses.
#ifndef ATLAS_TESTS_QUANT_GGUF_BLOCKS_REFERENCE_H_
#define ATLAS_TESTS_QUANT_GGUF_BLOCKS_REFERENCE_H_

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

namespace gguf_ref {

enum class Type { kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };

struct Matrix {
  Type type;
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> bytes;  // rows x cols / block blocks, row-major
  std::vector<float> value;    // rows x cols: what each element means
};

// A random rows x cols matrix (cols a multiple of the block).
Matrix Random(Type type, uint32_t rows, uint32_t cols, std::mt19937 &rng);
const char *Name(Type type);

}  // namespace gguf_ref

#endif  // ATLAS_TESTS_QUANT_GGUF_BLOCKS_REFERENCE_H_
