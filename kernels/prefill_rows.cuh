// Row-wise kernels of the batched prefill (module "prefill"): embedding
// rows, RMSNorm, SiLU, RoPE, rounding to 16 bits and KV cache stores, each
// row of the chunk independent of the others.
#ifndef ATLAS_KERNELS_PREFILL_ROWS_CUH_
#define ATLAS_KERNELS_PREFILL_ROWS_CUH_

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
    store_rn(orow, i, w[i] * (xr[i] * scale));
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
// The down product's input: the one-token silu_mul's expression (token.cu),
// rounded as round_rows; a and b are left as they were.
template <typename O>
__device__ void silu_mul_round(O *out, const float *a, const float *b,
                               uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float x = a[i];
    store_rn(out, i, x / (1.0f + expf(-x)) * b[i]);
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

// The chunk's keys and values (f32 rows of kv_dim) into cache rows pos0.. of
// the cache's type: grid ceil(n * kv_dim / 256), block 256.
template <typename C>
__device__ void kv_store_rows(C *kc, C *vc, const float *k, const float *v,
                              uint32_t kv_dim, uint32_t pos0, uint32_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n * kv_dim) return;
  size_t at = (size_t)pos0 * kv_dim + i;
  store_rn(kc, at, k[i]);
  store_rn(vc, at, v[i]);
}

#define ATLAS_KV_STORE_ROWS_KERNEL(S, C)                              \
  extern "C" __global__ void __launch_bounds__(256)                   \
      kv_store_rows_##S(C *kc, C *vc, const float *k, const float *v, \
                        uint32_t kv_dim, uint32_t pos0, uint32_t n) { \
    kv_store_rows(kc, vc, k, v, kv_dim, pos0, n);                     \
  }
ATLAS_KV_STORE_ROWS_KERNEL(f32, float)
ATLAS_KV_STORE_ROWS_KERNEL(f16, __half)
ATLAS_KV_STORE_ROWS_KERNEL(bf16, __nv_bfloat16)
#undef ATLAS_KV_STORE_ROWS_KERNEL

#endif  // ATLAS_KERNELS_PREFILL_ROWS_CUH_
