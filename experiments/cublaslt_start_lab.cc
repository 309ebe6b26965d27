// Where a process's first cuBLASLt prompt spends its 65-80 ms (a lab for
// issue 13, not part of the runtime):
//   nvcc -O2 -o cublaslt_start_lab experiments/cublaslt_start_lab.cc -lcuda
//   -ldl
//   ./cublaslt_start_lab [M,M,...]
//   ./cublaslt_start_lab bucket
// Times, in one process, as Atlas uses cuBLASLt (dlopen'd; its own CUDA
// runtime on the driver's primary context): the library's load, its
// handle, then for each prompt length M and each product of the Llama 1B
// shape (BF16 weights n x k, f32 out) the heuristic's choice, the first
// product and a second one.
// `bucket`: whether one algorithm can serve a range of prompt lengths: for
// each M and product, a warm heuristic query and cublasLtMatmulAlgoCheck
// timed, and the product's time (mean of 50) with the heuristic's choice for
// M itself against its choice for M rounded up to a power of two.
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

static double now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#define CU(x)                                                      \
  do {                                                             \
    CUresult r_ = (x);                                             \
    if (r_ != CUDA_SUCCESS) {                                      \
      printf("%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, r_); \
      exit(1);                                                     \
    }                                                              \
  } while (0)
#define LT(x)                                                      \
  do {                                                             \
    cublasStatus_t s_ = (x);                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                             \
      printf("%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, s_); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

#define SYM(name) decltype(&name) p_##name = (decltype(&name))dlsym(lib, #name)

int main(int argc, char **argv) {
  std::vector<long> ms_list;
  const char *list = argc > 1 ? argv[1] : "200,200,17,1000,512";
  for (const char *p = list; *p && strcmp(list, "bucket") != 0;) {
    ms_list.push_back(strtol(p, (char **)&p, 10));
    if (*p == ',') ++p;
  }
  double t = now_ms();
  CU(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  printf("%-44s %8.2f ms\n", "driver: init, primary context", now_ms() - t);
  t = now_ms();
  void *lib =
      dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib)
    lib = dlopen("/usr/local/cuda/lib64/libcublasLt.so.13",
                 RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  printf("%-44s %8.2f ms\n", "dlopen libcublasLt", now_ms() - t);
  SYM(cublasLtCreate);
  SYM(cublasLtMatmulDescCreate);
  SYM(cublasLtMatmulDescSetAttribute);
  SYM(cublasLtMatrixLayoutCreate);
  SYM(cublasLtMatrixLayoutDestroy);
  SYM(cublasLtMatmulPreferenceCreate);
  SYM(cublasLtMatmulPreferenceSetAttribute);
  SYM(cublasLtMatmulAlgoGetHeuristic);
  SYM(cublasLtMatmul);
  t = now_ms();
  cublasLtHandle_t h;
  LT(p_cublasLtCreate(&h));
  cublasLtMatmulDesc_t desc;
  LT(p_cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT(p_cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                      sizeof(ta)));
  LT(p_cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                      sizeof(tb)));
  printf("%-44s %8.2f ms\n", "cublasLtCreate, descriptor", now_ms() - t);

  SYM(cublasLtMatmulAlgoCheck);
  struct Shape {
    const char *name;
    long n, k;
  } shapes[] = {{"qkv", 3072, 2048},
                {"o", 2048, 2048},
                {"gate/up", 8192, 2048},
                {"down", 2048, 8192},
                {"lm_head", 128256, 2048}};
  const long max_m = 2048;
  CUdeviceptr w, x, d, ws;
  CU(cuMemAlloc(&w, 128256L * 2048 * 2));
  CU(cuMemAlloc(&x, max_m * 8192 * 2));
  CU(cuMemAlloc(&d, max_m * 128256L * 4));
  const size_t ws_bytes = 32u << 20;
  CU(cuMemAlloc(&ws, ws_bytes));
  CU(cuMemsetD8(w, 0, 128256L * 2048 * 2));
  CU(cuMemsetD8(x, 0, max_m * 8192 * 2));
  CU(cuCtxSynchronize());
  CUstream st;
  CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  const float one = 1.0f, zero = 0.0f;
  if (argc > 1 && strcmp(argv[1], "bucket") == 0) {
    const uint64_t wsb = ws_bytes;
    auto layouts = [&](long m, const Shape &s, cublasLtMatrixLayout_t *l) {
      LT(p_cublasLtMatrixLayoutCreate(&l[0], CUDA_R_16BF, s.k, s.n, s.k));
      LT(p_cublasLtMatrixLayoutCreate(&l[1], CUDA_R_16BF, s.k, m, s.k));
      LT(p_cublasLtMatrixLayoutCreate(&l[2], CUDA_R_32F, s.n, m, s.n));
    };
    auto choose = [&](long m, const Shape &s,
                      cublasLtMatmulHeuristicResult_t *res) {
      cublasLtMatrixLayout_t l[3];
      layouts(m, s, l);
      cublasLtMatmulPreference_t pref;
      LT(p_cublasLtMatmulPreferenceCreate(&pref));
      LT(p_cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
      int got = 0;
      double t0 = now_ms();
      LT(p_cublasLtMatmulAlgoGetHeuristic(h, desc, l[0], l[1], l[2], l[2], pref,
                                          1, res, &got));
      return now_ms() - t0;
    };
    auto run = [&](long m, const Shape &s, const cublasLtMatmulAlgo_t *algo,
                   double *check_ms) {
      cublasLtMatrixLayout_t l[3];
      layouts(m, s, l);
      cublasLtMatmulHeuristicResult_t chk;
      double t0 = now_ms();
      cublasStatus_t ok = p_cublasLtMatmulAlgoCheck(h, desc, l[0], l[1], l[2],
                                                    l[2], algo, &chk);
      *check_ms = now_ms() - t0;
      if (ok != CUBLAS_STATUS_SUCCESS) return -1.0;
      for (int r = 0; r < 3; ++r) {
        LT(p_cublasLtMatmul(h, desc, &one, (void *)w, l[0], (void *)x, l[1],
                            &zero, (void *)d, l[2], (void *)d, l[2], algo,
                            (void *)ws, ws_bytes, st));
      }
      CU(cuStreamSynchronize(st));
      t0 = now_ms();
      for (int r = 0; r < 50; ++r) {
        LT(p_cublasLtMatmul(h, desc, &one, (void *)w, l[0], (void *)x, l[1],
                            &zero, (void *)d, l[2], (void *)d, l[2], algo,
                            (void *)ws, ws_bytes, st));
      }
      CU(cuStreamSynchronize(st));
      return (now_ms() - t0) / 50;
    };
    double sum_exact = 0, sum_bucket = 0;
    for (long m :
         {17L, 33L, 100L, 129L, 200L, 300L, 500L, 700L, 1000L, 1500L, 2000L}) {
      long b = 16;
      while (b < m) b *= 2;
      for (const Shape &s : shapes) {
        cublasLtMatmulHeuristicResult_t re, rb;
        choose(m, s, &re);
        const double th = choose(m, s, &re);  // warm
        choose(b, s, &rb);
        double tc = 0, tc2 = 0;
        const double te = run(m, s, &re.algo, &tc);
        const double tb = run(m, s, &rb.algo, &tc2);
        printf(
            "M %5ld (bucket %5ld) %-8s heuristic %.3f ms, check %.3f ms; exact "
            "%.4f ms, "
            "bucket's %s%.4f ms (%.3fx)\n",
            m, b, s.name, th, tc2, te, tb < 0 ? "REFUSED " : "", tb, tb / te);
        sum_exact += te;
        sum_bucket += tb < 0 ? te : tb;
      }
    }
    printf("all products: exact %.3f ms, bucket's %.3f ms (%.3fx)\n", sum_exact,
           sum_bucket, sum_bucket / sum_exact);
    return 0;
  }
  double total = 0;
  for (long m : ms_list) {
    double sum_h = 0, sum_1 = 0, sum_2 = 0;
    for (const Shape &s : shapes) {
      if (m > max_m) continue;
      cublasLtMatrixLayout_t la, lb, ld;
      LT(p_cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.k, s.n, s.k));
      LT(p_cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.k, m, s.k));
      LT(p_cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, s.n, m, s.n));
      cublasLtMatmulPreference_t pref;
      LT(p_cublasLtMatmulPreferenceCreate(&pref));
      uint64_t wsb = ws_bytes;
      LT(p_cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
      cublasLtMatmulHeuristicResult_t res;
      int got = 0;
      t = now_ms();
      LT(p_cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, ld, ld, pref, 1,
                                          &res, &got));
      const double th = now_ms() - t;
      double tr[2];
      for (int r = 0; r < 2; ++r) {
        t = now_ms();
        LT(p_cublasLtMatmul(h, desc, &one, (void *)w, la, (void *)x, lb, &zero,
                            (void *)d, ld, (void *)d, ld, &res.algo, (void *)ws,
                            ws_bytes, st));
        CU(cuStreamSynchronize(st));
        tr[r] = now_ms() - t;
      }
      printf("  M %5ld %-8s heuristic %7.2f  first %7.2f  second %6.2f ms\n", m,
             s.name, th, tr[0], tr[1]);
      sum_h += th;
      sum_1 += tr[0];
      sum_2 += tr[1];
    }
    printf(
        "M %5ld all five: heuristic %.2f, first products %.2f, second %.2f "
        "ms\n",
        m, sum_h, sum_1, sum_2);
    total += sum_h + sum_1;
  }
  printf("%-44s %8.2f ms\n", "every heuristic and first product", total);
  return 0;
}
