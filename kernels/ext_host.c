// Host (CPU) twins of the decoder's optional ops (module "decoder_ext",
// ext_kernels.h): plain C, f32 math. The attentions are the base kernels'
// own host code (attention_host.h) with the scale and cap these take.
#include <math.h>
#include <stdint.h>

#include "atlas/kernels/attention_host.h"
#include "atlas/kernels/ext_kernels.h"
#include "atlas/kernels/host_access.h"

#define ARG(type, i) (*(type *)args[i])

static void scale(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  uint32_t n = ARG(uint32_t, 1);
  float factor = ARG(float, 2);
  for (uint32_t i = 0; i < n; ++i) x[i] *= factor;
}

static void softcap(const atlas_launch_config *c, void **args) {
  (void)c;
  float *x = ARG(float *, 0);
  uint32_t n = ARG(uint32_t, 1);
  float cap = ARG(float, 2);
  for (uint32_t i = 0; i < n; ++i) x[i] = cap * tanhf(x[i] / cap);
}

// PyTorch's gelu(approximate="tanh"), in f32.
static float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static void gelu_tanh_mul(const atlas_launch_config *c, void **args) {
  (void)c;
  float *a = ARG(float *, 0);
  const float *b = ARG(const float *, 1);
  uint32_t n = ARG(uint32_t, 2);
  for (uint32_t i = 0; i < n; ++i) a[i] = gelu_tanh(a[i]) * b[i];
}

static void gelu_tanh_mul_round(void **args, atlas_host_store_fn store) {
  void *out = ARG(void *, 0);
  const float *a = ARG(const float *, 1);
  const float *b = ARG(const float *, 2);
  uint32_t n = ARG(uint32_t, 3);
  for (uint32_t i = 0; i < n; ++i) store(out, i, gelu_tanh(a[i]) * b[i]);
}
ATLAS_HOST_ENTRY(gelu_tanh_mul_round, store, f16)
ATLAS_HOST_ENTRY(gelu_tanh_mul_round, store, bf16)

// The attentions with the scale and cap of their last two arguments.
#define EXT_ATTENTION(NAME, BASE, ARGC)                         \
  static void NAME(void **args, atlas_host_load_fn load) {      \
    BASE(args, load, ARG(float, ARGC), ARG(float, (ARGC) + 1)); \
  }                                                             \
  ATLAS_HOST_BY_DTYPE(NAME, load)
EXT_ATTENTION(attention_ext, atlas_host_attention, 10)
EXT_ATTENTION(attention_prefill_ext, atlas_host_attention_prefill, 10)
EXT_ATTENTION(attention_decode_ext, atlas_host_attention_decode, 12)
EXT_ATTENTION(attention_paged_ext, atlas_host_attention_paged, 14)

const atlas_kernel_def
    atlas_decoder_ext_kernel_defs[ATLAS_DECODER_EXT_KERNEL_COUNT] = {
        {"scale", "puf", scale},
        {"softcap", "puf", softcap},
        {"gelu_tanh_mul", "ppu", gelu_tanh_mul},
        {"gelu_tanh_mul_round_f16", "pppu", gelu_tanh_mul_round_f16},
        {"gelu_tanh_mul_round_bf16", "pppu", gelu_tanh_mul_round_bf16},
        {"attention_ext_f32", "pppppuuupuff", attention_ext_f32},
        {"attention_ext_f16", "pppppuuupuff", attention_ext_f16},
        {"attention_ext_bf16", "pppppuuupuff", attention_ext_bf16},
        {"attention_prefill_ext_f32", "ppppuuuuuuff",
         attention_prefill_ext_f32},
        {"attention_prefill_ext_f16", "ppppuuuuuuff",
         attention_prefill_ext_f16},
        {"attention_prefill_ext_bf16", "ppppuuuuuuff",
         attention_prefill_ext_bf16},
        {"attention_decode_ext_f32", "ppppuuupuuppff",
         attention_decode_ext_f32},
        {"attention_decode_ext_f16", "ppppuuupuuppff",
         attention_decode_ext_f16},
        {"attention_decode_ext_bf16", "ppppuuupuuppff",
         attention_decode_ext_bf16},
        {"attention_paged_ext_f32", "ppppuuupppuuuuff",
         attention_paged_ext_f32},
        {"attention_paged_ext_f16", "ppppuuupppuuuuff",
         attention_paged_ext_f16},
        {"attention_paged_ext_bf16", "ppppuuupppuuuuff",
         attention_paged_ext_bf16},
};
