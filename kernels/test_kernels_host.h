// Host twins of the kernels in test_kernels.cu and other_kernels.cu, so the
// same modules run on the host backend. Each runs the whole grid in one call.
#ifndef ATLAS_KERNELS_TEST_KERNELS_HOST_H_
#define ATLAS_KERNELS_TEST_KERNELS_HOST_H_

#include "runtime/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

void atlas_test_empty_host(const atlas_launch_config *config, void **args);
void atlas_test_write_past_host(const atlas_launch_config *config, void **args);
void atlas_test_fill_u32_host(const atlas_launch_config *config, void **args);
void atlas_test_add_f32_host(const atlas_launch_config *config, void **args);
void atlas_test_axpb_f32_host(const atlas_launch_config *config, void **args);
void atlas_test_iota_i64_host(const atlas_launch_config *config, void **args);
void atlas_other_inc_u32_host(const atlas_launch_config *config, void **args);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_TEST_KERNELS_HOST_H_
