// `bench cuda`: the CUDA backend against the raw driver, side by side in one
// run. Each case alternates batches of the backend path and the raw path on
// the same stream and kernel (rotating which goes first), and reports medians
// and their ratio.
#define _POSIX_C_SOURCE 200809L  // clock_gettime, setenv
#include "atlas/tools/bench/bench_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "atlas/runtime/cuda/cuda_module_loader.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/tools/bench/bench_stats.h"

typedef struct bench_ctx {
  atlas_backend *b;
  const atlas_cuda_driver *cu;
  CUcontext context;
  CUstream stream;
  int rounds;
  int quick;
} bench_ctx;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double median(double *v, int n) {
  return atlas_bench_median(v, (size_t)n);
}

// Prints a failed status and frees it; returns 1 on failure.
static int failed(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench cuda: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

static int cu_failed(bench_ctx *c, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 0;
  return failed(atlas_cuda_error(c->cu, r, "%s", what), "raw driver");
}

static void row(const char *name, double backend, double raw, const char *unit,
                const char *goal) {
  if (raw > 0) {
    printf("%-36s %10.3f %-3s %10.3f %-3s %7.3fx  %s\n", name, backend, unit,
           raw, unit, backend / raw, goal);
  } else {
    printf("%-36s %10.3f %-3s %14s %8s  %s\n", name, backend, unit, "", "",
           goal);
  }
}

// ---- measuring ------------------------------------------------------------------

// One way of doing the measured operation n times and waiting for it.
typedef struct variant {
  int (*run)(bench_ctx *c, void *arg, int n);  // nonzero on failure
  void *arg;
} variant;

enum { MAX_VARIANTS = 4, WARM_UP_US = 300000 };

// Times `count` variants of an operation (variant 0: the raw driver) over
// c->rounds rounds, rotating which goes first so clock ramps and drift fall
// on all of them alike, after a warm-up of at least WARM_UP_US (an idle GPU
// starts at a low clock). out_us[v]: median microseconds per operation.
static int measure(bench_ctx *c, const variant *v, int count, int n,
                   double *out_us) {
  double *t[MAX_VARIANTS];
  for (int k = 0; k < count; ++k)
    t[k] = calloc((size_t)c->rounds, sizeof(double));
  int err = 0;
  double warm_start = now_us();
  do {
    for (int k = 0; k < count && !err; ++k) err |= v[k].run(c, v[k].arg, n);
  } while (!err && now_us() - warm_start < WARM_UP_US);
  for (int r = 0; r < c->rounds && !err; ++r) {
    for (int j = 0; j < count && !err; ++j) {
      int k = (r + j) % count;
      double t0 = now_us();
      err |= v[k].run(c, v[k].arg, n);
      t[k][r] = (now_us() - t0) / n;
    }
  }
  for (int k = 0; k < count; ++k) {
    out_us[k] = err ? 0 : median(t[k], c->rounds);
    free(t[k]);
  }
  return err;
}

// ---- launches ------------------------------------------------------------------

static const atlas_launch_config kOneThread = {
    {1, 1, 1}, {1, 1, 1}, 0, NULL, false};

static int raw_launches(bench_ctx *c, void *arg, int n) {
  CUfunction fn = (CUfunction)arg;
  for (int i = 0; i < n; ++i) {
    if (cu_failed(c,
                  c->cu->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, c->stream,
                                        NULL, NULL),
                  "cuLaunchKernel")) {
      return 1;
    }
  }
  return cu_failed(c, c->cu->cuStreamSynchronize(c->stream), "sync");
}

static int backend_launches(bench_ctx *c, void *arg, int n) {
  const atlas_kernel *k = arg;
  for (int i = 0; i < n; ++i) {
    if (failed(atlas_backend_launch(c->b, k, &kOneThread, NULL), "launch")) {
      return 1;
    }
  }
  return failed(atlas_backend_stream_synchronize(c->b, NULL), "synchronize");
}

static int backend_typed_launches(bench_ctx *c, void *arg, int n) {
  const atlas_kernel *k = arg;
  for (int i = 0; i < n; ++i) {
    if (failed(atlas_backend_launch_typed(c->b, k, &kOneThread, NULL, 0),
               "launch_typed")) {
      return 1;
    }
  }
  return failed(atlas_backend_stream_synchronize(c->b, NULL), "synchronize");
}

static int bench_launch(bench_ctx *c, const atlas_kernel *empty) {
  const int n = c->quick ? 2000 : 20000;
  variant v[3] = {{raw_launches, empty->fn},
                  {backend_launches, (void *)empty},
                  {backend_typed_launches, (void *)empty}};
  double us[3];
  if (measure(c, v, 3, n, us)) return 1;
  row("launch empty kernel", us[1], us[0], "us", "goal <= 1.03x");
  row("launch_typed empty kernel", us[2], us[0], "us", "");
  return 0;
}

// ---- graph replay --------------------------------------------------------------

enum { GRAPH_KERNELS = 10 };

static int raw_replays(bench_ctx *c, void *arg, int n) {
  CUgraphExec exec = arg;
  for (int i = 0; i < n; ++i) {
    if (cu_failed(c, c->cu->cuGraphLaunch(exec, c->stream), "cuGraphLaunch")) {
      return 1;
    }
  }
  return cu_failed(c, c->cu->cuStreamSynchronize(c->stream), "sync");
}

static int backend_replays(bench_ctx *c, void *arg, int n) {
  atlas_graph *g = arg;
  for (int i = 0; i < n; ++i) {
    if (failed(atlas_backend_launch_graph(c->b, g, NULL), "launch_graph")) {
      return 1;
    }
  }
  return failed(atlas_backend_stream_synchronize(c->b, NULL), "synchronize");
}

static int bench_graph(bench_ctx *c, const atlas_kernel *empty) {
  const int n = c->quick ? 500 : 5000;
  CUfunction fn = (CUfunction)empty->fn;
  int err = 0;
  // The backend's graph.
  atlas_graph *g = NULL;
  err |= failed(atlas_backend_begin_capture(c->b, NULL), "begin_capture");
  for (int i = 0; i < GRAPH_KERNELS && !err; ++i) {
    err |=
        failed(atlas_backend_launch(c->b, empty, &kOneThread, NULL), "launch");
  }
  if (!err)
    err |= failed(atlas_backend_end_capture(c->b, NULL, &g), "end_capture");
  // The same graph through the raw driver.
  CUgraph raw_graph = NULL;
  CUgraphExec raw_exec = NULL;
  if (!err) {
    err |= cu_failed(c,
                     c->cu->cuStreamBeginCapture(
                         c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                     "cuStreamBeginCapture");
    for (int i = 0; i < GRAPH_KERNELS && !err; ++i) {
      err |= cu_failed(
          c,
          c->cu->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, c->stream, NULL, NULL),
          "cuLaunchKernel");
    }
    err |= cu_failed(c, c->cu->cuStreamEndCapture(c->stream, &raw_graph),
                     "cuStreamEndCapture");
    if (!err) {
      err |= cu_failed(
          c, c->cu->cuGraphInstantiateWithFlags(&raw_exec, raw_graph, 0),
          "cuGraphInstantiateWithFlags");
    }
  }
  if (!err) {
    variant v[2] = {{raw_replays, raw_exec}, {backend_replays, g}};
    double us[2];
    err |= measure(c, v, 2, n, us);
    if (!err) {
      row("graph replay (10 empty kernels)", us[1], us[0], "us",
          "goal <= 1.05x");
    }
  }
  if (raw_exec) c->cu->cuGraphExecDestroy(raw_exec);
  if (raw_graph) c->cu->cuGraphDestroy(raw_graph);
  if (g) err |= failed(atlas_backend_destroy_graph(c->b, g), "destroy_graph");
  return err;
}

// ---- alloc + free ----------------------------------------------------------------

static int raw_alloc_free(bench_ctx *c, void *arg, int n) {
  size_t bytes = *(const size_t *)arg;
  for (int i = 0; i < n; ++i) {
    CUdeviceptr p = 0;
    if (cu_failed(c, c->cu->cuMemAlloc(&p, bytes), "cuMemAlloc") ||
        cu_failed(c, c->cu->cuMemFree(p), "cuMemFree")) {
      return 1;
    }
  }
  return 0;
}

static int backend_alloc_free(bench_ctx *c, void *arg, int n) {
  size_t bytes = *(const size_t *)arg;
  for (int i = 0; i < n; ++i) {
    void *p = NULL;
    if (failed(atlas_backend_alloc(c->b, bytes, &p), "alloc") ||
        failed(atlas_backend_free(c->b, p), "free")) {
      return 1;
    }
  }
  return 0;
}

static int bench_alloc(bench_ctx *c, size_t bytes, int n, const char *name) {
  if (c->quick) n = n / 10 > 0 ? n / 10 : 1;
  variant v[2] = {{raw_alloc_free, &bytes}, {backend_alloc_free, &bytes}};
  double us[2];
  if (measure(c, v, 2, n, us)) return 1;
  row(name, us[1], us[0], "us", "goal <= 1.05x");
  return 0;
}

// ---- module load -----------------------------------------------------------------

static int bench_module_load(bench_ctx *c, const atlas_module_def *module,
                             int reps, const char *name, const char *goal) {
  const atlas_module_def *mods[1] = {module};
  atlas_module_set set = {mods, 1};
  double *t = calloc((size_t)reps, sizeof(double));
  double first = 0;
  int err = 0;
  for (int r = 0; r < reps && !err; ++r) {
    atlas_module_loader loader;
    err |= failed(atlas_cuda_module_loader_make(c->cu, c->context, &loader),
                  "module loader");
    if (err) break;
    atlas_kernel_registry *reg = NULL;
    double t0 = now_us();
    err |= failed(atlas_kernel_registry_create(&set, loader, 0, &reg),
                  "loading modules");
    double t1 = now_us();
    if (!err) err |= failed(atlas_kernel_registry_release(reg), "unloading");
    t[r] = (t1 - t0) / 1000.0;
    if (r == 0) first = t[r];
  }
  if (!err) {
    char note[96];
    snprintf(note, sizeof(note), "median of %d; first %.2f ms; %s", reps, first,
             goal);
    row(name, median(t, reps), 0, "ms", note);
  }
  free(t);
  return err;
}

// ---- red-zone scan -----------------------------------------------------------------

static int bench_redzone_scan(bench_ctx *c, int device) {
  const int count = c->quick ? 1000 : 10000;
  setenv("ATLAS_REDZONE", "64", 1);  // read once, at creation
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.device = device;
  atlas_backend *rb = NULL;
  int err = failed(atlas_cuda_backend_create(&o, &rb), "red-zone backend");
  unsetenv("ATLAS_REDZONE");
  if (err) return err;
  void **ptrs = calloc((size_t)count, sizeof(void *));
  for (int i = 0; i < count && !err; ++i) {
    err |= failed(atlas_backend_alloc(rb, 4096, &ptrs[i]), "alloc");
  }
  double t[3] = {0, 0, 0};
  for (int r = 0; r < 3 && !err; ++r) {
    size_t found = 0;
    double t0 = now_us();
    err |= failed(atlas_backend_scan_redzones(rb, NULL, 0, &found), "scan");
    t[r] = (now_us() - t0) / 1000.0;
    if (!err && found != 0) {
      fprintf(stderr, "bench cuda: scan found %zu violations in clean zones\n",
              found);
      err = 1;
    }
  }
  for (int i = 0; i < count; ++i) {
    if (ptrs[i]) err |= failed(atlas_backend_free(rb, ptrs[i]), "free");
  }
  free(ptrs);
  err |= failed(atlas_backend_destroy(rb), "destroy");
  if (!err) {
    char label[96], goal[64];
    double ms = median(t, 3);
    snprintf(label, sizeof(label), "red-zone scan, %d allocations", count);
    snprintf(goal, sizeof(goal), "%.2f us per allocation", ms * 1000.0 / count);
    row(label, ms, 0, "ms", goal);
  }
  return err;
}

int atlas_bench_cuda(const atlas_bench_cuda_options *options) {
  bench_ctx c;
  memset(&c, 0, sizeof(c));
  c.rounds = options->rounds < 1 ? 1 : options->rounds;
  c.quick = options->quick ? 1 : 0;
  int device = options->device;
  // A PTX-only load must really JIT each time, not hit the disk cache.
  setenv("CUDA_CACHE_DISABLE", "1", 0);
  const atlas_module_def *mods[1] = {&atlas_contract_cuda_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.device = device;
  o.modules = &set;
  if (failed(atlas_cuda_backend_create(&o, &c.b), "creating the backend")) {
    return 1;
  }
  int err = failed(atlas_cuda_backend_raw(c.b, &c.cu, &c.context), "raw");
  c.stream = atlas_cuda_backend_raw_stream(c.b, NULL);
  const atlas_kernel *empty = NULL;
  if (!err) {
    err |= failed(atlas_backend_kernel_lookup(c.b, "contract", "empty", &empty),
                  "lookup");
  }
  if (!err) {
    char name[128] = "?";
    int version = 0, sms = 0;
    CUdevice dev = 0;
    c.cu->cuDeviceGet(&dev, device);
    c.cu->cuDeviceGetName(name, sizeof(name), dev);
    c.cu->cuDriverGetVersion(&version);
    atlas_status_free(atlas_backend_sm_count(c.b, &sms));
    printf("atlas bench cuda: %s, driver API %d.%d, %d SMs, %d rounds%s\n",
           name, version / 1000, (version % 1000) / 10, sms, c.rounds,
           c.quick ? " (quick)" : "");
    printf("%-36s %14s %14s %8s\n", "case", "backend", "raw driver", "ratio");
    err |= bench_launch(&c, empty);
  }
  if (!err) err |= bench_graph(&c, empty);
  if (!err) err |= bench_alloc(&c, 4 << 10, 2000, "alloc+free 4 KiB");
  if (!err) err |= bench_alloc(&c, 1 << 20, 1000, "alloc+free 1 MiB");
  if (!err) err |= bench_alloc(&c, 64 << 20, 200, "alloc+free 64 MiB");
  if (!err) {
    err |= bench_module_load(&c, &atlas_contract_cuda_module, 21,
                             "module set load, SASS", "goal <= 5 ms");
  }
  if (!err) {
    err |= bench_module_load(&c, &atlas_contract_ptx_cuda_module, 5,
                             "module load, PTX only (JIT)", "for comparison");
  }
  if (!err) err |= bench_redzone_scan(&c, device);
  err |= failed(atlas_backend_destroy(c.b), "destroying the backend");
  return err ? 1 : 0;
}
