// The tests' own picture of the quantized formats, written from the formats'
// descriptions and apart from the kernels (kernels/quant_decode.h):
//  - QuantMatrix: a matrix's logical content (codes, zero points, scales);
//  - Pack*: the tensors a checkpoint of each format stores for it (AutoAWQ's
//    nibble order, GPTQ's zero - 1, compressed-tensors' offset values and
//    zero points packed down the rows, FP8 bytes);
//  - Unpack*: the inverse, from the stored tensors back to codes, which
//    Dequantize turns into the f32 matrix the products are checked against.
#ifndef ATLAS_TESTS_QUANT_QUANT_REFERENCE_H_
#define ATLAS_TESTS_QUANT_QUANT_REFERENCE_H_

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

namespace quant_ref {

enum class Format { kFp8, kIntRows, kGptq, kAwq };
enum class ScaleType { kF32, kF16, kBf16 };

// What a stored matrix says, format aside.
struct QuantMatrix {
  Format format;
  uint32_t rows = 0, cols = 0, bits = 4;
  uint32_t group_k = 0;      // scale block along the columns (0: all)
  uint32_t block_n = 1;      // scale block along the rows (0: all)
  bool zeros = false;        // stored zero points (else 2^(bits-1))
  uint32_t zero_offset = 0;  // GPTQ's original format: stored = zero - 1
  bool use_g_idx = false;
  ScaleType scale_type = ScaleType::kF32;
  std::vector<uint32_t> code;     // [rows][cols]: unsigned code, or FP8 byte
  std::vector<uint32_t> zero;     // [rows][groups]: the true zero point
  std::vector<uint16_t> scale16;  // [scale rows][groups] bits (F16/BF16)
  std::vector<float> scale32;     // [scale rows][groups] (F32)
  std::vector<int32_t> g_idx;     // [cols]
  uint32_t Groups() const;
  uint32_t ScaleRows() const;
};

// The tensors a checkpoint stores for the matrix.
struct Stored {
  std::vector<uint8_t> w;       // int32 words or FP8 bytes
  std::vector<uint8_t> scales;  // raw scale elements
  std::vector<uint8_t> zeros;   // int32 words (empty: none)
  std::vector<int32_t> g_idx;   // (empty: none)
};

// A random matrix of `format`: codes and zeros uniform over their range,
// scales of random sign-free magnitudes, g_idx a permutation's groups.
QuantMatrix Random(Format format, uint32_t rows, uint32_t cols, uint32_t bits,
                   uint32_t group_k, bool zeros, ScaleType scale_type,
                   std::mt19937 &rng);

// Gives the matrix a random column order's groups (GPTQ's desc_act,
// compressed-tensors' actorder): g_idx[k] is column k's group.
void UsePermutedGroups(QuantMatrix &m, std::mt19937 &rng);
// For GPTQ's original format: zeros become 1 + a stored field, so that
// zero - 1 fits the field (GPTQ writes zero - 1).
void UseZeroOffset(QuantMatrix &m, uint32_t offset);

Stored Pack(const QuantMatrix &m);
// Reads `s` back into codes, zeros and scales of a matrix shaped like
// `shape` (its format, sizes and options; its contents are ignored).
QuantMatrix Unpack(const QuantMatrix &shape, const Stored &s);
// The dequantized matrix [rows][cols], f32: (code - zero) * scale, or
// fp8(code) * scale, from the unpacked content.
std::vector<float> Dequantize(const QuantMatrix &m);

// Decoders of their own (ldexp of the fields), for the reference.
float DecodeF16(uint16_t h);
float DecodeBf16(uint16_t h);
float DecodeFp8E4m3(uint8_t b);

std::string Describe(const QuantMatrix &m);

}  // namespace quant_ref

#endif  // ATLAS_TESTS_QUANT_QUANT_REFERENCE_H_
