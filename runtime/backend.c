// Public backend API: thin dispatch through the vtable.
//
// A NULL vtable entry means the backend does not offer that operation; the
// caller gets UNIMPLEMENTED naming both, never a crash.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/backend.h"

#include "atlas/runtime/backend_impl.h"

static atlas_status unimplemented(const atlas_backend *b, const char *op) {
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "backend %s does not implement %s", b->name, op);
}

#define DISPATCH(b, op, ...)                                      \
  ((b)->vtable->op != NULL ? (b)->vtable->op((b), __VA_ARGS__) \
                           : unimplemented((b), #op))
#define DISPATCH0(b, op) \
  ((b)->vtable->op != NULL ? (b)->vtable->op((b)) : unimplemented((b), #op))

const atlas_log_sink *atlas_backend_log_sink(const atlas_backend *backend) {
  return &backend->log;
}

const char *atlas_backend_name(const atlas_backend *backend) {
  return backend->name;
}

atlas_status atlas_backend_destroy(atlas_backend *backend) {
  if (backend == NULL) return ATLAS_OK;
  return backend->vtable->destroy(backend);
}

atlas_status atlas_backend_alloc_at(atlas_backend *b, size_t bytes,
                                    atlas_site site, void **out_ptr) {
  return DISPATCH(b, alloc, bytes, ATLAS_MEM_DEVICE, site, out_ptr);
}

atlas_status atlas_backend_alloc_managed_at(atlas_backend *b, size_t bytes,
                                            atlas_site site, void **out_ptr) {
  return DISPATCH(b, alloc, bytes, ATLAS_MEM_MANAGED, site, out_ptr);
}

atlas_status atlas_backend_pinned_alloc_at(atlas_backend *b, size_t bytes,
                                           atlas_site site, void **out_ptr) {
  return DISPATCH(b, alloc, bytes, ATLAS_MEM_PINNED_HOST, site, out_ptr);
}

atlas_status atlas_backend_free(atlas_backend *b, void *ptr) {
  return DISPATCH(b, free, ptr, ATLAS_MEM_DEVICE);
}

atlas_status atlas_backend_pinned_free(atlas_backend *b, void *ptr) {
  return DISPATCH(b, free, ptr, ATLAS_MEM_PINNED_HOST);
}

atlas_status atlas_backend_host_ptr_to_device(atlas_backend *b, void *host_ptr,
                                              void **out_device_ptr) {
  return DISPATCH(b, host_ptr_to_device, host_ptr, out_device_ptr);
}

size_t atlas_backend_live_bytes(atlas_backend *b) {
  return b->vtable->live_bytes ? b->vtable->live_bytes(b) : 0;
}

size_t atlas_backend_live_alloc_count(atlas_backend *b) {
  return b->vtable->live_alloc_count ? b->vtable->live_alloc_count(b) : 0;
}

atlas_ledger *atlas_backend_ledger(atlas_backend *b) { return b->ledger; }

atlas_status atlas_backend_alloc_report(atlas_backend *b, size_t top_n,
                                        double min_mb, char **out_text) {
  *out_text = NULL;
  return DISPATCH(b, alloc_report, top_n, min_mb, out_text);
}

atlas_status atlas_backend_alloc_report_json(atlas_backend *b,
                                             char **out_json) {
  *out_json = NULL;
  return DISPATCH(b, alloc_report_json, out_json);
}

atlas_status atlas_backend_sweep_unreleased(atlas_backend *b,
                                            atlas_sweep_result *out_result) {
  out_result->count = out_result->bytes = 0;
  out_result->sites = NULL;
  return DISPATCH(b, sweep_unreleased, out_result);
}

size_t atlas_backend_redzone_bytes(const atlas_backend *b) {
  return b->redzone_bytes;
}

atlas_status atlas_backend_scan_redzones(atlas_backend *b,
                                         atlas_redzone_violation *out_violations,
                                         size_t max_violations,
                                         size_t *out_count) {
  *out_count = 0;
  return DISPATCH(b, scan_redzones, out_violations, max_violations, out_count);
}

atlas_status atlas_backend_poison_redzones(atlas_backend *b, uint64_t lo,
                                           uint64_t hi) {
  return DISPATCH(b, poison_redzones, lo, hi);
}

atlas_status atlas_backend_h2d(atlas_backend *b, void *dst, const void *src,
                               size_t bytes) {
  return DISPATCH(b, h2d, dst, src, bytes);
}

atlas_status atlas_backend_d2h(atlas_backend *b, void *dst, const void *src,
                               size_t bytes) {
  return DISPATCH(b, d2h, dst, src, bytes);
}

atlas_status atlas_backend_d2h_on_stream(atlas_backend *b, void *dst,
                                         const void *src, size_t bytes,
                                         atlas_stream *stream) {
  return DISPATCH(b, d2h_on_stream, dst, src, bytes, stream);
}

atlas_status atlas_backend_d2h_async(atlas_backend *b, void *dst,
                                     const void *src, size_t bytes,
                                     atlas_stream *stream) {
  return DISPATCH(b, d2h_async, dst, src, bytes, stream);
}

atlas_status atlas_backend_d2d(atlas_backend *b, void *dst, const void *src,
                               size_t bytes) {
  return DISPATCH(b, d2d, dst, src, bytes);
}

atlas_status atlas_backend_h2d_async(atlas_backend *b, void *dst,
                                     const void *src, size_t bytes,
                                     atlas_stream *stream) {
  return DISPATCH(b, h2d_async, dst, src, bytes, stream);
}

atlas_status atlas_backend_h2d_async_retained(atlas_backend *b, void *dst,
                                              const void *src, size_t bytes,
                                              atlas_stream *stream) {
  return DISPATCH(b, h2d_async_retained, dst, src, bytes, stream);
}

atlas_status atlas_backend_d2d_async(atlas_backend *b, void *dst,
                                     const void *src, size_t bytes,
                                     atlas_stream *stream) {
  return DISPATCH(b, d2d_async, dst, src, bytes, stream);
}

atlas_status atlas_backend_d2d_2d_async(atlas_backend *b, void *dst,
                                        size_t dst_pitch, const void *src,
                                        size_t src_pitch, size_t width_bytes,
                                        size_t height, atlas_stream *stream) {
  return DISPATCH(b, d2d_2d_async, dst, dst_pitch, src, src_pitch, width_bytes,
                  height, stream);
}

atlas_status atlas_backend_memset(atlas_backend *b, void *dst, uint8_t value,
                                  size_t bytes) {
  return DISPATCH(b, memset, dst, value, bytes);
}

atlas_status atlas_backend_memset_async(atlas_backend *b, void *dst,
                                        uint8_t value, size_t bytes,
                                        atlas_stream *stream) {
  return DISPATCH(b, memset_async, dst, value, bytes, stream);
}

atlas_stream *atlas_backend_default_stream(atlas_backend *b) {
  return b->vtable->default_stream ? b->vtable->default_stream(b) : NULL;
}

atlas_status atlas_backend_stream_create(atlas_backend *b,
                                         atlas_stream **out_stream) {
  *out_stream = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_base_fault_check(b, ATLAS_FAULT_STREAM, "stream creation"));
  return DISPATCH(b, stream_create, out_stream);
}

atlas_status atlas_backend_stream_destroy(atlas_backend *b,
                                          atlas_stream *stream) {
  return DISPATCH(b, stream_destroy, stream);
}

atlas_status atlas_backend_stream_synchronize(atlas_backend *b,
                                              atlas_stream *stream) {
  return DISPATCH(b, stream_synchronize, stream);
}

atlas_status atlas_backend_synchronize(atlas_backend *b) {
  return DISPATCH0(b, synchronize);
}

atlas_status atlas_backend_event_create(atlas_backend *b,
                                        atlas_event **out_event) {
  *out_event = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_base_fault_check(b, ATLAS_FAULT_EVENT, "event creation"));
  return DISPATCH(b, event_create, out_event);
}

atlas_status atlas_backend_event_record(atlas_backend *b, atlas_event *event,
                                        atlas_stream *stream) {
  return DISPATCH(b, event_record, event, stream);
}

atlas_status atlas_backend_event_wait(atlas_backend *b, atlas_stream *stream,
                                      atlas_event *event) {
  return DISPATCH(b, event_wait, stream, event);
}

atlas_status atlas_backend_event_synchronize(atlas_backend *b,
                                             atlas_event *event) {
  return DISPATCH(b, event_synchronize, event);
}

atlas_status atlas_backend_event_destroy(atlas_backend *b, atlas_event *event) {
  return DISPATCH(b, event_destroy, event);
}

atlas_status atlas_backend_stream_is_capturing(atlas_backend *b,
                                               atlas_stream *stream,
                                               bool *out_capturing) {
  *out_capturing = false;
  return DISPATCH(b, stream_is_capturing, stream, out_capturing);
}

atlas_status atlas_backend_begin_capture(atlas_backend *b,
                                         atlas_stream *stream) {
  return DISPATCH(b, begin_capture, stream);
}

atlas_status atlas_backend_end_capture(atlas_backend *b, atlas_stream *stream,
                                       atlas_graph **out_graph) {
  *out_graph = NULL;
  return DISPATCH(b, end_capture, stream, out_graph);
}

atlas_status atlas_backend_abort_capture_if_active(atlas_backend *b,
                                                   atlas_stream *stream,
                                                   bool *out_aborted) {
  bool ignored = false;
  if (out_aborted == NULL) out_aborted = &ignored;
  *out_aborted = false;
  return DISPATCH(b, abort_capture_if_active, stream, out_aborted);
}

atlas_status atlas_backend_launch_graph(atlas_backend *b, atlas_graph *graph,
                                        atlas_stream *stream) {
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_base_fault_check(b, ATLAS_FAULT_LAUNCH, "graph launch"));
  return DISPATCH(b, launch_graph, graph, stream);
}

atlas_status atlas_backend_destroy_graph(atlas_backend *b, atlas_graph *graph) {
  return DISPATCH(b, destroy_graph, graph);
}

atlas_kernel_registry *atlas_backend_kernel_registry(atlas_backend *b) {
  return b->vtable->kernel_registry ? b->vtable->kernel_registry(b) : NULL;
}

atlas_status atlas_backend_kernel_lookup(atlas_backend *b, const char *module,
                                         const char *function,
                                         const atlas_kernel **out_kernel) {
  *out_kernel = NULL;
  return DISPATCH(b, kernel_lookup, module, function, out_kernel);
}

atlas_status atlas_backend_launch(atlas_backend *b, const atlas_kernel *kernel,
                                  const atlas_launch_config *config,
                                  void **args) {
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_base_fault_check(b, ATLAS_FAULT_LAUNCH, "kernel launch"));
  return DISPATCH(b, launch, kernel, config, args);
}

atlas_status atlas_backend_launch_typed(atlas_backend *b,
                                        const atlas_kernel *kernel,
                                        const atlas_launch_config *config,
                                        const atlas_arg *args,
                                        size_t arg_count) {
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_base_fault_check(b, ATLAS_FAULT_LAUNCH, "kernel launch"));
  return DISPATCH(b, launch_typed, kernel, config, args, arg_count);
}

bool atlas_backend_debug_sync_kernels(const atlas_backend *b) {
  return b->vtable->debug_sync_kernels ? b->vtable->debug_sync_kernels(b)
                                       : false;
}

atlas_status atlas_backend_total_memory(atlas_backend *b, size_t *out_bytes) {
  *out_bytes = 0;
  return DISPATCH(b, total_memory, out_bytes);
}

atlas_status atlas_backend_free_memory(atlas_backend *b, size_t *out_bytes) {
  *out_bytes = 0;
  return DISPATCH(b, free_memory, out_bytes);
}

atlas_status atlas_backend_device_free_memory(atlas_backend *b,
                                              size_t *out_bytes) {
  *out_bytes = 0;
  return DISPATCH(b, device_free_memory, out_bytes);
}

atlas_status atlas_backend_sm_count(atlas_backend *b, int *out_count) {
  *out_count = 0;
  return DISPATCH(b, sm_count, out_count);
}

atlas_status atlas_backend_bind_to_thread(atlas_backend *b) {
  return DISPATCH0(b, bind_to_thread);
}

atlas_op_cache *atlas_backend_op_cache(atlas_backend *b) {
  return b->vtable->op_cache ? b->vtable->op_cache(b) : NULL;
}
