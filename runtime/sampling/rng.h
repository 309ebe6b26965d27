// A small seeded PRNG (xoshiro256**) whose whole state lives in a struct the
// caller owns: two samplers with the same seed draw the same sequence, and
// nothing is shared between them.
#ifndef ATLAS_RUNTIME_SAMPLING_RNG_H_
#define ATLAS_RUNTIME_SAMPLING_RNG_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_rng {
  uint64_t s[4];
} atlas_rng;

// Seeds the state with splitmix64 (any seed, 0 included, gives a usable state).
void atlas_rng_seed(atlas_rng *rng, uint64_t seed);
uint64_t atlas_rng_next_u64(atlas_rng *rng);
// Uniform in [0, 1) with 53 random bits.
double atlas_rng_next_double(atlas_rng *rng);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SAMPLING_RNG_H_
