#include "kernels/test_module.h"

#include "kernels/other_kernels_fatbin.h"
#include "kernels/test_kernels_fatbin.h"
#include "kernels/test_kernels_host.h"
#include "kernels/test_kernels_ptx_fatbin.h"

static const atlas_kernel_def atlas_test_kernel_defs_[] = {
    {"empty", "", atlas_test_empty_host},
    {"write_past", "puu", atlas_test_write_past_host},
    {"fill_u32", "puu", atlas_test_fill_u32_host},
    {"add_f32", "pppu", atlas_test_add_f32_host},
    {"axpb_f32", "pfiu", atlas_test_axpb_f32_host},
    {"iota_i64", "plu", atlas_test_iota_i64_host},
};

static const atlas_kernel_def atlas_other_kernel_defs_[] = {
    {"inc_u32", "pu", atlas_other_inc_u32_host},
};

#define ATLAS_COUNT_(a) (sizeof(a) / sizeof((a)[0]))

const atlas_module_def atlas_test_module = {
    "test",
    atlas_fatbin_test_kernels,
    ATLAS_FATBIN_TEST_KERNELS_SIZE,
    atlas_test_kernel_defs_,
    ATLAS_COUNT_(atlas_test_kernel_defs_),
};

const atlas_module_def atlas_test_ptx_module = {
    "test_ptx",
    atlas_fatbin_test_kernels_ptx,
    ATLAS_FATBIN_TEST_KERNELS_PTX_SIZE,
    atlas_test_kernel_defs_,
    ATLAS_COUNT_(atlas_test_kernel_defs_),
};

const atlas_module_def atlas_other_module = {
    "other",
    atlas_fatbin_other_kernels,
    ATLAS_FATBIN_OTHER_KERNELS_SIZE,
    atlas_other_kernel_defs_,
    ATLAS_COUNT_(atlas_other_kernel_defs_),
};

static const atlas_module_def *const atlas_test_set_modules_[] = {
    &atlas_test_module};
static const atlas_module_def *const atlas_other_set_modules_[] = {
    &atlas_other_module};
static const atlas_module_def *const atlas_test_ptx_set_modules_[] = {
    &atlas_test_ptx_module};

const atlas_module_set atlas_test_module_set = {atlas_test_set_modules_, 1};
const atlas_module_set atlas_other_module_set = {atlas_other_set_modules_, 1};
const atlas_module_set atlas_test_ptx_module_set = {
    atlas_test_ptx_set_modules_, 1};
