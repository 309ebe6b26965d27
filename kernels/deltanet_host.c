// Host twin of module "deltanet" (deltanet_kernels.h): the reference the
// CUDA kernels are compared with. f32 values; each sum runs in index order
// in double (a head's dot products over dk cancel: f32 sums in order lose
// about 1e-5 of a row at dk 128, CUDA's warp trees far less).
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/kernels/deltanet_fatbin.h"
#include "atlas/kernels/deltanet_kernels.h"

#define ARG(type, i) (*(type *)args[i])

static float gdn_silu(float v) { return v / (1.0f + expf(-v)); }

static uint32_t gdn_slot(const uint32_t *slots, uint32_t s) {
  return slots != NULL ? slots[s] : s;
}

static float gdn_dot(const float *a, const float *b, uint32_t n) {
  double acc = 0.0;
  for (uint32_t i = 0; i < n; ++i) acc += (double)a[i] * b[i];
  return (float)acc;
}

// x L2-normed (eps inside the rsqrt, as transformers' l2norm) times scale.
static void gdn_l2norm(float *out, const float *x, uint32_t n, float scale) {
  float inv = 1.0f / sqrtf(gdn_dot(x, x, n) + 1e-6f);
  for (uint32_t i = 0; i < n; ++i) out[i] = x[i] * inv * scale;
}

static void gdn_conv_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  float *state = ARG(float *, 2);
  const float *weight = ARG(const float *, 3);
  const float *bias = ARG(const float *, 4);
  const uint32_t *slots = ARG(const uint32_t *, 5);
  uint32_t n_seqs = ARG(uint32_t, 6), n_tokens = ARG(uint32_t, 7);
  uint32_t ch = ARG(uint32_t, 8), kernel = ARG(uint32_t, 9);
  if (kernel < 1 || kernel > ATLAS_GDN_MAX_KERNEL) return;
  for (uint32_t s = 0; s < n_seqs; ++s) {
    float *st = state + (size_t)gdn_slot(slots, s) * (kernel - 1) * ch;
    for (uint32_t cc = 0; cc < ch; ++cc) {
      float win[ATLAS_GDN_MAX_KERNEL];
      for (uint32_t j = 0; j + 1 < kernel; ++j)
        win[j] = st[(size_t)j * ch + cc];
      for (uint32_t t = 0; t < n_tokens; ++t) {
        size_t at = ((size_t)s * n_tokens + t) * ch + cc;
        win[kernel - 1] = x[at];
        float acc = bias != NULL ? bias[cc] : 0.0f;
        for (uint32_t j = 0; j < kernel; ++j) {
          acc += weight[(size_t)cc * kernel + j] * win[j];
        }
        out[at] = gdn_silu(acc);
        for (uint32_t j = 0; j + 1 < kernel; ++j) win[j] = win[j + 1];
      }
      for (uint32_t j = 0; j + 1 < kernel; ++j)
        st[(size_t)j * ch + cc] = win[j];
    }
  }
}

static void gdn_gates_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *g = ARG(float *, 0);
  float *beta = ARG(float *, 1);
  const float *a = ARG(const float *, 2);
  const float *b = ARG(const float *, 3);
  const float *a_log = ARG(const float *, 4);
  const float *dt_bias = ARG(const float *, 5);
  uint32_t n_rows = ARG(uint32_t, 6), n_heads = ARG(uint32_t, 7);
  for (uint32_t r = 0; r < n_rows; ++r) {
    for (uint32_t h = 0; h < n_heads; ++h) {
      size_t i = (size_t)r * n_heads + h;
      float sp = a[i] + dt_bias[h];
      sp = sp > 20.0f ? sp : log1pf(expf(sp));
      g[i] = -expf(a_log[h]) * sp;
      beta[i] = 1.0f / (1.0f + expf(-b[i]));
    }
  }
}

static void gdn_recurrent_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  float *state = ARG(float *, 1);
  const float *q = ARG(const float *, 2);
  const float *k = ARG(const float *, 3);
  const float *v = ARG(const float *, 4);
  const float *g = ARG(const float *, 5);
  const float *beta = ARG(const float *, 6);
  const uint32_t *slots = ARG(const uint32_t *, 7);
  uint32_t n_seqs = ARG(uint32_t, 8), n_tokens = ARG(uint32_t, 9);
  uint32_t hk_n = ARG(uint32_t, 10), hv_n = ARG(uint32_t, 11);
  uint32_t dk = ARG(uint32_t, 12), dv = ARG(uint32_t, 13);
  uint32_t stride = ARG(uint32_t, 14);
  if (!atlas_gdn_shape_ok(hk_n, hv_n, dk, dv)) return;
  const float scale = 1.0f / sqrtf((float)dk);
  float qn[ATLAS_GDN_MAX_DIM], kn[ATLAS_GDN_MAX_DIM];
  for (uint32_t s = 0; s < n_seqs; ++s) {
    for (uint32_t h = 0; h < hv_n; ++h) {
      const uint32_t hk = h / (hv_n / hk_n);
      float *st = state + ((size_t)gdn_slot(slots, s) * hv_n + h) * dv * dk;
      for (uint32_t t = 0; t < n_tokens; ++t) {
        const size_t r = (size_t)s * n_tokens + t;
        gdn_l2norm(qn, q + r * stride + (size_t)hk * dk, dk, scale);
        gdn_l2norm(kn, k + r * stride + (size_t)hk * dk, dk, 1.0f);
        const float *vr = v + r * stride + (size_t)h * dv;
        const float decay = expf(g[r * hv_n + h]), b = beta[r * hv_n + h];
        for (uint32_t j = 0; j < dv; ++j) {
          float *row = st + (size_t)j * dk;
          double kv = 0.0, o = 0.0;
          for (uint32_t i = 0; i < dk; ++i) {
            row[i] *= decay;
            kv += (double)row[i] * kn[i];
          }
          const float delta = (vr[j] - (float)kv) * b;
          for (uint32_t i = 0; i < dk; ++i) {
            row[i] += kn[i] * delta;
            o += (double)row[i] * qn[i];
          }
          out[(r * hv_n + h) * dv + j] = (float)o;
        }
      }
    }
  }
}

// One chunk's working set (about 112 KB).
typedef struct gdn_chunk {
  float q[ATLAS_GDN_CHUNK][ATLAS_GDN_MAX_DIM];
  float k[ATLAS_GDN_CHUNK][ATLAS_GDN_MAX_DIM];
  float rv[ATLAS_GDN_CHUNK][ATLAS_GDN_MAX_DIM];  // R, then the new values
  float a[ATLAS_GDN_CHUNK][ATLAS_GDN_CHUNK];
  float g[ATLAS_GDN_CHUNK], b[ATLAS_GDN_CHUNK], row[ATLAS_GDN_CHUNK];
} gdn_chunk;

// Tokens c0..c0+n-1 of head h: the chunk form, st [dv][dk] in and out.
static void gdn_chunk_run(gdn_chunk *w, float *out, float *st, void **args,
                          uint32_t h, uint32_t c0, uint32_t n) {
  const float *q = ARG(const float *, 2);
  const float *k = ARG(const float *, 3);
  const float *v = ARG(const float *, 4);
  const float *g = ARG(const float *, 5);
  const float *beta = ARG(const float *, 6);
  uint32_t hk_n = ARG(uint32_t, 9), hv_n = ARG(uint32_t, 10);
  uint32_t dk = ARG(uint32_t, 11), dv = ARG(uint32_t, 12);
  uint32_t stride = ARG(uint32_t, 13);
  const uint32_t hk = h / (hv_n / hk_n);
  const float scale = 1.0f / sqrtf((float)dk);
  for (uint32_t l = 0; l < n; ++l) {
    const size_t r = (size_t)c0 + l;
    gdn_l2norm(w->q[l], q + r * stride + (size_t)hk * dk, dk, scale);
    gdn_l2norm(w->k[l], k + r * stride + (size_t)hk * dk, dk, 1.0f);
    w->b[l] = beta[r * hv_n + h];
    w->g[l] = (l > 0 ? w->g[l - 1] : 0.0f) + g[r * hv_n + h];
  }
  // A = -(beta_i k_i . k_j) exp(G_i - G_j) below the diagonal, then the
  // forward substitution that makes A + I the chunk's WY transform T.
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < i; ++j) {
      w->a[i][j] =
          -w->b[i] * gdn_dot(w->k[i], w->k[j], dk) * expf(w->g[i] - w->g[j]);
    }
  }
  for (uint32_t i = 1; i < n; ++i) {
    for (uint32_t j = 0; j < i; ++j) w->row[j] = w->a[i][j];
    for (uint32_t j = 0; j < i; ++j) {
      float acc = w->row[j];
      for (uint32_t m = j + 1; m < i; ++m) acc += w->row[m] * w->a[m][j];
      w->a[i][j] = acc;
    }
  }
  // New values: T (beta (v - exp(G) S k)), rows from the last one up, so
  // each reads the R rows above it before they change.
  for (uint32_t l = 0; l < n; ++l) {
    const float *vr = v + ((size_t)c0 + l) * stride + (size_t)h * dv;
    const float eg = expf(w->g[l]);
    for (uint32_t cc = 0; cc < dv; ++cc) {
      w->rv[l][cc] =
          w->b[l] * (vr[cc] - eg * gdn_dot(st + (size_t)cc * dk, w->k[l], dk));
    }
  }
  for (uint32_t i = n; i-- > 0;) {
    for (uint32_t cc = 0; cc < dv; ++cc) {
      float acc = w->rv[i][cc];
      for (uint32_t j = 0; j < i; ++j) acc += w->a[i][j] * w->rv[j][cc];
      w->rv[i][cc] = acc;
    }
  }
  // Outputs: the state's part plus the chunk's causal part.
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j <= i; ++j) {
      w->a[i][j] = gdn_dot(w->q[i], w->k[j], dk) * expf(w->g[i] - w->g[j]);
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    const float eg = expf(w->g[i]);
    for (uint32_t cc = 0; cc < dv; ++cc) {
      float o = eg * gdn_dot(st + (size_t)cc * dk, w->q[i], dk);
      for (uint32_t j = 0; j <= i; ++j) o += w->a[i][j] * w->rv[j][cc];
      out[(((size_t)c0 + i) * hv_n + h) * dv + cc] = o;
    }
  }
  // The state after the chunk.
  const float gl = w->g[n - 1], egl = expf(gl);
  for (uint32_t cc = 0; cc < dv; ++cc) {
    float *srow = st + (size_t)cc * dk;
    for (uint32_t x = 0; x < dk; ++x) {
      float acc = srow[x] * egl;
      for (uint32_t j = 0; j < n; ++j) {
        acc += w->k[j][x] * expf(gl - w->g[j]) * w->rv[j][cc];
      }
      srow[x] = acc;
    }
  }
}

static void gdn_chunked_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  float *state = ARG(float *, 1);
  uint32_t slot = ARG(uint32_t, 7), n_tokens = ARG(uint32_t, 8);
  uint32_t hk_n = ARG(uint32_t, 9), hv_n = ARG(uint32_t, 10);
  uint32_t dk = ARG(uint32_t, 11), dv = ARG(uint32_t, 12);
  if (!atlas_gdn_shape_ok(hk_n, hv_n, dk, dv)) return;
  gdn_chunk w;
  for (uint32_t h = 0; h < hv_n; ++h) {
    float *st = state + ((size_t)slot * hv_n + h) * dv * dk;
    for (uint32_t c0 = 0; c0 < n_tokens; c0 += ATLAS_GDN_CHUNK) {
      uint32_t n =
          n_tokens - c0 < ATLAS_GDN_CHUNK ? n_tokens - c0 : ATLAS_GDN_CHUNK;
      gdn_chunk_run(&w, out, st, args, h, c0, n);
    }
  }
}

static void gdn_norm_gate_host(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  const float *z = ARG(const float *, 2);
  const float *weight = ARG(const float *, 3);
  uint32_t n_rows = ARG(uint32_t, 4), dim = ARG(uint32_t, 5);
  float eps = ARG(float, 6);
  for (uint32_t r = 0; r < n_rows; ++r) {
    const float *xr = x + (size_t)r * dim;
    const float *zr = z + (size_t)r * dim;
    const float inv = 1.0f / sqrtf(gdn_dot(xr, xr, dim) / (float)dim + eps);
    for (uint32_t i = 0; i < dim; ++i) {
      out[(size_t)r * dim + i] = weight[i] * (xr[i] * inv) * gdn_silu(zr[i]);
    }
  }
}

static const atlas_kernel_def kGdnKernels[] = {
    {"gdn_conv", ATLAS_GDN_CONV_SIGNATURE, gdn_conv_host},
    {"gdn_gates", ATLAS_GDN_GATES_SIGNATURE, gdn_gates_host},
    {"gdn_recurrent", ATLAS_GDN_RECURRENT_SIGNATURE, gdn_recurrent_host},
    {"gdn_chunked", ATLAS_GDN_CHUNKED_SIGNATURE, gdn_chunked_host},
    {"gdn_norm_gate", ATLAS_GDN_NORM_GATE_SIGNATURE, gdn_norm_gate_host},
};

static const atlas_module_image kGdnImages[] = {
    {"cuda", atlas_fatbin_deltanet, ATLAS_FATBIN_DELTANET_SIZE},
};

const atlas_module_def atlas_gdn_module = {
    ATLAS_GDN_MODULE, kGdnImages, 1, kGdnKernels,
    sizeof(kGdnKernels) / sizeof(kGdnKernels[0])};
