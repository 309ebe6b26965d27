// CUDA kernels of the paged-KV batch step (module "paged"); names,
// signatures and grids in paged_kernels.h, host twins in paged_host.c.
#include <math.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

// ---- rope_rows_at: rope_rows with a position per row ------------------------
extern "C" __global__ void rope_rows_at(float *x, const float *inv_freq,
                                        uint32_t n_heads, uint32_t head_dim,
                                        uint32_t rot_dim, const uint32_t *pos,
                                        uint32_t n, float attention_factor,
                                        uint32_t row_stride) {
  uint32_t half = rot_dim / 2;
  uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (idx >= n_heads * half || r >= n) return;
  uint32_t h = idx / half, i = idx % half;
  double angle = (double)pos[r] * (double)inv_freq[i];
  double csd, snd;
  sincos(angle, &snd, &csd);
  float cs = (float)(csd * attention_factor),
        sn = (float)(snd * attention_factor);
  float *v = x + (size_t)r * row_stride + (size_t)h * head_dim;
  float x0 = v[i], x1 = v[i + half];
  v[i] = x0 * cs - x1 * sn;
  v[i + half] = x1 * cs + x0 * sn;
}

// ---- kv_store_slots ------------------------------------------------------------
template <typename C>
__device__ void kv_store_slots(C *kc, C *vc, const float *k, const float *v,
                               uint32_t kv_dim, const uint32_t *slots,
                               uint32_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n * kv_dim) return;
  size_t r = i / kv_dim, c = i % kv_dim;
  size_t at = (size_t)slots[r] * kv_dim + c;
  store_rn(kc, at, k[i]);
  store_rn(vc, at, v[i]);
}

// ---- attention_paged -------------------------------------------------------------
// One block a (KV head, row): every query head of the KV head's group at
// once, so each key and value row is read once for the group. Keys in tiles
// of 128 positions, each thread one key's scores (a dot product a head),
// then an online softmax a head over the tiles; the output's head_dim values
// spread over the threads.
enum { kTile = 128, kPagedMaxD = 256, kMaxGroup = 16 };

// qs: kMaxGroup x kPagedMaxD, ps: kMaxGroup x kTile, rows: kTile, red: 32
// (the caller's shared memory: one copy for every group size).
struct PagedShared {
  float *qs, *ps, *red;
  size_t *rows;
};

template <typename C, int G>
__device__ void attention_paged_g(const PagedShared &sh, float *out,
                                  const float *q, const C *kc, const C *vc,
                                  uint32_t n_heads, uint32_t n_kv,
                                  uint32_t head_dim, const uint32_t *pos,
                                  const uint32_t *row_seq,
                                  const uint32_t *tables, uint32_t stride,
                                  uint32_t bt, uint32_t n, uint32_t window) {
  float *red = sh.red;
  size_t *rows = sh.rows;
  uint32_t kvh = blockIdx.x, r = blockIdx.y;
  if (r >= n) return;
  const uint32_t group = n_heads / n_kv;  // <= G
  uint32_t kv_dim = n_kv * head_dim, q_dim = n_heads * head_dim;
  uint32_t p = pos[r];
  uint32_t lo = (window != 0 && p + 1 > window) ? p + 1 - window : 0;
  const uint32_t *table = tables + (size_t)row_seq[r] * stride;
  _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) {
    const float *qh =
        q + (size_t)r * q_dim + (size_t)(kvh * group + g) * head_dim;
    for (uint32_t i = threadIdx.x; i < head_dim; i += blockDim.x)
      sh.qs[g * kPagedMaxD + i] = qh[i];
  }
  float scale = 1.0f / sqrtf((float)head_dim);
  float acc0[G], acc1[G], m[G], l[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    acc0[g] = acc1[g] = 0.0f;
    m[g] = -INFINITY;
    l[g] = 0.0f;
  }
  uint32_t d0 = threadIdx.x, d1 = threadIdx.x + blockDim.x;
  __syncthreads();
  for (uint32_t t0 = lo; t0 <= p; t0 += kTile) {
    uint32_t t = t0 + threadIdx.x;
    bool live = threadIdx.x < kTile && t <= p;
    if (live) {
      size_t row = ((size_t)table[t / bt] * bt + t % bt) * kv_dim +
                   (size_t)kvh * head_dim;
      rows[threadIdx.x] = row;
      float d[G];
      _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) d[g] =
          0.0f;
      for (uint32_t i = 0; i < head_dim; ++i) {
        float k = load_w(kc, row + i);
        _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group)
            d[g] += sh.qs[g * kPagedMaxD + i] * k;
      }
      _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group)
          sh.ps[g * kTile + threadIdx.x] = d[g] * scale;
    }
    uint32_t count = p - t0 + 1 < kTile ? p - t0 + 1 : kTile;
    __syncthreads();
    float corr[G];
    _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) {
      float s = live ? sh.ps[g * kTile + threadIdx.x] : -INFINITY;
      float mx = s;
      for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
      __syncthreads();
      mx = -INFINITY;
      for (uint32_t w = 0; w < (blockDim.x + 31) / 32; ++w)
        mx = fmaxf(mx, red[w]);
      __syncthreads();
      float new_m = fmaxf(m[g], mx);
      float e = live ? expf(s - new_m) : 0.0f;
      float sum = block_sum(e, red);
      if (threadIdx.x < kTile) sh.ps[g * kTile + threadIdx.x] = e;
      corr[g] = expf(m[g] - new_m);
      l[g] = l[g] * corr[g] + sum;
      m[g] = new_m;
      __syncthreads();
    }
    float a0[G], a1[G];
    _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) a0[g] =
        a1[g] = 0.0f;
    for (uint32_t j = 0; j < count; ++j) {
      size_t row = rows[j];
      float v0 = d0 < head_dim ? load_w(vc, row + d0) : 0.0f;
      float v1 = d1 < head_dim ? load_w(vc, row + d1) : 0.0f;
      _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) {
        a0[g] += sh.ps[g * kTile + j] * v0;
        a1[g] += sh.ps[g * kTile + j] * v1;
      }
    }
    _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) {
      acc0[g] = acc0[g] * corr[g] + a0[g];
      acc1[g] = acc1[g] * corr[g] + a1[g];
    }
    __syncthreads();
  }
  _Pragma("unroll") for (int g = 0; g < G; ++g) if (g < (int)group) {
    float *oh = out + (size_t)r * q_dim + (size_t)(kvh * group + g) * head_dim;
    if (d0 < head_dim) oh[d0] = acc0[g] / l[g];
    if (d1 < head_dim) oh[d1] = acc1[g] / l[g];
  }
}

template <typename C>
__device__ void attention_paged(float *out, const float *q, const C *kc,
                                const C *vc, uint32_t n_heads, uint32_t n_kv,
                                uint32_t head_dim, const uint32_t *pos,
                                const uint32_t *row_seq, const uint32_t *tables,
                                uint32_t stride, uint32_t bt, uint32_t n,
                                uint32_t window) {
  // The group size picks registers for that many heads (a runtime bound
  // would put the per-head arrays in local memory).
  __shared__ float qs[kMaxGroup * kPagedMaxD];
  __shared__ float ps[kMaxGroup * kTile];
  __shared__ size_t rows[kTile];
  __shared__ float red[32];
  PagedShared sh = {qs, ps, red, rows};
  uint32_t group = n_heads / n_kv;
  if (group <= 1) {
    attention_paged_g<C, 1>(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos,
                            row_seq, tables, stride, bt, n, window);
  } else if (group <= 2) {
    attention_paged_g<C, 2>(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos,
                            row_seq, tables, stride, bt, n, window);
  } else if (group <= 4) {
    attention_paged_g<C, 4>(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos,
                            row_seq, tables, stride, bt, n, window);
  } else if (group <= 8) {
    attention_paged_g<C, 8>(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos,
                            row_seq, tables, stride, bt, n, window);
  } else {
    attention_paged_g<C, 16>(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos,
                             row_seq, tables, stride, bt, n, window);
  }
}

#define ATLAS_PAGED_KV_KERNELS(S, C)                                           \
  extern "C" __global__ void __launch_bounds__(256)                            \
      kv_store_slots_##S(C *kc, C *vc, const float *k, const float *v,         \
                         uint32_t kv_dim, const uint32_t *slots, uint32_t n) { \
    kv_store_slots(kc, vc, k, v, kv_dim, slots, n);                            \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(128) attention_paged_##S(       \
      float *out, const float *q, const C *kc, const C *vc, uint32_t n_heads,  \
      uint32_t n_kv, uint32_t head_dim, const uint32_t *pos,                   \
      const uint32_t *row_seq, const uint32_t *tables, uint32_t stride,        \
      uint32_t bt, uint32_t n, uint32_t window) {                              \
    attention_paged(out, q, kc, vc, n_heads, n_kv, head_dim, pos, row_seq,     \
                    tables, stride, bt, n, window);                            \
  }
ATLAS_PAGED_KV_KERNELS(f32, float)
ATLAS_PAGED_KV_KERNELS(f16, __half)
ATLAS_PAGED_KV_KERNELS(bf16, __nv_bfloat16)

// ---- gather_rows, argmax_rows ---------------------------------------------------
extern "C" __global__ void gather_rows(float *out, const float *x,
                                       const uint32_t *rows, uint32_t n,
                                       uint32_t dim) {
  uint32_t j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j >= dim || i >= n) return;
  out[(size_t)i * dim + j] = x[(size_t)rows[i] * dim + j];
}

extern "C" __global__ void argmax_rows(uint32_t *out, const float *x,
                                       uint32_t n, uint32_t dim) {
  __shared__ float best_v[256];
  __shared__ uint32_t best_i[256], bad_i[256];
  uint32_t i = blockIdx.x;
  if (i >= n) return;
  const float *r = x + (size_t)i * dim;
  float bv = -INFINITY;
  uint32_t bi = UINT32_MAX, bad = UINT32_MAX;
  for (uint32_t j = threadIdx.x; j < dim; j += blockDim.x) {
    float v = r[j];
    if (!isfinite(v) && bad == UINT32_MAX) bad = j;
    if (bi == UINT32_MAX || v > bv) {
      bv = v;
      bi = j;
    }
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  bad_i[threadIdx.x] = bad;
  __syncthreads();
  for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      float ov = best_v[threadIdx.x + s];
      uint32_t oi = best_i[threadIdx.x + s];
      if (oi != UINT32_MAX &&
          (best_i[threadIdx.x] == UINT32_MAX || ov > best_v[threadIdx.x] ||
           (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x]))) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
      uint32_t ob = bad_i[threadIdx.x + s];
      if (ob < bad_i[threadIdx.x]) bad_i[threadIdx.x] = ob;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[2 * i] = best_i[0];
    out[2 * i + 1] = bad_i[0];
  }
}
