// The one-token step's matrix-vector products (module "token"): a warp per
// row, 16-byte loads, the first ones issued before the launch before
// finishes; the RMSNorm folded into the products that follow it.
#ifndef ATLAS_KERNELS_MATVEC_CUH_
#define ATLAS_KERNELS_MATVEC_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

// One warp per row. Rows that allow it are read 16 bytes per lane per load
// (8 F16/BF16 or 4 F32 weights), several loads in flight: a warp per row
// with 2-byte loads left most of the memory bandwidth unused. Every lane
// returns the row's dot product with x.
//
// A row is read in two parts: row_begin issues the lane's first A loads
// before the kernel waits for the launch before it (atlas_overlap_begin:
// nothing writes weights), so they travel while that launch finishes;
// row_dot does the rest after the wait, in the same order (the same sums,
// bit for bit). On the H200 (graph, context 128) 4 ahead took decode from
// 1.21 to 1.13 ms (1B shape) and 5.00 to 4.94 (8B); gate_up reads two rows
// and keeps 2 ahead for each (4 each: 76 registers, fewer blocks an SM):
// 4.90 ms on the 8B shape.
template <typename T, uint32_t A>
struct RowRead {
  const T *w;
  uint32_t cols;
  bool wide;  // 16-byte loads
  uint4 ahead[A];
};

// `x_wide`: the vector the row is dotted with (x, or the block's normalised
// copy in shared memory) is 16-byte aligned; its contents are not read here.
template <typename T, uint32_t A>
__device__ __forceinline__ void row_begin(RowRead<T, A> &r, const T *wr,
                                          bool x_wide, uint32_t cols,
                                          uint32_t lane) {
  constexpr uint32_t V = 16 / sizeof(T);
  r.w = wr;
  r.cols = cols;
  r.wide = x_wide && cols % V == 0 && ((uintptr_t)wr % 16) == 0;
  if (!r.wide) return;
  const uint4 *w4 = reinterpret_cast<const uint4 *>(wr);
  const uint32_t n4 = cols / V;
#pragma unroll
  for (uint32_t j = 0; j < A; ++j) {
    const uint32_t i = lane + 32 * j;
    r.ahead[j] = i < n4 ? __ldg(w4 + i) : uint4{0u, 0u, 0u, 0u};
  }
}

// acc += the V weights in `packed` times x[i * V ..].
template <typename T>
__device__ __forceinline__ float dot_packed(float acc, const uint4 &packed,
                                            const float *x, uint32_t i) {
  constexpr uint32_t V = 16 / sizeof(T);
  const T *e = reinterpret_cast<const T *>(&packed);
  const float4 *xv = reinterpret_cast<const float4 *>(x + (size_t)i * V);
#pragma unroll
  for (uint32_t j = 0; j < V / 4; ++j) {
    float4 xx = xv[j];
    acc += load_w(e, 4 * j) * xx.x + load_w(e, 4 * j + 1) * xx.y +
           load_w(e, 4 * j + 2) * xx.z + load_w(e, 4 * j + 3) * xx.w;
  }
  return acc;
}

template <typename T, uint32_t A>
__device__ __forceinline__ float row_dot(const RowRead<T, A> &r, const float *x,
                                         uint32_t lane) {
  float acc = 0.0f;
  constexpr uint32_t V = 16 / sizeof(T);
  if (r.wide) {
    const uint4 *w4 = reinterpret_cast<const uint4 *>(r.w);
    const uint32_t n4 = r.cols / V;
#pragma unroll
    for (uint32_t j = 0; j < A; ++j) {
      const uint32_t i = lane + 32 * j;
      if (i < n4) acc = dot_packed<T>(acc, r.ahead[j], x, i);
    }
#pragma unroll 4
    for (uint32_t i = lane + 32 * A; i < n4; i += 32) {
      acc = dot_packed<T>(acc, __ldg(w4 + i), x, i);
    }
  } else {
    for (uint32_t k = lane; k < r.cols; k += 32) acc += load_w(r.w, k) * x[k];
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  return acc;
}

// The RMSNorm folded into a warp's dot products in one pass (gate_up,
// qkv_rope and matvec with norm_w != NULL): W (g * x) * rsqrt(mean(x^2) + eps)
// is RMSNorm(x) . W up to rounding. Each warp reads all of x anyway (its lanes
// stride the whole row), so it sums x's squares beside its dots, the same
// sum in the same order in every warp, and scales once at the end: no
// block reduction and no copy of x to wait for before the first weights
// are used, and no launch between the residual add and the product.
// `out[n]` gets row n's normalised dot, in every lane.
template <typename T, uint32_t A, uint32_t N>
__device__ __forceinline__ void rows_dot_norm(float (&out)[N],
                                              const RowRead<T, A> (&r)[N],
                                              const float *x, const float *g,
                                              float eps, uint32_t lane) {
  constexpr uint32_t V = 16 / sizeof(T);
  const uint32_t cols = r[0].cols;
  float acc[N], ss = 0.0f;
#pragma unroll
  for (uint32_t n = 0; n < N; ++n) acc[n] = 0.0f;
  bool wide = ((uintptr_t)g % 16) == 0;
#pragma unroll
  for (uint32_t n = 0; n < N; ++n) wide = wide && r[n].wide;
  if (wide) {
    const uint32_t n4 = cols / V;
    // xg = g * x for the V columns of packed slot i; ss += their x^2.
    auto load = [&](float(&xg)[V], uint32_t i) {
      const float4 *xv = reinterpret_cast<const float4 *>(x + (size_t)i * V);
      const float4 *gv = reinterpret_cast<const float4 *>(g + (size_t)i * V);
#pragma unroll
      for (uint32_t j = 0; j < V / 4; ++j) {
        const float4 xx = xv[j], gg = __ldg(gv + j);
        ss += xx.x * xx.x + xx.y * xx.y + xx.z * xx.z + xx.w * xx.w;
        xg[4 * j] = gg.x * xx.x, xg[4 * j + 1] = gg.y * xx.y;
        xg[4 * j + 2] = gg.z * xx.z, xg[4 * j + 3] = gg.w * xx.w;
      }
    };
    auto dot = [&](float a, const uint4 &packed, const float(&xg)[V]) {
      const T *e = reinterpret_cast<const T *>(&packed);
#pragma unroll
      for (uint32_t k = 0; k < V; ++k) a += load_w(e, k) * xg[k];
      return a;
    };
#pragma unroll
    for (uint32_t j = 0; j < A; ++j) {
      const uint32_t i = lane + 32 * j;
      if (i >= n4) break;
      float xg[V];
      load(xg, i);
#pragma unroll
      for (uint32_t n = 0; n < N; ++n) acc[n] = dot(acc[n], r[n].ahead[j], xg);
    }
#pragma unroll(4 / N)
    for (uint32_t i = lane + 32 * A; i < n4; i += 32) {
      float xg[V];
      load(xg, i);
#pragma unroll
      for (uint32_t n = 0; n < N; ++n) {
        acc[n] =
            dot(acc[n], __ldg(reinterpret_cast<const uint4 *>(r[n].w) + i), xg);
      }
    }
  } else {
    for (uint32_t k = lane; k < cols; k += 32) {
      const float xv = x[k];
      ss += xv * xv;
      const float xg = g[k] * xv;
#pragma unroll
      for (uint32_t n = 0; n < N; ++n) acc[n] += load_w(r[n].w, k) * xg;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    ss += __shfl_xor_sync(0xffffffffu, ss, o);
#pragma unroll
    for (uint32_t n = 0; n < N; ++n)
      acc[n] += __shfl_xor_sync(0xffffffffu, acc[n], o);
  }
  const float scale = rsqrtf(ss / cols + eps);
#pragma unroll
  for (uint32_t n = 0; n < N; ++n) out[n] = acc[n] * scale;
}

// 32 floats of shared memory a block: staged_x's block reduction;
// matvec_add's row parts. One array for all, so a folded launch needs no
// more than x and these 32 floats (decoder_forward.c sizes the fold's limit
// by them).
__device__ __forceinline__ float *block_scratch() {
  __shared__ float scratch[32];
  return scratch;
}

// The RMSNorm folded into matvec_qkv (norm_w != NULL; the path of Qwen3's
// per-head q/k norms): after the wait, each block reads x, sums its
// squares (a block reduction) and writes xs[i] = norm_w[i] * (x[i] * scale),
// scale = rsqrtf(sum / cols + eps) (the rmsnorm kernel's formula), into
// `cols` floats of dynamic shared memory; every warp then dots its rows
// against that copy. Every block normalises on its own, so no launch (and
// no round trip through memory) sits between the residual add and the
// product. qkv_rope and gate_up normalise a warp at a time instead
// (rows_dot_norm), which took the 8B step 3.6% and the 1B step 2.6% faster
// on the H200. The weights' first loads (row_begin) still go
// out before the wait. Every thread of the block must call this (it
// syncs), rows past the end included. Returns the vector to dot with: the
// shared copy, or x itself when norm_w is NULL.
__device__ __forceinline__ const float *staged_x(const float *x,
                                                 const float *norm_w, float eps,
                                                 uint32_t cols) {
  if (norm_w == nullptr) return x;
  extern __shared__ __align__(16) float xs[];
  float *partial = block_scratch();
  // U loads per thread in flight per round: x and the norm weights come from
  // L2 with a round's latency each, not one load's latency per element.
  constexpr uint32_t U = 4;
  const uint32_t step = blockDim.x;
  float ss = 0.0f;
  const bool vec = cols % 4 == 0 && ((uintptr_t)x % 16) == 0 &&
                   ((uintptr_t)norm_w % 16) == 0;
  if (vec) {
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 *w4 = reinterpret_cast<const float4 *>(norm_w);
    float4 *xs4 = reinterpret_cast<float4 *>(xs);
    const uint32_t n4 = cols / 4;
    for (uint32_t i0 = threadIdx.x; i0 < n4; i0 += U * step) {
      float4 v[U];
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        v[u] = i < n4 ? x4[i] : float4{0.0f, 0.0f, 0.0f, 0.0f};
      }
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        if (i0 + u * step < n4) xs4[i0 + u * step] = v[u];
        ss += v[u].x * v[u].x;
        ss += v[u].y * v[u].y;
        ss += v[u].z * v[u].z;
        ss += v[u].w * v[u].w;
      }
    }
    ss = block_sum(ss, partial);
    const float scale = rsqrtf(ss / cols + eps);
    // Each thread rescales the entries it stored itself.
    for (uint32_t i0 = threadIdx.x; i0 < n4; i0 += U * step) {
      float4 g[U];
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        g[u] = i < n4 ? w4[i] : float4{0.0f, 0.0f, 0.0f, 0.0f};
      }
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        if (i >= n4) break;
        float4 v = xs4[i];
        v.x = g[u].x * (v.x * scale);
        v.y = g[u].y * (v.y * scale);
        v.z = g[u].z * (v.z * scale);
        v.w = g[u].w * (v.w * scale);
        xs4[i] = v;
      }
    }
  } else {
    for (uint32_t i0 = threadIdx.x; i0 < cols; i0 += U * step) {
      float v[U];
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        v[u] = i < cols ? x[i] : 0.0f;
      }
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        if (i0 + u * step < cols) xs[i0 + u * step] = v[u];
        ss += v[u] * v[u];
      }
    }
    ss = block_sum(ss, partial);
    const float scale = rsqrtf(ss / cols + eps);
    for (uint32_t i0 = threadIdx.x; i0 < cols; i0 += U * step) {
      float g[U];
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        g[u] = i < cols ? norm_w[i] : 0.0f;
      }
#pragma unroll
      for (uint32_t u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * step;
        if (i >= cols) break;
        xs[i] = g[u] * (xs[i] * scale);
      }
    }
  }
  __syncthreads();
  return xs;
}

// Whether the vector staged_x will return is 16-byte aligned, known before
// the wait (row_begin needs it): the shared copy always is.
__device__ __forceinline__ bool x_is_wide(const float *x, const float *norm_w) {
  return norm_w != nullptr || ((uintptr_t)x % 16) == 0;
}

template <typename T>
__device__ void matvec(float *out, const T *w, const float *x, uint32_t rows,
                       uint32_t cols, const float *norm_w, float eps) {
  uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  uint32_t lane = threadIdx.x % 32;
  RowRead<T, 4> r;
  if (row < rows) {
    row_begin(r, w + (size_t)row * cols, ((uintptr_t)x % 16) == 0, cols, lane);
  }
  atlas_overlap_begin();
  if (row >= rows) return;
  float acc;
  if (norm_w != nullptr) {
    const RowRead<T, 4> rs[1] = {r};
    float o[1];
    rows_dot_norm(o, rs, x, norm_w, eps, lane);
    acc = o[0];
  } else {
    acc = row_dot(r, x, lane);
  }
  if (lane == 0) out[row] = acc;
}

// q, k and v of one token in one launch (each with its bias, NULL: none):
// rows 0..rows_q-1 are q's, then rows_kv of k, then rows_kv of v. Three
// small launches left most of a large GPU idle (k and v have few rows).
template <typename T>
__device__ void matvec_qkv(float *q, float *k, float *v, const T *wq,
                           const T *wk, const T *wv, const float *bq,
                           const float *bk, const float *bv, const float *x,
                           uint32_t rows_q, uint32_t rows_kv, uint32_t cols,
                           const float *norm_w, float eps) {
  uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  uint32_t lane = threadIdx.x % 32;
  // Which of the three (0 q, 1 k, 2 v); the output and bias pointers are
  // picked only at the end, so they are not live across the staging.
  uint32_t which = 0;
  const T *w = wq;
  if (row >= rows_q) {
    row -= rows_q;
    which = 1, w = wk;
    if (row >= rows_kv) row -= rows_kv, which = 2, w = wv;
  }
  const bool live = which < 2 || row < rows_kv;
  RowRead<T, 4> r;
  if (live)
    row_begin(r, w + (size_t)row * cols, x_is_wide(x, norm_w), cols, lane);
  atlas_overlap_begin();
  const float *xd = staged_x(x, norm_w, eps, cols);
  if (!live) return;
  float acc = row_dot(r, xd, lane);
  if (lane == 0) {
    float *out = which == 0 ? q : which == 1 ? k : v;
    const float *b = which == 0 ? bq : which == 1 ? bk : bv;
    out[row] = b != nullptr ? acc + b[row] : acc;
  }
}

// x[row] += (W x_in)[row] (+ bias[row]): an output projection and its
// residual add in one pass. `splits` warps share a row, each dotting one
// contiguous part of the columns, and the first adds the parts in order: a
// matrix of few long rows (the down projection) keeps more loads in flight.
// The host passes splits with cols % (splits * 8) == 0, splits dividing the
// block's warps.
template <typename T>
__device__ void matvec_add(float *x, const T *w, const float *in,
                           const float *bias, uint32_t rows, uint32_t cols,
                           uint32_t splits) {
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t part = warp % splits, span = cols / splits;
  const uint32_t row = blockIdx.x * (blockDim.x / 32 / splits) + warp / splits;
  const float *xin = in + (size_t)part * span;
  RowRead<T, 4> r;
  if (row < rows) {
    row_begin(r, w + (size_t)row * cols + (size_t)part * span,
              ((uintptr_t)xin % 16) == 0, span, lane);
  }
  atlas_overlap_begin();
  float acc = row < rows ? row_dot(r, xin, lane) : 0.0f;
  if (splits > 1) {
    float *parts = block_scratch();
    if (lane == 0) parts[warp] = acc;
    __syncthreads();
    if (part != 0) return;
    for (uint32_t p = 1; p < splits; ++p) acc += parts[warp + p];
  }
  if (row < rows && lane == 0)
    x[row] += bias != nullptr ? acc + bias[row] : acc;
}

// out[row] = silu(gate row . x (+ bias)) * (up row . x (+ bias)): the MLP's
// two products and its activation in one pass, with the FFN's RMSNorm
// folded in when norm_w != NULL (rows_dot_norm: both rows share each load
// of x and the norm weights).
template <typename T>
__device__ void gate_up(float *out, const T *wg, const T *wu, const float *bg,
                        const float *bu, const float *x, uint32_t rows,
                        uint32_t cols, const float *norm_w, float eps) {
  uint32_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  uint32_t lane = threadIdx.x % 32;
  RowRead<T, 2> r[2];
  if (row < rows) {
    const bool x_wide = ((uintptr_t)x % 16) == 0;
    row_begin(r[0], wg + (size_t)row * cols, x_wide, cols, lane);
    row_begin(r[1], wu + (size_t)row * cols, x_wide, cols, lane);
  }
  atlas_overlap_begin();
  if (row >= rows) return;
  float g, u;
  if (norm_w != nullptr) {
    float o[2];
    rows_dot_norm(o, r, x, norm_w, eps, lane);
    g = o[0], u = o[1];
  } else {
    g = row_dot(r[0], x, lane);
    u = row_dot(r[1], x, lane);
  }
  if (lane == 0) {
    if (bg != nullptr) g = g + bg[row];
    if (bu != nullptr) u = u + bu[row];
    out[row] = g / (1.0f + expf(-g)) * u;
  }
}

#define ATLAS_FUSED_KERNELS(S, T)                                             \
  extern "C" __global__ void matvec_qkv_##S(                                  \
      float *q, float *k, float *v, const T *wq, const T *wk, const T *wv,    \
      const float *bq, const float *bk, const float *bv, const float *x,      \
      uint32_t rows_q, uint32_t rows_kv, uint32_t cols, const float *norm_w,  \
      float eps) {                                                            \
    matvec_qkv(q, k, v, wq, wk, wv, bq, bk, bv, x, rows_q, rows_kv, cols,     \
               norm_w, eps);                                                  \
  }                                                                           \
  extern "C" __global__ void matvec_add_##S(                                  \
      float *x, const T *w, const float *in, const float *b, uint32_t rows,   \
      uint32_t cols, uint32_t splits) {                                       \
    matvec_add(x, w, in, b, rows, cols, splits);                              \
  }                                                                           \
  extern "C" __global__ void gate_up_##S(                                     \
      float *out, const T *wg, const T *wu, const float *bg, const float *bu, \
      const float *x, uint32_t rows, uint32_t cols, const float *norm_w,      \
      float eps) {                                                            \
    gate_up(out, wg, wu, bg, bu, x, rows, cols, norm_w, eps);                 \
  }
ATLAS_FUSED_KERNELS(f32, float)
ATLAS_FUSED_KERNELS(f16, __half)
ATLAS_FUSED_KERNELS(bf16, __nv_bfloat16)

extern "C" __global__ void matvec_f32(float *out, const float *w,
                                      const float *x, uint32_t rows,
                                      uint32_t cols, const float *norm_w,
                                      float eps) {
  matvec(out, w, x, rows, cols, norm_w, eps);
}
extern "C" __global__ void matvec_f16(float *out, const __half *w,
                                      const float *x, uint32_t rows,
                                      uint32_t cols, const float *norm_w,
                                      float eps) {
  matvec(out, w, x, rows, cols, norm_w, eps);
}
extern "C" __global__ void matvec_bf16(float *out, const __nv_bfloat16 *w,
                                       const float *x, uint32_t rows,
                                       uint32_t cols, const float *norm_w,
                                       float eps) {
  matvec(out, w, x, rows, cols, norm_w, eps);
}

#endif  // ATLAS_KERNELS_MATVEC_CUH_
