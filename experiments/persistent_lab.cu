// Is a persistent decode kernel worth building? (a lab for issue 13, not
// part of the runtime):
//   nvcc -O3 -arch=sm_90 -o persistent_lab experiments/persistent_lab.cu
//   ./persistent_lab [1b|8b] [STUBS] [VARIANTS]
// The decode step's weight streaming on random BF16 weights of the Llama
// 1B / 8B shapes: per layer q/k/v (one matrix), a stand-in for attention
// (a tiny elementwise step), the output projection + residual, gate/up +
// SiLU, the down projection + residual; then the LM head. Norms, RoPE and
// real attention are left out: every variant does the same small work, so
// the difference is how the steps are joined. STUBS (default 1) is the number
// of tiny steps a layer: 0 (the output projection reads q directly), 1 (the
// attention's place), 2 (also one after the output projection, the FFN
// norm's place): what one more dependent launch costs. VARIANTS (default
// A2BC) names those run beside A (C runs D too).
//   A: one kernel a step, a CUDA graph with programmatic dependent launch,
//      each warp's first weight loads issued before griddepcontrol.wait
//      (Atlas's decode step, in miniature).
//   B: one persistent kernel, the steps separated by a grid-wide barrier
//      (an atomic counter); each warp issues its first loads of the next
//      step before it waits at the barrier.
//   C: one persistent dataflow kernel: a producer warp an SM streams the
//      block's weight tiles through a ring of shared memory by TMA, ahead
//      of every dependency; consumer warps wait per step on a counter and
//      dot the tiles against x (in registers, or in shared memory: "xs"),
//      a row or two rows a warp ("2 rows").
//      1B shape only (each warp's x slice must be 256 16-byte chunks).
//      Also run with no dependency waits (wrong logits: how fast the
//      consumers are) and with copies only (how fast the ring streams).
//      Prints the cycles a consumer warp spends in each part.
//      With "L2 N ahead" the producer also prefetches the tile N ahead of
//      its copies into L2.
//   L: C (x in shared memory, rows even, 2 rows a warp) with LL hand-offs:
//      every vector as 8-byte words of value and step tag, the input's loads
//      the wait (no counter); uncapped and 1-2 copies in flight.
//   Q: C with at most 1-3 copies in flight an SM, the rest of the ring a
//      buffer (handoff_lab: a hand-off queues behind the SM's copies);
//      LAB_Q_SHORT=1 stops after the 4-warp groups.
//   P: A, each layer's first tiny step (attention's place) also prefetching
//      the first 4-32 MiB of that layer's gate and up matrices into L2
//      (cp.async.bulk.prefetch.L2), after its wait or before it.
//   D: C (x in shared memory) with its tiles claimed at run time from a
//      counter a step, so a faster SM takes more of them.
//   F: A with each layer's FFN in one launch: a block's gate/up rows, then
//      its columns of the down product (down transposed) added into the
//      next residual by float4 atomics (8-64 rows a block); one dependent
//      launch fewer a layer.
//   T: A with each kernel's dependents triggered (launch_dependents) before
//      its wait, so the next launch may start before the one before ends.
//   H: A with a head start: a block an SM in half of it, dependents
//      triggered first, so the next product's blocks sit beside this one's
//      and bulk-copy their first rows into shared memory (0-96 KiB) while
//      this one streams; the rest streamed by 16 warps.
//   J (H2): H with each warp streaming through its own ring of 2-3 rounds
//      in shared memory (cp.async), the first rounds issued before the
//      wait (the head start), no bulk copy; also with no round before the
//      wait (LAB_H2_EARLY=1: the tiny steps trigger first too); and H2
//      for the big products only, A's kernel for the others.
//   Y: the timeline of one H2 token (each block's start, end of wait and
//      end; LAB_H2_LATE=1: no round before the wait).
//   W: A with every product's grid one wave (blocks an SM by occupancy),
//      each warp looping over tasks with the next task's first loads ahead.
// Prints ms a token for each, the floor (weight bytes / device copy rate),
// and the logits' relative L2 distance to A (atomics reorder the sums).
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lab_dot.cuh"
#include "lab_sync.cuh"
#include "lab_tma.cuh"

#define CK(x)                                          \
  do {                                                 \
    cudaError_t e_ = (x);                              \
    if (e_ != cudaSuccess) {                           \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
             cudaGetErrorString(e_));                  \
      exit(1);                                         \
    }                                                  \
  } while (0)

enum Kind { MATVEC, ADD, GATE_UP, STUB, FFN };

// One step of the chain. MATVEC: out = W in; ADD: out += W in, `splits`
// warps a row (atomics); GATE_UP: out = silu(W in) * (W2 in); STUB: out[i]
// = 0.5 * in[i], i < rows.
struct Step {
  int kind;
  const __nv_bfloat16 *w, *w2;
  const float *in;
  float *out;
  uint32_t rows, cols, splits;
  // P: a STUB step prefetches the first pf_bytes of pf0 and of pf1 into L2
  // (before its wait when pf_early), spread over its blocks.
  const void *pf0 = nullptr, *pf1 = nullptr;
  uint32_t pf_bytes = 0;
  int pf_early = 0;
  // F: FFN's down matrix transposed (intermediate x hidden); a step that
  // zeroes `zero_n` floats at `zero` after its wait (the next FFN's output).
  const __nv_bfloat16 *w3 = nullptr;
  float *zero = nullptr;
  uint32_t zero_n = 0;
  // H2 with a timeline: a block's start, end of wait and end (global ns).
  unsigned long long *ts = nullptr;
  // H2: its first rounds issued after the wait (no head start).
  int late = 0;
};

__host__ __device__ __forceinline__ uint32_t tasks_of(const Step &s) {
  return s.kind == ADD ? s.rows * s.splits : s.rows;
}

constexpr int kAhead = 4;  // 16-byte loads a lane issues before the wait

struct Pre {
  uint4 a[kAhead];
};

// The row segment a task reads: `n4` 16-byte words from `w4`, dotted with
// x from `x`.
struct Seg {
  const uint4 *w4;
  const float *x;
  uint32_t n4;
};

__device__ __forceinline__ void seg_pre(const Seg &g, Pre &p, uint32_t lane,
                                        int first, int count) {
#pragma unroll
  for (int j = 0; j < kAhead; ++j) {
    if (j < first || j >= first + count) continue;
    uint32_t i = lane + 32 * (j - first);
    p.a[j] = i < g.n4 ? __ldg(g.w4 + i) : make_uint4(0, 0, 0, 0);
  }
}

__device__ __forceinline__ float seg_dot(const Seg &g, const Pre &p,
                                         uint32_t lane, int first, int count) {
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kAhead; ++j) {
    if (j < first || j >= first + count) continue;
    uint32_t i = lane + 32 * (j - first);
    if (i < g.n4) acc += dot8(p.a[j], g.x + 8 * (size_t)i);
  }
#pragma unroll 4
  for (uint32_t i = lane + 32 * count; i < g.n4; i += 32) {
    acc += dot8(__ldg(g.w4 + i), g.x + 8 * (size_t)i);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  return acc;
}

// The task's segments: one (MATVEC, ADD) or two (GATE_UP); x read from
// `xin` (s.in itself, or the block's copy of it in shared memory).
__device__ __forceinline__ void task_segs(const Step &s, uint32_t t, Seg &a,
                                          Seg &b, const float *xin) {
  uint32_t row = s.kind == ADD ? t / s.splits : t;
  uint32_t part = s.kind == ADD ? t % s.splits : 0;
  uint32_t span = s.kind == ADD ? s.cols / s.splits : s.cols;
  a.w4 = reinterpret_cast<const uint4 *>(s.w + (size_t)row * s.cols +
                                         (size_t)part * span);
  a.x = xin + (size_t)part * span;
  a.n4 = span / 8;
  b = a;
  if (s.kind == GATE_UP) {
    b.w4 = reinterpret_cast<const uint4 *>(s.w2 + (size_t)row * s.cols);
  }
}

__device__ __forceinline__ void task_pre(const Step &s, uint32_t t, Pre &p,
                                         uint32_t lane) {
  if (s.kind == STUB || t >= tasks_of(s)) return;
  Seg a, b;
  task_segs(s, t, a, b, s.in);
  if (s.kind == GATE_UP) {
    seg_pre(a, p, lane, 0, kAhead / 2);
    seg_pre(b, p, lane, kAhead / 2, kAhead / 2);
  } else {
    seg_pre(a, p, lane, 0, kAhead);
  }
}

__device__ __forceinline__ void task_run(const Step &s, uint32_t t,
                                         const Pre &p, uint32_t lane,
                                         const float *xin) {
  Seg a, b;
  task_segs(s, t, a, b, xin);
  if (s.kind == GATE_UP) {
    float g = seg_dot(a, p, lane, 0, kAhead / 2);
    float u = seg_dot(b, p, lane, kAhead / 2, kAhead / 2);
    if (lane == 0) s.out[t] = g / (1.0f + expf(-g)) * u;
  } else {
    float acc = seg_dot(a, p, lane, 0, kAhead);
    if (lane != 0) return;
    if (s.kind == MATVEC) {
      s.out[t] = acc;
    } else if (s.splits == 1) {
      s.out[t] = __ldcg(s.out + t) + acc;
    } else {
      atomicAdd(s.out + t / s.splits, acc);
    }
  }
}

__device__ __forceinline__ void stub_run(const Step &s, uint32_t gthread,
                                         uint32_t nthreads) {
  for (uint32_t i = gthread; i < s.rows; i += nthreads)
    s.out[i] = 0.5f * __ldcg(s.in + i);
}

// This block's share of the step's L2 prefetch (P): 32 KiB pieces, a piece
// a thread of the first warp per round.
__device__ __forceinline__ void stub_prefetch(const Step &s) {
  if (s.pf_bytes == 0 || threadIdx.x >= 32) return;
  constexpr uint32_t kPiece = 32 * 1024;
  const uint32_t pieces = (s.pf_bytes + kPiece - 1) / kPiece;
  for (uint32_t i = blockIdx.x * 32 + threadIdx.x; i < 2 * pieces;
       i += gridDim.x * 32) {
    const char *base = (const char *)(i < pieces ? s.pf0 : s.pf1);
    const uint32_t k = i < pieces ? i : i - pieces;
    const uint32_t off = k * kPiece;
    const uint32_t n = min(kPiece, s.pf_bytes - off) & ~15u;
    if (n == 0) continue;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(base + off),
                 "r"(n)
                 : "memory");
  }
}

// ---- A: a kernel a step, programmatic dependent launch -------------------
// T (early_trigger): the dependents may launch once this grid's blocks have
// all started, before the grid it waits for has finished.
// W (loop): a grid of one wave; each warp takes tasks t, t + all warps, ...,
// the next task's first loads issued before the current one's dot.
template <bool early_trigger, bool loop = false>
__global__ void step_kernel_t(Step s) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (early_trigger)
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  Pre p;
  task_pre(s, t, p, lane);
  if (s.kind == STUB && s.pf_early) stub_prefetch(s);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if (!early_trigger)
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (s.kind == STUB && !s.pf_early) stub_prefetch(s);
  if (s.zero != nullptr) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < s.zero_n;
         i += gridDim.x * blockDim.x) {
      s.zero[i] = 0.0f;
    }
  }
  if (s.kind == STUB) {
    stub_run(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    return;
  }
  if (!loop) {
    if (t < tasks_of(s)) task_run(s, t, p, lane, s.in);
    return;
  }
  const uint32_t stride = gridDim.x * (blockDim.x / 32), n = tasks_of(s);
  for (uint32_t cur = t; cur < n; cur += stride) {
    Pre pn;
    if (cur + stride < n) task_pre(s, cur + stride, pn, lane);
    task_run(s, cur, p, lane, s.in);
    p = pn;
  }
}

// ---- F: A with the FFN in one launch (gate/up, SiLU and down) -------------
// A block takes C consecutive intermediate rows: each warp dots gate and up
// rows (a pair at a time, first loads before the wait, as A) and keeps h =
// silu(g) * u in shared memory; then the block adds its share of the down
// product, sum over its C columns of h[c] * down[:, c] (C rows of down's
// transpose, 16 bytes a thread a row), into the next residual `out` with
// float4 atomics; block 0 also adds x itself. No launch between gate/up and
// down; `out` was zeroed by an earlier step (ping-pong: `in` stays whole).
template <int HV, int C>
__global__ void __launch_bounds__(256) ffn_kernel(Step s) {
  __shared__ float hs[C];
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t c0 = blockIdx.x * C;
  Step g = s;
  g.kind = GATE_UP;
  Pre p;
  if (warp < (uint32_t)C) task_pre(g, c0 + warp, p, lane);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  for (uint32_t c = warp; c < (uint32_t)C; c += 8) {
    if (c != warp) task_pre(g, c0 + c, p, lane);
    Seg a, b;
    task_segs(g, c0 + c, a, b, s.in);
    float gv = seg_dot(a, p, lane, 0, kAhead / 2);
    float uv = seg_dot(b, p, lane, kAhead / 2, kAhead / 2);
    if (lane == 0) hs[c] = gv / (1.0f + expf(-gv)) * uv;
  }
  __syncthreads();
  float acc[HV][8];
#pragma unroll
  for (int v = 0; v < HV; ++v)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[v][e] = 0.0f;
  const uint32_t n4 = s.cols / 8;
  const uint4 *d4 = reinterpret_cast<const uint4 *>(s.w3 + (size_t)c0 * s.cols);
#pragma unroll 8
  for (int c = 0; c < C; ++c) {
    const float hc = hs[c];
#pragma unroll
    for (int v = 0; v < HV; ++v) {
      uint4 w = __ldg(d4 + (size_t)c * n4 + threadIdx.x + 256 * v);
      const __nv_bfloat16 *e = reinterpret_cast<const __nv_bfloat16 *>(&w);
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[v][k] += __bfloat162float(e[k]) * hc;
    }
  }
#pragma unroll
  for (int v = 0; v < HV; ++v) {
    const uint32_t col = 8 * (threadIdx.x + 256 * v);
    float4 lo = make_float4(acc[v][0], acc[v][1], acc[v][2], acc[v][3]);
    float4 hi = make_float4(acc[v][4], acc[v][5], acc[v][6], acc[v][7]);
    if (blockIdx.x == 0) {
      float4 a = *reinterpret_cast<const float4 *>(s.in + col);
      float4 b = *reinterpret_cast<const float4 *>(s.in + col + 4);
      lo.x += a.x, lo.y += a.y, lo.z += a.z, lo.w += a.w;
      hi.x += b.x, hi.y += b.y, hi.z += b.z, hi.w += b.w;
    }
    atomicAdd(reinterpret_cast<float4 *>(s.out + col), lo);
    atomicAdd(reinterpret_cast<float4 *>(s.out + col + 4), hi);
  }
}

template <int HV>
const void *ffn_kernel_for(uint32_t c) {
  switch (c) {
    case 8:
      return (const void *)ffn_kernel<HV, 8>;
    case 16:
      return (const void *)ffn_kernel<HV, 16>;
    case 32:
      return (const void *)ffn_kernel<HV, 32>;
    default:
      return (const void *)ffn_kernel<HV, 64>;
  }
}

__global__ void transpose_bf16(__nv_bfloat16 *out, const __nv_bfloat16 *in,
                               uint32_t rows, uint32_t cols) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
       i < (size_t)rows * cols; i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / cols, c = i % cols;
    out[c * rows + r] = in[i];
  }
}

// ---- A2: as A, each block's rows bulk-copied into shared memory (TMA,
// cp.async.bulk) before the wait: the whole row travels while the launch
// before finishes, with no registers held for it --------------------------
// Bytes of the task's weights: one segment, or gate's and up's rows.
__device__ __forceinline__ uint32_t task_bytes(const Step &s) {
  uint32_t span = s.kind == ADD ? s.cols / s.splits : s.cols;
  return (s.kind == GATE_UP ? 2u : 1u) * span * 2u;
}

__global__ void step_kernel_bulk(Step s) {
  extern __shared__ __align__(128) unsigned char wbuf[];
  __shared__ __align__(8) uint64_t mbar;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32,
                 wpb = blockDim.x / 32;
  const uint32_t t0 = blockIdx.x * wpb, t = t0 + warp;
  const bool stub = s.kind == STUB;
  const uint32_t n = stub ? 0 : tasks_of(s);
  const uint32_t tb = stub ? 0 : task_bytes(s);
  if (!stub && threadIdx.x == 0) {
    asm volatile(
        "mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&mbar)));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    uint32_t valid = n > t0 ? min(wpb, n - t0) : 0;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     smem_addr(&mbar)),
                 "r"(valid * tb)
                 : "memory");
    for (uint32_t i = 0; i < valid; ++i) {
      Seg a, b;
      task_segs(s, t0 + i, a, b, s.in);
      uint32_t seg = a.n4 * 16;
      unsigned char *dst = wbuf + (size_t)i * tb;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
          "[%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
          "l"(a.w4), "r"(seg), "r"(smem_addr(&mbar))
          : "memory");
      if (s.kind == GATE_UP) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
            "[%0], [%1], %2, [%3];" ::"r"(smem_addr(dst + seg)),
            "l"(b.w4), "r"(seg), "r"(smem_addr(&mbar))
            : "memory");
      }
    }
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (stub) {
    stub_run(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    return;
  }
  __syncthreads();  // the barrier's init is visible to every thread
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(&mbar))
        : "memory");
  }
  if (t >= n) return;
  Seg a, b;
  task_segs(s, t, a, b, s.in);
  const uint4 *w = reinterpret_cast<const uint4 *>(wbuf + (size_t)warp * tb);
  float acc = 0.0f, acc2 = 0.0f;
  for (uint32_t i = lane; i < a.n4; i += 32)
    acc += dot8(w[i], a.x + 8 * (size_t)i);
  if (s.kind == GATE_UP) {
    for (uint32_t i = lane; i < a.n4; i += 32)
      acc2 += dot8(w[a.n4 + i], a.x + 8 * (size_t)i);
  }
  for (int o = 16; o > 0; o >>= 1) {
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
    acc2 += __shfl_xor_sync(0xffffffffu, acc2, o);
  }
  if (lane != 0) return;
  if (s.kind == GATE_UP) {
    s.out[t] = acc / (1.0f + expf(-acc)) * acc2;
  } else if (s.kind == MATVEC) {
    s.out[t] = acc;
  } else if (s.splits == 1) {
    s.out[t] = __ldcg(s.out + t) + acc;
  } else {
    atomicAdd(s.out + t / s.splits, acc);
  }
}

// ---- H: A with a head start ------------------------------------------------
// A block an SM holding at most half of it (512 threads, 64 registers, and
// shared memory for `hs` bytes of weights and x), its dependents triggered
// first: the next product's blocks sit beside this one's and bulk-copy
// their first rows into shared memory (TMA) while this one streams, so the
// wait at each step finds bytes already on the SM. A block takes an even,
// contiguous share of the step's tasks (rows; gate and up row pairs; ADD a
// warp a row): the first `hs` bytes of them from the head start, the rest
// streamed by its warps (kHU 16-byte loads a lane a round, the next round
// in flight during this one's sums; the first round issued before the
// wait). A row is whole rounds: cols a multiple of 32 * kHU * 8 (1024),
// as every matrix of the two shapes is.
constexpr int kHWarps = 16, kHU = 4;

__device__ __forceinline__ void h_write(const Step &s, uint32_t t, float g,
                                        float u) {
  if (s.kind == GATE_UP) {
    s.out[t] = g / (1.0f + expf(-g)) * u;
  } else if (s.kind == MATVEC) {
    s.out[t] = g;
  } else {
    s.out[t] = __ldcg(s.out + t) + g;
  }
}

// This block's even, contiguous share [t0, t1) of the step's tasks.
__device__ __forceinline__ void h_share(const Step &s, uint32_t &t0,
                                        uint32_t &t1) {
  t0 = (uint32_t)((uint64_t)s.rows * blockIdx.x / gridDim.x);
  t1 = (uint32_t)((uint64_t)s.rows * (blockIdx.x + 1) / gridDim.x);
}

// x into shared memory through L2 (every thread; the caller syncs).
__device__ __forceinline__ void h_stage_x(const Step &s, float *xs) {
  const float4 *in4 = reinterpret_cast<const float4 *>(s.in);
  float4 *xs4 = reinterpret_cast<float4 *>(xs);
  for (uint32_t i = threadIdx.x; i < s.cols / 4; i += blockDim.x)
    xs4[i] = __ldcg(in4 + i);
}

__global__ void __launch_bounds__(kHWarps * 32, 2)
    step_kernel_h(Step s, uint32_t hs) {
  extern __shared__ __align__(128) unsigned char hbuf[];
  __shared__ __align__(8) uint64_t mbar;
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint32_t t0, t1;
  h_share(s, t0, t1);
  const uint32_t nseg = s.kind == GATE_UP ? 2 : 1;
  const uint32_t row_bytes = s.cols * 2, task_bytes = nseg * row_bytes;
  const uint32_t k = min(t1 - t0, hs / task_bytes);  // head-start tasks
  float *xs = reinterpret_cast<float *>(hbuf + hs);
  if (threadIdx.x == 0) {
    mbar_init(&mbar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (k > 0) {
      mbar_expect(&mbar, k * task_bytes);
      bulk_copy(hbuf, s.w + (size_t)t0 * s.cols, k * row_bytes, &mbar);
      if (nseg == 2)
        bulk_copy(hbuf + k * row_bytes, s.w2 + (size_t)t0 * s.cols,
                  k * row_bytes, &mbar);
    }
  }
  // This warp's streamed tasks: t0 + k + warp, + kHWarps, ... < t1, each
  // nseg rows of cpr rounds.
  const uint32_t n4 = s.cols / 8, cpr = n4 / (32 * kHU), per_task = nseg * cpr;
  const uint32_t first = t0 + k + warp;
  const uint32_t count = first < t1 ? (t1 - first + kHWarps - 1) / kHWarps : 0;
  const uint32_t total = count * per_task;
  auto round_ptr = [&](uint32_t idx) {
    const uint32_t ti = idx / per_task, r = idx % per_task, seg = r / cpr,
                   c = r % cpr;
    const __nv_bfloat16 *w = seg ? s.w2 : s.w;
    return reinterpret_cast<const uint4 *>(w + (size_t)(first + ti * kHWarps) *
                                                   s.cols) +
           c * 32 * kHU + lane;
  };
  uint4 cur[kHU];
  if (total > 0) {
    const uint4 *p = round_ptr(0);
#pragma unroll
    for (int u = 0; u < kHU; ++u) cur[u] = __ldg(p + 32 * u);
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  h_stage_x(s, xs);
  __syncthreads();
  if (k > 0) {
    mbar_wait(&mbar, 0);
    for (uint32_t i = warp; i < k; i += kHWarps) {
      float a[2] = {0.0f, 0.0f};
      for (uint32_t seg = 0; seg < nseg; ++seg) {
        const uint4 *w = reinterpret_cast<const uint4 *>(
            hbuf + (size_t)seg * k * row_bytes + (size_t)i * row_bytes);
        float acc = 0.0f;
#pragma unroll 4
        for (uint32_t j = lane; j < n4; j += 32) acc += dot8(w[j], xs + 8 * j);
        for (int o = 16; o > 0; o >>= 1)
          acc += __shfl_xor_sync(0xffffffffu, acc, o);
        a[seg] = acc;
      }
      if (lane == 0) h_write(s, t0 + i, a[0], a[1]);
    }
  }
  float acc = 0.0f, g = 0.0f;
  for (uint32_t idx = 0; idx < total; ++idx) {
    uint4 nxt[kHU];
    if (idx + 1 < total) {
      const uint4 *p = round_ptr(idx + 1);
#pragma unroll
      for (int u = 0; u < kHU; ++u) nxt[u] = __ldg(p + 32 * u);
    }
    const uint32_t r = idx % per_task, seg = r / cpr, c = r % cpr;
    const uint32_t base = c * 32 * kHU + lane;
#pragma unroll
    for (int u = 0; u < kHU; ++u) acc += dot8(cur[u], xs + 8 * (base + 32 * u));
    if (c == cpr - 1) {
      for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (seg + 1 < nseg) {
        g = acc;
      } else if (lane == 0) {
        const uint32_t t = first + (idx / per_task) * kHWarps;
        if (nseg == 2) {
          h_write(s, t, g, acc);
        } else {
          h_write(s, t, acc, 0.0f);
        }
      }
      acc = 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kHU; ++u) cur[u] = nxt[u];
  }
}

// H2: H with each warp streaming through a ring of S rounds in shared
// memory (cp.async, 16 bytes a lane a copy: a lane reads back only what it
// copied, so a thread's own wait_group is the only sync), the first S rounds
// issued before the wait: the bytes in flight cost no registers, and the
// ring filled while the product before streams is the head start.
__device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)),
      "l"(src)
      : "memory");
}
__device__ __forceinline__ void cp_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

template <int S>
__global__ void __launch_bounds__(kHWarps * 32, 2) step_kernel_h2(Step s) {
  extern __shared__ __align__(128) unsigned char hbuf[];
  if (s.ts != nullptr && threadIdx.x == 0) s.ts[3 * blockIdx.x] = global_ns();
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint32_t t0, t1;
  h_share(s, t0, t1);
  const uint32_t nseg = s.kind == GATE_UP ? 2 : 1;
  const uint32_t n4 = s.cols / 8, cpr = n4 / (32 * kHU), per_task = nseg * cpr;
  const uint32_t first = t0 + warp;
  const uint32_t count = first < t1 ? (t1 - first + kHWarps - 1) / kHWarps : 0;
  const uint32_t total = count * per_task;
  uint4 *ring = reinterpret_cast<uint4 *>(hbuf) + (size_t)warp * S * 32 * kHU;
  float *xs =
      reinterpret_cast<float *>(hbuf + (size_t)kHWarps * S * 32 * kHU * 16);
  // The copies' place in the warp's rounds, kept incrementally (no
  // divisions a round): task, row (seg) and round in the row (c).
  struct It {
    uint32_t t, seg, c;
  };
  auto advance = [&](It &i) {
    if (++i.c == cpr) {
      i.c = 0;
      if (++i.seg == nseg) i.seg = 0, i.t += kHWarps;
    }
  };
  It in_it{first, 0, 0}, out_it{first, 0, 0};
  uint32_t issued = 0;
  auto issue = [&]() {
    if (issued < total) {
      const __nv_bfloat16 *w = in_it.seg ? s.w2 : s.w;
      const uint4 *src =
          reinterpret_cast<const uint4 *>(w + (size_t)in_it.t * s.cols) +
          in_it.c * 32 * kHU + lane;
      uint4 *dst = ring + (size_t)(issued % S) * 32 * kHU + lane;
#pragma unroll
      for (int u = 0; u < kHU; ++u) cp_async16(dst + 32 * u, src + 32 * u);
      advance(in_it);
    }
    ++issued;
    cp_commit();
  };
  if (!s.late) {
#pragma unroll
    for (int i = 0; i < S; ++i) issue();
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if (s.late) {
#pragma unroll
    for (int i = 0; i < S; ++i) issue();
  }
  // ADD: the first task's old value, read beside x (not after the sums).
  float old = 0.0f;
  if (s.kind == ADD && lane == 0 && total > 0) old = __ldcg(s.out + first);
  h_stage_x(s, xs);
  if (s.ts != nullptr && threadIdx.x == 0)
    s.ts[3 * blockIdx.x + 1] = global_ns();
  __syncthreads();
  float acc[kHU], g = 0.0f;
#pragma unroll
  for (int u = 0; u < kHU; ++u) acc[u] = 0.0f;
  for (uint32_t idx = 0; idx < total; ++idx) {
    cp_wait<S - 1>();
    const uint4 *src = ring + (size_t)(idx % S) * 32 * kHU + lane;
    uint4 cur[kHU];
#pragma unroll
    for (int u = 0; u < kHU; ++u) cur[u] = src[32 * u];
    issue();
    const uint32_t base = out_it.c * 32 * kHU + lane;
#pragma unroll
    for (int u = 0; u < kHU; ++u)
      acc[u] += dot8(cur[u], xs + 8 * (base + 32 * u));
    if (out_it.c == cpr - 1) {
      float a = 0.0f;
#pragma unroll
      for (int u = 0; u < kHU; ++u) a += acc[u], acc[u] = 0.0f;
      for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
      if (out_it.seg + 1 < nseg) {
        g = a;
      } else if (lane == 0) {
        const uint32_t t = out_it.t;
        if (nseg == 2) {
          h_write(s, t, g, a);
        } else if (s.kind == ADD) {
          s.out[t] = (t == first ? old : __ldcg(s.out + t)) + a;
        } else {
          s.out[t] = a;
        }
      }
    }
    advance(out_it);
  }
  cp_wait<0>();
  if (s.ts != nullptr) {
    __syncthreads();
    if (threadIdx.x == 0) s.ts[3 * blockIdx.x + 2] = global_ns();
  }
}

// ---- B: one persistent kernel, a grid barrier between steps ---------------
__device__ __forceinline__ void grid_barrier(uint32_t *count, uint32_t target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(count, 1u);
    while (ld_acquire(count) < target) {
    }
  }
  __syncthreads();
}

__global__ void persistent_kernel(const Step *steps, uint32_t n_steps,
                                  uint32_t *count) {
  const uint32_t lane = threadIdx.x % 32, wpb = blockDim.x / 32;
  const uint32_t gwarp = blockIdx.x * wpb + threadIdx.x / 32;
  const uint32_t nwarps = gridDim.x * wpb;
  extern __shared__ __align__(16) float xs[];  // the step's input vector
  Pre p;
  task_pre(steps[0], gwarp, p, lane);
  for (uint32_t k = 0; k < n_steps; ++k) {
    const Step s = steps[k];
    if (s.kind == STUB) {
      stub_run(s, blockIdx.x * blockDim.x + threadIdx.x,
               gridDim.x * blockDim.x);
    } else {
      // L1 is not coherent within a kernel: x comes from L2 (cg) into the
      // block's shared copy, which every warp then reads.
      const float4 *in4 = reinterpret_cast<const float4 *>(s.in);
      float4 *xs4 = reinterpret_cast<float4 *>(xs);
      for (uint32_t i = threadIdx.x; i < s.cols / 4; i += blockDim.x)
        xs4[i] = __ldcg(in4 + i);
      __syncthreads();
      const uint32_t n = tasks_of(s);
      for (uint32_t t = gwarp; t < n; t += nwarps) {
        if (t != gwarp) task_pre(s, t, p, lane);
        task_run(s, t, p, lane, xs);
      }
    }
    if (k + 1 < n_steps) {
      task_pre(steps[k + 1], gwarp, p, lane);  // weights: nothing writes them
      grid_barrier(count, (k + 1) * gridDim.x);
    }
  }
}

// ---- C: one persistent dataflow kernel ------------------------------------
// A block an SM: a producer warp streams the block's weight tiles, in the
// order the block uses them, through a ring of shared-memory slots (TMA
// bulk copies completing on an mbarrier); the weights depend on nothing, so
// the ring refills across every step boundary. The consumer warps wait only
// for their step's input: a counter a step that each block bumps once it
// has done its tiles of that step. A step's rows go to the blocks either
// as tiles round-robin through all steps (split 0: even over the token,
// uneven by up to a tile within a step) or as an even share of every step
// (split 1: a block's contiguous rows, cut in tiles).
struct CStep {
  int kind;
  const __nv_bfloat16 *w, *w2;
  const float *in;
  float *out;
  uint32_t rows, cols;
  uint32_t rt;     // rows a tile (STUB: elements a tile)
  uint32_t wr;     // warps a row
  uint32_t rw;     // rows a warp (GATE_UP: 1, its gate and up rows)
  uint32_t tiles;  // tiles of the step
  uint32_t gbase;  // the first tile's place in the round-robin
  uint32_t split;  // 0: tiles round-robin; 1: an even share of rows a block
  // L: the input and output as LL words (null: the LM head's plain logits),
  // the tags expected on the input and on the output's old values (ADD),
  // and the tag this step writes.
  const uint64_t *lin = nullptr;
  uint64_t *lout = nullptr;
  uint32_t tin = 0, told = 0, tout = 0;
};

constexpr int kCMaxSlots = 16, kCMaxChunks = 8;  // chunks: exactly, a lane
constexpr uint32_t kStubTile = 256;

__device__ __forceinline__ void consumers_sync(uint32_t nthreads) {
  asm volatile("bar.sync 1, %0;" ::"r"(nthreads) : "memory");
}

// The block's first tile of step s (tiles j, j + gridDim.x, ...).
// This block's tiles of step s: how many, and tile i's first row and rows.
struct BlockTiles {
  uint32_t count, first, lo, hi;
};
__device__ __forceinline__ BlockTiles block_tiles(const CStep &s) {
  BlockTiles t{};
  if (s.split) {
    t.lo = (uint32_t)((uint64_t)s.rows * blockIdx.x / gridDim.x);
    t.hi = (uint32_t)((uint64_t)s.rows * (blockIdx.x + 1) / gridDim.x);
    t.count = (t.hi - t.lo + s.rt - 1) / s.rt;
  } else {
    t.first = (blockIdx.x + gridDim.x - s.gbase % gridDim.x) % gridDim.x;
    t.count = t.first < s.tiles ? (s.tiles - 1 - t.first) / gridDim.x + 1 : 0;
  }
  return t;
}
__device__ __forceinline__ void tile_at(const CStep &s, const BlockTiles &t,
                                        uint32_t i, uint32_t &row0,
                                        uint32_t &r) {
  if (s.split) {
    row0 = t.lo + i * s.rt;
    r = min(s.rt, t.hi - row0);
  } else {
    row0 = (t.first + i * gridDim.x) * s.rt;
    r = min(s.rt, s.rows - row0);
  }
}

// The cycles a consumer warp spends in each part of its loop: waiting for a
// step's input, for a tile's bytes, computing, and at a step's end. Summed
// over the warps into stats[0..3] (null: not kept).
enum Part { kDep, kFull, kComp, kStepEnd };
struct PartClock {
  unsigned long long sum[4] = {0, 0, 0, 0};
  unsigned long long t0 = 0;
  __device__ void start() { t0 = clock64(); }
  __device__ __forceinline__ void lap(Part p) {
    const unsigned long long t = clock64();
    sum[p] += t - t0;
    t0 = t;
  }
  __device__ __forceinline__ void flush(unsigned long long *stats,
                                        uint32_t lane) const {
    if (stats == nullptr || lane != 0) return;
    for (int i = 0; i < 4; ++i) atomicAdd(stats + i, sum[i]);
  }
};

// A consumer warp's rows of a tile `w` (q0, and q1 when `second`), dotted
// with x's slice from base8 (in shared memory or in xa / xb): a and b, the
// same in every lane.
template <bool XS>
__device__ __forceinline__ void rows_dot(
    const uint4 *w, uint32_t q0, uint32_t q1, bool second, uint32_t base8,
    uint32_t c8, uint32_t lane, const float4 *xs_lo, const float4 *xs_hi,
    const float4 (&xa)[kCMaxChunks], const float4 (&xb)[kCMaxChunks], float &a,
    float &b) {
  const uint4 *row = w + (size_t)q0 * c8 + base8;
  const uint4 *row2 = w + (size_t)q1 * c8 + base8;
  // Every load first (they overlap), then the sums.
  uint4 wv[kCMaxChunks], uv[kCMaxChunks];
#pragma unroll
  for (int c = 0; c < kCMaxChunks; ++c) {
    wv[c] = row[lane + 32 * c];
    if (second) uv[c] = row2[lane + 32 * c];
  }
  float a0 = 0.0f, a1 = 0.0f, b0 = 0.0f, b1 = 0.0f;
#pragma unroll
  for (int c = 0; c < kCMaxChunks; ++c) {
    const uint32_t xi = base8 + lane + 32 * c;
    const float4 pa = XS ? xs_lo[xi] : xa[c], pb = XS ? xs_hi[xi] : xb[c];
    const float v = dot8x(wv[c], pa, pb);
    if (c % 2 == 0)
      a0 += v;
    else
      a1 += v;
    if (second) {
      const float u = dot8x(uv[c], pa, pb);
      if (c % 2 == 0)
        b0 += u;
      else
        b1 += u;
    }
  }
  a = a0 + a1;
  b = b0 + b1;
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    if (second) b += __shfl_xor_sync(0xffffffffu, b, o);
  }
}

// A consumer warp's share of a tile `w` (rows row0 .. row0 + r of step s):
// its rows' dot products with x, written as the step's kind says.
template <bool XS>
__device__ __forceinline__ void tile_dot(const CStep &s, const uint4 *w,
                                         uint32_t row0, uint32_t r, uint32_t q,
                                         uint32_t base8, uint32_t c8,
                                         uint32_t lane, const float4 *xs_lo,
                                         const float4 *xs_hi,
                                         const float4 (&xa)[kCMaxChunks],
                                         const float4 (&xb)[kCMaxChunks]) {
  // The warp's rows: one, and its up row (GATE_UP), or s.rw = 2
  // rows side by side (their loads overlap, x read once for both).
  const bool gu = s.kind == GATE_UP;
  const uint32_t q0 = gu ? q : q * s.rw, q1 = gu ? r + q : q0 + 1;
  const bool second = gu || (s.rw == 2 && q1 < r);
  if (q0 < r) {
    float a, b;
    rows_dot<XS>(w, q0, q1, second, base8, c8, lane, xs_lo, xs_hi, xa, xb, a,
                 b);
    const uint32_t out_row = row0 + q0;
    if (lane == 0) {
      if (gu) {
        s.out[out_row] = a / (1.0f + expf(-a)) * b;
      } else if (s.kind == MATVEC) {
        s.out[out_row] = a;
        if (second) s.out[out_row + 1] = b;
      } else if (s.wr == 1) {
        s.out[out_row] = __ldcg(s.out + out_row) + a;
        if (second) s.out[out_row + 1] = __ldcg(s.out + out_row + 1) + b;
      } else {
        atomicAdd(s.out + out_row, a);
        if (second) atomicAdd(s.out + out_row + 1, b);
      }
    }
  }
}

// As tile_dot with x in shared memory, for RWN output rows a warp (RW 4:
// 4, and GATE_UP's 2 each with its up row): each 16-byte piece of x
// read from shared memory serves all of them, so the consumers' shared
// traffic is the tile plus a quarter of it or less, not twice the tile.
template <int RWN>
__device__ __forceinline__ void tile_dot_n(const CStep &s, const uint4 *w,
                                           uint32_t row0, uint32_t r,
                                           uint32_t q, uint32_t base8,
                                           uint32_t c8, uint32_t lane,
                                           const float4 *xs_lo,
                                           const float4 *xs_hi) {
  const bool gu = s.kind == GATE_UP;
  const uint32_t q0 = q * RWN;
  if (q0 >= r) return;
  float a[RWN], b[RWN];
#pragma unroll
  for (int j = 0; j < RWN; ++j) a[j] = b[j] = 0.0f;
#pragma unroll
  for (int c = 0; c < kCMaxChunks; ++c) {
    const uint32_t xi = base8 + lane + 32 * c;
    const float4 pa = xs_lo[xi], pb = xs_hi[xi];
#pragma unroll
    for (int j = 0; j < RWN; ++j) {
      if (q0 + j < r) {
        a[j] += dot8x(w[(size_t)(q0 + j) * c8 + base8 + lane + 32 * c], pa, pb);
        if (gu)
          b[j] += dot8x(w[(size_t)(r + q0 + j) * c8 + base8 + lane + 32 * c],
                        pa, pb);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < RWN; ++j) {
    for (int o = 16; o > 0; o >>= 1) {
      a[j] += __shfl_xor_sync(0xffffffffu, a[j], o);
      if (gu) b[j] += __shfl_xor_sync(0xffffffffu, b[j], o);
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < RWN; ++j) {
      if (q0 + j >= r) break;
      const uint32_t out_row = row0 + q0 + j;
      if (gu) {
        s.out[out_row] = a[j] / (1.0f + expf(-a[j])) * b[j];
      } else if (s.kind == MATVEC) {
        s.out[out_row] = a[j];
      } else if (s.wr == 1) {
        s.out[out_row] = __ldcg(s.out + out_row) + a[j];
      } else {
        atomicAdd(s.out + out_row, a[j]);
      }
    }
  }
}

// The block's weight tiles in the order it uses them, across steps (the
// producer's walk): step k, its tile i.
struct TileCursor {
  const CStep *steps;
  uint32_t n_steps, k, i;
  CStep s;
  BlockTiles bt;
  __device__ void begin(const CStep *all, uint32_t n) {
    steps = all;
    n_steps = n;
    k = 0;
    i = 0;
    load();
    settle();
  }
  __device__ void load() {
    if (k < n_steps) {
      s = steps[k];
      bt = block_tiles(s);
    }
  }
  // On to the next step while this one has no weight tile left here.
  __device__ void settle() {
    while (k < n_steps && (s.kind == STUB || i >= bt.count)) {
      ++k;
      i = 0;
      load();
    }
  }
  __device__ bool ok() const { return k < n_steps; }
  __device__ void next() {
    ++i;
    settle();
  }
  __device__ void prefetch_l2() const {
    uint32_t row0, r;
    tile_at(s, bt, i, row0, r);
    const uint32_t bytes = r * s.cols * 2;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(
                     s.w + (size_t)row0 * s.cols),
                 "r"(bytes)
                 : "memory");
    if (s.kind == GATE_UP) {
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(
                       s.w2 + (size_t)row0 * s.cols),
                   "r"(bytes)
                   : "memory");
    }
  }
};

// XS: x in shared memory (split in halves of each 8-entry chunk, so a
// warp's 16-byte reads are contiguous) rather than in each warp's registers.
constexpr uint32_t kXsMax = 8192;
__device__ __forceinline__ void stage_x(const CStep &s, float4 *xs_lo,
                                        float4 *xs_hi, uint32_t nthreads) {
  const float4 *in4 = reinterpret_cast<const float4 *>(s.in);
  for (uint32_t i = threadIdx.x; i < s.cols / 8; i += nthreads) {
    xs_lo[i] = __ldcg(in4 + 2 * i);
    xs_hi[i] = __ldcg(in4 + 2 * i + 1);
  }
  consumers_sync(nthreads);
}
// The producer (one thread): the block's weight tiles, in the order the
// block uses them, through the ring.
__device__ __forceinline__ void produce_tiles(
    const CStep *steps, uint32_t n_steps, unsigned char *ring, uint64_t *full,
    uint64_t *empty, uint32_t slots, uint32_t slot_bytes, uint32_t nodep) {
  // `pre` runs ahead = (nodep >> 8) & 255 tiles ahead of the copies,
  // prefetching each into L2: the stream goes on while the ring is full at
  // a step's wait. Q: with cap = nodep >> 16 > 0, at most `cap` copies are
  // in flight (copy n waits for copy n - cap to land), however many slots
  // the ring has: a shallow queue an SM, a deep buffer.
  const uint32_t ahead = (nodep >> 8) & 255, cap = nodep >> 16;
  TileCursor cur, pre;
  cur.begin(steps, n_steps);
  pre.begin(steps, n_steps);
  for (uint32_t p = 0; p < ahead && pre.ok(); ++p, pre.next())
    pre.prefetch_l2();
  for (uint32_t n = 0; cur.ok(); cur.next(), ++n) {
    const uint32_t slot = n % slots, round = n / slots;
    if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
    if (cap > 0 && n >= cap)
      mbar_wait(&full[(n - cap) % slots], ((n - cap) / slots) & 1);
    uint32_t row0, r;
    tile_at(cur.s, cur.bt, cur.i, row0, r);
    const uint32_t bytes = r * cur.s.cols * 2;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     smem_addr(&full[slot])),
                 "r"(cur.s.kind == GATE_UP ? 2 * bytes : bytes)
                 : "memory");
    unsigned char *dst = ring + (size_t)slot * slot_bytes;
    bulk_copy(dst, cur.s.w + (size_t)row0 * cur.s.cols, bytes, &full[slot]);
    if (cur.s.kind == GATE_UP) {
      bulk_copy(dst + bytes, cur.s.w2 + (size_t)row0 * cur.s.cols, bytes,
                &full[slot]);
    }
    if (ahead > 0 && pre.ok()) {
      pre.prefetch_l2();
      pre.next();
    }
  }
}

template <int NW, int G, bool XS>
__global__ void __launch_bounds__((NW * G + 1) * 32, 1)
    dataflow_kernel(const CStep *steps, uint32_t n_steps, uint32_t *ctr,
                    uint32_t slots, uint32_t slot_bytes, uint32_t nodep,
                    unsigned long long *stats) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[kCMaxSlots], empty[kCMaxSlots];
  // G groups of NW consumer warps take the tiles in turn (tile n: group
  // n % G), so G tiles are in work at once.
  const uint32_t cwarp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t warp = cwarp % NW, group = cwarp / NW;
  ring_init(full, empty, slots, NW);
  if (cwarp == NW * G) {  // the producer
    if (lane == 0)
      produce_tiles(steps, n_steps, ring, full, empty, slots, slot_bytes,
                    nodep);
    return;
  }
  const uint32_t nthreads = NW * G * 32;
  uint32_t n = 0;
  PartClock clk;  // the step's x loads land in its first tile's wait
  clk.start();
  for (uint32_t k = 0; k < n_steps; ++k) {
    const CStep s = steps[k];
    const BlockTiles bt = block_tiles(s);
    if (bt.count > 0) {
      clk.start();
      if (k > 0 &&
          (nodep & 1) ==
              0) {  // this step's input: every block done with step k - 1
        if (threadIdx.x == 0) {
          while (ld_acquire(&ctr[k - 1]) < gridDim.x) {
          }
        }
        consumers_sync(nthreads);
      }
      clk.lap(kDep);
      if (s.kind == STUB) {
        for (uint32_t i = 0; i < bt.count; ++i) {
          uint32_t e0, m;
          tile_at(s, bt, i, e0, m);
          for (uint32_t t = threadIdx.x; t < m; t += nthreads) {
            s.out[e0 + t] = 0.5f * __ldcg(s.in + e0 + t);
          }
        }
      } else {
        // Warp `warp` takes row q = warp / wr of each tile, part p = warp %
        // wr of its columns (wr: warps a row), with that part of x in
        // registers for the whole step.
        const uint32_t c8 = s.cols / 8, slice8 = c8 / s.wr;
        const uint32_t q = warp / s.wr, base8 = (warp % s.wr) * slice8;
        float4 xa[kCMaxChunks], xb[kCMaxChunks];
        float4 *xs_lo =
            reinterpret_cast<float4 *>(ring + (size_t)slots * slot_bytes);
        float4 *xs_hi = xs_lo + kXsMax / 8;
        if (XS) stage_x(s, xs_lo, xs_hi, nthreads);
#pragma unroll
        for (int c = 0; c < kCMaxChunks; ++c) {
          const uint32_t i = lane + 32 * c;
          if (!XS && i < slice8) {
            const float4 *p = reinterpret_cast<const float4 *>(
                s.in + 8 * (size_t)(base8 + i));
            xa[c] = __ldcg(p);
            xb[c] = __ldcg(p + 1);
          }
        }
        for (uint32_t i = 0; i < bt.count; ++i, ++n) {
          if (n % G != group) continue;
          const uint32_t slot = n % slots;
          mbar_wait(&full[slot], (n / slots) & 1);
          clk.lap(kFull);
          uint32_t row0, r;
          tile_at(s, bt, i, row0, r);
          const uint4 *w =
              reinterpret_cast<const uint4 *>(ring + (size_t)slot * slot_bytes);
          if ((nodep & 2) == 0) {
            if (XS && s.rw == 4) {
              tile_dot_n<4>(s, w, row0, r, q, base8, c8, lane, xs_lo, xs_hi);
            } else if (XS && s.rw == 2 && s.kind == GATE_UP) {
              tile_dot_n<2>(s, w, row0, r, q, base8, c8, lane, xs_lo, xs_hi);
            } else {
              tile_dot<XS>(s, w, row0, r, q, base8, c8, lane, xs_lo, xs_hi, xa,
                           xb);
            }
          }
          __syncwarp();
          if (lane == 0) mbar_arrive(&empty[slot]);
          clk.lap(kComp);
        }
      }
    }
    clk.start();
    consumers_sync(nthreads);  // the block's writes of step k, then its signal
    if (threadIdx.x == 0) {
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(ctr + k)
                   : "memory");
    }
    clk.lap(kStepEnd);
  }
  clk.flush(stats, lane);
}

// ---- L: C with LL hand-offs -----------------------------------------------
// Every vector a step writes (q/k/v, the stub's, the residual, gate/up's)
// is kept as LL words, as NCCL's LL protocol does: 8 bytes holding the f32
// value and the tag of the step that wrote it. A step's consumers load its
// input's words, relaxed, until every tag is the one they expect: those
// loads are the wait and the data at once, with no counter and no fence
// (handoff_lab: 1.2-2.3 us a step cheaper than a counter and then the data,
// while HBM streams). x in shared memory, the blocks' rows even, 1 or 2 rows
// a warp as C; a row split over warps sums its parts in shared memory (an LL
// word is written once, so no global atomics), and each block keeps its rows
// of the residual in shared memory (its ADD steps write only those rows).
__device__ __forceinline__ uint64_t ll_pack(float v, uint32_t tag) {
  return ((uint64_t)tag << 32) | __float_as_uint(v);
}
__device__ __forceinline__ float ll_value(uint64_t w) {
  return __uint_as_float((uint32_t)w);
}
__device__ __forceinline__ uint32_t ll_tag(uint64_t w) {
  return (uint32_t)(w >> 32);
}
// The value at p once its tag is `tag`.
__device__ __forceinline__ float ll_wait(const uint64_t *p, uint32_t tag) {
  uint64_t w = ld_relaxed64(p);
  while (ll_tag(w) != tag) w = ld_relaxed64(p);
  return ll_value(w);
}

// The step's input (cols LL words tagged `tag`) into xs as stage_x lays it
// out. Every load first, then only the stale ones again.
constexpr int kLLPer = 4;  // 8-word chunks a thread: cols <= 8 * 4 * nthreads
__device__ __forceinline__ void stage_x_ll(const uint64_t *in, uint32_t cols,
                                           uint32_t tag, float4 *xs_lo,
                                           float4 *xs_hi, uint32_t nthreads,
                                           uint32_t backoff_ns) {
  const uint32_t chunks = cols / 8;
  ulonglong2 v[kLLPer][4];
#pragma unroll
  for (int j = 0; j < kLLPer; ++j) {
    const uint32_t i = threadIdx.x + j * nthreads;
    if (i < chunks) {
#pragma unroll
      for (int h = 0; h < 4; ++h)
        v[j][h] = ld_relaxed64x2(in + 8 * (size_t)i + 2 * h);
    }
  }
  for (;;) {
    bool stale = false;
#pragma unroll
    for (int j = 0; j < kLLPer; ++j) {
      const uint32_t i = threadIdx.x + j * nthreads;
      if (i < chunks) {
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          if (ll_tag(v[j][h].x) != tag || ll_tag(v[j][h].y) != tag) {
            stale = true;
            v[j][h] = ld_relaxed64x2(in + 8 * (size_t)i + 2 * h);
          }
        }
      }
    }
    if (!stale) break;
    if (backoff_ns) __nanosleep(backoff_ns);  // fewer loads into a loaded L2
  }
#pragma unroll
  for (int j = 0; j < kLLPer; ++j) {
    const uint32_t i = threadIdx.x + j * nthreads;
    if (i < chunks) {
      xs_lo[i] = make_float4(ll_value(v[j][0].x), ll_value(v[j][0].y),
                             ll_value(v[j][1].x), ll_value(v[j][1].y));
      xs_hi[i] = make_float4(ll_value(v[j][2].x), ll_value(v[j][2].y),
                             ll_value(v[j][3].x), ll_value(v[j][3].y));
    }
  }
  consumers_sync(nthreads);
}

// tile_dot<true> writing LL words (the LM head: plain floats).
__device__ __forceinline__ void tile_dot_ll(
    const CStep &s, const uint4 *w, uint32_t row0, uint32_t r, uint32_t warp,
    uint32_t lane, const float4 *xs_lo, const float4 *xs_hi, float *part,
    uint32_t *arrived, uint32_t part_place, float *resid, uint32_t resid_lo,
    bool compute) {
  const uint32_t c8 = s.cols / 8, slice8 = c8 / s.wr;
  const uint32_t q = warp / s.wr, base8 = (warp % s.wr) * slice8;
  const bool gu = s.kind == GATE_UP;
  const uint32_t q0 = gu ? q : q * s.rw, q1 = gu ? r + q : q0 + 1;
  const bool second = gu || (s.rw == 2 && q1 < r);
  float a = 0.0f, b = 0.0f;
  if (q0 < r && compute) {
    const float4 unused[kCMaxChunks] = {};
    rows_dot<true>(w, q0, q1, second, base8, c8, lane, xs_lo, xs_hi, unused,
                   unused, a, b);
  }
  if (s.wr > 1) {
    // The row's parts: each warp adds its own into shared memory (a place
    // a slot: a warp is at most a ring ahead); the last to arrive writes.
    if (lane != 0) return;
    const uint32_t place = part_place;
    atomicAdd(part + 2 * place, a);
    atomicAdd(part + 2 * place + 1, b);
    __threadfence_block();
    if (atomicAdd(arrived + place, 1u) != s.wr - 1) return;
    __threadfence_block();
    a = atomicExch(part + 2 * place, 0.0f);
    b = atomicExch(part + 2 * place + 1, 0.0f);
    arrived[place] = 0;
  }
  if (lane != 0 || q0 >= r) return;
  const uint32_t out_row = row0 + q0;
  if (gu) {
    st_relaxed64(s.lout + out_row, ll_pack(a / (1.0f + expf(-a)) * b, s.tout));
  } else if (s.kind == MATVEC) {
    if (s.lout == nullptr) {
      s.out[out_row] = a;
      if (second) s.out[out_row + 1] = b;
    } else {
      st_relaxed64(s.lout + out_row, ll_pack(a, s.tout));
      if (second) st_relaxed64(s.lout + out_row + 1, ll_pack(b, s.tout));
    }
  } else {  // ADD: the block's own residual rows, kept in shared memory
    resid[out_row - resid_lo] += a;
    st_relaxed64(s.lout + out_row, ll_pack(resid[out_row - resid_lo], s.tout));
    if (second) {
      resid[out_row + 1 - resid_lo] += b;
      st_relaxed64(s.lout + out_row + 1,
                   ll_pack(resid[out_row + 1 - resid_lo], s.tout));
    }
  }
}

template <int NW>
__global__ void __launch_bounds__((NW + 1) * 32, 1)
    dataflow_ll_kernel(const CStep *steps, uint32_t n_steps, uint32_t slots,
                       uint32_t slot_bytes, uint32_t nodep,
                       unsigned long long *stats) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[kCMaxSlots], empty[kCMaxSlots];
  __shared__ float part[2 * kCMaxSlots * NW];
  __shared__ uint32_t arrived[kCMaxSlots * NW];
  __shared__ float resid[64];  // this block's rows of the residual
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (uint32_t i = threadIdx.x; i < kCMaxSlots * NW; i += blockDim.x) {
    part[2 * i] = part[2 * i + 1] = 0.0f;
    arrived[i] = 0;
  }
  ring_init(full, empty, slots, NW);
  if (warp == NW) {
    if (lane == 0) {
      produce_tiles(steps, n_steps, ring, full, empty, slots, slot_bytes,
                    nodep & 0xffffffu);
    }
    return;
  }
  const uint32_t nthreads = NW * 32;
  float4 *xs_lo = reinterpret_cast<float4 *>(ring + (size_t)slots * slot_bytes);
  float4 *xs_hi = xs_lo + kXsMax / 8;
  // The residual's rows this block's ADD steps write (hidden = the first
  // step's cols, rows even): their first values, tag 1.
  const uint32_t hidden = steps[0].cols;
  const uint32_t resid_lo =
      (uint32_t)((uint64_t)hidden * blockIdx.x / gridDim.x);
  const uint32_t resid_hi =
      (uint32_t)((uint64_t)hidden * (blockIdx.x + 1) / gridDim.x);
  for (uint32_t i = resid_lo + threadIdx.x; i < resid_hi; i += nthreads) {
    resid[i - resid_lo] = ll_wait(steps[0].lin + i, 1);
  }
  consumers_sync(nthreads);
  uint32_t n = 0;
  PartClock clk;
  for (uint32_t k = 0; k < n_steps; ++k) {
    const CStep s = steps[k];
    const BlockTiles bt = block_tiles(s);
    if (bt.count == 0) continue;
    clk.start();
    if (s.kind == STUB) {
      for (uint32_t i = 0; i < bt.count; ++i) {
        uint32_t e0, m;
        tile_at(s, bt, i, e0, m);
        for (uint32_t t = threadIdx.x; t < m; t += nthreads) {
          st_relaxed64(s.lout + e0 + t,
                       ll_pack(0.5f * ll_wait(s.lin + e0 + t, s.tin), s.tout));
        }
      }
      clk.lap(kDep);
      continue;
    }
    stage_x_ll(s.lin, s.cols, s.tin, xs_lo, xs_hi, nthreads,
               (nodep >> 24) * 16);
    clk.lap(kDep);
    for (uint32_t i = 0; i < bt.count; ++i, ++n) {
      const uint32_t slot = n % slots;
      mbar_wait(&full[slot], (n / slots) & 1);
      clk.lap(kFull);
      uint32_t row0, r;
      tile_at(s, bt, i, row0, r);
      const uint4 *w =
          reinterpret_cast<const uint4 *>(ring + (size_t)slot * slot_bytes);
      tile_dot_ll(s, w, row0, r, warp, lane, xs_lo, xs_hi, part, arrived,
                  slot * NW + warp / s.wr, resid, resid_lo, (nodep & 2) == 0);
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[slot]);
      clk.lap(kComp);
    }
    consumers_sync(nthreads);  // xs read by every warp before the next step's
    clk.lap(kStepEnd);
  }
  clk.flush(stats, lane);
}

// L's set-up a token: the LL vectors (x first) with every tag 0 (none a
// step expects), then x's words the first x with tag 1.
__global__ void ll_init(uint64_t *ll, const float *x0, uint32_t hidden,
                        size_t total) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    ll[i] = i < hidden ? ll_pack(x0[i], 1) : 0;
  }
}

// ---- D: C with its tiles claimed at run time ------------------------------
// The producer claims a step's tiles from a counter a step (so an SM that
// streams faster takes more of them) and queues each in the ring with its
// header; when the step's tiles run out it queues an end entry. Consumers
// take the entries in order. A step's input is ready when `done[k - 1]`
// counts all of step k - 1's tiles.
constexpr uint32_t kEnd = 0xFFFFFFFFu;

template <int NW>
__global__ void __launch_bounds__((NW + 1) * 32, 1)
    dataflow_dyn_kernel(const CStep *steps, uint32_t n_steps, uint32_t *claim,
                        uint32_t *done, uint32_t slots, uint32_t slot_bytes,
                        unsigned long long *stats) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) uint64_t full[kCMaxSlots], empty[kCMaxSlots];
  __shared__ uint32_t hdr_step[kCMaxSlots], hdr_tile[kCMaxSlots];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  ring_init(full, empty, slots, NW);
  if (warp == NW) {  // the producer
    if (lane != 0) return;
    uint32_t n = 0;
    for (uint32_t k = 0; k < n_steps; ++k) {
      const CStep s = steps[k];
      // The next claim is issued before this one's copy: its round trip
      // overlaps the wait for a free slot.
      uint32_t next = atomicAdd(&claim[k], 1u);
      for (;; ++n) {
        const uint32_t j = next;
        if (j < s.tiles) next = atomicAdd(&claim[k], 1u);
        const uint32_t slot = n % slots, round = n / slots;
        if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
        hdr_step[slot] = k;
        hdr_tile[slot] = j < s.tiles ? j : kEnd;
        if (j >= s.tiles || s.kind == STUB) {
          mbar_arrive(&full[slot]);  // no bytes: the header alone
          if (j >= s.tiles) {
            ++n;
            break;
          }
          continue;
        }
        const uint32_t r = min(s.rt, s.rows - j * s.rt);
        const uint32_t bytes = r * s.cols * 2;
        asm volatile(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                smem_addr(&full[slot])),
            "r"(s.kind == GATE_UP ? 2 * bytes : bytes)
            : "memory");
        unsigned char *dst = ring + (size_t)slot * slot_bytes;
        bulk_copy(dst, s.w + (size_t)j * s.rt * s.cols, bytes, &full[slot]);
        if (s.kind == GATE_UP)
          bulk_copy(dst + bytes, s.w2 + (size_t)j * s.rt * s.cols, bytes,
                    &full[slot]);
      }
    }
    return;
  }
  const uint32_t nthreads = NW * 32;
  float4 *xs_lo = reinterpret_cast<float4 *>(ring + (size_t)slots * slot_bytes);
  float4 *xs_hi = xs_lo + kXsMax / 8;
  float4 xa[kCMaxChunks], xb[kCMaxChunks];  // unused: x is in shared memory
  PartClock clk;
  clk.start();
  uint32_t ready = kEnd,
           count = 0;  // the step whose input is staged; its tiles done here
  CStep s = steps[0];
  uint32_t sk = 0;
  for (uint32_t n = 0;; ++n) {
    const uint32_t slot = n % slots;
    mbar_wait(&full[slot], (n / slots) & 1);
    const uint32_t k = hdr_step[slot], j = hdr_tile[slot];
    clk.lap(kFull);
    if (k != sk) {  // the step's table entry, read once a step
      s = steps[k];
      sk = k;
    }
    if (j == kEnd) {
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[slot]);
      consumers_sync(nthreads);  // the block's writes of step k, then its count
      if (threadIdx.x == 0 && count > 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(done + k),
                     "r"(count)
                     : "memory");
      }
      count = 0;
      clk.lap(kStepEnd);
      if (k + 1 == n_steps) break;
      continue;
    }
    if (ready != k) {  // the step's first tile here: wait for its input
      if (k > 0) {
        if (threadIdx.x == 0) {
          const uint32_t need = steps[k - 1].tiles;
          while (ld_acquire(&done[k - 1]) < need) {
          }
        }
        consumers_sync(nthreads);
      }
      clk.lap(kDep);
      if (s.kind != STUB) stage_x(s, xs_lo, xs_hi, nthreads);
      ready = k;
    }
    if (s.kind == STUB) {
      const uint32_t e0 = j * s.rt, m = min(s.rt, s.rows - e0);
      for (uint32_t t = threadIdx.x; t < m; t += nthreads) {
        s.out[e0 + t] = 0.5f * __ldcg(s.in + e0 + t);
      }
    } else {
      const uint32_t c8 = s.cols / 8, slice8 = c8 / s.wr;
      const uint32_t q = warp / s.wr, base8 = (warp % s.wr) * slice8;
      const uint4 *w =
          reinterpret_cast<const uint4 *>(ring + (size_t)slot * slot_bytes);
      const uint32_t row0 = j * s.rt;
      tile_dot<true>(s, w, row0, min(s.rt, s.rows - row0), q, base8, c8, lane,
                     xs_lo, xs_hi, xa, xb);
    }
    ++count;
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[slot]);
    clk.lap(kComp);
  }
  clk.flush(stats, lane);
}

// ---- setup -----------------------------------------------------------------
__global__ void fill(__nv_bfloat16 *w, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed * 0x9E3779B9u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    float u = (float)(h & 0xFFFFFF) / 16777216.0f - 0.5f;
    w[i] = __float2bfloat16(u * scale);
  }
}

struct Shape {
  uint32_t hidden, q, kv, inter, vocab, layers;
};

// A dataflow run's PartClock sums, `per` of them a warp a token.
void print_cycles(const unsigned long long (&hs)[4], double per) {
  printf(
      "   cycles a warp a token: input waits %.0f, tile waits %.0f, compute "
      "%.0f, step ends %.0f\n",
      hs[0] * per, hs[1] * per, hs[2] * per, hs[3] * per);
}

// C's step table (a tile: a row a consumer warp, or part of one; round-robin
// bases), its graph and its run, with a ring of `ring_bytes`.
// DYN: D's kernel instead (G 1, XS, tiles claimed at run time).
template <int NW, int G, bool XS, int RW = 1, int SPLIT = 0, bool DYN = false,
          typename Time, typename Report>
void run_c_nw(const std::vector<Step> &steps, int sms, cudaStream_t st,
              float *x, const float *x0, uint32_t hidden, Time &time_graph,
              Report &report, uint32_t ring_bytes, uint32_t nodep = 0) {
  std::vector<CStep> cs;
  uint32_t g = 0, slot_bytes = 0;
  for (const Step &s : steps) {
    CStep c{s.kind, s.w, s.w2, s.in, s.out, s.rows, s.cols,
            0,      1,   1,    0,    g,     SPLIT};
    if (s.kind == STUB) {
      c.rt = kStubTile;
    } else {
      // Warps a row: the fewest that hold a row's x in registers (only ADD,
      // which sums by atomics, may split a row).
      const uint32_t c8 = s.cols / 8;
      while (c8 % c.wr != 0 || c8 / c.wr > 32u * kCMaxChunks) ++c.wr;
      if (c8 / c.wr != 32u * kCMaxChunks) return;
      if (c.wr > 1 && s.kind != ADD) return;
      if (NW % c.wr != 0) return;
      // RW 4 (XS only): 4 rows a warp, GATE_UP's 2 with their up rows (its
      // tile as many bytes as the others').
      c.rw =
          RW == 4 ? (s.kind == GATE_UP ? 2 : 4) : (s.kind == GATE_UP ? 1 : RW);
      if (RW == 4 && !XS) return;
      c.rt = NW / c.wr * c.rw;
      slot_bytes = std::max<uint32_t>(
          slot_bytes, c.rt * s.cols * 2 * (s.kind == GATE_UP ? 2 : 1));
    }
    c.tiles = (c.rows + c.rt - 1) / c.rt;
    g += c.tiles;
    cs.push_back(c);
  }
  const uint32_t slots = std::min<uint32_t>(
      kCMaxSlots, (ring_bytes - (XS ? kXsMax * 4 : 0)) / slot_bytes);
  if (slots < 2) return;
  CStep *d_cs;
  uint32_t *ctr;
  CK(cudaMalloc(&d_cs, cs.size() * sizeof(CStep)));
  CK(cudaMemcpy(d_cs, cs.data(), cs.size() * sizeof(CStep),
                cudaMemcpyHostToDevice));
  CK(cudaMalloc(
      &ctr, 2 * cs.size() * 4));  // C: a counter a step; D: claims, then dones
  unsigned long long *stats;
  CK(cudaMalloc(&stats, 4 * 8));
  const uint32_t smem = slots * slot_bytes + (XS ? kXsMax * 4 : 0);
  static_assert(!DYN || (G == 1 && XS), "D: one group, x in shared memory");
  const void *kern = DYN ? (const void *)dataflow_dyn_kernel<NW>
                         : (const void *)dataflow_kernel<NW, G, XS>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)smem));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern,
                                                   (NW * G + 1) * 32, smem));
  if (occ < 1) {
    printf("C: %d warps, %u x %u KiB: does not fit\n", NW, slots,
           slot_bytes >> 10);
    return;
  }
  cudaGraph_t gr;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(x, x0, hidden * 4, cudaMemcpyDeviceToDevice, st));
  CK(cudaMemsetAsync(ctr, 0, 2 * cs.size() * 4, st));
  if (DYN) {
    dataflow_dyn_kernel<NW><<<sms, (NW + 1) * 32, smem, st>>>(
        d_cs, (uint32_t)cs.size(), ctr, ctr + cs.size(), slots, slot_bytes,
        stats);
  } else {
    dataflow_kernel<NW, G, XS><<<sms, (NW * G + 1) * 32, smem, st>>>(
        d_cs, (uint32_t)cs.size(), ctr, slots, slot_bytes, nodep, stats);
  }
  CK(cudaGetLastError());
  CK(cudaStreamEndCapture(st, &gr));
  CK(cudaGraphInstantiate(&ge, gr, 0));
  CK(cudaMemset(stats, 0, 4 * 8));
  float ms = time_graph(ge);
  unsigned long long hs[4];
  CK(cudaMemcpy(hs, stats, sizeof(hs), cudaMemcpyDeviceToHost));
  const double per = 1.0 / (53.0 * sms * NW * G);  // runs timed (3 + 50), warps
  char name[96];
  snprintf(name, sizeof(name),
           "%s: dataflow%s%s%s, %d x %d warps, %u x %u KiB%s", DYN ? "D" : "C",
           XS ? " xs" : "", SPLIT ? " even" : "",
           RW == 2   ? " 2 rows"
           : RW == 4 ? " 4 rows"
                     : "",
           G, NW, slots, slot_bytes >> 10,
           (nodep & 3) == 1   ? ", no waits"
           : (nodep & 3) == 3 ? ", copies only"
           : (nodep & 3) == 2 ? ", copies and waits only"
                              : "");
  if (((nodep >> 8) & 255) > 0) {
    const size_t used = strlen(name);
    snprintf(name + used, sizeof(name) - used, ", L2 %u ahead",
             (nodep >> 8) & 255);
  }
  if ((nodep >> 16) > 0) {
    const size_t used = strlen(name);
    snprintf(name + used, sizeof(name) - used, ", %u in flight", nodep >> 16);
  }
  report(name, ms);
  print_cycles(hs, per);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(gr));
  CK(cudaFree(stats));
  CK(cudaFree(d_cs));
  CK(cudaFree(ctr));
}

template <typename Time, typename Report>
void run_c(const std::vector<Step> &steps, int sms, cudaStream_t st, float *x,
           const float *x0, uint32_t hidden, Time &time_graph, Report &report) {
  // The runs of 2026-12-01 also ran 4-warp and 12-warp blocks and 2-4
  // groups with x in registers (slower: fewer or spilled registers); 4 x 4
  // warps with x in shared memory failed its launch (not investigated).
  const uint32_t ring = 200u << 10;
  run_c_nw<8, 1, false>(steps, sms, st, x, x0, hidden, time_graph, report, ring,
                        3);
  run_c_nw<8, 1, false>(steps, sms, st, x, x0, hidden, time_graph, report, ring,
                        1);
  run_c_nw<8, 1, false>(steps, sms, st, x, x0, hidden, time_graph, report,
                        ring);
  run_c_nw<8, 1, true>(steps, sms, st, x, x0, hidden, time_graph, report,
                       224u << 10);
  run_c_nw<4, 2, true>(steps, sms, st, x, x0, hidden, time_graph, report, ring);
  run_c_nw<8, 1, true, 2>(steps, sms, st, x, x0, hidden, time_graph, report,
                          224u << 10);
  run_c_nw<8, 1, true, 2>(steps, sms, st, x, x0, hidden, time_graph, report,
                          224u << 10, 1);
  run_c_nw<8, 1, false, 2>(steps, sms, st, x, x0, hidden, time_graph, report,
                           ring);
  run_c_nw<4, 2, true, 2>(steps, sms, st, x, x0, hidden, time_graph, report,
                          224u << 10);
  run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10);
  run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10, 1);
  run_c_nw<4, 2, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10);
  run_c_nw<8, 1, true, 1, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10);
  run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10, 2);
  run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph, report,
                             224u << 10, 3);
  run_c_nw<8, 1, true, 2, 0, true>(steps, sms, st, x, x0, hidden, time_graph,
                                   report, 224u << 10);
  run_c_nw<8, 1, true, 1, 0, true>(steps, sms, st, x, x0, hidden, time_graph,
                                   report, 224u << 10);
  for (uint32_t pf : {2u, 4u, 8u}) {
    run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                               report, 224u << 10, pf << 8);
    run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                               report, 224u << 10, pf << 8 | 2);
  }
}

// Q: C with at most `cap` copies in flight an SM (handoff_lab: a step's
// hand-off queues behind the SM's copies in flight; a shallow queue makes it
// cheaper), the ring's other slots a buffer that fills while a step waits.
// Each configuration uncapped (0) and capped, whole (compute and waits) and
// with copies and waits only (the hand-offs' bound).
template <typename Time, typename Report>
void run_q(const std::vector<Step> &steps, int sms, cudaStream_t st, float *x,
           const float *x0, uint32_t hidden, Time &time_graph, Report &report) {
  const uint32_t ring = 224u << 10;
  // One copy in flight an SM, the next tiles prefetched into L2 ahead of it
  // (the prefetches bring nothing back to the SM, so they do not lengthen
  // its queue; the copy then hits L2).
  for (uint32_t only : {0u, 2u}) {
    for (uint32_t ahead : {2u, 4u, 8u}) {
      run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, 1u << 16 | ahead << 8 | only);
    }
  }
  for (uint32_t cap :
       {0u, 1u, 2u, 3u}) {  // 2 rows a warp, 4-warp groups, 6 x 32 KiB
    for (uint32_t only : {0u, 2u}) {
      run_c_nw<4, 2, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, cap << 16 | only);
      run_c_nw<4, 3, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, cap << 16 | only);
    }
  }
  if (getenv("LAB_Q_SHORT")) return;
  for (uint32_t cap : {0u, 1u, 2u}) {  // 4 rows a warp
    run_c_nw<4, 1, true, 4, 1>(steps, sms, st, x, x0, hidden, time_graph,
                               report, ring, cap << 16);
    run_c_nw<4, 2, true, 4, 1>(steps, sms, st, x, x0, hidden, time_graph,
                               report, ring, cap << 16);
    run_c_nw<4, 3, true, 4, 1>(steps, sms, st, x, x0, hidden, time_graph,
                               report, ring, cap << 16);
  }
  for (uint32_t only : {0u, 2u}) {
    for (uint32_t cap : {0u, 1u, 2u}) {  // 64 KiB slots
      run_c_nw<8, 1, true, 2, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, cap << 16 | only);
    }
    for (uint32_t cap :
         {0u, 1u, 2u, 3u}) {  // 32 KiB slots (16 KiB for most steps)
      run_c_nw<4, 2, true, 1, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, cap << 16 | only);
      run_c_nw<4, 1, true, 1, 1>(steps, sms, st, x, x0, hidden, time_graph,
                                 report, ring, cap << 16 | only);
    }
  }
}

// L: C (x in shared memory, rows even, 2 rows a warp, 8 consumer warps)
// with LL hand-offs, uncapped and with 1-2 copies in flight.
template <typename Time, typename Report>
void run_l(const std::vector<Step> &steps, int sms, cudaStream_t st,
           const float *x0, uint32_t hidden, Time &time_graph, Report &report) {
  constexpr int NW = 8;
  std::vector<CStep> cs;
  uint32_t slot_bytes = 0;
  for (const Step &s : steps) {
    CStep c{s.kind, s.w, s.w2, s.in, s.out, s.rows, s.cols, 0, 1, 1, 0, 0, 1};
    if (s.kind == STUB) {
      c.rt = kStubTile;
    } else {
      const uint32_t c8 = s.cols / 8;
      while (c8 % c.wr != 0 || c8 / c.wr > 32u * kCMaxChunks) ++c.wr;
      if (c8 / c.wr != 32u * kCMaxChunks || NW % c.wr != 0 || s.cols > kXsMax)
        return;
      c.rw = s.kind == GATE_UP ? 1 : 2;
      c.rt = NW / c.wr * c.rw;
      slot_bytes = std::max<uint32_t>(
          slot_bytes, c.rt * s.cols * 2 * (s.kind == GATE_UP ? 2 : 1));
    }
    c.tiles = (c.rows + c.rt - 1) / c.rt;
    cs.push_back(c);
  }
  // One LL buffer for each float vector the steps read or write (the LM
  // head's logits stay floats), x first; each step's tags.
  std::vector<const float *> vecs;
  std::vector<uint32_t> lens;
  auto index_of = [&](const float *p, uint32_t len) {
    for (size_t i = 0; i < vecs.size(); ++i) {
      if (vecs[i] == p) {
        lens[i] = std::max(lens[i], len);
        return i;
      }
    }
    vecs.push_back(p);
    lens.push_back(len);
    return vecs.size() - 1;
  };
  index_of(steps[0].in, hidden);  // x
  for (size_t k = 0; k + 1 < cs.size(); ++k) {
    index_of(cs[k].in, cs[k].kind == STUB ? cs[k].rows : cs[k].cols);
    index_of(cs[k].out, cs[k].rows);
  }
  std::vector<size_t> off(vecs.size());
  size_t total = 0;
  for (size_t i = 0; i < vecs.size(); ++i) {
    off[i] = total;
    total += (lens[i] + 7) / 8 * 8;
  }
  uint64_t *ll;
  CK(cudaMalloc(&ll, total * 8));
  std::vector<uint32_t> tag(vecs.size(), 0);
  tag[0] = 1;
  for (size_t k = 0; k < cs.size(); ++k) {
    CStep &c = cs[k];
    const size_t in = index_of(c.in, 0);
    c.lin = ll + off[in];
    c.tin = tag[in];
    if (k + 1 == cs.size()) break;  // the LM head
    const size_t out = index_of(c.out, 0);
    c.lout = ll + off[out];
    c.told = tag[out];
    c.tout = (uint32_t)k + 2;
    tag[out] = c.tout;
  }
  const uint32_t slots =
      std::min<uint32_t>(kCMaxSlots, ((224u << 10) - kXsMax * 4) / slot_bytes);
  const uint32_t smem = slots * slot_bytes + kXsMax * 4;
  CStep *d_cs;
  CK(cudaMalloc(&d_cs, cs.size() * sizeof(CStep)));
  CK(cudaMemcpy(d_cs, cs.data(), cs.size() * sizeof(CStep),
                cudaMemcpyHostToDevice));
  unsigned long long *stats;
  CK(cudaMalloc(&stats, 4 * 8));
  CK(cudaFuncSetAttribute(dataflow_ll_kernel<NW>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          (int)smem));
  for (uint32_t only : {0u, 2u}) {
    for (uint32_t cap : {0u, 1u}) {
      for (uint32_t backoff : {0u, 64u, 256u, 1024u, 4080u}) {
        // The retry's sleep in nodep's top byte (16 ns units), which L's
        // producer does not get.
        const uint32_t nodep = cap << 16 | only | backoff / 16 << 24;
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        ll_init<<<16, 256, 0, st>>>(ll, x0, hidden, total);
        dataflow_ll_kernel<NW><<<sms, (NW + 1) * 32, smem, st>>>(
            d_cs, (uint32_t)cs.size(), slots, slot_bytes, nodep, stats);
        CK(cudaGetLastError());
        CK(cudaStreamEndCapture(st, &gr));
        CK(cudaGraphInstantiate(&ge, gr, 0));
        CK(cudaMemset(stats, 0, 4 * 8));
        const float ms = time_graph(ge);
        unsigned long long hs[4];
        CK(cudaMemcpy(hs, stats, sizeof(hs), cudaMemcpyDeviceToHost));
        const double per = 1.0 / (53.0 * sms * NW);
        char name[112];
        snprintf(name, sizeof(name),
                 "L: LL, %u x %u KiB%s%s, retry sleep %u ns", slots,
                 slot_bytes >> 10, only ? ", copies and waits only" : "",
                 cap == 1   ? ", 1 in flight"
                 : cap == 2 ? ", 2 in flight"
                            : "",
                 backoff);
        report(name, ms);
        print_cycles(hs, per);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(gr));
      }
    }
  }
  CK(cudaFree(stats));
  CK(cudaFree(d_cs));
  CK(cudaFree(ll));
}

int main(int argc, char **argv) {
  const bool big = argc > 1 && strcmp(argv[1], "8b") == 0;
  const int stubs = argc > 2 ? atoi(argv[2]) : 1;
  const char *which = argc > 3 ? argv[3] : "A2BC";  // variants beside A
  const Shape sh = big ? Shape{4096, 4096, 1024, 14336, 128256, 32}
                       : Shape{2048, 2048, 512, 8192, 128256, 16};
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const uint32_t qkv_rows = sh.q + 2 * sh.kv;
  size_t bytes = 0;
  auto weights = [&](size_t rows, size_t cols, uint32_t seed) {
    __nv_bfloat16 *w;
    CK(cudaMalloc(&w, rows * cols * 2));
    fill<<<1024, 256>>>(w, rows * cols, seed, 2.0f / sqrtf((float)cols));
    bytes += rows * cols * 2;
    return w;
  };
  float *x, *x0, *qkv, *att, *h, *logits;
  CK(cudaMalloc(&x, sh.hidden * 4));
  CK(cudaMalloc(&x0, sh.hidden * 4));
  CK(cudaMalloc(&qkv, qkv_rows * 4));
  CK(cudaMalloc(&att, sh.q * 4));
  float *scratch;
  CK(cudaMalloc(&scratch, sh.hidden * 4));
  CK(cudaMalloc(&h, sh.inter * 4));
  CK(cudaMalloc(&logits, (size_t)sh.vocab * 4));
  std::vector<float> hx(sh.hidden);
  for (uint32_t i = 0; i < sh.hidden; ++i) hx[i] = (float)std::sin(0.37 * i);
  CK(cudaMemcpy(x0, hx.data(), sh.hidden * 4, cudaMemcpyHostToDevice));

  // down: 2 warps a row where the grid then still fits (Atlas's rule).
  const uint32_t down_splits = sh.hidden * 2 <= (uint32_t)sms * 32 ? 2 : 1;
  std::vector<Step> steps, fsteps;  // fsteps: F's chain (same weights)
  float *x2;
  CK(cudaMalloc(&x2, sh.hidden * 4));
  for (uint32_t l = 0; l < sh.layers; ++l) {
    float *xc = l % 2 ? x2 : x,
          *xn = l % 2 ? x : x2;  // F: this layer's x, the next
    steps.push_back({MATVEC, weights(qkv_rows, sh.hidden, 10 * l + 1), nullptr,
                     x, qkv, qkv_rows, sh.hidden, 1});
    fsteps.push_back(steps.back());
    fsteps.back().in = xc;
    fsteps.back().zero = xn;
    fsteps.back().zero_n = sh.hidden;
    if (stubs > 0) {
      steps.push_back({STUB, nullptr, nullptr, qkv, att, sh.q, 0, 1});
      fsteps.push_back(steps.back());
    }
    steps.push_back({ADD, weights(sh.hidden, sh.q, 10 * l + 2), nullptr,
                     stubs > 0 ? att : qkv, x, sh.hidden, sh.q, down_splits});
    fsteps.push_back(steps.back());
    fsteps.back().out = xc;
    if (stubs > 1)
      steps.push_back({STUB, nullptr, nullptr, x, scratch, sh.hidden, 0, 1});
    steps.push_back({GATE_UP, weights(sh.inter, sh.hidden, 10 * l + 3),
                     weights(sh.inter, sh.hidden, 10 * l + 4), x, h, sh.inter,
                     sh.hidden, 1});
    const Step gu = steps.back();
    steps.push_back({ADD, weights(sh.hidden, sh.inter, 10 * l + 5), nullptr, h,
                     x, sh.hidden, sh.inter, down_splits});
    if (strchr(which, 'F')) {
      __nv_bfloat16 *dt;
      CK(cudaMalloc(&dt, (size_t)sh.hidden * sh.inter * 2));
      transpose_bf16<<<4096, 256>>>(dt, steps.back().w, sh.hidden, sh.inter);
      Step f = {FFN, gu.w, gu.w2, xc, xn, sh.inter, sh.hidden, 16};
      f.w3 = dt;
      fsteps.push_back(f);
    }
  }
  steps.push_back({MATVEC, weights(sh.vocab, sh.hidden, 7), nullptr, x, logits,
                   sh.vocab, sh.hidden, 1});
  fsteps.push_back(steps.back());  // layers even: the last FFN wrote x
  CK(cudaDeviceSynchronize());
  Step *d_steps;
  CK(cudaMalloc(&d_steps, steps.size() * sizeof(Step)));
  CK(cudaMemcpy(d_steps, steps.data(), steps.size() * sizeof(Step),
                cudaMemcpyHostToDevice));
  uint32_t *count;
  CK(cudaMalloc(&count, 4));

  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const int kSmem = (int)(std::max(sh.inter, sh.q) * 4);
  // Device copy rate (read + write) for the floor.
  void *c0, *c1;
  const size_t cb = (size_t)1 << 30;
  CK(cudaMalloc(&c0, cb));
  CK(cudaMalloc(&c1, cb));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float best_copy = 1e30f;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(e0, st));
    CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best_copy = ms < best_copy ? ms : best_copy;
  }
  CK(cudaFree(c0));
  CK(cudaFree(c1));
  const double copy_gbs = 2.0 * cb / (best_copy * 1e-3) / 1e9;

  auto time_graph = [&](cudaGraphExec_t ge) {
    for (int r = 0; r < 3; ++r) CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    const int n = 50;
    CK(cudaEventRecord(e0, st));
    for (int r = 0; r < n; ++r) CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / n;
  };
  auto logits_now = [&]() {
    std::vector<float> v(sh.vocab);
    CK(cudaMemcpy(v.data(), logits, (size_t)sh.vocab * 4,
                  cudaMemcpyDeviceToHost));
    return v;
  };

  // A: a kernel a step (bulk: A2, rows through shared memory).
  CK(cudaFuncSetAttribute(step_kernel_bulk,
                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                          200 * 1024));
  auto graph_a = [&](bool overlap, bool bulk = false,
                     uint32_t budget = 64 * 1024,
                     const std::vector<Step> *chain = nullptr,
                     bool early = false, bool one_wave = false) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(x, x0, sh.hidden * 4, cudaMemcpyDeviceToDevice, st));
    for (const Step &s : chain ? *chain : steps) {
      uint32_t tasks = s.kind == ADD ? s.rows * s.splits : s.rows;
      uint32_t block = s.kind == GATE_UP ? 64 : 256;
      uint32_t span = s.kind == ADD ? s.cols / s.splits : s.cols;
      uint32_t tb = (s.kind == GATE_UP ? 2 : 1) * span * 2;
      uint32_t smem = 0;
      if (bulk && s.kind != STUB) {
        uint32_t warps = std::max(1u, std::min(block / 32, budget / tb));
        block = warps * 32;
        smem = warps * tb;
      }
      uint32_t grid = s.kind == STUB ? (s.rows + 255) / 256
                                     : (tasks + block / 32 - 1) / (block / 32);
      if (one_wave && s.kind != STUB) {
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &occ, step_kernel_t<false, true>, (int)block, 0));
        grid = std::min<uint32_t>(grid, (uint32_t)(occ * sms));
      }
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(grid);
      cfg.blockDim = dim3(block);
      cfg.dynamicSmemBytes = smem;
      cfg.stream = st;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = overlap ? 1 : 0;
      if (s.kind == FFN) {
        cfg.gridDim = dim3(s.rows / s.splits);
        cfg.blockDim = dim3(256);
        const void *k = s.cols == 2048 ? ffn_kernel_for<1>(s.splits)
                                       : ffn_kernel_for<2>(s.splits);
        void *args[] = {const_cast<Step *>(&s)};
        CK(cudaLaunchKernelExC(&cfg, k, args));
      } else if (bulk) {
        CK(cudaLaunchKernelEx(&cfg, step_kernel_bulk, s));
      } else {
        CK(cudaLaunchKernelEx(&cfg,
                              one_wave ? step_kernel_t<false, true>
                              : early  ? step_kernel_t<true>
                                       : step_kernel_t<false>,
                              s));
      }
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    return ge;
  };
  // B: one persistent kernel of `per_sm` blocks of `threads` an SM.
  auto graph_b = [&](int threads, int per_sm) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(x, x0, sh.hidden * 4, cudaMemcpyDeviceToDevice, st));
    CK(cudaMemsetAsync(count, 0, 4, st));
    persistent_kernel<<<sms * per_sm, threads, kSmem, st>>>(
        d_steps, (uint32_t)steps.size(), count);
    CK(cudaGetLastError());
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    return ge;
  };

  const double floor_ms = bytes / (copy_gbs * 1e9) * 1e3;
  printf(
      "%s shape, %d tiny steps a layer: %.2f GB of weights, %zu steps, %d SMs, "
      "copy %.0f GB/s, "
      "floor %.3f ms\n",
      big ? "8B" : "1B", stubs, bytes / 1e9, steps.size(), sms, copy_gbs,
      floor_ms);
  cudaGraphExec_t a = graph_a(true), a_plain = graph_a(false);
  float ms_a = time_graph(a);
  std::vector<float> ref = logits_now();
  float ms_a_plain = time_graph(a_plain);
  printf("%-44s %8.3f ms  (%.2fx floor)\n", "A: kernel a step, PDL", ms_a,
         ms_a / floor_ms);
  printf("%-44s %8.3f ms  (%.2fx floor)\n", "A: kernel a step, no overlap",
         ms_a_plain, ms_a_plain / floor_ms);
  // A variant's time, and its logits against A's (relative L2).
  auto report = [&](const char *name, float ms) {
    std::vector<float> got = logits_now();
    double d = 0, r = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      d += (double)(got[i] - ref[i]) * (got[i] - ref[i]);
      r += (double)ref[i] * ref[i];
    }
    printf("%-44s %8.3f ms  (%.2fx floor)  logits vs A: %.1e rel. L2\n", name,
           ms, ms / floor_ms, std::sqrt(d / (r > 0 ? r : 1)));
  };
  for (uint32_t budget : {16u << 10, 32u << 10, 64u << 10, 128u << 10}) {
    if (!strstr(which, "A2")) break;
    cudaGraphExec_t a2 = graph_a(true, true, budget);
    float ms_a2 = time_graph(a2);
    char name[64];
    snprintf(name, sizeof(name), "A2: + rows via TMA, %u KiB a block",
             budget >> 10);
    report(name, ms_a2);
    CK(cudaGraphExecDestroy(a2));
  }
  // P: A with each layer's first tiny step (attention's place) prefetching
  // the first MiB of the layer's gate and up matrices into L2.
  for (uint32_t mib : {4u, 8u, 16u, 24u, 32u}) {
    if (!strchr(which, 'P') || stubs == 0) break;
    for (int early = 0; early < 2; ++early) {
      std::vector<Step> chain = steps;
      for (size_t i = 0; i + 3 < chain.size(); ++i) {
        if (chain[i].kind != STUB || chain[i + 1].kind != ADD) continue;
        const Step &gu =
            chain[i + 2].kind == GATE_UP ? chain[i + 2] : chain[i + 3];
        if (gu.kind != GATE_UP) continue;
        const uint32_t matrix = gu.rows * gu.cols * 2;
        chain[i].pf0 = gu.w;
        chain[i].pf1 = gu.w2;
        chain[i].pf_bytes = std::min(matrix, (mib << 20) / 2);
        chain[i].pf_early = early;
      }
      cudaGraphExec_t pg = graph_a(true, false, 0, &chain);
      float ms_p = time_graph(pg);
      char name[64];
      snprintf(name, sizeof(name), "P: A + %u MiB of gate/up to L2%s", mib,
               early ? " (before wait)" : "");
      report(name, ms_p);
      CK(cudaGraphExecDestroy(pg));
    }
  }
  // A variant's graph timed beside A in each of `rounds` rounds; the label
  // gets A's time of the round.
  auto beside_a = [&](const char *label, int rounds, auto make_graph) {
    for (int round = 0; round < rounds; ++round) {
      cudaGraphExec_t g = make_graph();
      float ms_a2 = time_graph(a);
      float ms = time_graph(g);
      char name[96];
      snprintf(name, sizeof(name), "%s (A: %.3f)", label, ms_a2);
      report(name, ms);
      CK(cudaGraphExecDestroy(g));
    }
  };
  // H: A with a head start (step_kernel_h); tiny steps trigger first too.
  // (A run on 2026-12-04 also set the tiny steps' kernel to carveout 100,
  // which slowed T; it no longer does.)
  CK(cudaFuncSetAttribute(step_kernel_h,
                          cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  CK(cudaFuncSetAttribute(
      step_kernel_h, cudaFuncAttributeMaxDynamicSharedMemorySize, 113 * 1024));
  // The chain as a graph with programmatic dependent launch: tiny steps by
  // step_kernel_t (triggering first when early_stub), each product step
  // by product(cfg, s, its index), which launches it.
  auto graph_pdl = [&](bool early_stub, auto product) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(x, x0, sh.hidden * 4, cudaMemcpyDeviceToDevice, st));
    for (size_t si = 0; si < steps.size(); ++si) {
      Step s = steps[si];
      cudaLaunchConfig_t cfg = {};
      cfg.stream = st;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      if (s.kind == STUB) {
        cfg.gridDim = dim3((s.rows + 255) / 256);
        cfg.blockDim = dim3(256);
        CK(cudaLaunchKernelEx(
            &cfg, early_stub ? step_kernel_t<true> : step_kernel_t<false>, s));
        continue;
      }
      product(cfg, s, si);
    }
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    return ge;
  };
  auto graph_h = [&](uint32_t hs_max) {
    return graph_pdl(true, [&](cudaLaunchConfig_t &cfg, Step &s, size_t) {
      // Both halves of an SM: 2 x (head start + x) within 227 KiB.
      const uint32_t xb = s.cols * 4;
      uint32_t hs = std::min(hs_max, (227u * 1024 / 2 - 1024 - xb)) & ~127u;
      cfg.gridDim = dim3(sms);
      cfg.blockDim = dim3(kHWarps * 32);
      cfg.dynamicSmemBytes = hs + xb;
      CK(cudaLaunchKernelEx(&cfg, step_kernel_h, s, hs));
    });
  };
  // H2: S rounds a warp, S as large as 2 blocks an SM allow (at most s_max).
  auto h2_kernel = [&](int S) -> const void * {
    return S == 1   ? (const void *)step_kernel_h2<1>
           : S == 2 ? (const void *)step_kernel_h2<2>
           : S == 3 ? (const void *)step_kernel_h2<3>
                    : (const void *)step_kernel_h2<4>;
  };
  for (int S = 1; S <= 4; ++S) {
    CK(cudaFuncSetAttribute(
        h2_kernel(S), cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    CK(cudaFuncSetAttribute(
        h2_kernel(S), cudaFuncAttributeMaxDynamicSharedMemorySize, 113 * 1024));
  }
  unsigned long long *tl = nullptr;  // H2's timeline: 3 words a block a step
  CK(cudaMalloc(&tl, steps.size() * sms * 3 * 8));
  // min_mb: products of fewer MB run as A's (mixed chains).
  auto graph_h2 = [&](int s_max, bool early_stub, bool timeline = false,
                      bool late = false, double min_mb = 0) {
    return graph_pdl(
        early_stub, [&](cudaLaunchConfig_t &cfg, Step &s, size_t si) {
          const double mb =
              (double)s.rows * s.cols * 2 * (s.kind == GATE_UP ? 2 : 1) / 1e6;
          if (mb < min_mb) {
            const uint32_t block = s.kind == GATE_UP ? 64 : 256;
            cfg.gridDim = dim3((tasks_of(s) + block / 32 - 1) / (block / 32));
            cfg.blockDim = dim3(block);
            CK(cudaLaunchKernelEx(&cfg, step_kernel_t<false>, s));
            return;
          }
          if (timeline) s.ts = tl + si * sms * 3;
          s.late = late;
          const uint32_t xb = s.cols * 4, stage = kHWarps * 32 * kHU * 16;
          int S = (int)((227u * 1024 / 2 - 1024 - xb) / stage);
          S = std::max(1, std::min(S, s_max));
          cfg.gridDim = dim3(sms);
          cfg.blockDim = dim3(kHWarps * 32);
          cfg.dynamicSmemBytes = S * stage + xb;
          void *args[] = {&s};
          CK(cudaLaunchKernelExC(&cfg, h2_kernel(S), args));
        });
  };
  // The timeline of one H2 token (2 rounds, no early stubs; LAB_H2_LATE=1:
  // none before the wait): per product step, us from the token's first block
  // start: first and last block start, first and last end of wait, last end;
  // and the step's bytes.
  if (strchr(which, 'Y')) {
    CK(cudaMemset(tl, 0, steps.size() * sms * 3 * 8));
    cudaGraphExec_t g =
        graph_h2(2, false, true, getenv("LAB_H2_LATE") != nullptr);
    time_graph(g);
    std::vector<unsigned long long> h(steps.size() * sms * 3);
    CK(cudaMemcpy(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind == STUB) continue;
      for (int b = 0; b < sms; ++b) t0 = std::min(t0, h[(i * sms + b) * 3]);
      break;
    }
    printf(
        "H2 timeline (us): step kind MB | start first..last | waited "
        "first..last | end last | "
        "end - previous end\n");
    double prev_end = 0;
    for (size_t i = 0; i < steps.size() && i < 12; ++i) {
      const Step &s = steps[i];
      if (s.kind == STUB) continue;
      double a = 1e30, b = 0, c = 1e30, d = 0, e = 0;
      for (int k = 0; k < sms; ++k) {
        const unsigned long long *r = &h[(i * sms + k) * 3];
        a = std::min(a, (r[0] - t0) / 1e3), b = std::max(b, (r[0] - t0) / 1e3);
        c = std::min(c, (r[1] - t0) / 1e3), d = std::max(d, (r[1] - t0) / 1e3);
        e = std::max(e, (r[2] - t0) / 1e3);
      }
      const double mb =
          (double)s.rows * s.cols * 2 * (s.kind == GATE_UP ? 2 : 1) / 1e6;
      printf("  %2zu %d %6.1f | %7.2f..%7.2f | %7.2f..%7.2f | %7.2f | %6.2f\n",
             i, s.kind, mb, a, b, c, d, e, e - prev_end);
      prev_end = e;
    }
    CK(cudaGraphExecDestroy(g));
  }
  if (strchr(which, 'J')) {
    for (int S : {2, 3}) {
      for (int e = 0; e < (getenv("LAB_H2_EARLY") ? 2 : 1); ++e) {
        char label[64];
        snprintf(label, sizeof(label), "H2: %d rounds a warp%s", S,
                 e ? ", stubs first" : "");
        beside_a(label, 2, [&] { return graph_h2(S, e); });
      }
    }
    beside_a("H2: 2 rounds a warp, none before the wait", 2,
             [&] { return graph_h2(2, false, false, true); });
    for (double mb : {20.0, 40.0, 100.0}) {
      char label[64];
      snprintf(label, sizeof(label), "H2 for products of %.0f MB up, A below",
               mb);
      beside_a(label, 2, [&] { return graph_h2(2, false, false, false, mb); });
    }
  }
  if (strchr(which, 'H')) {
    for (uint32_t kib : {0u, 32u, 64u, 96u}) {
      char label[64];
      snprintf(label, sizeof(label), "H: head start %u KiB", kib);
      beside_a(label, 2, [&] { return graph_h(kib << 10); });
    }
  }
  // W: A with every product's grid one wave, warps looping over tasks.
  if (strchr(which, 'W')) {
    beside_a("W: A, one-wave grids", 3,
             [&] { return graph_a(true, false, 0, nullptr, false, true); });
  }
  // T: A with each kernel's dependents triggered before its wait.
  if (strchr(which, 'T')) {
    beside_a("T: A, dependents triggered first", 3,
             [&] { return graph_a(true, false, 0, nullptr, true); });
  }
  // F: the FFN in one launch, C intermediate rows a block.
  for (uint32_t c : {8u, 16u, 32u, 64u}) {
    if (!strchr(which, 'F') || (sh.hidden != 2048 && sh.hidden != 4096)) break;
    std::vector<Step> chain = fsteps;
    for (Step &f : chain) {
      if (f.kind == FFN) f.splits = c;
    }
    char label[64];
    snprintf(label, sizeof(label), "F: FFN one launch, %u rows a block", c);
    beside_a(label, 2, [&] { return graph_a(true, false, 0, &chain); });
  }
  struct Cfg {
    int threads, per_sm;
  };
  CK(cudaFuncSetAttribute(persistent_kernel,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  for (Cfg c :
       {Cfg{256, 0}, Cfg{512, 0}, Cfg{256, 1}, Cfg{256, 2}, Cfg{512, 1}}) {
    if (!strchr(which, 'B')) break;
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, persistent_kernel,
                                                     c.threads, kSmem));
    if (occ == 0) continue;
    int per_sm = c.per_sm == 0 ? occ : (c.per_sm < occ ? c.per_sm : occ);
    cudaGraphExec_t b = graph_b(c.threads, per_sm);
    float ms_b = time_graph(b);
    char name[64];
    snprintf(name, sizeof(name), "B: persistent, %d x %d threads an SM", per_sm,
             c.threads);
    report(name, ms_b);
    CK(cudaGraphExecDestroy(b));
  }
  if (strchr(which, 'C'))
    run_c(steps, sms, st, x, x0, sh.hidden, time_graph, report);
  if (strchr(which, 'Q'))
    run_q(steps, sms, st, x, x0, sh.hidden, time_graph, report);
  if (strchr(which, 'L'))
    run_l(steps, sms, st, x0, sh.hidden, time_graph, report);
  return 0;
}
