// RoPE on one row of heads, for the host twins of the prompt and paged
// kernels (prefill_host.c, paged_host.c).
#ifndef ATLAS_KERNELS_ROPE_HOST_H_
#define ATLAS_KERNELS_ROPE_HOST_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>

// Pairs (i, i + rot_dim/2) of each head's first rot_dim entries rotate by
// pos * inv_freq[i]; the rest of a head passes through. The angle is formed
// in double, cos and sin scaled by the attention factor in double, then
// rounded: exactly as the one-token rope (token_host.c).
static inline void atlas_host_rope_row(float *row, const float *inv_freq,
                                       uint32_t n_heads, uint32_t head_dim,
                                       uint32_t rot_dim, uint32_t pos,
                                       double factor) {
  uint32_t half = rot_dim / 2;
  for (uint32_t i = 0; i < half; ++i) {
    double angle = (double)pos * (double)inv_freq[i];
    float cs = (float)(cos(angle) * factor), sn = (float)(sin(angle) * factor);
    for (uint32_t h = 0; h < n_heads; ++h) {
      float *v = row + (size_t)h * head_dim;
      float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cs - x1 * sn;
      v[i + half] = x1 * cs + x0 * sn;
    }
  }
}

#endif  // ATLAS_KERNELS_ROPE_HOST_H_
