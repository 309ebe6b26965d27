// The batched prefill's products (module "prefill"): out = x W^T for a
// prompt chunk, on tensor cores for 16-bit weights.
#ifndef ATLAS_KERNELS_PREFILL_GEMM_CUH_
#define ATLAS_KERNELS_PREFILL_GEMM_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_mma.cuh"

// ---- gemm: out[m][n] = sum_k x[m][k] * w[n][k] ------------------------------
// 16-bit weights: tensor cores (mma.sync m16n8k16, f32 accumulate). The f32
// activations are split x = hi + mid + lo into three 16-bit values and each
// is multiplied (each product is exact in f32), so the result carries all 24
// bits of x (BF16: 8 + 8 + 8) instead of 8: prefill agrees with the f32
// decode path and the host reference to ~1e-6. Two terms (16 bits) left
// 3e-5 on 1000-token BF16 prompts measured on the H200.

constexpr int kBN = 128, kBK = 32, kLds = kBK + 8;  // +8: no conflicts

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

// The k loop both 16-bit products share: the next k-tile's global loads go
// to registers (load) while the current tile, in shared memory, is
// multiplied (step(ks, acc) for each k16 step of it); store moves the
// registers to shared memory between tiles. Then the block's tile to out.
template <int BM, int MI, typename Load, typename Store, typename Step>
__device__ __forceinline__ void gemm_pipeline(float *out, uint32_t M,
                                              uint32_t N, uint32_t K,
                                              uint32_t m0, uint32_t n0, int wm,
                                              int wn, int lane, Load &load,
                                              Store &store, Step &step) {
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
    for (int ks = 0; ks < kBK; ks += 16) step(ks, acc);
    if (t + 1 < tiles) {
      __syncthreads();  // everyone is done reading the tile
      store();
      __syncthreads();
    }
  }

  write_tile<BM, MI>(out, acc, M, N, m0, n0, wm, wn, lane);
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

  auto step = [&](int ks, float(&acc)[MI][4][4]) {
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
  };
  gemm_pipeline<BM, MI>(out, M, N, K, m0, n0, wm, wn, lane, load, store, step);
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

  auto step = [&](int ks, float(&acc)[MI][4][4]) {
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
  };
  gemm_pipeline<BM, MI>(out, M, N, K, m0, n0, wm, wn, lane, load, store, step);
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

#endif  // ATLAS_KERNELS_PREFILL_GEMM_CUH_
