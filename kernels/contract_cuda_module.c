#include "atlas/kernels/contract_cuda_module.h"

#include "atlas/kernels/contract_fatbin.h"
#include "atlas/kernels/contract_other_fatbin.h"
#include "atlas/kernels/contract_ptx_fatbin.h"

// CUDA-only definitions: host_fn is NULL (the host backend uses its own).
static const atlas_kernel_def atlas_contract_kernels_[] = {
    {"empty", "", NULL},
    {"fill_u32", "puu", NULL},
    {"scale_add_f32", "puff", NULL},
    {"write_past", "puuu", NULL},
};

static const atlas_kernel_def atlas_contract_other_kernels_[] = {
    {"other_fill_u32", "puu", NULL},
};

#define ATLAS_COUNT_(a) (sizeof(a) / sizeof((a)[0]))

static const atlas_module_image kContractImage[] = {
    {"cuda", atlas_fatbin_contract, ATLAS_FATBIN_CONTRACT_SIZE}};
static const atlas_module_image kOtherImage[] = {
    {"cuda", atlas_fatbin_contract_other, ATLAS_FATBIN_CONTRACT_OTHER_SIZE}};
static const atlas_module_image kPtxImage[] = {
    {"cuda", atlas_fatbin_contract_ptx, ATLAS_FATBIN_CONTRACT_PTX_SIZE}};

const atlas_module_def atlas_contract_cuda_module = {
    "contract", kContractImage, 1, atlas_contract_kernels_,
    ATLAS_COUNT_(atlas_contract_kernels_)};

const atlas_module_def atlas_contract_other_cuda_module = {
    "other", kOtherImage, 1, atlas_contract_other_kernels_,
    ATLAS_COUNT_(atlas_contract_other_kernels_)};

const atlas_module_def atlas_contract_ptx_cuda_module = {
    "contract_ptx", kPtxImage, 1, atlas_contract_kernels_,
    ATLAS_COUNT_(atlas_contract_kernels_)};
