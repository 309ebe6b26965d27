// The one-token step's RoPE, KV cache stores and attention (module
// "token"), per cache type; qkv_rope also does the q, k, v products.
#ifndef ATLAS_KERNELS_TOKEN_ATTENTION_CUH_
#define ATLAS_KERNELS_TOKEN_ATTENTION_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"
#include "kernels/matvec.cuh"

// RoPE at this step's position (step[1]) on q (in place) and on k, and k
// and v stored into that position's cache rows: one launch where there were
// three. Pairs (i, i + rot_dim / 2) of the first rot_dim entries of a head
// rotate; the inverse frequencies come from the host. Threads: n_heads *
// rot_dim / 2 for q, then n_kv * rot_dim / 2 for k, then kv_dim for v (and
// k's entries past rot_dim).
__device__ __forceinline__ void rotate(float x0, float x1, float inv_freq,
                                       uint32_t pos, float factor, float *y0,
                                       float *y1) {
  // The angle in double, as the host kernel does: at position 4000 an f32
  // angle is off by ~1e-4 radians, which the host and CUDA would disagree on.
  double angle = (double)pos * (double)inv_freq;
  double csd, snd;
  sincos(angle, &snd, &csd);
  float cs = (float)(csd * factor), sn = (float)(snd * factor);
  *y0 = x0 * cs - x1 * sn;
  *y1 = x1 * cs + x0 * sn;
}

template <typename C>
__device__ void rope_store(float *q, const float *k, const float *v, C *kc,
                           C *vc, const float *inv_freq, uint32_t n_heads,
                           uint32_t n_kv, uint32_t head_dim, uint32_t rot_dim,
                           const uint32_t *step, float attention_factor) {
  atlas_overlap_begin();
  const uint32_t half = rot_dim / 2, pos = step[1], kv_dim = n_kv * head_dim;
  const size_t row = (size_t)pos * kv_dim;
  uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < n_heads * half) {
    uint32_t h = idx / half, i = idx % half;
    float *x = q + (size_t)h * head_dim;
    rotate(x[i], x[i + half], inv_freq[i], pos, attention_factor, &x[i],
           &x[i + half]);
    return;
  }
  idx -= n_heads * half;
  if (idx < n_kv * half) {
    uint32_t h = idx / half, i = idx % half;
    const float *x = k + (size_t)h * head_dim;
    size_t at = row + (size_t)h * head_dim + i;
    float y0, y1;
    rotate(x[i], x[i + half], inv_freq[i], pos, attention_factor, &y0, &y1);
    store_rn(kc, at, y0);
    store_rn(kc, at + half, y1);
    return;
  }
  idx -= n_kv * half;
  if (idx < kv_dim) {
    store_rn(vc, row + idx, v[idx]);
    if (idx % head_dim >= rot_dim) store_rn(kc, row + idx, k[idx]);
  }
}

// matvec_qkv and rope_store in one launch (the decode step of a model
// without per-head q/k norms): q, k and v of this token, RoPE at step[1] on
// q (written to q) and k, and k and v stored into that position's cache
// rows. A warp computes a rotated pair (rows i and i + rot_dim / 2 of a
// head) and rotates it itself; rows past rot_dim in a head, and v's rows,
// are taken two by two. The attention's RMSNorm (norm_w != NULL) is folded
// in a warp at a time (rows_dot_norm: the pair shares each load of x and
// the norm weights), so no shared memory and no barrier. Leaving
// rope_store's 32 launches out of the 8B shape's step saved 0.15 ms on the
// H200; this fusion, 0.03-0.05 ms.
//
// Tasks: rows_q / 2 for q, then rows_kv / 2 for k, then rows_kv / 2 for v;
// warp w of block b takes task b * W + w (W warps a block). head_dim and
// rot_dim are even (checked by the host).
template <typename T, typename C>
__device__ void qkv_rope(float *q, C *kc, C *vc, const T *wq, const T *wk,
                         const T *wv, const float *bq, const float *bk,
                         const float *bv, const float *x, uint32_t rows_q,
                         uint32_t rows_kv, uint32_t cols, const float *norm_w,
                         float eps, const float *inv_freq, uint32_t head_dim,
                         uint32_t rot_dim, const uint32_t *step,
                         float attention_factor) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t task = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  // Which of the three (0 q, 1 k, 2 v), the pair's rows, and whether they
  // rotate.
  uint32_t which = 0, row = 0, j = 0;
  bool rotated = false;
  const T *w = wq;
  const uint32_t hh = head_dim / 2, rh = rot_dim / 2;
  if (task >= rows_q / 2) {
    task -= rows_q / 2;
    which = 1, w = wk;
    if (task >= rows_kv / 2) task -= rows_kv / 2, which = 2, w = wv;
  }
  if (which == 2 && task >= rows_kv / 2) return;  // past the end: no wait
  if (which < 2) {
    const uint32_t h = task / hh;
    j = task % hh;
    rotated = j < rh;
    row = h * head_dim + (rotated ? j : rot_dim + 2 * (j - rh));
  } else {
    row = 2 * task;
  }
  const uint32_t row2 = rotated ? row + rh : row + 1;
  RowRead<T, 2> r[2];
  const bool x_wide = ((uintptr_t)x % 16) == 0;
  row_begin(r[0], w + (size_t)row * cols, x_wide, cols, lane);
  row_begin(r[1], w + (size_t)row2 * cols, x_wide, cols, lane);
  atlas_overlap_begin();
  float acc[2];
  if (norm_w != nullptr) {
    rows_dot_norm(acc, r, x, norm_w, eps, lane);
  } else {
    acc[0] = row_dot(r[0], x, lane);
    acc[1] = row_dot(r[1], x, lane);
  }
  if (lane != 0) return;
  const float *b = which == 0 ? bq : which == 1 ? bk : bv;
  if (b != nullptr) acc[0] += b[row], acc[1] += b[row2];
  const uint32_t pos = step[1];
  const size_t at = (size_t)pos * rows_kv;
  if (rotated)
    rotate(acc[0], acc[1], inv_freq[j], pos, attention_factor, &acc[0],
           &acc[1]);
  if (which == 0) {
    q[row] = acc[0];
    q[row2] = acc[1];
  } else {
    C *cache = which == 1 ? kc : vc;
    store_rn(cache, at + row, acc[0]);
    store_rn(cache, at + row2, acc[1]);
  }
}

// One block per head: scores, softmax, weighted sum of values.
template <typename C>
__device__ void attention(float *out, const float *q, const C *kc, const C *vc,
                          float *att, uint32_t n_heads, uint32_t n_kv,
                          uint32_t head_dim, const uint32_t *step,
                          uint32_t window) {
  __shared__ float shared[32];
  atlas_overlap_begin();
  uint32_t seq_len = step[1] + 1;
  uint32_t h = blockIdx.x;
  uint32_t kv_dim = n_kv * head_dim, group = n_heads / n_kv, kvh = h / group;
  const float *qh = q + h * head_dim;
  float *a = att + (size_t)h * seq_len;
  float scale = rsqrtf((float)head_dim);
  // Sliding window: only the last `window` positions (0: all).
  uint32_t first = window != 0 && seq_len > window ? seq_len - window : 0;
  float local_max = -INFINITY;
  for (uint32_t t = first + threadIdx.x; t < seq_len; t += blockDim.x) {
    const C *kt = kc + (size_t)t * kv_dim + kvh * head_dim;
    float s = 0.0f;
    for (uint32_t i = 0; i < head_dim; ++i) s += qh[i] * load_w(kt, i);
    s *= scale;
    a[t] = s;
    local_max = fmaxf(local_max, s);
  }
  // Block max via the sum helper's pattern.
  for (int o = 16; o > 0; o >>= 1) {
    local_max = fmaxf(local_max, __shfl_xor_sync(0xffffffffu, local_max, o));
  }
  __shared__ float maxes[32];
  if (threadIdx.x % 32 == 0) maxes[threadIdx.x / 32] = local_max;
  __syncthreads();
  float m = -INFINITY;
  for (uint32_t w = 0; w < (blockDim.x + 31) / 32; ++w) m = fmaxf(m, maxes[w]);
  float local_sum = 0.0f;
  for (uint32_t t = first + threadIdx.x; t < seq_len; t += blockDim.x) {
    float e = expf(a[t] - m);
    a[t] = e;
    local_sum += e;
  }
  float sum = block_sum(local_sum, shared);
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < head_dim; i += blockDim.x) {
    float acc = 0.0f;
    for (uint32_t t = first; t < seq_len; ++t) {
      acc += a[t] * load_w(vc, (size_t)t * kv_dim + kvh * head_dim + i);
    }
    out[h * head_dim + i] = acc / sum;
  }
}

// The one-token kernels that touch the KV cache, per cache type.
#define ATLAS_KV_KERNELS(S, C)                                              \
  extern "C" __global__ void rope_store_##S(                                \
      float *q, const float *k, const float *v, C *kc, C *vc,               \
      const float *inv_freq, uint32_t n_heads, uint32_t n_kv,               \
      uint32_t head_dim, uint32_t rot_dim, const uint32_t *step,            \
      float attention_factor) {                                             \
    rope_store(q, k, v, kc, vc, inv_freq, n_heads, n_kv, head_dim, rot_dim, \
               step, attention_factor);                                     \
  }                                                                         \
  extern "C" __global__ void attention_##S(                                 \
      float *out, const float *q, const C *kc, const C *vc, float *att,     \
      uint32_t n_heads, uint32_t n_kv, uint32_t head_dim,                   \
      const uint32_t *step, uint32_t window) {                              \
    attention(out, q, kc, vc, att, n_heads, n_kv, head_dim, step, window);  \
  }
ATLAS_KV_KERNELS(f32, float)
ATLAS_KV_KERNELS(f16, __half)
ATLAS_KV_KERNELS(bf16, __nv_bfloat16)

// qkv_rope_{weights}_{cache}: every weight type with every cache type.
#define ATLAS_QKV_ROPE_KERNEL(S, T, K, C)                                    \
  extern "C" __global__ void qkv_rope_##S##_##K(                             \
      float *q, C *kc, C *vc, const T *wq, const T *wk, const T *wv,         \
      const float *bq, const float *bk, const float *bv, const float *x,     \
      uint32_t rows_q, uint32_t rows_kv, uint32_t cols, const float *norm_w, \
      float eps, const float *inv_freq, uint32_t head_dim, uint32_t rot_dim, \
      const uint32_t *step, float attention_factor) {                        \
    qkv_rope(q, kc, vc, wq, wk, wv, bq, bk, bv, x, rows_q, rows_kv, cols,    \
             norm_w, eps, inv_freq, head_dim, rot_dim, step,                 \
             attention_factor);                                              \
  }
#define ATLAS_QKV_ROPE_KERNELS(S, T)       \
  ATLAS_QKV_ROPE_KERNEL(S, T, f32, float)  \
  ATLAS_QKV_ROPE_KERNEL(S, T, f16, __half) \
  ATLAS_QKV_ROPE_KERNEL(S, T, bf16, __nv_bfloat16)
ATLAS_QKV_ROPE_KERNELS(f32, float)
ATLAS_QKV_ROPE_KERNELS(f16, __half)
ATLAS_QKV_ROPE_KERNELS(bf16, __nv_bfloat16)

#endif  // ATLAS_KERNELS_TOKEN_ATTENTION_CUH_
