// The backend contract: what every backend must do, tested the same way.
#include "tests/runtime/backend_contract.h"

#include <jansson.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/device/op_cache.h"
#include "tests/cuda/cuda_skip.h"
#include "tests/runtime/contract_kernels.h"
#include "tests/runtime/test_util.h"

namespace {

// Owns a backend; destroys it at scope end and checks the destroy succeeded.
class Backend {
 public:
  Backend() = default;
  ~Backend() { Reset(); }
  void Reset() {
    if (b_ != nullptr) EXPECT_OK(atlas_backend_destroy(b_));
    b_ = nullptr;
  }
  atlas_backend *get() const { return b_; }
  atlas_backend **out() { return &b_; }

 private:
  atlas_backend *b_ = nullptr;
};

atlas_launch_config Grid(uint32_t n, atlas_stream *stream = nullptr) {
  atlas_launch_config c{};
  c.grid = {(n + 255) / 256 ? (n + 255) / 256 : 1, 1, 1};
  c.block = {256, 1, 1};
  c.stream = stream;
  return c;
}

// Creates a backend with the contract module (or `module`).
StatusResult Make(const BackendFactory &f, Backend *backend,
                  const atlas_module_def *module = nullptr) {
  const atlas_module_def *mods[1] = {module ? module : f.contract_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options options{};
  options.modules = &set;
  return Take(f.create(&options, backend->out()));
}

// Skips the test when the device is not there (no driver, no GPU): the
// status says why, and the skip message repeats it.
#define MAKE_OR_SKIP(backend, ...)                                           \
  do {                                                                       \
    StatusResult made_ = Make(GetParam(), &(backend), ##__VA_ARGS__);        \
    if (made_.code == ATLAS_STATUS_UNAVAILABLE) {                            \
      ATLAS_CUDA_SKIP(GetParam().name << " unavailable: " << made_.message); \
    }                                                                        \
    ASSERT_EQ(made_.code, ATLAS_STATUS_OK) << made_.message;                 \
  } while (0)

std::vector<uint32_t> ReadU32(atlas_backend *b, const void *src, size_t n) {
  std::vector<uint32_t> out(n);
  StatusResult r = Take(atlas_backend_d2h(b, out.data(), src, n * 4));
  EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  return out;
}

TEST_P(BackendContract, LedgerTracksAllocAndFree) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *p = nullptr, *q = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 1000, &p));
  ASSERT_OK(atlas_backend_alloc(b.get(), 24, &q));
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 1024u);
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 2u);
  ASSERT_OK(atlas_backend_free(b.get(), p));
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 24u);
  EXPECT_STATUS(atlas_backend_free(b.get(), p),
                ATLAS_STATUS_FAILED_PRECONDITION, "double free");
  int local = 0;
  EXPECT_STATUS(atlas_backend_free(b.get(), &local),
                ATLAS_STATUS_INVALID_ARGUMENT, "never allocated");
  EXPECT_STATUS(atlas_backend_alloc(b.get(), 0, &p),
                ATLAS_STATUS_INVALID_ARGUMENT, "0 bytes");
  ASSERT_OK(atlas_backend_free(b.get(), q));
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
}

TEST_P(BackendContract, CopiesRoundTrip) {
  Backend b;
  MAKE_OR_SKIP(b);
  const size_t n = 4096;
  std::vector<uint32_t> src(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) src[i] = (uint32_t)(i * 2654435761u);
  void *d1 = nullptr, *d2 = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d1));
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d2));
  ASSERT_OK(atlas_backend_h2d(b.get(), d1, src.data(), n * 4));
  ASSERT_OK(atlas_backend_d2d(b.get(), d2, d1, n * 4));
  ASSERT_OK(atlas_backend_d2h(b.get(), back.data(), d2, n * 4));
  EXPECT_EQ(back, src);

  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  // The source of h2d_async may be dropped as soon as the call returns.
  std::vector<uint32_t> *tmp = new std::vector<uint32_t>(n, 7u);
  ASSERT_OK(atlas_backend_h2d_async(b.get(), d1, tmp->data(), n * 4, s));
  std::fill(tmp->begin(), tmp->end(), 99u);
  delete tmp;
  ASSERT_OK(atlas_backend_d2d_async(b.get(), d2, d1, n * 4, s));
  std::vector<uint32_t> retained(n, 5u);
  void *d3 = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d3));
  ASSERT_OK(
      atlas_backend_h2d_async_retained(b.get(), d3, retained.data(), n * 4, s));
  void *pinned = nullptr;
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), n * 4, &pinned));
  ASSERT_OK(atlas_backend_d2h_async(b.get(), pinned, d2, n * 4, s));
  ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s));
  EXPECT_EQ(((uint32_t *)pinned)[0], 7u);
  EXPECT_EQ(((uint32_t *)pinned)[n - 1], 7u);
  std::vector<uint32_t> got(n);
  ASSERT_OK(atlas_backend_d2h_on_stream(b.get(), got.data(), d3, n * 4, s));
  EXPECT_EQ(got, retained);
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_pinned_free(b.get(), pinned));
  ASSERT_OK(atlas_backend_free(b.get(), d1));
  ASSERT_OK(atlas_backend_free(b.get(), d2));
  ASSERT_OK(atlas_backend_free(b.get(), d3));
}

TEST_P(BackendContract, PitchedCopyMovesOnlyTheRows) {
  Backend b;
  MAKE_OR_SKIP(b);
  const size_t width = 24, height = 5, src_pitch = 64, dst_pitch = 32;
  std::vector<unsigned char> src(src_pitch * height), out(dst_pitch * height);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (unsigned char)i;
  void *ds = nullptr, *dd = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), src.size(), &ds));
  ASSERT_OK(atlas_backend_alloc(b.get(), out.size(), &dd));
  ASSERT_OK(atlas_backend_h2d(b.get(), ds, src.data(), src.size()));
  ASSERT_OK(atlas_backend_memset(b.get(), dd, 0xAB, out.size()));
  ASSERT_OK(atlas_backend_d2d_2d_async(b.get(), dd, dst_pitch, ds, src_pitch,
                                       width, height, nullptr));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  ASSERT_OK(atlas_backend_d2h(b.get(), out.data(), dd, out.size()));
  for (size_t r = 0; r < height; ++r) {
    for (size_t c = 0; c < dst_pitch; ++c) {
      unsigned char want = c < width ? src[r * src_pitch + c] : 0xAB;
      ASSERT_EQ(out[r * dst_pitch + c], want) << "row " << r << " col " << c;
    }
  }
  ASSERT_OK(atlas_backend_free(b.get(), ds));
  ASSERT_OK(atlas_backend_free(b.get(), dd));
}

TEST_P(BackendContract, MemsetSyncAndAsync) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 256, &d));
  ASSERT_OK(atlas_backend_memset(b.get(), d, 0x11, 256));
  ASSERT_OK(
      atlas_backend_memset_async(b.get(), (char *)d + 128, 0x22, 128, nullptr));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  unsigned char out[256];
  ASSERT_OK(atlas_backend_d2h(b.get(), out, d, 256));
  EXPECT_EQ(out[0], 0x11);
  EXPECT_EQ(out[127], 0x11);
  EXPECT_EQ(out[128], 0x22);
  EXPECT_EQ(out[255], 0x22);
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST_P(BackendContract, EventsOrderStreams) {
  Backend b;
  MAKE_OR_SKIP(b);
  atlas_stream *s1 = nullptr, *s2 = nullptr;
  atlas_event *e = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s1));
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s2));
  ASSERT_OK(atlas_backend_event_create(b.get(), &e));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 1 << 20, &d));
  ASSERT_OK(atlas_backend_memset_async(b.get(), d, 0x5A, 1 << 20, s1));
  ASSERT_OK(atlas_backend_event_record(b.get(), e, s1));
  ASSERT_OK(atlas_backend_event_wait(b.get(), s2, e));
  void *pinned = nullptr;
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 1 << 20, &pinned));
  ASSERT_OK(atlas_backend_d2h_async(b.get(), pinned, d, 1 << 20, s2));
  ASSERT_OK(atlas_backend_event_synchronize(b.get(), e));
  ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s2));
  EXPECT_EQ(((unsigned char *)pinned)[(1 << 20) - 1], 0x5A);
  ASSERT_OK(atlas_backend_event_destroy(b.get(), e));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s1));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s2));
  ASSERT_OK(atlas_backend_pinned_free(b.get(), pinned));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST_P(BackendContract, TypedLaunchChecksSignature) {
  Backend b;
  MAKE_OR_SKIP(b);
  const atlas_kernel *fill = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(b.get(), ATLAS_CONTRACT_MODULE,
                                        "fill_u32", &fill));
  const uint32_t n = 1000;
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d));
  atlas_launch_config c = Grid(n);
  atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_U32(42)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), fill, &c, args, 3));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  std::vector<uint32_t> got = ReadU32(b.get(), d, n);
  EXPECT_EQ(got[0], 42u);
  EXPECT_EQ(got[n - 1], 42u);

  atlas_arg wrong[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_F32(1.0f),
                        ATLAS_ARG_U32(1)};
  EXPECT_STATUS(atlas_backend_launch_typed(b.get(), fill, &c, wrong, 3),
                ATLAS_STATUS_INVALID_ARGUMENT, "argument 1 is uint32");
  EXPECT_STATUS(atlas_backend_launch_typed(b.get(), fill, &c, args, 2),
                ATLAS_STATUS_INVALID_ARGUMENT, "takes 3 arguments");

  // Raw launch: argument pointers as cuLaunchKernel takes them.
  uint32_t value = 9;
  void *raw[3] = {&d, (void *)&n, &value};
  ASSERT_OK(atlas_backend_launch(b.get(), fill, &c, raw));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  EXPECT_EQ(ReadU32(b.get(), d, n)[n / 2], 9u);
  EXPECT_STATUS(atlas_backend_kernel_lookup(b.get(), ATLAS_CONTRACT_MODULE,
                                            "no_such_kernel", &fill),
                ATLAS_STATUS_NOT_FOUND, "no_such_kernel");
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST_P(BackendContract, CaptureRecordsAndReplays) {
  Backend b;
  MAKE_OR_SKIP(b);
  const atlas_kernel *k = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(b.get(), ATLAS_CONTRACT_MODULE,
                                        "scale_add_f32", &k));
  const uint32_t n = 512;
  std::vector<float> x(n, 1.0f);
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), n * 4, &d));
  ASSERT_OK(atlas_backend_h2d(b.get(), d, x.data(), n * 4));
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  bool capturing = false;
  ASSERT_OK(atlas_backend_stream_is_capturing(b.get(), s, &capturing));
  EXPECT_TRUE(capturing);
  atlas_launch_config c = Grid(n, s);
  atlas_arg args[4] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(n), ATLAS_ARG_F32(2.0f),
                       ATLAS_ARG_F32(1.0f)};
  ASSERT_OK(atlas_backend_launch_typed(b.get(), k, &c, args, 4));
  atlas_graph *g = nullptr;
  ASSERT_OK(atlas_backend_end_capture(b.get(), s, &g));
  ASSERT_OK(atlas_backend_stream_is_capturing(b.get(), s, &capturing));
  EXPECT_FALSE(capturing);
  // Captured work has not run yet.
  std::vector<float> got(n);
  ASSERT_OK(atlas_backend_d2h(b.get(), got.data(), d, n * 4));
  EXPECT_EQ(got[0], 1.0f);
  ASSERT_OK(atlas_backend_launch_graph(b.get(), g, s));
  ASSERT_OK(atlas_backend_launch_graph(b.get(), g, s));
  ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s));
  ASSERT_OK(atlas_backend_d2h(b.get(), got.data(), d, n * 4));
  EXPECT_EQ(got[0], 7.0f);  // (1*2+1)*2+1
  EXPECT_EQ(got[n - 1], 7.0f);
  ASSERT_OK(atlas_backend_destroy_graph(b.get(), g));
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST_P(BackendContract, AbortCaptureLeavesStreamUsable) {
  Backend b;
  MAKE_OR_SKIP(b);
  atlas_stream *s = nullptr;
  ASSERT_OK(atlas_backend_stream_create(b.get(), &s));
  bool aborted = true;
  ASSERT_OK(atlas_backend_abort_capture_if_active(b.get(), s, &aborted));
  EXPECT_FALSE(aborted);
  ASSERT_OK(atlas_backend_begin_capture(b.get(), s));
  ASSERT_OK(atlas_backend_abort_capture_if_active(b.get(), s, &aborted));
  EXPECT_TRUE(aborted);
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &d));
  ASSERT_OK(atlas_backend_memset_async(b.get(), d, 3, 64, s));
  ASSERT_OK(atlas_backend_stream_synchronize(b.get(), s));
  unsigned char out[64];
  ASSERT_OK(atlas_backend_d2h(b.get(), out, d, 64));
  EXPECT_EQ(out[63], 3);
  ASSERT_OK(atlas_backend_stream_destroy(b.get(), s));
  ASSERT_OK(atlas_backend_free(b.get(), d));
}

TEST_P(BackendContract, ModelsCannotSeeEachOthersKernels) {
  Backend a, other;
  MAKE_OR_SKIP(a);
  MAKE_OR_SKIP(other, GetParam().other_module);
  const atlas_kernel *k = nullptr;
  EXPECT_STATUS(atlas_backend_kernel_lookup(other.get(), ATLAS_CONTRACT_MODULE,
                                            "fill_u32", &k),
                ATLAS_STATUS_NOT_FOUND, "not loaded");
  ASSERT_OK(atlas_backend_kernel_lookup(a.get(), ATLAS_CONTRACT_MODULE,
                                        "fill_u32", &k));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(other.get(), 64, &d));
  atlas_launch_config c = Grid(16);
  atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(16), ATLAS_ARG_U32(1)};
  EXPECT_STATUS(atlas_backend_launch_typed(other.get(), k, &c, args, 3),
                ATLAS_STATUS_FAILED_PRECONDITION, "another model's registry");
  ASSERT_OK(atlas_backend_free(other.get(), d));
}

TEST_P(BackendContract, SharedRegistryOutlivesFirstBackend) {
  Backend a;
  MAKE_OR_SKIP(a);
  atlas_backend_options options{};
  options.share_registry = atlas_backend_kernel_registry(a.get());
  Backend shared;
  ASSERT_OK(GetParam().create(&options, shared.out()));
  a.Reset();  // the registry stays loaded while `shared` holds it
  const atlas_kernel *k = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(shared.get(), ATLAS_CONTRACT_MODULE,
                                        "fill_u32", &k));
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(shared.get(), 64, &d));
  atlas_launch_config c = Grid(16);
  atlas_arg args[3] = {ATLAS_ARG_PTR(d), ATLAS_ARG_U32(16), ATLAS_ARG_U32(4)};
  ASSERT_OK(atlas_backend_launch_typed(shared.get(), k, &c, args, 3));
  ASSERT_OK(atlas_backend_synchronize(shared.get()));
  EXPECT_EQ(ReadU32(shared.get(), d, 16)[15], 4u);
  ASSERT_OK(atlas_backend_free(shared.get(), d));
}

TEST_P(BackendContract, SweepFreesAndNamesSites) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *p = nullptr;
  for (int i = 0; i < 3; ++i) ASSERT_OK(atlas_backend_alloc(b.get(), 100, &p));
  atlas_sweep_result r;
  ASSERT_OK(atlas_backend_sweep_unreleased(b.get(), &r));
  EXPECT_EQ(r.count, 3u);
  EXPECT_EQ(r.bytes, 300u);
  ASSERT_NE(r.sites, nullptr);
  EXPECT_NE(std::string(r.sites).find("backend_contract.cc"), std::string::npos)
      << r.sites;
  atlas_sweep_result_free(&r);
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
}

TEST_P(BackendContract, InjectedFaultsFailExactlyTheKth) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *p[4] = {};
  atlas_backend_inject_fault(b.get(), ATLAS_FAULT_ALLOC, 2);
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &p[0]));
  EXPECT_STATUS(atlas_backend_alloc(b.get(), 64, &p[1]), ATLAS_STATUS_ABORTED,
                "injected fault");
  EXPECT_EQ(p[1], nullptr);
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &p[2]));
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 2u);
  char host[64] = {0};
  atlas_backend_inject_fault(b.get(), ATLAS_FAULT_COPY, 1);
  EXPECT_STATUS(atlas_backend_h2d(b.get(), p[0], host, 64),
                ATLAS_STATUS_ABORTED, "injected fault");
  ASSERT_OK(atlas_backend_h2d(b.get(), p[0], host, 64));
  EXPECT_GE(atlas_backend_op_count(b.get(), ATLAS_FAULT_ALLOC), 3u);
  ASSERT_OK(atlas_backend_free(b.get(), p[0]));
  ASSERT_OK(atlas_backend_free(b.get(), p[2]));
}

// A free the device refuses leaves the memory held: it stays live on the
// ledger (counted, reported as a failed release) until a later free or the
// sweep releases it, and the sweep names it as unreleased.
TEST_P(BackendContract, FreeTheDeviceRefusesStaysLiveForTheSweep) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *p = nullptr, *q = nullptr, *pinned = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 1000, &p));
  ASSERT_OK(atlas_backend_alloc(b.get(), 24, &q));
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 16, &pinned));
  uint64_t frees = atlas_backend_op_count(b.get(), ATLAS_FAULT_FREE);
  atlas_backend_inject_fault(b.get(), ATLAS_FAULT_FREE, 1);
  StatusResult refused = Take(atlas_backend_free(b.get(), p));
  EXPECT_EQ(refused.code, ATLAS_STATUS_ABORTED) << refused.message;
  EXPECT_NE(refused.message.find("injected fault: free #"), std::string::npos)
      << refused.message;
  EXPECT_NE(refused.message.find("freeing 1000 bytes allocated at "
                                 "tests/runtime/backend_contract.cc:"),
            std::string::npos)
      << refused.message;
  EXPECT_NE(refused.message.find("stay live on the ledger"), std::string::npos)
      << refused.message;
  EXPECT_EQ(atlas_backend_op_count(b.get(), ATLAS_FAULT_FREE), frees + 1);
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 1040u) << "the device holds it";
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 3u);
  char *text = nullptr;
  ASSERT_OK(atlas_backend_alloc_report(b.get(), 0, 0.0, &text));
  std::string report(text);
  free(text);
  EXPECT_NE(report.find("release failed: 1.00 kB (1000 bytes) in 1 allocation"),
            std::string::npos)
      << report;
  char *json = nullptr;
  ASSERT_OK(atlas_backend_alloc_report_json(b.get(), &json));
  EXPECT_NE(std::string(json).find("\"release_failed_bytes\": 1000"),
            std::string::npos)
      << json;
  free(json);
  // A pinned free refused the same way; a second free of it succeeds.
  atlas_backend_inject_fault(b.get(), ATLAS_FAULT_FREE, 1);
  EXPECT_STATUS(atlas_backend_pinned_free(b.get(), pinned),
                ATLAS_STATUS_ABORTED, "injected fault: free #");
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 1040u);
  ASSERT_OK(atlas_backend_pinned_free(b.get(), pinned));
  // The sweep finds the refused one and frees it, naming its site, and
  // tells it from q, which nobody freed (a leak).
  atlas_sweep_result r;
  ASSERT_OK(atlas_backend_sweep_unreleased(b.get(), &r));
  EXPECT_EQ(r.count, 2u);
  EXPECT_EQ(r.bytes, 1024u);
  EXPECT_EQ(r.refused_count, 1u);
  EXPECT_EQ(r.refused_bytes, 1000u);
  EXPECT_EQ(r.unfreed_count, 0u);
  ASSERT_NE(r.sites, nullptr);
  EXPECT_NE(std::string(r.sites).find("backend_contract.cc"), std::string::npos)
      << r.sites;
  atlas_sweep_result_free(&r);
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 0u);
}

TEST_P(BackendContract, RedZonesCatchEveryOverrunLength) {
  ScopedEnv env("ATLAS_REDZONE", "32");
  Backend b;
  MAKE_OR_SKIP(b);
  ASSERT_EQ(atlas_backend_redzone_bytes(b.get()), 32u);
  const size_t count = 64;
  std::vector<void *> bufs(count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_OK(atlas_backend_alloc(b.get(), 100 + i, &bufs[i]));
  }
  size_t found = 0;
  ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
  EXPECT_EQ(found, 0u);
  // Plant overruns of 1..32 bytes past every buffer, 2 rounds.
  for (size_t pad = 1; pad <= 32; ++pad) {
    std::vector<unsigned char> junk(pad, 0x3C);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_OK(atlas_backend_h2d(
          b.get(), (char *)bufs[i] + 100 + i + (32 - pad), junk.data(), pad));
    }
    std::vector<atlas_redzone_violation> v(count);
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), v.data(), v.size(), &found));
    ASSERT_EQ(found, count) << "overrun of " << pad << " bytes";
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(v[i].bytes, 100 + i);
      EXPECT_EQ(v[i].first_offset, 32 - pad);
    }
    // Scanning refilled the zones.
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
    ASSERT_EQ(found, 0u);
  }
  for (void *p : bufs) ASSERT_OK(atlas_backend_free(b.get(), p));
}

// A band before each buffer too: a write just before the start is an
// underrun, found by the scan, the free and the sweep, while the pointer a
// caller gets keeps the alignment of the backend's own allocations.
TEST_P(BackendContract, RedZonesCatchUnderruns) {
  ScopedEnv env("ATLAS_REDZONE", "32");
  Backend b;
  MAKE_OR_SKIP(b);
  const size_t count = 8;
  std::vector<void *> bufs(count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_OK(atlas_backend_alloc(b.get(), 100 + i, &bufs[i]));
    // malloc's 16 bytes on the host, cuMemAlloc's 256 on CUDA.
    size_t align = GetParam().name == "host" ? 16 : 256;
    EXPECT_EQ((uintptr_t)bufs[i] % align, 0u) << "allocation " << i;
  }
  void *pinned = nullptr, *alias = nullptr;
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 10, &pinned));
  EXPECT_EQ((uintptr_t)pinned % 16, 0u);
  // Its device address reaches the caller's bytes, not the band before.
  ASSERT_OK(atlas_backend_host_ptr_to_device(b.get(), pinned, &alias));
  const uint32_t word = 0x12345678u;
  ASSERT_OK(atlas_backend_h2d(b.get(), alias, &word, sizeof(word)));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  uint32_t seen = 0;
  memcpy(&seen, pinned, sizeof(seen));
  EXPECT_EQ(seen, word);
  size_t found = 0;
  ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
  EXPECT_EQ(found, 0u);
  const unsigned char junk = 0x3C;
  for (size_t before = 1; before <= 32; ++before) {
    for (size_t i = 0; i < count; ++i) {
      ASSERT_OK(atlas_backend_h2d(b.get(), (char *)bufs[i] - before, &junk, 1));
    }
    std::vector<atlas_redzone_violation> v(count + 1);
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), v.data(), v.size(), &found));
    ASSERT_EQ(found, count) << "underrun of " << before << " bytes";
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(v[i].addr, (uintptr_t)bufs[i]);
      EXPECT_EQ(v[i].underrun, before);
      EXPECT_EQ(v[i].first_offset, SIZE_MAX) << "the band after is intact";
    }
    ASSERT_OK(atlas_backend_scan_redzones(b.get(), nullptr, 0, &found));
    ASSERT_EQ(found, 0u) << "the scan refilled the band before";
  }
  // Both bands of one buffer at once.
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)bufs[0] - 2, &junk, 1));
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)bufs[0] + 100 + 5, &junk, 1));
  atlas_redzone_violation both;
  ASSERT_OK(atlas_backend_scan_redzones(b.get(), &both, 1, &found));
  ASSERT_EQ(found, 1u);
  EXPECT_EQ(both.underrun, 2u);
  EXPECT_EQ(both.first_offset, 5u);
  // A free reads the band before too; a free of an address inside that band
  // names the allocation and changes nothing.
  EXPECT_STATUS(atlas_backend_free(b.get(), (char *)bufs[1] - 8),
                ATLAS_STATUS_INVALID_ARGUMENT, "8 bytes before allocation #");
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)bufs[1] - 3, &junk, 1));
  EXPECT_STATUS(atlas_backend_free(b.get(), bufs[1]), ATLAS_STATUS_DATA_LOSS,
                "buffer underrun: the red zone before allocation #");
  EXPECT_STATUS(atlas_backend_free(b.get(), bufs[2]), ATLAS_STATUS_OK, "");
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)pinned - 1, &junk, 1));
  EXPECT_STATUS(atlas_backend_pinned_free(b.get(), pinned),
                ATLAS_STATUS_DATA_LOSS,
                "written 1 bytes before its start; found when it was freed");
  // The sweep reads it for what nobody freed.
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)bufs[3] - 32, &junk, 1));
  atlas_sweep_result r;
  StatusResult swept = Take(atlas_backend_sweep_unreleased(b.get(), &r));
  EXPECT_EQ(swept.code, ATLAS_STATUS_DATA_LOSS) << swept.message;
  EXPECT_NE(swept.message.find("written 32 bytes before its start; found by "
                               "the sweep"),
            std::string::npos)
      << swept.message;
  EXPECT_EQ(r.count, count - 2);
  atlas_sweep_result_free(&r);
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
}

// A buffer freed (or swept) before any scan: its overrun is still reported,
// naming the allocation, and its memory still released.
TEST_P(BackendContract, OverrunIsReportedWhenTheBufferIsFreedOrSwept) {
  ScopedEnv env("ATLAS_REDZONE", "8");
  Backend b;
  MAKE_OR_SKIP(b);
  void *freed = nullptr, *swept = nullptr, *clean = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 5, &freed));  // odd sizes
  ASSERT_OK(atlas_backend_alloc(b.get(), 1, &swept));
  ASSERT_OK(atlas_backend_alloc(b.get(), 3, &clean));
  const unsigned char junk = 0x3C;
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)freed + 5 + 7, &junk, 1));
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)swept + 1, &junk, 1));
  EXPECT_STATUS(atlas_backend_free(b.get(), freed), ATLAS_STATUS_DATA_LOSS,
                "written 7 bytes past its end; found when it was freed");
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 2u)
      << "freed all the same";
  EXPECT_OK(atlas_backend_free(b.get(), clean));
  atlas_sweep_result r;
  StatusResult swept_status = Take(atlas_backend_sweep_unreleased(b.get(), &r));
  EXPECT_EQ(swept_status.code, ATLAS_STATUS_DATA_LOSS) << swept_status.message;
  EXPECT_NE(swept_status.message.find("(0x"), std::string::npos);
  EXPECT_NE(swept_status.message.find(
                "1 bytes, allocated at tests/runtime/backend_contract.cc:"),
            std::string::npos)
      << swept_status.message;
  EXPECT_NE(swept_status.message.find("written 0 bytes past its end; found "
                                      "by the sweep"),
            std::string::npos)
      << swept_status.message;
  EXPECT_EQ(r.count, 1u);
  atlas_sweep_result_free(&r);
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
}

TEST_P(BackendContract, PoisonBisectsToTheCulprit) {
  ScopedEnv env("ATLAS_REDZONE", "16");
  Backend b;
  MAKE_OR_SKIP(b);
  const size_t count = 40, culprit = 27;
  std::vector<void *> bufs(count);
  std::vector<uint64_t> index(count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_OK(atlas_backend_alloc(b.get(), 256, &bufs[i]));
    atlas_ledger_entry e;
    ASSERT_OK(atlas_ledger_find(atlas_backend_ledger(b.get()),
                                (uintptr_t)bufs[i], &e));
    index[i] = e.index;
  }
  const atlas_kernel *k = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(b.get(), ATLAS_CONTRACT_MODULE,
                                        "write_past", &k));
  // The bug: a kernel that writes zeros past its buffer. Under a 0x00 fill it
  // is invisible; poisoning a range with 0xEE shows whether it is inside.
  auto run_bug = [&]() {
    atlas_launch_config c = Grid(1);
    atlas_arg args[4] = {ATLAS_ARG_PTR(bufs[culprit]), ATLAS_ARG_U32(256),
                         ATLAS_ARG_U32(4), ATLAS_ARG_U32(0)};
    EXPECT_OK(atlas_backend_launch_typed(b.get(), k, &c, args, 4));
    EXPECT_OK(atlas_backend_synchronize(b.get()));
  };
  uint64_t lo = index[0], hi = index[count - 1] + 1;
  int rounds = 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    ASSERT_OK(atlas_backend_poison_redzones(b.get(), lo, mid));
    run_bug();
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
  EXPECT_LE(rounds, 6);
  for (void *p : bufs) ASSERT_OK(atlas_backend_free(b.get(), p));
}

TEST_P(BackendContract, ReportAggregatesBySiteAndSumsToTotal) {
  Backend b;
  MAKE_OR_SKIP(b);
  std::vector<void *> ps;
  for (int i = 0; i < 48; ++i) {
    void *p = nullptr;
    ASSERT_OK(atlas_backend_alloc(b.get(), 10000, &p));  // one site, 48 times
    ps.push_back(p);
  }
  void *big = nullptr, *small = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 3000000, &big));
  ASSERT_OK(atlas_backend_alloc(b.get(), 10, &small));
  char *text = nullptr;
  ASSERT_OK(atlas_backend_alloc_report(b.get(), 0, 0.0, &text));
  std::string report(text);
  free(text);
  EXPECT_NE(report.find("3.00 MB across 1 allocation"), std::string::npos)
      << report;
  EXPECT_NE(report.find("480.00 kB across 48 allocations"), std::string::npos)
      << report;
  EXPECT_LT(report.find("3.00 MB"), report.find("480.00 kB")) << report;
  ASSERT_OK(atlas_backend_alloc_report(b.get(), 1, 0.0, &text));
  report = text;
  free(text);
  EXPECT_NE(report.find("(2 smaller sites)"), std::string::npos) << report;
  char *json_text = nullptr;
  ASSERT_OK(atlas_backend_alloc_report_json(b.get(), &json_text));
  json_error_t err;
  json_t *root = json_loads(json_text, 0, &err);
  free(json_text);
  ASSERT_NE(root, nullptr) << err.text;
  json_int_t sum = 0;
  size_t i;
  json_t *row;
  json_array_foreach(json_object_get(root, "sites"), i, row) {
    sum += json_integer_value(json_object_get(row, "bytes"));
  }
  EXPECT_EQ(sum, json_integer_value(json_object_get(root, "live_bytes")));
  EXPECT_EQ((size_t)sum, atlas_backend_live_bytes(b.get()));
  json_decref(root);
  for (void *p : ps) ASSERT_OK(atlas_backend_free(b.get(), p));
  ASSERT_OK(atlas_backend_free(b.get(), big));
  ASSERT_OK(atlas_backend_free(b.get(), small));
}

TEST_P(BackendContract, PinnedMemoryIsSeparateAndAliased) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *pinned = nullptr, *dev = nullptr, *managed = nullptr;
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 4096, &pinned));
  ASSERT_OK(atlas_backend_host_ptr_to_device(b.get(), pinned, &dev));
  EXPECT_NE(dev, nullptr);
  EXPECT_STATUS(atlas_backend_free(b.get(), pinned),
                ATLAS_STATUS_INVALID_ARGUMENT, "atlas_backend_pinned_free");
  ASSERT_OK(atlas_backend_alloc_managed(b.get(), 4096, &managed));
  memset(managed, 0x42, 4096);  // managed memory is reachable from the host
  EXPECT_STATUS(atlas_backend_host_ptr_to_device(b.get(), managed, &dev),
                ATLAS_STATUS_INVALID_ARGUMENT, "not pinned");
  ASSERT_OK(atlas_backend_pinned_free(b.get(), pinned));
  ASSERT_OK(atlas_backend_free(b.get(), managed));
}

TEST_P(BackendContract, MemoryFacts) {
  Backend b;
  MAKE_OR_SKIP(b);
  size_t total = 0, free_bytes = 0, device_free = 0;
  int sms = 0;
  ASSERT_OK(atlas_backend_total_memory(b.get(), &total));
  ASSERT_OK(atlas_backend_free_memory(b.get(), &free_bytes));
  ASSERT_OK(atlas_backend_device_free_memory(b.get(), &device_free));
  ASSERT_OK(atlas_backend_sm_count(b.get(), &sms));
  ASSERT_OK(atlas_backend_bind_to_thread(b.get()));
  EXPECT_GT(total, 0u);
  EXPECT_GT(free_bytes, 0u);
  EXPECT_LE(device_free, total);
  EXPECT_GT(sms, 0);
}

TEST_P(BackendContract, OpCacheMemoisesAndLedgersScratch) {
  Backend b;
  MAKE_OR_SKIP(b);
  atlas_op_cache *cache = atlas_backend_op_cache(b.get());
  ASSERT_NE(cache, nullptr);
  const atlas_kernel *k1 = nullptr, *k2 = nullptr;
  ASSERT_OK(
      atlas_op_cache_kernel(cache, ATLAS_CONTRACT_MODULE, "fill_u32", &k1));
  ASSERT_OK(
      atlas_op_cache_kernel(cache, ATLAS_CONTRACT_MODULE, "fill_u32", &k2));
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(atlas_op_cache_kernel_count(cache), 1u);
  void *s1 = nullptr, *s2 = nullptr;
  ASSERT_OK(atlas_op_cache_scratch(cache, "tmp", 1000, &s1));
  ASSERT_OK(atlas_op_cache_scratch(cache, "tmp", 500, &s2));
  EXPECT_EQ(s1, s2);
  ASSERT_OK(atlas_op_cache_scratch(cache, "tmp", 5000, &s2));
  EXPECT_EQ(atlas_backend_live_bytes(b.get()), 5000u);  // ledgered, old freed
}

// Growing a scratch buffer whose free fails (here: its red zone was written)
// reports it once; the backend's destroy does not free it a second time.
TEST_P(BackendContract, OpCacheScratchWhoseFreeFailedIsNotFreedAgain) {
  ScopedEnv env("ATLAS_REDZONE", "8");
  Backend b;
  MAKE_OR_SKIP(b);
  atlas_op_cache *cache = atlas_backend_op_cache(b.get());
  void *s = nullptr;
  ASSERT_OK(atlas_op_cache_scratch(cache, "tmp", 10, &s));
  const unsigned char junk = 0x3C;
  ASSERT_OK(atlas_backend_h2d(b.get(), (char *)s + 10, &junk, 1));
  EXPECT_STATUS(atlas_op_cache_scratch(cache, "tmp", 20, &s),
                ATLAS_STATUS_DATA_LOSS, "op cache: growing scratch 'tmp'");
  EXPECT_EQ(atlas_backend_live_alloc_count(b.get()), 0u);
  EXPECT_EQ(atlas_op_cache_scratch_bytes(cache), 0u);
  ASSERT_OK(atlas_op_cache_scratch(cache, "tmp", 20, &s));  // usable again
  // ~Backend: destroy must succeed (no double free of the old buffer).
}

// ---- matmul --------------------------------------------------------------

// n random values of the 16-bit `type` (as raw bits) and their f32 values.
void Random16(std::mt19937 *rng, atlas_matmul_type type, size_t n,
              std::vector<uint16_t> *bits, std::vector<float> *values) {
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  bits->resize(n);
  values->resize(n);
  for (size_t i = 0; i < n; ++i) {
    float v = d(*rng);
    uint16_t h =
        type == ATLAS_MATMUL_BF16 ? atlas_f32_to_bf16(v) : atlas_f32_to_f16(v);
    (*bits)[i] = h;
    (*values)[i] =
        type == ATLAS_MATMUL_BF16 ? atlas_bf16_to_f32(h) : atlas_f16_to_f32(h);
  }
}

// Skips on a backend that has no matmul (CUDA without cuBLASLt); the host
// backend must have one.
#define MATMUL_OR_SKIP(b)                                                     \
  do {                                                                        \
    StatusResult asked_ = Take(                                               \
        atlas_backend_matmul((b), nullptr, nullptr, nullptr, nullptr,         \
                             ATLAS_MATMUL_F16, 0, 0, 0, ATLAS_MATMUL_WRITE)); \
    if (asked_.code == ATLAS_STATUS_UNIMPLEMENTED &&                          \
        GetParam().name != "host") {                                          \
      GTEST_SKIP() << GetParam().name << ": " << asked_.message;              \
    }                                                                         \
    ASSERT_EQ(asked_.code, ATLAS_STATUS_OK) << asked_.message;                \
  } while (0)

// out = x w^T against a double-precision reference of the same 16-bit
// inputs. Each product of two 16-bit values is exact in f32 (at most 11 + 11
// significant bits), so the only error is the f32 summation: for k terms in
// any order at most about k * 2^-24 * sum_c |x_ic w_jc| (the standard bound
// (k - 1) u / (1 - (k - 1) u)); twice that allows for tensor-core adders that
// align before they round.
TEST_P(BackendContract, MatmulMatchesTheReference) {
  Backend b;
  MAKE_OR_SKIP(b);
  MATMUL_OR_SKIP(b.get());
  struct Shape {
    size_t m, n, k;
  };
  std::mt19937 rng(20261130);
  for (atlas_matmul_type type : {ATLAS_MATMUL_F16, ATLAS_MATMUL_BF16}) {
    for (Shape sh :
         {Shape{1, 1, 1}, Shape{1, 257, 64}, Shape{3, 5, 7}, Shape{17, 33, 129},
          Shape{64, 96, 256}, Shape{2, 9, 4099}}) {
      std::vector<uint16_t> wb, xb;
      std::vector<float> wv, xv;
      Random16(&rng, type, sh.n * sh.k, &wb, &wv);
      Random16(&rng, type, sh.m * sh.k, &xb, &xv);
      void *dw = nullptr, *dx = nullptr, *dout = nullptr;
      ASSERT_OK(atlas_backend_alloc(b.get(), wb.size() * 2, &dw));
      ASSERT_OK(atlas_backend_alloc(b.get(), xb.size() * 2, &dx));
      ASSERT_OK(atlas_backend_alloc(b.get(), sh.m * sh.n * 4, &dout));
      ASSERT_OK(atlas_backend_h2d(b.get(), dw, wb.data(), wb.size() * 2));
      ASSERT_OK(atlas_backend_h2d(b.get(), dx, xb.data(), xb.size() * 2));
      ASSERT_OK(
          atlas_backend_memset(b.get(), dout, 0xFF, sh.m * sh.n * 4));  // NaN
      ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                                     type, sh.m, sh.n, sh.k,
                                     ATLAS_MATMUL_WRITE));
      ASSERT_OK(atlas_backend_synchronize(b.get()));
      std::vector<float> got(sh.m * sh.n);
      ASSERT_OK(atlas_backend_d2h(b.get(), got.data(), dout, got.size() * 4));
      double worst = 0;
      for (size_t i = 0; i < sh.m; ++i) {
        for (size_t j = 0; j < sh.n; ++j) {
          double ref = 0, mag = 0;
          for (size_t c = 0; c < sh.k; ++c) {
            double p = (double)xv[i * sh.k + c] * (double)wv[j * sh.k + c];
            ref += p;
            mag += std::fabs(p);
          }
          double bound =
              2.0 * (double)sh.k * std::ldexp(1.0, -24) * mag + 1e-30;
          double err = std::fabs((double)got[i * sh.n + j] - ref);
          ASSERT_LE(err, bound)
              << atlas_matmul_type_name(type) << " " << sh.m << "x" << sh.n
              << "x" << sh.k << " at (" << i << ", " << j << "): got "
              << got[i * sh.n + j] << ", want " << ref;
          worst = std::max(worst, err / bound);
        }
      }
      printf("%s matmul %s %zux%zux%zu: worst error %.3g of the bound\n",
             GetParam().name.c_str(), atlas_matmul_type_name(type), sh.m, sh.n,
             sh.k, worst);
      ASSERT_OK(atlas_backend_free(b.get(), dw));
      ASSERT_OK(atlas_backend_free(b.get(), dx));
      ASSERT_OK(atlas_backend_free(b.get(), dout));
    }
  }
}

// ATLAS_MATMUL_ACCUMULATE: out += x w^T, in place, against the same double
// reference plus out's start values (one more f32 rounding of a value of
// at most |c| + sum |x w|); on the host backend bit for bit the product
// written and then added in f32 (the add pass it replaces). k == 0 adds
// nothing (out untouched) and is still a launch; an unknown mode is refused.
TEST_P(BackendContract, MatmulAccumulatesIntoItsOutput) {
  Backend b;
  MAKE_OR_SKIP(b);
  MATMUL_OR_SKIP(b.get());
  struct Shape {
    size_t m, n, k;
  };
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> start(-50.0f, 50.0f);
  bool host = GetParam().name == "host";
  for (atlas_matmul_type type : {ATLAS_MATMUL_F16, ATLAS_MATMUL_BF16}) {
    for (Shape sh : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 33, 129},
                     Shape{64, 96, 256}, Shape{2, 9, 4099}}) {
      std::vector<uint16_t> wb, xb;
      std::vector<float> wv, xv, c(sh.m * sh.n);
      Random16(&rng, type, sh.n * sh.k, &wb, &wv);
      Random16(&rng, type, sh.m * sh.k, &xb, &xv);
      for (float &v : c) v = start(rng);
      void *dw = nullptr, *dx = nullptr, *dout = nullptr;
      ASSERT_OK(atlas_backend_alloc(b.get(), wb.size() * 2, &dw));
      ASSERT_OK(atlas_backend_alloc(b.get(), xb.size() * 2, &dx));
      ASSERT_OK(atlas_backend_alloc(b.get(), sh.m * sh.n * 4, &dout));
      ASSERT_OK(atlas_backend_h2d(b.get(), dw, wb.data(), wb.size() * 2));
      ASSERT_OK(atlas_backend_h2d(b.get(), dx, xb.data(), xb.size() * 2));
      std::vector<float> written(sh.m * sh.n), got(sh.m * sh.n);
      ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                                     type, sh.m, sh.n, sh.k,
                                     ATLAS_MATMUL_WRITE));
      ASSERT_OK(atlas_backend_synchronize(b.get()));
      ASSERT_OK(
          atlas_backend_d2h(b.get(), written.data(), dout, written.size() * 4));
      ASSERT_OK(atlas_backend_h2d(b.get(), dout, c.data(), c.size() * 4));
      ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                                     type, sh.m, sh.n, sh.k,
                                     ATLAS_MATMUL_ACCUMULATE));
      ASSERT_OK(atlas_backend_synchronize(b.get()));
      ASSERT_OK(atlas_backend_d2h(b.get(), got.data(), dout, got.size() * 4));
      for (size_t i = 0; i < sh.m; ++i) {
        for (size_t j = 0; j < sh.n; ++j) {
          size_t o = i * sh.n + j;
          double ref = c[o], mag = 0;
          for (size_t q = 0; q < sh.k; ++q) {
            double p = (double)xv[i * sh.k + q] * (double)wv[j * sh.k + q];
            ref += p;
            mag += std::fabs(p);
          }
          double bound = 2.0 * (double)(sh.k + 1) * std::ldexp(1.0, -24) *
                             (mag + std::fabs((double)c[o])) +
                         1e-30;
          ASSERT_LE(std::fabs((double)got[o] - ref), bound)
              << atlas_matmul_type_name(type) << " " << sh.m << "x" << sh.n
              << "x" << sh.k << " at (" << i << ", " << j << "): got " << got[o]
              << ", want " << ref << " (start " << c[o] << ")";
          if (host) {
            float sum = c[o] + written[o];
            ASSERT_EQ(got[o], sum) << "host: the written product added in f32";
          }
        }
      }
      ASSERT_OK(atlas_backend_free(b.get(), dw));
      ASSERT_OK(atlas_backend_free(b.get(), dx));
      ASSERT_OK(atlas_backend_free(b.get(), dout));
    }
  }
  float c[6] = {1, 2, 3, 4, 5, 6}, got[6];
  void *dout = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), sizeof(c), &dout));
  ASSERT_OK(atlas_backend_h2d(b.get(), dout, c, sizeof(c)));
  uint64_t before = atlas_backend_op_count(b.get(), ATLAS_FAULT_LAUNCH);
  ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, nullptr,
                                 nullptr, ATLAS_MATMUL_BF16, 2, 3, 0,
                                 ATLAS_MATMUL_ACCUMULATE));
  EXPECT_EQ(atlas_backend_op_count(b.get(), ATLAS_FAULT_LAUNCH), before + 1);
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  ASSERT_OK(atlas_backend_d2h(b.get(), got, dout, sizeof(got)));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(got[i], c[i]) << "an empty sum adds nothing";
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, (float *)dout, dout, dout,
                           ATLAS_MATMUL_F16, 1, 1, 1, (atlas_matmul_out)2),
      ATLAS_STATUS_INVALID_ARGUMENT, "output mode 2");
  ASSERT_OK(atlas_backend_free(b.get(), dout));
}

TEST_P(BackendContract, MatmulChecksItsArguments) {
  Backend b;
  MAKE_OR_SKIP(b);
  MATMUL_OR_SKIP(b.get());
  void *dw = nullptr, *dx = nullptr, *dout = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &dw));
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &dx));
  ASSERT_OK(atlas_backend_alloc(b.get(), 64, &dout));
  float *out = (float *)dout;
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, nullptr, dw, dx, ATLAS_MATMUL_F16,
                           2, 2, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "NULL output");
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, out, nullptr, dx, ATLAS_MATMUL_F16,
                           2, 2, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "NULL weight matrix");
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, out, dw, nullptr,
                           ATLAS_MATMUL_BF16, 2, 2, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "NULL input matrix");
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, out, dw, dx, (atlas_matmul_type)7,
                           2, 2, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "the types are F16 and BF16");
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, out, dw, dx, ATLAS_MATMUL_F16, 2,
                           (size_t)1 << 31, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "below 2^31");
  // Nothing to compute: OK, whatever the pointers.
  EXPECT_OK(atlas_backend_matmul(b.get(), nullptr, nullptr, nullptr, nullptr,
                                 ATLAS_MATMUL_F16, 0, 5, 5,
                                 ATLAS_MATMUL_WRITE));
  // An empty sum writes zeros.
  ASSERT_OK(atlas_backend_memset(b.get(), dout, 0xFF, 64));
  ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, out, nullptr, nullptr,
                                 ATLAS_MATMUL_BF16, 2, 3, 0,
                                 ATLAS_MATMUL_WRITE));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  float got[6];
  ASSERT_OK(atlas_backend_d2h(b.get(), got, dout, sizeof(got)));
  for (float v : got) EXPECT_EQ(v, 0.0f);
  ASSERT_OK(atlas_backend_free(b.get(), dw));
  ASSERT_OK(atlas_backend_free(b.get(), dx));
  ASSERT_OK(atlas_backend_free(b.get(), dout));
}

// A matmul is a launch for fault injection; asking whether the backend
// multiplies (an empty product) is not.
TEST_P(BackendContract, MatmulIsALaunchForFaultInjection) {
  Backend b;
  MAKE_OR_SKIP(b);
  MATMUL_OR_SKIP(b.get());
  uint16_t one = atlas_f32_to_f16(1.0f);
  void *dw = nullptr, *dx = nullptr, *dout = nullptr;
  ASSERT_OK(atlas_backend_alloc(b.get(), 2, &dw));
  ASSERT_OK(atlas_backend_alloc(b.get(), 2, &dx));
  ASSERT_OK(atlas_backend_alloc(b.get(), 4, &dout));
  ASSERT_OK(atlas_backend_h2d(b.get(), dw, &one, 2));
  ASSERT_OK(atlas_backend_h2d(b.get(), dx, &one, 2));
  uint64_t before = atlas_backend_op_count(b.get(), ATLAS_FAULT_LAUNCH);
  EXPECT_OK(atlas_backend_matmul(b.get(), nullptr, nullptr, nullptr, nullptr,
                                 ATLAS_MATMUL_F16, 0, 0, 0,
                                 ATLAS_MATMUL_WRITE));
  EXPECT_EQ(atlas_backend_op_count(b.get(), ATLAS_FAULT_LAUNCH), before);
  atlas_backend_inject_fault(b.get(), ATLAS_FAULT_LAUNCH, 2);
  ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                                 ATLAS_MATMUL_F16, 1, 1, 1,
                                 ATLAS_MATMUL_WRITE));
  EXPECT_STATUS(
      atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                           ATLAS_MATMUL_F16, 1, 1, 1, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_ABORTED, "injected fault");
  EXPECT_EQ(atlas_backend_op_count(b.get(), ATLAS_FAULT_LAUNCH), before + 2);
  ASSERT_OK(atlas_backend_matmul(b.get(), nullptr, (float *)dout, dw, dx,
                                 ATLAS_MATMUL_F16, 1, 1, 1,
                                 ATLAS_MATMUL_WRITE));
  ASSERT_OK(atlas_backend_synchronize(b.get()));
  float got = 0;
  ASSERT_OK(atlas_backend_d2h(b.get(), &got, dout, 4));
  EXPECT_EQ(got, 1.0f);
  ASSERT_OK(atlas_backend_free(b.get(), dw));
  ASSERT_OK(atlas_backend_free(b.get(), dx));
  ASSERT_OK(atlas_backend_free(b.get(), dout));
}

TEST_P(BackendContract, DestroyReclaimsWhatNobodyFreed) {
  Backend b;
  MAKE_OR_SKIP(b);
  void *p = nullptr;
  for (int i = 0; i < 5; ++i) ASSERT_OK(atlas_backend_alloc(b.get(), 4096, &p));
  ASSERT_OK(atlas_backend_pinned_alloc(b.get(), 4096, &p));
  // Destroy is the last resort: it must free all six (ASan would see a leak).
  EXPECT_OK(atlas_backend_destroy(b.get()));
  *b.out() = nullptr;
}

}  // namespace
