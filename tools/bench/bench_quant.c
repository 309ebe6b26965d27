// Quantized matrix-vector products (module "quant") at a model's shapes:
// the time of one product and the bytes it reads per second, beside a
// device-to-device copy of as many bytes in the same run (the memory's
// bandwidth, read plus write). Random bytes as weights: the time does not
// depend on their values.
//
//   bench_quant [--backend cuda|host] [--reps N]
// Prints one line per format and shape.
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/quant_kernels.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/tools/bench/bench_device.h"
#include "atlas/tools/bench/bench_stats.h"

typedef struct shape {
  const char *what;
  uint32_t rows, cols;
} shape;

typedef struct format {
  const char *name;
  uint32_t layout, bits, group_k, block_n, flags;
  int scale_bytes;  // per scale element
  bool zeros;
} format;

static const shape kShapes[] = {
    {"8B q/o 4096x4096", 4096, 4096},
    {"8B gate/up 14336x4096", 14336, 4096},
    {"8B down 4096x14336", 4096, 14336},
};

static const format kFormats[] = {
    {"fp8 block 128x128", ATLAS_QUANT_LAYOUT_FP8, 8, 128, 128,
     ATLAS_QUANT_SCALE_F32, 4, false},
    {"fp8 channel (ct)", ATLAS_QUANT_LAYOUT_FP8, 8, 0, 1,
     ATLAS_QUANT_SCALE_BF16, 2, false},
    {"ct int4 g128 sym", ATLAS_QUANT_LAYOUT_INT_ROWS, 4, 128, 1,
     ATLAS_QUANT_SCALE_BF16, 2, false},
    {"ct int8 channel", ATLAS_QUANT_LAYOUT_INT_ROWS, 8, 0, 1,
     ATLAS_QUANT_SCALE_BF16, 2, false},
    {"gptq int4 g128", ATLAS_QUANT_LAYOUT_GPTQ, 4, 128, 1,
     ATLAS_QUANT_SCALE_F16 | ATLAS_QUANT_FLAG_ZEROS |
         (1u << ATLAS_QUANT_FLAG_ZERO_OFFSET_SHIFT),
     2, true},
    {"awq int4 g128", ATLAS_QUANT_LAYOUT_AWQ, 4, 128, 1,
     ATLAS_QUANT_SCALE_F16 | ATLAS_QUANT_FLAG_ZEROS, 2, true},
    {"gguf Q8_0", ATLAS_QUANT_LAYOUT_GGUF_Q8_0, 8, 0, 0, 0, 0, false},
    {"gguf Q4_K", ATLAS_QUANT_LAYOUT_GGUF_Q4_K, 4, 0, 0, 0, 0, false},
    {"gguf Q6_K", ATLAS_QUANT_LAYOUT_GGUF_Q6_K, 6, 0, 0, 0, 0, false},
};

static int check(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench_quant: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

static int run_one(atlas_backend *b, const atlas_kernel *k, const shape *s,
                   const format *f, int reps) {
  const uint32_t ppw = 32 / (f->bits == 6 ? 8 : f->bits);
  const uint32_t gk = f->group_k ? f->group_k : s->cols;
  const size_t groups = (s->cols + gk - 1) / gk;
  size_t w_bytes, scale_count, zero_bytes = 0;
  if (f->layout >= ATLAS_QUANT_LAYOUT_GGUF_Q8_0) {
    w_bytes = (size_t)s->rows * (s->cols / atlas_qd_gguf_block(f->layout)) *
              atlas_qd_gguf_bytes(f->layout);
    scale_count = 0;
  } else if (f->layout == ATLAS_QUANT_LAYOUT_FP8) {
    w_bytes = (size_t)s->rows * s->cols;
    const uint32_t bn = f->block_n ? f->block_n : s->rows;
    scale_count = (size_t)((s->rows + bn - 1) / bn) * groups;
  } else {
    w_bytes = (size_t)s->rows * s->cols / ppw * 4;
    scale_count = (size_t)s->rows * groups;
    if (f->zeros) zero_bytes = groups * ((s->rows + ppw - 1) / ppw) * 4;
  }
  const size_t bytes = w_bytes + scale_count * f->scale_bytes + zero_bytes;
  int err = 0;
  void *w = atlas_bench_device_random(b, w_bytes, 1, &err);
  void *sc =
      atlas_bench_device_random(b, scale_count * f->scale_bytes, 2, &err);
  void *z = f->zeros ? atlas_bench_device_random(b, zero_bytes, 3, &err) : NULL;
  void *x = atlas_bench_device_random(b, (size_t)s->cols * 4, 4, &err);
  void *out = NULL, *copy = NULL;
  err |= check(atlas_backend_alloc(b, (size_t)s->rows * 4, &out), "alloc");
  err |= check(atlas_backend_alloc(b, bytes, &copy), "alloc");
  uint32_t rows = s->rows, cols = s->cols, layout = f->layout, bits = f->bits,
           group_k = f->group_k, block_n = f->block_n, flags = f->flags,
           accumulate = 0;
  void *g_idx = NULL;
  void *args[] = {&out,     &x,       &w,     &sc,        &z,
                  &g_idx,   &rows,    &cols,  &layout,    &bits,
                  &group_k, &block_n, &flags, &accumulate};
  atlas_launch_config c;
  memset(&c, 0, sizeof(c));
  c.grid.x = (rows + ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK - 1) /
             ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK;
  c.grid.y = c.grid.z = 1;
  c.block.x = ATLAS_QUANT_MATVEC_BLOCK;
  c.block.y = c.block.z = 1;
  double *t = calloc((size_t)reps, sizeof(double));
  double *tc = calloc((size_t)reps, sizeof(double));
  for (int r = -2; !err && t && tc && r < reps; ++r) {
    double t0 = atlas_bench_now_ms();
    err |= check(atlas_backend_launch(b, k, &c, args), "launch");
    err |= check(atlas_backend_synchronize(b), "synchronize");
    double t1 = atlas_bench_now_ms();
    err |= check(atlas_backend_d2d(b, copy, w, w_bytes), "d2d");
    err |= check(atlas_backend_synchronize(b), "synchronize");
    double t2 = atlas_bench_now_ms();
    if (r >= 0) t[r] = t1 - t0, tc[r] = t2 - t1;
  }
  if (!err && t && tc) {
    double ms = atlas_bench_median(t, (size_t)reps);
    double cms = atlas_bench_median(tc, (size_t)reps);
    printf(
        "%-20s %-24s %8.3f MB %9.1f us %7.1f GB/s read | copy of the "
        "weights %7.1f GB/s (read+write)\n",
        f->name, s->what, bytes / 1e6, ms * 1e3, bytes / (ms * 1e6),
        2.0 * w_bytes / (cms * 1e6));
  }
  free(t);
  free(tc);
  void *all[] = {w, sc, z, x, out, copy};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    if (all[i] != NULL) err |= check(atlas_backend_free(b, all[i]), "free");
  }
  return err;
}

int main(int argc, char **argv) {
  const char *backend = "cuda";
  int reps = 20;
  static const struct option kOptions[] = {
      {"backend", 1, NULL, 'b'}, {"reps", 1, NULL, 'r'}, {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "", kOptions, NULL)) != -1;) {
    if (o == 'b') {
      backend = optarg;
    } else if (o == 'r') {
      reps = (int)strtol(optarg, NULL, 10);
    } else {
      fprintf(stderr, "usage: bench_quant [--backend cuda|host] [--reps N]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  const atlas_module_def *mods[1] = {&atlas_quant_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.modules = &set;
  atlas_backend *b = NULL;
  if (check(atlas_backend_factory_create(backend, &o, &b), backend)) return 1;
  const atlas_kernel *k = NULL;
  int err = check(atlas_backend_kernel_lookup(b, ATLAS_QUANT_MODULE,
                                              ATLAS_QUANT_MATVEC_KERNEL, &k),
                  "kernel");
  printf(
      "bench_quant: backend %s, median of %d launches each, wall clock "
      "around launch + synchronize\n",
      backend, reps);
  for (size_t s = 0; !err && s < sizeof(kShapes) / sizeof(kShapes[0]); ++s) {
    for (size_t f = 0; !err && f < sizeof(kFormats) / sizeof(kFormats[0]);
         ++f) {
      err |= run_one(b, k, &kShapes[s], &kFormats[f], reps);
    }
  }
  err |= check(atlas_backend_destroy(b), "destroy");
  return err;
}
