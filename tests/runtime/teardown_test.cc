#include "atlas/runtime/base/teardown.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "atlas/runtime/device/host_backend.h"
#include "tests/runtime/test_util.h"

namespace {

struct Probe {
  std::vector<int> *order;
  int id;
  bool fail;
};

atlas_status Release(void *p) {
  Probe *probe = static_cast<Probe *>(p);
  probe->order->push_back(probe->id);
  if (probe->fail) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL, "probe %d refused",
                             probe->id);
  }
  return ATLAS_OK;
}

TEST(Teardown, ReleasesInReverseOrder) {
  std::vector<int> order;
  std::vector<Probe> probes;
  for (int i = 0; i < 5; ++i) probes.push_back({&order, i, false});
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  for (auto &p : probes) {
    ASSERT_OK(atlas_teardown_register(t, ("r" + std::to_string(p.id)).c_str(),
                                      Release, &p));
  }
  EXPECT_EQ(atlas_teardown_count(t), 5u);
  atlas_teardown_report report;
  ASSERT_OK(atlas_teardown_run(t, nullptr, nullptr, &report));
  EXPECT_EQ(order, (std::vector<int>{4, 3, 2, 1, 0}));
  EXPECT_EQ(report.released, 5u);
  EXPECT_EQ(report.failed, 0u);
}

TEST(Teardown, FailureAtEachPositionReleasesAllOthersAndReportsIt) {
  const int n = 6;
  for (int bad = 0; bad < n; ++bad) {
    for (int also_bad : {-1, (bad + 2) % n}) {
      std::vector<int> order;
      std::vector<Probe> probes;
      for (int i = 0; i < n; ++i) {
        probes.push_back({&order, i, i == bad || i == also_bad});
      }
      atlas_teardown *t = nullptr;
      ASSERT_OK(atlas_teardown_create(&t));
      for (auto &p : probes) {
        ASSERT_OK(atlas_teardown_register(
            t, ("res" + std::to_string(p.id)).c_str(), Release, &p));
      }
      atlas_teardown_report report;
      atlas_status s = atlas_teardown_run(t, nullptr, nullptr, &report);
      size_t failures = also_bad >= 0 && also_bad != bad ? 2 : 1;
      EXPECT_EQ(order.size(), (size_t)n) << "every resource is released";
      EXPECT_EQ(report.failed, failures);
      EXPECT_EQ(atlas_status_count(s), failures);
      std::string msg = atlas_status_message(s);
      EXPECT_NE(msg.find("releasing 'res" + std::to_string(bad) + "': probe " +
                         std::to_string(bad) + " refused"),
                std::string::npos)
          << msg;
      atlas_status_free(s);
    }
  }
}

atlas_status SweepBackend(void *ctx, atlas_sweep_result *out) {
  return atlas_backend_sweep_unreleased(static_cast<atlas_backend *>(ctx), out);
}

struct Buffer {
  atlas_backend *backend;
  void *ptr;
};

atlas_status FreeBuffer(void *p) {
  Buffer *b = static_cast<Buffer *>(p);
  return atlas_backend_free(b->backend, b->ptr);
}

TEST(Teardown, SweepNamesTheLeakedSite) {
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  Buffer covered{backend, nullptr};
  ASSERT_OK(atlas_backend_alloc(backend, 4096, &covered.ptr));
  void *leaked = nullptr;
  ASSERT_OK(atlas_backend_alloc(backend, 1000, &leaked));  // nobody covers it
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  ASSERT_OK(atlas_teardown_register(t, "weights", FreeBuffer, &covered));
  atlas_teardown_report report;
  ::testing::internal::CaptureStderr();
  ASSERT_OK(atlas_teardown_run(t, SweepBackend, backend, &report));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.sweep.count, 1u);
  EXPECT_EQ(report.sweep.bytes, 1000u);
  EXPECT_NE(std::string(report.sweep.sites).find("teardown_test.cc"),
            std::string::npos);
  EXPECT_NE(log.find("leak:"), std::string::npos) << log;
  EXPECT_NE(log.find("teardown_test.cc:"), std::string::npos) << log;
  atlas_sweep_result_free(&report.sweep);
  EXPECT_EQ(atlas_backend_live_alloc_count(backend), 0u);
  ASSERT_OK(atlas_backend_destroy(backend));
}

// ATLAS_REDZONE: an overrun of a buffer that a resource releases fails that
// release, by name, with the allocation's site; nothing else is skipped.
TEST(Teardown, OverrunOfAReleasedBufferFailsItsRelease) {
  ScopedEnv env("ATLAS_REDZONE", "4");
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  Buffer a{backend, nullptr}, b{backend, nullptr};
  ASSERT_OK(atlas_backend_alloc(backend, 7, &a.ptr));
  ASSERT_OK(atlas_backend_alloc(backend, 9, &b.ptr));
  static_cast<unsigned char *>(a.ptr)[7 + 2] = 0;  // a kernel's stray write
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  ASSERT_OK(atlas_teardown_register(t, "a", FreeBuffer, &a));
  ASSERT_OK(atlas_teardown_register(t, "b", FreeBuffer, &b));
  atlas_teardown_report report;
  StatusResult r = Take(atlas_teardown_run(t, SweepBackend, backend, &report));
  EXPECT_EQ(r.code, ATLAS_STATUS_DATA_LOSS);
  EXPECT_NE(r.message.find("releasing 'a': host: buffer overrun"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("teardown_test.cc:"), std::string::npos)
      << r.message;
  EXPECT_EQ(report.released, 1u);
  EXPECT_EQ(report.failed, 1u);
  EXPECT_EQ(report.sweep.count, 0u) << "the overrun buffer was still freed";
  atlas_sweep_result_free(&report.sweep);
  ASSERT_OK(atlas_backend_destroy(backend));
}

atlas_status FailLeavingTheBuffer(void *) {
  return atlas_status_make(ATLAS_STATUS_INTERNAL, "the driver said no");
}

// A release that fails and leaves its memory: the status names the release,
// the log names the site of what the sweep then had to free.
TEST(Teardown, SweepAfterAFailedReleaseStillNamesTheSites) {
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  Buffer left{backend, nullptr};
  ASSERT_OK(atlas_backend_alloc(backend, 777, &left.ptr));
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  ASSERT_OK(
      atlas_teardown_register(t, "kv_cache", FailLeavingTheBuffer, &left));
  atlas_teardown_report report;
  ::testing::internal::CaptureStderr();
  EXPECT_STATUS(atlas_teardown_run(t, SweepBackend, backend, &report),
                ATLAS_STATUS_INTERNAL,
                "releasing 'kv_cache': the driver said no");
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.failed, 1u);
  EXPECT_EQ(report.sweep.count, 1u);
  EXPECT_NE(log.find("after 1 failed release(s) the sweep found 1 allocations "
                     "(777 bytes) still live and freed 1 of them"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("teardown_test.cc:"), std::string::npos) << log;
  atlas_sweep_result_free(&report.sweep);
  ASSERT_OK(atlas_backend_destroy(backend));
}

// A free the device refuses is no leak: its allocation stays live until the
// sweep releases it, and the log says so instead of "leak:". Both ways it
// happens: a release that fails on it, and an earlier free outside the
// teardown (the teardown then releases everything registered).
TEST(Teardown, SweepOfARefusedFreeIsNoLeak) {
  for (bool in_release : {true, false}) {
    SCOPED_TRACE(in_release ? "refused in a release" : "refused before");
    atlas_backend *backend = nullptr;
    ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
    Buffer weights{backend, nullptr};
    ASSERT_OK(atlas_backend_alloc(backend, 4096, &weights.ptr));
    void *scratch = nullptr;
    ASSERT_OK(atlas_backend_alloc(backend, 300, &scratch));
    atlas_teardown *t = nullptr;
    ASSERT_OK(atlas_teardown_create(&t));
    ASSERT_OK(atlas_teardown_register(t, "weights", FreeBuffer, &weights));
    if (in_release) {
      ASSERT_OK(atlas_backend_free(backend, scratch));
      atlas_backend_inject_fault(backend, ATLAS_FAULT_FREE, 1);
    } else {
      atlas_backend_inject_fault(backend, ATLAS_FAULT_FREE, 1);
      EXPECT_STATUS(atlas_backend_free(backend, scratch), ATLAS_STATUS_ABORTED,
                    "injected fault: free #");
    }
    size_t refused = in_release ? 4096 : 300;
    atlas_teardown_report report;
    ::testing::internal::CaptureStderr();
    atlas_status s = atlas_teardown_run(t, SweepBackend, backend, &report);
    std::string log = ::testing::internal::GetCapturedStderr();
    if (in_release) {
      EXPECT_STATUS(s, ATLAS_STATUS_ABORTED,
                    "releasing 'weights': host: freeing 4096 bytes");
      EXPECT_EQ(report.failed, 1u);
    } else {
      EXPECT_OK(s);
      EXPECT_EQ(report.failed, 0u);
    }
    EXPECT_EQ(report.sweep.count, 1u);
    EXPECT_EQ(report.sweep.bytes, refused);
    EXPECT_EQ(report.sweep.refused_count, 1u);
    EXPECT_EQ(report.sweep.refused_bytes, refused);
    EXPECT_EQ(log.find("leak:"), std::string::npos) << log;
    EXPECT_NE(log.find("the sweep released 1 allocations (" +
                       std::to_string(refused) +
                       " bytes) whose free the device had refused (no "
                       "leak); freed 1 of them"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("teardown_test.cc:"), std::string::npos) << log;
    atlas_sweep_result_free(&report.sweep);
    EXPECT_EQ(atlas_backend_live_alloc_count(backend), 0u);
    ASSERT_OK(atlas_backend_destroy(backend));
  }
}

// A leak beside a refused free is still a leak, counted without it.
TEST(Teardown, LeakBesideARefusedFreeIsStillALeak) {
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  void *refused = nullptr, *leaked = nullptr;
  ASSERT_OK(atlas_backend_alloc(backend, 300, &refused));
  ASSERT_OK(atlas_backend_alloc(backend, 1000, &leaked));
  atlas_backend_inject_fault(backend, ATLAS_FAULT_FREE, 1);
  EXPECT_STATUS(atlas_backend_free(backend, refused), ATLAS_STATUS_ABORTED,
                "injected fault: free #");
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  atlas_teardown_report report;
  ::testing::internal::CaptureStderr();
  ASSERT_OK(atlas_teardown_run(t, SweepBackend, backend, &report));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(report.sweep.count, 2u);
  EXPECT_EQ(report.sweep.refused_count, 1u);
  EXPECT_EQ(report.sweep.refused_bytes, 300u);
  EXPECT_NE(log.find("leak: teardown released everything registered, yet the "
                     "sweep found 1 allocations (1000 bytes) that no resource "
                     "covered (and some whose free the device had refused) "
                     "and freed 2 of the 2 it found"),
            std::string::npos)
      << log;
  atlas_sweep_result_free(&report.sweep);
  ASSERT_OK(atlas_backend_destroy(backend));
}

TEST(Teardown, CleanPathSweepsNothing) {
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  Buffer a{backend, nullptr}, b{backend, nullptr};
  ASSERT_OK(atlas_backend_alloc(backend, 64, &a.ptr));
  ASSERT_OK(atlas_backend_alloc(backend, 64, &b.ptr));
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  ASSERT_OK(atlas_teardown_register(t, "a", FreeBuffer, &a));
  ASSERT_OK(atlas_teardown_register(t, "b", FreeBuffer, &b));
  atlas_teardown_report report;
  ASSERT_OK(atlas_teardown_run(t, SweepBackend, backend, &report));
  EXPECT_EQ(report.sweep.count, 0u);
  EXPECT_EQ(report.released, 2u);
  ASSERT_OK(atlas_backend_destroy(backend));
}

TEST(Teardown, DestroyReclaimsAHalfBuiltModel) {
  // A load that failed part-way registered some resources and then stopped:
  // the backend's destroy is the last resort for everything else.
  atlas_backend *backend = nullptr;
  ASSERT_OK(atlas_host_backend_create(nullptr, &backend));
  void *p = nullptr;
  for (int i = 0; i < 7; ++i) ASSERT_OK(atlas_backend_alloc(backend, 512, &p));
  atlas_backend_inject_fault(backend, ATLAS_FAULT_ALLOC, 1);
  EXPECT_STATUS(atlas_backend_alloc(backend, 512, &p), ATLAS_STATUS_ABORTED,
                "injected");
  EXPECT_EQ(atlas_backend_live_alloc_count(backend), 7u);
  ::testing::internal::CaptureStderr();
  ASSERT_OK(atlas_backend_destroy(backend));  // ASan: nothing leaks
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("reclaimed 7 unreleased allocations (3584 bytes)"),
            std::string::npos)
      << log;
}

TEST(Teardown, RegisterWithoutReleaseOrNameIsRejected) {
  atlas_teardown *t = nullptr;
  ASSERT_OK(atlas_teardown_create(&t));
  EXPECT_STATUS(atlas_teardown_register(t, "x", nullptr, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "no release function");
  EXPECT_STATUS(atlas_teardown_register(t, nullptr, Release, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "without a name");
  EXPECT_EQ(atlas_teardown_count(t), 0u);
  ASSERT_OK(atlas_teardown_run(t, nullptr, nullptr, nullptr));
}

}  // namespace
