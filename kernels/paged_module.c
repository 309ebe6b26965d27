// The `paged` module: host twins and the CUDA fatbin of the paged-KV
// kernels, one definition for both backends.
#include "atlas/kernels/paged_fatbin.h"
#include "atlas/kernels/paged_kernels.h"

static const atlas_module_image kPagedImages[] = {
    {"cuda", atlas_fatbin_paged, ATLAS_FATBIN_PAGED_SIZE},
};

const atlas_module_def atlas_decoder_paged_module = {
    ATLAS_DECODER_PAGED_MODULE, kPagedImages, 1,
    atlas_decoder_paged_kernel_defs, ATLAS_DECODER_PAGED_KERNEL_COUNT};
