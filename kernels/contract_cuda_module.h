// CUDA module definitions of the backend contract kernels (contract.cu,
// contract_other.cu); the host twins are in tests/runtime/contract_kernels.h.
// Also used by the CUDA tests and `bench cuda`.
#ifndef ATLAS_KERNELS_CONTRACT_CUDA_MODULE_H_
#define ATLAS_KERNELS_CONTRACT_CUDA_MODULE_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

// "contract": empty, fill_u32 (puu), scale_add_f32 (puff), write_past (puuu).
extern const atlas_module_def atlas_contract_cuda_module;
// "other": other_fill_u32 (puu).
extern const atlas_module_def atlas_contract_other_cuda_module;
// "contract_ptx": the contract kernels as compute_90 PTX only, so loading
// them JIT-compiles (the benchmark's comparison for embedded SASS).
extern const atlas_module_def atlas_contract_ptx_cuda_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_CONTRACT_CUDA_MODULE_H_
