// The CUDA host's start-up is thread-safe: threads race to be first (this
// binary's only tests, so the driver is not loaded before they run), each
// builds a backend with modules, works, and tears it down.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "tests/cuda/cuda_test_util.h"

namespace {

TEST(CudaHost, ConcurrentFirstUseLoadsOnceAndBackendsWork) {
  const int threads = 8;
  std::atomic<int> go{0};
  std::vector<StatusResult> results(threads);
  std::vector<CUcontext> contexts(threads);
  std::vector<std::thread> pool;
  CudaModuleSet set(&atlas_contract_cuda_module);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (go.load() == 0) {
      }
      const atlas_cuda_driver *d = nullptr;
      StatusResult r = Take(atlas_cuda_host_acquire(0, &d, &contexts[t]));
      if (r.code != ATLAS_STATUS_OK) {
        results[t] = r;
        return;
      }
      atlas_backend_options o{};
      o.modules = &set.set;
      for (int round = 0; round < 20 && r.code == ATLAS_STATUS_OK; ++round) {
        atlas_backend *b = nullptr;
        r = Take(atlas_cuda_backend_create(&o, &b));
        if (r.code != ATLAS_STATUS_OK) break;
        const atlas_kernel *fill = nullptr;
        void *dev = nullptr;
        r = Take(atlas_backend_kernel_lookup(b, "contract", "fill_u32", &fill));
        if (r.code == ATLAS_STATUS_OK)
          r = Take(atlas_backend_alloc(b, 4096, &dev));
        if (r.code == ATLAS_STATUS_OK) {
          atlas_launch_config c = CudaGrid(1024);
          atlas_arg args[3] = {ATLAS_ARG_PTR(dev), ATLAS_ARG_U32(1024),
                               ATLAS_ARG_U32(t * 100 + round)};
          r = Take(atlas_backend_launch_typed(b, fill, &c, args, 3));
        }
        uint32_t last = 0;
        if (r.code == ATLAS_STATUS_OK) {
          r = Take(atlas_backend_d2h(b, &last, (char *)dev + 4092, 4));
        }
        if (r.code == ATLAS_STATUS_OK && last != (uint32_t)(t * 100 + round)) {
          r = {ATLAS_STATUS_INTERNAL,
               "thread " + std::to_string(t) + " read " + std::to_string(last)};
        }
        if (dev != nullptr) {
          StatusResult f = Take(atlas_backend_free(b, dev));
          if (r.code == ATLAS_STATUS_OK) r = f;
        }
        StatusResult dr = Take(atlas_backend_destroy(b));
        if (r.code == ATLAS_STATUS_OK) r = dr;
      }
      results[t] = r;
    });
  }
  go.store(1);
  for (auto &th : pool) th.join();
  if (results[0].code == ATLAS_STATUS_UNAVAILABLE) {
    for (const StatusResult &r : results) {
      EXPECT_EQ(r.code, ATLAS_STATUS_UNAVAILABLE) << r.message;
      EXPECT_EQ(r.message, results[0].message) << "every thread, one reason";
    }
    ATLAS_CUDA_SKIP("CUDA unavailable: " << results[0].message);
  }
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(results[t].code, ATLAS_STATUS_OK)
        << "thread " << t << ": " << results[t].message;
    EXPECT_EQ(contexts[t], contexts[0]) << "one primary context per device";
  }
}

}  // namespace
