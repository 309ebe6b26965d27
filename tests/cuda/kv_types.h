// KV cache contents in each cache type, for kernel tests: f32 values to the
// bytes a cache of `type` ("f32", "f16", "bf16") holds (rounded to nearest
// even, as the kernels store), and back.
#ifndef ATLAS_TESTS_CUDA_KV_TYPES_H_
#define ATLAS_TESTS_CUDA_KV_TYPES_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "atlas/runtime/base/half.h"

namespace atlas_test {

inline size_t KvSize(const std::string &type) { return type == "f32" ? 4 : 2; }

inline std::vector<unsigned char> KvBytes(const std::vector<float> &v,
                                          const std::string &type) {
  std::vector<unsigned char> out(v.size() * KvSize(type));
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == "f32") {
      memcpy(&out[i * 4], &v[i], 4);
    } else {
      uint16_t h =
          type == "f16" ? atlas_f32_to_f16(v[i]) : atlas_f32_to_bf16(v[i]);
      memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

inline std::vector<float> KvFloats(const std::vector<unsigned char> &bytes,
                                   const std::string &type) {
  size_t n = bytes.size() / KvSize(type);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (type == "f32") {
      memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t h;
      memcpy(&h, &bytes[i * 2], 2);
      out[i] = type == "f16" ? atlas_f16_to_f32(h) : atlas_bf16_to_f32(h);
    }
  }
  return out;
}

// The values as a cache of `type` holds them.
inline std::vector<float> KvRounded(const std::vector<float> &v,
                                    const std::string &type) {
  return KvFloats(KvBytes(v, type), type);
}

}  // namespace atlas_test

#endif  // ATLAS_TESTS_CUDA_KV_TYPES_H_
