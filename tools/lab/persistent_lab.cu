// Is a persistent decode kernel worth building? (a lab for issue 13, not
// part of the runtime):
//   nvcc -O3 -arch=sm_90 -o persistent_lab tools/lab/persistent_lab.cu
//   ./persistent_lab [1b|8b] [STUBS]
// The decode step's weight streaming on random BF16 weights of the Llama
// 1B / 8B shapes: per layer q/k/v (one matrix), a stand-in for attention
// (a tiny elementwise step), the output projection + residual, gate/up +
// SiLU, the down projection + residual; then the LM head. Norms, RoPE and
// real attention are left out: both variants do the same small work, so the
// difference is how the steps are joined. STUBS (default 1) is the number
// of tiny steps a layer: 0 (the output projection reads q directly), 1 (the
// attention's place), 2 (also one after the output projection, the FFN
// norm's place): what one more dependent launch costs.
//   A: one kernel a step, a CUDA graph with programmatic dependent launch,
//      each warp's first weight loads issued before griddepcontrol.wait
//      (Atlas's decode step, in miniature).
//   B: one persistent kernel, the steps separated by a grid-wide barrier
//      (an atomic counter); each warp issues its first loads of the next
//      step before it waits at the barrier.
// Prints ms a step for each, the floor (weight bytes / device copy rate),
// and the logits' relative L2 distance B vs A (atomics reorder the sums).
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "lab_dot.cuh"

#define CK(x)                                                                 \
  do {                                                                        \
    cudaError_t e_ = (x);                                                     \
    if (e_ != cudaSuccess) {                                                  \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

enum Kind { MATVEC, ADD, GATE_UP, STUB };

// One step of the chain. MATVEC: out = W in; ADD: out += W in, `splits`
// warps a row (atomics); GATE_UP: out = silu(W in) * (W2 in); STUB: out[i]
// = 0.5 * in[i], i < rows.
struct Step {
  int kind;
  const __nv_bfloat16 *w, *w2;
  const float *in;
  float *out;
  uint32_t rows, cols, splits;
};

__device__ __forceinline__ uint32_t tasks_of(const Step &s) {
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

__device__ __forceinline__ void seg_pre(const Seg &g, Pre &p, uint32_t lane, int first,
                                        int count) {
#pragma unroll
  for (int j = 0; j < kAhead; ++j) {
    if (j < first || j >= first + count) continue;
    uint32_t i = lane + 32 * (j - first);
    p.a[j] = i < g.n4 ? __ldg(g.w4 + i) : make_uint4(0, 0, 0, 0);
  }
}

__device__ __forceinline__ float seg_dot(const Seg &g, const Pre &p, uint32_t lane,
                                         int first, int count) {
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
__device__ __forceinline__ void task_segs(const Step &s, uint32_t t, Seg &a, Seg &b,
                                          const float *xin) {
  uint32_t row = s.kind == ADD ? t / s.splits : t;
  uint32_t part = s.kind == ADD ? t % s.splits : 0;
  uint32_t span = s.kind == ADD ? s.cols / s.splits : s.cols;
  a.w4 = reinterpret_cast<const uint4 *>(s.w + (size_t)row * s.cols + (size_t)part * span);
  a.x = xin + (size_t)part * span;
  a.n4 = span / 8;
  b = a;
  if (s.kind == GATE_UP) {
    b.w4 = reinterpret_cast<const uint4 *>(s.w2 + (size_t)row * s.cols);
  }
}

__device__ __forceinline__ void task_pre(const Step &s, uint32_t t, Pre &p, uint32_t lane) {
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

__device__ __forceinline__ void task_run(const Step &s, uint32_t t, const Pre &p,
                                         uint32_t lane, const float *xin) {
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

__device__ __forceinline__ void stub_run(const Step &s, uint32_t gthread, uint32_t nthreads) {
  for (uint32_t i = gthread; i < s.rows; i += nthreads) s.out[i] = 0.5f * __ldcg(s.in + i);
}

// ---- A: a kernel a step, programmatic dependent launch -------------------
__global__ void step_kernel(Step s) {
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  Pre p;
  task_pre(s, t, p, lane);
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  if (s.kind == STUB) {
    stub_run(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    return;
  }
  if (t < tasks_of(s)) task_run(s, t, p, lane, s.in);
}

// ---- A2: as A, each block's rows bulk-copied into shared memory (TMA,
// cp.async.bulk) before the wait: the whole row travels while the launch
// before finishes, with no registers held for it --------------------------
__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// Bytes of the task's weights: one segment, or gate's and up's rows.
__device__ __forceinline__ uint32_t task_bytes(const Step &s) {
  uint32_t span = s.kind == ADD ? s.cols / s.splits : s.cols;
  return (s.kind == GATE_UP ? 2u : 1u) * span * 2u;
}

__global__ void step_kernel_bulk(Step s) {
  extern __shared__ __align__(128) unsigned char wbuf[];
  __shared__ __align__(8) uint64_t mbar;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, wpb = blockDim.x / 32;
  const uint32_t t0 = blockIdx.x * wpb, t = t0 + warp;
  const bool stub = s.kind == STUB;
  const uint32_t n = stub ? 0 : tasks_of(s);
  const uint32_t tb = stub ? 0 : task_bytes(s);
  if (!stub && threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&mbar)));
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    uint32_t valid = n > t0 ? min(wpb, n - t0) : 0;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&mbar)),
                 "r"(valid * tb)
                 : "memory");
    for (uint32_t i = 0; i < valid; ++i) {
      Seg a, b;
      task_segs(s, t0 + i, a, b, s.in);
      uint32_t seg = a.n4 * 16;
      unsigned char *dst = wbuf + (size_t)i * tb;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
              "r"(smem_addr(dst)),
          "l"(a.w4), "r"(seg), "r"(smem_addr(&mbar))
          : "memory");
      if (s.kind == GATE_UP) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
                "r"(smem_addr(dst + seg)),
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
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(&mbar))
        : "memory");
  }
  if (t >= n) return;
  Seg a, b;
  task_segs(s, t, a, b, s.in);
  const uint4 *w = reinterpret_cast<const uint4 *>(wbuf + (size_t)warp * tb);
  float acc = 0.0f, acc2 = 0.0f;
  for (uint32_t i = lane; i < a.n4; i += 32) acc += dot8(w[i], a.x + 8 * (size_t)i);
  if (s.kind == GATE_UP) {
    for (uint32_t i = lane; i < a.n4; i += 32) acc2 += dot8(w[a.n4 + i], a.x + 8 * (size_t)i);
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

// ---- B: one persistent kernel, a grid barrier between steps ---------------
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t *p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

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

__global__ void persistent_kernel(const Step *steps, uint32_t n_steps, uint32_t *count) {
  const uint32_t lane = threadIdx.x % 32, wpb = blockDim.x / 32;
  const uint32_t gwarp = blockIdx.x * wpb + threadIdx.x / 32;
  const uint32_t nwarps = gridDim.x * wpb;
  extern __shared__ __align__(16) float xs[];  // the step's input vector
  Pre p;
  task_pre(steps[0], gwarp, p, lane);
  for (uint32_t k = 0; k < n_steps; ++k) {
    const Step s = steps[k];
    if (s.kind == STUB) {
      stub_run(s, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    } else {
      // L1 is not coherent within a kernel: x comes from L2 (cg) into the
      // block's shared copy, which every warp then reads.
      const float4 *in4 = reinterpret_cast<const float4 *>(s.in);
      float4 *xs4 = reinterpret_cast<float4 *>(xs);
      for (uint32_t i = threadIdx.x; i < s.cols / 4; i += blockDim.x) xs4[i] = __ldcg(in4 + i);
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

int main(int argc, char **argv) {
  const bool big = argc > 1 && strcmp(argv[1], "8b") == 0;
  const int stubs = argc > 2 ? atoi(argv[2]) : 1;
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
  std::vector<Step> steps;
  for (uint32_t l = 0; l < sh.layers; ++l) {
    steps.push_back({MATVEC, weights(qkv_rows, sh.hidden, 10 * l + 1), nullptr, x, qkv,
                     qkv_rows, sh.hidden, 1});
    if (stubs > 0) steps.push_back({STUB, nullptr, nullptr, qkv, att, sh.q, 0, 1});
    steps.push_back({ADD, weights(sh.hidden, sh.q, 10 * l + 2), nullptr,
                     stubs > 0 ? att : qkv, x, sh.hidden, sh.q, down_splits});
    if (stubs > 1) steps.push_back({STUB, nullptr, nullptr, x, scratch, sh.hidden, 0, 1});
    steps.push_back({GATE_UP, weights(sh.inter, sh.hidden, 10 * l + 3),
                     weights(sh.inter, sh.hidden, 10 * l + 4), x, h, sh.inter, sh.hidden, 1});
    steps.push_back({ADD, weights(sh.hidden, sh.inter, 10 * l + 5), nullptr, h, x,
                     sh.hidden, sh.inter, down_splits});
  }
  steps.push_back({MATVEC, weights(sh.vocab, sh.hidden, 7), nullptr, x, logits, sh.vocab,
                   sh.hidden, 1});
  CK(cudaDeviceSynchronize());
  Step *d_steps;
  CK(cudaMalloc(&d_steps, steps.size() * sizeof(Step)));
  CK(cudaMemcpy(d_steps, steps.data(), steps.size() * sizeof(Step), cudaMemcpyHostToDevice));
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
    CK(cudaMemcpy(v.data(), logits, (size_t)sh.vocab * 4, cudaMemcpyDeviceToHost));
    return v;
  };

  // A: a kernel a step (bulk: A2, rows through shared memory).
  CK(cudaFuncSetAttribute(step_kernel_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          200 * 1024));
  auto graph_a = [&](bool overlap, bool bulk = false, uint32_t budget = 64 * 1024) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(x, x0, sh.hidden * 4, cudaMemcpyDeviceToDevice, st));
    for (const Step &s : steps) {
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
      uint32_t grid = s.kind == STUB ? (s.rows + 255) / 256 : (tasks + block / 32 - 1) / (block / 32);
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
      if (bulk) {
        CK(cudaLaunchKernelEx(&cfg, step_kernel_bulk, s));
      } else {
        CK(cudaLaunchKernelEx(&cfg, step_kernel, s));
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
  printf("%s shape, %d tiny steps a layer: %.2f GB of weights, %zu steps, %d SMs, copy %.0f GB/s, "
         "floor %.3f ms\n",
         big ? "8B" : "1B", stubs, bytes / 1e9, steps.size(), sms, copy_gbs, floor_ms);
  cudaGraphExec_t a = graph_a(true), a_plain = graph_a(false);
  float ms_a = time_graph(a);
  std::vector<float> ref = logits_now();
  float ms_a_plain = time_graph(a_plain);
  printf("%-44s %8.3f ms  (%.2fx floor)\n", "A: kernel a step, PDL", ms_a, ms_a / floor_ms);
  printf("%-44s %8.3f ms  (%.2fx floor)\n", "A: kernel a step, no overlap", ms_a_plain,
         ms_a_plain / floor_ms);
  // A variant's time, and its logits against A's (relative L2).
  auto report = [&](const char *name, float ms) {
    std::vector<float> got = logits_now();
    double d = 0, r = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      d += (double)(got[i] - ref[i]) * (got[i] - ref[i]);
      r += (double)ref[i] * ref[i];
    }
    printf("%-44s %8.3f ms  (%.2fx floor)  logits vs A: %.1e rel. L2\n", name, ms,
           ms / floor_ms, std::sqrt(d / (r > 0 ? r : 1)));
  };
  for (uint32_t budget : {16u << 10, 32u << 10, 64u << 10, 128u << 10}) {
    cudaGraphExec_t a2 = graph_a(true, true, budget);
    float ms_a2 = time_graph(a2);
    char name[64];
    snprintf(name, sizeof(name), "A2: + rows via TMA, %u KiB a block", budget >> 10);
    report(name, ms_a2);
    CK(cudaGraphExecDestroy(a2));
  }
  struct Cfg {
    int threads, per_sm;
  };
  CK(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          kSmem));
  for (Cfg c : {Cfg{256, 0}, Cfg{512, 0}, Cfg{256, 1}, Cfg{256, 2}, Cfg{512, 1}}) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, persistent_kernel, c.threads, kSmem));
    if (occ == 0) continue;
    int per_sm = c.per_sm == 0 ? occ : (c.per_sm < occ ? c.per_sm : occ);
    cudaGraphExec_t b = graph_b(c.threads, per_sm);
    float ms_b = time_graph(b);
    char name[64];
    snprintf(name, sizeof(name), "B: persistent, %d x %d threads an SM", per_sm, c.threads);
    report(name, ms_b);
    CK(cudaGraphExecDestroy(b));
  }
  return 0;
}
