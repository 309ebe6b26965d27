// The CUDA kernel images built into this binary, as `atlas --version` lists
// them: per module its bytes and entries (SASS loads as is on its GPU; PTX is
// JIT-compiled by the driver at first load), and where they came from (nvcc
// at build time, or the committed PTX of kernels/images/).
#ifndef ATLAS_KERNELS_IMAGES_REPORT_H_
#define ATLAS_KERNELS_IMAGES_REPORT_H_

#include <stdio.h>

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

// Writes the report of `set`'s CUDA images to `out`: a heading line, then
// one line a module. Returns 0, or -1 when writing failed.
int atlas_kernel_images_report(FILE *out, const atlas_module_set *set);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_IMAGES_REPORT_H_
