// CUDA kernels of module "deltanet" (deltanet_kernels.h, which documents
// each one and its launch): Qwen3-Next's Gated DeltaNet. f32 throughout.
//
// A first, correct form: the chunked kernel keeps one head's 16 value
// columns of the state in shared memory and reads q and k through the cache;
// its dot products over dk, which cancel, run one per thread and sum in
// double (f32 in order loses about 1e-5 of a row at dk 128; the recurrent
// kernel's warp trees do not). Nothing here is tuned yet.
#include <math.h>
#include <stdint.h>

#include "deltanet_kernels.h"

#define GDN_FULL 0xffffffffu
#define GDN_REGS (ATLAS_GDN_MAX_DIM / 32u)

__device__ __forceinline__ float gdn_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(GDN_FULL, v, o);
  return v;
}

__device__ __forceinline__ float gdn_silu(float v) {
  return v / (1.0f + expf(-v));
}

extern "C" __global__ void gdn_conv(float *out, const float *x, float *state,
                                    const float *weight, const float *bias,
                                    const uint32_t *slots, uint32_t n_seqs,
                                    uint32_t n_tokens, uint32_t ch,
                                    uint32_t kernel) {
  const uint32_t cc = blockIdx.x * blockDim.x + threadIdx.x, s = blockIdx.y;
  if (cc >= ch || s >= n_seqs || kernel < 1 || kernel > ATLAS_GDN_MAX_KERNEL) {
    return;
  }
  const uint32_t slot = slots != nullptr ? slots[s] : s;
  float *st = state + (size_t)slot * (kernel - 1) * ch;
  float win[ATLAS_GDN_MAX_KERNEL];
  for (uint32_t j = 0; j + 1 < kernel; ++j) win[j] = st[(size_t)j * ch + cc];
  for (uint32_t t = 0; t < n_tokens; ++t) {
    size_t at = ((size_t)s * n_tokens + t) * ch + cc;
    win[kernel - 1] = x[at];
    float acc = bias != nullptr ? bias[cc] : 0.0f;
    for (uint32_t j = 0; j < kernel; ++j) {
      acc += weight[(size_t)cc * kernel + j] * win[j];
    }
    out[at] = gdn_silu(acc);
    for (uint32_t j = 0; j + 1 < kernel; ++j) win[j] = win[j + 1];
  }
  for (uint32_t j = 0; j + 1 < kernel; ++j) st[(size_t)j * ch + cc] = win[j];
}

extern "C" __global__ void gdn_gates(float *g, float *beta, const float *a,
                                     const float *b, const float *a_log,
                                     const float *dt_bias, uint32_t n_rows,
                                     uint32_t n_heads) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)n_rows * n_heads) return;
  uint32_t h = (uint32_t)(i % n_heads);
  float sp = a[i] + dt_bias[h];
  sp = sp > 20.0f ? sp : log1pf(expf(sp));
  g[i] = -expf(a_log[h]) * sp;
  beta[i] = 1.0f / (1.0f + expf(-b[i]));
}

// A warp per value column j of head h: the lanes hold the column's dk state
// entries (lane + 32 m), so every sum is a warp reduction.
extern "C" __global__ void __launch_bounds__(ATLAS_GDN_BLOCK)
    gdn_recurrent(float *out, float *state, const float *q, const float *k,
                  const float *v, const float *g, const float *beta,
                  const uint32_t *slots, uint32_t n_seqs, uint32_t n_tokens,
                  uint32_t hk_n, uint32_t hv_n, uint32_t dk, uint32_t dv,
                  uint32_t stride) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t j = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  const uint32_t h = blockIdx.y, s = blockIdx.z;
  if (j >= dv || s >= n_seqs || !atlas_gdn_shape_ok(hk_n, hv_n, dk, dv)) {
    return;
  }
  const uint32_t hk = h / (hv_n / hk_n);
  const uint32_t slot = slots != nullptr ? slots[s] : s;
  float *row = state + (((size_t)slot * hv_n + h) * dv + j) * dk;
  const float scale = 1.0f / sqrtf((float)dk);
  float sr[GDN_REGS];
#pragma unroll
  for (uint32_t m = 0; m < GDN_REGS; ++m) {
    uint32_t i = lane + 32u * m;
    sr[m] = i < dk ? row[i] : 0.0f;
  }
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const size_t r = (size_t)s * n_tokens + t;
    const float *qr = q + r * stride + (size_t)hk * dk;
    const float *kr = k + r * stride + (size_t)hk * dk;
    float qv[GDN_REGS], kv[GDN_REGS], sq = 0.0f, sk = 0.0f;
#pragma unroll
    for (uint32_t m = 0; m < GDN_REGS; ++m) {
      uint32_t i = lane + 32u * m;
      qv[m] = i < dk ? qr[i] : 0.0f;
      kv[m] = i < dk ? kr[i] : 0.0f;
      sq += qv[m] * qv[m];
      sk += kv[m] * kv[m];
    }
    const float qi = 1.0f / sqrtf(gdn_warp_sum(sq) + 1e-6f);
    const float ki = 1.0f / sqrtf(gdn_warp_sum(sk) + 1e-6f);
    const float decay = expf(g[r * hv_n + h]), b = beta[r * hv_n + h];
    float mem = 0.0f;
#pragma unroll
    for (uint32_t m = 0; m < GDN_REGS; ++m) {
      qv[m] = qv[m] * qi * scale;
      kv[m] = kv[m] * ki;
      sr[m] *= decay;
      mem += sr[m] * kv[m];
    }
    const float delta =
        (v[r * stride + (size_t)h * dv + j] - gdn_warp_sum(mem)) * b;
    float o = 0.0f;
#pragma unroll
    for (uint32_t m = 0; m < GDN_REGS; ++m) {
      sr[m] += kv[m] * delta;
      o += sr[m] * qv[m];
    }
    o = gdn_warp_sum(o);
    if (lane == 0) out[(r * hv_n + h) * dv + j] = o;
  }
#pragma unroll
  for (uint32_t m = 0; m < GDN_REGS; ++m) {
    uint32_t i = lane + 32u * m;
    if (i < dk) row[i] = sr[m];
  }
}

#define GDN_CH ATLAS_GDN_CHUNK
#define GDN_SL ATLAS_GDN_SLICE

// The chunk form for ATLAS_GDN_SLICE value columns of one head: the state
// slice stays in shared memory across chunks; the WY transform (which
// depends on k, beta and g only) is formed by every slice's block.
extern "C" __global__ void __launch_bounds__(ATLAS_GDN_BLOCK)
    gdn_chunked(float *out, float *state, const float *q, const float *k,
                const float *v, const float *g, const float *beta,
                uint32_t slot, uint32_t n_tokens, uint32_t hk_n, uint32_t hv_n,
                uint32_t dk, uint32_t dv, uint32_t stride) {
  __shared__ float a[GDN_CH][GDN_CH + 1];
  __shared__ float ss[GDN_SL][ATLAS_GDN_MAX_DIM + 1];
  __shared__ float rv[GDN_CH][GDN_SL + 1];
  __shared__ float vn[GDN_CH][GDN_SL + 1];
  __shared__ float gs[GDN_CH], bs[GDN_CH], qs[GDN_CH], ks[GDN_CH];
  __shared__ float row[GDN_CH];
  if (!atlas_gdn_shape_ok(hk_n, hv_n, dk, dv)) return;
  const uint32_t h = blockIdx.y, cbase = blockIdx.x * GDN_SL;
  if (cbase >= dv) return;
  const uint32_t ncol = min(GDN_SL, dv - cbase);
  const uint32_t hk = h / (hv_n / hk_n);
  const uint32_t tid = threadIdx.x, nt = blockDim.x;
  const uint32_t warp = tid / 32u, lane = tid % 32u, warps = nt / 32u;
  const float scale = 1.0f / sqrtf((float)dk);
  float *st = state + ((size_t)slot * hv_n + h) * dv * dk;
  const float *qh = q + (size_t)hk * dk, *kh = k + (size_t)hk * dk;
  const float *vh = v + (size_t)h * dv + cbase;
  for (uint32_t i = tid; i < GDN_SL * dk; i += nt) {
    uint32_t cc = i / dk, x = i % dk;
    ss[cc][x] = cc < ncol ? st[(size_t)(cbase + cc) * dk + x] : 0.0f;
  }
  for (uint32_t c0 = 0; c0 < n_tokens; c0 += GDN_CH) {
    const uint32_t n = min(GDN_CH, n_tokens - c0);
    // q_l = qh[row] * qs[l], k_l = kh[row] * ks[l] (L2-normed, q scaled).
#define GDN_Q(l, x) (qh[((size_t)c0 + (l)) * stride + (x)] * qs[l])
#define GDN_K(l, x) (kh[((size_t)c0 + (l)) * stride + (x)] * ks[l])
    for (uint32_t l = warp; l < n; l += warps) {
      const float *qr = qh + ((size_t)c0 + l) * stride;
      const float *kr = kh + ((size_t)c0 + l) * stride;
      float sq = 0.0f, sk = 0.0f;
      for (uint32_t x = lane; x < dk; x += 32u) {
        sq += qr[x] * qr[x];
        sk += kr[x] * kr[x];
      }
      sq = gdn_warp_sum(sq);
      sk = gdn_warp_sum(sk);
      if (lane == 0) {
        qs[l] = 1.0f / sqrtf(sq + 1e-6f) * scale;
        ks[l] = 1.0f / sqrtf(sk + 1e-6f);
        bs[l] = beta[((size_t)c0 + l) * hv_n + h];
      }
    }
    if (tid == 0) {
      float acc = 0.0f;
      for (uint32_t l = 0; l < n; ++l) {
        acc += g[((size_t)c0 + l) * hv_n + h];
        gs[l] = acc;
      }
    }
    __syncthreads();
    for (uint32_t i = tid; i < n * n; i += nt) {
      uint32_t ii = i / n, jj = i % n;
      if (jj >= ii) continue;
      double d = 0.0;
      for (uint32_t x = 0; x < dk; ++x) d += GDN_K(ii, x) * GDN_K(jj, x);
      a[ii][jj] = -bs[ii] * (float)d * expf(gs[ii] - gs[jj]);
    }
    __syncthreads();
    for (uint32_t ii = 1; ii < n; ++ii) {
      if (tid < ii) row[tid] = a[ii][tid];
      __syncthreads();
      if (tid < ii) {
        float acc = row[tid];
        for (uint32_t m = tid + 1; m < ii; ++m) acc += row[m] * a[m][tid];
        a[ii][tid] = acc;
      }
      __syncthreads();
    }
    for (uint32_t i = tid; i < n * GDN_SL; i += nt) {
      uint32_t l = i / GDN_SL, cc = i % GDN_SL;
      float r = 0.0f;
      if (cc < ncol) {
        double sk = 0.0;
        for (uint32_t x = 0; x < dk; ++x) sk += ss[cc][x] * GDN_K(l, x);
        r = bs[l] *
            (vh[((size_t)c0 + l) * stride + cc] - expf(gs[l]) * (float)sk);
      }
      rv[l][cc] = r;
    }
    __syncthreads();
    for (uint32_t i = tid; i < n * GDN_SL; i += nt) {
      uint32_t l = i / GDN_SL, cc = i % GDN_SL;
      float acc = rv[l][cc];
      for (uint32_t j = 0; j < l; ++j) acc += a[l][j] * rv[j][cc];
      vn[l][cc] = acc;
    }
    __syncthreads();
    for (uint32_t i = tid; i < n * n; i += nt) {
      uint32_t ii = i / n, jj = i % n;
      if (jj > ii) continue;
      double d = 0.0;
      for (uint32_t x = 0; x < dk; ++x) d += GDN_Q(ii, x) * GDN_K(jj, x);
      a[ii][jj] = (float)d * expf(gs[ii] - gs[jj]);
    }
    __syncthreads();
    for (uint32_t i = tid; i < n * GDN_SL; i += nt) {
      uint32_t l = i / GDN_SL, cc = i % GDN_SL;
      if (cc >= ncol) continue;
      double sq = 0.0;
      for (uint32_t x = 0; x < dk; ++x) sq += ss[cc][x] * GDN_Q(l, x);
      float o = expf(gs[l]) * (float)sq;
      for (uint32_t j = 0; j <= l; ++j) o += a[l][j] * vn[j][cc];
      out[(((size_t)c0 + l) * hv_n + h) * dv + cbase + cc] = o;
    }
    __syncthreads();
    const float gl = gs[n - 1], egl = expf(gl);
    for (uint32_t i = tid; i < GDN_SL * dk; i += nt) {
      uint32_t cc = i / dk, x = i % dk;
      if (cc >= ncol) continue;
      float acc = ss[cc][x] * egl;
      for (uint32_t j = 0; j < n; ++j) {
        acc += GDN_K(j, x) * expf(gl - gs[j]) * vn[j][cc];
      }
      ss[cc][x] = acc;
    }
    __syncthreads();
#undef GDN_Q
#undef GDN_K
  }
  for (uint32_t i = tid; i < ncol * dk; i += nt) {
    uint32_t cc = i / dk, x = i % dk;
    st[(size_t)(cbase + cc) * dk + x] = ss[cc][x];
  }
}

extern "C" __global__ void gdn_norm_gate(float *out, const float *x,
                                         const float *z, const float *weight,
                                         uint32_t n_rows, uint32_t dim,
                                         float eps) {
  const uint32_t lane = threadIdx.x % 32u;
  const uint32_t r = blockIdx.x * (blockDim.x / 32u) + threadIdx.x / 32u;
  if (r >= n_rows) return;
  const float *xr = x + (size_t)r * dim, *zr = z + (size_t)r * dim;
  float ss = 0.0f;
  for (uint32_t i = lane; i < dim; i += 32u) ss += xr[i] * xr[i];
  const float inv = 1.0f / sqrtf(gdn_warp_sum(ss) / (float)dim + eps);
  for (uint32_t i = lane; i < dim; i += 32u) {
    out[(size_t)r * dim + i] = weight[i] * (xr[i] * inv) * gdn_silu(zr[i]);
  }
}
