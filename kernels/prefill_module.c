// The `prefill` module: host twins and the CUDA fatbin of the prefill
// kernels, one definition for both backends.
#include "atlas/kernels/prefill_fatbin.h"
#include "atlas/kernels/prefill_kernels.h"

static const atlas_module_image kBatchImages[] = {
    {"cuda", atlas_fatbin_prefill, ATLAS_FATBIN_PREFILL_SIZE},
};

const atlas_module_def atlas_decoder_batch_module = {
    ATLAS_DECODER_BATCH_MODULE, kBatchImages, 1,
    atlas_decoder_batch_kernel_defs, ATLAS_DECODER_BATCH_KERNEL_COUNT};
