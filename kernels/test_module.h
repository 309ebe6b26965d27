// Module definitions for tests and benchmarks: `test` (test_kernels.cu),
// `test_ptx` (the same kernels as PTX only, to time a JIT load) and `other`
// (other_kernels.cu, standing in for a second model's module set).
//
// Kernels of `test`: empty(), write_past(p buf, u bytes, u k),
// fill_u32(p out, u n, u value), add_f32(p a, p b, p out, u n),
// axpb_f32(p x, f s, i delta, u n), iota_i64(p out, l base, u n).
// Kernels of `other`: inc_u32(p x, u n).
#ifndef ATLAS_KERNELS_TEST_MODULE_H_
#define ATLAS_KERNELS_TEST_MODULE_H_

#include "runtime/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const atlas_module_def atlas_test_module;
extern const atlas_module_def atlas_test_ptx_module;
extern const atlas_module_def atlas_other_module;

// {test}: the module set of the test "model".
extern const atlas_module_set atlas_test_module_set;
// {other}: a second model's set.
extern const atlas_module_set atlas_other_module_set;
// {test_ptx}: the test kernels without SASS (JIT-compiled at load).
extern const atlas_module_set atlas_test_ptx_module_set;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_TEST_MODULE_H_
