// A GGUF writer for the tests (and the fuzzer's seeds), written from the
// format's description: header, metadata, tensor table, padding, data.
// Anything can be written, valid or not, so the refusals can be tested.
#ifndef ATLAS_TESTS_GGUF_GGUF_WRITER_H_
#define ATLAS_TESTS_GGUF_GGUF_WRITER_H_

#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

namespace gguf_test {

class Writer {
 public:
  // Raw pieces, little-endian.
  static void U32(std::string &s, uint32_t v) { s.append((const char *)&v, 4); }
  static void U64(std::string &s, uint64_t v) { s.append((const char *)&v, 8); }
  static void Str(std::string &s, const std::string &v) {
    U64(s, v.size());
    s += v;
  }

  uint32_t version = 3;
  std::string magic = "GGUF";
  uint64_t alignment = 32;  // for the data's padding and tensor offsets
  // Counts written into the header (default: the real ones).
  int64_t kv_count_override = -1, tensor_count_override = -1;

  // A key with a value already encoded (type then bytes).
  void Kv(const std::string &key, uint32_t type, const std::string &value) {
    std::string e;
    Str(e, key);
    U32(e, type);
    e += value;
    kvs_.push_back(e);
  }
  void KvU32(const std::string &key, uint32_t v) {
    std::string b;
    U32(b, v);
    Kv(key, 4, b);
  }
  void KvString(const std::string &key, const std::string &v) {
    std::string b;
    Str(b, v);
    Kv(key, 8, b);
  }
  void KvF32(const std::string &key, float v) {
    Kv(key, 6, std::string((const char *)&v, 4));
  }
  void KvStrings(const std::string &key, const std::vector<std::string> &v) {
    std::string b;
    U32(b, 8);
    U64(b, v.size());
    for (const std::string &x : v) Str(b, x);
    Kv(key, 9, b);
  }
  void KvBool(const std::string &key, bool v) {
    Kv(key, 7, std::string(1, v ? '\1' : '\0'));
  }
  void KvI32s(const std::string &key, const std::vector<int32_t> &v) {
    std::string b;
    U32(b, 5);
    U64(b, v.size());
    b.append((const char *)v.data(), v.size() * 4);
    Kv(key, 9, b);
  }
  void KvF32s(const std::string &key, const std::vector<float> &v) {
    std::string b;
    U32(b, 6);
    U64(b, v.size());
    b.append((const char *)v.data(), v.size() * 4);
    Kv(key, 9, b);
  }
  // A tensor whose data (`data`, placed at the next aligned offset unless
  // `offset` is given) follows the header.
  void Tensor(const std::string &name, std::vector<uint64_t> dims,
              uint32_t type, const std::string &data, int64_t offset = -1) {
    if (offset < 0) {
      offset = (int64_t)Align(data_.size());
    }
    if ((size_t)offset + data.size() > data_.size()) {
      data_.resize((size_t)offset + data.size(), '\0');
    }
    memcpy(&data_[(size_t)offset], data.data(), data.size());
    std::string e;
    Str(e, name);
    U32(e, (uint32_t)dims.size());
    for (uint64_t d : dims) U64(e, d);
    U32(e, type);
    U64(e, (uint64_t)offset);
    tensors_.push_back(e);
  }
  std::string Build() const {
    std::string s = magic;
    U32(s, version);
    U64(s, tensor_count_override >= 0 ? (uint64_t)tensor_count_override
                                      : tensors_.size());
    U64(s, kv_count_override >= 0 ? (uint64_t)kv_count_override : kvs_.size());
    for (const std::string &k : kvs_) s += k;
    for (const std::string &t : tensors_) s += t;
    s.resize(Align(s.size()), '\0');
    return s + data_;
  }

 private:
  size_t Align(size_t n) const {
    return (n + alignment - 1) / alignment * alignment;
  }
  std::vector<std::string> kvs_, tensors_;
  std::string data_;
};

}  // namespace gguf_test

#endif  // ATLAS_TESTS_GGUF_GGUF_WRITER_H_
