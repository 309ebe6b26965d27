#include "atlas/runtime/sampling/rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void atlas_rng_seed(atlas_rng *rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; ++i) rng->s[i] = splitmix64(&x);
}

uint64_t atlas_rng_next_u64(atlas_rng *rng) {
  uint64_t *s = rng->s;
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double atlas_rng_next_double(atlas_rng *rng) {
  return (double)(atlas_rng_next_u64(rng) >> 11) * 0x1.0p-53;
}
