// The front door (runtime/device/backend.c) on a backend that fills only the
// required entries and a few counted ones: the shared work (ledger, reports,
// red zones, sweep, kernel lookup, argument packing) needs nothing more from
// a backend, and every argument check happens before any entry is reached.
#include <cstdlib>
#include <cstring>
#include <string>

#include "atlas/runtime/device/backend_impl.h"
#include "tests/runtime/contract_kernels.h"
#include "tests/runtime/minimal_backend.h"
#include "tests/runtime/test_util.h"

namespace {

class Minimal {
 public:
  explicit Minimal(const atlas_backend_options *options = nullptr) {
    StatusResult r = Take(atlas_minimal_backend_create(options, &b_));
    EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
  }
  ~Minimal() {
    if (b_ != nullptr) {
      StatusResult r = Take(atlas_backend_destroy(b_));
      EXPECT_EQ(r.code, ATLAS_STATUS_OK) << r.message;
    }
  }
  atlas_backend *get() const { return b_; }
  const atlas_minimal_calls &calls() const {
    return *atlas_minimal_backend_calls(b_);
  }

 private:
  atlas_backend *b_ = nullptr;
};

atlas_status DestroyNothing(atlas_backend *) { return ATLAS_OK; }
atlas_status AllocNothing(atlas_backend *, size_t, atlas_mem_kind, void **) {
  return ATLAS_OK;
}
atlas_status FreeNothing(atlas_backend *, void *, size_t, atlas_mem_kind) {
  return ATLAS_OK;
}
atlas_status CopyNothing(atlas_backend *, const atlas_copy_op *) {
  return ATLAS_OK;
}

TEST(BackendFrontDoor, RefusesAVtableWithoutARequiredEntry) {
  atlas_backend_vtable v{};
  v.destroy = DestroyNothing;
  v.raw_alloc = AllocNothing;
  v.raw_free = FreeNothing;
  v.copy = CopyNothing;  // fill missing
  atlas_backend b{};
  EXPECT_STATUS(atlas_backend_base_init(&b, &v, "partial"),
                ATLAS_STATUS_INVALID_ARGUMENT, "lacks fill");
  EXPECT_EQ(b.ledger, nullptr) << "nothing made";
}

TEST(BackendFrontDoor, LedgerReportsAndSweepNeedOnlyRawMemory) {
  Minimal m;
  void *p = nullptr, *q = nullptr, *pinned = nullptr;
  ASSERT_OK(atlas_backend_alloc(m.get(), 1000, &p));
  ASSERT_OK(atlas_backend_alloc(m.get(), 24, &q));
  ASSERT_OK(atlas_backend_pinned_alloc(m.get(), 8, &pinned));
  EXPECT_EQ(atlas_backend_live_bytes(m.get()), 1032u);
  EXPECT_EQ(atlas_backend_live_alloc_count(m.get()), 3u);
  EXPECT_STATUS(atlas_backend_free(m.get(), pinned),
                ATLAS_STATUS_INVALID_ARGUMENT, "atlas_backend_pinned_free");
  EXPECT_STATUS(atlas_backend_alloc(m.get(), 0, &p),
                ATLAS_STATUS_INVALID_ARGUMENT, "0 bytes");
  char *text = nullptr;
  ASSERT_OK(atlas_backend_alloc_report(m.get(), 0, 0.0, &text));
  EXPECT_NE(std::string(text).find("backend_front_door_test.cc"),
            std::string::npos)
      << text;
  free(text);
  ASSERT_OK(atlas_backend_pinned_free(m.get(), pinned));
  ASSERT_OK(atlas_backend_free(m.get(), q));
  atlas_sweep_result sweep;
  ASSERT_OK(atlas_backend_sweep_unreleased(m.get(), &sweep));
  EXPECT_EQ(sweep.count, 1u);
  EXPECT_EQ(sweep.bytes, 1000u);
  atlas_sweep_result_free(&sweep);
  EXPECT_EQ(atlas_backend_live_alloc_count(m.get()), 0u);
  // Nothing the shared code did reached an optional entry.
  EXPECT_EQ(m.calls().h2d + m.calls().memset, 0);
}

// A raw_free that fails leaves the memory with the device: the sweep keeps
// it live on the ledger, counts it as unfreed and names it in its status; a
// later sweep frees it.
TEST(BackendFrontDoor, SweepKeepsWhatTheDeviceRefusesToFree) {
  Minimal m;
  void *p = nullptr, *q = nullptr;
  ASSERT_OK(atlas_backend_alloc(m.get(), 1000, &p));
  ASSERT_OK(atlas_backend_alloc(m.get(), 24, &q));
  atlas_minimal_backend_refuse_frees(m.get(), 1);  // the newest first: q
  atlas_sweep_result sweep;
  EXPECT_STATUS(atlas_backend_sweep_unreleased(m.get(), &sweep),
                ATLAS_STATUS_INTERNAL,
                "sweep: freeing 24 bytes allocated at "
                "tests/runtime/backend_front_door_test.cc:");
  EXPECT_EQ(sweep.count, 2u);
  EXPECT_EQ(sweep.bytes, 1024u);
  EXPECT_EQ(sweep.unfreed_count, 1u);
  EXPECT_EQ(sweep.unfreed_bytes, 24u);
  atlas_sweep_result_free(&sweep);
  EXPECT_EQ(atlas_backend_live_bytes(m.get()), 24u);
  atlas_ledger_entry e;
  ASSERT_OK(atlas_ledger_find(atlas_backend_ledger(m.get()), (uintptr_t)q, &e));
  EXPECT_TRUE(e.release_failed);
  EXPECT_EQ(e.index, 2u) << "the same allocation, not a new one";
  ASSERT_OK(atlas_backend_sweep_unreleased(m.get(), &sweep));
  EXPECT_EQ(sweep.count, 1u);
  EXPECT_EQ(sweep.unfreed_count, 0u);
  atlas_sweep_result_free(&sweep);
  EXPECT_EQ(atlas_backend_live_alloc_count(m.get()), 0u);
}

TEST(BackendFrontDoor, RedZonesWorkThroughRawReadAndFill) {
  setenv("ATLAS_REDZONE", "16", 1);
  Minimal m;
  unsetenv("ATLAS_REDZONE");
  void *p = nullptr;
  ASSERT_OK(atlas_backend_alloc(m.get(), 32, &p));
  static_cast<unsigned char *>(p)[32 + 3] = 0x11;  // past the end
  static_cast<unsigned char *>(p)[-5] = 0x11;      // before the start
  atlas_redzone_violation v[2];
  size_t found = 0;
  ASSERT_OK(atlas_backend_scan_redzones(m.get(), v, 2, &found));
  ASSERT_EQ(found, 1u);
  EXPECT_EQ(v[0].first_offset, 3u);
  EXPECT_EQ(v[0].underrun, 5u);
  ASSERT_OK(atlas_backend_scan_redzones(m.get(), v, 2, &found));
  EXPECT_EQ(found, 0u) << "the scan refilled the band";
  ASSERT_OK(atlas_backend_free(m.get(), p));
}

TEST(BackendFrontDoor, CopyChecksHappenBeforeTheBackend) {
  Minimal m;
  void *d = nullptr;
  ASSERT_OK(atlas_backend_alloc(m.get(), 64, &d));
  char host[64] = {0};
  uint64_t copies = atlas_backend_op_count(m.get(), ATLAS_FAULT_COPY);
  EXPECT_STATUS(atlas_backend_h2d(m.get(), nullptr, host, 8),
                ATLAS_STATUS_INVALID_ARGUMENT, "NULL destination");
  EXPECT_STATUS(atlas_backend_h2d(m.get(), d, nullptr, 8),
                ATLAS_STATUS_INVALID_ARGUMENT, "NULL source");
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_COPY), copies)
      << "a refused copy is not an attempted one";
  // A zero-byte copy is a copy (a fault point) that moves nothing.
  ASSERT_OK(atlas_backend_h2d(m.get(), d, host, 0));
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_COPY), copies + 1);
  ASSERT_OK(atlas_backend_h2d(m.get(), d, host, 64));
  EXPECT_EQ(m.calls().h2d, 1);
  // Pitched copies: rows wider than a pitch are refused by name.
  EXPECT_STATUS(
      atlas_backend_d2d_2d_async(m.get(), d, 8, d, 16, 12, 2, nullptr),
      ATLAS_STATUS_INVALID_ARGUMENT, "pitch");
  EXPECT_STATUS(
      atlas_backend_d2d_2d_async(m.get(), d, SIZE_MAX / 2, d, 8, 8, 4, nullptr),
      ATLAS_STATUS_INVALID_ARGUMENT, "address space");
  ASSERT_OK(atlas_backend_d2d_2d_async(m.get(), d, 16, d, 16, 8, 0, nullptr));
  EXPECT_EQ(m.calls().d2d_2d, 0);
  ASSERT_OK(atlas_backend_d2d_2d_async(m.get(), d, 32, d, 16, 8, 2, nullptr));
  EXPECT_EQ(m.calls().d2d_2d, 1);
  EXPECT_STATUS(atlas_backend_memset(m.get(), nullptr, 0, 4),
                ATLAS_STATUS_INVALID_ARGUMENT, "memset of 4 bytes at NULL");
  ASSERT_OK(atlas_backend_memset(m.get(), d, 0, 0));
  EXPECT_EQ(m.calls().memset, 0);
  // A form the backend's copy lacks is named, after the checks.
  EXPECT_STATUS(atlas_backend_d2h_async(m.get(), host, d, 8, nullptr),
                ATLAS_STATUS_UNIMPLEMENTED,
                "backend minimal does not implement d2h_async");
  ASSERT_OK(atlas_backend_free(m.get(), d));
}

TEST(BackendFrontDoor, HandleChecksHappenBeforeTheBackend) {
  Minimal m;
  uint64_t launches = atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH);
  EXPECT_STATUS(atlas_backend_launch_graph(m.get(), nullptr, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "launch of a NULL graph");
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH), launches);
  ASSERT_OK(atlas_backend_destroy_graph(m.get(), nullptr));
  ASSERT_OK(atlas_backend_launch_graph(
      m.get(), atlas_minimal_backend_graph(m.get()), nullptr));
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH), launches + 1);
  ASSERT_OK(atlas_backend_destroy_graph(m.get(),
                                        atlas_minimal_backend_graph(m.get())));
  EXPECT_EQ(m.calls().launch_graph, 1);
  EXPECT_EQ(m.calls().destroy_graph, 1);

  EXPECT_STATUS(atlas_backend_event_record(m.get(), nullptr, nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "record of a NULL event");
  EXPECT_STATUS(atlas_backend_event_synchronize(m.get(), nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "NULL event");
  ASSERT_OK(atlas_backend_event_destroy(m.get(), nullptr));
  ASSERT_OK(atlas_backend_event_record(
      m.get(), atlas_minimal_backend_event(m.get()), nullptr));
  EXPECT_EQ(m.calls().event_record, 1);

  EXPECT_STATUS(atlas_backend_stream_destroy(m.get(), nullptr),
                ATLAS_STATUS_INVALID_ARGUMENT, "default stream");
  EXPECT_STATUS(atlas_backend_stream_destroy(
                    m.get(), atlas_backend_default_stream(m.get())),
                ATLAS_STATUS_INVALID_ARGUMENT, "default stream");
  EXPECT_EQ(m.calls().stream_destroy, 0);

  void *host = malloc(16);
  void *dev = nullptr;
  EXPECT_STATUS(atlas_backend_host_ptr_to_device(m.get(), host, &dev),
                ATLAS_STATUS_INVALID_ARGUMENT, "not pinned");
  free(host);
}

// A backend without matmul: UNIMPLEMENTED named, after the argument checks,
// and not counted as a launch (nothing ran).
TEST(BackendFrontDoor, MatmulIsOptional) {
  Minimal m;
  uint64_t launches = atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH);
  float out[4];
  uint16_t w[4] = {}, x[4] = {};
  EXPECT_STATUS(
      atlas_backend_matmul(m.get(), nullptr, out, w, x, ATLAS_MATMUL_BF16, 2, 2,
                           2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_UNIMPLEMENTED, "backend minimal does not implement matmul");
  EXPECT_STATUS(
      atlas_backend_matmul(m.get(), nullptr, nullptr, nullptr, nullptr,
                           ATLAS_MATMUL_F16, 0, 0, 0, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_UNIMPLEMENTED, "does not implement matmul");
  EXPECT_STATUS(
      atlas_backend_matmul(m.get(), nullptr, nullptr, w, x, ATLAS_MATMUL_F16, 2,
                           2, 2, ATLAS_MATMUL_WRITE),
      ATLAS_STATUS_INVALID_ARGUMENT, "NULL output");
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH), launches);
}

TEST(BackendFrontDoor, TypedArgumentsArePackedOnceForTheRawLaunch) {
  const atlas_module_def *mods[1] = {&atlas_contract_host_module};
  atlas_module_set set = {mods, 1};
  atlas_backend_options options{};
  options.modules = &set;
  Minimal m(&options);
  Minimal other(&options);
  const atlas_kernel *fill = nullptr, *foreign = nullptr;
  ASSERT_OK(atlas_backend_kernel_lookup(m.get(), ATLAS_CONTRACT_MODULE,
                                        "fill_u32", &fill));
  ASSERT_OK(atlas_backend_kernel_lookup(other.get(), ATLAS_CONTRACT_MODULE,
                                        "fill_u32", &foreign));
  atlas_launch_config c{};
  c.grid = {1, 1, 1};
  c.block = {1, 1, 1};
  int dummy = 0;
  atlas_arg args[3] = {ATLAS_ARG_PTR(&dummy), ATLAS_ARG_U32(4),
                       ATLAS_ARG_U32(9)};
  uint64_t launches = atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH);
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), fill, &c, args, 2),
                ATLAS_STATUS_INVALID_ARGUMENT, "takes 3 arguments");
  atlas_arg wrong[3] = {ATLAS_ARG_PTR(&dummy), ATLAS_ARG_F32(4),
                        ATLAS_ARG_U32(9)};
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), fill, &c, wrong, 3),
                ATLAS_STATUS_INVALID_ARGUMENT, "argument 1 is uint32");
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), fill, nullptr, args, 3),
                ATLAS_STATUS_INVALID_ARGUMENT, "without a configuration");
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), nullptr, &c, args, 3),
                ATLAS_STATUS_INVALID_ARGUMENT, "NULL kernel");
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), foreign, &c, args, 3),
                ATLAS_STATUS_FAILED_PRECONDITION, "another model's registry");
  void *raw[3] = {&dummy, &dummy, &dummy};
  EXPECT_STATUS(atlas_backend_launch(m.get(), foreign, &c, raw),
                ATLAS_STATUS_FAILED_PRECONDITION, "another model's registry");
  EXPECT_EQ(m.calls().launch, 0);
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH), launches);

  ASSERT_OK(atlas_backend_launch_typed(m.get(), fill, &c, args, 3));
  EXPECT_EQ(m.calls().launch, 1);
  EXPECT_EQ(atlas_backend_op_count(m.get(), ATLAS_FAULT_LAUNCH), launches + 1);
  // The raw launch got pointers to the values, as cuLaunchKernel takes them.
  EXPECT_EQ(*static_cast<void **>(m.calls().last_args[0]), &dummy);
  EXPECT_EQ(*static_cast<uint32_t *>(m.calls().last_args[1]), 4u);
  EXPECT_EQ(*static_cast<uint32_t *>(m.calls().last_args[2]), 9u);

  atlas_backend_inject_fault(m.get(), ATLAS_FAULT_LAUNCH, 1);
  EXPECT_STATUS(atlas_backend_launch_typed(m.get(), fill, &c, args, 3),
                ATLAS_STATUS_ABORTED, "injected fault");
  EXPECT_EQ(m.calls().launch, 1);
}

}  // namespace
