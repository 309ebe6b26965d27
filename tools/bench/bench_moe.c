// One mixture-of-experts FFN layer (module "moe") at Qwen3-30B-A3B's shapes
// (hidden 2048, 128 experts of 768, k = 8, BF16 weights): the decode step
// (router, per-assignment products, weighted sum) for a batch of 1 and of
// --batch tokens, against its floor (the bytes of the experts the tokens
// chose, read once, at the bandwidth a device-to-device copy reaches in the
// same run), and a prefill of --tokens tokens through the counting sort and
// the grouped products. Random bytes as weights (small, finite BF16); the
// time depends on which experts are chosen, not on the values.
//
//   bench_moe [--backend cuda|host] [--reps N] [--batch N] [--tokens N]
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/moe_kernels.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/tools/bench/bench_device.h"
#include "atlas/tools/bench/bench_stats.h"

enum { kHidden = 2048, kInter = 768, kExperts = 128, kTopK = 8 };

typedef struct moe_bench {
  atlas_backend *b;
  void *gate_up, *down, *router;            // fused BF16 weights
  void *t_gate, *t_up, *t_down;             // tables of expert addresses
  void *x, *ids, *weights, *act, *y, *out;  // activations
  void *counts, *offsets, *tiles, *rows;    // the counting sort
  void *copy;                               // the bandwidth's copy target
  uint32_t max_tokens;
} moe_bench;

static int check(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench_moe: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

static void *device_alloc(atlas_backend *b, size_t bytes, int *err) {
  void *d = NULL;
  *err |= check(atlas_backend_alloc(b, bytes, &d), "alloc");
  return d;
}

// Tables into the fused tensors: gate_up [E][2 inter][hidden] (gate rows,
// then up rows), down [E][hidden][inter].
static void *table(atlas_backend *b, const void *base, size_t stride,
                   size_t first, int *err) {
  uint64_t t[kExperts];
  for (size_t e = 0; e < kExperts; ++e) {
    t[e] = (uint64_t)(uintptr_t)((const char *)base + e * stride + first);
  }
  void *d = device_alloc(b, sizeof(t), err);
  if (!*err) *err |= check(atlas_backend_h2d(b, d, t, sizeof(t)), "h2d");
  return d;
}

static int setup(moe_bench *m, uint32_t max_tokens) {
  int err = 0;
  atlas_backend *b = m->b;
  const size_t mat = (size_t)kInter * kHidden * 2;
  m->max_tokens = max_tokens;
  m->gate_up =
      atlas_bench_device_random(b, (size_t)kExperts * 2 * mat, 1, &err);
  m->down = atlas_bench_device_random(b, (size_t)kExperts * mat, 2, &err);
  m->router =
      atlas_bench_device_random(b, (size_t)kExperts * kHidden * 2, 3, &err);
  if (err) return err;
  m->t_gate = table(b, m->gate_up, 2 * mat, 0, &err);
  m->t_up = table(b, m->gate_up, 2 * mat, mat, &err);
  m->t_down = table(b, m->down, mat, 0, &err);
  const size_t a = (size_t)max_tokens * kTopK;
  m->x =
      atlas_bench_device_random(b, (size_t)max_tokens * kHidden * 4, 4, &err);
  m->ids = device_alloc(b, a * 4, &err);
  m->weights = device_alloc(b, a * 4, &err);
  m->act = device_alloc(b, a * kInter * 4, &err);
  m->y = device_alloc(b, a * kHidden * 4, &err);
  m->out = device_alloc(b, (size_t)max_tokens * kHidden * 4, &err);
  m->counts = device_alloc(b, (size_t)kExperts * 4, &err);
  m->offsets = device_alloc(b, ((size_t)kExperts + 1) * 4, &err);
  m->tiles = device_alloc(b, ((size_t)kExperts + 1) * 4, &err);
  m->rows = device_alloc(b, a * 4, &err);
  m->copy = device_alloc(b, (size_t)kTopK * 3 * mat, &err);
  return err;
}

static int launch(atlas_backend *b, const char *name, uint32_t gx, uint32_t gy,
                  uint32_t shared, void **args) {
  const atlas_kernel *k = NULL;
  int err =
      check(atlas_backend_kernel_lookup(b, ATLAS_MOE_MODULE, name, &k), name);
  atlas_launch_config c;
  memset(&c, 0, sizeof(c));
  c.grid.x = gx, c.grid.y = gy, c.grid.z = 1;
  c.block.x = ATLAS_MOE_BLOCK, c.block.y = c.block.z = 1;
  c.shared_bytes = shared;
  if (!err) err |= check(atlas_backend_launch(b, k, &c, args), name);
  return err;
}

// One layer for n tokens: decode (per assignment) or prefill (grouped).
static int layer(moe_bench *m, uint32_t n, bool grouped) {
  atlas_backend *b = m->b;
  uint32_t t = n, e = kExperts, h = kHidden, in = kInter, k = kTopK;
  uint32_t a = n * kTopK, flags = ATLAS_MOE_NORM_TOPK, one = 1;
  void *null = NULL;
  void *router[] = {&m->ids, &m->weights, &null, &m->x, &m->router, &null,
                    &t,      &e,          &h,    &k,    &flags};
  int err = launch(b, "moe_router_bf16", n, 1, kExperts * 4, router);
  if (grouped) {
    void *count[] = {&m->counts, &m->ids, &a, &e};
    void *scatter[] = {&m->offsets, &m->tiles, &m->rows, &m->counts,
                       &m->ids,     &a,        &e};
    uint32_t gy = atlas_moe_tile_rows(a, e);
    void *gate_up[] = {&m->act,   &m->x,      &m->rows, &m->offsets,
                       &m->tiles, &m->t_gate, &m->t_up, &e,
                       &k,        &h,         &in};
    void *down[] = {&m->y,      &m->act, &m->rows, &m->offsets, &m->tiles,
                    &m->t_down, &e,      &h,       &in};
    err |= launch(b, "moe_count", (e + 7) / 8, 1, 0, count);
    err |= launch(b, "moe_scatter", (e + 7) / 8, 1, 0, scatter);
    err |= launch(b, "moe_gate_up_bf16",
                  (in + ATLAS_MOE_TILE_COLS - 1) / ATLAS_MOE_TILE_COLS, gy, 0,
                  gate_up);
    err |= launch(b, "moe_down_bf16",
                  (h + ATLAS_MOE_TILE_COLS - 1) / ATLAS_MOE_TILE_COLS, gy, 0,
                  down);
  } else {
    void *gate_up[] = {&m->act, &m->x, &m->ids, &m->t_gate, &m->t_up,
                       &a,      &k,    &h,      &in};
    void *down[] = {&m->y, &m->act, &m->ids, &m->t_down, &a, &h, &in};
    err |= launch(b, "moe_gate_up_vec_bf16", (in + 7) / 8, a, 0, gate_up);
    err |= launch(b, "moe_down_vec_bf16", (h + 7) / 8, a, 0, down);
  }
  void *combine[] = {&m->out, &m->y, &m->weights, &null, &null,
                     &t,      &k,    &h,          &one};
  err |= launch(b, "moe_combine", (n * h + 255) / 256, 1, 0, combine);
  return err;
}

// The distinct experts the last run's n tokens chose.
static uint32_t distinct_experts(moe_bench *m, uint32_t n, int *err) {
  uint32_t *ids = malloc((size_t)n * kTopK * 4);
  bool seen[kExperts] = {false};
  uint32_t count = 0;
  if (ids == NULL) {
    *err = 1;
    return 0;
  }
  *err |=
      check(atlas_backend_d2h(m->b, ids, m->ids, (size_t)n * kTopK * 4), "d2h");
  for (size_t i = 0; !*err && i < (size_t)n * kTopK; ++i) {
    if (ids[i] < kExperts && !seen[ids[i]]) seen[ids[i]] = true, ++count;
  }
  free(ids);
  return count;
}

static int run(moe_bench *m, uint32_t n, bool grouped, int reps) {
  double *t = calloc((size_t)reps, sizeof(double));
  double *tc = calloc((size_t)reps, sizeof(double));
  int err = t == NULL || tc == NULL;
  const size_t expert_bytes = (size_t)3 * kInter * kHidden * 2;
  for (int r = -2; !err && r < reps; ++r) {
    double t0 = atlas_bench_now_ms();
    err |= layer(m, n, grouped);
    err |= check(atlas_backend_synchronize(m->b), "synchronize");
    double t1 = atlas_bench_now_ms();
    // The bandwidth: a copy of k experts' weights (read + write).
    err |= check(
        atlas_backend_d2d(m->b, m->copy, m->gate_up, kTopK * expert_bytes),
        "d2d");
    err |= check(atlas_backend_synchronize(m->b), "synchronize");
    double t2 = atlas_bench_now_ms();
    if (r >= 0) t[r] = t1 - t0, tc[r] = t2 - t1;
  }
  if (!err) {
    uint32_t used = distinct_experts(m, n, &err);
    double ms = atlas_bench_median(t, (size_t)reps);
    double copy_gbs = 2.0 * (kTopK * expert_bytes) /
                      (atlas_bench_median(tc, (size_t)reps) * 1e6);
    double bytes = (double)used * expert_bytes + (double)kExperts * kHidden * 2;
    double floor_ms = bytes / (copy_gbs * 1e6);
    double flops = 2.0 * n * kTopK * 3.0 * kInter * kHidden;
    printf(
        "%-8s tokens %5u: %9.1f us | %3u experts read, %7.1f MB, floor "
        "%8.1f us at the copy's %6.1f GB/s: %5.2fx | %7.2f TFLOP/s\n",
        grouped ? "prefill" : "decode", n, ms * 1e3, used, bytes / 1e6,
        floor_ms * 1e3, copy_gbs, ms / floor_ms, flops / (ms * 1e9));
  }
  free(t);
  free(tc);
  return err;
}

int main(int argc, char **argv) {
  const char *backend = "cuda";
  int reps = 20;
  uint32_t batch = 16, tokens = 2048;
  static const struct option kOptions[] = {{"backend", 1, NULL, 'b'},
                                           {"reps", 1, NULL, 'r'},
                                           {"batch", 1, NULL, 'n'},
                                           {"tokens", 1, NULL, 't'},
                                           {NULL, 0, NULL, 0}};
  for (int o; (o = getopt_long(argc, argv, "", kOptions, NULL)) != -1;) {
    if (o == 'b') {
      backend = optarg;
    } else if (o == 'r') {
      reps = (int)strtol(optarg, NULL, 10);
    } else if (o == 'n') {
      batch = (uint32_t)strtoul(optarg, NULL, 10);
    } else if (o == 't') {
      tokens = (uint32_t)strtoul(optarg, NULL, 10);
    } else {
      fprintf(stderr,
              "usage: bench_moe [--backend cuda|host] [--reps N] [--batch N] "
              "[--tokens N]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (batch < 1) batch = 1;
  if (tokens < 1) tokens = 1;
  const atlas_module_def *mods[1] = {&atlas_moe_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.modules = &set;
  moe_bench m;
  memset(&m, 0, sizeof(m));
  if (check(atlas_backend_factory_create(backend, &o, &m.b), backend)) return 1;
  printf(
      "bench_moe: backend %s, hidden %d, %d experts of %d, k %d, BF16; median "
      "of %d runs, wall clock around the launches + synchronize\n",
      backend, kHidden, kExperts, kInter, kTopK, reps);
  uint32_t most = tokens > batch ? tokens : batch;
  int err = setup(&m, most);
  if (!err) err |= run(&m, 1, false, reps);
  if (!err) err |= run(&m, batch, false, reps);
  if (!err) err |= run(&m, tokens, true, reps);
  void *all[] = {m.gate_up, m.down,    m.router,  m.t_gate, m.t_up, m.t_down,
                 m.x,       m.ids,     m.weights, m.act,    m.y,    m.out,
                 m.counts,  m.offsets, m.tiles,   m.rows,   m.copy};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    if (all[i] != NULL) err |= check(atlas_backend_free(m.b, all[i]), "free");
  }
  err |= check(atlas_backend_destroy(m.b), "destroy");
  return err;
}
