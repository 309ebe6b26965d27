// The weight scan (module "weight_scan"): content digest and NaN/Inf search
// over a tensor already on the backend, host C and CUDA alike.
//
//   weight_scan(data, bytes, finite, result)                 "plup"
//       result[0] += the digest of data[0..bytes) as a whole tensor
//       (runtime/base/weight_scan.h); result[1] = min(result[1], its first
//       non-finite element index, UINT64_MAX if none). finite is an
//       atlas_scan_finite. CUDA launch: block 256, any grid (see
//       weight_scan.cu); the host runs it in one call.
#ifndef ATLAS_KERNELS_WEIGHT_SCAN_KERNELS_H_
#define ATLAS_KERNELS_WEIGHT_SCAN_KERNELS_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_WEIGHT_SCAN_MODULE "weight_scan"
#define ATLAS_WEIGHT_SCAN_KERNEL "weight_scan"
#define ATLAS_WEIGHT_SCAN_BLOCK 256

// Host C twin and the CUDA fatbin under one definition.
extern const atlas_module_def atlas_weight_scan_module;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_WEIGHT_SCAN_KERNELS_H_
