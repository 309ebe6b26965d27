// Matrix-vector product variants on BF16 weights, timed side by side on the
// decode shapes (a lab for issue 13, not part of the runtime):
//   nvcc -O3 -arch=sm_90 -o matvec_lab tools/lab/matvec_lab.cu && ./matvec_lab
// Each case replays a CUDA graph of 64 launches over copies of the matrix
// that together exceed L2, so every launch reads HBM; prints GB/s.
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdio.h>
#include <vector>

#include "lab_dot.cuh"

#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

// R rows per warp, U loads per lane in flight per row, W warps per block.
template <int R, int U>
__global__ void mv(float *out, const __nv_bfloat16 *w, const float *x,
                   uint32_t rows, uint32_t cols) {
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t row0 = (blockIdx.x * (blockDim.x / 32) + warp) * R;
  if (row0 >= rows) return;
  const uint32_t n4 = cols / 8;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  const uint4 *base = reinterpret_cast<const uint4 *>(w) + (size_t)row0 * n4;
  for (uint32_t i0 = lane; i0 < n4; i0 += 32 * U) {
    uint4 p[R][U];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < U; ++u) {
        uint32_t i = i0 + 32 * u;
        p[r][u] = (i < n4 && row0 + r < rows) ? __ldg(base + (size_t)r * n4 + i)
                                              : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      uint32_t i = i0 + 32 * u;
      if (i < n4) {
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] += dot8(p[r][u], x + 8 * (size_t)i);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    for (int o = 16; o > 0; o >>= 1)
      acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
    if (lane == 0 && row0 + r < rows) out[row0 + r] = acc[r];
  }
}

typedef void (*kern)(float *, const __nv_bfloat16 *, const float *, uint32_t,
                     uint32_t);
struct Variant {
  const char *name;
  kern k;
  int rows_per_warp, block;
};

int main() {
  Variant vs[] = {
      {"1 row/warp, U4, 256", mv<1, 4>, 1, 256},
      {"1 row/warp, U8, 256", mv<1, 8>, 1, 256},
      {"1 row/warp, U4, 128", mv<1, 4>, 1, 128},
      {"2 rows/warp, U4, 256", mv<2, 4>, 2, 256},
      {"2 rows/warp, U2, 256", mv<2, 2>, 2, 256},
      {"4 rows/warp, U2, 128", mv<4, 2>, 4, 128},
      {"4 rows/warp, U2, 256", mv<4, 2>, 4, 256},
  };
  struct Shape {
    const char *name;
    uint32_t rows, cols;
  } shapes[] = {
      {"1B qkv 3072x2048", 3072, 2048},
      {"1B o 2048x2048", 2048, 2048},
      {"1B gate+up 16384x2048", 16384, 2048},
      {"1B down 2048x8192", 2048, 8192},
      {"1B lm_head 128256x2048", 128256, 2048},
      {"8B qkv 6144x4096", 6144, 4096},
      {"8B o 4096x4096", 4096, 4096},
      {"8B gate+up 28672x4096", 28672, 4096},
      {"8B down 4096x14336", 4096, 14336},
  };
  const int kLaunches = 64;
  printf("%-24s", "shape \\ GB/s");
  for (auto &v : vs) printf(" %22s", v.name);
  printf("\n");
  for (auto &s : shapes) {
    size_t bytes = (size_t)s.rows * s.cols * 2;
    int copies = (int)((400u << 20) / bytes) + 1;
    if (copies > kLaunches) copies = kLaunches;
    std::vector<__nv_bfloat16 *> w(copies);
    for (auto &p : w) {
      CK(cudaMalloc(&p, bytes));
      CK(cudaMemset(p, 0x3c, bytes));
    }
    float *x, *out;
    CK(cudaMalloc(&x, s.cols * 4));
    CK(cudaMemset(x, 0, s.cols * 4));
    CK(cudaMalloc(&out, s.rows * 4));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    printf("%-24s", s.name);
    for (auto &v : vs) {
      uint32_t rows_per_block = v.block / 32 * v.rows_per_warp;
      uint32_t grid = (s.rows + rows_per_block - 1) / rows_per_block;
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int l = 0; l < kLaunches; ++l) {
        v.k<<<grid, v.block, 0, st>>>(out, w[l % copies], x, s.rows, s.cols);
      }
      CK(cudaStreamEndCapture(st, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      float best = 1e30f;
      for (int rep = 0; rep < 5; ++rep) {
        cudaEventRecord(e0, st);
        cudaGraphLaunch(ge, st);
        cudaEventRecord(e1, st);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
      }
      double us = best * 1e3 / kLaunches;
      printf(" %14.0f (%5.1fus)", bytes / (us * 1e-6) / 1e9, us);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    }
    printf("\n");
    for (auto &p : w) cudaFree(p);
    cudaFree(x);
    cudaFree(out);
    cudaStreamDestroy(st);
  }
  return 0;
}
