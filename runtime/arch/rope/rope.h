// RoPE as transformers computes it: the rope config in both spellings
// (transformers 5's `rope_parameters`; the Hub's top-level `rope_theta` plus
// `rope_scaling` with `type` or `rope_type`) and the inverse frequencies of
// the types `default`, `linear`, `dynamic`, `yarn`, `llama3` and
// `longrope`. Shared by
// every family that rotates positions; the kernels only see the result.
#ifndef ATLAS_RUNTIME_ARCH_ROPE_ROPE_H_
#define ATLAS_RUNTIME_ARCH_ROPE_ROPE_H_

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_rope_type {
  ATLAS_ROPE_DEFAULT = 0,
  ATLAS_ROPE_LINEAR,
  ATLAS_ROPE_DYNAMIC,
  ATLAS_ROPE_YARN,
  ATLAS_ROPE_LLAMA3,
  ATLAS_ROPE_LONGROPE,
} atlas_rope_type;

// LongRoPE's per-frequency factors a config may give (head_dim up to 512).
#define ATLAS_ROPE_MAX_FACTORS 256

typedef struct atlas_rope_config {
  atlas_rope_type type;
  double theta;                    // default 10000
  double factor;                   // linear, dynamic, yarn, llama3
  double low_freq_factor;          // llama3
  double high_freq_factor;         // llama3
  int64_t original_max_positions;  // llama3, yarn (0: max_position_embeddings)
  double attention_factor;         // yarn: given (0: derived from mscale)
  double beta_fast, beta_slow;     // yarn: 32 and 1
  double mscale, mscale_all_dim;   // yarn: 0 when absent
  bool truncate;                   // yarn: true
  double partial_rotary_factor;    // 1: the whole head rotates
  // longrope: a factor per inverse frequency, short ones up to
  // original_max_position_embeddings and long ones past it (factor_count
  // each, which must be rot_dim / 2); attention_factor as yarn's.
  int64_t factor_count;
  double short_factor[ATLAS_ROPE_MAX_FACTORS];
  double long_factor[ATLAS_ROPE_MAX_FACTORS];
  bool factor_given;  // longrope: `factor` was in the config
} atlas_rope_config;

// The length past which longrope takes its long factors:
// original_max_position_embeddings, else max_positions.
static inline int64_t atlas_rope_original_positions(
    const atlas_rope_config *config, int64_t max_positions) {
  return config->original_max_positions > 0 ? config->original_max_positions
                                            : max_positions;
}

// Plain RoPE with base `theta` (every other field at transformers' default).
void atlas_rope_config_init(atlas_rope_config *config, double theta);

// Reads the rope keys of a config.json root object. Unknown rope types,
// unknown keys inside the rope object and parameters a type does not use
// are refused by name (UNIMPLEMENTED or INVALID_ARGUMENT); nothing is
// ignored. Messages start with `path`.
ATLAS_MUST_USE atlas_status atlas_rope_config_parse(
    const char *path, const json_t *root, atlas_rope_config *out_config);

const char *atlas_rope_type_name(atlas_rope_type type);

// Entries of inv_freq: rot_dim / 2, where rot_dim = head_dim *
// partial_rotary_factor (rounded down to even, as transformers' int()).
int64_t atlas_rope_rot_dim(const atlas_rope_config *config, int64_t head_dim);

// The inverse frequencies and the factor cos and sin are scaled by, in
// double, as transformers computes them for a forward pass whose largest
// position is seq_len - 1. `longrope` takes its long factors when seq_len
// passes the original length (transformers' longrope update), `dynamic`: above
// max_positions it raises the base (NTK), as transformers' dynamic update
// does when generate() runs with a cache: the prompt is one forward (every
// prompt position uses seq_len = prompt length), each later token its own
// (seq_len = its position + 1); keys already cached keep their rotation.
// out_inv_freq holds atlas_rope_rot_dim / 2 entries.
void atlas_rope_inv_freq(const atlas_rope_config *config, int64_t head_dim,
                         int64_t max_positions, int64_t seq_len,
                         double *out_inv_freq, double *out_attention_factor);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_ROPE_ROPE_H_
