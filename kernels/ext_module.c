// The `decoder_ext` module: the host twins of the decoder's optional ops.
// It has no CUDA image yet, so a CUDA backend made with its module set
// refuses to start, naming the module, rather than run a model whose
// descriptor needs these ops without them.
#include "atlas/kernels/ext_kernels.h"
#include "atlas/kernels/paged_kernels.h"
#include "atlas/kernels/prefill_kernels.h"
#include "atlas/kernels/quant_kernels.h"
#include "atlas/kernels/token_kernels.h"
#include "atlas/kernels/weight_scan_kernels.h"

const atlas_module_def atlas_decoder_ext_module = {
    ATLAS_DECODER_EXT_MODULE, NULL, 0, atlas_decoder_ext_kernel_defs,
    ATLAS_DECODER_EXT_KERNEL_COUNT};

static const atlas_module_def *const kExtModules[] = {
    &atlas_decoder_module,     &atlas_decoder_batch_module,
    &atlas_weight_scan_module, &atlas_decoder_paged_module,
    &atlas_decoder_ext_module, &atlas_quant_module};

const atlas_module_set atlas_decoder_ext_module_set = {kExtModules, 6};
