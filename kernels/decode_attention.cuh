// Flash-decoding (module "prefill"): one query token's attention over
// the KV cache, the context split in chunks across blocks and merged.
#ifndef ATLAS_KERNELS_DECODE_ATTENTION_CUH_
#define ATLAS_KERNELS_DECODE_ATTENTION_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/cuda_common.cuh"

// ---- flash-decoding: one query token, the context split in chunks ----------
// The position comes from device memory (step[1], seq_len = step[1] + 1), so
// the grid is sized for the longest context (`max_splits`) and splits past
// this step's context return at once: one captured graph serves every step.
// attention_decode: grid (atlas_decoder_decode_grid_x(max_splits, group,
// blocks), n_kv), block ATLAS_DECODER_DECODE_THREADS. With `used` = min(this
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

// kDecWarps * 32: ATLAS_DECODER_DECODE_THREADS (prefill_kernels.h).
constexpr int kChunkMax = 128, kMaxGroup = 16, kDecWarps = 16;
// Keys a split holds for head size D (0: any other), which sizes `splits`:
// atlas_decoder_decode_chunk (prefill_kernels.h says why).
template <int D>
constexpr int kChunkOf = D == 128 ? 64 : 128;
// ATLAS_DECODER_DECODE_HEAD_KEYS: contexts of this many keys or fewer take a
// block per query head.
constexpr uint32_t kHeadKeys = 256;

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

// The block's queries (heads h0 .. h0 + heads - 1) into qs, zeros past
// head_dim and the group: every lane reads its quad of each.
template <int G>
__device__ __forceinline__ void decode_stage_q(DecodeShared<G> &sh,
                                               const float *q, uint32_t h0,
                                               uint32_t heads,
                                               uint32_t head_dim) {
  float(*qs)[kMaxD] = sh.qs;
  for (uint32_t i = threadIdx.x; i < G * kMaxD; i += blockDim.x) {
    uint32_t g = i / kMaxD, d = i % kMaxD;
    qs[g][d] =
        g < heads && d < head_dim ? q[(size_t)(h0 + g) * head_dim + d] : 0.0f;
  }
}

// Key j of the chunk for the lane's p-th score (lane segment `sub` of its
// warp, `per_warp` segments a warp), or kChunk for none.
template <int kChunk>
__device__ __forceinline__ uint32_t decode_key_of(int p, uint32_t per_warp,
                                                  uint32_t sub, uint32_t warp) {
  constexpr int kPerWarp = kChunk / kDecWarps;
  const uint32_t k_in_warp = p * per_warp + sub;
  return k_in_warp < (uint32_t)kPerWarp ? warp * kPerWarp + k_in_warp : kChunk;
}

// A chunk's scores times `scale`, per head g < heads, into ps[g][j] (-inf
// for keys j past `count`). kr: this lane's key rows of the chunk; kpos: row
// pos, the chunk's last when has_pos. Lane (sub, qd) of a segment of `seg`
// lanes holds dimensions 4 qd .. 4 qd + 3 of its key.
template <typename C, int G, int D>
__device__ __forceinline__ void decode_scores(
    DecodeShared<G> &sh,
    const typename KvRaw<C>::T (&kr)[kChunkOf<D> / kDecWarps],
    typename KvRaw<C>::T kpos, bool has_pos, uint32_t count, uint32_t heads,
    uint32_t seg, float scale) {
  using Raw = typename KvRaw<C>::T;
  constexpr int kChunk = kChunkOf<D>;
  constexpr int kPerWarp = kChunk / kDecWarps;  // keys a warp scores
  float(*qs)[kMaxD] = sh.qs;
  float(*ps)[kChunkMax] = sh.ps;
  const C *type = nullptr;  // picks kv_unpack's conversion
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t sub = lane / seg, qd = lane % seg, per_warp = 32 / seg;
  auto key_of = [&](int p) {
    return decode_key_of<kChunk>(p, per_warp, sub, warp);
  };
  if constexpr (D != 0) {
    // This lane's dot products for a batch of heads (at most 32 sums),
    // summed over each key's lane segment by halving exchanges: a lane
    // ends with whole sums (score_scatter), 31 shuffles for 32 sums where
    // a shuffle tree per sum took 160.
    constexpr int kSegC = D == 128 ? 32 : 16, kAtOnce = 32 / kSegC;
    constexpr int kP = kPerWarp / kAtOnce;           // this lane's keys a chunk
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
          const float4 k4 = kv_unpack(raw, type);
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
        const float4 k4 = kv_unpack(raw, type);
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
}

// The chunk's softmax per head g < heads, online: ps[g][..] becomes
// exp(score - m) and stat[g] the running max m, the running sum and the
// factor that rescales what was summed before (first: nothing was).
template <int G, int kChunk>
__device__ __forceinline__ void decode_softmax(DecodeShared<G> &sh,
                                               uint32_t heads, uint32_t count,
                                               bool first) {
  float(*ps)[kChunkMax] = sh.ps;
  float(*stat)[3] = sh.stat;
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
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
}

// The block's P V sums per head: its slices meet (shuffles within a warp,
// then shared memory across warps). With one split (`one`) they are the
// output; else the split's max, sum and unnormalised output go to part.
template <int G>
__device__ __forceinline__ void decode_write_split(
    DecodeShared<G> &sh, float4 (&acc)[G], float *part, float *out, uint32_t h0,
    uint32_t heads, uint32_t splits, uint32_t split, uint32_t head_dim,
    uint32_t seg, uint32_t quads, bool one) {
  float(*stat)[3] = sh.stat;
  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const uint32_t qd = lane % seg;
  const size_t stride = head_dim + 2;
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
}

// The last block of these heads to finish (the counter at ctr says) merges
// every split's partials in part into out, and resets the counter.
template <int G>
__device__ __forceinline__ void decode_merge_splits(
    DecodeShared<G> &sh, float *part, float *out, uint32_t *counters,
    uint32_t ctr, uint32_t h0, uint32_t heads, uint32_t splits, uint32_t used,
    uint32_t head_dim, uint32_t seg, uint32_t quads) {
  float(*stat)[3] = sh.stat;
  const uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const uint32_t qd = lane % seg, slice = tid / seg, slices = blockDim.x / seg;
  const size_t stride = head_dim + 2;
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

// attention_decode_g's loads of chunk c's key rows (into kr) and value rows
// (into vr), over its locals. (Written out at each use, not as lambdas over
// kr and vr: those put the arrays in local memory.)
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
  auto key_of = [&](int p) {
    return decode_key_of<kChunk>(p, per_warp, sub, warp);
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
  decode_stage_q<G>(sh, q, h0, heads, head_dim);
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
    decode_scores<C, G, D>(sh, kr, kpos, has_pos, count, heads, seg, scale);
    if (!kEarlyV) ATLAS_DECODE_LOAD_V(c, false);
    if (next < chunks) ATLAS_DECODE_LOAD_K(next);
    __syncthreads();
    decode_softmax<G, kChunk>(sh, heads, count, first);
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
  const bool one = used == 1;
  decode_write_split<G>(sh, acc, part, out, h0, heads, splits, split, head_dim,
                        seg, quads, one);
  if (one) return;
  decode_merge_splits<G>(sh, part, out, counters, ctr, h0, heads, splits, used,
                         head_dim, seg, quads);
}

// The block's split and heads, then the body for this head size. A context
// of up to kHeadKeys keys (and room in the grid:
// atlas_decoder_decode_grid_x) takes a block per query head and split, so
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
#define ATLAS_DECODE_KERNELS_ALL(S, C) \
  ATLAS_DECODE_KERNELS(S, C, 1)        \
  ATLAS_DECODE_KERNELS(S, C, 2)        \
  ATLAS_DECODE_KERNELS(S, C, 4)        \
  ATLAS_DECODE_KERNELS(S, C, 8)        \
  ATLAS_DECODE_KERNELS(S, C, 16)
ATLAS_DECODE_KERNELS_ALL(f32, float)
ATLAS_DECODE_KERNELS_ALL(f16, __half)
ATLAS_DECODE_KERNELS_ALL(bf16, __nv_bfloat16)

#endif  // ATLAS_KERNELS_DECODE_ATTENTION_CUH_
