// CUDA kernels of the paged-KV batch step (module "llama_paged"); names,
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
// One block a (query head, row): keys in tiles of 128 positions, each thread
// one key's score, then an online softmax over the tiles; the output's
// head_dim values spread over the threads.
enum { kTile = 128, kPagedMaxD = 256 };

template <typename C>
__device__ void attention_paged(float *out, const float *q, const C *kc,
                                const C *vc, uint32_t n_heads, uint32_t n_kv,
                                uint32_t head_dim, const uint32_t *pos,
                                const uint32_t *row_seq, const uint32_t *tables,
                                uint32_t stride, uint32_t bt, uint32_t n,
                                uint32_t window) {
  __shared__ float qs[kPagedMaxD];
  __shared__ float ps[kTile];
  __shared__ size_t rows[kTile];
  __shared__ float red[32];
  uint32_t h = blockIdx.x, r = blockIdx.y;
  if (r >= n) return;
  uint32_t kv_dim = n_kv * head_dim, q_dim = n_heads * head_dim;
  uint32_t kvh = h / (n_heads / n_kv);
  uint32_t p = pos[r];
  uint32_t lo = (window != 0 && p + 1 > window) ? p + 1 - window : 0;
  const uint32_t *table = tables + (size_t)row_seq[r] * stride;
  const float *qh = q + (size_t)r * q_dim + (size_t)h * head_dim;
  for (uint32_t i = threadIdx.x; i < head_dim; i += blockDim.x) qs[i] = qh[i];
  float scale = 1.0f / sqrtf((float)head_dim);
  // Each thread owns output dims threadIdx.x, + blockDim.x (head_dim <= 256).
  float acc0 = 0.0f, acc1 = 0.0f;
  float m = -INFINITY, l = 0.0f;
  __syncthreads();
  for (uint32_t t0 = lo; t0 <= p; t0 += kTile) {
    uint32_t t = t0 + threadIdx.x;
    float s = -INFINITY;
    if (threadIdx.x < kTile && t <= p) {
      size_t row = ((size_t)table[t / bt] * bt + t % bt) * kv_dim +
                   (size_t)kvh * head_dim;
      rows[threadIdx.x] = row;
      float d = 0.0f;
      for (uint32_t i = 0; i < head_dim; ++i) d += qs[i] * load_w(kc, row + i);
      s = d * scale;
    }
    // The tile's max.
    float mx = s;
    for (int o = 16; o > 0; o >>= 1)
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
    __syncthreads();
    mx = -INFINITY;
    for (uint32_t w = 0; w < (blockDim.x + 31) / 32; ++w)
      mx = fmaxf(mx, red[w]);
    __syncthreads();
    float new_m = fmaxf(m, mx);
    float e = (threadIdx.x < kTile && t <= p) ? expf(s - new_m) : 0.0f;
    if (threadIdx.x < kTile) ps[threadIdx.x] = e;
    float sum = block_sum(e, red);
    float corr = expf(m - new_m);
    l = l * corr + sum;
    m = new_m;
    uint32_t count = p - t0 + 1 < kTile ? p - t0 + 1 : kTile;
    __syncthreads();
    float a0 = 0.0f, a1 = 0.0f;
    uint32_t d0 = threadIdx.x, d1 = threadIdx.x + blockDim.x;
    for (uint32_t j = 0; j < count; ++j) {
      size_t row = rows[j];
      if (d0 < head_dim) a0 += ps[j] * load_w(vc, row + d0);
      if (d1 < head_dim) a1 += ps[j] * load_w(vc, row + d1);
    }
    acc0 = acc0 * corr + a0;
    acc1 = acc1 * corr + a1;
    __syncthreads();
  }
  float *oh = out + (size_t)r * q_dim + (size_t)h * head_dim;
  if (threadIdx.x < head_dim) oh[threadIdx.x] = acc0 / l;
  if (threadIdx.x + blockDim.x < head_dim)
    oh[threadIdx.x + blockDim.x] = acc1 / l;
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
