// Prefill attention timed on the Llama shapes (a lab for issue 13, not part
// of the runtime): the kernel the runtime launches (attention_prefill_bf16 /
// _f16: tensor cores where head_dim % 16 == 0) against the SIMT body it
// replaced, from the repository root (kernels/prefill.cu pre-included: the
// kernels themselves, and the SIMT body as a template):
//   nvcc -O3 -arch=sm_90 -I. -include kernels/prefill.cu -o attention_lab tools/lab/attention_lab.cu && ./attention_lab
// Causal prompts of n tokens at pos0 0, no window; ms per launch (CUDA
// events, mean of kReps after a warm-up) and TFLOPS counting 4 * n^2 / 2 *
// head_dim * heads. The new kernel's output is checked against the SIMT one
// first (max |new - old| / max |old|; rounding Q and P to 16 bits costs about
// 2^-8): a kernel that computes garbage is reported BROKEN, not timed, and
// the exit status is 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <random>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

// The SIMT body as it ran before the tensor-core path (grid (ceil(pairs /
// 16), n_kv), block 128).
template <typename C>
__global__ void __launch_bounds__(128)
    simt(float *out, const float *q, const C *kc, const C *vc, uint32_t n_heads,
         uint32_t n_kv, uint32_t head_dim, uint32_t pos0, uint32_t n, uint32_t window) {
  __shared__ PrefillSimtShared sh;
  attention_prefill(sh, out, q, kc, vc, n_heads, n_kv, head_dim, pos0, n, window);
}

namespace {

constexpr int kReps = 20;

struct Shape {
  const char *name;
  uint32_t heads, kv, dim;
};

template <typename C>
void (*flash_kernel())(float *, const float *, const C *, const C *, uint32_t,
                       uint32_t, uint32_t, uint32_t, uint32_t, uint32_t);
template <>
void (*flash_kernel<__nv_bfloat16>())(float *, const float *, const __nv_bfloat16 *,
                                      const __nv_bfloat16 *, uint32_t, uint32_t,
                                      uint32_t, uint32_t, uint32_t, uint32_t) {
  return attention_prefill_bf16;
}
template <>
void (*flash_kernel<__half>())(float *, const float *, const __half *, const __half *,
                               uint32_t, uint32_t, uint32_t, uint32_t, uint32_t,
                               uint32_t) {
  return attention_prefill_f16;
}

// Returns 0, 1 (an error) or 2 (the new kernel disagrees).
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
  float *q, *o_new, *o_old;
  C *k, *v;
  CK(cudaMalloc(&q, hq.size() * 4));
  CK(cudaMalloc(&o_new, hq.size() * 4));
  CK(cudaMalloc(&o_old, hq.size() * 4));
  CK(cudaMalloc(&k, hk.size() * sizeof(C)));
  CK(cudaMalloc(&v, hv.size() * sizeof(C)));
  CK(cudaMemcpy(q, hq.data(), hq.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, hk.data(), hk.size() * sizeof(C), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, hv.data(), hv.size() * sizeof(C), cudaMemcpyHostToDevice));
  CK(cudaMemset(o_new, 0xFF, hq.size() * 4));  // NaN: unwritten shows
  const uint32_t rows = sh.dim % 16 == 0 ? 64 : 16;
  dim3 g_new((pairs + rows - 1) / rows * sh.kv), g_old((pairs + 15) / 16 * sh.kv);
  auto flash = flash_kernel<C>();
  auto launch_new = [&] {
    flash<<<g_new, 128>>>(o_new, q, k, v, sh.heads, sh.kv, sh.dim, 0, n, 0);
  };
  auto launch_old = [&] {
    simt<C><<<g_old, 128>>>(o_old, q, k, v, sh.heads, sh.kv, sh.dim, 0, n, 0);
  };
  launch_new();
  launch_old();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> a(hq.size()), b(hq.size());
  CK(cudaMemcpy(a.data(), o_new, a.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), o_old, b.size() * 4, cudaMemcpyDeviceToHost));
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = fabs((double)a[i] - b[i]);
    if (!(e <= diff)) diff = e;  // NaN too
    ref = fmax(ref, fabs((double)b[i]));
  }
  const double err = diff / ref;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float ms[2] = {0, 0};
  for (int which = 0; which < 2; ++which) {
    CK(cudaEventRecord(e0));
    for (int r = 0; r < kReps; ++r) which == 0 ? launch_new() : launch_old();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[which], e0, e1));
    ms[which] /= kReps;
  }
  const double flops = 4.0 * n * n / 2.0 * sh.dim * sh.heads;
  const bool broken = !(err < 0.05);
  if (broken) {
    printf("%-4s %-8s n %5u  BROKEN: max |new - old| / max |old| = %.3g\n", type,
           sh.name, n, err);
  } else {
    printf("%-4s %-8s n %5u  new %8.4f ms %7.1f TFLOPS   simt %8.4f ms %7.1f TFLOPS"
           "   x%.1f   err %.2g\n",
           type, sh.name, n, ms[0], flops / ms[0] / 1e9, ms[1], flops / ms[1] / 1e9,
           ms[1] / ms[0], err);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(q));
  CK(cudaFree(o_new));
  CK(cudaFree(o_old));
  CK(cudaFree(k));
  CK(cudaFree(v));
  return broken ? 2 : 0;
}

}  // namespace

int main() {
  const Shape shapes[] = {{"1B d64", 32, 8, 64}, {"8B d128", 32, 8, 128}};
  std::mt19937 rng(13);
  int status = 0;
  for (const Shape &sh : shapes) {
    for (uint32_t n : {512u, 2048u}) {
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
