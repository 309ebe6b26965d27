// The `llama` module: one definition serving both backends (the host calls
// the C functions, CUDA loads the fatbin and finds the same names).
#include "atlas/kernels/llama_fatbin.h"
#include "atlas/kernels/llama_host.h"
#include "atlas/kernels/llama_kernels.h"
#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/weight_scan_kernels.h"

static const atlas_module_image kLlamaImages[] = {
    {"cuda", atlas_fatbin_llama, ATLAS_FATBIN_LLAMA_SIZE},
};

const atlas_module_def atlas_llama_module = {ATLAS_LLAMA_MODULE, kLlamaImages,
                                             1, atlas_llama_kernel_defs,
                                             ATLAS_LLAMA_KERNEL_COUNT};

// weight_scan: the load checks the uploaded weights where they landed;
// llama_paged: the batch step over the paged KV pool.
static const atlas_module_def *const kLlamaModules[] = {
    &atlas_llama_module, &atlas_llama_batch_module, &atlas_weight_scan_module,
    &atlas_llama_paged_module};

const atlas_module_set atlas_llama_module_set = {kLlamaModules, 4};
