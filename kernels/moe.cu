// CUDA kernels of module "moe" (moe_kernels.h, which documents each one and
// its launch): the router, the counting sort by expert, the grouped and the
// per-assignment expert products and the weighted sum. f32 math; expert
// weights F32, F16 or BF16 through tables of device addresses.
//
// A first, correct form: the grouped products are SIMT tiles (32 rows of one
// expert by 64 outputs a block, 32 columns a step through shared memory),
// not tensor-core ones yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "moe_kernels.h"

#define MOE_FULL 0xffffffffu

__device__ __forceinline__ float moe_w(const float *w, size_t i) {
  return w[i];
}
__device__ __forceinline__ float moe_w(const __half *w, size_t i) {
  return __half2float(w[i]);
}
__device__ __forceinline__ float moe_w(const __nv_bfloat16 *w, size_t i) {
  return __bfloat162float(w[i]);
}

__device__ __forceinline__ float moe_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(MOE_FULL, v, o);
  return v;
}

__device__ __forceinline__ float moe_silu(float v) {
  return v / (1.0f + expf(-v));
}

// a ranks above b: the larger value, NaN above every number (torch.topk).
__device__ __forceinline__ bool moe_above(float a, float b) {
  return (isnan(a) && !isnan(b)) || a > b;
}

// The better of two candidates (value, index; UINT32_MAX: none): the one
// above, equal ones by the lower index.
__device__ __forceinline__ void moe_pick(float &v, uint32_t &i, float ov,
                                         uint32_t oi) {
  if (oi == UINT32_MAX) return;
  if (i == UINT32_MAX || moe_above(ov, v) || (!moe_above(v, ov) && oi < i)) {
    v = ov;
    i = oi;
  }
}

// A block-wide reduction of f32 (max or sum) for the router's softmax.
template <bool kMax>
__device__ float moe_block_reduce(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1) {
    float u = __shfl_xor_sync(MOE_FULL, v, o);
    v = kMax ? fmaxf(v, u) : v + u;
  }
  const uint32_t warp = threadIdx.x / 32u, lane = threadIdx.x % 32u;
  const uint32_t warps = blockDim.x / 32u;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? red[lane] : (kMax ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      float u = __shfl_xor_sync(MOE_FULL, v, o);
      v = kMax ? fmaxf(v, u) : v + u;
    }
    if (lane == 0) red[0] = v;
  }
  __syncthreads();
  v = red[0];
  __syncthreads();
  return v;
}

template <typename T>
__device__ void moe_router(uint32_t *ids, float *weights, float *shared_gate,
                           const float *x, const T *w, const T *w_shared,
                           uint32_t n_tokens, uint32_t n_experts,
                           uint32_t hidden, uint32_t k, uint32_t flags) {
  extern __shared__ float p[];
  __shared__ float red[32];
  __shared__ uint32_t red_i[32];
  __shared__ uint32_t chosen[ATLAS_MOE_MAX_K];
  const uint32_t t = blockIdx.x;
  if (t >= n_tokens || !atlas_moe_shape_ok(n_experts, k)) return;
  const uint32_t warp = threadIdx.x / 32u, lane = threadIdx.x % 32u;
  const uint32_t warps = blockDim.x / 32u;
  const float *xt = x + (size_t)t * hidden;
  for (uint32_t e = warp; e < n_experts; e += warps) {
    float acc = 0.0f;
    for (uint32_t c = lane; c < hidden; c += 32u) {
      acc += moe_w(w, (size_t)e * hidden + c) * xt[c];
    }
    acc = moe_warp_sum(acc);
    if (lane == 0) p[e] = acc;
  }
  if (w_shared != nullptr && warp == 0) {
    float acc = 0.0f;
    for (uint32_t c = lane; c < hidden; c += 32u) {
      acc += moe_w(w_shared, c) * xt[c];
    }
    acc = moe_warp_sum(acc);
    if (lane == 0) shared_gate[t] = 1.0f / (1.0f + expf(-acc));
  }
  __syncthreads();
  float m = -INFINITY;
  for (uint32_t e = threadIdx.x; e < n_experts; e += blockDim.x) {
    m = fmaxf(m, p[e]);
  }
  m = moe_block_reduce<true>(m, red);
  float s = 0.0f;
  for (uint32_t e = threadIdx.x; e < n_experts; e += blockDim.x) {
    p[e] = expf(p[e] - m);
    s += p[e];
  }
  s = moe_block_reduce<false>(s, red);
  for (uint32_t e = threadIdx.x; e < n_experts; e += blockDim.x) p[e] /= s;
  __syncthreads();
  for (uint32_t sel = 0; sel < k; ++sel) {
    float bv = 0.0f;
    uint32_t bi = UINT32_MAX;
    for (uint32_t e = threadIdx.x; e < n_experts; e += blockDim.x) {
      bool taken = false;
      for (uint32_t j = 0; j < sel; ++j) taken |= chosen[j] == e;
      if (!taken) moe_pick(bv, bi, p[e], e);
    }
    for (int o = 16; o > 0; o >>= 1) {
      float ov = __shfl_xor_sync(MOE_FULL, bv, o);
      uint32_t oi = __shfl_xor_sync(MOE_FULL, bi, o);
      moe_pick(bv, bi, ov, oi);
    }
    if (lane == 0) red[warp] = bv, red_i[warp] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (uint32_t j = 1; j < warps; ++j) moe_pick(bv, bi, red[j], red_i[j]);
      chosen[sel] = bi;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (uint32_t j = 0; j < k; ++j) sum += p[chosen[j]];
    for (uint32_t j = 0; j < k; ++j) {
      float v = p[chosen[j]];
      ids[(size_t)t * k + j] = chosen[j];
      weights[(size_t)t * k + j] = (flags & ATLAS_MOE_NORM_TOPK) ? v / sum : v;
    }
  }
}

extern "C" __global__ void moe_count(uint32_t *counts, const uint32_t *ids,
                                     uint32_t n_assign, uint32_t n_experts) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t e = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (e >= n_experts) return;
  uint32_t n = 0;
  for (uint32_t base = 0; base < n_assign; base += 32u) {
    uint32_t a = base + lane;
    n += __popc(__ballot_sync(MOE_FULL, a < n_assign && ids[a] == e));
  }
  if (lane == 0) counts[e] = n;
}

// A warp per expert: its offset and first tile from the counts before it,
// then its assignments in increasing order (a ballot a 32-wide step).
extern "C" __global__ void moe_scatter(uint32_t *offsets, uint32_t *tiles,
                                       uint32_t *rows, const uint32_t *counts,
                                       const uint32_t *ids, uint32_t n_assign,
                                       uint32_t n_experts) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t e = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (e >= n_experts) return;
  uint32_t off = 0, tile = 0;
  for (uint32_t j = lane; j < e; j += 32u) {
    off += counts[j];
    tile += (counts[j] + ATLAS_MOE_TILE_ROWS - 1u) / ATLAS_MOE_TILE_ROWS;
  }
  for (int o = 16; o > 0; o >>= 1) {
    off += __shfl_xor_sync(MOE_FULL, off, o);
    tile += __shfl_xor_sync(MOE_FULL, tile, o);
  }
  if (lane == 0) {
    offsets[e] = off;
    tiles[e] = tile;
    if (e + 1u == n_experts) {
      offsets[n_experts] = off + counts[e];
      tiles[n_experts] =
          tile + (counts[e] + ATLAS_MOE_TILE_ROWS - 1u) / ATLAS_MOE_TILE_ROWS;
    }
  }
  uint32_t at = off;
  for (uint32_t base = 0; base < n_assign; base += 32u) {
    uint32_t a = base + lane;
    bool hit = a < n_assign && ids[a] == e;
    uint32_t mask = __ballot_sync(MOE_FULL, hit);
    if (hit) rows[at + __popc(mask & ((1u << lane) - 1u))] = a;
    at += __popc(mask);
  }
}

// One tile of a grouped product: rows p0..p1-1 of expert e by outputs
// col0..col0+63. kGate: act = silu(w_gate x) * (w_up x) over x's token
// rows; else y[rows[p]] = w_down act[p]. Each thread holds 2 rows by 4
// outputs (rows ty, ty + 16; outputs tx + 16 j: no bank conflicts).
template <typename T, bool kGate>
__device__ void moe_grouped(float *out, const float *in, const uint32_t *rows,
                            const uint32_t *offsets, const uint32_t *tiles,
                            const uint64_t *w_a, const uint64_t *w_b,
                            uint32_t n_experts, uint32_t k, uint32_t cols,
                            uint32_t outs) {
  __shared__ float xs[ATLAS_MOE_TILE_ROWS][33];
  __shared__ float as[ATLAS_MOE_TILE_COLS][33];
  __shared__ float bs[kGate ? ATLAS_MOE_TILE_COLS : 1][33];
  const uint32_t g = blockIdx.y;
  if (g >= tiles[n_experts]) return;
  uint32_t lo = 0, hi = n_experts;
  while (hi - lo > 1u) {
    uint32_t mid = (lo + hi) / 2u;
    if (tiles[mid] <= g) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const uint32_t e = lo;
  const uint32_t p0 = offsets[e] + (g - tiles[e]) * ATLAS_MOE_TILE_ROWS;
  const uint32_t p1 = min(p0 + ATLAS_MOE_TILE_ROWS, offsets[e + 1]);
  const uint32_t col0 = blockIdx.x * ATLAS_MOE_TILE_COLS;
  const T *wa = (const T *)(uintptr_t)w_a[e];
  const T *wb = kGate ? (const T *)(uintptr_t)w_b[e] : nullptr;
  const uint32_t tx = threadIdx.x % 16u, ty = threadIdx.x / 16u;
  float acc_a[2][4] = {}, acc_b[2][4] = {};
  for (uint32_t k0 = 0; k0 < cols; k0 += 32u) {
    for (uint32_t i = threadIdx.x; i < ATLAS_MOE_TILE_ROWS * 32u;
         i += blockDim.x) {
      uint32_t r = i / 32u, c = i % 32u, p = p0 + r, kk = k0 + c;
      float v = 0.0f;
      if (p < p1 && kk < cols) {
        size_t row = kGate ? (size_t)(rows[p] / k) : (size_t)p;
        v = in[row * cols + kk];
      }
      xs[r][c] = v;
    }
    for (uint32_t i = threadIdx.x; i < ATLAS_MOE_TILE_COLS * 32u;
         i += blockDim.x) {
      uint32_t r = i / 32u, c = i % 32u, col = col0 + r, kk = k0 + c;
      bool inside = col < outs && kk < cols;
      size_t at = (size_t)col * cols + kk;
      as[r][c] = inside ? moe_w(wa, at) : 0.0f;
      if (kGate) bs[r][c] = inside ? moe_w(wb, at) : 0.0f;
    }
    __syncthreads();
    for (uint32_t c = 0; c < 32u; ++c) {
      float x0 = xs[ty][c], x1 = xs[ty + 16u][c];
      for (uint32_t j = 0; j < 4u; ++j) {
        float a = as[tx + 16u * j][c];
        acc_a[0][j] += x0 * a;
        acc_a[1][j] += x1 * a;
        if (kGate) {
          float b = bs[tx + 16u * j][c];
          acc_b[0][j] += x0 * b;
          acc_b[1][j] += x1 * b;
        }
      }
    }
    __syncthreads();
  }
  for (uint32_t r = 0; r < 2u; ++r) {
    uint32_t p = p0 + ty + 16u * r;
    if (p >= p1) continue;
    for (uint32_t j = 0; j < 4u; ++j) {
      uint32_t col = col0 + tx + 16u * j;
      if (col >= outs) continue;
      if (kGate) {
        out[(size_t)p * outs + col] = moe_silu(acc_a[r][j]) * acc_b[r][j];
      } else {
        out[(size_t)rows[p] * outs + col] = acc_a[r][j];
      }
    }
  }
}

// This lane's part of row w . x over cols: 16 bytes of weights a load
// where the row and x allow it (the decode kernels read nothing but
// weights, so the load width is their speed), else one element a load.
template <typename T>
__device__ __forceinline__ float moe_row_part(const T *w, const float *x,
                                              uint32_t cols, uint32_t lane) {
  constexpr uint32_t kPer = 16u / sizeof(T);
  float acc = 0.0f;
  if (cols % kPer == 0 && ((uintptr_t)w & 15u) == 0 &&
      ((uintptr_t)x & 15u) == 0) {
    const uint4 *w4 = reinterpret_cast<const uint4 *>(w);
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    for (uint32_t i = lane; i < cols / kPer; i += 32u) {
      uint4 raw = __ldg(w4 + i);
      const T *v = reinterpret_cast<const T *>(&raw);
      for (uint32_t j = 0; j < kPer / 4u; ++j) {
        float4 xx = x4[i * (kPer / 4u) + j];
        acc += moe_w(v, 4u * j) * xx.x + moe_w(v, 4u * j + 1u) * xx.y +
               moe_w(v, 4u * j + 2u) * xx.z + moe_w(v, 4u * j + 3u) * xx.w;
      }
    }
    return acc;
  }
  for (uint32_t c = lane; c < cols; c += 32u) acc += moe_w(w, c) * x[c];
  return acc;
}

// Decode: a warp per output row of one assignment's expert.
template <typename T, bool kGate>
__device__ void moe_vec(float *out, const float *in, const uint32_t *ids,
                        const uint64_t *w_a, const uint64_t *w_b,
                        uint32_t n_assign, uint32_t k, uint32_t cols,
                        uint32_t outs) {
  const uint32_t a = blockIdx.y, lane = threadIdx.x % 32u;
  const uint32_t r = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (a >= n_assign || r >= outs) return;
  const uint32_t e = ids[a];
  const float *x = in + (size_t)(kGate ? a / k : a) * cols;
  const T *wa = (const T *)(uintptr_t)w_a[e] + (size_t)r * cols;
  float acc_a = moe_warp_sum(moe_row_part(wa, x, cols, lane)), acc_b = 0.0f;
  if (kGate) {
    const T *wb = (const T *)(uintptr_t)w_b[e] + (size_t)r * cols;
    acc_b = moe_warp_sum(moe_row_part(wb, x, cols, lane));
  }
  if (lane == 0) {
    out[(size_t)a * outs + r] = kGate ? moe_silu(acc_a) * acc_b : acc_a;
  }
}

extern "C" __global__ void moe_combine(float *out, const float *y,
                                       const float *weights,
                                       const float *shared,
                                       const float *shared_gate,
                                       uint32_t n_tokens, uint32_t k,
                                       uint32_t hidden, uint32_t accumulate) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n_tokens * hidden) return;
  size_t t = i / hidden, h = i % hidden;
  float v = 0.0f;
  for (uint32_t s = 0; s < k; ++s) {
    size_t a = t * k + s;
    v += weights[a] * y[a * hidden + h];
  }
  if (shared != nullptr) {
    float g = shared_gate != nullptr ? shared_gate[t] : 1.0f;
    v += g * shared[i];
  }
  out[i] = accumulate ? out[i] + v : v;
}

#define MOE_KERNELS(S, T)                                                     \
  extern "C" __global__ void __launch_bounds__(ATLAS_MOE_ROUTER_BLOCK)        \
      moe_router_##S(uint32_t *ids, float *weights, float *shared_gate,       \
                     const float *x, const T *w, const T *w_shared,           \
                     uint32_t n_tokens, uint32_t n_experts, uint32_t hidden,  \
                     uint32_t k, uint32_t flags) {                            \
    moe_router<T>(ids, weights, shared_gate, x, w, w_shared, n_tokens,        \
                  n_experts, hidden, k, flags);                               \
  }                                                                           \
  extern "C" __global__ void __launch_bounds__(ATLAS_MOE_BLOCK)               \
      moe_gate_up_##S(float *act, const float *x, const uint32_t *rows,       \
                      const uint32_t *offsets, const uint32_t *tiles,         \
                      const uint64_t *w_gate, const uint64_t *w_up,           \
                      uint32_t n_experts, uint32_t k, uint32_t hidden,        \
                      uint32_t inter) {                                       \
    moe_grouped<T, true>(act, x, rows, offsets, tiles, w_gate, w_up,          \
                         n_experts, k, hidden, inter);                        \
  }                                                                           \
  extern "C" __global__ void __launch_bounds__(ATLAS_MOE_BLOCK) moe_down_##S( \
      float *y, const float *act, const uint32_t *rows,                       \
      const uint32_t *offsets, const uint32_t *tiles, const uint64_t *w_down, \
      uint32_t n_experts, uint32_t hidden, uint32_t inter) {                  \
    moe_grouped<T, false>(y, act, rows, offsets, tiles, w_down, nullptr,      \
                          n_experts, 1u, inter, hidden);                      \
  }                                                                           \
  extern "C" __global__ void __launch_bounds__(ATLAS_MOE_BLOCK)               \
      moe_gate_up_vec_##S(float *act, const float *x, const uint32_t *ids,    \
                          const uint64_t *w_gate, const uint64_t *w_up,       \
                          uint32_t n_assign, uint32_t k, uint32_t hidden,     \
                          uint32_t inter) {                                   \
    moe_vec<T, true>(act, x, ids, w_gate, w_up, n_assign, k, hidden, inter);  \
  }                                                                           \
  extern "C" __global__ void __launch_bounds__(ATLAS_MOE_BLOCK)               \
      moe_down_vec_##S(float *y, const float *act, const uint32_t *ids,       \
                       const uint64_t *w_down, uint32_t n_assign,             \
                       uint32_t hidden, uint32_t inter) {                     \
    moe_vec<T, false>(y, act, ids, w_down, nullptr, n_assign, 1u, inter,      \
                      hidden);                                                \
  }

MOE_KERNELS(f32, float)
MOE_KERNELS(f16, __half)
MOE_KERNELS(bf16, __nv_bfloat16)
