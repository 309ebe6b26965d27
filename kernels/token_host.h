// Host one-token decoder kernels (token_host.c).
#ifndef ATLAS_KERNELS_TOKEN_HOST_H_
#define ATLAS_KERNELS_TOKEN_HOST_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

// Sized so that adding a kernel without updating the count fails to compile
// (too many initialisers); llama_test checks no entry is left empty.
#define ATLAS_DECODER_KERNEL_COUNT 36
extern const atlas_kernel_def
    atlas_decoder_kernel_defs[ATLAS_DECODER_KERNEL_COUNT];

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_TOKEN_HOST_H_
