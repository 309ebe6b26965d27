// The host attention twins with the query scale and soft-cap as parameters
// (token_host.c, prefill_host.c, paged_host.c): the base kernels call them
// with 1 / sqrt(head_dim) and no cap, the decoder_ext module's with its
// trailing arguments (ext_kernels.h).
#ifndef ATLAS_KERNELS_ATTENTION_HOST_H_
#define ATLAS_KERNELS_ATTENTION_HOST_H_

#include <math.h>

#include "atlas/kernels/host_access.h"

// A score q.k scaled, then soft-capped where cap > 0.
static inline float atlas_host_score(float dot, float scale, float cap) {
  float s = dot * scale;
  return cap > 0 ? cap * tanhf(s / cap) : s;
}

void atlas_host_attention(void **args, atlas_host_load_fn load, float scale,
                          float cap);
void atlas_host_attention_prefill(void **args, atlas_host_load_fn load,
                                  float scale, float cap);
void atlas_host_attention_decode(void **args, atlas_host_load_fn load,
                                 float scale, float cap);
void atlas_host_attention_paged(void **args, atlas_host_load_fn load,
                                float scale, float cap);

#endif  // ATLAS_KERNELS_ATTENTION_HOST_H_
