// The `token` module: one definition serving both backends (the host calls
// the C functions, CUDA loads the fatbin and finds the same names).
#include "atlas/kernels/moe_kernels.h"
#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/quant_kernels.h"
#include "atlas/kernels/token_fatbin.h"
#include "atlas/kernels/token_host.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/kernels/weight_scan_kernels.h"

static const atlas_module_image kTokenImages[] = {
    {"cuda", atlas_fatbin_token, ATLAS_FATBIN_TOKEN_SIZE},
};

const atlas_module_def atlas_decoder_module = {
    ATLAS_DECODER_MODULE, kTokenImages, 1, atlas_decoder_kernel_defs,
    ATLAS_DECODER_KERNEL_COUNT};

// weight_scan: the load checks the uploaded weights where they landed;
// paged: the batch step over the paged KV pool; quant: a quantized
// checkpoint's products.
static const atlas_module_def *const kDecoderModules[] = {
    &atlas_decoder_module, &atlas_decoder_batch_module,
    &atlas_weight_scan_module, &atlas_decoder_paged_module,
    &atlas_quant_module};

const atlas_module_set atlas_decoder_module_set = {kDecoderModules, 5};

static const atlas_module_def *const kMoeDecoderModules[] = {
    &atlas_decoder_module,     &atlas_decoder_batch_module,
    &atlas_weight_scan_module, &atlas_decoder_paged_module,
    &atlas_quant_module,       &atlas_moe_module};

const atlas_module_set atlas_decoder_moe_module_set = {kMoeDecoderModules, 6};
