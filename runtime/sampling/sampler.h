// The sampler: turns one step's logits into a token id.
//
// Each option is applied as transformers defines it, in the order
// transformers' generate() builds its logits processors
// (GenerationMixin._get_logits_processor: RepetitionPenaltyLogitsProcessor
// among the processors, then the sampling warpers TemperatureLogitsWarper,
// TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper):
//   1. repetition penalty: for every distinct id already in the sequence
//      (prompt included), a logit > 0 is divided by the penalty and a logit < 0
//      multiplied by it;
//   2. temperature: logits / temperature;
//   3. top-k: logits below the k-th largest become -inf (ties with it stay);
//   4. top-p: sort ascending, softmax, cumulative sum; ids whose cumulative
//      probability is <= 1 - top_p are removed, the most likely id is always
//      kept (so the kept set is the smallest head whose probability reaches
//      top_p);
//   5. min-p: ids whose probability is below min_p * (top probability) are
//   removed.
// Then one id is drawn from the softmax of what is left, with the sampler's own
// PRNG. Temperature 0 means greedy: the first id with the largest penalised
// logit (transformers' do_sample=False path; the warpers are not applied).
//
// Arithmetic is in double (transformers works in the logits' dtype, usually
// float32): a token that sits exactly on a top-p/min-p boundary may fall on the
// other side of it.
#ifndef ATLAS_RUNTIME_SAMPLING_SAMPLER_H_
#define ATLAS_RUNTIME_SAMPLING_SAMPLER_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/sampling/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_sampler_config {
  float temperature;         // 0: greedy; otherwise > 0 (1: unchanged)
  int32_t top_k;             // 0: off
  float top_p;               // 1: off; in (0, 1]
  float min_p;               // 0: off; in [0, 1]
  float repetition_penalty;  // 1: off; > 0
  uint64_t seed;
} atlas_sampler_config;

// The defaults: temperature 1, no filtering, no penalty, seed 0.
atlas_sampler_config atlas_sampler_config_default(void);

typedef struct atlas_sampler {
  atlas_sampler_config config;
  atlas_rng rng;
  size_t vocab_size;
  double *logits;  // scratch: processed logits (-INFINITY = removed)
  struct atlas_sampler_cand *cands;  // scratch: (logit, id) sorted by logit
  uint32_t *seen;                    // repetition penalty: stamp per id
  uint32_t stamp;
} atlas_sampler;

// Checks the configuration, naming the bad option: what init checks first,
// for callers that go greedy without a sampler (the same options are refused).
ATLAS_MUST_USE atlas_status
atlas_sampler_config_check(const atlas_sampler_config *config);

// Checks the configuration (naming the bad option) and allocates the scratch
// for a vocabulary of `vocab_size` ids.
ATLAS_MUST_USE atlas_status
atlas_sampler_init(atlas_sampler *sampler, const atlas_sampler_config *config,
                   size_t vocab_size);
void atlas_sampler_deinit(atlas_sampler *sampler);

// Restarts the PRNG from `seed` (the configuration keeps its other options).
void atlas_sampler_reseed(atlas_sampler *sampler, uint64_t seed);

// The distribution the sampler draws from for these logits: `out_probs[i]` is
// the probability of id i after every option (0 for removed ids; greedy gives a
// single 1). `history` holds the ids already in the sequence.
ATLAS_MUST_USE atlas_status atlas_sampler_distribution(
    atlas_sampler *sampler, const float *logits, size_t n_logits,
    const int32_t *history, size_t history_len, double *out_probs);

// Draws one id.
ATLAS_MUST_USE atlas_status atlas_sampler_sample(
    atlas_sampler *sampler, const float *logits, size_t n_logits,
    const int32_t *history, size_t history_len, int32_t *out_token);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SAMPLING_SAMPLER_H_
