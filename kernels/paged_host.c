// Host (CPU) twins of the paged-KV kernels: plain C, the reference. The
// attention is attention_prefill's (prefill_host.c) operation for operation,
// so a sequence gets the same values whether its cache is paged or not.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "atlas/kernels/attention_host.h"
#include "atlas/kernels/host_access.h"
#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/rope_host.h"

#define ARG(type, i) (*(type *)args[i])

typedef atlas_host_load_fn load_fn;
typedef atlas_host_store_fn store_fn;

static void rope_rows_at(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  const float *inv_freq = ARG(const float *, 1);
  uint32_t n_heads = ARG(uint32_t, 2), head_dim = ARG(uint32_t, 3);
  uint32_t rot_dim = ARG(uint32_t, 4);
  const uint32_t *pos = ARG(const uint32_t *, 5);
  uint32_t n = ARG(uint32_t, 6);
  double factor = ARG(float, 7);
  uint32_t stride = ARG(uint32_t, 8);
  for (uint32_t r = 0; r < n; ++r) {
    atlas_host_rope_row(x + (size_t)r * stride, inv_freq, n_heads, head_dim,
                        rot_dim, pos[r], factor);
  }
}

static void kv_store_slots(void **args, store_fn store) {
  void *kc = ARG(void *, 0);
  void *vc = ARG(void *, 1);
  const float *k = ARG(const float *, 2);
  const float *v = ARG(const float *, 3);
  uint32_t kv_dim = ARG(uint32_t, 4);
  const uint32_t *slots = ARG(const uint32_t *, 5);
  uint32_t n = ARG(uint32_t, 6);
  for (uint32_t r = 0; r < n; ++r) {
    size_t base = (size_t)slots[r] * kv_dim;
    for (uint32_t i = 0; i < kv_dim; ++i) {
      store(kc, base + i, k[(size_t)r * kv_dim + i]);
      store(vc, base + i, v[(size_t)r * kv_dim + i]);
    }
  }
}

void atlas_host_attention_paged(void **args, load_fn load, float scale,
                                float cap) {
  float *out = ARG(float *, 0);
  const float *q = ARG(const float *, 1);
  const void *kc = ARG(const void *, 2);
  const void *vc = ARG(const void *, 3);
  uint32_t n_heads = ARG(uint32_t, 4), n_kv = ARG(uint32_t, 5);
  uint32_t head_dim = ARG(uint32_t, 6);
  const uint32_t *pos = ARG(const uint32_t *, 7);
  const uint32_t *row_seq = ARG(const uint32_t *, 8);
  const uint32_t *tables = ARG(const uint32_t *, 9);
  uint32_t stride = ARG(uint32_t, 10), bt = ARG(uint32_t, 11);
  uint32_t n = ARG(uint32_t, 12), window = ARG(uint32_t, 13);
  uint32_t kv_dim = n_kv * head_dim, q_dim = n_heads * head_dim;
  uint32_t group = n_heads / n_kv;
  uint32_t longest = 0;
  for (uint32_t r = 0; r < n; ++r)
    longest = pos[r] > longest ? pos[r] : longest;
  float *att = malloc(((size_t)longest + 1) * sizeof(float));
  size_t *row = malloc(((size_t)longest + 1) * sizeof(size_t));
  if (att == NULL || row == NULL) {
    for (size_t i = 0; i < (size_t)n * q_dim; ++i) out[i] = NAN;
    free(att);
    free(row);
    return;
  }
  for (uint32_t r = 0; r < n; ++r) {
    uint32_t p = pos[r];
    uint32_t lo = (window != 0 && p + 1 > window) ? p + 1 - window : 0;
    const uint32_t *table = tables + (size_t)row_seq[r] * stride;
    for (uint32_t t = lo; t <= p; ++t) {
      row[t] = ((size_t)table[t / bt] * bt + t % bt) * kv_dim;
    }
    for (uint32_t h = 0; h < n_heads; ++h) {
      const float *qh = q + (size_t)r * q_dim + (size_t)h * head_dim;
      uint32_t kvh = h / group;
      float max = -INFINITY;
      for (uint32_t t = lo; t <= p; ++t) {
        size_t kt = row[t] + (size_t)kvh * head_dim;
        float s = 0.0f;
        for (uint32_t i = 0; i < head_dim; ++i) s += qh[i] * load(kc, kt + i);
        att[t] = atlas_host_score(s, scale, cap);
        if (att[t] > max) max = att[t];
      }
      float sum = 0.0f;
      for (uint32_t t = lo; t <= p; ++t) {
        att[t] = expf(att[t] - max);
        sum += att[t];
      }
      float *oh = out + (size_t)r * q_dim + (size_t)h * head_dim;
      for (uint32_t i = 0; i < head_dim; ++i) oh[i] = 0.0f;
      for (uint32_t t = lo; t <= p; ++t) {
        size_t vt = row[t] + (size_t)kvh * head_dim;
        float pr = att[t] / sum;
        for (uint32_t i = 0; i < head_dim; ++i) oh[i] += pr * load(vc, vt + i);
      }
    }
  }
  free(att);
  free(row);
}

static void gather_rows(const atlas_launch_config *c, void **args) {
  (void)c;
  float *out = ARG(float *, 0);
  const float *x = ARG(const float *, 1);
  const uint32_t *rows = ARG(const uint32_t *, 2);
  uint32_t n = ARG(uint32_t, 3), dim = ARG(uint32_t, 4);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < dim; ++j) {
      out[(size_t)i * dim + j] = x[(size_t)rows[i] * dim + j];
    }
  }
}

static void argmax_rows(const atlas_launch_config *c, void **args) {
  (void)c;
  uint32_t *out = ARG(uint32_t *, 0);
  const float *x = ARG(const float *, 1);
  uint32_t n = ARG(uint32_t, 2), dim = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < n; ++i) {
    const float *r = x + (size_t)i * dim;
    uint32_t best = 0, bad = UINT32_MAX;
    for (uint32_t j = 0; j < dim; ++j) {
      if (!isfinite(r[j]) && bad == UINT32_MAX) bad = j;
      if (r[j] > r[best]) best = j;
    }
    out[(size_t)2 * i] = best;
    out[(size_t)2 * i + 1] = bad;
  }
}

ATLAS_HOST_BY_DTYPE(kv_store_slots, store)
// The base attention: scores scaled by 1 / sqrt(head_dim), no cap.
static void attention_paged(void **args, load_fn load) {
  atlas_host_attention_paged(args, load, 1.0f / sqrtf((float)ARG(uint32_t, 6)),
                             0);
}
ATLAS_HOST_BY_DTYPE(attention_paged, load)

const atlas_kernel_def
    atlas_decoder_paged_kernel_defs[ATLAS_DECODER_PAGED_KERNEL_COUNT] = {
        {"rope_rows_at", "ppuuupufu", rope_rows_at},
        {"kv_store_slots_f32", "ppppupu", kv_store_slots_f32},
        {"kv_store_slots_f16", "ppppupu", kv_store_slots_f16},
        {"kv_store_slots_bf16", "ppppupu", kv_store_slots_bf16},
        {"attention_paged_f32", "ppppuuupppuuuu", attention_paged_f32},
        {"attention_paged_f16", "ppppuuupppuuuu", attention_paged_f16},
        {"attention_paged_bf16", "ppppuuupppuuuu", attention_paged_bf16},
        {"gather_rows", "pppuu", gather_rows},
        {"argmax_rows", "ppuu", argmax_rows},
};
