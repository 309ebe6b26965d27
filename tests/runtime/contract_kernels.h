// Kernels the backend contract suite launches, with one definition per
// backend: host C functions here, CUDA C in kernels/contract.cu. Same names,
// same signatures, same meaning.
//   empty()                       ""      does nothing (launch overhead)
//   fill_u32(dst, n, value)       "puu"   dst[i] = value for i < n
//   scale_add_f32(x, n, a, b)     "puff"  x[i] = x[i] * a + b for i < n
//   write_past(buf, n, k, value)  "puuu"  bytes [n, n + k) of buf = value
// One thread per element on CUDA: launch with grid = ceil(n / 256), block 256.
#ifndef ATLAS_TESTS_RUNTIME_CONTRACT_KERNELS_H_
#define ATLAS_TESTS_RUNTIME_CONTRACT_KERNELS_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_CONTRACT_MODULE "contract"

// The module with host implementations only (fatbin NULL).
extern const atlas_module_def atlas_contract_host_module;
// A second module whose kernels have other names, for isolation tests.
extern const atlas_module_def atlas_contract_other_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TESTS_RUNTIME_CONTRACT_KERNELS_H_
