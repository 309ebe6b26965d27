// The tests' GGUF blocks (gguf_blocks_reference.h).
#include "tests/quant/gguf_blocks_reference.h"

#include <string.h>

#include "tests/quant/quant_reference.h"

namespace gguf_ref {
namespace {

// A positive normal half of moderate size, as raw bits.
uint16_t RandomHalf(std::mt19937 &rng) {
  return (uint16_t)(((8 + rng() % 7) << 10) | (rng() & 1023));
}

void PutHalf(uint8_t *p, uint16_t h) {
  p[0] = (uint8_t)(h & 0xff);
  p[1] = (uint8_t)(h >> 8);
}

// One block's bytes (appended to `out`) and its values (to `value`).
void Q8_0(std::mt19937 &rng, std::vector<uint8_t> &out,
          std::vector<float> &value) {
  uint8_t b[34];
  uint16_t d = RandomHalf(rng);
  PutHalf(b, d);
  for (int j = 0; j < 32; ++j) {
    int8_t q = (int8_t)(rng() & 0xff);
    b[2 + j] = (uint8_t)q;
    value.push_back((float)q * quant_ref::DecodeF16(d));
  }
  out.insert(out.end(), b, b + 34);
}

void Q4_0(std::mt19937 &rng, std::vector<uint8_t> &out,
          std::vector<float> &value) {
  uint8_t b[18] = {0};
  uint16_t d = RandomHalf(rng);
  PutHalf(b, d);
  uint32_t u[32];
  for (uint32_t &x : u) x = rng() & 15;
  for (int j = 0; j < 16; ++j) b[2 + j] = (uint8_t)(u[j] | u[j + 16] << 4);
  for (int j = 0; j < 32; ++j) {
    value.push_back((float)((int)u[j] - 8) * quant_ref::DecodeF16(d));
  }
  out.insert(out.end(), b, b + 18);
}

// Q4_K (bits 4) and Q5_K (bits 5): 8 sub-blocks of 32 with 6-bit scales and
// mins, packed into 12 bytes as ggml's quantizer packs them.
void QK45(std::mt19937 &rng, int bits, std::vector<uint8_t> &out,
          std::vector<float> &value) {
  const int size = bits == 4 ? 144 : 176;
  std::vector<uint8_t> b((size_t)size, 0);
  uint16_t d = RandomHalf(rng), dmin = RandomHalf(rng);
  PutHalf(&b[0], d);
  PutHalf(&b[2], dmin);
  uint32_t sc[8], mn[8], u[256];
  for (int j = 0; j < 8; ++j) sc[j] = rng() & 63, mn[j] = rng() & 63;
  for (uint32_t &x : u) x = rng() & ((1u << bits) - 1);
  uint8_t *scales = &b[4];
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = (uint8_t)sc[j];
      scales[j + 4] = (uint8_t)mn[j];
    } else {
      scales[j + 4] = (uint8_t)((sc[j] & 0xf) | ((mn[j] & 0xf) << 4));
      scales[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
      scales[j] |= (uint8_t)((mn[j] >> 4) << 6);
    }
  }
  uint8_t *qh = &b[16], *qs = &b[bits == 4 ? 16 : 48];
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      uint32_t lo = u[64 * c + l], hi = u[64 * c + 32 + l];
      qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
      if (bits == 5) {
        qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
  for (int e = 0; e < 256; ++e) {
    const int is = e / 32;  // sub-block: 2 per chunk of 64
    const float d1 = quant_ref::DecodeF16(d) * (float)sc[is];
    const float m1 = quant_ref::DecodeF16(dmin) * (float)mn[is];
    value.push_back(d1 * (float)u[e] - m1);
  }
  out.insert(out.end(), b.begin(), b.end());
}

void Q6_K(std::mt19937 &rng, std::vector<uint8_t> &out,
          std::vector<float> &value) {
  std::vector<uint8_t> b(210, 0);
  uint32_t u[256];
  int8_t sc[16];
  for (uint32_t &x : u) x = rng() & 63;
  for (int8_t &s : sc) s = (int8_t)((int)(rng() % 255) - 127);
  uint16_t d = RandomHalf(rng);
  uint8_t *ql = &b[0], *qh = &b[128];
  memcpy(&b[192], sc, 16);
  PutHalf(&b[208], d);
  for (int h = 0; h < 2; ++h) {
    const uint32_t *v = u + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[64 * h + l] = (uint8_t)((v[l] & 15) | ((v[64 + l] & 15) << 4));
      ql[64 * h + 32 + l] =
          (uint8_t)((v[32 + l] & 15) | ((v[96 + l] & 15) << 4));
      qh[32 * h + l] =
          (uint8_t)((v[l] >> 4) | ((v[32 + l] >> 4) << 2) |
                    ((v[64 + l] >> 4) << 4) | ((v[96 + l] >> 4) << 6));
    }
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, quarter = (e % 128) / 32, l = e % 32;
    const int s = 8 * h + l / 16 + 2 * quarter;
    value.push_back(quant_ref::DecodeF16(d) * (float)sc[s] *
                    (float)((int)u[e] - 32));
  }
  out.insert(out.end(), b.begin(), b.end());
}

}  // namespace

const char *Name(Type type) {
  static const char *const kNames[] = {"Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"};
  return kNames[(int)type];
}

Matrix Random(Type type, uint32_t rows, uint32_t cols, std::mt19937 &rng) {
  Matrix m;
  m.type = type;
  m.rows = rows, m.cols = cols;
  const uint32_t block = type == Type::kQ8_0 || type == Type::kQ4_0 ? 32 : 256;
  for (uint32_t b = 0; b < rows * (cols / block); ++b) {
    switch (type) {
      case Type::kQ8_0:
        Q8_0(rng, m.bytes, m.value);
        break;
      case Type::kQ4_0:
        Q4_0(rng, m.bytes, m.value);
        break;
      case Type::kQ4_K:
        QK45(rng, 4, m.bytes, m.value);
        break;
      case Type::kQ5_K:
        QK45(rng, 5, m.bytes, m.value);
        break;
      case Type::kQ6_K:
        Q6_K(rng, m.bytes, m.value);
        break;
    }
  }
  return m;
}

}  // namespace gguf_ref
