// The backend contract on the host backend, plus what only the host has.
#include "atlas/runtime/device/host_backend.h"

#include "atlas/runtime/device/host_pool.h"

#include "tests/runtime/backend_contract.h"
#include "tests/runtime/contract_kernels.h"
#include "tests/runtime/test_util.h"

namespace {

BackendFactory HostFactory() {
  return {"host", atlas_host_backend_create, &atlas_contract_host_module,
          &atlas_contract_other_module};
}

INSTANTIATE_TEST_SUITE_P(Host, BackendContract,
                         ::testing::Values(HostFactory()));

TEST(HostBackend, CapacityGivesOutOfMemoryWithFigures) {
  atlas_backend_options options{};
  options.capacity_bytes = 1000;
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&options, &b));
  void *p = nullptr, *q = nullptr;
  ASSERT_OK(atlas_backend_alloc(b, 600, &p));
  EXPECT_STATUS(atlas_backend_alloc(b, 600, &q), ATLAS_STATUS_OUT_OF_MEMORY,
                "600 bytes (600 B) requested but only 400 B of the 1.00 kB "
                "capacity remains");
  size_t free_bytes = 0;
  ASSERT_OK(atlas_backend_free_memory(b, &free_bytes));
  EXPECT_EQ(free_bytes, 400u);
  ASSERT_OK(atlas_backend_free(b, p));
  ASSERT_OK(atlas_backend_alloc(b, 1000, &q));
  ASSERT_OK(atlas_backend_free(b, q));
  ASSERT_OK(atlas_backend_destroy(b));
}

TEST(HostBackend, BadRedzoneVariableIsAClearError) {
  setenv("ATLAS_REDZONE", "lots", 1);
  atlas_backend *b = nullptr;
  EXPECT_STATUS(atlas_host_backend_create(nullptr, &b),
                ATLAS_STATUS_INVALID_ARGUMENT, "ATLAS_REDZONE='lots'");
  EXPECT_EQ(b, nullptr);
  unsetenv("ATLAS_REDZONE");
}

TEST(HostBackend, FailedModuleLoadLeavesNothing) {
  const atlas_module_def *mods[2] = {&atlas_contract_host_module,
                                     &atlas_contract_other_module};
  atlas_module_set set = {mods, 2};
  atlas_backend_options options{};
  options.modules = &set;
  options.fail_module_load_at = 2;
  atlas_backend *b = nullptr;
  EXPECT_STATUS(atlas_host_backend_create(&options, &b), ATLAS_STATUS_ABORTED,
                "loading kernel module 'other'");
  EXPECT_EQ(b, nullptr);
}

TEST(HostBackend, WithoutModulesKernelsAreNotFound) {
  atlas_backend *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &b));
  const atlas_kernel *k = nullptr;
  EXPECT_STATUS(atlas_backend_kernel_lookup(b, "contract", "fill_u32", &k),
                ATLAS_STATUS_NOT_FOUND, "no kernel modules loaded");
  ASSERT_OK(atlas_backend_destroy(b));
}

}  // namespace

namespace {

TEST(HostBackend, PoolIsSharedBetweenBackends) {
  atlas_host_pool *pool = nullptr;
  ASSERT_OK(atlas_host_pool_create(10000, &pool));
  atlas_backend_options options{};
  options.host_pool = pool;
  atlas_backend *a = nullptr, *b = nullptr;
  ASSERT_OK(atlas_host_backend_create(&options, &a));
  ASSERT_OK(atlas_host_backend_create(&options, &b));
  void *p = nullptr, *q = nullptr;
  ASSERT_OK(atlas_backend_alloc(a, 6000, &p));
  size_t free_bytes = 0;
  ASSERT_OK(atlas_backend_device_free_memory(b, &free_bytes));
  EXPECT_EQ(free_bytes, 4000u);
  EXPECT_STATUS(atlas_backend_alloc(b, 5000, &q), ATLAS_STATUS_OUT_OF_MEMORY,
                "only 4.00 kB of the 10.00 kB capacity remains");
  ASSERT_OK(atlas_backend_destroy(a));  // reclaims p into the pool
  ASSERT_OK(atlas_backend_alloc(b, 9000, &q));
  ASSERT_OK(atlas_backend_free(b, q));
  ASSERT_OK(atlas_backend_destroy(b));
  EXPECT_EQ(atlas_host_pool_used(pool), 0u);
  atlas_host_pool_destroy(pool);
}

}  // namespace
