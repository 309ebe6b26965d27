// Host twin of module "moe" (moe_kernels.h): the reference the CUDA kernels
// are compared with. Every sum runs in index order in f32.
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "atlas/kernels/moe_fatbin.h"
#include "atlas/kernels/moe_kernels.h"
#include "atlas/runtime/base/half.h"

typedef float (*moe_load_fn)(const void *p, size_t i);

static float moe_load_f32(const void *p, size_t i) {
  float f;
  memcpy(&f, (const char *)p + i * 4, 4);
  return f;
}
static float moe_load_f16(const void *p, size_t i) {
  uint16_t h;
  memcpy(&h, (const char *)p + i * 2, 2);
  return atlas_f16_to_f32(h);
}
static float moe_load_bf16(const void *p, size_t i) {
  uint16_t h;
  memcpy(&h, (const char *)p + i * 2, 2);
  return atlas_bf16_to_f32(h);
}

#define ARG(type, i) (*(type *)args[i])

// Row r of a [rows][cols] weight times x, in column order.
static float moe_dot(moe_load_fn load, const void *w, size_t r, uint32_t cols,
                     const float *x) {
  float acc = 0.0f;
  for (uint32_t c = 0; c < cols; ++c) {
    acc += load(w, r * cols + c) * x[c];
  }
  return acc;
}

static float moe_silu(float v) { return v / (1.0f + expf(-v)); }

static const void *moe_table(const uint64_t *table, uint32_t e) {
  return (const void *)(uintptr_t)table[e];
}

// a ranks above b: the larger value, NaN above every number (torch.topk).
static bool moe_above(float a, float b) {
  return (isnan(a) && !isnan(b)) || a > b;
}

static void moe_router(void **args, moe_load_fn load) {
  uint32_t *ids = ARG(uint32_t *, 0);
  float *weights = ARG(float *, 1);
  float *shared_gate = ARG(float *, 2);
  const float *x = ARG(const float *, 3);
  const void *w = ARG(const void *, 4);
  const void *w_shared = ARG(const void *, 5);
  uint32_t n_tokens = ARG(uint32_t, 6), n_experts = ARG(uint32_t, 7);
  uint32_t hidden = ARG(uint32_t, 8), k = ARG(uint32_t, 9);
  uint32_t flags = ARG(uint32_t, 10);
  if (!atlas_moe_shape_ok(n_experts, k)) {
    return;  // the caller refuses such a model (moe_kernels.h)
  }
  float p[ATLAS_MOE_MAX_EXPERTS];
  bool taken[ATLAS_MOE_MAX_EXPERTS];
  for (uint32_t t = 0; t < n_tokens; ++t) {
    const float *xt = x + (size_t)t * hidden;
    float max = -INFINITY, sum = 0.0f;
    for (uint32_t e = 0; e < n_experts; ++e) {
      p[e] = moe_dot(load, w, e, hidden, xt);
      max = fmaxf(max, p[e]);
      taken[e] = false;
    }
    for (uint32_t e = 0; e < n_experts; ++e) {
      p[e] = expf(p[e] - max);
      sum += p[e];
    }
    for (uint32_t e = 0; e < n_experts; ++e) p[e] /= sum;
    float chosen_sum = 0.0f;
    for (uint32_t s = 0; s < k; ++s) {
      // k <= n_experts, so some expert is still free.
      uint32_t best = 0;
      bool found = false;
      for (uint32_t e = 0; e < n_experts; ++e) {
        if (taken[e]) continue;
        if (!found || moe_above(p[e], p[best])) best = e;
        found = true;
      }
      taken[best] = true;
      ids[(size_t)t * k + s] = best;
      weights[(size_t)t * k + s] = p[best];
      chosen_sum += p[best];
    }
    if (flags & ATLAS_MOE_NORM_TOPK) {
      for (uint32_t s = 0; s < k; ++s) weights[(size_t)t * k + s] /= chosen_sum;
    }
    if (w_shared != NULL) {
      float g = moe_dot(load, w_shared, 0, hidden, xt);
      shared_gate[t] = 1.0f / (1.0f + expf(-g));
    }
  }
}

static void moe_count_host(const atlas_launch_config *c, void **args) {
  (void)c;
  uint32_t *counts = ARG(uint32_t *, 0);
  const uint32_t *ids = ARG(const uint32_t *, 1);
  uint32_t n_assign = ARG(uint32_t, 2), n_experts = ARG(uint32_t, 3);
  for (uint32_t e = 0; e < n_experts; ++e) counts[e] = 0;
  for (uint32_t a = 0; a < n_assign; ++a) {
    if (ids[a] < n_experts) ++counts[ids[a]];
  }
}

static void moe_scatter_host(const atlas_launch_config *c, void **args) {
  (void)c;
  uint32_t *offsets = ARG(uint32_t *, 0);
  uint32_t *tiles = ARG(uint32_t *, 1);
  uint32_t *rows = ARG(uint32_t *, 2);
  const uint32_t *counts = ARG(const uint32_t *, 3);
  const uint32_t *ids = ARG(const uint32_t *, 4);
  uint32_t n_assign = ARG(uint32_t, 5), n_experts = ARG(uint32_t, 6);
  offsets[0] = 0;
  tiles[0] = 0;
  for (uint32_t e = 0; e < n_experts; ++e) {
    offsets[e + 1] = offsets[e] + counts[e];
    tiles[e + 1] =
        tiles[e] + (counts[e] + ATLAS_MOE_TILE_ROWS - 1) / ATLAS_MOE_TILE_ROWS;
  }
  for (uint32_t e = 0; e < n_experts; ++e) {
    uint32_t at = offsets[e];
    for (uint32_t a = 0; a < n_assign; ++a) {
      if (ids[a] == e) rows[at++] = a;
    }
  }
}

static void moe_gate_up(void **args, moe_load_fn load) {
  float *act = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  const uint32_t *rows = ARG(const uint32_t *, 2);
  const uint32_t *offsets = ARG(const uint32_t *, 3);
  const uint64_t *w_gate = ARG(const uint64_t *, 5);
  const uint64_t *w_up = ARG(const uint64_t *, 6);
  uint32_t n_experts = ARG(uint32_t, 7), k = ARG(uint32_t, 8);
  uint32_t hidden = ARG(uint32_t, 9), inter = ARG(uint32_t, 10);
  for (uint32_t e = 0; e < n_experts; ++e) {
    for (uint32_t p = offsets[e]; p < offsets[e + 1]; ++p) {
      const float *xt = x + (size_t)(rows[p] / k) * hidden;
      for (uint32_t i = 0; i < inter; ++i) {
        float g = moe_dot(load, moe_table(w_gate, e), i, hidden, xt);
        float u = moe_dot(load, moe_table(w_up, e), i, hidden, xt);
        act[(size_t)p * inter + i] = moe_silu(g) * u;
      }
    }
  }
}

static void moe_down(void **args, moe_load_fn load) {
  float *y = ARG(float *, 0);
  const float *act = ARG(const float *, 1);
  const uint32_t *rows = ARG(const uint32_t *, 2);
  const uint32_t *offsets = ARG(const uint32_t *, 3);
  const uint64_t *w_down = ARG(const uint64_t *, 5);
  uint32_t n_experts = ARG(uint32_t, 6), hidden = ARG(uint32_t, 7);
  uint32_t inter = ARG(uint32_t, 8);
  for (uint32_t e = 0; e < n_experts; ++e) {
    for (uint32_t p = offsets[e]; p < offsets[e + 1]; ++p) {
      const float *in = act + (size_t)p * inter;
      for (uint32_t h = 0; h < hidden; ++h) {
        y[(size_t)rows[p] * hidden + h] =
            moe_dot(load, moe_table(w_down, e), h, inter, in);
      }
    }
  }
}

static void moe_gate_up_vec(void **args, moe_load_fn load) {
  float *act = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  const uint32_t *ids = ARG(const uint32_t *, 2);
  const uint64_t *w_gate = ARG(const uint64_t *, 3);
  const uint64_t *w_up = ARG(const uint64_t *, 4);
  uint32_t n_assign = ARG(uint32_t, 5), k = ARG(uint32_t, 6);
  uint32_t hidden = ARG(uint32_t, 7), inter = ARG(uint32_t, 8);
  for (uint32_t a = 0; a < n_assign; ++a) {
    const float *xt = x + (size_t)(a / k) * hidden;
    for (uint32_t i = 0; i < inter; ++i) {
      float g = moe_dot(load, moe_table(w_gate, ids[a]), i, hidden, xt);
      float u = moe_dot(load, moe_table(w_up, ids[a]), i, hidden, xt);
      act[(size_t)a * inter + i] = moe_silu(g) * u;
    }
  }
}

static void moe_down_vec(void **args, moe_load_fn load) {
  float *y = ARG(float *, 0);
  const float *act = ARG(const float *, 1);
  const uint32_t *ids = ARG(const uint32_t *, 2);
  const uint64_t *w_down = ARG(const uint64_t *, 3);
  uint32_t n_assign = ARG(uint32_t, 4), hidden = ARG(uint32_t, 5);
  uint32_t inter = ARG(uint32_t, 6);
  for (uint32_t a = 0; a < n_assign; ++a) {
    for (uint32_t h = 0; h < hidden; ++h) {
      y[(size_t)a * hidden + h] = moe_dot(load, moe_table(w_down, ids[a]), h,
                                          inter, act + (size_t)a * inter);
    }
  }
}

static void moe_combine_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  const float *y = ARG(const float *, 1);
  const float *weights = ARG(const float *, 2);
  const float *shared = ARG(const float *, 3);
  const float *shared_gate = ARG(const float *, 4);
  uint32_t n_tokens = ARG(uint32_t, 5), k = ARG(uint32_t, 6);
  uint32_t hidden = ARG(uint32_t, 7), accumulate = ARG(uint32_t, 8);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    for (uint32_t h = 0; h < hidden; ++h) {
      float v = 0.0f;
      for (uint32_t s = 0; s < k; ++s) {
        size_t a = (size_t)t * k + s;
        v += weights[a] * y[a * hidden + h];
      }
      if (shared != NULL) {
        float g = shared_gate != NULL ? shared_gate[t] : 1.0f;
        v += g * shared[(size_t)t * hidden + h];
      }
      size_t o = (size_t)t * hidden + h;
      out[o] = accumulate ? out[o] + v : v;
    }
  }
}

// One host entry per weight dtype for the kernels that read weights.
#define MOE_TYPED(S)                                                           \
  static void moe_router_##S##_host(const atlas_launch_config *c,              \
                                    void **args) {                             \
    (void)c;                                                                   \
    moe_router(args, moe_load_##S);                                            \
  }                                                                            \
  static void moe_gate_up_##S##_host(const atlas_launch_config *c,             \
                                     void **args) {                            \
    (void)c;                                                                   \
    moe_gate_up(args, moe_load_##S);                                           \
  }                                                                            \
  static void moe_down_##S##_host(const atlas_launch_config *c, void **args) { \
    (void)c;                                                                   \
    moe_down(args, moe_load_##S);                                              \
  }                                                                            \
  static void moe_gate_up_vec_##S##_host(const atlas_launch_config *c,         \
                                         void **args) {                        \
    (void)c;                                                                   \
    moe_gate_up_vec(args, moe_load_##S);                                       \
  }                                                                            \
  static void moe_down_vec_##S##_host(const atlas_launch_config *c,            \
                                      void **args) {                           \
    (void)c;                                                                   \
    moe_down_vec(args, moe_load_##S);                                          \
  }

MOE_TYPED(f32)
MOE_TYPED(f16)
MOE_TYPED(bf16)

#define MOE_DEFS(S)                                                           \
  {"moe_router_" #S, ATLAS_MOE_ROUTER_SIGNATURE, moe_router_##S##_host},      \
      {"moe_gate_up_" #S, ATLAS_MOE_GATE_UP_SIGNATURE,                        \
       moe_gate_up_##S##_host},                                               \
      {"moe_down_" #S, ATLAS_MOE_DOWN_SIGNATURE, moe_down_##S##_host},        \
      {"moe_gate_up_vec_" #S, ATLAS_MOE_GATE_UP_VEC_SIGNATURE,                \
       moe_gate_up_vec_##S##_host},                                           \
  {                                                                           \
    "moe_down_vec_" #S, ATLAS_MOE_DOWN_VEC_SIGNATURE, moe_down_vec_##S##_host \
  }

static const atlas_kernel_def kMoeKernels[] = {
    MOE_DEFS(f32),
    MOE_DEFS(f16),
    MOE_DEFS(bf16),
    {"moe_count", ATLAS_MOE_COUNT_SIGNATURE, moe_count_host},
    {"moe_scatter", ATLAS_MOE_SCATTER_SIGNATURE, moe_scatter_host},
    {"moe_combine", ATLAS_MOE_COMBINE_SIGNATURE, moe_combine_host},
};

static const atlas_module_image kMoeImages[] = {
    {"cuda", atlas_fatbin_moe, ATLAS_FATBIN_MOE_SIZE},
};

const atlas_module_def atlas_moe_module = {
    ATLAS_MOE_MODULE, kMoeImages, 1, kMoeKernels,
    sizeof(kMoeKernels) / sizeof(kMoeKernels[0])};
