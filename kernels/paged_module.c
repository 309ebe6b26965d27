// The `llama_paged` module: host twins and the CUDA fatbin of the paged-KV
// kernels, one definition for both backends.
#include "atlas/kernels/paged_fatbin.h"
#include "atlas/kernels/paged_kernels.h"

static const atlas_module_image kPagedImages[] = {
    {"cuda", atlas_fatbin_paged, ATLAS_FATBIN_PAGED_SIZE},
};

const atlas_module_def atlas_llama_paged_module = {
    ATLAS_LLAMA_PAGED_MODULE, kPagedImages, 1, atlas_llama_paged_kernel_defs,
    ATLAS_LLAMA_PAGED_KERNEL_COUNT};
