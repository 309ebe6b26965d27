// A kernel module's CUDA kernels against their host C twins: the same random
// inputs run on both backends, outputs poisoned first (every element must be
// written) and compared by relative L2 error. Skips where there is no GPU.
// Shared by the llama (decode) and llama_batch (prefill) kernel tests; each
// names its module in its fixture's constructor.
#ifndef ATLAS_TESTS_CUDA_KERNEL_COMPARE_H_
#define ATLAS_TESTS_CUDA_KERNEL_COMPARE_H_

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/cuda/kv_types.h"
#include "tests/runtime/test_util.h"

namespace atlas_test {

// f32 sums in a different order: well under 1e-5 relative. The 16-bit
// products split the f32 activations into two 16-bit halves (about 16 bits
// of x kept for BF16), so they too stay near 1e-5.
constexpr double kTolerance = 1e-5;

// A backend with a kernel module and the buffers one case made on it.
class KernelSide {
 public:
  KernelSide(atlas_backend *b, const char *module) : b_(b), module_(module) {}
  ~KernelSide() {
    for (void *p : bufs_) EXPECT_OK(atlas_backend_free(b_, p));
  }
  void *Upload(const void *data, size_t bytes) {
    void *p = Alloc(bytes);
    EXPECT_OK(atlas_backend_h2d(b_, p, data, bytes));
    return p;
  }
  // Output buffers start as NaN: a skipped element cannot pass.
  void *Poisoned(size_t floats) {
    std::vector<float> nan(floats, NAN);
    return Upload(nan.data(), floats * sizeof(float));
  }
  // The decode step's {token, position} words, as the kernels read them.
  void *Step(uint32_t token, uint32_t pos) {
    uint32_t step[2] = {token, pos};
    return Upload(step, sizeof(step));
  }
  std::vector<uint32_t> DownloadU32(const void *p, size_t n) {
    std::vector<uint32_t> out(n);
    EXPECT_OK(atlas_backend_d2h(b_, out.data(), p, n * sizeof(uint32_t)));
    return out;
  }
  // Bytes of a KV cache region read back as floats.
  std::vector<float> DownloadKv(const void *p, size_t n,
                                const std::string &type) {
    std::vector<unsigned char> raw(n * KvSize(type));
    EXPECT_OK(atlas_backend_d2h(b_, raw.data(), p, raw.size()));
    return KvFloats(raw, type);
  }
  std::vector<float> Download(const void *p, size_t floats) {
    std::vector<float> out(floats);
    EXPECT_OK(atlas_backend_d2h(b_, out.data(), p, floats * sizeof(float)));
    return out;
  }
  atlas_backend *backend() const { return b_; }
  void Launch(const char *name, uint32_t grid, uint32_t grid_y, uint32_t block,
              std::vector<atlas_arg> args) {
    Run(name, grid, grid_y, block, 0, args);
  }
  // A one-dimensional grid.
  void Launch(const char *name, uint32_t grid, uint32_t block,
              std::vector<atlas_arg> args) {
    Run(name, grid, 1, block, 0, args);
  }
  // A one-dimensional grid with `shared_bytes` of dynamic shared memory.
  void LaunchShared(const char *name, uint32_t grid, uint32_t block,
                    uint32_t shared_bytes, std::vector<atlas_arg> args) {
    Run(name, grid, 1, block, shared_bytes, args);
  }

 private:
  void Run(const char *name, uint32_t grid, uint32_t grid_y, uint32_t block,
           uint32_t shared_bytes, std::vector<atlas_arg> &args) {
    const atlas_kernel *k = nullptr;
    ASSERT_OK(atlas_backend_kernel_lookup(b_, module_, name, &k));
    atlas_launch_config c{};
    c.grid = {grid ? grid : 1, grid_y ? grid_y : 1, 1};
    c.block = {block, 1, 1};
    c.shared_bytes = shared_bytes;
    ASSERT_OK(atlas_backend_launch_typed(b_, k, &c, args.data(), args.size()));
    ASSERT_OK(atlas_backend_synchronize(b_));
  }
  void *Alloc(size_t bytes) {
    void *p = nullptr;
    EXPECT_OK(atlas_backend_alloc(b_, bytes, &p));
    bufs_.push_back(p);
    return p;
  }
  atlas_backend *b_;
  const char *module_;
  std::vector<void *> bufs_;
};

inline uint32_t Blocks(uint64_t n, uint32_t per) {
  return (uint32_t)((n + per - 1) / per);
}

// A host and a CUDA backend with `modules`; kernels are looked up in `module`.
class KernelCompare : public ::testing::Test {
 protected:
  KernelCompare(const char *module, const atlas_module_set *modules)
      : module_(module), modules_(modules) {}

  void SetUp() override {
    atlas_backend_options o{};
    o.modules = modules_;
    StatusResult r = Take(atlas_cuda_backend_create(&o, &cuda_));
    if (r.code == ATLAS_STATUS_UNAVAILABLE) {
      ATLAS_CUDA_SKIP("CUDA unavailable: " << r.message);
    }
    ASSERT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
    ASSERT_OK(atlas_host_backend_create(&o, &host_));
  }
  void TearDown() override {
    if (cuda_ != nullptr) EXPECT_OK(atlas_backend_destroy(cuda_));
    if (host_ != nullptr) EXPECT_OK(atlas_backend_destroy(host_));
  }

  // Runs `body` on the host and on CUDA; compares every output it returns.
  void Compare(
      const std::string &what,
      const std::function<std::vector<std::vector<float>>(KernelSide &)> &body,
      double tolerance = kTolerance) {
    std::vector<std::vector<float>> want, got;
    {
      KernelSide host(host_, module_);
      want = body(host);
    }
    {
      KernelSide cuda(cuda_, module_);
      got = body(cuda);
    }
    ASSERT_EQ(want.size(), got.size());
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(want[o].size(), got[o].size());
      double diff = 0, ref = 0;
      for (size_t i = 0; i < want[o].size(); ++i) {
        ASSERT_FALSE(std::isnan(got[o][i]))
            << what << " output " << o << " element " << i << " not written";
        ASSERT_FALSE(std::isnan(want[o][i])) << what << " (host) element " << i;
        double d = (double)got[o][i] - (double)want[o][i];
        diff += d * d;
        ref += (double)want[o][i] * (double)want[o][i];
      }
      double rel = sqrt(diff) / (sqrt(ref) > 0 ? sqrt(ref) : 1.0);
      EXPECT_LE(rel, tolerance) << what << " output " << o;
      printf("%-28s output %zu: %zu elements, relative L2 error %.3g\n",
             what.c_str(), o, want[o].size(), rel);
    }
  }

  std::vector<float> Floats(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float &x : v) x = d(rng_);
    return v;
  }
  // Random finite halves / bfloat16s of magnitude 2^-5 .. 2^1, as raw bits.
  std::vector<uint16_t> Halves(size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v) {
      uint32_t sign = rng_() & 1, exp = 10 + rng_() % 7, man = rng_() & 0x3FF;
      x = (uint16_t)((sign << 15) | (exp << 10) | man);
    }
    return v;
  }
  std::vector<uint16_t> Bfloats(size_t n) {
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v) {
      uint32_t sign = rng_() & 1, exp = 122 + rng_() % 7, man = rng_() & 0x7F;
      x = (uint16_t)((sign << 15) | (exp << 7) | man);
    }
    return v;
  }
  // The weights of `dtype` ("f32", "f16", "bf16") as bytes.
  std::vector<unsigned char> Weights(const std::string &dtype, size_t n) {
    std::vector<unsigned char> bytes;
    if (dtype == "f32") {
      std::vector<float> w = Floats(n);
      bytes.resize(n * 4);
      memcpy(bytes.data(), w.data(), bytes.size());
    } else {
      std::vector<uint16_t> w = dtype == "f16" ? Halves(n) : Bfloats(n);
      bytes.resize(n * 2);
      memcpy(bytes.data(), w.data(), bytes.size());
    }
    return bytes;
  }

  const char *module_;
  const atlas_module_set *modules_;
  std::mt19937 rng_{20261130};
  atlas_backend *host_ = nullptr;
  atlas_backend *cuda_ = nullptr;
};

}  // namespace atlas_test

#endif  // ATLAS_TESTS_CUDA_KERNEL_COMPARE_H_
