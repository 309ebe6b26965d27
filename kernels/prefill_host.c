// Host (CPU) twins of the batched-prefill kernels: plain C, f32 math; the
// reference the CUDA kernels are tested against.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/attention_host.h"
#include "atlas/kernels/host_access.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/rope_host.h"

#define ARG(type, i) (*(type *)args[i])

typedef atlas_host_load_fn load_fn;
typedef atlas_host_store_fn store_fn;

static void embed_rows(void **args, load_fn load) {
  float *out = ARG(float *, 0);
  const void *table = ARG(const void *, 1);
  const uint32_t *tokens = ARG(const uint32_t *, 2);
  uint32_t n = ARG(uint32_t, 3), dim = ARG(uint32_t, 4);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t i = 0; i < dim; ++i) {
      out[(size_t)r * dim + i] = load(table, (size_t)tokens[r] * dim + i);
    }
  }
}
ATLAS_HOST_BY_DTYPE(embed_rows, load)

// The f32 values stored through `store`: f32 as they are (rmsnorm_rows), or
// rounded to a 16-bit type as round_rows rounds (rmsnorm_rows_{f16,bf16}).
static void rmsnorm_rows_to(void **args, store_fn store) {
  void *out = ARG(void *, 0);
  const float *x = ARG(const float *, 1);
  const float *w = ARG(const float *, 2);
  uint32_t dim = ARG(uint32_t, 3);
  float eps = ARG(float, 4);
  uint32_t n = ARG(uint32_t, 5);
  for (uint32_t r = 0; r < n; ++r) {
    const float *xr = x + (size_t)r * dim;
    double ss = 0;
    for (uint32_t i = 0; i < dim; ++i) ss += (double)xr[i] * xr[i];
    float scale = (float)(1.0 / sqrt(ss / dim + eps));
    for (uint32_t i = 0; i < dim; ++i) {
      store(out, (size_t)r * dim + i, w[i] * (xr[i] * scale));
    }
  }
}
static void rmsnorm_rows(const atlas_launch_config *c, void **args) {
  (void)c;
  rmsnorm_rows_to(args, atlas_host_store_f32);
}
ATLAS_HOST_ENTRY(rmsnorm_rows_to, store, f16)
ATLAS_HOST_ENTRY(rmsnorm_rows_to, store, bf16)

// silu(a) * b, the one-token silu_mul's expression (token_host.c), rounded
// as round_rows rounds; a and b are left as they were.
static void silu_mul_round(void **args, store_fn store) {
  void *out = ARG(void *, 0);
  const float *a = ARG(const float *, 1);
  const float *b = ARG(const float *, 2);
  uint32_t n = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < n; ++i)
    store(out, i, a[i] / (1.0f + expf(-a[i])) * b[i]);
}
ATLAS_HOST_ENTRY(silu_mul_round, store, f16)
ATLAS_HOST_ENTRY(silu_mul_round, store, bf16)

// out = x w^T, one weight row widened to f32 at a time; x read through
// load_x (f32 as it is, or the weights' 16-bit type widened: exact).
static void product(void **args, load_fn load_w, load_fn load_x) {
  float *out = ARG(float *, 0);
  const void *w = ARG(const void *, 1);
  const void *x = ARG(const void *, 2);
  uint32_t m = ARG(uint32_t, 3), n = ARG(uint32_t, 4), k = ARG(uint32_t, 5);
  float *row = malloc((k ? k : 1) * sizeof(float));
  if (row == NULL) {
    // No way to report from a kernel: leave NaN so any check fails loudly.
    for (size_t i = 0; i < (size_t)m * n; ++i) out[i] = NAN;
    return;
  }
  for (uint32_t j = 0; j < n; ++j) {
    for (uint32_t c = 0; c < k; ++c) row[c] = load_w(w, (size_t)j * k + c);
    for (uint32_t i = 0; i < m; ++i) {
      float acc = 0.0f;
      for (uint32_t c = 0; c < k; ++c)
        acc += row[c] * load_x(x, (size_t)i * k + c);
      out[(size_t)i * n + j] = acc;
    }
  }
  free(row);
}

static void gemm(void **args, load_fn load) {
  product(args, load, atlas_host_load_f32);
}
ATLAS_HOST_BY_DTYPE(gemm, load)

// x in the weights' 16-bit type too.
static void gemm16(void **args, load_fn load) { product(args, load, load); }
ATLAS_HOST_ENTRY(gemm16, load, f16)
ATLAS_HOST_ENTRY(gemm16, load, bf16)

// f32 -> 16-bit, round to nearest even (half.h, as the CUDA intrinsics).
static void round_rows(void **args, store_fn store) {
  void *out = ARG(void *, 0);
  const float *x = ARG(const float *, 1);
  uint32_t count = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < count; ++i) store(out, i, x[i]);
}
ATLAS_HOST_ENTRY(round_rows, store, f16)
ATLAS_HOST_ENTRY(round_rows, store, bf16)

static void rope_rows(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  const float *inv_freq = ARG(const float *, 1);
  uint32_t n_heads = ARG(uint32_t, 2), head_dim = ARG(uint32_t, 3);
  uint32_t rot_dim = ARG(uint32_t, 4), pos0 = ARG(uint32_t, 5);
  uint32_t n = ARG(uint32_t, 6);
  double factor = ARG(float, 7);
  uint32_t stride = ARG(uint32_t, 8);
  for (uint32_t r = 0; r < n; ++r) {
    atlas_host_rope_row(x + (size_t)r * stride, inv_freq, n_heads, head_dim,
                        rot_dim, pos0 + r, factor);
  }
}

void atlas_host_attention_prefill(void **args, load_fn load, float scale,
                                  float cap) {
  float *out = ARG(float *, 0);
  const float *q = ARG(const float *, 1);
  const void *kc = ARG(const void *, 2);
  const void *vc = ARG(const void *, 3);
  uint32_t n_heads = ARG(uint32_t, 4), n_kv = ARG(uint32_t, 5);
  uint32_t head_dim = ARG(uint32_t, 6), pos0 = ARG(uint32_t, 7);
  uint32_t n = ARG(uint32_t, 8), window = ARG(uint32_t, 9);
  uint32_t kv_dim = n_kv * head_dim, q_dim = n_heads * head_dim;
  uint32_t group = n_heads / n_kv;
  float *att = malloc((size_t)(pos0 + n) * sizeof(float));
  if (att == NULL) {
    for (size_t i = 0; i < (size_t)n * q_dim; ++i) out[i] = NAN;
    return;
  }
  for (uint32_t r = 0; r < n; ++r) {
    uint32_t pos = pos0 + r;
    uint32_t lo = (window != 0 && pos + 1 > window) ? pos + 1 - window : 0;
    for (uint32_t h = 0; h < n_heads; ++h) {
      const float *qh = q + (size_t)r * q_dim + (size_t)h * head_dim;
      uint32_t kvh = h / group;
      float max = -INFINITY;
      for (uint32_t t = lo; t <= pos; ++t) {
        size_t kt = (size_t)t * kv_dim + (size_t)kvh * head_dim;
        float s = 0.0f;
        for (uint32_t i = 0; i < head_dim; ++i) s += qh[i] * load(kc, kt + i);
        att[t] = atlas_host_score(s, scale, cap);
        if (att[t] > max) max = att[t];
      }
      float sum = 0.0f;
      for (uint32_t t = lo; t <= pos; ++t) {
        att[t] = expf(att[t] - max);
        sum += att[t];
      }
      float *oh = out + (size_t)r * q_dim + (size_t)h * head_dim;
      for (uint32_t i = 0; i < head_dim; ++i) oh[i] = 0.0f;
      for (uint32_t t = lo; t <= pos; ++t) {
        size_t vt = (size_t)t * kv_dim + (size_t)kvh * head_dim;
        float p = att[t] / sum;
        for (uint32_t i = 0; i < head_dim; ++i) oh[i] += p * load(vc, vt + i);
      }
    }
  }
  free(att);
}

// The merge of the splits (the CUDA kernel's last block per KV head does it).
static void decode_combine(float *out, const float *part, uint32_t n_heads,
                           uint32_t head_dim, uint32_t seq_len, uint32_t window,
                           uint32_t max_splits) {
  uint32_t lo = (window != 0 && seq_len > window) ? seq_len - window : 0;
  uint32_t chunk = atlas_decoder_decode_chunk(head_dim);
  uint32_t splits = (seq_len - lo + chunk - 1) / chunk;
  if (splits > max_splits) splits = max_splits;
  size_t stride = head_dim + 2;
  for (uint32_t h = 0; h < n_heads; ++h) {
    const float *ph = part + (size_t)h * max_splits * stride;
    float max = -INFINITY, total = 0.0f;
    for (uint32_t s = 0; s < splits; ++s) {
      if (ph[s * stride] > max) max = ph[s * stride];
    }
    for (uint32_t s = 0; s < splits; ++s) {
      total += expf(ph[s * stride] - max) * ph[s * stride + 1];
    }
    for (uint32_t i = 0; i < head_dim; ++i) {
      float acc = 0.0f;
      for (uint32_t s = 0; s < splits; ++s) {
        acc += expf(ph[s * stride] - max) * ph[s * stride + 2 + i];
      }
      out[(size_t)h * head_dim + i] = acc / total;
    }
  }
}

// Flash-decoding, split by split exactly as defined in prefill_kernels.h,
// then the merge into out (counters are the CUDA kernel's; unused here).
void atlas_host_attention_decode(void **args, load_fn load, float scale,
                                 float cap) {
  float *part = ARG(float *, 0);
  const float *q = ARG(const float *, 1);
  const void *kc = ARG(const void *, 2);
  const void *vc = ARG(const void *, 3);
  uint32_t n_heads = ARG(uint32_t, 4), n_kv = ARG(uint32_t, 5);
  uint32_t head_dim = ARG(uint32_t, 6);
  uint32_t seq_len = ARG(const uint32_t *, 7)[1] + 1;
  uint32_t window = ARG(uint32_t, 8), splits = ARG(uint32_t, 9);
  uint32_t kv_dim = n_kv * head_dim, group = n_heads / n_kv;
  uint32_t lo = (window != 0 && seq_len > window) ? seq_len - window : 0;
  // `splits` is the layout (rows per head); this step fills the first `used`.
  uint32_t chunk = atlas_decoder_decode_chunk(head_dim);
  uint32_t used = (seq_len - lo + chunk - 1) / chunk;
  float s[ATLAS_DECODER_DECODE_CHUNK_MAX];
  size_t stride = head_dim + 2;
  for (uint32_t h = 0; h < n_heads; ++h) {
    const float *qh = q + (size_t)h * head_dim;
    uint32_t kvh = h / group;
    for (uint32_t sp = 0; sp < used && sp < splits; ++sp) {
      uint32_t begin = lo + sp * chunk;
      uint32_t end = begin + chunk;
      if (end > seq_len) end = seq_len;
      uint32_t count = end - begin;
      float max = -INFINITY;
      for (uint32_t j = 0; j < count; ++j) {
        size_t kt = (size_t)(begin + j) * kv_dim + (size_t)kvh * head_dim;
        float d = 0.0f;
        for (uint32_t i = 0; i < head_dim; ++i) d += qh[i] * load(kc, kt + i);
        s[j] = atlas_host_score(d, scale, cap);
        if (s[j] > max) max = s[j];
      }
      float sum = 0.0f;
      for (uint32_t j = 0; j < count; ++j) {
        s[j] = expf(s[j] - max);
        sum += s[j];
      }
      float *p = part + ((size_t)h * splits + sp) * stride;
      p[0] = max;
      p[1] = sum;
      for (uint32_t i = 0; i < head_dim; ++i) p[2 + i] = 0.0f;
      for (uint32_t j = 0; j < count; ++j) {
        size_t vt = (size_t)(begin + j) * kv_dim + (size_t)kvh * head_dim;
        for (uint32_t i = 0; i < head_dim; ++i)
          p[2 + i] += s[j] * load(vc, vt + i);
      }
    }
  }
  decode_combine(ARG(float *, 10), part, n_heads, head_dim, seq_len, window,
                 splits);
}

// The chunk's keys and values (f32 rows) into cache rows pos0.. .
static void kv_store_rows(void **args, store_fn store) {
  void *kc = ARG(void *, 0);
  void *vc = ARG(void *, 1);
  const float *k = ARG(const float *, 2);
  const float *v = ARG(const float *, 3);
  uint32_t kv_dim = ARG(uint32_t, 4), pos0 = ARG(uint32_t, 5);
  uint32_t n = ARG(uint32_t, 6);
  size_t base = (size_t)pos0 * kv_dim;
  for (size_t i = 0; i < (size_t)n * kv_dim; ++i) {
    store(kc, base + i, k[i]);
    store(vc, base + i, v[i]);
  }
}

// The base attentions: scores scaled by 1 / sqrt(head_dim), no cap.
static void attention_prefill(void **args, load_fn load) {
  atlas_host_attention_prefill(args, load,
                               1.0f / sqrtf((float)ARG(uint32_t, 6)), 0);
}
static void attention_decode(void **args, load_fn load) {
  atlas_host_attention_decode(args, load, 1.0f / sqrtf((float)ARG(uint32_t, 6)),
                              0);
}

// The kernels that touch the KV cache, per cache type.
ATLAS_HOST_BY_DTYPE(kv_store_rows, store)
ATLAS_HOST_BY_DTYPE(attention_prefill, load)
ATLAS_HOST_BY_DTYPE(attention_decode, load)

// Names and signatures must match prefill.cu and prefill_kernels.h.
// The prompt attention's entries of one cache type S: every head size
// (atlas_decoder_prefill_attention_kernel's names), one host twin.
#define ATLAS_PREFILL_ATTENTION_DEF(S, D) \
  { "attention_prefill_" #S "_" #D, "ppppuuuuuu", attention_prefill_##S }
#define ATLAS_PREFILL_ATTENTION_DEFS(S)                                      \
  ATLAS_PREFILL_ATTENTION_DEF(S, d64), ATLAS_PREFILL_ATTENTION_DEF(S, d128), \
      ATLAS_PREFILL_ATTENTION_DEF(S, dany)

// The decode attention's entries of one cache type S: every group size and
// head size (atlas_decoder_decode_kernel's names), one host twin.
#define ATLAS_DECODE_DEF(S, G, D)                          \
  {                                                        \
    "attention_decode_" #S "_g" #G "_" #D, "ppppuuupuupp", \
        attention_decode_##S                               \
  }
#define ATLAS_DECODE_DEFS_G(S, G)                            \
  ATLAS_DECODE_DEF(S, G, d64), ATLAS_DECODE_DEF(S, G, d128), \
      ATLAS_DECODE_DEF(S, G, dany)
#define ATLAS_DECODE_DEFS(S)                                \
  ATLAS_DECODE_DEFS_G(S, 1), ATLAS_DECODE_DEFS_G(S, 2),     \
      ATLAS_DECODE_DEFS_G(S, 4), ATLAS_DECODE_DEFS_G(S, 8), \
      ATLAS_DECODE_DEFS_G(S, 16)

const atlas_kernel_def
    atlas_decoder_batch_kernel_defs[ATLAS_DECODER_BATCH_KERNEL_COUNT] = {
        {"embed_rows_f32", "pppuu", embed_rows_f32},
        {"embed_rows_f16", "pppuu", embed_rows_f16},
        {"embed_rows_bf16", "pppuu", embed_rows_bf16},
        {"rmsnorm_rows", "pppufu", rmsnorm_rows},
        {"rmsnorm_rows_f16", "pppufu", rmsnorm_rows_to_f16},
        {"rmsnorm_rows_bf16", "pppufu", rmsnorm_rows_to_bf16},
        {"silu_mul_round_f16", "pppu", silu_mul_round_f16},
        {"silu_mul_round_bf16", "pppu", silu_mul_round_bf16},
        {"gemm_f32", "pppuuu", gemm_f32},
        {"gemm_f16", "pppuuu", gemm_f16},
        {"gemm_bf16", "pppuuu", gemm_bf16},
        {"gemm_f16_m128", "pppuuu", gemm_f16},
        {"gemm_bf16_m128", "pppuuu", gemm_bf16},
        {"gemm16_f16", "pppuuu", gemm16_f16},
        {"gemm16_bf16", "pppuuu", gemm16_bf16},
        {"gemm16_f16_m128", "pppuuu", gemm16_f16},
        {"gemm16_bf16_m128", "pppuuu", gemm16_bf16},
        {"round_rows_f16", "ppu", round_rows_f16},
        {"round_rows_bf16", "ppu", round_rows_bf16},
        {"rope_rows", "ppuuuuufu", rope_rows},
        {"kv_store_rows_f32", "ppppuuu", kv_store_rows_f32},
        {"kv_store_rows_f16", "ppppuuu", kv_store_rows_f16},
        {"kv_store_rows_bf16", "ppppuuu", kv_store_rows_bf16},
        ATLAS_PREFILL_ATTENTION_DEFS(f32),
        ATLAS_PREFILL_ATTENTION_DEFS(f16),
        ATLAS_PREFILL_ATTENTION_DEFS(bf16),
        // One CUDA kernel per group size and head size (registers); the host
        // serves them all.
        ATLAS_DECODE_DEFS(f32),
        ATLAS_DECODE_DEFS(f16),
        ATLAS_DECODE_DEFS(bf16),
};
