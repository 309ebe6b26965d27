// Backend: the one interface every device sits behind (host CPU, CUDA).
//
// Every call goes through the front door (backend.c), which checks the
// arguments and keeps the ledger once for every backend, then dispatches what
// differs between devices through the backend's vtable (backend_impl.h).
// Allocations are ledgered with their call site: use the ATLAS_ALLOC-style
// macros, which capture __FILE__/__LINE__/__func__ at the call. Operations a
// backend does not offer return UNIMPLEMENTED naming the backend and the
// operation; nothing crashes.
#ifndef ATLAS_RUNTIME_DEVICE_BACKEND_H_
#define ATLAS_RUNTIME_DEVICE_BACKEND_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/device/backend_types.h"
#include "atlas/runtime/device/fault.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- identity and lifetime -------------------------------------------------
const char *atlas_backend_name(const atlas_backend *backend);
// The sink the backend was created with (never NULL).
const atlas_log_sink *atlas_backend_log_sink(const atlas_backend *backend);
// Last-resort reclamation: unloads nothing still in flight, frees everything
// still on the ledger (the failed-load case) and reports what it had to free.
ATLAS_MUST_USE atlas_status atlas_backend_destroy(atlas_backend *backend);

// ---- memory ---------------------------------------------------------------
ATLAS_MUST_USE atlas_status atlas_backend_alloc_at(atlas_backend *b,
                                                   size_t bytes,
                                                   atlas_site site,
                                                   void **out_ptr);
ATLAS_MUST_USE atlas_status atlas_backend_alloc_managed_at(atlas_backend *b,
                                                           size_t bytes,
                                                           atlas_site site,
                                                           void **out_ptr);
ATLAS_MUST_USE atlas_status atlas_backend_pinned_alloc_at(atlas_backend *b,
                                                          size_t bytes,
                                                          atlas_site site,
                                                          void **out_ptr);
#define atlas_backend_alloc(b, bytes, out) \
  atlas_backend_alloc_at((b), (bytes), ATLAS_SITE, (out))
#define atlas_backend_alloc_managed(b, bytes, out) \
  atlas_backend_alloc_managed_at((b), (bytes), ATLAS_SITE, (out))
#define atlas_backend_pinned_alloc(b, bytes, out) \
  atlas_backend_pinned_alloc_at((b), (bytes), ATLAS_SITE, (out))
// Under ATLAS_REDZONE a free (and the sweep) first reads the allocation's
// bands: a write before its start or past its end is DATA_LOSS naming the
// allocation; the memory is freed all the same. A release the device refuses
// (or an injected `free` fault) returns that error and leaves the allocation
// live on the ledger, marked release_failed, for a later free or the sweep.
ATLAS_MUST_USE atlas_status atlas_backend_free(atlas_backend *b, void *ptr);
ATLAS_MUST_USE atlas_status atlas_backend_pinned_free(atlas_backend *b,
                                                      void *ptr);
// Device address through which a kernel reaches pinned host memory.
ATLAS_MUST_USE atlas_status atlas_backend_host_ptr_to_device(
    atlas_backend *b, void *host_ptr, void **out_device_ptr);

size_t atlas_backend_live_bytes(atlas_backend *b);
size_t atlas_backend_live_alloc_count(atlas_backend *b);
atlas_ledger *atlas_backend_ledger(atlas_backend *b);
// See atlas_ledger_report_text. Refuses while a stream is capturing when the
// report would need the device.
ATLAS_MUST_USE atlas_status atlas_backend_alloc_report(atlas_backend *b,
                                                       size_t top_n,
                                                       double min_mb,
                                                       char **out_text);
ATLAS_MUST_USE atlas_status atlas_backend_alloc_report_json(atlas_backend *b,
                                                            char **out_json);
// Frees everything still on the ledger and says what it was; what the
// device refuses to free stays live (out_result->unfreed_count) and the
// status names it.
ATLAS_MUST_USE atlas_status atlas_backend_sweep_unreleased(
    atlas_backend *b, atlas_sweep_result *out_result);

// ---- red zones (ATLAS_REDZONE=<bytes> at creation) --------------------------
// Each allocation gets that many guard bytes after it and as many, rounded up
// to 256 (so the address keeps the allocator's alignment), before it.
size_t atlas_backend_redzone_bytes(const atlas_backend *b);
// Reads every guard band back, reports violations (up to max_violations into
// out_violations, may be NULL; one per allocation, either band), refills
// violated bands, returns the count.
ATLAS_MUST_USE atlas_status atlas_backend_scan_redzones(
    atlas_backend *b, atlas_redzone_violation *out_violations,
    size_t max_violations, size_t *out_count);
// Fills both zones of allocations whose creation index is in [lo, hi) with
// 0xEE and all others with 0x00. Nothing is allocated, moved or resized.
ATLAS_MUST_USE atlas_status atlas_backend_poison_redzones(atlas_backend *b,
                                                          uint64_t lo,
                                                          uint64_t hi);

// ---- copies ---------------------------------------------------------------
ATLAS_MUST_USE atlas_status atlas_backend_h2d(atlas_backend *b, void *dst,
                                              const void *src, size_t bytes);
ATLAS_MUST_USE atlas_status atlas_backend_d2h(atlas_backend *b, void *dst,
                                              const void *src, size_t bytes);
// Synchronous d2h ordered after the work already queued on `stream`.
ATLAS_MUST_USE atlas_status atlas_backend_d2h_on_stream(atlas_backend *b,
                                                        void *dst,
                                                        const void *src,
                                                        size_t bytes,
                                                        atlas_stream *stream);
// Asynchronous d2h; dst should be pinned memory; complete at stream sync.
ATLAS_MUST_USE atlas_status atlas_backend_d2h_async(atlas_backend *b, void *dst,
                                                    const void *src,
                                                    size_t bytes,
                                                    atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_d2d(atlas_backend *b, void *dst,
                                              const void *src, size_t bytes);
// Asynchronous h2d whose source may be freed as soon as the call returns
// (the backend stages it).
ATLAS_MUST_USE atlas_status atlas_backend_h2d_async(atlas_backend *b, void *dst,
                                                    const void *src,
                                                    size_t bytes,
                                                    atlas_stream *stream);
// Asynchronous h2d that reads `src` later: the caller keeps it alive (and
// pinned, for speed) until the stream is synchronised.
ATLAS_MUST_USE atlas_status
atlas_backend_h2d_async_retained(atlas_backend *b, void *dst, const void *src,
                                 size_t bytes, atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_d2d_async(atlas_backend *b, void *dst,
                                                    const void *src,
                                                    size_t bytes,
                                                    atlas_stream *stream);
// Pitched 2D copy of `height` rows of `width_bytes` each.
ATLAS_MUST_USE atlas_status atlas_backend_d2d_2d_async(
    atlas_backend *b, void *dst, size_t dst_pitch, const void *src,
    size_t src_pitch, size_t width_bytes, size_t height, atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_memset(atlas_backend *b, void *dst,
                                                 uint8_t value, size_t bytes);
ATLAS_MUST_USE atlas_status atlas_backend_memset_async(atlas_backend *b,
                                                       void *dst, uint8_t value,
                                                       size_t bytes,
                                                       atlas_stream *stream);

// ---- streams, events, capture ---------------------------------------------
atlas_stream *atlas_backend_default_stream(atlas_backend *b);
ATLAS_MUST_USE atlas_status
atlas_backend_stream_create(atlas_backend *b, atlas_stream **out_stream);
ATLAS_MUST_USE atlas_status atlas_backend_stream_destroy(atlas_backend *b,
                                                         atlas_stream *stream);
ATLAS_MUST_USE atlas_status
atlas_backend_stream_synchronize(atlas_backend *b, atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_synchronize(atlas_backend *b);
ATLAS_MUST_USE atlas_status atlas_backend_event_create(atlas_backend *b,
                                                       atlas_event **out_event);
ATLAS_MUST_USE atlas_status atlas_backend_event_record(atlas_backend *b,
                                                       atlas_event *event,
                                                       atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_event_wait(atlas_backend *b,
                                                     atlas_stream *stream,
                                                     atlas_event *event);
ATLAS_MUST_USE atlas_status atlas_backend_event_synchronize(atlas_backend *b,
                                                            atlas_event *event);
ATLAS_MUST_USE atlas_status atlas_backend_event_destroy(atlas_backend *b,
                                                        atlas_event *event);
ATLAS_MUST_USE atlas_status atlas_backend_stream_is_capturing(
    atlas_backend *b, atlas_stream *stream, bool *out_capturing);
ATLAS_MUST_USE atlas_status atlas_backend_begin_capture(atlas_backend *b,
                                                        atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_end_capture(atlas_backend *b,
                                                      atlas_stream *stream,
                                                      atlas_graph **out_graph);
// Ends a capture an error path left open and discards the graph, so the
// stream works again. OK (and *out_aborted false) when nothing was capturing.
ATLAS_MUST_USE atlas_status atlas_backend_abort_capture_if_active(
    atlas_backend *b, atlas_stream *stream, bool *out_aborted);
ATLAS_MUST_USE atlas_status atlas_backend_launch_graph(atlas_backend *b,
                                                       atlas_graph *graph,
                                                       atlas_stream *stream);
ATLAS_MUST_USE atlas_status atlas_backend_destroy_graph(atlas_backend *b,
                                                        atlas_graph *graph);

// ---- kernels --------------------------------------------------------------
// Waits for background_modules, if any; NULL when none loaded.
atlas_kernel_registry *atlas_backend_kernel_registry(atlas_backend *b);
// Starts loading background_modules now, on their thread, and the backend's
// own deferred start-up (CUDA: cuBLASLt) on another (a model's load calls it
// once its weights are allocated: the modules' code then lands in device
// memory after them, in the same order every time). No-op otherwise.
void atlas_backend_modules_start(atlas_backend *b);
// Waits for modules loading in the background and returns their load status
// (OK also when there were none or they loaded at create).
ATLAS_MUST_USE atlas_status atlas_backend_modules_ready(atlas_backend *b);
ATLAS_MUST_USE atlas_status atlas_backend_kernel_lookup(
    atlas_backend *b, const char *module, const char *function,
    const atlas_kernel **out_kernel);

// Raw launch: args[i] points to argument i (as cuLaunchKernel).
ATLAS_MUST_USE atlas_status
atlas_backend_launch(atlas_backend *b, const atlas_kernel *kernel,
                     const atlas_launch_config *config, void **args);

ATLAS_MUST_USE atlas_status atlas_backend_launch_typed(
    atlas_backend *b, const atlas_kernel *kernel,
    const atlas_launch_config *config, const atlas_arg *args, size_t arg_count);

// ---- matrix products (optional) --------------------------------------------

// out[i][j] = sum_c x[i][c] * w[j][c] for i < m, j < n, c < k: x (m x k) and
// w (n x k) both `type`, row-major; out (m x n) f32, row-major; products and
// sums in f32 (the order of the sum is the backend's). ATLAS_MATMUL_ACCUMULATE
// adds the product to out instead (out[i][j] + sum, one f32 addition on the
// host; cuBLASLt's epilogue, beta = 1, may fold out into its partial sums in
// another order); ATLAS_MATMUL_WRITE overwrites it. Queued on `stream`
// (NULL: the default stream). Counts as a launch for fault injection
// (ATLAS_FAULT=launch:n). UNIMPLEMENTED where the backend has no matmul (the
// CUDA backend without cuBLASLt, or with ATLAS_CUBLASLT=0): callers then use
// their own kernels. m or n of 0 computes nothing and is no launch: it asks
// whether the backend multiplies at all (OK or UNIMPLEMENTED), which is how a
// caller decides once; k == 0 (m, n > 0) writes zeros (accumulating: leaves
// out as it is), still counted as a launch. On CUDA the products
// of one backend share cuBLASLt's workspace (allocated by the first product
// that needs it): products queued on different streams must be ordered
// (events, or one stream), and the first should not be inside a capture.
ATLAS_MUST_USE atlas_status
atlas_backend_matmul(atlas_backend *b, atlas_stream *stream, float *out,
                     const void *w, const void *x, atlas_matmul_type type,
                     size_t m, size_t n, size_t k, atlas_matmul_out mode);
const char *atlas_matmul_type_name(atlas_matmul_type type);
bool atlas_backend_debug_sync_kernels(const atlas_backend *b);

// ---- device facts ---------------------------------------------------------
ATLAS_MUST_USE atlas_status atlas_backend_total_memory(atlas_backend *b,
                                                       size_t *out_bytes);
// What this backend may still allocate (capacity less live bytes on the host).
ATLAS_MUST_USE atlas_status atlas_backend_free_memory(atlas_backend *b,
                                                      size_t *out_bytes);
// What the driver (or the OS) reports free on the device right now.
ATLAS_MUST_USE atlas_status atlas_backend_device_free_memory(atlas_backend *b,
                                                             size_t *out_bytes);
ATLAS_MUST_USE atlas_status atlas_backend_sm_count(atlas_backend *b,
                                                   int *out_count);
// Makes the backend's context current on the calling thread.
ATLAS_MUST_USE atlas_status atlas_backend_bind_to_thread(atlas_backend *b);

// ---- per-backend memo ------------------------------------------------------
atlas_op_cache *atlas_backend_op_cache(atlas_backend *b);

// ---- fault injection ----------------------------------------------------------
// The k-th operation of `kind` from now fails (k >= 1); k == 0 disarms.
void atlas_backend_inject_fault(atlas_backend *b, atlas_fault_kind kind,
                                uint64_t k);
// Operations of `kind` attempted so far (for sizing a fault sweep).
uint64_t atlas_backend_op_count(const atlas_backend *b, atlas_fault_kind kind);
// Counts one operation of `kind` made on this backend's behalf outside it
// (a communicator's collective): ABORTED naming `what` and the backend when
// it is the armed one, as the backend's own operations fail.
ATLAS_MUST_USE atlas_status atlas_backend_fault_point(atlas_backend *b,
                                                      atlas_fault_kind kind,
                                                      const char *what);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_BACKEND_H_
