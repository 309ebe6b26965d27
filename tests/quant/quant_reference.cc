// The tests' own packer, unpacker and dequantizer (quant_reference.h).
#include "tests/quant/quant_reference.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <numeric>
#include <sstream>

namespace quant_ref {
namespace {

// AutoAWQ packs the eight rows of a word in this order: nibble i holds row
// kAwqOrder[i] of the eight.
constexpr uint32_t kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

void PutWord(std::vector<uint8_t> &bytes, size_t i, uint32_t v) {
  if (bytes.size() < 4 * (i + 1)) bytes.resize(4 * (i + 1), 0);
  memcpy(&bytes[4 * i], &v, 4);
}
uint32_t GetWord(const std::vector<uint8_t> &bytes, size_t i) {
  uint32_t v;
  memcpy(&v, &bytes[4 * i], 4);
  return v;
}
// ORs `value` into bits [shift, shift + bits) of word i.
void OrInto(std::vector<uint8_t> &bytes, size_t i, uint32_t value,
            uint32_t shift) {
  PutWord(bytes, i, GetWord(bytes, i) | (value << shift));
}

size_t ScaleBytes(ScaleType t) { return t == ScaleType::kF32 ? 4 : 2; }

}  // namespace

uint32_t QuantMatrix::Groups() const {
  return CeilDiv(cols, group_k ? group_k : cols);
}
uint32_t QuantMatrix::ScaleRows() const {
  if (format != Format::kFp8) return rows;
  return CeilDiv(rows, block_n ? block_n : rows);
}

float DecodeF16(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? ldexpf((float)m, -24) : ldexpf(1.0f + m / 1024.0f, e - 15);
  return (h & 0x8000) ? -v : v;
}
float DecodeBf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
float DecodeFp8E4m3(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  float v = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + m / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}

QuantMatrix Random(Format format, uint32_t rows, uint32_t cols, uint32_t bits,
                   uint32_t group_k, bool zeros, ScaleType scale_type,
                   std::mt19937 &rng) {
  QuantMatrix m;
  m.format = format;
  m.rows = rows, m.cols = cols, m.bits = format == Format::kFp8 ? 8 : bits;
  m.group_k = group_k;
  m.zeros = zeros;
  m.scale_type = scale_type;
  m.code.resize((size_t)rows * cols);
  for (uint32_t &c : m.code) {
    if (format == Format::kFp8) {
      do {
        c = rng() & 0xff;
      } while ((c & 0x7f) == 0x7f);  // NaN
    } else {
      c = rng() & ((1u << m.bits) - 1);
    }
  }
  const uint32_t groups = m.Groups();
  if (zeros) {
    m.zero.resize((size_t)rows * groups);
    for (uint32_t &z : m.zero) z = rng() & ((1u << m.bits) - 1);
  }
  const size_t n_scales = (size_t)m.ScaleRows() * groups;
  if (scale_type == ScaleType::kF32) {
    std::uniform_real_distribution<float> d(1e-3f, 5e-2f);
    m.scale32.resize(n_scales);
    for (float &s : m.scale32) s = d(rng);
  } else {
    m.scale16.resize(n_scales);
    for (uint16_t &s : m.scale16) {
      s = scale_type == ScaleType::kF16
              ? (uint16_t)(((5 + rng() % 8) << 10) | (rng() & 1023))
              : (uint16_t)(((117 + rng() % 8) << 7) | (rng() & 127));
    }
  }
  return m;
}

// A random column order's groups, as GPTQ's desc_act writes them.
void UsePermutedGroups(QuantMatrix &m, std::mt19937 &rng) {
  std::vector<uint32_t> perm(m.cols);
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), rng);
  const uint32_t gk = m.group_k ? m.group_k : m.cols;
  m.g_idx.resize(m.cols);
  for (uint32_t i = 0; i < m.cols; ++i) m.g_idx[perm[i]] = (int32_t)(i / gk);
  m.use_g_idx = true;
}

void UseZeroOffset(QuantMatrix &m, uint32_t offset) {
  m.zero_offset = offset;
  const uint32_t mask = (1u << m.bits) - 1;
  for (uint32_t &z : m.zero) z = (z & mask) + offset;
  // A zero past the field's range would not be stored faithfully otherwise.
  for (uint32_t &z : m.zero) {
    if (z - offset > mask) z = offset;
  }
}

Stored Pack(const QuantMatrix &m) {
  Stored s;
  const uint32_t groups = m.Groups(), bits = m.bits, ppw = 32 / bits;
  auto code = [&](uint32_t n, uint32_t k) {
    return m.code[(size_t)n * m.cols + k];
  };
  auto zero = [&](uint32_t n, uint32_t g) {
    return m.zero[(size_t)n * groups + g];
  };
  switch (m.format) {
    case Format::kFp8:
      s.w.resize(m.code.size());
      for (size_t i = 0; i < m.code.size(); ++i) s.w[i] = (uint8_t)m.code[i];
      break;
    case Format::kIntRows: {  // [rows][ceil(cols/ppw)], zeros down the rows
      const uint32_t wpr = CeilDiv(m.cols, ppw);
      s.w.assign((size_t)m.rows * wpr * 4, 0);
      for (uint32_t n = 0; n < m.rows; ++n) {
        for (uint32_t k = 0; k < m.cols; ++k) {
          OrInto(s.w, (size_t)n * wpr + k / ppw, code(n, k), bits * (k % ppw));
        }
      }
      if (m.zeros) {
        s.zeros.assign((size_t)CeilDiv(m.rows, ppw) * groups * 4, 0);
        for (uint32_t n = 0; n < m.rows; ++n) {
          for (uint32_t g = 0; g < groups; ++g) {
            OrInto(s.zeros, (size_t)(n / ppw) * groups + g, zero(n, g),
                   bits * (n % ppw));
          }
        }
      }
      break;
    }
    case Format::kGptq: {  // [cols/ppw][rows], zeros [G][rows/ppw] less 1
      s.w.assign((size_t)(m.cols / ppw) * m.rows * 4, 0);
      for (uint32_t k = 0; k < m.cols; ++k) {
        for (uint32_t n = 0; n < m.rows; ++n) {
          OrInto(s.w, (size_t)(k / ppw) * m.rows + n, code(n, k),
                 bits * (k % ppw));
        }
      }
      if (m.zeros) {
        const uint32_t zpr = CeilDiv(m.rows, ppw);
        s.zeros.assign((size_t)groups * zpr * 4, 0);
        for (uint32_t g = 0; g < groups; ++g) {
          for (uint32_t n = 0; n < m.rows; ++n) {
            uint32_t v = zero(n, g) - m.zero_offset;  // Random keeps it >= 0
            OrInto(s.zeros, (size_t)g * zpr + n / ppw, v, bits * (n % ppw));
          }
        }
      }
      break;
    }
    case Format::kAwq: {  // [cols][rows/8], eight rows in AutoAWQ's order
      const uint32_t wpr = m.rows / 8;
      s.w.assign((size_t)m.cols * wpr * 4, 0);
      for (uint32_t k = 0; k < m.cols; ++k) {
        for (uint32_t c = 0; c < wpr; ++c) {
          for (uint32_t i = 0; i < 8; ++i) {
            OrInto(s.w, (size_t)k * wpr + c, code(c * 8 + kAwqOrder[i], k),
                   4 * i);
          }
        }
      }
      if (m.zeros) {
        s.zeros.assign((size_t)groups * wpr * 4, 0);
        for (uint32_t g = 0; g < groups; ++g) {
          for (uint32_t c = 0; c < wpr; ++c) {
            for (uint32_t i = 0; i < 8; ++i) {
              OrInto(s.zeros, (size_t)g * wpr + c,
                     zero(c * 8 + kAwqOrder[i], g), 4 * i);
            }
          }
        }
      }
      break;
    }
  }
  // Scales: [scale rows][groups] for FP8 and compressed-tensors, transposed
  // ([groups][rows]) for GPTQ and AWQ.
  const bool transposed = m.format == Format::kGptq || m.format == Format::kAwq;
  const uint32_t srows = m.ScaleRows();
  const size_t eb = ScaleBytes(m.scale_type);
  s.scales.resize((size_t)srows * groups * eb);
  for (uint32_t r = 0; r < srows; ++r) {
    for (uint32_t g = 0; g < groups; ++g) {
      size_t from = (size_t)r * groups + g;
      size_t to = transposed ? (size_t)g * srows + r : from;
      if (m.scale_type == ScaleType::kF32) {
        memcpy(&s.scales[to * 4], &m.scale32[from], 4);
      } else {
        memcpy(&s.scales[to * 2], &m.scale16[from], 2);
      }
    }
  }
  if (m.use_g_idx) s.g_idx = m.g_idx;
  return s;
}

QuantMatrix Unpack(const QuantMatrix &shape, const Stored &s) {
  QuantMatrix m = shape;
  const uint32_t groups = m.Groups(), bits = m.bits, ppw = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  m.code.assign((size_t)m.rows * m.cols, 0);
  if (m.zeros) m.zero.assign((size_t)m.rows * groups, 0);
  for (uint32_t n = 0; n < m.rows; ++n) {
    for (uint32_t k = 0; k < m.cols; ++k) {
      uint32_t v = 0;
      if (m.format == Format::kFp8) {
        v = s.w[(size_t)n * m.cols + k];
      } else if (m.format == Format::kIntRows) {
        v = GetWord(s.w, (size_t)n * CeilDiv(m.cols, ppw) + k / ppw) >>
            (bits * (k % ppw));
      } else if (m.format == Format::kGptq) {
        v = GetWord(s.w, (size_t)(k / ppw) * m.rows + n) >> (bits * (k % ppw));
      } else {
        uint32_t i = 0;
        while (kAwqOrder[i] != n % 8) ++i;
        v = GetWord(s.w, (size_t)k * (m.rows / 8) + n / 8) >> (4 * i);
      }
      m.code[(size_t)n * m.cols + k] =
          v & (m.format == Format::kFp8 ? 0xff : mask);
    }
    for (uint32_t g = 0; m.zeros && g < groups; ++g) {
      uint32_t v = 0;
      if (m.format == Format::kIntRows) {
        v = GetWord(s.zeros, (size_t)(n / ppw) * groups + g) >>
            (bits * (n % ppw));
      } else if (m.format == Format::kGptq) {
        v = GetWord(s.zeros, (size_t)g * CeilDiv(m.rows, ppw) + n / ppw) >>
            (bits * (n % ppw));
      } else {
        uint32_t i = 0;
        while (kAwqOrder[i] != n % 8) ++i;
        v = GetWord(s.zeros, (size_t)g * (m.rows / 8) + n / 8) >> (4 * i);
      }
      // GPTQ's original format stores zero - 1: the offset comes back here.
      m.zero[(size_t)n * groups + g] =
          (v & mask) + (m.format == Format::kGptq ? m.zero_offset : 0);
    }
  }
  const bool transposed = m.format == Format::kGptq || m.format == Format::kAwq;
  const uint32_t srows = m.ScaleRows();
  m.scale32.clear();
  m.scale16.clear();
  for (uint32_t r = 0; r < srows; ++r) {
    for (uint32_t g = 0; g < groups; ++g) {
      size_t at = transposed ? (size_t)g * srows + r : (size_t)r * groups + g;
      if (m.scale_type == ScaleType::kF32) {
        float f;
        memcpy(&f, &s.scales[at * 4], 4);
        m.scale32.push_back(f);
      } else {
        uint16_t h;
        memcpy(&h, &s.scales[at * 2], 2);
        m.scale16.push_back(h);
      }
    }
  }
  m.g_idx = s.g_idx;
  m.use_g_idx = !s.g_idx.empty();
  return m;
}

std::vector<float> Dequantize(const QuantMatrix &m) {
  const uint32_t groups = m.Groups(), gk = m.group_k ? m.group_k : m.cols;
  const uint32_t bn = m.block_n ? m.block_n : m.rows;
  std::vector<float> w((size_t)m.rows * m.cols);
  for (uint32_t n = 0; n < m.rows; ++n) {
    for (uint32_t k = 0; k < m.cols; ++k) {
      uint32_t g = m.use_g_idx ? (uint32_t)m.g_idx[k] : k / gk;
      uint32_t r = m.format == Format::kFp8 ? n / bn : n;
      size_t si = (size_t)r * groups + g;
      float scale = m.scale_type == ScaleType::kF32 ? m.scale32[si]
                    : m.scale_type == ScaleType::kF16
                        ? DecodeF16(m.scale16[si])
                        : DecodeBf16(m.scale16[si]);
      uint32_t c = m.code[(size_t)n * m.cols + k];
      float q;
      if (m.format == Format::kFp8) {
        q = DecodeFp8E4m3((uint8_t)c);
      } else {
        int32_t z = m.zeros ? (int32_t)m.zero[(size_t)n * groups + g]
                            : (int32_t)(1u << (m.bits - 1));
        q = (float)((int32_t)c - z);
      }
      w[(size_t)n * m.cols + k] = q * scale;
    }
  }
  return w;
}

std::string Describe(const QuantMatrix &m) {
  static const char *const kNames[] = {"fp8", "int_rows", "gptq", "awq"};
  static const char *const kScales[] = {"f32", "f16", "bf16"};
  std::ostringstream o;
  o << kNames[(int)m.format] << " " << m.rows << "x" << m.cols << " bits "
    << m.bits << " group_k " << m.group_k << " block_n " << m.block_n
    << (m.zeros ? " zeros" : " symmetric") << (m.use_g_idx ? " g_idx" : "")
    << " scales " << kScales[(int)m.scale_type];
  return o.str();
}

}  // namespace quant_ref
