// Stand-in for the CUDA toolkit's cuda_runtime.h (see atlas_cuda_lint.h): the
// attributes and device functions come from the force-included header.
#ifndef ATLAS_LINT_CUDA_RUNTIME_H_
#define ATLAS_LINT_CUDA_RUNTIME_H_
#include "atlas_cuda_lint.h"
#endif  // ATLAS_LINT_CUDA_RUNTIME_H_
