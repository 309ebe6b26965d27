// The `llama_batch` (prefill) module's CUDA kernels against their host C
// twins: the same random inputs, the launch shapes of decoder_prefill.c;
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

#include "atlas/kernels/prefill_kernels.h"
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

class PrefillKernelsCuda : public atlas_test::KernelCompare {
 protected:
  PrefillKernelsCuda()
      : KernelCompare(ATLAS_DECODER_BATCH_MODULE, &atlas_decoder_module_set) {}
};

#define P ATLAS_ARG_PTR
#define U ATLAS_ARG_U32
#define F ATLAS_ARG_F32

TEST_F(PrefillKernelsCuda, EmbedRows) {
  for (std::string dtype : {"f32", "f16", "bf16"}) {
    const uint32_t vocab = 50, dim = 300, n = 9;
    std::vector<unsigned char> table = Weights(dtype, (size_t)vocab * dim);
    std::vector<uint32_t> tokens = {0, 49, 3, 3, 17, 25, 1, 2, 40};
    Compare("embed_rows_" + dtype, [&](Side &s) {
      void *t = s.Upload(table.data(), table.size());
      void *ids = s.Upload(tokens.data(), n * 4);
      void *out = s.Poisoned((size_t)n * dim);
      s.Launch(("embed_rows_" + dtype).c_str(), Blocks(dim, 256), n, 256,
               {P(out), P(t), P(ids), U(n), U(dim)});
      return std::vector<std::vector<float>>{s.Download(out, (size_t)n * dim)};
    });
  }
}

TEST_F(PrefillKernelsCuda, RmsnormRows) {
  for (uint32_t dim : {1u, 300u, 4103u}) {
    const uint32_t n = 5;
    std::vector<float> x = Floats((size_t)n * dim, -3, 3),
                       w = Floats(dim, 0.5f, 1.5f);
    Compare("rmsnorm_rows dim " + std::to_string(dim), [&](Side &s) {
      void *dx = s.Upload(x.data(), x.size() * 4),
           *dw = s.Upload(w.data(), dim * 4);
      void *out = s.Poisoned((size_t)n * dim);
      s.Launch("rmsnorm_rows", n, 1, 256,
               {P(out), P(dx), P(dw), U(dim), F(1e-5f), U(n)});
      return std::vector<std::vector<float>>{s.Download(out, (size_t)n * dim)};
    });
  }
}

TEST_F(PrefillKernelsCuda, Gemm) {
  struct Shape {
    uint32_t m, n, k;
  };
  // Odd shapes take the guarded loads; the last is a real projection.
  for (Shape sh : {Shape{1, 1003, 777}, Shape{7, 130, 64}, Shape{100, 257, 99},
                   Shape{300, 512, 2048}}) {
    for (std::string dtype : {"f32", "f16", "bf16"}) {
      std::vector<unsigned char> w = Weights(dtype, (size_t)sh.n * sh.k);
      std::vector<float> x = Floats((size_t)sh.m * sh.k, -2, 2);
      std::string what = "gemm_" + dtype + " " + std::to_string(sh.m) + "x" +
                         std::to_string(sh.n) + "x" + std::to_string(sh.k);
      for (bool tall : {false, true}) {
        if (tall && dtype == "f32") continue;
        std::string name = "gemm_" + dtype + (tall ? "_m128" : "");
        Compare(name + what.substr(what.find(' ')), [&](Side &s) {
          void *dw = s.Upload(w.data(), w.size());
          void *dx = s.Upload(x.data(), x.size() * 4);
          void *out = s.Poisoned((size_t)sh.m * sh.n);
          bool f32 = dtype == "f32";
          s.Launch(name.c_str(), Blocks(sh.n, f32 ? 64 : 128),
                   Blocks(sh.m, tall ? 128 : 64), 256,
                   {P(out), P(dw), P(dx), U(sh.m), U(sh.n), U(sh.k)});
          return std::vector<std::vector<float>>{
              s.Download(out, (size_t)sh.m * sh.n)};
        });
      }
    }
  }
}

// The 16-bit mode's one-term product: x and w both 16-bit, so every product
// is exact in f32 and only the order of the f32 sums differs from the host:
// well under kTolerance.
TEST_F(PrefillKernelsCuda, Gemm16) {
  struct Shape {
    uint32_t m, n, k;
  };
  for (Shape sh : {Shape{1, 1003, 777}, Shape{7, 130, 64}, Shape{100, 257, 99},
                   Shape{300, 512, 2048}, Shape{129, 384, 4096}}) {
    for (std::string dtype : {"f16", "bf16"}) {
      std::vector<unsigned char> w = Weights(dtype, (size_t)sh.n * sh.k);
      std::vector<unsigned char> x = Weights(dtype, (size_t)sh.m * sh.k);
      std::string dims = " " + std::to_string(sh.m) + "x" +
                         std::to_string(sh.n) + "x" + std::to_string(sh.k);
      for (bool tall : {false, true}) {
        std::string name = "gemm16_" + dtype + (tall ? "_m128" : "");
        Compare(name + dims, [&](Side &s) {
          void *dw = s.Upload(w.data(), w.size());
          void *dx = s.Upload(x.data(), x.size());
          void *out = s.Poisoned((size_t)sh.m * sh.n);
          s.Launch(name.c_str(), Blocks(sh.n, 128),
                   Blocks(sh.m, tall ? 128 : 64), 256,
                   {P(out), P(dw), P(dx), U(sh.m), U(sh.n), U(sh.k)});
          return std::vector<std::vector<float>>{
              s.Download(out, (size_t)sh.m * sh.n)};
        });
      }
    }
  }
}

// f32 -> 16-bit rounding must be bit-identical to the host's (half.h): the
// outputs are compared as 16-bit patterns, including ties, overflow to
// infinity, subnormals and NaN.
TEST_F(PrefillKernelsCuda, RoundRows) {
  std::vector<float> x = Floats(1000, -70000.0f, 70000.0f);
  std::vector<float> small = Floats(1000, -1e-6f, 1e-6f);
  x.insert(x.end(), small.begin(), small.end());
  for (float v :
       {0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1.0f + 1.0f / 256,
        65520.0f, -65519.0f, 1e-8f, 3.0e38f, (float)INFINITY, (float)NAN}) {
    x.push_back(v);
  }
  const uint32_t count = (uint32_t)x.size();
  for (std::string dtype : {"f16", "bf16"}) {
    std::vector<uint16_t> want, got;
    for (int side = 0; side < 2; ++side) {
      Side s(side == 0 ? host_ : cuda_, ATLAS_DECODER_BATCH_MODULE);
      void *dx = s.Upload(x.data(), x.size() * 4);
      std::vector<uint16_t> poison(count, 0x7E01);
      void *out = s.Upload(poison.data(), count * 2);
      s.Launch(("round_rows_" + dtype).c_str(), Blocks(count, 256), 256,
               {P(out), P(dx), U(count)});
      std::vector<uint16_t> bits(count);
      ASSERT_OK(atlas_backend_d2h(s.backend(), bits.data(), out, count * 2));
      (side == 0 ? want : got) = bits;
    }
    for (uint32_t i = 0; i < count; ++i) {
      bool nan_want = dtype == "f16"
                          ? (want[i] & 0x7C00) == 0x7C00 && (want[i] & 0x3FF)
                          : (want[i] & 0x7F80) == 0x7F80 && (want[i] & 0x7F);
      if (nan_want && std::isnan(x[i])) continue;  // any NaN payload
      ASSERT_EQ(got[i], want[i]) << "round_rows_" << dtype << " of " << x[i]
                                 << " (element " << i << ")";
    }
  }
}

// The 16-bit mode's fused kernels. On each side, bit for bit the launches
// they replace (rmsnorm_rows then round_rows; the llama module's silu_mul
// then round_rows), as 16-bit patterns; then CUDA against the host twin,
// widened, within one unit roundoff of the type (the f32 values differ by
// the sums' order, so an element may round to the neighbouring 16-bit
// value; a wrong row, scale or element is O(1)). The `extreme` inputs
// (overflow past F16's range, subnormals) are checked bit for bit only.
TEST_F(PrefillKernelsCuda, FusedRoundingKernels) {
  auto bits = [](Side &s, const void *p, size_t count) {
    std::vector<uint16_t> v(count);
    EXPECT_OK(atlas_backend_d2h(s.backend(), v.data(), p, count * 2));
    return v;
  };
  auto widened = [](const std::vector<uint16_t> &v, const std::string &t) {
    std::vector<unsigned char> raw(v.size() * 2);
    memcpy(raw.data(), v.data(), raw.size());
    return atlas_test::KvFloats(raw, t);
  };
  for (std::string t : {"f16", "bf16"}) {
    double unit = t == "bf16" ? ldexp(1.0, -8) : ldexp(1.0, -11);
    for (bool extreme : {false, true}) {
      for (uint32_t dim : {1u, 33u, 256u, 300u, 4103u}) {
        const uint32_t n = 7;
        std::vector<float> x = Floats((size_t)n * dim, -3, 3);
        std::vector<float> w = Floats(dim, 0.5f, 1.5f);
        if (extreme && dim > 4) {
          w[1] = 3e5f;
          w[2] = 1e-7f;
          w[3] = -2e5f;
        }
        std::string what = "rmsnorm_rows_" + t + " dim " + std::to_string(dim) +
                           (extreme ? " extreme" : "");
        Compare(
            what,
            [&](Side &s) {
              size_t count = (size_t)n * dim;
              void *dx = s.Upload(x.data(), x.size() * 4),
                   *dw = s.Upload(w.data(), dim * 4);
              std::vector<uint16_t> poison(count, 0x7E01);
              void *fused = s.Upload(poison.data(), count * 2);
              void *parts = s.Upload(poison.data(), count * 2);
              void *f32 = s.Poisoned(count);
              s.Launch(("rmsnorm_rows_" + t).c_str(), n, 1, 256,
                       {P(fused), P(dx), P(dw), U(dim), F(1e-5f), U(n)});
              s.Launch("rmsnorm_rows", n, 1, 256,
                       {P(f32), P(dx), P(dw), U(dim), F(1e-5f), U(n)});
              s.Launch(("round_rows_" + t).c_str(), Blocks(count, 256), 256,
                       {P(parts), P(f32), U((uint32_t)count)});
              std::vector<uint16_t> got = bits(s, fused, count);
              EXPECT_EQ(got, bits(s, parts, count))
                  << what << " on " << atlas_backend_name(s.backend());
              if (extreme) return std::vector<std::vector<float>>{};
              return std::vector<std::vector<float>>{widened(got, t)};
            },
            unit);
      }
      for (uint32_t count : {1u, 255u, 257u, 100003u}) {
        std::vector<float> a = Floats(count, -12, 12), b = Floats(count, -3, 3);
        if (extreme) {
          for (uint32_t i = 0; i < count; i += 5) b[i] *= i % 2 ? 9e4f : 1e-6f;
        }
        std::string what = "silu_mul_round_" + t + " " + std::to_string(count) +
                           (extreme ? " extreme" : "");
        Compare(
            what,
            [&](Side &s) {
              void *da = s.Upload(a.data(), count * 4),
                   *db = s.Upload(b.data(), count * 4);
              std::vector<uint16_t> poison(count, 0x7E01);
              void *fused = s.Upload(poison.data(), count * 2);
              void *parts = s.Upload(poison.data(), count * 2);
              s.Launch(("silu_mul_round_" + t).c_str(), Blocks(count, 256), 256,
                       {P(fused), P(da), P(db), U(count)});
              EXPECT_EQ(s.Download(da, count), a) << "silu_mul_round leaves a";
              EXPECT_EQ(s.Download(db, count), b) << "and b";
              Side one(s.backend(), ATLAS_DECODER_MODULE);
              one.Launch("silu_mul", Blocks(count, 256), 256,
                         {P(da), P(db), U(count)});
              s.Launch(("round_rows_" + t).c_str(), Blocks(count, 256), 256,
                       {P(parts), P(da), U(count)});
              std::vector<uint16_t> got = bits(s, fused, count);
              EXPECT_EQ(got, bits(s, parts, count))
                  << what << " on " << atlas_backend_name(s.backend());
              if (extreme) return std::vector<std::vector<float>>{};
              return std::vector<std::vector<float>>{widened(got, t)};
            },
            unit);
      }
    }
  }
}

TEST_F(PrefillKernelsCuda, RopeRows) {
  const uint32_t heads = 32, head_dim = 128, n = 37;
  for (uint32_t rot : {128u, 64u}) {
    for (uint32_t pos0 : {0u, 4000u}) {
      std::vector<float> inv(rot / 2);
      for (uint32_t i = 0; i < rot / 2; ++i) {
        inv[i] = (float)(1.0 / pow(500000.0, 2.0 * i / rot));
      }
      const uint32_t stride = heads * head_dim + 3;  // rows need not be packed
      std::vector<float> x = Floats((size_t)n * stride);
      Compare(
          "rope_rows rot " + std::to_string(rot) + " pos " +
              std::to_string(pos0),
          [&](Side &s) {
            void *dx = s.Upload(x.data(), x.size() * 4);
            void *di = s.Upload(inv.data(), inv.size() * 4);
            s.Launch("rope_rows", Blocks((uint64_t)heads * rot / 2, 256), n,
                     256,
                     {P(dx), P(di), U(heads), U(head_dim), U(rot), U(pos0),
                      U(n), F(1.25f), U(stride)});
            return std::vector<std::vector<float>>{s.Download(dx, x.size())};
          });
    }
  }
}

// The tolerance of the tensor-core path (16-bit caches, head_dim % 16 ==
// 0): it rounds Q and the softmax weights P to the cache type, which the
// host twin (f32 Q and P) does not. With u the unit roundoff (BF16 2^-8,
// F16 2^-11) each weight p_t gets a relative error e_t, |e_t| <= u, roughly
// uniform, so the output's error sum_t p_t e_t v_t / l is a random walk of
// RMS u / sqrt(3) relative to the output itself (a sum of the same terms
// without e_t; v is random, so neither sum is dominated by one term). Q's
// rounding moves each scaled score by about u / sqrt(3) * |s| (|s| ~ 1 for
// these inputs), which moves the output by about as much again. Together
// ~0.8 u in relative L2; 2 u leaves margin for the sums' other rounding and
// still fails a kernel that gets a fragment, mask or tile wrong (those are
// O(1)). The SIMT path (f32 caches, other head_dims) keeps kTolerance.
double AttentionTolerance(const std::string &kv_type, uint32_t head_dim) {
  if (kv_type == "f32" || head_dim % 16 != 0) return atlas_test::kTolerance;
  return 2.0 * (kv_type == "bf16" ? ldexp(1.0, -8) : ldexp(1.0, -11));
}

TEST_F(PrefillKernelsCuda, AttentionPrefill) {
  struct Case {
    uint32_t heads, kv, dim, pos0, n, window;
  };
  // head_dim 64 / 128 (tensor cores, the fragments sized for them), 80 (the
  // 128 fragments cut short), 24 and 40 (not multiples of 16: the SIMT path
  // on every cache type); groups 1, 3, 4, 8; n 1 .. 2048 (partial row and
  // key tiles); chunks after the first (pos0 > 0); windows shorter and
  // longer than a tile.
  const Case cases[] = {
      {32, 8, 128, 0, 1, 0},     {32, 8, 128, 0, 37, 0},
      {32, 8, 64, 0, 300, 0},    {12, 4, 128, 100, 77, 0},
      {8, 8, 32, 0, 50, 0},      {32, 8, 128, 5, 200, 64},
      {6, 2, 96, 3, 45, 7},      {8, 8, 64, 0, 17, 0},
      {8, 1, 64, 40, 17, 0},     {8, 2, 64, 0, 2048, 0},
      {4, 1, 128, 0, 2048, 0},   {4, 4, 128, 1000, 300, 0},
      {16, 2, 80, 0, 300, 0},    {8, 2, 80, 70, 17, 30},
      {8, 2, 24, 0, 300, 0},     {8, 8, 40, 9, 17, 5},
      {8, 2, 64, 500, 300, 100}, {8, 1, 128, 0, 2048, 1000},
      {32, 8, 64, 0, 1, 0},      {8, 2, 64, 3000, 1, 0},
      {8, 8, 64, 130, 300, 64},
  };
  for (std::string kv_type : {"f32", "f16", "bf16"}) {
    for (Case c : cases) {
      uint32_t seq = c.pos0 + c.n, q_dim = c.heads * c.dim,
               kv_dim = c.kv * c.dim;
      std::vector<float> q = Floats((size_t)c.n * q_dim);
      std::vector<unsigned char> kc =
          atlas_test::KvBytes(Floats((size_t)seq * kv_dim, -2, 2), kv_type);
      std::vector<unsigned char> vc =
          atlas_test::KvBytes(Floats((size_t)seq * kv_dim), kv_type);
      char what[96];
      snprintf(what, sizeof(what),
               "attention_prefill_%s h%u kv%u d%u pos%u n%u w%u",
               kv_type.c_str(), c.heads, c.kv, c.dim, c.pos0, c.n, c.window);
      // Rows a block takes, as decoder_prefill.c sizes the grid.
      uint32_t rows =
          atlas_decoder_prefill_attention_rows(kv_type != "f32", c.dim);
      Compare(
          what,
          [&](Side &s) {
            void *dq = s.Upload(q.data(), q.size() * 4);
            void *dk = s.Upload(kc.data(), kc.size());
            void *dv = s.Upload(vc.data(), vc.size());
            void *out = s.Poisoned((size_t)c.n * q_dim);
            char name[ATLAS_DECODER_KERNEL_NAME_MAX];
            atlas_decoder_prefill_attention_kernel(name, kv_type.c_str(),
                                                   c.dim);
            s.Launch(name,
                     Blocks((uint64_t)c.n * (c.heads / c.kv), rows) * c.kv, 1,
                     128,
                     {P(out), P(dq), P(dk), P(dv), U(c.heads), U(c.kv),
                      U(c.dim), U(c.pos0), U(c.n), U(c.window)});
            return std::vector<std::vector<float>>{
                s.Download(out, (size_t)c.n * q_dim)};
          },
          AttentionTolerance(kv_type, c.dim));
    }
  }
}

// The chunk's f32 rows into cache rows pos0.. of each type, rounded as the
// host rounds; the rows around them keep their poison.
TEST_F(PrefillKernelsCuda, KvStoreRows) {
  const uint32_t kv_dim = 1024, rows = 40, pos0 = 7, n = 29;
  std::vector<float> k = Floats((size_t)n * kv_dim, -3, 3),
                     v = Floats((size_t)n * kv_dim);
  for (std::string kv_type : {"f32", "f16", "bf16"}) {
    size_t es = atlas_test::KvSize(kv_type);
    Compare("kv_store_rows_" + kv_type, [&](Side &s) {
      std::vector<unsigned char> nan = atlas_test::KvBytes(
          std::vector<float>((size_t)rows * kv_dim, NAN), kv_type);
      void *kc = s.Upload(nan.data(), nan.size()),
           *vc = s.Upload(nan.data(), nan.size());
      void *dk = s.Upload(k.data(), k.size() * 4),
           *dv = s.Upload(v.data(), v.size() * 4);
      s.Launch(("kv_store_rows_" + kv_type).c_str(),
               Blocks((uint64_t)n * kv_dim, 256), 1, 256,
               {P(kc), P(vc), P(dk), P(dv), U(kv_dim), U(pos0), U(n)});
      std::vector<unsigned char> kb((size_t)rows * kv_dim * es), vb(kb.size());
      EXPECT_OK(atlas_backend_d2h(s.backend(), kb.data(), kc, kb.size()));
      EXPECT_OK(atlas_backend_d2h(s.backend(), vb.data(), vc, vb.size()));
      std::vector<float> kf = atlas_test::KvFloats(kb, kv_type);
      std::vector<float> vf = atlas_test::KvFloats(vb, kv_type);
      EXPECT_TRUE(std::isnan(kf[(size_t)pos0 * kv_dim - 1]));
      EXPECT_TRUE(std::isnan(vf[(size_t)(pos0 + n) * kv_dim]));
      std::vector<float> ks(kf.begin() + (size_t)pos0 * kv_dim,
                            kf.begin() + (size_t)(pos0 + n) * kv_dim);
      std::vector<float> vs(vf.begin() + (size_t)pos0 * kv_dim,
                            vf.begin() + (size_t)(pos0 + n) * kv_dim);
      EXPECT_EQ(ks, atlas_test::KvRounded(k, kv_type));
      EXPECT_EQ(vs, atlas_test::KvRounded(v, kv_type));
      return std::vector<std::vector<float>>{ks, vs};
    });
  }
}

// The split decode attention, launched as decoder_prefill.c launches it.
std::vector<float> DecodeAttention(Side &s, const std::vector<float> &q,
                                   const std::vector<float> &kc_f,
                                   const std::vector<float> &vc_f,
                                   uint32_t heads, uint32_t kv, uint32_t dim,
                                   uint32_t seq, uint32_t window,
                                   const std::string &kv_type = "f32",
                                   uint32_t blocks = UINT32_MAX) {
  std::vector<unsigned char> kc = atlas_test::KvBytes(kc_f, kv_type);
  std::vector<unsigned char> vc = atlas_test::KvBytes(vc_f, kv_type);
  uint32_t lo = (window != 0 && seq > window) ? seq - window : 0;
  // The grid is sized for a longer context than this step's, as in a
  // captured decode step: the splits past it must return untouched.
  uint32_t splits = Blocks(seq - lo, atlas_decoder_decode_chunk(dim)) + 3;
  // As launched (room for a block per query head at short contexts) with at
  // most `blocks` blocks a KV head at long ones, or 2 * group where that is
  // more (a few: each takes several splits), or (blocks 0) one split per
  // column, a block per KV head whatever the context.
  uint32_t grid_x =
      blocks > 0 ? atlas_decoder_decode_grid_x(splits, heads / kv, blocks, dim)
                 : splits;
  void *dq = s.Upload(q.data(), q.size() * 4);
  void *dk = s.Upload(kc.data(), kc.size());
  void *dv = s.Upload(vc.data(), vc.size());
  uint32_t step[2] = {0, seq - 1};
  void *dstep = s.Upload(step, sizeof(step));
  void *part = s.Poisoned((size_t)heads * splits * (dim + 2));
  void *out = s.Poisoned((size_t)heads * dim);
  std::vector<uint32_t> zero(heads, 0);
  void *counters = s.Upload(zero.data(), zero.size() * 4);
  // Twice: the counters the first launch leaves must serve the second.
  for (int rep = 0; rep < 2; ++rep) {
    // The kernel compiled for the smallest group size that holds heads / kv
    // and for this head size.
    char name[ATLAS_DECODER_KERNEL_NAME_MAX];
    atlas_decoder_decode_kernel(name, kv_type.c_str(), heads / kv, dim);
    s.Launch(name, grid_x, kv, ATLAS_DECODER_DECODE_THREADS,
             {P(part), P(dq), P(dk), P(dv), U(heads), U(kv), U(dim), P(dstep),
              U(window), U(splits), P(out), P(counters)});
  }
  EXPECT_EQ(s.DownloadU32(counters, heads), zero) << "counters left non-zero";
  return s.Download(out, (size_t)heads * dim);
}

TEST_F(PrefillKernelsCuda, AttentionDecodeSplitOverTheContext) {
  struct Case {
    uint32_t heads, kv, dim, seq, window;
  };
  for (Case c : {Case{32, 8, 128, 1, 0}, Case{32, 8, 128, 7, 0},
                 Case{32, 8, 64, 300, 0}, Case{32, 8, 128, 1500, 0},
                 Case{32, 8, 128, 8192, 0}, Case{28, 4, 128, 700, 0},
                 Case{8, 8, 30, 513, 0}, Case{16, 2, 80, 200, 0},
                 Case{32, 8, 128, 1500, 100}, Case{32, 8, 128, 3000, 1000},
                 // two splits: per-head blocks and their merge, a window of
                 // two, a group of one
                 Case{32, 8, 64, 129, 0}, Case{32, 8, 128, 256, 0},
                 Case{32, 8, 128, 1500, 200}, Case{8, 8, 64, 180, 0},
                 // head_dim 128 in 64-key splits: four per-head splits
                 // merged, and the first context past them
                 Case{32, 8, 128, 200, 0}, Case{32, 8, 128, 257, 0}}) {
    size_t kv_dim = (size_t)c.kv * c.dim;
    std::vector<float> q = Floats((size_t)c.heads * c.dim);
    std::vector<float> kc = Floats(c.seq * kv_dim, -2, 2),
                       vc = Floats(c.seq * kv_dim);
    for (std::string kv_type : {"f32", "f16", "bf16"}) {
      char what[96];
      snprintf(what, sizeof(what), "attention_decode_%s h%u kv%u d%u seq%u w%u",
               kv_type.c_str(), c.heads, c.kv, c.dim, c.seq, c.window);
      Compare(what, [&](Side &s) {
        return std::vector<std::vector<float>>{
            DecodeAttention(s, q, kc, vc, c.heads, c.kv, c.dim, c.seq, c.window,
                            kv_type),
            DecodeAttention(s, q, kc, vc, c.heads, c.kv, c.dim, c.seq, c.window,
                            kv_type, 0),
            DecodeAttention(s, q, kc, vc, c.heads, c.kv, c.dim, c.seq, c.window,
                            kv_type, 3)};
      });
    }
  }
}

// Host only (runs without a GPU): the split host twin against the llama
// module's one-pass attention kernel, several splits and a window.
TEST(PrefillKernelsHost, DecodeSplitsMatchOnePassAttention) {
  atlas_backend_options o{};
  o.modules = &atlas_decoder_module_set;
  atlas_backend *host = nullptr;
  ASSERT_OK(atlas_host_backend_create(&o, &host));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  const uint32_t heads = 8, kv = 2;
  // 128-key splits (head_dim 16) and 64-key splits (128):
  // atlas_decoder_decode_chunk.
  for (uint32_t dim : {16u, 128u}) {
    for (uint32_t seq : {1u, 255u, 256u, 257u, 700u}) {
      for (uint32_t window : {0u, 100u}) {
        size_t kv_dim = (size_t)kv * dim;
        std::vector<float> q(heads * dim), kc(seq * kv_dim), vc(seq * kv_dim);
        for (float &x : q) x = d(rng);
        for (float &x : kc) x = 2 * d(rng);
        for (float &x : vc) x = d(rng);
        std::vector<float> split;
        {
          Side s(host, ATLAS_DECODER_BATCH_MODULE);
          split = DecodeAttention(s, q, kc, vc, heads, kv, dim, seq, window);
        }
        uint32_t lo = (window != 0 && seq > window) ? seq - window : 0;
        uint32_t n = seq - lo;
        std::vector<float> want(heads * dim), att(heads * n);
        const atlas_kernel *k = nullptr;
        ASSERT_OK(atlas_backend_kernel_lookup(host, ATLAS_DECODER_MODULE,
                                              "attention_f32", &k));
        atlas_launch_config c{};
        c.grid = {heads, 1, 1};
        c.block = {256, 1, 1};
        uint32_t step[2] = {0, n - 1};
        std::vector<atlas_arg> args = {P(want.data()),
                                       P(q.data()),
                                       P(kc.data() + lo * kv_dim),
                                       P(vc.data() + lo * kv_dim),
                                       P(att.data()),
                                       U(heads),
                                       U(kv),
                                       U(dim),
                                       P(step),
                                       U(0)};
        ASSERT_OK(
            atlas_backend_launch_typed(host, k, &c, args.data(), args.size()));
        ASSERT_OK(atlas_backend_synchronize(host));
        double diff = 0, ref = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          diff += ((double)split[i] - want[i]) * ((double)split[i] - want[i]);
          ref += (double)want[i] * want[i];
        }
        EXPECT_LE(sqrt(diff / ref), 1e-6)
            << "dim " << dim << " seq " << seq << " window " << window;
      }
    }
  }
  ASSERT_OK(atlas_backend_destroy(host));
}

}  // namespace
