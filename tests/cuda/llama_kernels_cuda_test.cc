// The `llama` module's CUDA kernels against its host C kernels: the same
// definition, the same random inputs, the launch shapes of decoder_forward.c;
// outputs poisoned first (every element must be written) and compared by
// relative L2 error. Skips where there is no GPU.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "atlas/kernels/token_kernels.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/host_backend.h"
#include "tests/cuda/kernel_compare.h"
#include "tests/cuda/kv_types.h"
#include "tests/runtime/test_util.h"

namespace {

using atlas_test::Blocks;
using Side = atlas_test::KernelSide;

class LlamaKernelsCuda : public atlas_test::KernelCompare {
 protected:
  LlamaKernelsCuda()
      : KernelCompare(ATLAS_DECODER_MODULE, &atlas_decoder_module_set) {}
};

TEST_F(LlamaKernelsCuda, Embed) {
  for (std::string dtype : {"f32", "f16", "bf16"}) {
    const uint32_t vocab = 50, dim = 300, token = 37;
    std::vector<unsigned char> table = Weights(dtype, (size_t)vocab * dim);
    Compare("embed_" + dtype, [&](Side &s) {
      void *t = s.Upload(table.data(), table.size());
      void *out = s.Poisoned(dim);
      s.Launch(("embed_" + dtype).c_str(), Blocks(dim, 256), 256,
               {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(t),
                ATLAS_ARG_PTR(s.Step(token, 0)), ATLAS_ARG_U32(dim)});
      return std::vector<std::vector<float>>{s.Download(out, dim)};
    });
  }
}

// Up to 8 elements a thread (8192 at 1024 threads) are held in registers;
// 9001 takes the loop.
TEST_F(LlamaKernelsCuda, Rmsnorm) {
  for (uint32_t dim : {1u, 300u, 4103u, 9001u}) {
    std::vector<float> x = Floats(dim, -3, 3), w = Floats(dim, 0.5f, 1.5f);
    Compare("rmsnorm dim " + std::to_string(dim), [&](Side &s) {
      void *dx = s.Upload(x.data(), dim * 4), *dw = s.Upload(w.data(), dim * 4);
      void *out = s.Poisoned(dim);
      s.Launch("rmsnorm", 1, 1024,
               {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dx), ATLAS_ARG_PTR(dw),
                ATLAS_ARG_U32(dim), ATLAS_ARG_F32(1e-5f)});
      return std::vector<std::vector<float>>{s.Download(out, dim)};
    });
  }
}

TEST_F(LlamaKernelsCuda, Matvec) {
  // 777 columns take the scalar path, 2048 the 16-byte loads.
  for (uint32_t cols : {777u, 2048u}) {
    for (std::string dtype : {"f32", "f16", "bf16"}) {
      const uint32_t rows = 1003;
      std::vector<unsigned char> w = Weights(dtype, (size_t)rows * cols);
      std::vector<float> x = Floats(cols);
      Compare(
          "matvec_" + dtype + " cols " + std::to_string(cols), [&](Side &s) {
            void *dw = s.Upload(w.data(), w.size()),
                 *dx = s.Upload(x.data(), cols * 4);
            void *out = s.Poisoned(rows);
            s.Launch(("matvec_" + dtype).c_str(), Blocks(rows, 8), 256,
                     {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dw), ATLAS_ARG_PTR(dx),
                      ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols),
                      ATLAS_ARG_PTR(nullptr), ATLAS_ARG_F32(0.0f)});
            return std::vector<std::vector<float>>{s.Download(out, rows)};
          });
    }
  }
}

// RoPE on q and k at the step's position, and k and v into that cache row
// (the other rows keep their poison): every rotated and passed-through entry.
TEST_F(LlamaKernelsCuda, RopeStore) {
  const uint32_t n_heads = 32, n_kv = 8, head_dim = 128, rows = 5;
  const uint32_t kv_dim = n_kv * head_dim;
  for (std::string kv_type : {"f32", "f16", "bf16"}) {
    size_t es = atlas_test::KvSize(kv_type);
    for (uint32_t rot_dim : {128u, 64u}) {
      for (float theta : {10000.0f, 500000.0f}) {
        std::vector<float> inv_freq(rot_dim / 2);
        for (uint32_t i = 0; i < rot_dim / 2; ++i) {
          inv_freq[i] = (float)(1.0 / pow((double)theta, 2.0 * i / rot_dim));
        }
        for (uint32_t pos : {0u, 1u, 123u, 4000u}) {
          std::vector<float> q = Floats(n_heads * head_dim), k = Floats(kv_dim),
                             v = Floats(kv_dim);
          uint32_t row = pos % rows;  // the cache holds `rows` rows here
          // Both sides form the angle in double from the same f32 frequencies.
          Compare(
              "rope_store_" + kv_type + " rot " + std::to_string(rot_dim) +
                  " pos " + std::to_string(pos),
              [&](Side &s) {
                void *dq = s.Upload(q.data(), q.size() * 4);
                void *dk = s.Upload(k.data(), kv_dim * 4),
                     *dv = s.Upload(v.data(), kv_dim * 4);
                std::vector<unsigned char> nan = atlas_test::KvBytes(
                    std::vector<float>((size_t)rows * kv_dim, NAN), kv_type);
                void *kc = s.Upload(nan.data(), nan.size()),
                     *vc = s.Upload(nan.data(), nan.size());
                void *df = s.Upload(inv_freq.data(), inv_freq.size() * 4);
                // The cache pointers are offset so that row `pos` lands in row
                // `row`.
                char *kbase = (char *)kc + ((ptrdiff_t)row - (ptrdiff_t)pos) *
                                               kv_dim * (ptrdiff_t)es;
                char *vbase = (char *)vc + ((ptrdiff_t)row - (ptrdiff_t)pos) *
                                               kv_dim * (ptrdiff_t)es;
                uint64_t threads =
                    (uint64_t)(n_heads + n_kv) * (rot_dim / 2) + kv_dim;
                s.Launch(("rope_store_" + kv_type).c_str(),
                         Blocks(threads, 256), 256,
                         {ATLAS_ARG_PTR(dq), ATLAS_ARG_PTR(dk),
                          ATLAS_ARG_PTR(dv), ATLAS_ARG_PTR(kbase),
                          ATLAS_ARG_PTR(vbase), ATLAS_ARG_PTR(df),
                          ATLAS_ARG_U32(n_heads), ATLAS_ARG_U32(n_kv),
                          ATLAS_ARG_U32(head_dim), ATLAS_ARG_U32(rot_dim),
                          ATLAS_ARG_PTR(s.Step(0, pos)), ATLAS_ARG_F32(1.25f)});
                std::vector<float> vrow = s.DownloadKv(
                    (char *)vc + (size_t)row * kv_dim * es, kv_dim, kv_type);
                EXPECT_EQ(vrow, atlas_test::KvRounded(v, kv_type))
                    << "v is stored rounded";
                std::vector<float> other = s.DownloadKv(
                    (char *)kc + (size_t)((row + 1) % rows) * kv_dim * es,
                    kv_dim, kv_type);
                EXPECT_TRUE(std::isnan(other[0]))
                    << "only the step's row is written";
                return std::vector<std::vector<float>>{
                    s.Download(dq, q.size()),
                    s.DownloadKv((char *)kc + (size_t)row * kv_dim * es, kv_dim,
                                 kv_type)};
              });
        }
      }
    }
  }
}

TEST_F(LlamaKernelsCuda, Attention) {
  const uint32_t n_heads = 32, n_kv = 8, head_dim = 128;
  for (std::string kv_type : {"f32", "f16", "bf16"}) {
    for (uint32_t window : {0u, 5u, 256u}) {
      for (uint32_t seq_len : {1u, 7u, 300u, 1500u}) {
        std::vector<float> q = Floats(n_heads * head_dim);
        std::vector<unsigned char> kc = atlas_test::KvBytes(
            Floats((size_t)seq_len * n_kv * head_dim), kv_type);
        std::vector<unsigned char> vc = atlas_test::KvBytes(
            Floats((size_t)seq_len * n_kv * head_dim), kv_type);
        Compare("attention_" + kv_type + " seq " + std::to_string(seq_len) +
                    " window " + std::to_string(window),
                [&](Side &s) {
                  void *dq = s.Upload(q.data(), q.size() * 4);
                  void *dk = s.Upload(kc.data(), kc.size());
                  void *dv = s.Upload(vc.data(), vc.size());
                  void *att = s.Poisoned((size_t)n_heads * seq_len);
                  void *out = s.Poisoned(n_heads * head_dim);
                  s.Launch(("attention_" + kv_type).c_str(), n_heads, 256,
                           {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dq),
                            ATLAS_ARG_PTR(dk), ATLAS_ARG_PTR(dv),
                            ATLAS_ARG_PTR(att), ATLAS_ARG_U32(n_heads),
                            ATLAS_ARG_U32(n_kv), ATLAS_ARG_U32(head_dim),
                            ATLAS_ARG_PTR(s.Step(0, seq_len - 1)),
                            ATLAS_ARG_U32(window)});
                  return std::vector<std::vector<float>>{
                      s.Download(out, n_heads * head_dim)};
                });
      }
    }
  }
}

TEST_F(LlamaKernelsCuda, BiasAndHeadNorm) {
  const uint32_t n = 10001;
  std::vector<float> a = Floats(n), b = Floats(n);
  Compare("add_bias", [&](Side &s) {
    void *da = s.Upload(a.data(), n * 4), *db = s.Upload(b.data(), n * 4);
    s.Launch("add_bias", Blocks(n, 256), 256,
             {ATLAS_ARG_PTR(da), ATLAS_ARG_PTR(db), ATLAS_ARG_U32(n)});
    return std::vector<std::vector<float>>{s.Download(da, n)};
  });
  const uint32_t heads = 16, head_dim = 128;
  std::vector<float> x = Floats(heads * head_dim), w = Floats(head_dim);
  Compare("head_rmsnorm", [&](Side &s) {
    void *dx = s.Upload(x.data(), x.size() * 4);
    void *dw = s.Upload(w.data(), w.size() * 4);
    s.Launch("head_rmsnorm", heads, 32,
             {ATLAS_ARG_PTR(dx), ATLAS_ARG_PTR(dw), ATLAS_ARG_U32(heads),
              ATLAS_ARG_U32(head_dim), ATLAS_ARG_F32(1e-6f)});
    return std::vector<std::vector<float>>{s.Download(dx, x.size())};
  });
}

TEST_F(LlamaKernelsCuda, SiluMulAndAdd) {
  const uint32_t n = 10001;
  std::vector<float> a = Floats(n, -6, 6), b = Floats(n);
  for (const char *name : {"silu_mul", "add"}) {
    Compare(name, [&](Side &s) {
      void *da = s.Upload(a.data(), n * 4), *db = s.Upload(b.data(), n * 4);
      s.Launch(name, Blocks(n, 256), 256,
               {ATLAS_ARG_PTR(da), ATLAS_ARG_PTR(db), ATLAS_ARG_U32(n)});
      return std::vector<std::vector<float>>{s.Download(da, n)};
    });
  }
}

// The fused decode kernels, CUDA against host, with and without biases,
// on the scalar (777 columns) and 16-byte (2048) paths.
TEST_F(LlamaKernelsCuda, FusedQkvResidualAndGateUp) {
  for (uint32_t cols : {777u, 2048u}) {
    for (std::string dtype : {"f32", "f16", "bf16"}) {
      for (bool bias : {false, true}) {
        const uint32_t rq = 1024, rkv = 256, rows = 1003;
        std::vector<unsigned char> wq = Weights(dtype, (size_t)rq * cols);
        std::vector<unsigned char> wk = Weights(dtype, (size_t)rkv * cols);
        std::vector<unsigned char> wv = Weights(dtype, (size_t)rkv * cols);
        std::vector<unsigned char> wg = Weights(dtype, (size_t)rows * cols);
        std::vector<unsigned char> wu = Weights(dtype, (size_t)rows * cols);
        std::vector<float> x = Floats(cols), b1 = Floats(rq), b2 = Floats(rkv),
                           b3 = Floats(rkv), r0 = Floats(rows),
                           bg = Floats(rows), bu = Floats(rows);
        std::string tag =
            dtype + " cols " + std::to_string(cols) + (bias ? " bias" : "");
        Compare("matvec_qkv " + tag, [&](Side &s) {
          void *dx = s.Upload(x.data(), cols * 4);
          void *q = s.Poisoned(rq), *k = s.Poisoned(rkv), *v = s.Poisoned(rkv);
          void *dq = s.Upload(wq.data(), wq.size()),
               *dk = s.Upload(wk.data(), wk.size());
          void *dv = s.Upload(wv.data(), wv.size());
          void *db1 = bias ? s.Upload(b1.data(), rq * 4) : nullptr;
          void *db2 = bias ? s.Upload(b2.data(), rkv * 4) : nullptr;
          void *db3 = bias ? s.Upload(b3.data(), rkv * 4) : nullptr;
          s.Launch(("matvec_qkv_" + dtype).c_str(), Blocks(rq + 2 * rkv, 8),
                   256,
                   {ATLAS_ARG_PTR(q), ATLAS_ARG_PTR(k), ATLAS_ARG_PTR(v),
                    ATLAS_ARG_PTR(dq), ATLAS_ARG_PTR(dk), ATLAS_ARG_PTR(dv),
                    ATLAS_ARG_PTR(db1), ATLAS_ARG_PTR(db2), ATLAS_ARG_PTR(db3),
                    ATLAS_ARG_PTR(dx), ATLAS_ARG_U32(rq), ATLAS_ARG_U32(rkv),
                    ATLAS_ARG_U32(cols), ATLAS_ARG_PTR(nullptr),
                    ATLAS_ARG_F32(0.0f)});
          return std::vector<std::vector<float>>{
              s.Download(q, rq), s.Download(k, rkv), s.Download(v, rkv)};
        });
        // 1, 2 or 4 warps a row (where 8 * splits divides the columns).
        for (uint32_t splits : {1u, 2u, 4u}) {
          if (cols % (8 * splits) != 0) continue;
          Compare(
              "matvec_add " + tag + " splits " + std::to_string(splits),
              [&](Side &s) {
                void *dx = s.Upload(x.data(), cols * 4);
                void *acc = s.Upload(r0.data(), rows * 4);
                void *dw = s.Upload(wg.data(), wg.size());
                void *db = bias ? s.Upload(bg.data(), rows * 4) : nullptr;
                s.Launch(
                    ("matvec_add_" + dtype).c_str(), Blocks(rows * splits, 8),
                    256,
                    {ATLAS_ARG_PTR(acc), ATLAS_ARG_PTR(dw), ATLAS_ARG_PTR(dx),
                     ATLAS_ARG_PTR(db), ATLAS_ARG_U32(rows),
                     ATLAS_ARG_U32(cols), ATLAS_ARG_U32(splits)});
                return std::vector<std::vector<float>>{s.Download(acc, rows)};
              });
        }
        Compare("gate_up " + tag, [&](Side &s) {
          void *dx = s.Upload(x.data(), cols * 4);
          void *out = s.Poisoned(rows);
          void *dg = s.Upload(wg.data(), wg.size()),
               *du = s.Upload(wu.data(), wu.size());
          void *dbg = bias ? s.Upload(bg.data(), rows * 4) : nullptr;
          void *dbu = bias ? s.Upload(bu.data(), rows * 4) : nullptr;
          s.Launch(("gate_up_" + dtype).c_str(), Blocks(rows, 8), 256,
                   {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dg), ATLAS_ARG_PTR(du),
                    ATLAS_ARG_PTR(dbg), ATLAS_ARG_PTR(dbu), ATLAS_ARG_PTR(dx),
                    ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols),
                    ATLAS_ARG_PTR(nullptr), ATLAS_ARG_F32(0.0f)});
          return std::vector<std::vector<float>>{s.Download(out, rows)};
        });
      }
    }
  }
}

// The products with the RMSNorm folded in (norm_w != NULL) against the host
// twins, which equal rmsnorm then the product bit for bit (llama_test.cc).
// matvec_qkv stages x a block at a time into `cols` floats of dynamic shared
// memory: 777 columns stage and dot on the scalar paths, 2048 on the 16-byte
// ones, and 2048 with x one float off 16-byte alignment stages x element by
// element but still dots 16 bytes at a time (the shared copy is aligned).
// matvec and gate_up normalise a warp at a time, with no shared memory (they
// are launched with none, gate_up in the decode step's 64-thread blocks):
// 777 columns and the misaligned x take the scalar path, 2048 the 16-byte
// one; the device sums in another order and scales after the dot, within
// the usual 1e-5.
TEST_F(LlamaKernelsCuda, NormFoldedIntoProducts) {
  struct Shape {
    uint32_t cols, x_offset;
  };
  for (Shape sh : {Shape{777, 0}, Shape{2048, 0}, Shape{2048, 1}}) {
    for (std::string dtype : {"f32", "f16", "bf16"}) {
      const uint32_t cols = sh.cols, rq = 1024, rkv = 256, rows = 1003;
      const uint32_t shared = cols * 4;
      const float eps = 1e-5f;
      std::vector<unsigned char> wq = Weights(dtype, (size_t)rq * cols);
      std::vector<unsigned char> wk = Weights(dtype, (size_t)rkv * cols);
      std::vector<unsigned char> wv = Weights(dtype, (size_t)rkv * cols);
      std::vector<unsigned char> wg = Weights(dtype, (size_t)rows * cols);
      std::vector<unsigned char> wu = Weights(dtype, (size_t)rows * cols);
      std::vector<float> x = Floats(cols + sh.x_offset, -3, 3),
                         nw = Floats(cols, 0.5f, 1.5f), b1 = Floats(rq),
                         b2 = Floats(rkv), b3 = Floats(rkv), bg = Floats(rows),
                         bu = Floats(rows);
      std::string tag = dtype + " cols " + std::to_string(cols) +
                        (sh.x_offset ? " x off 16" : "");
      auto upload_x = [&](Side &s) {
        return (float *)s.Upload(x.data(), x.size() * 4) + sh.x_offset;
      };
      Compare("matvec+norm " + tag, [&](Side &s) {
        float *dx = upload_x(s);
        void *dn = s.Upload(nw.data(), cols * 4),
             *dw = s.Upload(wg.data(), wg.size());
        void *out = s.Poisoned(rows);
        s.LaunchShared(
            ("matvec_" + dtype).c_str(), Blocks(rows, 8), 256, 0,
            {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dw), ATLAS_ARG_PTR(dx),
             ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols), ATLAS_ARG_PTR(dn),
             ATLAS_ARG_F32(eps)});
        return std::vector<std::vector<float>>{s.Download(out, rows)};
      });
      Compare("matvec_qkv+norm " + tag, [&](Side &s) {
        float *dx = upload_x(s);
        void *dn = s.Upload(nw.data(), cols * 4);
        void *q = s.Poisoned(rq), *k = s.Poisoned(rkv), *v = s.Poisoned(rkv);
        void *dq = s.Upload(wq.data(), wq.size()),
             *dk = s.Upload(wk.data(), wk.size());
        void *dv = s.Upload(wv.data(), wv.size());
        void *db1 = s.Upload(b1.data(), rq * 4),
             *db2 = s.Upload(b2.data(), rkv * 4);
        void *db3 = s.Upload(b3.data(), rkv * 4);
        s.LaunchShared(
            ("matvec_qkv_" + dtype).c_str(), Blocks(rq + 2 * rkv, 8), 256,
            shared,
            {ATLAS_ARG_PTR(q), ATLAS_ARG_PTR(k), ATLAS_ARG_PTR(v),
             ATLAS_ARG_PTR(dq), ATLAS_ARG_PTR(dk), ATLAS_ARG_PTR(dv),
             ATLAS_ARG_PTR(db1), ATLAS_ARG_PTR(db2), ATLAS_ARG_PTR(db3),
             ATLAS_ARG_PTR(dx), ATLAS_ARG_U32(rq), ATLAS_ARG_U32(rkv),
             ATLAS_ARG_U32(cols), ATLAS_ARG_PTR(dn), ATLAS_ARG_F32(eps)});
        return std::vector<std::vector<float>>{
            s.Download(q, rq), s.Download(k, rkv), s.Download(v, rkv)};
      });
      Compare("gate_up+norm " + tag, [&](Side &s) {
        float *dx = upload_x(s);
        void *dn = s.Upload(nw.data(), cols * 4);
        void *out = s.Poisoned(rows);
        void *dg = s.Upload(wg.data(), wg.size()),
             *du = s.Upload(wu.data(), wu.size());
        void *dbg = s.Upload(bg.data(), rows * 4),
             *dbu = s.Upload(bu.data(), rows * 4);
        s.LaunchShared(
            ("gate_up_" + dtype).c_str(), Blocks(rows, 2), 64, 0,
            {ATLAS_ARG_PTR(out), ATLAS_ARG_PTR(dg), ATLAS_ARG_PTR(du),
             ATLAS_ARG_PTR(dbg), ATLAS_ARG_PTR(dbu), ATLAS_ARG_PTR(dx),
             ATLAS_ARG_U32(rows), ATLAS_ARG_U32(cols), ATLAS_ARG_PTR(dn),
             ATLAS_ARG_F32(eps)});
        return std::vector<std::vector<float>>{s.Download(out, rows)};
      });
    }
  }
}

// qkv_rope (q, k, v, RoPE and the cache store in one launch) against its
// host twin: every weight type with every cache type, full and partial
// rotary dimensions, biases, the norm folded or not, the scalar (777
// columns) and 16-byte (2048) paths, and two positions; the cache's other
// rows keep their poison. q is compared at the usual 1e-5; the cache rows
// at one unit in the last place of the cache's type (2^-11 f16, 2^-8 bf16):
// the two sides sum each row in a different order, and an f32 sum one ulp
// apart can round to neighbouring 16-bit values.
TEST_F(LlamaKernelsCuda, QkvRope) {
  const uint32_t n_heads = 32, n_kv = 8, hd = 128, rows = 5;
  const uint32_t rq = n_heads * hd, rkv = n_kv * hd;
  const float eps = 1e-5f;
  for (uint32_t cols : {777u, 2048u}) {
    for (std::string wt : {"f32", "f16", "bf16"}) {
      std::vector<unsigned char> wq = Weights(wt, (size_t)rq * cols);
      std::vector<unsigned char> wk = Weights(wt, (size_t)rkv * cols);
      std::vector<unsigned char> wv = Weights(wt, (size_t)rkv * cols);
      std::vector<float> x = Floats(cols, -3, 3), nw = Floats(cols, 0.5f, 1.5f),
                         b1 = Floats(rq), b2 = Floats(rkv), b3 = Floats(rkv);
      for (std::string kt : {"f32", "f16", "bf16"}) {
        size_t es = atlas_test::KvSize(kt);
        for (uint32_t rot : {128u, 64u}) {
          std::vector<float> inv(rot / 2);
          for (uint32_t i = 0; i < rot / 2; ++i) {
            inv[i] = (float)(1.0 / pow(500000.0, 2.0 * i / rot));
          }
          for (bool fold : {false, true}) {
            for (uint32_t pos : {3u, 4000u}) {
              uint32_t row = pos % rows;
              std::string tag = wt + " weights, " + kt + " cache, cols " +
                                std::to_string(cols) + ", rot " +
                                std::to_string(rot) +
                                (fold ? ", norm folded" : "") + ", pos " +
                                std::to_string(pos);
              const double cache_tolerance = kt == "f32"   ? 1e-5
                                             : kt == "f16" ? 0x1p-11
                                                           : 0x1p-8;
              for (bool cache_rows : {false, true}) {
                Compare(
                    "qkv_rope " + tag + (cache_rows ? " (cache rows)" : " (q)"),
                    [&](Side &s) {
                      void *dx = s.Upload(x.data(), cols * 4);
                      void *dn = fold ? s.Upload(nw.data(), cols * 4) : nullptr;
                      void *q = s.Poisoned(rq);
                      void *dq = s.Upload(wq.data(), wq.size()),
                           *dk = s.Upload(wk.data(), wk.size());
                      void *dv = s.Upload(wv.data(), wv.size());
                      void *db1 = s.Upload(b1.data(), rq * 4),
                           *db2 = s.Upload(b2.data(), rkv * 4);
                      void *db3 = s.Upload(b3.data(), rkv * 4);
                      void *df = s.Upload(inv.data(), inv.size() * 4);
                      std::vector<unsigned char> nan = atlas_test::KvBytes(
                          std::vector<float>((size_t)rows * rkv, NAN), kt);
                      void *kc = s.Upload(nan.data(), nan.size()),
                           *vc = s.Upload(nan.data(), nan.size());
                      // Offset so that position `pos` lands in row `row`.
                      ptrdiff_t shift = ((ptrdiff_t)row - (ptrdiff_t)pos) *
                                        rkv * (ptrdiff_t)es;
                      s.LaunchShared(("qkv_rope_" + wt + "_" + kt).c_str(),
                                     Blocks(rq + 2 * rkv, 16), 256, 0,
                                     {ATLAS_ARG_PTR(q),
                                      ATLAS_ARG_PTR((char *)kc + shift),
                                      ATLAS_ARG_PTR((char *)vc + shift),
                                      ATLAS_ARG_PTR(dq),
                                      ATLAS_ARG_PTR(dk),
                                      ATLAS_ARG_PTR(dv),
                                      ATLAS_ARG_PTR(db1),
                                      ATLAS_ARG_PTR(db2),
                                      ATLAS_ARG_PTR(db3),
                                      ATLAS_ARG_PTR(dx),
                                      ATLAS_ARG_U32(rq),
                                      ATLAS_ARG_U32(rkv),
                                      ATLAS_ARG_U32(cols),
                                      ATLAS_ARG_PTR(dn),
                                      ATLAS_ARG_F32(eps),
                                      ATLAS_ARG_PTR(df),
                                      ATLAS_ARG_U32(hd),
                                      ATLAS_ARG_U32(rot),
                                      ATLAS_ARG_PTR(s.Step(0, pos)),
                                      ATLAS_ARG_F32(1.0f)});
                      std::vector<float> other = s.DownloadKv(
                          (char *)kc + (size_t)((row + 1) % rows) * rkv * es,
                          rkv, kt);
                      EXPECT_TRUE(std::isnan(other[0]))
                          << "only the step's row is written";
                      if (!cache_rows)
                        return std::vector<std::vector<float>>{
                            s.Download(q, rq)};
                      return std::vector<std::vector<float>>{
                          s.DownloadKv((char *)kc + (size_t)row * rkv * es, rkv,
                                       kt),
                          s.DownloadKv((char *)vc + (size_t)row * rkv * es, rkv,
                                       kt)};
                    },
                    cache_rows ? cache_tolerance : 1e-5);
              }
            }
          }
        }
      }
    }
  }
}

// The device argmax against the host's: the first index of the largest
// logit (ties included), and the first non-finite logit's index.
TEST_F(LlamaKernelsCuda, Argmax) {
  const uint32_t n = 128256;
  struct Case {
    const char *what;
    std::function<void(std::vector<float> &)> edit;
  };
  const Case cases[] = {
      {"random", [](std::vector<float> &) {}},
      {"tie",
       [](std::vector<float> &v) {
         v[70000] = 9.0f;
         v[1234] = 9.0f;
         v[99999] = 9.0f;
       }},
      {"last", [](std::vector<float> &v) { v[n - 1] = 50.0f; }},
      {"nan",
       [](std::vector<float> &v) {
         v[5000] = NAN;
         v[7] = INFINITY;
         v[80000] = 60.0f;
       }},
      {"all -inf",
       [](std::vector<float> &v) {
         for (float &x : v) x = -INFINITY;
       }},
      {"signed zero",
       [](std::vector<float> &v) {
         for (float &x : v) x = 0.0f;
         v[3] = -0.0f;
         v[9] = 0.0f;
       }},
  };
  for (const Case &c : cases) {
    std::vector<float> logits = Floats(n, -8, 8);
    c.edit(logits);
    std::vector<uint32_t> got[2];
    atlas_backend *backends[2] = {host_, cuda_};
    for (int i = 0; i < 2; ++i) {
      Side s(backends[i], ATLAS_DECODER_MODULE);
      void *dl = s.Upload(logits.data(), n * 4);
      // The answer poisoned, the cross-block state zeroed (as allocated).
      uint32_t words[6] = {0xDEADBEEF, 0xDEADBEEF, 0, 0, 0, 0};
      void *res = s.Upload(words, sizeof(words));
      // The next step's token and position (chained decode steps).
      uint32_t step[2] = {0xDEADBEEF, 41};
      void *next = s.Upload(step, sizeof(step));
      // Twice: the state the first launch leaves must serve the second; the
      // first without `next`.
      for (int rep = 0; rep < 2; ++rep) {
        s.Launch("argmax", (n + 2047) / 2048, 256,
                 {ATLAS_ARG_PTR(res), ATLAS_ARG_PTR(dl), ATLAS_ARG_U32(n),
                  ATLAS_ARG_PTR(rep == 0 ? nullptr : next)});
      }
      std::vector<uint32_t> all = s.DownloadU32(res, 6);
      EXPECT_EQ(std::vector<uint32_t>(all.begin() + 2, all.end()),
                std::vector<uint32_t>(4, 0))
          << c.what << ": state left non-zero";
      EXPECT_EQ(s.DownloadU32(next, 2), (std::vector<uint32_t>{all[0], 42}))
          << c.what << ": the next step's token and position";
      got[i] = std::vector<uint32_t>(all.begin(), all.begin() + 2);
    }
    // The host kernel against a plain loop, then CUDA against the host.
    uint32_t best = 0, bad = UINT32_MAX;
    bool any = false;
    for (uint32_t i = 0; i < n; ++i) {
      if (!std::isfinite(logits[i])) {
        if (bad == UINT32_MAX) bad = i;
      } else if (!any || logits[i] > logits[best]) {
        best = i;
        any = true;
      }
    }
    EXPECT_EQ(got[0][0], best) << c.what;
    EXPECT_EQ(got[0][1], bad) << c.what;
    EXPECT_EQ(got[1], got[0]) << c.what;
    printf("argmax %-10s host %u/%u cuda %u/%u\n", c.what, got[0][0], got[0][1],
           got[1][0], got[1][1]);
  }
}

}  // namespace
