// Host (CPU) implementations of the one-token decoder kernels: plain C, f32
// math.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "atlas/kernels/attention_host.h"
#include "atlas/kernels/host_access.h"
#include "atlas/kernels/token_host.h"

#define ARG(type, i) (*(type *)args[i])

typedef atlas_host_load_fn load_fn;
typedef atlas_host_store_fn store_fn;

static void embed(void **args, load_fn load) {
  float *out = ARG(float *, 0);
  const void *table = ARG(const void *, 1);
  uint32_t token = ARG(const uint32_t *, 2)[0], dim = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < dim; ++i)
    out[i] = load(table, (size_t)token * dim + i);
}

ATLAS_HOST_BY_DTYPE(embed, load)

// 1 / RMS(x), the sum of squares in double: rmsnorm and the products with
// the norm folded in share it.
static float rms_scale(const float *x, uint32_t dim, float eps) {
  double ss = 0;
  for (uint32_t i = 0; i < dim; ++i) ss += (double)x[i] * x[i];
  return (float)(1.0 / sqrt(ss / dim + eps));
}

static void rmsnorm(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  const float *w = ARG(const float *, 2);
  uint32_t dim = ARG(uint32_t, 3);
  float eps = ARG(float, 4);
  float scale = rms_scale(x, dim, eps);
  for (uint32_t i = 0; i < dim; ++i) out[i] = w[i] * (x[i] * scale);
}

// The vector a product reads: x as is (norm NULL), or x RMS-normalised with
// the weights `norm`, each element formed inline as rmsnorm forms it,
// norm[k] * (x[k] * scale): a product with the norm folded in equals rmsnorm
// then the product, bit for bit.
typedef struct product_input {
  const float *x, *norm;
  float scale;
} product_input;

static product_input product_input_of(const float *x, const float *norm,
                                      uint32_t cols, float eps) {
  product_input in = {x, norm, 1.0f};
  if (norm != NULL) in.scale = rms_scale(x, cols, eps);
  return in;
}

// One row's dot product, summed in order (the f32 fast path of matvec_f32
// gives the same sums: atlas_host_load_f32 reads the same values).
static float row_dot(load_fn load, const void *w, size_t row, uint32_t cols,
                     const product_input *in) {
  float acc = 0.0f;
  size_t base = row * cols;
  const float *x = in->x, *norm = in->norm;
  if (norm == NULL) {
    for (uint32_t k = 0; k < cols; ++k) acc += load(w, base + k) * x[k];
  } else {
    float scale = in->scale;
    for (uint32_t k = 0; k < cols; ++k) {
      acc += load(w, base + k) * (norm[k] * (x[k] * scale));
    }
  }
  return acc;
}

// q, k and v in one launch, each with its bias (NULL: none), from x or
// (norm_w != NULL) RMSNorm(x).
static void matvec_qkv(void **args, load_fn load) {
  float *out[3] = {ARG(float *, 0), ARG(float *, 1), ARG(float *, 2)};
  const void *w[3] = {ARG(const void *, 3), ARG(const void *, 4),
                      ARG(const void *, 5)};
  const float *b[3] = {ARG(const float *, 6), ARG(const float *, 7),
                       ARG(const float *, 8)};
  const uint32_t rows[3] = {ARG(uint32_t, 10), ARG(uint32_t, 11),
                            ARG(uint32_t, 11)};
  uint32_t cols = ARG(uint32_t, 12);
  product_input x = product_input_of(
      ARG(const float *, 9), ARG(const float *, 13), cols, ARG(float, 14));
  for (int m = 0; m < 3; ++m) {
    for (uint32_t r = 0; r < rows[m]; ++r) {
      float acc = row_dot(load, w[m], r, cols, &x);
      out[m][r] = b[m] != NULL ? acc + b[m][r] : acc;
    }
  }
}

// x[r] += (W in)[r] (+ bias[r]). Arg 6, the CUDA kernel's warps a row,
// changes nothing here.
static void matvec_add(void **args, load_fn load) {
  float *x = ARG(float *, 0);
  const void *w = ARG(const void *, 1);
  const float *in = ARG(const float *, 2);
  const float *bias = ARG(const float *, 3);
  uint32_t rows = ARG(uint32_t, 4), cols = ARG(uint32_t, 5);
  product_input x_in = {in, NULL, 1.0f};
  for (uint32_t r = 0; r < rows; ++r) {
    float acc = row_dot(load, w, r, cols, &x_in);
    x[r] += bias != NULL ? acc + bias[r] : acc;
  }
}

// out[r] = silu(gate . x (+ bias)) * (up . x (+ bias)), x or (norm_w !=
// NULL) RMSNorm(x).
static void gate_up(void **args, load_fn load) {
  float *out = ARG(float *, 0);
  const void *wg = ARG(const void *, 1), *wu = ARG(const void *, 2);
  const float *bg = ARG(const float *, 3), *bu = ARG(const float *, 4);
  uint32_t rows = ARG(uint32_t, 6), cols = ARG(uint32_t, 7);
  product_input x = product_input_of(
      ARG(const float *, 5), ARG(const float *, 8), cols, ARG(float, 9));
  for (uint32_t r = 0; r < rows; ++r) {
    float g = row_dot(load, wg, r, cols, &x),
          u = row_dot(load, wu, r, cols, &x);
    if (bg != NULL) g = g + bg[r];
    if (bu != NULL) u = u + bu[r];
    out[r] = g / (1.0f + expf(-g)) * u;
  }
}

ATLAS_HOST_BY_DTYPE(matvec_qkv, load)
ATLAS_HOST_BY_DTYPE(matvec_add, load)
ATLAS_HOST_BY_DTYPE(gate_up, load)

// out = W x, or W RMSNorm(x) when norm_w != NULL (args 5 and 6).
static void matvec(void **args, load_fn load) {
  float *out = ARG(float *, 0);
  const void *w = ARG(const void *, 1);
  uint32_t rows = ARG(uint32_t, 3), cols = ARG(uint32_t, 4);
  product_input x = product_input_of(
      ARG(const float *, 2), ARG(const float *, 5), cols, ARG(float, 6));
  for (uint32_t r = 0; r < rows; ++r) out[r] = row_dot(load, w, r, cols, &x);
}

// The F32 case is the hot one on the host: when the weights happen to be
// 4-byte aligned, read them directly (the same sums as row_dot's).
static void matvec_f32(const atlas_launch_config *c, void **args) {
  (void)c;
  const void *w = ARG(const void *, 1);
  if (((uintptr_t)w & 3) != 0) {
    matvec(args, atlas_host_load_f32);
    return;
  }
  float *out = ARG(float *, 0);
  const float *wf = (const float *)w;
  uint32_t rows = ARG(uint32_t, 3), cols = ARG(uint32_t, 4);
  product_input in = product_input_of(
      ARG(const float *, 2), ARG(const float *, 5), cols, ARG(float, 6));
  const float *x = in.x, *norm = in.norm;
  for (uint32_t r = 0; r < rows; ++r) {
    const float *row = wf + (size_t)r * cols;
    float acc = 0.0f;
    if (norm == NULL) {
      for (uint32_t k = 0; k < cols; ++k) acc += row[k] * x[k];
    } else {
      for (uint32_t k = 0; k < cols; ++k)
        acc += row[k] * (norm[k] * (x[k] * in.scale));
    }
    out[r] = acc;
  }
}
// F16 and BF16 weights: through the element loads.
ATLAS_HOST_ENTRY(matvec, load, f16)
ATLAS_HOST_ENTRY(matvec, load, bf16)

static void rotate(float *y0, float *y1, float x0, float x1, float inv_freq,
                   uint32_t pos, double factor) {
  double angle = (double)pos * (double)inv_freq;
  float cs = (float)(cos(angle) * factor), sn = (float)(sin(angle) * factor);
  *y0 = x0 * cs - x1 * sn;
  *y1 = x1 * cs + x0 * sn;
}

// RoPE at step[1] on q (in place) and k, then k and v into that position's
// cache rows. Pairs (i, i + rot_dim/2) of the first rot_dim entries rotate,
// as Hugging Face's rotate_half does; the rest of a head passes through. The
// angle is formed in double from the f32 inverse frequency.
static void rope_store(void **args, store_fn store) {
  float *q = ARG(float *, 0);
  const float *k = ARG(const float *, 1);
  const float *v = ARG(const float *, 2);
  void *kc = ARG(void *, 3);
  void *vc = ARG(void *, 4);
  const float *inv_freq = ARG(const float *, 5);
  uint32_t n_heads = ARG(uint32_t, 6), n_kv = ARG(uint32_t, 7);
  uint32_t head_dim = ARG(uint32_t, 8), rot_dim = ARG(uint32_t, 9);
  uint32_t pos = ARG(const uint32_t *, 10)[1];
  double factor = ARG(float, 11);
  uint32_t half = rot_dim / 2, kv_dim = n_kv * head_dim;
  size_t row = (size_t)pos * kv_dim;
  for (uint32_t h = 0; h < n_heads; ++h) {
    float *x = q + (size_t)h * head_dim;
    for (uint32_t i = 0; i < half; ++i) {
      rotate(&x[i], &x[i + half], x[i], x[i + half], inv_freq[i], pos, factor);
    }
  }
  for (uint32_t h = 0; h < n_kv; ++h) {
    const float *x = k + (size_t)h * head_dim;
    size_t at = row + (size_t)h * head_dim;
    for (uint32_t i = 0; i < head_dim; ++i) {
      float y = x[i];
      if (i < half) {
        float other;
        rotate(&y, &other, x[i], x[i + half], inv_freq[i], pos, factor);
      } else if (i < rot_dim) {
        float other;
        rotate(&other, &y, x[i - half], x[i], inv_freq[i - half], pos, factor);
      }
      store(kc, at + i, y);
    }
  }
  for (uint32_t i = 0; i < kv_dim; ++i) store(vc, row + i, v[i]);
}

// matvec_qkv then rope_store, in one launch: q, k and v (biases, the
// folded norm) with RoPE at step[1] on q and k, k and v into that position's
// cache rows; s->k and s->v are never formed. Bit for bit the two launches'
// result: the same row sums and the same rotate().
static void qkv_rope(void **args, load_fn load, store_fn store) {
  float *q = ARG(float *, 0);
  void *kc = ARG(void *, 1), *vc = ARG(void *, 2);
  const void *w[3] = {ARG(const void *, 3), ARG(const void *, 4),
                      ARG(const void *, 5)};
  const float *b[3] = {ARG(const float *, 6), ARG(const float *, 7),
                       ARG(const float *, 8)};
  uint32_t rows_q = ARG(uint32_t, 10), rows_kv = ARG(uint32_t, 11);
  uint32_t cols = ARG(uint32_t, 12);
  product_input x = product_input_of(
      ARG(const float *, 9), ARG(const float *, 13), cols, ARG(float, 14));
  const float *inv_freq = ARG(const float *, 15);
  uint32_t head_dim = ARG(uint32_t, 16), rot_dim = ARG(uint32_t, 17);
  uint32_t pos = ARG(const uint32_t *, 18)[1];
  double factor = ARG(float, 19);
  uint32_t half = rot_dim / 2;
  size_t at = (size_t)pos * rows_kv;
  for (uint32_t r = 0; r < rows_q; ++r) {
    float acc = row_dot(load, w[0], r, cols, &x);
    q[r] = b[0] != NULL ? acc + b[0][r] : acc;
  }
  for (uint32_t h = 0; h < rows_q / head_dim; ++h) {
    float *qh = q + (size_t)h * head_dim;
    for (uint32_t i = 0; i < half; ++i) {
      rotate(&qh[i], &qh[i + half], qh[i], qh[i + half], inv_freq[i], pos,
             factor);
    }
  }
  for (uint32_t h = 0; h < rows_kv / head_dim; ++h) {
    uint32_t r0 = h * head_dim;
    for (uint32_t i = 0; i < head_dim; ++i) {
      if (i >= half && i < rot_dim) continue;  // stored with its pair
      float y0 = row_dot(load, w[1], r0 + i, cols, &x);
      if (b[1] != NULL) y0 = y0 + b[1][r0 + i];
      if (i < half) {
        float y1 = row_dot(load, w[1], r0 + i + half, cols, &x);
        if (b[1] != NULL) y1 = y1 + b[1][r0 + i + half];
        rotate(&y0, &y1, y0, y1, inv_freq[i], pos, factor);
        store(kc, at + r0 + i + half, y1);
      }
      store(kc, at + r0 + i, y0);
    }
  }
  for (uint32_t r = 0; r < rows_kv; ++r) {
    float acc = row_dot(load, w[2], r, cols, &x);
    store(vc, at + r, b[2] != NULL ? acc + b[2][r] : acc);
  }
}

// qkv_rope_{weights}_{cache}.
#define QKV_ROPE_ENTRY(S, K)                                                  \
  static void qkv_rope_##S##_##K(const atlas_launch_config *c, void **args) { \
    (void)c;                                                                  \
    qkv_rope(args, atlas_host_load_##S, atlas_host_store_##K);                \
  }
#define QKV_ROPE_ENTRIES(S) \
  QKV_ROPE_ENTRY(S, f32)    \
  QKV_ROPE_ENTRY(S, f16)    \
  QKV_ROPE_ENTRY(S, bf16)
QKV_ROPE_ENTRIES(f32)
QKV_ROPE_ENTRIES(f16)
QKV_ROPE_ENTRIES(bf16)

void atlas_host_attention(void **args, load_fn load, float scale, float cap) {
  float *out = ARG(float *, 0);
  const float *q = ARG(const float *, 1);
  const void *kc = ARG(const void *, 2);
  const void *vc = ARG(const void *, 3);
  float *att = ARG(float *, 4);
  uint32_t n_heads = ARG(uint32_t, 5), n_kv = ARG(uint32_t, 6);
  uint32_t head_dim = ARG(uint32_t, 7);
  uint32_t seq_len = ARG(const uint32_t *, 8)[1] + 1;
  uint32_t window = ARG(uint32_t, 9);
  // With a window W the query at position seq_len - 1 sees only the last W
  // positions (Mistral's sliding window); 0 means no limit.
  uint32_t first = window != 0 && seq_len > window ? seq_len - window : 0;
  uint32_t kv_dim = n_kv * head_dim, group = n_heads / n_kv;
  for (uint32_t h = 0; h < n_heads; ++h) {
    const float *qh = q + (size_t)h * head_dim;
    uint32_t kvh = h / group;
    float *a = att + (size_t)h * seq_len;
    float max = -INFINITY;
    for (uint32_t t = first; t < seq_len; ++t) {
      size_t kt = (size_t)t * kv_dim + (size_t)kvh * head_dim;
      float s = 0.0f;
      for (uint32_t i = 0; i < head_dim; ++i) s += qh[i] * load(kc, kt + i);
      a[t] = atlas_host_score(s, scale, cap);
      if (a[t] > max) max = a[t];
    }
    float sum = 0.0f;
    for (uint32_t t = first; t < seq_len; ++t) {
      a[t] = expf(a[t] - max);
      sum += a[t];
    }
    float *oh = out + (size_t)h * head_dim;
    for (uint32_t i = 0; i < head_dim; ++i) oh[i] = 0.0f;
    for (uint32_t t = first; t < seq_len; ++t) {
      size_t vt = (size_t)t * kv_dim + (size_t)kvh * head_dim;
      float w = a[t] / sum;
      for (uint32_t i = 0; i < head_dim; ++i) oh[i] += w * load(vc, vt + i);
    }
  }
}

// The base attention: scores scaled by 1 / sqrt(head_dim), no cap.
static void attention(void **args, load_fn load) {
  atlas_host_attention(args, load, 1.0f / sqrtf((float)ARG(uint32_t, 7)), 0);
}

// The kernels that touch the KV cache, per cache type.
ATLAS_HOST_BY_DTYPE(rope_store, store)
ATLAS_HOST_BY_DTYPE(attention, load)

static void silu_mul(const atlas_launch_config *c, void **args) {
  (void)c;
  float *a = ARG(float *, 0);
  const float *b = ARG(const float *, 1);
  uint32_t n = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < n; ++i) a[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

static void add(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  const float *y = ARG(const float *, 1);
  uint32_t n = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < n; ++i) x[i] += y[i];
}

// x[i] += bias[i]: a projection's bias, applied after the product.
static void add_bias(const atlas_launch_config *c, void **args) {
  add(c, args);
}

// In-place RMSNorm of each head (Qwen3's q_norm / k_norm).
static void head_rmsnorm(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  const float *w = ARG(const float *, 1);
  uint32_t n_heads = ARG(uint32_t, 2), head_dim = ARG(uint32_t, 3);
  float eps = ARG(float, 4);
  for (uint32_t h = 0; h < n_heads; ++h) {
    float *v = x + (size_t)h * head_dim;
    double ss = 0;
    for (uint32_t i = 0; i < head_dim; ++i) ss += (double)v[i] * v[i];
    float scale = (float)(1.0 / sqrt(ss / head_dim + eps));
    for (uint32_t i = 0; i < head_dim; ++i) v[i] = w[i] * (v[i] * scale);
  }
}

// result[0]: the first index of the largest logit; result[1]: the first
// non-finite logit's index, or UINT32_MAX. `next` (may be NULL): next[0] =
// result[0], next[1] += 1 (the decode step chained on the device).
static void argmax(const atlas_launch_config *c, void **args) {
  (void)c;
  uint32_t *result = ARG(uint32_t *, 0);
  const float *logits = ARG(const float *, 1);
  uint32_t n = ARG(uint32_t, 2);
  uint32_t best = UINT32_MAX, bad = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    if (!isfinite(logits[i])) {
      if (bad == UINT32_MAX) bad = i;
    } else if (best == UINT32_MAX || logits[i] > logits[best]) {
      best = i;
    }
  }
  result[0] = best == UINT32_MAX ? 0 : best;
  result[1] = bad;
  uint32_t *next = ARG(uint32_t *, 3);
  if (next != NULL) {
    next[0] = result[0];
    next[1] += 1;
  }
}

// Names and signatures must match token.cu and token_kernels.h.
const atlas_kernel_def atlas_decoder_kernel_defs[ATLAS_DECODER_KERNEL_COUNT] = {
    {"embed_f32", "pppu", embed_f32},
    {"embed_f16", "pppu", embed_f16},
    {"embed_bf16", "pppu", embed_bf16},
    {"rmsnorm", "pppuf", rmsnorm},
    {"matvec_f32", "pppuupf", matvec_f32},
    {"matvec_f16", "pppuupf", matvec_f16},
    {"matvec_bf16", "pppuupf", matvec_bf16},
    {"rope_store_f32", "ppppppuuuupf", rope_store_f32},
    {"rope_store_f16", "ppppppuuuupf", rope_store_f16},
    {"rope_store_bf16", "ppppppuuuupf", rope_store_bf16},
    {"attention_f32", "pppppuuupu", attention_f32},
    {"attention_f16", "pppppuuupu", attention_f16},
    {"attention_bf16", "pppppuuupu", attention_bf16},
    {"silu_mul", "ppu", silu_mul},
    {"add", "ppu", add},
    {"add_bias", "ppu", add_bias},
    {"head_rmsnorm", "ppuuf", head_rmsnorm},
    {"argmax", "ppup", argmax},
    {"matvec_qkv_f32", "ppppppppppuuupf", matvec_qkv_f32},
    {"matvec_qkv_f16", "ppppppppppuuupf", matvec_qkv_f16},
    {"matvec_qkv_bf16", "ppppppppppuuupf", matvec_qkv_bf16},
    {"matvec_add_f32", "ppppuuu", matvec_add_f32},
    {"matvec_add_f16", "ppppuuu", matvec_add_f16},
    {"matvec_add_bf16", "ppppuuu", matvec_add_bf16},
    {"gate_up_f32", "ppppppuupf", gate_up_f32},
    {"gate_up_f16", "ppppppuupf", gate_up_f16},
    {"gate_up_bf16", "ppppppuupf", gate_up_bf16},
    {"qkv_rope_f32_f32", "ppppppppppuuupfpuupf", qkv_rope_f32_f32},
    {"qkv_rope_f32_f16", "ppppppppppuuupfpuupf", qkv_rope_f32_f16},
    {"qkv_rope_f32_bf16", "ppppppppppuuupfpuupf", qkv_rope_f32_bf16},
    {"qkv_rope_f16_f32", "ppppppppppuuupfpuupf", qkv_rope_f16_f32},
    {"qkv_rope_f16_f16", "ppppppppppuuupfpuupf", qkv_rope_f16_f16},
    {"qkv_rope_f16_bf16", "ppppppppppuuupfpuupf", qkv_rope_f16_bf16},
    {"qkv_rope_bf16_f32", "ppppppppppuuupfpuupf", qkv_rope_bf16_f32},
    {"qkv_rope_bf16_f16", "ppppppppppuuupfpuupf", qkv_rope_bf16_f16},
    {"qkv_rope_bf16_bf16", "ppppppppppuuupfpuupf", qkv_rope_bf16_bf16},
};
