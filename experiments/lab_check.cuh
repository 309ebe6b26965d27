// The labs' check of a CUDA runtime call inside main(): print the call and
// its error, return 1. Included by the lab programs whose main() checks
// every call this way (`#include "lab_check.cuh"`, found beside them).
#ifndef ATLAS_EXPERIMENTS_LAB_CHECK_CUH_
#define ATLAS_EXPERIMENTS_LAB_CHECK_CUH_

#include <stdio.h>

#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

#endif  // ATLAS_EXPERIMENTS_LAB_CHECK_CUH_
