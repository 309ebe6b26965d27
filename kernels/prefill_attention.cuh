// The prompt attention of the batched prefill (module "prefill"):
// causal, tiled, online softmax, GQA-aware; SIMT for f32 caches, tensor
// cores (FlashAttention-2) for 16-bit ones.
#ifndef ATLAS_KERNELS_PREFILL_ATTENTION_CUH_
#define ATLAS_KERNELS_PREFILL_ATTENTION_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"
#include "kernels/cuda_mma.cuh"

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
// prefill_kernels.h's atlas_decoder_prefill_attention_rows() picks the grid.

constexpr int kRows = 16, kKeys = 32;

// The SIMT kernel's shared memory (a struct: the 16-bit kernels share its
// bytes with the tensor-core path's tiles).
struct PrefillSimtShared {
  float qs[kRows][kMaxD];
  float ks[kKeys][kMaxD + 1];
  float vs[kKeys][kMaxD];
};

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

constexpr int kFlashWarps = 4, kFlashRows = 16 * kFlashWarps, kFlashKeys = 64;
// K and V tiles, kFlashKeys rows of up to kMaxD (+8: ldmatrix without bank
// conflicts), in elements; Q is staged in V's (kFlashRows == kFlashKeys).
constexpr int kFlashTile = kFlashKeys * (kMaxD + 8);
static_assert(kFlashRows == kFlashKeys, "Q is staged in the V tile");
constexpr size_t kPrefillShared = sizeof(PrefillSimtShared) > 2 * kFlashTile * 2
                                      ? sizeof(PrefillSimtShared)
                                      : 2 * kFlashTile * 2;

// One K tile (keys t0 ..) for a warp's rows (this lane's: lane / 4 and
// lane / 4 + 8): S = Q K^T, masked to each row's keys rlo .. rpos unless
// `full`, the online softmax's max m, sum l and output o rescaled, and
// P = 2^(S scale_log2 - max) as A fragments in the cache type (pf).
template <typename C, int HD>
__device__ __forceinline__ void flash_tile_softmax(
    const C *ks, const uint32_t (&qf)[HD / 16][4], uint32_t hd, uint32_t t0,
    bool full, const uint32_t (&rlo)[2], const uint32_t (&rpos)[2],
    float scale_log2, float (&m)[2], float (&l)[2], float (&o)[HD / 8][4],
    uint32_t (&pf)[kFlashKeys / 16][4]) {
  constexpr int LD = HD + 8, KT = HD / 16, NT = HD / 8, KS = kFlashKeys / 16;
  const uint32_t lane = threadIdx.x % 32;
  float s[2 * KS][4];
#pragma unroll
  for (int i = 0; i < 2 * KS; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
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
        e[h][c] = exp2_ftz(fmaf(s[2 * k + h][c], scale_log2, -m_use[c / 2]));
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
      flash_tile_softmax<C, HD>(ks, qf, hd, t0, full, rlo, rpos, scale_log2, m,
                                l, o, pf);
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
// sizes the grid the same way: atlas_decoder_prefill_attention_rows). D: the
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
#define ATLAS_PREFILL_ATTENTION_KERNELS(S, C)        \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 64, d64, 4)   \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 128, d128, 3) \
  ATLAS_PREFILL_ATTENTION_KERNEL(S, C, 0, dany, 3)
ATLAS_PREFILL_ATTENTION_KERNELS(f32, float)
ATLAS_PREFILL_ATTENTION_KERNELS(f16, __half)
ATLAS_PREFILL_ATTENTION_KERNELS(bf16, __nv_bfloat16)

#endif  // ATLAS_KERNELS_PREFILL_ATTENTION_CUH_
