// CUDA batched-prefill kernels (module "llama_batch"): a whole prompt chunk
// of `n` tokens per launch. Names and signatures match prefill_host.c; see
// prefill_kernels.h for the contract and the launch shapes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

// ---- embed_rows: out[r][:] = table[tokens[r]][:] ----------------------------

template <typename T>
__device__ void embed_rows(float *out, const T *table, const uint32_t *tokens,
                           uint32_t n, uint32_t dim) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (i < dim && r < n) {
    out[(size_t)r * dim + i] = load_w(table, (size_t)tokens[r] * dim + i);
  }
}

extern "C" __global__ void embed_rows_f32(float *out, const float *t,
                                          const uint32_t *tokens, uint32_t n,
                                          uint32_t dim) {
  embed_rows(out, t, tokens, n, dim);
}
extern "C" __global__ void embed_rows_f16(float *out, const __half *t,
                                          const uint32_t *tokens, uint32_t n,
                                          uint32_t dim) {
  embed_rows(out, t, tokens, n, dim);
}
extern "C" __global__ void embed_rows_bf16(float *out, const __nv_bfloat16 *t,
                                           const uint32_t *tokens, uint32_t n,
                                           uint32_t dim) {
  embed_rows(out, t, tokens, n, dim);
}

// ---- rmsnorm_rows: one block per row ----------------------------------------
// rmsnorm_rows_{f16,bf16}: the same f32 values rounded to nearest even (as
// round_rows) into the 16-bit input rows of the next product: bit for bit
// rmsnorm_rows then round_rows, one pass fewer.

__device__ __forceinline__ void store_out(float *o, size_t i, float v) {
  o[i] = v;
}
__device__ __forceinline__ void store_out(__half *o, size_t i, float v) {
  o[i] = __float2half_rn(v);
}
__device__ __forceinline__ void store_out(__nv_bfloat16 *o, size_t i, float v) {
  o[i] = __float2bfloat16_rn(v);
}

template <typename O>
__device__ void rmsnorm_rows_to(O *out, const float *x, const float *w,
                                uint32_t dim, float eps, uint32_t n) {
  __shared__ float shared[32];
  uint32_t r = blockIdx.x;
  if (r >= n) return;
  const float *xr = x + (size_t)r * dim;
  O *orow = out + (size_t)r * dim;
  float ss = 0.0f;
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, shared);
  float scale = rsqrtf(ss / dim + eps);
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) {
    store_out(orow, i, w[i] * (xr[i] * scale));
  }
}

extern "C" __global__ void rmsnorm_rows(float *out, const float *x,
                                        const float *w, uint32_t dim, float eps,
                                        uint32_t n) {
  rmsnorm_rows_to(out, x, w, dim, eps, n);
}
extern "C" __global__ void rmsnorm_rows_f16(__half *out, const float *x,
                                            const float *w, uint32_t dim,
                                            float eps, uint32_t n) {
  rmsnorm_rows_to(out, x, w, dim, eps, n);
}
extern "C" __global__ void rmsnorm_rows_bf16(__nv_bfloat16 *out, const float *x,
                                             const float *w, uint32_t dim,
                                             float eps, uint32_t n) {
  rmsnorm_rows_to(out, x, w, dim, eps, n);
}

// ---- silu_mul_round: silu(a) * b rounded to 16 bits --------------------------
// The down product's input: the one-token silu_mul's expression (llama.cu),
// rounded as round_rows; a and b are left as they were.
template <typename O>
__device__ void silu_mul_round(O *out, const float *a, const float *b,
                               uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = a[i];
    store_out(out, i, x / (1.0f + expf(-x)) * b[i]);
  }
}
extern "C" __global__ void silu_mul_round_f16(__half *out, const float *a,
                                              const float *b, uint32_t n) {
  silu_mul_round(out, a, b, n);
}
extern "C" __global__ void silu_mul_round_bf16(__nv_bfloat16 *out,
                                               const float *a, const float *b,
                                               uint32_t n) {
  silu_mul_round(out, a, b, n);
}

// ---- rope_rows ---------------------------------------------------------------
// Row r of x (at x + r * row_stride) holds n_heads heads of head_dim at
// position pos0 + r; the first rot_dim dims of each head rotate as
// rotate_half pairs (i, i + rot_dim / 2) by angle pos * inv_freq[i], and
// cos/sin are scaled by attention_factor (1 without rope scaling).
extern "C" __global__ void rope_rows(float *x, const float *inv_freq,
                                     uint32_t n_heads, uint32_t head_dim,
                                     uint32_t rot_dim, uint32_t pos0,
                                     uint32_t n, float attention_factor,
                                     uint32_t row_stride) {
  uint32_t half = rot_dim / 2;
  uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (idx >= n_heads * half || r >= n) return;
  uint32_t h = idx / half, i = idx % half;
  // The angle in double, as the host twin does (positions reach 1e5+).
  double angle = (double)(pos0 + r) * (double)inv_freq[i];
  double csd, snd;
  sincos(angle, &snd, &csd);
  // Scaled in double, then rounded: exactly as the one-token rope kernel.
  float cs = (float)(csd * attention_factor),
        sn = (float)(snd * attention_factor);
  float *v = x + (size_t)r * row_stride + (size_t)h * head_dim;
  float x0 = v[i], x1 = v[i + half];
  v[i] = x0 * cs - x1 * sn;
  v[i + half] = x1 * cs + x0 * sn;
}

// ---- gemm: out[m][n] = sum_k x[m][k] * w[n][k] ------------------------------
// 16-bit weights: tensor cores (mma.sync m16n8k16, f32 accumulate). The f32
// activations are split x = hi + mid + lo into three 16-bit values and each
// is multiplied (each product is exact in f32), so the result carries all 24
// bits of x (BF16: 8 + 8 + 8) instead of 8: prefill agrees with the f32
// decode path and the host reference to ~1e-6. Two terms (16 bits) left
// 3e-5 on 1000-token BF16 prompts measured on the H200.

namespace {

constexpr int kBN = 128, kBK = 32, kLds = kBK + 8;  // +8: no conflicts

template <typename T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float *c, const uint32_t *a,
                                             const uint32_t *b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  static __device__ __forceinline__ __nv_bfloat16 from(float v) {
    return __float2bfloat16_rn(v);
  }
  static __device__ __forceinline__ float back(__nv_bfloat16 v) {
    return __bfloat162float(v);
  }
};
template <>
struct Mma<__half> {
  static __device__ __forceinline__ void run(float *c, const uint32_t *a,
                                             const uint32_t *b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  static __device__ __forceinline__ __half from(float v) {
    return __float2half_rn(v);
  }
  static __device__ __forceinline__ float back(__half v) {
    return __half2float(v);
  }
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, const void *p) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t *r, const void *p) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(a));
}

// Shared by the product kernels below: 8 consecutive 16-bit values of row
// r0 + idx / 4, columns k0 + (idx % 4) * 8.. of a (rows x K) matrix, zeros
// past its edges.
template <typename T>
__device__ __forceinline__ uint4 fetch8(const T *src, uint32_t rows,
                                        uint32_t r0, uint32_t k0, uint32_t K,
                                        bool vec, int idx) {
  int row = idx / 4, kk = (idx % 4) * 8;
  uint32_t r = r0 + row, k = k0 + kk;
  if (vec && r < rows && k + 7 < K) {
    return *reinterpret_cast<const uint4 *>(src + (size_t)r * K + k);
  }
  __align__(16) T tmp[8];
  for (int j = 0; j < 8; ++j) {
    tmp[j] = (r < rows && k + j < K) ? src[(size_t)r * K + k + j]
                                     : Mma<T>::from(0.0f);
  }
  return *reinterpret_cast<uint4 *>(tmp);
}

// The warp's four n8 B fragments of k-step ks from the weight tile.
template <typename T>
__device__ __forceinline__ void b_fragments(uint32_t (&bf)[4][2], const T *bs,
                                            int wn, int ks, int lane) {
#pragma unroll
  for (int ni = 0; ni < 4; ++ni) {
    int row = wn * 32 + ni * 8 + (lane % 8), col = ks + ((lane / 8) % 2) * 8;
    ldmatrix_x2(bf[ni], &bs[row * kLds + col]);
  }
}

// The block's accumulators to out (row-major M x N), inside its edges.
template <int BM, int MI>
__device__ __forceinline__ void write_tile(float *out,
                                           const float (&acc)[MI][4][4],
                                           uint32_t M, uint32_t N, uint32_t m0,
                                           uint32_t n0, int wm, int wn,
                                           int lane) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      uint32_t n = n0 + wn * 32 + ni * 8 + (lane % 4) * 2;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        uint32_t m = m0 + wm * (BM / 2) + mi * 16 + lane / 4 + half * 8;
        if (m >= M) continue;
        float *o = out + (size_t)m * N;
        if (n < N) o[n] = acc[mi][ni][half * 2];
        if (n + 1 < N) o[n + 1] = acc[mi][ni][half * 2 + 1];
      }
    }
  }
}

// Block tile BM x 128 x 32 (BM 64 or 128), 8 warps as 2 (m) x 4 (n), each
// (BM / 2) x 32. Global loads of the next k-tile go to registers while the
// current one is multiplied from shared memory.
template <typename T, int BM>
__device__ void gemm_tc(float *out, const T *w, const float *x, uint32_t M,
                        uint32_t N, uint32_t K) {
  constexpr int MI = BM / 32;                  // m16 tiles per warp
  constexpr int A_LOADS = BM * kBK / 4 / 256;  // float4 loads per thread
  __shared__ __align__(16) T a_hi[BM * kLds];
  __shared__ __align__(16) T a_mid[BM * kLds];
  __shared__ __align__(16) T a_lo[BM * kLds];
  __shared__ __align__(16) T bs[kBN * kLds];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;
  const uint32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * kBN;
  const bool vec = (K % 8) == 0;

  float xr[A_LOADS][4];
  uint4 wr[2];
  auto load = [&](uint32_t k0) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      int idx = tid + i * 256, row = idx / 8, kk = (idx % 8) * 4;
      uint32_t m = m0 + row, k = k0 + kk;
      if (vec && m < M && k + 3 < K) {
        float4 v = *reinterpret_cast<const float4 *>(x + (size_t)m * K + k);
        xr[i][0] = v.x;
        xr[i][1] = v.y;
        xr[i][2] = v.z;
        xr[i][3] = v.w;
      } else {
        for (int j = 0; j < 4; ++j) {
          xr[i][j] = (m < M && k + j < K) ? x[(size_t)m * K + k + j] : 0.0f;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
      wr[i] = fetch8(w, N, n0, k0, K, vec, tid + i * 256);
  };
  auto store = [&]() {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      int idx = tid + i * 256, row = idx / 8, kk = (idx % 8) * 4;
      __align__(8) T hi[4];
      __align__(8) T mid[4];
      __align__(8) T lo[4];
      for (int j = 0; j < 4; ++j) {
        hi[j] = Mma<T>::from(xr[i][j]);
        float rest = xr[i][j] - Mma<T>::back(hi[j]);  // exact in f32
        mid[j] = Mma<T>::from(rest);
        lo[j] = Mma<T>::from(rest - Mma<T>::back(mid[j]));
      }
      *reinterpret_cast<uint2 *>(&a_hi[row * kLds + kk]) =
          *reinterpret_cast<uint2 *>(hi);
      *reinterpret_cast<uint2 *>(&a_mid[row * kLds + kk]) =
          *reinterpret_cast<uint2 *>(mid);
      *reinterpret_cast<uint2 *>(&a_lo[row * kLds + kk]) =
          *reinterpret_cast<uint2 *>(lo);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      int idx = tid + i * 256, row = idx / 4, kk = (idx % 4) * 8;
      *reinterpret_cast<uint4 *>(&bs[row * kLds + kk]) = wr[i];
    }
  };

  float acc[MI][4][4];
#pragma unroll
  for (int a = 0; a < MI; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  const uint32_t tiles = (K + kBK - 1) / kBK;
  load(0);
  store();
  __syncthreads();
  for (uint32_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) load((t + 1) * kBK);
#pragma unroll
    for (int ks = 0; ks < kBK; ks += 16) {
      uint32_t ah[MI][4], am[MI][4], al[MI][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        int row = wm * (BM / 2) + mi * 16 + (lane % 16),
            col = ks + (lane / 16) * 8;
        ldmatrix_x4(ah[mi], &a_hi[row * kLds + col]);
        ldmatrix_x4(am[mi], &a_mid[row * kLds + col]);
        ldmatrix_x4(al[mi], &a_lo[row * kLds + col]);
      }
      b_fragments(bf, bs, wn, ks, lane);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
          // Smallest first, as a sum of decreasing terms would be.
          Mma<T>::run(acc[mi][ni], al[mi], bf[ni]);
          Mma<T>::run(acc[mi][ni], am[mi], bf[ni]);
          Mma<T>::run(acc[mi][ni], ah[mi], bf[ni]);
        }
      }
    }
    if (t + 1 < tiles) {
      __syncthreads();  // everyone is done reading the tile
      store();
      __syncthreads();
    }
  }

  write_tile<BM, MI>(out, acc, M, N, m0, n0, wm, wn, lane);
}

// 16-bit activations (the "stated error" mode, a 16-bit KV cache): x was
// rounded once to the weights' type (round_rows), so one mma per fragment
// does the product: a third of gemm_tc's tensor-core work and half its x
// traffic. Same tiles and pipeline as gemm_tc.
template <typename T, int BM>
__device__ void gemm16_tc(float *out, const T *w, const T *x, uint32_t M,
                          uint32_t N, uint32_t K) {
  constexpr int MI = BM / 32;                  // m16 tiles per warp
  constexpr int A_LOADS = BM * kBK / 8 / 256;  // uint4 (8 x T) per thread
  __shared__ __align__(16) T as[BM * kLds];
  __shared__ __align__(16) T bs[kBN * kLds];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;
  const uint32_t m0 = blockIdx.y * BM, n0 = blockIdx.x * kBN;
  const bool vec = (K % 8) == 0;

  uint4 xr[A_LOADS];
  uint4 wr[2];
  // Rows of 32 k-values as four uint4 of 8 (x rows from m0, w rows from n0).
  auto load = [&](uint32_t k0) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i)
      xr[i] = fetch8(x, M, m0, k0, K, vec, tid + i * 256);
#pragma unroll
    for (int i = 0; i < 2; ++i)
      wr[i] = fetch8(w, N, n0, k0, K, vec, tid + i * 256);
  };
  auto store = [&]() {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      int idx = tid + i * 256, row = idx / 4, kk = (idx % 4) * 8;
      *reinterpret_cast<uint4 *>(&as[row * kLds + kk]) = xr[i];
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      int idx = tid + i * 256, row = idx / 4, kk = (idx % 4) * 8;
      *reinterpret_cast<uint4 *>(&bs[row * kLds + kk]) = wr[i];
    }
  };

  float acc[MI][4][4];
#pragma unroll
  for (int a = 0; a < MI; ++a)
#pragma unroll
    for (int b = 0; b < 4; ++b)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[a][b][c] = 0.0f;

  const uint32_t tiles = (K + kBK - 1) / kBK;
  load(0);
  store();
  __syncthreads();
  for (uint32_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) load((t + 1) * kBK);
#pragma unroll
    for (int ks = 0; ks < kBK; ks += 16) {
      uint32_t af[MI][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        int row = wm * (BM / 2) + mi * 16 + (lane % 16),
            col = ks + (lane / 16) * 8;
        ldmatrix_x4(af[mi], &as[row * kLds + col]);
      }
      b_fragments(bf, bs, wn, ks, lane);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) Mma<T>::run(acc[mi][ni], af[mi], bf[ni]);
    }
    if (t + 1 < tiles) {
      __syncthreads();  // everyone is done reading the tile
      store();
      __syncthreads();
    }
  }

  write_tile<BM, MI>(out, acc, M, N, m0, n0, wm, wn, lane);
}

// F32 weights: a plain shared-memory tiled product (64 x 64 x 16, 4 x 4
// outputs per thread) in f32, the host's arithmetic up to summation order.
__device__ void gemm_f32_tiled(float *out, const float *w, const float *x,
                               uint32_t M, uint32_t N, uint32_t K) {
  __shared__ float xs[16][64 + 1];
  __shared__ float ws[16][64 + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const uint32_t m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (uint32_t k0 = 0; k0 < K; k0 += 16) {
    for (int i = tid; i < 64 * 16; i += 256) {
      int r = i / 16, k = i % 16;
      uint32_t m = m0 + r, n = n0 + r, kk = k0 + k;
      xs[k][r] = (m < M && kk < K) ? x[(size_t)m * K + kk] : 0.0f;
      ws[k][r] = (n < N && kk < K) ? w[(size_t)n * K + kk] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      float a[4], b[4];
      for (int i = 0; i < 4; ++i) a[i] = xs[k][ty * 4 + i];
      for (int j = 0; j < 4; ++j) b[j] = ws[k][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    uint32_t m = m0 + ty * 4 + i;
    if (m >= M) continue;
    for (int j = 0; j < 4; ++j) {
      uint32_t n = n0 + tx * 4 + j;
      if (n < N) out[(size_t)m * N + n] = acc[i][j];
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256)
    gemm_f32(float *out, const float *w, const float *x, uint32_t m, uint32_t n,
             uint32_t k) {
  gemm_f32_tiled(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm_f16(float *out, const __half *w, const float *x, uint32_t m,
             uint32_t n, uint32_t k) {
  gemm_tc<__half, 64>(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm_bf16(float *out, const __nv_bfloat16 *w, const float *x, uint32_t m,
              uint32_t n, uint32_t k) {
  gemm_tc<__nv_bfloat16, 64>(out, w, x, m, n, k);
}
// 128-row tiles for products with enough tiles to fill the GPU.
extern "C" __global__ void __launch_bounds__(256)
    gemm_f16_m128(float *out, const __half *w, const float *x, uint32_t m,
                  uint32_t n, uint32_t k) {
  gemm_tc<__half, 128>(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm_bf16_m128(float *out, const __nv_bfloat16 *w, const float *x,
                   uint32_t m, uint32_t n, uint32_t k) {
  gemm_tc<__nv_bfloat16, 128>(out, w, x, m, n, k);
}

// One term: x already in the weights' 16-bit type (round_rows).
extern "C" __global__ void __launch_bounds__(256)
    gemm16_f16(float *out, const __half *w, const __half *x, uint32_t m,
               uint32_t n, uint32_t k) {
  gemm16_tc<__half, 64>(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm16_bf16(float *out, const __nv_bfloat16 *w, const __nv_bfloat16 *x,
                uint32_t m, uint32_t n, uint32_t k) {
  gemm16_tc<__nv_bfloat16, 64>(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm16_f16_m128(float *out, const __half *w, const __half *x, uint32_t m,
                    uint32_t n, uint32_t k) {
  gemm16_tc<__half, 128>(out, w, x, m, n, k);
}
extern "C" __global__ void __launch_bounds__(256)
    gemm16_bf16_m128(float *out, const __nv_bfloat16 *w, const __nv_bfloat16 *x,
                     uint32_t m, uint32_t n, uint32_t k) {
  gemm16_tc<__nv_bfloat16, 128>(out, w, x, m, n, k);
}

// ---- round_rows: f32 -> 16-bit, round to nearest even -----------------------
extern "C" __global__ void round_rows_f16(__half *out, const float *x,
                                          uint32_t count) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __float2half_rn(x[i]);
}
extern "C" __global__ void round_rows_bf16(__nv_bfloat16 *out, const float *x,
                                           uint32_t count) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = __float2bfloat16_rn(x[i]);
}

// ---- attention_prefill: causal, tiled, online softmax, GQA-aware -----------
// The rows of a block are (query position, head) pairs that share one KV head
// (pair p = token * group + head-in-group). Keys of query position p: max(0,
// p - window + 1) .. p (window 0: from 0). head_dim <= 128.
//
// F32 caches, and 16-bit caches whose head_dim is not a multiple of 16 (SIMT,
// f32 math; grid (ceil(pairs / 16), n_kv), block 128): a block takes 16 pairs
// and walks the keys they may see in tiles of 32 held in shared memory; each
// warp owns 4 pairs and keeps its running max, sum and output in registers.
//
// F16/BF16 caches with head_dim % 16 == 0 (tensor cores, FlashAttention-2;
// grid (ceil(pairs / 64), n_kv), block 128): see attention_flash below.
// prefill_kernels.h's atlas_llama_prefill_attention_rows() picks the grid.

namespace {
constexpr int kRows = 16, kKeys = 32, kMaxD = 128;
}

// The SIMT kernel's shared memory (a struct: the 16-bit kernels share its
// bytes with the tensor-core path's tiles).
struct PrefillSimtShared {
  float qs[kRows][kMaxD];
  float ks[kKeys][kMaxD + 1];
  float vs[kKeys][kMaxD];
};

// Four consecutive cache entries (i % 4 == 0 and the row 4-aligned).
__device__ __forceinline__ float4 kv4(const float *p, size_t i) {
  return *reinterpret_cast<const float4 *>(p + i);
}
template <typename C>
__device__ __forceinline__ float4 kv4(const C *p, size_t i) {
  uint2 raw = *reinterpret_cast<const uint2 *>(p + i);
  const C *e = reinterpret_cast<const C *>(&raw);
  float4 r;
  r.x = load_w(e, 0), r.y = load_w(e, 1), r.z = load_w(e, 2),
  r.w = load_w(e, 3);
  return r;
}

// The chunk's keys and values (f32 rows of kv_dim) into cache rows pos0.. of
// the cache's type: grid ceil(n * kv_dim / 256), block 256.
template <typename C>
__device__ void kv_store_rows(C *kc, C *vc, const float *k, const float *v,
                              uint32_t kv_dim, uint32_t pos0, uint32_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n * kv_dim) return;
  size_t at = (size_t)pos0 * kv_dim + i;
  store_kv(kc, at, k[i]);
  store_kv(vc, at, v[i]);
}

// The row tile of this block: grid (tiles * n_kv), block b takes KV head
// b % n_kv and tiles from the last (the rows with the most keys) down, every
// head's long tiles before any head's short ones, so the short ones fill the
// tail. (A grid of (tiles, n_kv) ran one head's tiles after another: 10%
// slower at 2048 tokens on the H200.)
__device__ __forceinline__ uint32_t heavy_first_tile(uint32_t n_kv) {
  return gridDim.x / n_kv - 1 - blockIdx.x / n_kv;
}

template <typename C>
__device__ void attention_prefill(PrefillSimtShared &sh, float *out,
                                  const float *q, const C *kc, const C *vc,
                                  uint32_t n_heads, uint32_t n_kv,
                                  uint32_t head_dim, uint32_t pos0, uint32_t n,
                                  uint32_t window) {
  float(*qs)[kMaxD] = sh.qs;
  float(*ks)[kMaxD + 1] = sh.ks;
  float(*vs)[kMaxD] = sh.vs;
  const uint32_t group = n_heads / n_kv, kvh = blockIdx.x % n_kv;
  const uint32_t pairs = n * group, first = heavy_first_tile(n_kv) * kRows;
  const uint32_t q_dim = n_heads * head_dim, kv_dim = n_kv * head_dim;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float scale = rsqrtf((float)head_dim);
  if (first >= pairs) return;
  const uint32_t last = min(first + kRows, pairs) - 1;

  for (uint32_t i = threadIdx.x; i < kRows * head_dim; i += blockDim.x) {
    uint32_t r = i / head_dim, d = i % head_dim, p = first + r;
    qs[r][d] = p < pairs ? q[(size_t)(p / group) * q_dim +
                             (size_t)(kvh * group + p % group) * head_dim + d]
                         : 0.0f;
  }

  uint32_t pos[4], lo[4];
  bool live[4];
  float m[4], l[4], o[4][kMaxD / 32];
  for (int j = 0; j < 4; ++j) {
    uint32_t p = first + warp * 4 + j;
    live[j] = p < pairs;
    pos[j] = pos0 + (live[j] ? p / group : 0);
    lo[j] = (window != 0 && pos[j] + 1 > window) ? pos[j] + 1 - window : 0;
    m[j] = -INFINITY;
    l[j] = 0.0f;
    for (int i = 0; i < kMaxD / 32; ++i) o[j][i] = 0.0f;
  }
  const uint32_t hi = pos0 + last / group;
  const uint32_t lo_block = (window != 0 && pos0 + first / group + 1 > window)
                                ? pos0 + first / group + 1 - window
                                : 0;

  for (uint32_t t0 = lo_block; t0 <= hi; t0 += kKeys) {
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < kKeys * head_dim; i += blockDim.x) {
      uint32_t key = i / head_dim, d = i % head_dim, t = t0 + key;
      size_t at = (size_t)t * kv_dim + (size_t)kvh * head_dim + d;
      ks[key][d] = t <= hi ? load_w(kc, at) : 0.0f;
      vs[key][d] = t <= hi ? load_w(vc, at) : 0.0f;
    }
    __syncthreads();
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int r0 = warp * 4;
    for (uint32_t d = 0; d < head_dim; ++d) {
      float kd = ks[lane][d];
      s[0] += qs[r0][d] * kd;
      s[1] += qs[r0 + 1][d] * kd;
      s[2] += qs[r0 + 2][d] * kd;
      s[3] += qs[r0 + 3][d] * kd;
    }
    const uint32_t t = t0 + lane;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      bool valid = live[j] && t <= pos[j] && t >= lo[j];
      float sj = valid ? s[j] * scale : -INFINITY;
      float mt = sj;
      for (int off = 16; off > 0; off >>= 1) {
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
      }
      float m_new = fmaxf(m[j], mt);
      if (m_new == -INFINITY) continue;  // nothing visible yet (warp-uniform)
      float alpha = expf(m[j] - m_new);  // m[j] = -inf gives 0
      float pj = valid ? expf(sj - m_new) : 0.0f;
      float ps = pj;
      for (int off = 16; off > 0; off >>= 1) {
        ps += __shfl_xor_sync(0xffffffffu, ps, off);
      }
      l[j] = l[j] * alpha + ps;
      m[j] = m_new;
#pragma unroll
      for (int i = 0; i < kMaxD / 32; ++i) o[j][i] *= alpha;
      for (int kk = 0; kk < kKeys; ++kk) {
        float pk = __shfl_sync(0xffffffffu, pj, kk);
#pragma unroll
        for (int i = 0; i < kMaxD / 32; ++i) {
          uint32_t d = lane + 32 * i;
          if (d < head_dim) o[j][i] += pk * vs[kk][d];
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (!live[j]) continue;
    uint32_t p = first + warp * 4 + j;
    float *orow = out + (size_t)(p / group) * q_dim +
                  (size_t)(kvh * group + p % group) * head_dim;
    for (int i = 0; i < kMaxD / 32; ++i) {
      uint32_t d = lane + 32 * i;
      if (d < head_dim) orow[d] = o[j][i] / l[j];
    }
  }
}

// ---- attention_flash: the tensor-core prefill attention (16-bit caches) ----
// FlashAttention-2 on mma.sync m16n8k16 (f32 accumulate). A block owns 64
// pairs (4 warps x 16 rows) of one KV head, so a group's heads share every
// K/V tile they load. Q is rounded to the cache type once (shared memory,
// then A fragments held in registers); K and V tiles of 64 keys come from the
// cache by cp.async, V(j) landing while S = Q K(j)^T and the softmax run and
// K(j+1) while O += P V(j) runs. The softmax is online in f32 (2^(s *
// log2(e) / sqrt(head_dim) - max), one fma and ex2); P is rounded to the
// cache type for the second product. Warps skip the tiles none of their rows
// see and mask only the tiles some of their rows see in part. Rounding Q and P
// costs about 2^-8 relative (BF16), 2^-11 (F16), what a 16-bit cache's own
// rounding costs; an F16 cache also needs |q| < 65504, as it needs |k|.

namespace {
constexpr int kFlashWarps = 4, kFlashRows = 16 * kFlashWarps, kFlashKeys = 64;
// K and V tiles, kFlashKeys rows of up to kMaxD (+8: ldmatrix without bank
// conflicts), in elements; Q is staged in V's (kFlashRows == kFlashKeys).
constexpr int kFlashTile = kFlashKeys * (kMaxD + 8);
static_assert(kFlashRows == kFlashKeys, "Q is staged in the V tile");
constexpr size_t kPrefillShared = sizeof(PrefillSimtShared) > 2 * kFlashTile * 2
                                      ? sizeof(PrefillSimtShared)
                                      : 2 * kFlashTile * 2;
}  // namespace

// Two f32 values rounded to the cache type, packed: `lo` in the low half (the
// element with the smaller index in an mma fragment).
template <typename C>
struct Pack2;
template <>
struct Pack2<__half> {
  static __device__ __forceinline__ uint32_t rn(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};
template <>
struct Pack2<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t rn(float lo, float hi) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
};

// 2^x, flushing results below 2^-126 to 0 (exp2f adds a denormal fix-up to
// the same instruction): softmax weights that small change nothing.
__device__ __forceinline__ float exp2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t *r, const void *p) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(a));
}

// 16 bytes global -> shared, or 16 zero bytes when !valid (nothing is read
// then; `src` must still be a valid address).
__device__ __forceinline__ void cp_async16(void *dst, const void *src,
                                           bool valid) {
  uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// HD: the head_dim the fragments are sized for (64 or 128); hd <= HD, a
// multiple of 16, is the real one (64 and 128 are passed as constants; the
// head_dim-128 kernel fits 166 registers, 3 blocks an SM, only with
// __launch_bounds__(128, 3): 206 without; the head_dim-64 one 128 at 4).
// sm: 2 * kFlashTile elements of shared memory.
template <typename C, int HD>
__device__ __forceinline__ void attention_flash(C *sm, float *out,
                                                const float *q, const C *kc,
                                                const C *vc, uint32_t n_heads,
                                                uint32_t n_kv, uint32_t hd,
                                                uint32_t pos0, uint32_t n,
                                                uint32_t window) {
  constexpr int LD = HD + 8, KT = HD / 16, NT = HD / 8, KS = kFlashKeys / 16;
  C *ks = sm, *vs = sm + kFlashTile;
  const uint32_t group = n_heads / n_kv, kvh = blockIdx.x % n_kv;
  const uint32_t pairs = n * group, first = heavy_first_tile(n_kv) * kFlashRows;
  const uint32_t q_dim = n_heads * hd, kv_dim = n_kv * hd;
  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (first >= pairs) return;
  auto lo_of = [window](uint32_t pos) {
    return (window != 0 && pos + 1 > window) ? pos + 1 - window : 0u;
  };
  // Keys the block's rows see: t_begin .. hi (rows in position order).
  const uint32_t hi = pos0 + (min(first + kFlashRows, pairs) - 1) / group;
  const uint32_t t_begin = lo_of(pos0 + first / group);
  const C *kbase = kc + (size_t)kvh * hd, *vbase = vc + (size_t)kvh * hd;
  const uint32_t chunks = hd / 8;  // 16-byte pieces of a row
  // Keys t0 .. t0 + 63 of K or V into `dst`; keys past hi (maybe past the
  // cache's end) as zeros: finite, and masked out.
  auto load_tile = [&](C *dst, const C *src, uint32_t t0) {
    for (uint32_t i = tid; i < kFlashKeys * chunks; i += 32 * kFlashWarps) {
      const uint32_t key = i / chunks, c = (i % chunks) * 8, t = t0 + key;
      const bool ok = t <= hi;
      cp_async16(dst + key * LD + c, ok ? src + (size_t)t * kv_dim + c : src,
                 ok);
    }
    cp_async_commit();
  };
  load_tile(ks, kbase, t_begin);

  // Q rows in the cache type (zeros for pairs past the end), into V's tile,
  // then A fragments: rows warp * 16 .. + 15, head_dim in steps of 16.
  for (uint32_t i = tid; i < kFlashRows * (hd / 4); i += 32 * kFlashWarps) {
    const uint32_t r = i / (hd / 4), d = (i % (hd / 4)) * 4, p = first + r;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (p < pairs) {
      v = *reinterpret_cast<const float4 *>(
          q + (size_t)(p / group) * q_dim +
          (size_t)(kvh * group + p % group) * hd + d);
    }
    uint2 h;
    h.x = Pack2<C>::rn(v.x, v.y);
    h.y = Pack2<C>::rn(v.z, v.w);
    *reinterpret_cast<uint2 *>(vs + r * LD + d) = h;
  }
  __syncthreads();
  uint32_t qf[KT][4];
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) {
    if (kk * 16 < (int)hd) {
      ldmatrix_x4(qf[kk], vs + (warp * 16 + lane % 16) * LD + kk * 16 +
                              (lane / 16) * 8);
    }
  }

  // This warp's rows: wfirst .. wlast; this lane's: lane / 4 and lane / 4 + 8
  // (the accumulator rows of m16n8k16), visible keys rlo .. rpos (none for a
  // pair past the end).
  const uint32_t wfirst = first + warp * 16;
  const bool warp_live = wfirst < pairs;
  const uint32_t wlast = min(wfirst + 15, pairs - 1);
  const uint32_t w_pos_first = pos0 + wfirst / group,
                 w_pos_last = pos0 + wlast / group;
  const uint32_t w_lo_first = lo_of(w_pos_first), w_lo_last = lo_of(w_pos_last);
  uint32_t rpos[2], rlo[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t p = wfirst + lane / 4 + 8 * j;
    rpos[j] = p < pairs ? pos0 + p / group : 0;
    rlo[j] = p < pairs ? lo_of(rpos[j]) : 0xFFFFFFFFu;
  }
  const float scale_log2 = rsqrtf((float)hd) * 1.4426950408889634f;
  float o[NT][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < NT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;

  for (uint32_t t0 = t_begin; t0 <= hi; t0 += kFlashKeys) {
    cp_async_wait_all();
    __syncthreads();  // K(t0) is in; every warp is done with V's tile
    load_tile(vs, vbase, t0);
    // Warp-uniform: does any row see a key of the tile; do all see all?
    // (Pairs past the end may count as seeing all: they are never written.)
    const bool act =
        warp_live && t0 <= w_pos_last && t0 + (kFlashKeys - 1) >= w_lo_first;
    const bool full = t0 + (kFlashKeys - 1) <= w_pos_first && t0 >= w_lo_last;
    uint32_t pf[KS][4];  // P as A fragments, keys 16 * k .. + 15
    if (act) {
      float s[2 * KS][4];
#pragma unroll
      for (int i = 0; i < 2 * KS; ++i)
        s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < KT; ++kk) {
        if (kk * 16 < (int)hd) {
#pragma unroll
          for (int np = 0; np < KS; ++np) {
            // B fragments of keys np * 16 .. + 7 and + 8 .. + 15 (K rows are
            // the n index; ldmatrix's matrices: k 0-7, k 8-15 of each).
            uint32_t b[4];
            ldmatrix_x4(b, ks + (np * 16 + lane % 8 + (lane / 16) * 8) * LD +
                               kk * 16 + ((lane / 8) % 2) * 8);
            Mma<C>::run(s[2 * np], qf[kk], b);
            Mma<C>::run(s[2 * np + 1], qf[kk], b + 2);
          }
        }
      }
      // s[i][e]: row lane / 4 + 8 * (e / 2), key t0 + 8 * i + 2 * (lane % 4) +
      // e % 2. Unscaled (scale_log2 > 0 keeps the max); the exponent is one
      // fma.
      if (!full) {
#pragma unroll
        for (int i = 0; i < 2 * KS; ++i) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const uint32_t t = t0 + 8 * i + 2 * (lane % 4) + e % 2;
            if (t < rlo[e / 2] || t > rpos[e / 2]) s[i][e] = -INFINITY;
          }
        }
      }
      float m_use[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < 2 * KS; ++i)
          mx = fmaxf(mx, fmaxf(s[i][2 * j], s[i][2 * j + 1]));
        // A row's 64 keys are spread over the 4 lanes of a quad.
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[j], mx * scale_log2);
        // Nothing seen yet (-inf): subtract 0 so exp2 gives 0, not NaN.
        m_use[j] = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2_ftz(m[j] - m_use[j]);
        m[j] = m_new;
        l[j] *= alpha;
#pragma unroll
        for (int i = 0; i < NT; ++i) {
          o[i][2 * j] *= alpha;
          o[i][2 * j + 1] *= alpha;
        }
      }
      // The accumulator layout of two adjacent n8 tiles is the A fragment
      // layout of one k16 step: a0 = (row, keys 2c..), a1 = (row + 8, ..),
      // a2 = (row, keys 8 + 2c..), a3 = (row + 8, 8 + 2c..).
#pragma unroll
      for (int k = 0; k < KS; ++k) {
        float e[2][4];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            e[h][c] =
                exp2_ftz(fmaf(s[2 * k + h][c], scale_log2, -m_use[c / 2]));
          }
          l[0] += e[h][0] + e[h][1];
          l[1] += e[h][2] + e[h][3];
        }
        pf[k][0] = Pack2<C>::rn(e[0][0], e[0][1]);
        pf[k][1] = Pack2<C>::rn(e[0][2], e[0][3]);
        pf[k][2] = Pack2<C>::rn(e[1][0], e[1][1]);
        pf[k][3] = Pack2<C>::rn(e[1][2], e[1][3]);
      }
    }
    cp_async_wait_all();
    __syncthreads();  // V(t0) is in; every warp is done with K's tile
    if (t0 + kFlashKeys <= hi) load_tile(ks, kbase, t0 + kFlashKeys);
    if (act) {
#pragma unroll
      for (int k = 0; k < KS; ++k) {
#pragma unroll
        for (int dp = 0; dp < HD / 16; ++dp) {
          if (dp * 16 < (int)hd) {
            // V is [key][d]: .trans gives the B fragment (k = key, n = d);
            // matrices keys 0-7 / 8-15 of d 0-7, then of d 8-15.
            uint32_t b[4];
            ldmatrix_x4_trans(
                b, vs + (k * 16 + lane % 8 + ((lane / 8) % 2) * 8) * LD +
                       dp * 16 + (lane / 16) * 8);
            Mma<C>::run(o[2 * dp], pf[k], b);
            Mma<C>::run(o[2 * dp + 1], pf[k], b + 2);
          }
        }
      }
    }
  }
  if (!warp_live) return;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    l[j] += __shfl_xor_sync(0xffffffffu, l[j], 1);
    l[j] += __shfl_xor_sync(0xffffffffu, l[j], 2);
  }
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const uint32_t p = wfirst + lane / 4 + 8 * j;
    if (p >= pairs) continue;
    const float inv = 1.0f / l[j];  // > 0: a row sees at least its own key
    float *orow = out + (size_t)(p / group) * q_dim +
                  (size_t)(kvh * group + p % group) * hd;
#pragma unroll
    for (int i = 0; i < NT; ++i) {
      if (i * 8 < (int)hd) {
        float2 v;
        v.x = o[i][2 * j] * inv;
        v.y = o[i][2 * j + 1] * inv;
        *reinterpret_cast<float2 *>(orow + i * 8 + 2 * (lane % 4)) = v;
      }
    }
  }
}

// The kernel bodies: f32 caches take the SIMT kernel whatever the head size;
// 16-bit caches take the tensor cores when head_dim % 16 == 0 (the host
// sizes the grid the same way: atlas_llama_prefill_attention_rows). D: the
// kernel's head size (64, 128; 0: any other). A constant head_dim leaves no
// run-time divisions or guards in the loop: 1.77x faster than the general
// body at 2048 tokens on the H200 (head_dim 128).
template <typename C, int D>
__device__ __forceinline__ void attention_prefill_entry(
    float *out, const float *q, const C *kc, const C *vc, uint32_t n_heads,
    uint32_t n_kv, uint32_t head_dim, uint32_t pos0, uint32_t n,
    uint32_t window) {
  if constexpr (sizeof(C) == 4) {
    __shared__ PrefillSimtShared sh;
    attention_prefill(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos0, n,
                      window);
  } else {
    __shared__ __align__(16) unsigned char smem[kPrefillShared];
    C *sm = reinterpret_cast<C *>(smem);
    if constexpr (D != 0) {
      attention_flash<C, D>(sm, out, q, kc, vc, n_heads, n_kv, D, pos0, n,
                            window);
    } else if (head_dim % 16 != 0) {
      attention_prefill(*reinterpret_cast<PrefillSimtShared *>(smem), out, q,
                        kc, vc, n_heads, n_kv, head_dim, pos0, n, window);
    } else {
      attention_flash<C, 128>(sm, out, q, kc, vc, n_heads, n_kv, head_dim, pos0,
                              n, window);
    }
  }
}

// ---- flash-decoding: one query token, the context split in chunks ----------
// The position comes from device memory (step[1], seq_len = step[1] + 1), so
// the grid is sized for the longest context (`max_splits`) and splits past
// this step's context return at once: one captured graph serves every step.
// attention_decode: grid (atlas_llama_decode_grid_x(max_splits, group,
// blocks), n_kv), block ATLAS_LLAMA_DECODE_THREADS. With `used` = min(this
// step's splits, grid width) blocks a KV head, block (b, kvh) takes splits
// b, b + used, ... (split s: keys lo + s * chunk .., chunk = kChunkOf<D>,
// lo: the window's start)
// for the `group` query heads sharing KV head kvh (K and V read once per
// group), one after the other with a running max and sum, the next split's
// rows loading during this one's sums; at contexts of up to kHeadKeys keys,
// block (s * group + g, kvh) takes split s for query head g alone
// (attention_decode_pick). Scores with a lane segment per key (coalesced
// rows), the chunk's softmax, then P V with lane segments over head_dim and
// slices over keys. One split (contexts up to a chunk's keys) writes out
// directly. Otherwise each block writes per head its max score m, sum of
// exp(score - m) and unnormalised output to part[head][b], and the last
// block of those heads to finish (a counter per KV head or query head, reset
// by that block) merges the splits into out.
//
// At short contexts this kernel is latency, not bandwidth: on the H200 the
// 64-key, 256-thread version cost 11-15 us a layer in the captured step at
// context 128 (two splits and a merge, every load after the wait). Now the
// cache rows before this step's position are loaded before the wait (the
// previous launch writes only row `pos`), and a chunk's keys need no merge.

namespace {
// kDecWarps * 32: ATLAS_LLAMA_DECODE_THREADS (prefill_kernels.h).
constexpr int kChunkMax = 128, kMaxGroup = 16, kDecWarps = 16;
// Keys a split holds for head size D (0: any other), which sizes `splits`:
// atlas_llama_decode_chunk (prefill_kernels.h says why).
template <int D>
constexpr int kChunkOf = D == 128 ? 64 : 128;
// ATLAS_LLAMA_DECODE_HEAD_KEYS: contexts of this many keys or fewer take a
// block per query head.
constexpr uint32_t kHeadKeys = 256;
}  // namespace

// Four cache entries as stored (registers: two words for 16-bit caches).
template <typename C>
struct KvRaw {
  using T = uint2;
};
template <>
struct KvRaw<float> {
  using T = float4;
};

// The four entries from d (zeros past head_dim when it is not a multiple
// of 4).
template <typename C>
__device__ __forceinline__ typename KvRaw<C>::T kv_raw(const C *row, uint32_t d,
                                                       uint32_t hd, bool vec) {
  using T = typename KvRaw<C>::T;
  if (vec) return *reinterpret_cast<const T *>(row + d);
  T r{};
  C *e = reinterpret_cast<C *>(&r);
#pragma unroll
  for (uint32_t i = 0; i < 4; ++i) {
    if (d + i < hd) e[i] = row[d + i];
  }
  return r;
}

// As f32, by value and bit operations (a pointer into the registers put
// them in local memory).
__device__ __forceinline__ float4 kv_unpack(float4 r, const float *) {
  return r;
}
__device__ __forceinline__ float4 kv_unpack(uint2 r, const __nv_bfloat16 *) {
  return make_float4(
      __uint_as_float(r.x << 16), __uint_as_float(r.x & 0xFFFF0000u),
      __uint_as_float(r.y << 16), __uint_as_float(r.y & 0xFFFF0000u));
}
__device__ __forceinline__ float half_bits(uint32_t b) {
  return __half2float(__ushort_as_half((unsigned short)b));
}
__device__ __forceinline__ float4 kv_unpack(uint2 r, const __half *) {
  return make_float4(half_bits(r.x & 0xFFFFu), half_bits(r.x >> 16),
                     half_bits(r.y & 0xFFFFu), half_bits(r.y >> 16));
}

__host__ __device__ constexpr int ilog2(int x) {
  return x <= 1 ? 0 : 1 + ilog2(x / 2);
}

// Sums over lane segments of 2 * O lanes of N values a lane, by halving:
// at each step a lane keeps half of its values (the upper half where its
// lane bit O is set) plus its partner's copy of that half, and sends the
// other half. After log2(N) steps (or all of them) each lane holds whole
// sums: value (its lane bits from 2 * O down, as a number) * rest + r.
// Once one value is left the remaining steps sum it whole.
template <int M, int N, int O>
__device__ __forceinline__ void score_scatter(float (&v)[M],
                                              uint32_t lane_in_seg) {
  if constexpr (O > 0) {
    if constexpr (N > 1) {
      const bool up = (lane_in_seg & O) != 0;
#pragma unroll
      for (int k = 0; k < N / 2; ++k) {
        const float send = up ? v[k] : v[k + N / 2];
        const float keep = up ? v[k + N / 2] : v[k];
        v[k] = keep + __shfl_xor_sync(0xffffffffu, send, O);
      }
      score_scatter<M, N / 2, O / 2>(v, lane_in_seg);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
      score_scatter<M, 1, O / 2>(v, lane_in_seg);
    }
  }
}

// The kernel's shared memory: one struct for the head sizes' bodies.
template <int G>
struct alignas(16) DecodeShared {
  float qs[G][kMaxD];
  float ps[G][kChunkMax];
  float red[2][kDecWarps][kMaxD];  // two: one barrier a head
  float stat[G][3];
  int last;
};

// G: the group size rounded up to a power of two (registers for G heads);
// `group` <= G is the real one. D: head_dim as a constant (64, 128), or 0
// (read at run time). With head_dim at run time the lane segments' shuffles
// were branches and the kernel ran 5300 instructions: 12 us a layer.
template <typename C, int G, int D>
__device__ void attention_decode_g(DecodeShared<G> &sh, float *part,
                                   const float *q, const C *kc, const C *vc,
                                   uint32_t n_heads, uint32_t n_kv,
                                   uint32_t head_dim_arg, const uint32_t *step,
                                   uint32_t window, uint32_t splits, float *out,
                                   uint32_t *counters, uint32_t split,
                                   uint32_t g0, uint32_t heads, uint32_t chunks,
                                   uint32_t used, uint32_t ctr) {
  using Raw = typename KvRaw<C>::T;
  constexpr int kChunk = kChunkOf<D>;
  constexpr int kPerWarp = kChunk / kDecWarps;  // keys a warp scores
  // Key rows a thread sums in P V: a slice per `seg` lanes (seg <= 32), so
  // at least kDecWarps slices.
  constexpr int kSlices = kChunk / kDecWarps;
  // Value rows also load before the wait where the accumulators leave
  // registers for them (512 threads: at most 128 a thread).
  constexpr bool kEarlyV = G <= 4 || (G <= 8 && sizeof(C) == 2);
  static_assert(G <= kMaxGroup,
                "a KV head serves at most kMaxGroup query heads");
  float(*qs)[kMaxD] = sh.qs;
  float(*ps)[kChunkMax] = sh.ps;
  float(*stat)[3] = sh.stat;
  const uint32_t head_dim = D != 0 ? (uint32_t)D : head_dim_arg;
  const uint32_t group = n_heads / n_kv, kvh = blockIdx.y;
  const uint32_t h0 = kvh * group + g0;  // the block's first query head
  const uint32_t kv_dim = n_kv * head_dim, tid = threadIdx.x;
  const uint32_t warp = tid / 32, lane = tid % 32;
  const uint32_t pos = step[1], seq_len = pos + 1;
  const uint32_t lo = (window != 0 && seq_len > window) ? seq_len - window : 0;
  const float scale = rsqrtf((float)head_dim);
  const uint32_t quads = (head_dim + 3) / 4;
  const bool vec = head_dim % 4 == 0;
  // A segment of `seg` lanes (a power of two >= quads) per key or slice.
  uint32_t seg = D == 128 ? 32 : D == 64 ? 16 : 1;
  if (D == 0) {
    while (seg < quads) seg *= 2;
  }
  const uint32_t sub = lane / seg, qd = lane % seg, per_warp = 32 / seg;
  const uint32_t slice = tid / seg, slices = blockDim.x / seg;
  const C *kbase = kc + (size_t)kvh * head_dim;
  const C *vbase = vc + (size_t)kvh * head_dim;
  // Key j of the chunk for this lane's p-th score, or kChunk for none.
  auto key_of = [&](int p) -> uint32_t {
    const uint32_t k_in_warp = p * per_warp + sub;
    return k_in_warp < (uint32_t)kPerWarp ? warp * kPerWarp + k_in_warp
                                          : kChunk;
  };
  auto first_key = [&](uint32_t c) { return lo + c * kChunk; };
  auto keys_in = [&](uint32_t c) {
    return min((uint32_t)kChunk, seq_len - first_key(c));
  };
  // Every row this lane reads of chunk c, loaded before any is used (the
  // loads overlap; one at a time they were latency-bound); row `pos` comes
  // from kpos / vpos (the first chunk's rows load before the wait, and the
  // launch before it writes row pos).
  Raw kr[kPerWarp], vr[kSlices];
  // (Written out at each use, not as lambdas over kr and vr: those put the
  // arrays in local memory.)
#define ATLAS_DECODE_LOAD_K(c)                                                 \
  do {                                                                         \
    const uint32_t t0_ = first_key(c), count_ = keys_in(c);                    \
    _Pragma("unroll") for (int p = 0; p < kPerWarp; ++p) {                     \
      const uint32_t j = key_of(p);                                            \
      kr[p] = Raw{};                                                           \
      if (j < count_ && qd < quads && t0_ + j != pos) {                        \
        kr[p] =                                                                \
            kv_raw(kbase + (size_t)(t0_ + j) * kv_dim, 4 * qd, head_dim, vec); \
      }                                                                        \
    }                                                                          \
  } while (0)
  // skip_pos: row pos comes from vpos (kEarlyV); else every row loads.
#define ATLAS_DECODE_LOAD_V(c, skip_pos)                                       \
  do {                                                                         \
    const uint32_t t0_ = first_key(c), count_ = keys_in(c);                    \
    _Pragma("unroll") for (int t = 0; t < kSlices; ++t) {                      \
      const uint32_t j = slice + t * slices;                                   \
      vr[t] = Raw{};                                                           \
      if (j < count_ && qd < quads && !((skip_pos) && t0_ + j == pos)) {       \
        vr[t] =                                                                \
            kv_raw(vbase + (size_t)(t0_ + j) * kv_dim, 4 * qd, head_dim, vec); \
      }                                                                        \
    }                                                                          \
  } while (0)
  // This block takes chunks split, split + used, ... of `chunks` (`used`
  // blocks share them); the last chunk holds row pos.
  ATLAS_DECODE_LOAD_K(split);
  if (kEarlyV) ATLAS_DECODE_LOAD_V(split, true);
  atlas_overlap_begin();  // the decode step launches it with overlap_prior
  // Row pos in registers of its own (chosen where it is used: indexing kr by
  // a run-time key put kr in local memory).
  const uint32_t last = chunks - 1;
  const bool has_last = (last - split) % used == 0;
  Raw kpos{}, vpos{};
  if (has_last && qd < quads) {
    const size_t row = (size_t)pos * kv_dim;
    kpos = kv_raw(kbase + row, 4 * qd, head_dim, vec);
    if (kEarlyV) vpos = kv_raw(vbase + row, 4 * qd, head_dim, vec);
  }
  // Zeros past head_dim and the group: every lane reads its quad of each.
  for (uint32_t i = tid; i < G * kMaxD; i += blockDim.x) {
    uint32_t g = i / kMaxD, d = i % kMaxD;
    qs[g][d] =
        g < heads && d < head_dim ? q[(size_t)(h0 + g) * head_dim + d] : 0.0f;
  }
  __syncthreads();
  // P V: thread (slice, qd) sums keys slice, slice + slices, ... of each
  // chunk for its four dimensions; slices meet after the last chunk.
  float4 acc[G];
#pragma unroll
  for (int g = 0; g < G; ++g) acc[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  // A chunk at a time with a running max and sum per head (stat: max, sum,
  // the factor for what was summed before), the next chunk's keys loading
  // during this one's softmax and P V, its values during the next scores.
  for (uint32_t c = split; c < chunks; c += used) {
    const uint32_t count = keys_in(c), next = c + used;
    const bool has_pos = c == last, first = c == split;
    if constexpr (D != 0) {
      // This lane's dot products for a batch of heads (at most 32 sums),
      // summed over each key's lane segment by halving exchanges: a lane
      // ends with whole sums (score_scatter), 31 shuffles for 32 sums where
      // a shuffle tree per sum took 160.
      constexpr int kSegC = D == 128 ? 32 : 16, kAtOnce = 32 / kSegC;
      constexpr int kP = kPerWarp / kAtOnce;  // this lane's keys a chunk
      constexpr int kHB = G * kP <= 16 ? G : 16 / kP;  // heads a batch
      constexpr int kN = kHB * kP, kLevels = ilog2(kN < kSegC ? kN : kSegC);
      constexpr int kR = kN >> kLevels, kShift = ilog2(kSegC) - kLevels;
      // Whole sums this lane holds: indices (qd >> kShift) * kR + r; lanes
      // equal but for the low kShift bits hold the same ones.
      const uint32_t prefix = qd >> kShift;
      const bool writer = (qd & ((1u << kShift) - 1)) == 0;
#pragma unroll
      for (int hb = 0; hb < G; hb += kHB) {
        float v[kN];
#pragma unroll
        for (int gg = 0; gg < kHB; ++gg) {
          // The query's quad from shared memory: queries and accumulators
          // of G heads in registers across the chunks spilled.
          const float4 qq =
              *reinterpret_cast<const float4 *>(&qs[hb + gg][4 * qd]);
#pragma unroll
          for (int p = 0; p < kP; ++p) {
            Raw raw = kr[p];
            if (has_pos && key_of(p) == count - 1) raw = kpos;
            const float4 k4 = kv_unpack(raw, kc);
            v[gg * kP + p] =
                qq.x * k4.x + qq.y * k4.y + qq.z * k4.z + qq.w * k4.w;
          }
        }
        score_scatter<kN, kN, kSegC / 2>(v, qd);
        if (writer) {
#pragma unroll
          for (int r = 0; r < kR; ++r) {
            const uint32_t i = prefix * kR + r, g = hb + i / kP;
            const uint32_t j = warp * kPerWarp + (i % kP) * kAtOnce + sub;
            if (g < heads) ps[g][j] = j < count ? v[r] * scale : -INFINITY;
          }
        }
      }
    } else {
      // Any head size: a shuffle tree per sum, a head at a time.
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float4 qq = *reinterpret_cast<const float4 *>(&qs[g][4 * qd]);
#pragma unroll
        for (int p = 0; p < kPerWarp; ++p) {
          const uint32_t j = key_of(p);
          Raw raw = kr[p];
          if (has_pos && j == count - 1) raw = kpos;
          const float4 k4 = kv_unpack(raw, kc);
          float s = qq.x * k4.x + qq.y * k4.y + qq.z * k4.z + qq.w * k4.w;
#pragma unroll
          for (uint32_t o = 16; o > 0; o /= 2) {
            if (o < seg) s += __shfl_xor_sync(0xffffffffu, s, o);
          }
          if (g < (int)heads && qd == 0 && j < (uint32_t)kChunk) {
            ps[g][j] = j < count ? s * scale : -INFINITY;
          }
        }
      }
    }
    if (!kEarlyV) ATLAS_DECODE_LOAD_V(c, false);
    if (next < chunks) ATLAS_DECODE_LOAD_K(next);
    __syncthreads();
    for (uint32_t g = warp; g < heads; g += kDecWarps) {
      float mx = -INFINITY;
      for (int i = lane; i < kChunk; i += 32) mx = fmaxf(mx, ps[g][i]);
      for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float before = first ? -INFINITY : stat[g][0];
      const float m = fmaxf(before, mx);
      float sum = 0.0f;
      for (int i = lane; i < kChunk; i += 32) {
        float e = (uint32_t)i < count ? expf(ps[g][i] - m) : 0.0f;
        ps[g][i] = e;
        sum += e;
      }
      for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (lane == 0) {
        const float f = first ? 0.0f : expf(before - m);
        stat[g][0] = m;
        stat[g][1] = (first ? 0.0f : stat[g][1] * f) + sum;
        stat[g][2] = f;
      }
    }
    __syncthreads();
    if (!first) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (g < (int)heads) {
          const float f = stat[g][2];
          acc[g].x *= f, acc[g].y *= f, acc[g].z *= f, acc[g].w *= f;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < kSlices; ++t) {
      const uint32_t j = slice + t * slices;
      if (j < count) {
        Raw raw = vr[t];
        if (kEarlyV && has_pos && j == count - 1) raw = vpos;
        const float4 v4 = kv_unpack(raw, vc);
#pragma unroll
        for (int g = 0; g < G; ++g) {
          if (g < (int)heads) {
            float p = ps[g][j];
            acc[g].x += p * v4.x, acc[g].y += p * v4.y;
            acc[g].z += p * v4.z, acc[g].w += p * v4.w;
          }
        }
      }
    }
    if (next < chunks) {
      if (kEarlyV) ATLAS_DECODE_LOAD_V(next, true);
      __syncthreads();  // ps and stat are the next chunk's
    }
  }
#undef ATLAS_DECODE_LOAD_K
#undef ATLAS_DECODE_LOAD_V
  const size_t stride = head_dim + 2;
  const bool one = used == 1;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < (int)heads) {
      float(*r)[kMaxD] = sh.red[g & 1];
      for (uint32_t o = seg; o < 32; o *= 2) {
        acc[g].x += __shfl_xor_sync(0xffffffffu, acc[g].x, o);
        acc[g].y += __shfl_xor_sync(0xffffffffu, acc[g].y, o);
        acc[g].z += __shfl_xor_sync(0xffffffffu, acc[g].z, o);
        acc[g].w += __shfl_xor_sync(0xffffffffu, acc[g].w, o);
      }
      if (lane < seg && qd < quads) {
        r[warp][4 * qd] = acc[g].x;
        r[warp][4 * qd + 1] = acc[g].y;
        r[warp][4 * qd + 2] = acc[g].z;
        r[warp][4 * qd + 3] = acc[g].w;
      }
      __syncthreads();
      const uint32_t h = h0 + g;
      if (tid < head_dim) {
        float o = 0.0f;
        for (int w = 0; w < kDecWarps; ++w) o += r[w][tid];
        if (one) {
          out[(size_t)h * head_dim + tid] = o / stat[g][1];
        } else {
          part[((size_t)h * splits + split) * stride + 2 + tid] = o;
        }
      }
      if (tid == 0 && !one) {
        float *p = part + ((size_t)h * splits + split) * stride;
        p[0] = stat[g][0];
        p[1] = stat[g][1];
      }
    }
  }
  if (one) return;
  // The last split of these heads to finish merges them all.
  __threadfence();
  __syncthreads();
  if (tid == 0) sh.last = atomicAdd(&counters[ctr], 1u) == used - 1;
  __syncthreads();
  if (!sh.last) return;
  if (tid == 0) counters[ctr] = 0;  // ready for the next layer and step
  __threadfence();
  for (uint32_t g = warp; g < heads; g += kDecWarps) {
    const float *ph = part + (size_t)(h0 + g) * splits * stride;
    float mx = -INFINITY;
    for (uint32_t sp = lane; sp < used; sp += 32)
      mx = fmaxf(mx, __ldcg(ph + sp * stride));
    for (int o = 16; o > 0; o >>= 1)
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float total = 0.0f;
    for (uint32_t sp = lane; sp < used; sp += 32) {
      total +=
          expf(__ldcg(ph + sp * stride) - mx) * __ldcg(ph + sp * stride + 1);
    }
    for (int o = 16; o > 0; o >>= 1)
      total += __shfl_xor_sync(0xffffffffu, total, o);
    if (lane == 0) {
      stat[g][0] = mx;
      stat[g][1] = total;
    }
  }
  __syncthreads();
  // Thread (slice, qd) merges splits slice, slice + slices, ... for its four
  // dimensions (a thread per dimension looping over every split took 16 us a
  // layer at 8K context); slices meet as in P V.
  for (uint32_t g = 0; g < heads; ++g) {
    float(*r)[kMaxD] = sh.red[g & 1];
    const float *ph = part + (size_t)(h0 + g) * splits * stride;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (qd < quads) {
#pragma unroll 4
      for (uint32_t sp = slice; sp < used; sp += slices) {
        const float *p = ph + sp * stride;
        const float w = expf(__ldcg(p) - stat[g][0]);
        const uint32_t d = 4 * qd;
        o.x += w * __ldcg(p + 2 + d);
        if (d + 1 < head_dim) o.y += w * __ldcg(p + 3 + d);
        if (d + 2 < head_dim) o.z += w * __ldcg(p + 4 + d);
        if (d + 3 < head_dim) o.w += w * __ldcg(p + 5 + d);
      }
    }
    for (uint32_t s = seg; s < 32; s *= 2) {
      o.x += __shfl_xor_sync(0xffffffffu, o.x, s);
      o.y += __shfl_xor_sync(0xffffffffu, o.y, s);
      o.z += __shfl_xor_sync(0xffffffffu, o.z, s);
      o.w += __shfl_xor_sync(0xffffffffu, o.w, s);
    }
    if (lane < seg && qd < quads) {
      r[warp][4 * qd] = o.x;
      r[warp][4 * qd + 1] = o.y;
      r[warp][4 * qd + 2] = o.z;
      r[warp][4 * qd + 3] = o.w;
    }
    __syncthreads();
    if (tid < head_dim) {
      float sum = 0.0f;
      for (int w = 0; w < kDecWarps; ++w) sum += r[w][tid];
      out[(size_t)(h0 + g) * head_dim + tid] = sum / stat[g][1];
    }
  }
}

// The block's split and heads, then the body for this head size. A context
// of up to kHeadKeys keys (and room in the grid:
// atlas_llama_decode_grid_x) takes a block per query head and split, so
// more SMs share the latency-bound work; longer ones a block per KV head and
// split (K and V read once). On the H200 (8B shape, captured step) per-head
// blocks took two splits (context 129-192) from 4.82 to 4.61 ms a token,
// but nine (1025-1088, merged per head) from 4.82 to 4.89.
template <int G>
union DecodeSharedAny {
  DecodeShared<G> many;  // a block per KV head and split
  DecodeShared<1> one;   // a block per query head and split
};

template <typename C, int G, int D>
__device__ void attention_decode_pick(DecodeSharedAny<G> &sh, float *part,
                                      const float *q, const C *kc, const C *vc,
                                      uint32_t n_heads, uint32_t n_kv,
                                      uint32_t head_dim, const uint32_t *step,
                                      uint32_t window, uint32_t splits,
                                      float *out, uint32_t *counters) {
  // Read before the wait: the step is copied in before the step's first
  // kernel and no kernel writes it.
  const uint32_t seq_len = step[1] + 1, group = n_heads / n_kv;
  const uint32_t lo = (window != 0 && seq_len > window) ? seq_len - window : 0;
  constexpr uint32_t kChunk = kChunkOf<D>;
  const uint32_t chunks = (seq_len - lo + kChunk - 1) / kChunk;
  const bool per_head =
      G > 1 && chunks <= kHeadKeys / kChunk && chunks * group <= gridDim.x;
  // Blocks sharing a head's chunks: a chunk each per query head, or per KV
  // head up to the grid's width (each then takes every used-th chunk).
  const uint32_t used = per_head ? chunks : min(chunks, gridDim.x);
  const uint32_t split = per_head ? blockIdx.x / group : blockIdx.x;
  // Past this step's context: leave without waiting (at 8K positions of
  // cache, 512 such blocks a launch waited at context 128). Block (0, kvh)
  // always has keys and waits, so the grid still ends after its wait.
  if (split >= used) return;
  if (per_head) {
    const uint32_t g0 = blockIdx.x % group;
    attention_decode_g<C, 1, D>(
        sh.one, part, q, kc, vc, n_heads, n_kv, head_dim, step, window, splits,
        out, counters, split, g0, 1, chunks, used, blockIdx.y * group + g0);
  } else {
    attention_decode_g<C, G, D>(sh.many, part, q, kc, vc, n_heads, n_kv,
                                head_dim, step, window, splits, out, counters,
                                split, 0, group, chunks, used, blockIdx.y);
  }
}

// Any other head size in a function of its own: inlined into its kernel, its
// loop spilled three times the bytes (group 4: 1092 against 328).
template <typename C, int G>
__device__ __noinline__ void attention_decode_pick_any(
    DecodeSharedAny<G> &sh, float *part, const float *q, const C *kc,
    const C *vc, uint32_t n_heads, uint32_t n_kv, uint32_t head_dim,
    const uint32_t *step, uint32_t window, uint32_t splits, float *out,
    uint32_t *counters) {
  attention_decode_pick<C, G, 0>(sh, part, q, kc, vc, n_heads, n_kv, head_dim,
                                 step, window, splits, out, counters);
}

template <typename C, int G, int D>
__device__ __forceinline__ void attention_decode_entry(
    DecodeSharedAny<G> &sh, float *part, const float *q, const C *kc,
    const C *vc, uint32_t n_heads, uint32_t n_kv, uint32_t head_dim,
    const uint32_t *step, uint32_t window, uint32_t splits, float *out,
    uint32_t *counters) {
  if constexpr (D == 0) {
    attention_decode_pick_any<C, G>(sh, part, q, kc, vc, n_heads, n_kv,
                                    head_dim, step, window, splits, out,
                                    counters);
  } else {
    attention_decode_pick<C, G, D>(sh, part, q, kc, vc, n_heads, n_kv, head_dim,
                                   step, window, splits, out, counters);
  }
}

// One decode-attention kernel per group size (rounded up to a power of two:
// registers for G heads only; one kernel carrying every G took 126 registers
// a thread, for the group-16 path) and head size D (64, 128, or 0 for any
// other: the host picks by head_dim). On the H200 the head_dim-128 body
// alone (102 registers, no spill) took the 8B shape's step 1.4-2.4% faster
// (128-8192 keys) than one kernel holding the three bodies (128 registers);
// the 1B shape's step stayed the same at 128 keys (0.5% slower at 8192).
#define ATLAS_DECODE_KERNEL(S, C, G, D, DN)                                   \
  extern "C" __global__ void __launch_bounds__(kDecWarps * 32, 1)             \
      attention_decode_##S##_g##G##_##DN(                                     \
          float *part, const float *q, const C *kc, const C *vc,              \
          uint32_t n_heads, uint32_t n_kv, uint32_t head_dim,                 \
          const uint32_t *step, uint32_t window, uint32_t splits, float *out, \
          uint32_t *counters) {                                               \
    __shared__ DecodeSharedAny<G> sh;                                         \
    attention_decode_entry<C, G, D>(sh, part, q, kc, vc, n_heads, n_kv,       \
                                    head_dim, step, window, splits, out,      \
                                    counters);                                \
  }
#define ATLAS_DECODE_KERNELS(S, C, G)     \
  ATLAS_DECODE_KERNEL(S, C, G, 64, d64)   \
  ATLAS_DECODE_KERNEL(S, C, G, 128, d128) \
  ATLAS_DECODE_KERNEL(S, C, G, 0, dany)

// The prompt attention, one kernel per head size D (64, 128, 0: any other;
// the host picks by head_dim) and its blocks an SM (registers). On the H200
// the head_dim-64 kernel at 4 blocks (128 registers) took the 1B shape's
// 16384-token prompt from 153.5 to 146.4 ms; at 3, as before, 158.4.
#define ATLAS_PREFILL_ATTENTION_KERNEL(S, C, D, DN, B)                       \
  extern "C" __global__ void __launch_bounds__(128, B)                       \
      attention_prefill_##S##_##DN(                                          \
          float *out, const float *q, const C *kc, const C *vc,              \
          uint32_t n_heads, uint32_t n_kv, uint32_t head_dim, uint32_t pos0, \
          uint32_t n, uint32_t window) {                                     \
    attention_prefill_entry<C, D>(out, q, kc, vc, n_heads, n_kv, head_dim,   \
                                  pos0, n, window);                          \
  }

// The kernels that touch the KV cache, per cache type.
#define ATLAS_BATCH_KV_KERNELS(S, C)                                  \
  extern "C" __global__ void __launch_bounds__(256)                   \
      kv_store_rows_##S(C *kc, C *vc, const float *k, const float *v, \
                        uint32_t kv_dim, uint32_t pos0, uint32_t n) { \
    kv_store_rows(kc, vc, k, v, kv_dim, pos0, n);                     \
  }                                                                   \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 64, d64, 4)                    \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 128, d128, 3)                  \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 0, dany, 3)                    \
  ATLAS_DECODE_KERNELS(S, C, 1)                                       \
  ATLAS_DECODE_KERNELS(S, C, 2)                                       \
  ATLAS_DECODE_KERNELS(S, C, 4)                                       \
  ATLAS_DECODE_KERNELS(S, C, 8)                                       \
  ATLAS_DECODE_KERNELS(S, C, 16)
ATLAS_BATCH_KV_KERNELS(f32, float)
ATLAS_BATCH_KV_KERNELS(f16, __half)
ATLAS_BATCH_KV_KERNELS(bf16, __nv_bfloat16)
