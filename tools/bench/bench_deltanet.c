// One Gated DeltaNet layer's recurrent ops (module "deltanet") at
// Qwen3-Next-80B-A3B's shapes (16 key heads, 32 value heads, dk = dv = 128,
// conv of 4 over 8192 channels): the decode step (conv, delta rule) for a
// batch of 1 and of --batch sequences, each in its state slot, against its
// floor (every sequence's state read and written once, at the bandwidth a
// device-to-device copy reaches in the same run), and a prefill of
// --tokens tokens (conv, then the delta rule in chunks). Random values;
// the time does not depend on them.
//
//   bench_deltanet [--backend cuda|host] [--reps N] [--batch N] [--tokens N]
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/deltanet_kernels.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/tools/bench/bench_stats.h"

enum { kHk = 16, kHv = 32, kDk = 128, kDv = 128, kKernel = 4 };
enum { kChannels = 2 * kHk * kDk + kHv * kDv };

typedef struct gdn_bench {
  atlas_backend *b;
  void *x, *conv_out, *conv_w, *conv_state, *g, *beta, *out, *state, *slots;
  void *copy;
} gdn_bench;

static int check(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench_deltanet: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

// n floats in [lo, hi).
static void *device_floats(atlas_backend *b, size_t n, float lo, float hi,
                           unsigned seed, int *err) {
  void *d = NULL;
  float *h = malloc(n * sizeof(float));
  if (h == NULL) {
    *err = 1;
    return NULL;
  }
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    h[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffffu) / 65536.0f;
  }
  *err |= check(atlas_backend_alloc(b, n * sizeof(float), &d), "alloc");
  if (!*err)
    *err |= check(atlas_backend_h2d(b, d, h, n * sizeof(float)), "h2d");
  free(h);
  return d;
}

static int launch(atlas_backend *b, const char *name, uint32_t gx, uint32_t gy,
                  uint32_t gz, void **args) {
  const atlas_kernel *k = NULL;
  int err =
      check(atlas_backend_kernel_lookup(b, ATLAS_GDN_MODULE, name, &k), name);
  atlas_launch_config c;
  memset(&c, 0, sizeof(c));
  c.grid.x = gx, c.grid.y = gy, c.grid.z = gz;
  c.block.x = ATLAS_GDN_BLOCK, c.block.y = c.block.z = 1;
  if (!err) err |= check(atlas_backend_launch(b, k, &c, args), name);
  return err;
}

// The layer's recurrent part: n_seqs sequences of n_tokens (decode: n_tokens
// 1, by slot; prefill: one sequence, in chunks).
static int layer(gdn_bench *m, uint32_t n_seqs, uint32_t n_tokens) {
  uint32_t s = n_seqs, t = n_tokens, ch = kChannels, kernel = kKernel;
  uint32_t hk = kHk, hv = kHv, dk = kDk, dv = kDv, stride = kChannels, slot = 0;
  void *null = NULL;
  void *conv[] = {
      &m->conv_out, &m->x, &m->conv_state, &m->conv_w, &null, &m->slots, &s,
      &t,           &ch,   &kernel};
  int err = launch(m->b, "gdn_conv", (ch + 255) / 256, s, 1, conv);
  float *base = m->conv_out;
  const float *q = base, *k = base + (size_t)kHk * kDk,
              *v = base + (size_t)2 * kHk * kDk;
  if (n_tokens == 1) {
    void *rec[] = {&m->out, &m->state, &q,        &k,  &v,
                   &m->g,   &m->beta,  &m->slots, &s,  &t,
                   &hk,     &hv,       &dk,       &dv, &stride};
    err |= launch(m->b, "gdn_recurrent", (kDv + 7) / 8, kHv, s, rec);
  } else {
    void *chunk[] = {&m->out, &m->state, &q,  &k,  &v,  &m->g, &m->beta,
                     &slot,   &t,        &hk, &hv, &dk, &dv,   &stride};
    err |= launch(m->b, "gdn_chunked",
                  (kDv + ATLAS_GDN_SLICE - 1) / ATLAS_GDN_SLICE, kHv, 1, chunk);
  }
  return err;
}

static int run(gdn_bench *m, uint32_t n_seqs, uint32_t n_tokens, int reps) {
  double *t = calloc((size_t)reps, sizeof(double));
  double *tc = calloc((size_t)reps, sizeof(double));
  int err = t == NULL || tc == NULL;
  const size_t state_bytes = (size_t)kHv * kDv * kDk * 4;
  const size_t conv_bytes = (size_t)(kKernel - 1) * kChannels * 4;
  const size_t copy_bytes = 8 * state_bytes;
  for (int r = -2; !err && r < reps; ++r) {
    double t0 = atlas_bench_now_ms();
    err |= layer(m, n_seqs, n_tokens);
    err |= check(atlas_backend_synchronize(m->b), "synchronize");
    double t1 = atlas_bench_now_ms();
    err |= check(atlas_backend_d2d(m->b, m->copy, m->state, copy_bytes), "d2d");
    err |= check(atlas_backend_synchronize(m->b), "synchronize");
    double t2 = atlas_bench_now_ms();
    if (r >= 0) t[r] = t1 - t0, tc[r] = t2 - t1;
  }
  if (!err) {
    double ms = atlas_bench_median(t, (size_t)reps);
    double copy_gbs =
        2.0 * copy_bytes / (atlas_bench_median(tc, (size_t)reps) * 1e6);
    // Each sequence's states read and written once.
    double bytes = 2.0 * n_seqs * (double)(state_bytes + conv_bytes);
    double floor_ms = bytes / (copy_gbs * 1e6);
    printf(
        "%-8s seqs %3u tokens %5u: %9.1f us | states %7.1f MB read+written, "
        "floor %7.1f us at the copy's %6.1f GB/s: %6.2fx\n",
        n_tokens == 1 ? "decode" : "prefill", n_seqs, n_tokens, ms * 1e3,
        bytes / 1e6, floor_ms * 1e3, copy_gbs, ms / floor_ms);
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
              "usage: bench_deltanet [--backend cuda|host] [--reps N] "
              "[--batch N] [--tokens N]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (batch < 1) batch = 1;
  if (tokens < 2) tokens = 2;
  const atlas_module_def *mods[1] = {&atlas_gdn_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.modules = &set;
  gdn_bench m;
  memset(&m, 0, sizeof(m));
  if (check(atlas_backend_factory_create(backend, &o, &m.b), backend)) return 1;
  printf(
      "bench_deltanet: backend %s, %d key / %d value heads of %d, conv %d "
      "over %d channels; median of %d runs, wall clock around the launches + "
      "synchronize\n",
      backend, kHk, kHv, kDk, kKernel, kChannels, reps);
  const uint32_t seqs = batch > 8 ? batch : 8;  // the copy reads 8 states
  const uint32_t rows = tokens > batch ? tokens : batch;
  int err = 0;
  m.x = device_floats(m.b, (size_t)rows * kChannels, -1, 1, 1, &err);
  m.conv_out = device_floats(m.b, (size_t)rows * kChannels, 0, 0, 2, &err);
  m.conv_w = device_floats(m.b, (size_t)kChannels * kKernel, -1, 1, 3, &err);
  m.conv_state = device_floats(m.b, (size_t)seqs * (kKernel - 1) * kChannels,
                               -1, 1, 4, &err);
  m.g = device_floats(m.b, (size_t)rows * kHv, -2.0f, -0.01f, 5, &err);
  m.beta = device_floats(m.b, (size_t)rows * kHv, 0.05f, 0.95f, 6, &err);
  m.out = device_floats(m.b, (size_t)rows * kHv * kDv, 0, 0, 7, &err);
  m.state =
      device_floats(m.b, (size_t)seqs * kHv * kDv * kDk, -0.5f, 0.5f, 8, &err);
  m.copy = device_floats(m.b, (size_t)8 * kHv * kDv * kDk, 0, 0, 9, &err);
  uint32_t *slots = malloc((size_t)seqs * 4);
  if (slots == NULL) err = 1;
  for (uint32_t i = 0; !err && i < seqs; ++i) slots[i] = seqs - 1 - i;
  if (!err) {
    err |= check(atlas_backend_alloc(m.b, (size_t)seqs * 4, &m.slots), "alloc");
  }
  if (!err) {
    err |=
        check(atlas_backend_h2d(m.b, m.slots, slots, (size_t)seqs * 4), "h2d");
  }
  free(slots);
  if (!err) err |= run(&m, 1, 1, reps);
  if (!err) err |= run(&m, batch, 1, reps);
  if (!err) err |= run(&m, 1, tokens, reps);
  void *all[] = {m.x,    m.conv_out, m.conv_w, m.conv_state, m.g,
                 m.beta, m.out,      m.state,  m.copy,       m.slots};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    if (all[i] != NULL) err |= check(atlas_backend_free(m.b, all[i]), "free");
  }
  err |= check(atlas_backend_destroy(m.b), "destroy");
  return err;
}
