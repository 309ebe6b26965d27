// What only the CUDA backend has to prove: captures broken by errors, device
// red zones, module lifetime, isolation and refusals during capture. Every
// test skips with the reason where there is no driver or no GPU.
#include <stdlib.h>

#include <string>
#include <thread>
#include <vector>

#include "atlas/kernels/contract_cuda_module.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/cuda/cuda_host.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/runtime/test_util.h"

namespace {

// Owns a backend and checks its destroy.
class Cuda {
 public:
  ~Cuda() { Reset(); }
  void Reset() {
    if (b_ != nullptr) EXPECT_OK(atlas_backend_destroy(b_));
    b_ = nullptr;
  }
  atlas_backend *get() const { return b_; }
  atlas_backend **out() { return &b_; }

 private:
  atlas_backend *b_ = nullptr;
};

atlas_backend_options Options(const CudaModuleSet &set) {
  atlas_backend_options o{};
  o.modules = &set.set;
  return o;
}

TEST(CudaHost, MissingDriverOrDeviceIsAClearStatus) {
  int count = 0;
  StatusResult r = Take(atlas_cuda_host_device_count(&count));
  if (r.code != ATLAS_STATUS_OK) {
    EXPECT_EQ(r.code, ATLAS_STATUS_UNAVAILABLE);
    EXPECT_EQ(r.message.rfind("CUDA driver", 0), 0u) << r.message;
    ATLAS_CUDA_SKIP(r.message);
  }
  const atlas_cuda_driver *d = nullptr;
  CUcontext ctx = nullptr;
  std::string want = "no CUDA device " + std::to_string(count + 2) +
                     "; this machine has " + std::to_string(count);
  EXPECT_STATUS(atlas_cuda_host_acquire(count + 2, &d, &ctx),
                ATLAS_STATUS_UNAVAILABLE, want);
  atlas_backend_options o{};
  o.device = count + 2;
  atlas_backend *b = nullptr;
  EXPECT_STATUS(atlas_cuda_backend_create(&o, &b), ATLAS_STATUS_UNAVAILABLE,
                want);
  EXPECT_EQ(b, nullptr);
  if (count == 0) ATLAS_CUDA_SKIP("the driver is here but no GPU is");
  // One primary context per device for the whole process.
  CUcontext again = nullptr;
  ASSERT_OK(atlas_cuda_host_acquire(0, &d, &ctx));
  ASSERT_OK(atlas_cuda_host_acquire(0, &d, &again));
  EXPECT_EQ(ctx, again);
}

TEST(CudaBackend, ErrorMidCaptureThenAbortThenNormalWork) {
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(
      atlas_backend_kernel_lookup(b.get(), "contract", "fill_u32", &fill));
  const uint32_t n = 1024;
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d));
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  atlas_launch_config c = CudaGrid(n, s);
  atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_U32(1)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
  // The error: a launch the driver rejects (1025 threads per block) in the
  // middle of the capture, then a synchronous copy on the capturing stream.
  atlas_launch_config bad = c;
  bad.block = {1025, 1, 1};
  StatusResult err =
      Take(atlas_backend_launch_typed(b.get(), fill, &bad, args, 3));
  EXPECT_NE(err.code, ATLAS_STATUS_OK);
  EXPECT_NE(err.message.find("contract.fill_u32"), std::string::npos)
      << err.message;
  std::vector<uint32_t> host(n);
  StatusResult copy =
      Take(atlas_backend_d2h_on_stream(b.get(), host.data(), d, n * 4, s));
  EXPECT_NE(copy.code, ATLAS_STATUS_OK) << "a sync copy inside a capture";
  // The error path ends the capture it left open.
  bool aborted = false;
  ASSERT_OK(atlas_backend_abort_capture_if_active(b.get(), s, &aborted));
  EXPECT_TRUE(aborted);
  bool capturing = true;
  ASSERT_OK(atlas_backend_stream_is_capturing(b.get(), s, &capturing));
  EXPECT_FALSE(capturing);
  // Normal work on the same stream succeeds.
  atlas_arg args7[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_U32(7)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args7, 3));
  ASSERT_OK(atlas_backend_d2h_on_stream(b.get(), host.data(), d, n * 4, s));
  EXPECT_EQ(host[0], 7u);
  EXPECT_EQ(host[n - 1], 7u);
  // And a fresh capture on it works too.
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  atlas_arg args9[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_U32(9)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args9, 3));
  atlas_graph *g = nullptr;
  ASSERT_OK(atlas_backend_end_capture(b.get(), s, &g));
  ASSERT_OK(atlas_backend_launch_graph(b.get(), g, s));
  ASSERT_OK(atlas_backend_d2h_on_stream(b.get(), host.data(), d, n * 4, s));
  EXPECT_EQ(host[n / 2], 9u);
  ASSERT_OK(atlas_backend_destroy_graph(b.get(), g));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST(CudaBackend, KernelOverrunIsCaughtAndBisectedToItsBuffer) {
  ScopedEnv env("ATLAS_REDZONE", "64");
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  ASSERT_EQ(atlas_backend_redzone_bytes(b.get()), 64u);
  const atlas_kernel *k = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(b.get(), "contract", "write_past", &k));
  const size_t count = 100, culprit = 61, bytes = 4000;
  std::vector<void *> bufs(count);
  std::vector<uint64_t> index(count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_OK(atlas_backend_alloc(b.get(), bytes, &bufs[i]));
    atlas_ledger_entry e;
    ASSERT_OK(atlas_ledger_find(atlas_backend_ledger(b.get()),
                                (uintptr_t)bufs[i], &e));
    index[i] = e.index;
  }
  for (uint32_t kbytes : {1u, 7u, 64u}) {
    atlas_launch_config c = CudaGrid(kbytes);
    atlas_arg args[4] = {ATLAS_ARG_PTR(bufs[culprit]), ATLAS_ARG_U32(bytes),
                         ATLAS_ARG_U32(kbytes), ATLAS_ARG_U32(0x3C)};
    ASSERT_OK(atlas_backend_launch_typed(b.get(), k, &c, args, 4));
    atlas_redzone_violation v[4];
    size_t found = 0;
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), v, 4, &found));
    ASSERT_EQ(found, 1u) << kbytes << " bytes past";
    EXPECT_EQ(v[0].addr, (uintptr_t)bufs[culprit]);
    EXPECT_EQ(v[0].index, index[culprit]);
    EXPECT_EQ(v[0].bytes, bytes);
    EXPECT_EQ(v[0].first_offset, 0u);
    EXPECT_NE(std::string(v[0].site.file).find("cuda_backend_test.cc"),
              std::string::npos);
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
    EXPECT_EQ(found, 0u) << "the scan refills what it found";
  }
  // A bug that writes the fill byte (0x00 under poisoning) is invisible to a
  // plain scan; poisoning halves by creation index find its buffer.
  uint64_t lo = index[0], hi = index[count - 1] + 1;
  int rounds = 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    ASSERT_OK(atlas_backend_poison_redzones(b.get(), lo, mid));
    atlas_launch_config c = CudaGrid(8);
    atlas_arg args[4] = {ATLAS_ARG_PTR(bufs[culprit]), ATLAS_ARG_U32(bytes),
                         ATLAS_ARG_U32(8), ATLAS_ARG_U32(0)};
    ASSERT_OK(atlas_backend_launch_typed(b.get(), k, &c, args, 4));
    size_t found = 0;
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
    if (found > 0) {
      hi = mid;
    } else {
      lo = mid;
    }
    ++rounds;
  }
  EXPECT_EQ(lo, index[culprit]);
  EXPECT_LE(rounds, 7);
  for (void *p : bufs) ASSERT_OK(atlas_backend_free(b.get(), p));
}

TEST(CudaBackend, ThousandCreateDestroyCyclesGiveMemoryBack) {
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  size_t start = 0, end = 0;
  {
    // One cycle first: the primary context and the driver's lazy pools are
    // the process's, not the backend's.
    Cuda warm;
    CUDA_CREATE_OR_SKIP(&o, warm.out());
    void *d = nullptr;
    ASSERT_OK(atlas_backend_alloc(warm.get(), 1 << 20, &d));
    ASSERT_OK(atlas_backend_free(warm.get(), d));
    warm.Reset();
    Cuda probe;
    ASSERT_OK(atlas_cuda_backend_create(nullptr, probe.out()));
    ASSERT_OK(atlas_backend_device_free_memory(probe.get(), &start));
  }
  const atlas_kernel *fill = nullptr;
  for (int i = 0; i < 1000; ++i) {
    atlas_backend *b = nullptr;
    ASSERT_OK(atlas_cuda_backend_create(&o, &b));
    ASSERT_OK(atlas_backend_kernel_lookup(b, "contract", "fill_u32", &fill));
    void *d = nullptr;
    ASSERT_OK(atlas_backend_alloc(b, 1 << 20, &d));
    atlas_launch_config c = CudaGrid(1024);
    atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(1024),
                         ATLAS_ARG_U32(i)};
    ASSERT_OK(atlas_backend_launch_typed(b, fill, &c, args, 3));
    std::vector<unsigned char> src(4096, (unsigned char)i);
    ASSERT_OK(atlas_backend_h2d_async(b, d, src.data(), src.size(), nullptr));
    ASSERT_OK(atlas_backend_free(b, d));
    ASSERT_OK(atlas_backend_destroy(b));
  }
  Cuda probe;
  ASSERT_OK(atlas_cuda_backend_create(nullptr, probe.out()));
  ASSERT_OK(atlas_backend_device_free_memory(probe.get(), &end));
  double diff_mib = ((double)start - (double)end) / (1024.0 * 1024.0);
  RecordProperty("free_before", std::to_string(start));
  RecordProperty("free_after", std::to_string(end));
  EXPECT_LE(diff_mib, 2.0) << "driver free memory: " << start << " before, "
                           << end << " after 1000 cycles";
  printf(
      "1000 create/destroy cycles: driver free %zu -> %zu bytes (%+.3f MiB)\n",
      start, end, -diff_mib);
}

TEST(CudaBackend, ModuleSetsAreIsolated) {
  CudaModuleSet set_a(&atlas_contract_cuda_module);
  CudaModuleSet set_b(&atlas_contract_other_cuda_module);
  atlas_backend_options oa = Options(set_a), ob = Options(set_b);
  Cuda a, other;
  CUDA_CREATE_OR_SKIP(&oa, a.out());
  CUDA_CREATE_OR_SKIP(&ob, other.out());
  const atlas_kernel *k = nullptr;
  EXPECT_STATUS(
      atlas_backend_kernel_lookup(other.get(), "contract", "empty", &k),
      ATLAS_STATUS_NOT_FOUND, "contract");
  EXPECT_STATUS(
      atlas_backend_kernel_lookup(a.get(), "other", "other_fill_u32", &k),
      ATLAS_STATUS_NOT_FOUND, "other");
  ASSERT_OK(
      atlas_backend_kernel_lookup(other.get(), "other", "other_fill_u32", &k));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(a.get(), 64, &d));
  atlas_launch_config c = CudaGrid(16);
  uint32_t n = 16, v = 3;
  void *raw[3] = {&d, &n, &v};
  EXPECT_STATUS(atlas_backend_launch(a.get(), k, &c, raw),
                ATLAS_STATUS_FAILED_PRECONDITION, "another model's registry");
  ASSERT_OK(atlas_backend_free(a.get(), d));
}

TEST(CudaBackend, ReportDuringCaptureRefusesWithoutBreakingIt) {
  ScopedEnv env("ATLAS_REDZONE", "32");
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(
      atlas_backend_kernel_lookup(b.get(), "contract", "fill_u32", &fill));
  const uint32_t n = 256;
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d));
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  atlas_launch_config c = CudaGrid(n, s);
  atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_U32(5)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
  // Reports that read the device refuse; the ledger report needs no device.
  size_t found = 0;
  EXPECT_STATUS(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found),
                ATLAS_STATUS_FAILED_PRECONDITION, "capturing");
  EXPECT_STATUS(atlas_backend_poison_redzones(b.get(), 0, 10),
                ATLAS_STATUS_FAILED_PRECONDITION, "capturing");
  EXPECT_STATUS(atlas_backend_synchronize(b.get()),
                ATLAS_STATUS_FAILED_PRECONDITION, "capturing");
  EXPECT_STATUS(atlas_backend_stream_synchronize(b.get(), s),
                ATLAS_STATUS_FAILED_PRECONDITION, "capturing");
  atlas_sweep_result sweep;
  EXPECT_STATUS(atlas_backend_sweep_unreleased(b.get(), &sweep),
                ATLAS_STATUS_FAILED_PRECONDITION, "capturing");
  char *text = nullptr;
  ASSERT_OK(atlas_backend_alloc_report(b.get(), 0, 0.0, &text));
  EXPECT_NE(std::string(text).find("cuda_backend_test.cc"), std::string::npos);
  free(text);
  // The capture is intact.
  bool capturing = false;
  ASSERT_OK(atlas_backend_stream_is_capturing(b.get(), s, &capturing));
  EXPECT_TRUE(capturing);
  atlas_graph *g = nullptr;
  ASSERT_OK(atlas_backend_end_capture(b.get(), s, &g));
  ASSERT_OK(atlas_backend_launch_graph(b.get(), g, s));
  ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s));
  std::vector<uint32_t> host(n);
  ASSERT_OK(atlas_backend_d2h(b.get(), host.data(), d, n * 4));
  EXPECT_EQ(host[n - 1], 5u);
  ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
  EXPECT_EQ(found, 0u);
  ASSERT_OK(atlas_backend_destroy_graph(b.get(), g));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST(CudaBackend, ModuleBuiltWithoutNvccOrCorruptIsAClearError) {
  static const atlas_kernel_def kDefs[] = {{"empty", "", nullptr}};
  static const unsigned char kJunk[64] = {1, 2, 3, 4, 5, 6, 7, 8};
  const atlas_module_image empty_image[] = {{"cuda", kJunk, 0}};
  const atlas_module_image junk_image[] = {{"cuda", kJunk, sizeof(kJunk)}};
  const atlas_module_def no_image = {"empty_image", empty_image, 1, kDefs, 1};
  const atlas_module_def junk = {"junk", junk_image, 1, kDefs, 1};
  Cuda probe;
  CUDA_CREATE_OR_SKIP(nullptr, probe.out());
  atlas_backend *b = nullptr;
  CudaModuleSet s1(&no_image);
  atlas_backend_options o1 = Options(s1);
  EXPECT_STATUS(atlas_cuda_backend_create(&o1, &b), ATLAS_STATUS_UNAVAILABLE,
                "kernel module 'empty_image' was built without nvcc");
  EXPECT_EQ(b, nullptr);
  CudaModuleSet s2(&junk);
  atlas_backend_options o2 = Options(s2);
  StatusResult r = Take(atlas_cuda_backend_create(&o2, &b));
  EXPECT_NE(r.code, ATLAS_STATUS_OK);
  EXPECT_NE(r.message.find("loading kernel module 'junk'"), std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("CUDA_ERROR_"), std::string::npos) << r.message;
  EXPECT_EQ(b, nullptr);
}

TEST(CudaBackend, FailedModuleLoadLeavesNothingLoaded) {
  const atlas_module_def *mods[2] = {&atlas_contract_cuda_module,
                                     &atlas_contract_other_cuda_module};
  atlas_module_set set = {mods, 2};
  atlas_backend_options o{};
  o.modules = &set;
  o.fail_module_load_at = 2;
  Cuda probe;
  CUDA_CREATE_OR_SKIP(nullptr, probe.out());
  atlas_backend *b = nullptr;
  EXPECT_STATUS(atlas_cuda_backend_create(&o, &b), ATLAS_STATUS_ABORTED,
                "loading kernel module 'other'");
  EXPECT_EQ(b, nullptr);
}

// background_modules: create returns before the modules are loaded; the
// first lookup waits for them, and a failed load is reported there (and by
// atlas_backend_modules_ready, every time) with nothing left loaded.
TEST(CudaBackend, BackgroundModulesLoadBeforeTheFirstLookup) {
  const atlas_module_def *mods[2] = {&atlas_contract_cuda_module,
                                     &atlas_contract_other_cuda_module};
  atlas_module_set set = {mods, 2};
  atlas_backend_options o{};
  o.modules = &set;
  o.background_modules = true;
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  void *dev = nullptr;  // the backend works while the modules load
  ASSERT_OK(atlas_backend_alloc(b.get(), 4096, &dev));
  atlas_backend_modules_start(b.get());
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(
      atlas_backend_kernel_lookup(b.get(), "contract", "fill_u32", &fill));
  ASSERT_OK(atlas_backend_modules_ready(b.get()));
  atlas_launch_config c = CudaGrid(1024);
  atlas_arg args[3] = {ATLAS_ARG_PTR(dev), ATLAS_ARG_U32(1024),
                       ATLAS_ARG_U32(0xBEEF)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
  uint32_t last = 0;
  ASSERT_OK(atlas_backend_d2h(b.get(), &last, (uint32_t *)dev + 1023, 4));
  EXPECT_EQ(last, 0xBEEFu);
  ASSERT_OK(atlas_backend_free(b.get(), dev));

  long before = atlas_cuda_host_loaded_modules();
  o.fail_module_load_at = 2;
  atlas_backend *bad = nullptr;
  ASSERT_OK(atlas_cuda_backend_create(&o, &bad));
  EXPECT_STATUS(atlas_backend_kernel_lookup(bad, "contract", "fill_u32", &fill),
                ATLAS_STATUS_ABORTED, "loading kernel module 'other'");
  EXPECT_STATUS(atlas_backend_modules_ready(bad), ATLAS_STATUS_ABORTED,
                "loading kernel module 'other'");
  EXPECT_EQ(atlas_backend_kernel_registry(bad), nullptr);
  EXPECT_EQ(atlas_cuda_host_loaded_modules(), before);
  ASSERT_OK(atlas_backend_destroy(bad));

  // Destroyed with the load under way: destroy waits for it, then unloads.
  o.fail_module_load_at = 0;
  ASSERT_OK(atlas_cuda_backend_create(&o, &bad));
  atlas_backend_modules_start(bad);
  ASSERT_OK(atlas_backend_destroy(bad));
  EXPECT_EQ(atlas_cuda_host_loaded_modules(), before);
  // Never started: destroy drops them without loading anything.
  ASSERT_OK(atlas_cuda_backend_create(&o, &bad));
  ASSERT_OK(atlas_backend_destroy(bad));
  EXPECT_EQ(atlas_cuda_host_loaded_modules(), before);
}

TEST(CudaBackend, PinnedMemoryIsReachableFromKernels) {
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(
      atlas_backend_kernel_lookup(b.get(), "contract", "fill_u32", &fill));
  void *pinned = nullptr, *dev = nullptr;
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 1024 * 4, &pinned));
  ASSERT_OK(atlas_backend_host_ptr_to_device(b.get(), pinned, &dev));
  atlas_launch_config c = CudaGrid(1024);
  atlas_arg args[3] = {ATLAS_ARG_PTR(dev), ATLAS_ARG_U32(1024),
                       ATLAS_ARG_U32(0xC0FFEE)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  EXPECT_EQ(((uint32_t *)pinned)[1023], 0xC0FFEEu);
  ASSERT_OK(atlas_backend_pinned_free(b.get(), pinned));
}

TEST(CudaBackend, LaunchFromAnUnboundThreadWorks) {
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  Cuda b;
  CUDA_CREATE_OR_SKIP(&o, b.out());
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(
      atlas_backend_kernel_lookup(b.get(), "contract", "fill_u32", &fill));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 4096, &d));
  StatusResult launched{}, synced{};
  std::thread t([&] {
    atlas_launch_config c = CudaGrid(1024);
    atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(1024),
                         ATLAS_ARG_U32(11)};
    launched = Take(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
    synced = Take(atlas_backend_synchronize(b.get()));
  });
  t.join();
  EXPECT_EQ(launched.code, ATLAS_STATUS_OK) << launched.message;
  EXPECT_EQ(synced.code, ATLAS_STATUS_OK) << synced.message;
  uint32_t last = 0;
  ASSERT_OK(atlas_backend_d2h(b.get(), &last, (char *)d + 4092, 4));
  EXPECT_EQ(last, 11u);
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST(CudaBackend, H2dAsyncSourcesMayBeDroppedAtOnce) {
  Cuda b;
  CUDA_CREATE_OR_SKIP(nullptr, b.out());
  // Many copies in flight, of sizes that need new, reused and grown staging
  // buffers; each source is overwritten and freed right after the call.
  const int copies = 64;
  std::vector<void *> dst(copies);
  std::vector<size_t> sizes(copies);
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  for (int i = 0; i < copies; ++i) {
    sizes[i] = (size_t)(1 + (i * 7919) % 300000);
    ASSERT_OK(atlas_backend_alloc(b.get(), sizes[i], &dst[i]));
    std::vector<unsigned char> *src =
        new std::vector<unsigned char>(sizes[i], (unsigned char)(i + 1));
    ASSERT_OK(atlas_backend_h2d_async(b.get(), dst[i], src->data(), sizes[i],
                                      i % 2 ? s : nullptr));
    std::fill(src->begin(), src->end(), 0xFF);
    delete src;
  }
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  for (int i = 0; i < copies; ++i) {
    std::vector<unsigned char> back(sizes[i]);
    ASSERT_OK(atlas_backend_d2h(b.get(), back.data(), dst[i], sizes[i]));
    ASSERT_EQ(back.front(), (unsigned char)(i + 1)) << "copy " << i;
    ASSERT_EQ(back.back(), (unsigned char)(i + 1)) << "copy " << i;
    ASSERT_OK(atlas_backend_free(b.get(), dst[i]));
  }
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
}

TEST(CudaBackend, H2dAsyncInsideACaptureKeepsItsBytesForReplays) {
  Cuda b;
  CUDA_CREATE_OR_SKIP(nullptr, b.out());
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 4096, &d));
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  {
    std::vector<unsigned char> src(4096, 0x77);
    ASSERT_OK(atlas_backend_h2d_async(b.get(), d, src.data(), src.size(), s));
    std::fill(src.begin(), src.end(), 0x00);
  }
  atlas_graph *g = nullptr;
  ASSERT_OK(atlas_backend_end_capture(b.get(), s, &g));
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_OK(atlas_backend_memset(b.get(), d, 0x11, 4096));
    // Later h2d_async calls must not reuse the graph's staging buffer.
    std::vector<unsigned char> other(4096, 0x22);
    void *scratch = nullptr;
    ASSERT_OK(atlas_backend_alloc(b.get(), 4096, &scratch));
    ASSERT_OK(atlas_backend_h2d_async(b.get(), scratch, other.data(), 4096, s));
    ASSERT_OK(atlas_backend_launch_graph(b.get(), g, s));
    ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s));
    unsigned char back[4096];
    ASSERT_OK(atlas_backend_d2h(b.get(), back, d, sizeof(back)));
    EXPECT_EQ(back[0], 0x77) << "replay " << replay;
    EXPECT_EQ(back[4095], 0x77) << "replay " << replay;
    ASSERT_OK(atlas_backend_free(b.get(), scratch));
  }
  ASSERT_OK(atlas_backend_destroy_graph(b.get(), g));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST(CudaBackend, DestroyWhileCapturingAbortsAndSaysSo) {
  atlas_backend *b = nullptr;
  CUDA_CREATE_OR_SKIP(nullptr, &b);
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b, &s));
  ASSERT_OK(atlas_backend_begin_capture(b, s));
  EXPECT_STATUS(atlas_backend_destroy(b), ATLAS_STATUS_FAILED_PRECONDITION,
                "the capture was aborted");
  // The context is still fine for everyone else.
  Cuda after;
  ASSERT_OK(atlas_cuda_backend_create(nullptr, after.out()));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(after.get(), 64, &d));
  ASSERT_OK(atlas_backend_memset(after.get(), d, 1, 64));
  ASSERT_OK(atlas_backend_free(after.get(), d));
}

// The child of the death test below: launches a kernel that writes to
// address 16 under ATLAS_DEBUG_SYNC and prints the status.
[[noreturn]] void DebugSyncChild() {
  setenv("ATLAS_DEBUG_SYNC", "1", 1);
  CudaModuleSet set(&atlas_contract_cuda_module);
  atlas_backend_options o = Options(set);
  atlas_backend *b = nullptr;
  if (atlas_cuda_backend_create(&o, &b) != ATLAS_OK) exit(3);
  if (!atlas_backend_debug_sync_kernels(b)) exit(4);
  const atlas_kernel *k = nullptr;
  if (atlas_backend_kernel_lookup(b, "contract", "write_past", &k) !=
      ATLAS_OK) {
    exit(5);
  }
  atlas_launch_config c = CudaGrid(1);
  atlas_arg args[4] = {ATLAS_ARG_PTR((void *)16), ATLAS_ARG_U32(0),
                       ATLAS_ARG_U32(1), ATLAS_ARG_U32(1)};
  atlas_status s = atlas_backend_launch_typed(b, k, &c, args, 4);
  fprintf(stderr, "status: %s\n", atlas_status_message(s));
  exit(s == ATLAS_OK ? 6 : 0);
}

// A faulting kernel corrupts the (shared, process-wide) primary context, so
// this runs in a child process: gtest's threadsafe death tests re-execute the
// binary for just this test.
TEST(CudaBackendDeathTest, DebugSyncNamesTheFailingKernel) {
  {
    Cuda probe;
    CUDA_CREATE_OR_SKIP(nullptr, probe.out());
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(DebugSyncChild(), ::testing::ExitedWithCode(0),
              "kernel contract.write_past failed \\(ATLAS_DEBUG_SYNC");
}

}  // namespace
