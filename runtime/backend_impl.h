// For backend implementers: the vtable and the state every backend shares.
//
// A backend embeds `atlas_backend` as its first member and fills a vtable
// with every operation (NULL entries mean "not offered" and dispatch returns
// UNIMPLEMENTED). Ledger keeping, red zones, fault injection and the sweep are
// the same for every backend: the atlas_backend_base_* helpers below implement
// them on top of a few raw memory primitives, and both vtables use them, so
// the host and CUDA backends account for memory exactly alike.
#ifndef ATLAS_RUNTIME_BACKEND_IMPL_H_
#define ATLAS_RUNTIME_BACKEND_IMPL_H_

#include <pthread.h>

#include "atlas/runtime/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_backend_vtable {
  atlas_status (*destroy)(atlas_backend *b);

  atlas_status (*alloc)(atlas_backend *b, size_t bytes, atlas_mem_kind kind,
                        atlas_site site, void **out_ptr);
  atlas_status (*free)(atlas_backend *b, void *ptr, atlas_mem_kind kind);
  atlas_status (*host_ptr_to_device)(atlas_backend *b, void *host_ptr,
                                     void **out_device_ptr);
  size_t (*live_bytes)(atlas_backend *b);
  size_t (*live_alloc_count)(atlas_backend *b);
  atlas_status (*alloc_report)(atlas_backend *b, size_t top_n, double min_mb,
                               char **out_text);
  atlas_status (*alloc_report_json)(atlas_backend *b, char **out_json);
  atlas_status (*sweep_unreleased)(atlas_backend *b,
                                   atlas_sweep_result *out_result);
  atlas_status (*scan_redzones)(atlas_backend *b,
                                atlas_redzone_violation *out_violations,
                                size_t max_violations, size_t *out_count);
  atlas_status (*poison_redzones)(atlas_backend *b, uint64_t lo, uint64_t hi);

  atlas_status (*h2d)(atlas_backend *b, void *dst, const void *src,
                      size_t bytes);
  atlas_status (*d2h)(atlas_backend *b, void *dst, const void *src,
                      size_t bytes);
  atlas_status (*d2h_on_stream)(atlas_backend *b, void *dst, const void *src,
                                size_t bytes, atlas_stream *stream);
  atlas_status (*d2h_async)(atlas_backend *b, void *dst, const void *src,
                            size_t bytes, atlas_stream *stream);
  atlas_status (*d2d)(atlas_backend *b, void *dst, const void *src,
                      size_t bytes);
  atlas_status (*h2d_async)(atlas_backend *b, void *dst, const void *src,
                            size_t bytes, atlas_stream *stream);
  atlas_status (*h2d_async_retained)(atlas_backend *b, void *dst,
                                     const void *src, size_t bytes,
                                     atlas_stream *stream);
  atlas_status (*d2d_async)(atlas_backend *b, void *dst, const void *src,
                            size_t bytes, atlas_stream *stream);
  atlas_status (*d2d_2d_async)(atlas_backend *b, void *dst, size_t dst_pitch,
                               const void *src, size_t src_pitch,
                               size_t width_bytes, size_t height,
                               atlas_stream *stream);
  atlas_status (*memset)(atlas_backend *b, void *dst, uint8_t value,
                         size_t bytes);
  atlas_status (*memset_async)(atlas_backend *b, void *dst, uint8_t value,
                               size_t bytes, atlas_stream *stream);

  atlas_stream *(*default_stream)(atlas_backend *b);
  atlas_status (*stream_create)(atlas_backend *b, atlas_stream **out_stream);
  atlas_status (*stream_destroy)(atlas_backend *b, atlas_stream *stream);
  atlas_status (*stream_synchronize)(atlas_backend *b, atlas_stream *stream);
  atlas_status (*synchronize)(atlas_backend *b);
  atlas_status (*event_create)(atlas_backend *b, atlas_event **out_event);
  atlas_status (*event_record)(atlas_backend *b, atlas_event *event,
                               atlas_stream *stream);
  atlas_status (*event_wait)(atlas_backend *b, atlas_stream *stream,
                             atlas_event *event);
  atlas_status (*event_synchronize)(atlas_backend *b, atlas_event *event);
  atlas_status (*event_destroy)(atlas_backend *b, atlas_event *event);
  atlas_status (*stream_is_capturing)(atlas_backend *b, atlas_stream *stream,
                                      bool *out_capturing);
  atlas_status (*begin_capture)(atlas_backend *b, atlas_stream *stream);
  atlas_status (*end_capture)(atlas_backend *b, atlas_stream *stream,
                              atlas_graph **out_graph);
  atlas_status (*abort_capture_if_active)(atlas_backend *b,
                                          atlas_stream *stream,
                                          bool *out_aborted);
  atlas_status (*launch_graph)(atlas_backend *b, atlas_graph *graph,
                               atlas_stream *stream);
  atlas_status (*destroy_graph)(atlas_backend *b, atlas_graph *graph);

  atlas_status (*kernel_lookup)(atlas_backend *b, const char *module,
                                const char *function,
                                const atlas_kernel **out_kernel);
  atlas_status (*launch)(atlas_backend *b, const atlas_kernel *kernel,
                         const atlas_launch_config *config, void **args);
  atlas_status (*launch_typed)(atlas_backend *b, const atlas_kernel *kernel,
                               const atlas_launch_config *config,
                               const atlas_arg *args, size_t arg_count);

  atlas_status (*total_memory)(atlas_backend *b, size_t *out_bytes);
  atlas_status (*free_memory)(atlas_backend *b, size_t *out_bytes);
  atlas_status (*device_free_memory)(atlas_backend *b, size_t *out_bytes);
  atlas_status (*sm_count)(atlas_backend *b, int *out_count);
  atlas_status (*bind_to_thread)(atlas_backend *b);

  atlas_op_cache *(*op_cache)(atlas_backend *b);
  bool (*debug_sync_kernels)(const atlas_backend *b);
  atlas_kernel_registry *(*kernel_registry)(atlas_backend *b);
} atlas_backend_vtable;

// Raw memory primitives the shared ledger code is built on. Addresses are
// what the backend hands out (device addresses as void*).
typedef struct atlas_backend_mem_ops {
  atlas_status (*raw_alloc)(atlas_backend *b, size_t bytes,
                            atlas_mem_kind kind, void **out_ptr);
  // `bytes` is what raw_alloc was asked for (allocation plus red zone).
  atlas_status (*raw_free)(atlas_backend *b, void *ptr, size_t bytes,
                           atlas_mem_kind kind);
  // Synchronous reads/writes of backend memory from the host, used for red
  // zones (they run outside any capture: callers check first).
  atlas_status (*read)(atlas_backend *b, void *dst_host, const void *src,
                       size_t bytes);
  atlas_status (*fill)(atlas_backend *b, void *dst, uint8_t value,
                       size_t bytes);
} atlas_backend_mem_ops;

typedef struct atlas_fault_state {
  uint64_t count[ATLAS_FAULT_KIND_COUNT];    // operations attempted so far
  uint64_t fail_at[ATLAS_FAULT_KIND_COUNT];  // absolute op number to fail (0: none)
} atlas_fault_state;

struct atlas_backend {
  const atlas_backend_vtable *vtable;
  atlas_backend_mem_ops mem;
  char name[32];                    // "host", "cuda:0"
  atlas_ledger *ledger;
  size_t redzone_bytes;             // ATLAS_REDZONE, read once at creation
  bool debug_sync;                  // ATLAS_DEBUG_SYNC, read once at creation
  pthread_mutex_t state_mutex;      // guards poison
  atlas_fault_state faults;         // atomics (__atomic builtins)
  bool poison_active;               // poison_redzones was called:
  uint64_t poison_lo, poison_hi;    // zones in [lo, hi) hold 0xEE, others 0x00
  atlas_op_cache *op_cache;
  atlas_kernel_registry *registry;
  atlas_log_sink log;               // from the options; zeroed: stderr
};

// Fills the shared fields: name, ledger, environment switches, op cache.
// On failure everything it made is released.
ATLAS_MUST_USE atlas_status atlas_backend_base_init(atlas_backend *b,
                                     const atlas_backend_vtable *vtable,
                                     atlas_backend_mem_ops mem,
                                     const char *name);
// Releases the op cache's scratch, sweeps the ledger (reporting what it had to
// free as a leak), drops the registry reference and frees the ledger.
ATLAS_MUST_USE atlas_status atlas_backend_base_deinit(atlas_backend *b);

// Counts one operation of `kind`; returns ABORTED if it is the injected one.
ATLAS_MUST_USE atlas_status atlas_backend_base_fault_check(atlas_backend *b,
                                            atlas_fault_kind kind,
                                            const char *what);

// The fill a zone should hold: 0xA5 until poison_redzones is first called,
// then 0xEE inside the poisoned range and 0x00 outside it.
uint8_t atlas_backend_base_redzone_fill(atlas_backend *b, uint64_t index);

// Shared implementations to put in a vtable.
ATLAS_MUST_USE atlas_status atlas_backend_base_alloc(atlas_backend *b, size_t bytes,
                                      atlas_mem_kind kind, atlas_site site,
                                      void **out_ptr);
ATLAS_MUST_USE atlas_status atlas_backend_base_free(atlas_backend *b, void *ptr,
                                     atlas_mem_kind kind);
size_t atlas_backend_base_live_bytes(atlas_backend *b);
size_t atlas_backend_base_live_alloc_count(atlas_backend *b);
ATLAS_MUST_USE atlas_status atlas_backend_base_alloc_report(atlas_backend *b, size_t top_n,
                                             double min_mb, char **out_text);
ATLAS_MUST_USE atlas_status atlas_backend_base_alloc_report_json(atlas_backend *b,
                                                  char **out_json);
ATLAS_MUST_USE atlas_status atlas_backend_base_sweep_unreleased(atlas_backend *b,
                                                 atlas_sweep_result *out_result);
ATLAS_MUST_USE atlas_status atlas_backend_base_scan_redzones(
    atlas_backend *b, atlas_redzone_violation *out_violations,
    size_t max_violations, size_t *out_count);
ATLAS_MUST_USE atlas_status atlas_backend_base_poison_redzones(atlas_backend *b, uint64_t lo,
                                                uint64_t hi);
atlas_op_cache *atlas_backend_base_op_cache(atlas_backend *b);
bool atlas_backend_base_debug_sync_kernels(const atlas_backend *b);
atlas_kernel_registry *atlas_backend_base_kernel_registry(atlas_backend *b);
ATLAS_MUST_USE atlas_status atlas_backend_base_kernel_lookup(atlas_backend *b,
                                              const char *module,
                                              const char *function,
                                              const atlas_kernel **out_kernel);
// Checks typed arguments against the kernel's signature and that the kernel
// belongs to this backend's registry, then packs argument pointers for a raw
// launch. `out_ptrs` must hold arg_count entries.
ATLAS_MUST_USE atlas_status atlas_backend_base_pack_args(atlas_backend *b,
                                          const atlas_kernel *kernel,
                                          const atlas_arg *args,
                                          size_t arg_count, void **out_ptrs);
// Checks that `kernel` was resolved through this backend's registry.
ATLAS_MUST_USE atlas_status atlas_backend_base_check_kernel(atlas_backend *b,
                                             const atlas_kernel *kernel);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_BACKEND_IMPL_H_
