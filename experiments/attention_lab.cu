// Prefill attention timed on the Llama shapes (a lab for issue 13, not part
// of the runtime): the kernel the runtime launches (attention_prefill_bf16_d64
// / _d128 and the f16 ones: tensor cores) against a variant of it, DB (K and V
// tiles double-buffered: the next tile pair is issued at the top of each step
// and awaited at the next, one barrier a tile instead of two), and against
// the SIMT body up to 2048 tokens. From the repository root
// (kernels/prefill.cu pre-included: the kernels themselves, and the SIMT
// body as a template):
//   nvcc -O3 -arch=sm_90 -I. -include kernels/prefill.cu -o attention_lab
//   experiments/attention_lab.cu && ./attention_lab [N...]
// Causal prompts of n tokens at pos0 0, no window; ms per launch (CUDA
// events, mean of kReps after a warm-up) and TFLOPS counting 4 * n^2 / 2 *
// head_dim * heads. Outputs are checked first (max |a - b| / max |b|;
// rounding Q and P to 16 bits costs about 2^-8): DB against the runtime's
// kernel, and that against the SIMT body up to 2048 tokens; a kernel that
// computes garbage is reported BROKEN, not timed, and the exit status is 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <random>
#include <type_traits>
#include <vector>

#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

// The SIMT body as it ran before the tensor-core path (grid (ceil(pairs /
// 16), n_kv), block 128).
template <typename C>
__global__ void __launch_bounds__(128)
    simt(float *out, const float *q, const C *kc, const C *vc, uint32_t n_heads,
         uint32_t n_kv, uint32_t head_dim, uint32_t pos0, uint32_t n,
         uint32_t window) {
  __shared__ PrefillSimtShared sh;
  attention_prefill(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos0, n,
                    window);
}

template <typename C, int HD>
__global__ void __launch_bounds__(128, HD == 64 ? 4 : 3)
    flash_db(float *out, const float *q, const C *kc, const C *vc,
             uint32_t n_heads, uint32_t n_kv, uint32_t pos0, uint32_t n,
             uint32_t window) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  C *sm = reinterpret_cast<C *>(smem_raw);
  constexpr uint32_t hd = HD;
  constexpr int LD = HD + 8, KT = HD / 16, NT = HD / 8, KS = kFlashKeys / 16;
  constexpr int TILE = kFlashKeys * LD;
  C *ks = sm, *vs = sm + 2 * TILE;
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
  };
  load_tile(ks, kbase, t_begin);
  load_tile(vs, vbase, t_begin);
  cp_async_commit();
  C *qstage = sm + 3 * TILE;  // V's second buffer, free until the first step

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
    *reinterpret_cast<uint2 *>(qstage + r * LD + d) = h;
  }
  __syncthreads();
  uint32_t qf[KT][4];
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) {
    if (kk * 16 < (int)hd) {
      ldmatrix_x4(qf[kk], qstage + (warp * 16 + lane % 16) * LD + kk * 16 +
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

  uint32_t cur = 0;
  for (uint32_t t0 = t_begin; t0 <= hi; t0 += kFlashKeys, cur ^= 1) {
    cp_async_wait_all();
    __syncthreads();  // K(t0), V(t0) are in; every warp is done with the other
                      // buffers
    ks = sm + cur * TILE;
    vs = sm + (2 + cur) * TILE;
    if (t0 + kFlashKeys <= hi) {
      load_tile(sm + (cur ^ 1) * TILE, kbase, t0 + kFlashKeys);
      load_tile(sm + (2 + (cur ^ 1)) * TILE, vbase, t0 + kFlashKeys);
      cp_async_commit();
    }
    // Warp-uniform: does any row see a key of the tile; do all see all?
    // (Pairs past the end may count as seeing all: they are never written.)
    const bool act =
        warp_live && t0 <= w_pos_last && t0 + (kFlashKeys - 1) >= w_lo_first;
    const bool full = t0 + (kFlashKeys - 1) <= w_pos_first && t0 >= w_lo_last;
    uint32_t pf[KS][4];  // P as A fragments, keys 16 * k .. + 15
    if (act) {
      float s[2 * KS][4];
#pragma unroll
      for (int i = 0; i < 2 * KS; ++i)
        s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
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
            e[h][c] =
                exp2_ftz(fmaf(s[2 * k + h][c], scale_log2, -m_use[c / 2]));
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

namespace {

constexpr int kReps = 20;

struct Shape {
  const char *name;
  uint32_t heads, kv, dim;
};

using Flash = void (*)(float *, const float *, const __nv_bfloat16 *,
                       const __nv_bfloat16 *, uint32_t, uint32_t, uint32_t,
                       uint32_t, uint32_t, uint32_t);
using FlashH = void (*)(float *, const float *, const __half *, const __half *,
                        uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                        uint32_t);
template <typename C>
auto flash_kernel(uint32_t dim) {
  if constexpr (sizeof(C) == 2 && std::is_same<C, __nv_bfloat16>::value) {
    return dim == 64 ? (Flash)attention_prefill_bf16_d64
                     : (Flash)attention_prefill_bf16_d128;
  } else {
    return dim == 64 ? (FlashH)attention_prefill_f16_d64
                     : (FlashH)attention_prefill_f16_d128;
  }
}

double max_rel(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= diff)) diff = e;  // NaN too
    ref = fmax(ref, fabs((double)b[i]));
  }
  return diff / ref;
}

// Returns 0, 1 (an error) or 2 (a kernel disagrees).
template <typename C>
int run(const char *type, const Shape &sh, uint32_t n, std::mt19937 &rng) {
  const uint32_t q_dim = sh.heads * sh.dim, kv_dim = sh.kv * sh.dim;
  const uint32_t pairs = n * (sh.heads / sh.kv);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> hq((size_t)n * q_dim);
  std::vector<C> hk((size_t)n * kv_dim), hv((size_t)n * kv_dim);
  for (float &x : hq) x = d(rng);
  for (C &x : hk) x = C(2.0f * d(rng));
  for (C &x : hv) x = C(d(rng));
  float *q, *o[3];
  C *k, *v;
  CK(cudaMalloc(&q, hq.size() * 4));
  for (float *&p : o) CK(cudaMalloc(&p, hq.size() * 4));
  CK(cudaMalloc(&k, hk.size() * sizeof(C)));
  CK(cudaMalloc(&v, hv.size() * sizeof(C)));
  CK(cudaMemcpy(q, hq.data(), hq.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, hk.data(), hk.size() * sizeof(C), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, hv.data(), hv.size() * sizeof(C), cudaMemcpyHostToDevice));
  for (float *p : o)
    CK(cudaMemset(p, 0xFF, hq.size() * 4));  // NaN: unwritten shows
  dim3 g_flash((pairs + 63) / 64 * sh.kv), g_simt((pairs + 15) / 16 * sh.kv);
  auto flash = flash_kernel<C>(sh.dim);
  auto db = sh.dim == 64 ? flash_db<C, 64> : flash_db<C, 128>;
  const int db_smem = 4 * kFlashKeys * (sh.dim + 8) * (int)sizeof(C);
  CK(cudaFuncSetAttribute(db, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          db_smem));
  const bool with_simt = n <= 2048;
  auto launch = [&](int which) {
    if (which == 0)
      flash<<<g_flash, 128>>>(o[0], q, k, v, sh.heads, sh.kv, sh.dim, 0, n, 0);
    if (which == 1)
      db<<<g_flash, 128, db_smem>>>(o[1], q, k, v, sh.heads, sh.kv, 0, n, 0);
    if (which == 2)
      simt<C><<<g_simt, 128>>>(o[2], q, k, v, sh.heads, sh.kv, sh.dim, 0, n, 0);
  };
  for (int w = 0; w < (with_simt ? 3 : 2); ++w) launch(w);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> out[3];
  for (int w = 0; w < (with_simt ? 3 : 2); ++w) {
    out[w].resize(hq.size());
    CK(cudaMemcpy(out[w].data(), o[w], hq.size() * 4, cudaMemcpyDeviceToHost));
  }
  const double err_db = max_rel(out[1], out[0]);
  const double err_simt = with_simt ? max_rel(out[0], out[2]) : 0.0;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float ms[2] = {0, 0};
  const int reps = n >= 8192 ? 5 : kReps;
  for (int round = 0; round < 2; ++round) {
    for (int which = 0; which < 2; ++which) {
      CK(cudaEventRecord(e0));
      for (int r = 0; r < reps; ++r) launch(which);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t = 0;
      CK(cudaEventElapsedTime(&t, e0, e1));
      ms[which] = round == 0 ? t / reps : fminf(ms[which], t / reps);
    }
  }
  const double flops = 4.0 * n * n / 2.0 * sh.dim * sh.heads;
  const bool broken = !(err_db < 0.05) || !(err_simt < 0.05);
  if (broken) {
    printf(
        "%-4s %-8s n %5u  BROKEN: DB vs runtime %.3g, runtime vs SIMT %.3g\n",
        type, sh.name, n, err_db, err_simt);
  } else {
    printf(
        "%-4s %-8s n %5u  runtime %8.3f ms %6.1f TFLOPS   DB %8.3f ms %6.1f "
        "TFLOPS   DB/runtime %.3f"
        "   err DB %.2g, SIMT %.2g\n",
        type, sh.name, n, ms[0], flops / ms[0] / 1e9, ms[1],
        flops / ms[1] / 1e9, ms[1] / ms[0], err_db, err_simt);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(q));
  for (float *p : o) CK(cudaFree(p));
  CK(cudaFree(k));
  CK(cudaFree(v));
  return broken ? 2 : 0;
}

}  // namespace

int main(int argc, char **argv) {
  const Shape shapes[] = {{"1B d64", 32, 8, 64}, {"8B d128", 32, 8, 128}};
  std::vector<uint32_t> ns;
  for (int i = 1; i < argc; ++i) ns.push_back((uint32_t)atoi(argv[i]));
  if (ns.empty()) ns = {512, 2048};
  std::mt19937 rng(13);
  int status = 0;
  for (const Shape &sh : shapes) {
    for (uint32_t n : ns) {
      int r = run<__nv_bfloat16>("bf16", sh, n, rng);
      if (r == 1) return 1;
      if (r == 2) status = 1;
      r = run<__half>("f16", sh, n, rng);
      if (r == 1) return 1;
      if (r == 2) status = 1;
    }
  }
  return status;
}
