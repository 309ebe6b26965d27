// Weight-scan cases shared by the host test and the CUDA test: random bytes
// of awkward sizes, with NaN/Inf planted at chosen elements.
#ifndef ATLAS_TESTS_RUNTIME_WEIGHT_SCAN_CASES_H_
#define ATLAS_TESTS_RUNTIME_WEIGHT_SCAN_CASES_H_

#include <stdint.h>

#include <random>
#include <string>
#include <vector>

#include "atlas/runtime/base/weight_scan.h"

namespace atlas_test {

struct ScanCase {
  std::string name;
  std::vector<unsigned char> bytes;
  atlas_scan_finite finite;
  uint64_t first_bad;  // UINT64_MAX: none planted
};

// Writes a NaN (or Inf) of `finite`'s encoding at element `index`.
inline void PlantBad(std::vector<unsigned char> &b, atlas_scan_finite finite,
                     uint64_t index, bool nan) {
  size_t e = atlas_scan_finite_bytes(finite);
  uint32_t bits = 0;
  switch (finite) {
    case ATLAS_SCAN_FINITE_F32:
      bits = nan ? 0x7fc00001u : 0xff800000u;
      break;
    case ATLAS_SCAN_FINITE_F16:
      bits = nan ? 0xfe01u : 0x7c00u;
      break;
    case ATLAS_SCAN_FINITE_BF16:
      bits = nan ? 0x7f81u : 0xff80u;
      break;
    case ATLAS_SCAN_FINITE_NONE:
      return;
  }
  for (size_t k = 0; k < e; ++k) b[index * e + k] = (bits >> (8 * k)) & 0xff;
}

// Finite random values of `finite` (random bytes with the exponent's top
// bit cleared), or plain random bytes for NONE.
inline std::vector<unsigned char> FiniteBytes(size_t n,
                                              atlas_scan_finite finite,
                                              std::mt19937 &rng) {
  std::vector<unsigned char> b(n);
  for (auto &c : b) c = (unsigned char)(rng() & 0xff);
  size_t e = atlas_scan_finite_bytes(finite);
  if (e == 0) return b;
  for (size_t i = e - 1; i < n; i += e) b[i] &= 0xbf;  // exponent below max
  return b;
}

inline std::vector<ScanCase> ScanCases() {
  std::mt19937 rng(1234);
  std::vector<ScanCase> cases;
  const size_t sizes[] = {2,    16,   18,          4094,
                          4096, 4098, 12288 + 514, (1u << 20) + 4096 * 3 + 10};
  const atlas_scan_finite kinds[] = {
      ATLAS_SCAN_FINITE_NONE, ATLAS_SCAN_FINITE_F32, ATLAS_SCAN_FINITE_F16,
      ATLAS_SCAN_FINITE_BF16};
  for (size_t n : sizes) {
    for (atlas_scan_finite f : kinds) {
      size_t e = atlas_scan_finite_bytes(f);
      size_t bytes = e == 0 ? n : n / e * e;
      if (bytes == 0) continue;
      std::string base = std::to_string(bytes) + "B finite" + std::to_string(f);
      cases.push_back(
          {base + " clean", FiniteBytes(bytes, f, rng), f, UINT64_MAX});
      if (e == 0) continue;
      uint64_t elems = bytes / e;
      // The last element, one mid-block, and two where the lower one wins.
      ScanCase last{base + " last bad", FiniteBytes(bytes, f, rng), f,
                    elems - 1};
      PlantBad(last.bytes, f, elems - 1, false);
      cases.push_back(last);
      if (elems > 3) {
        uint64_t hi = elems - 2, lo = elems / 3;
        ScanCase two{base + " two bad", FiniteBytes(bytes, f, rng), f, lo};
        PlantBad(two.bytes, f, hi, true);
        PlantBad(two.bytes, f, lo, true);
        cases.push_back(two);
      }
    }
  }
  return cases;
}

}  // namespace atlas_test

#endif  // ATLAS_TESTS_RUNTIME_WEIGHT_SCAN_CASES_H_
