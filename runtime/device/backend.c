// The front door: every backend call comes through here.
//
// What is the same for every backend is done here, once: argument checks,
// fault points (fault.c), ledger keeping (backend_memory.c), red zones
// (redzone.c),
// reports, kernel lookup and typed-argument packing. Only what differs
// between devices goes through the vtable (runtime/device/backend_impl.h). A
// NULL optional entry means the backend does not offer that operation; the
// caller gets UNIMPLEMENTED naming both, never a crash.
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/device/backend.h"

#include <string.h>

#include "atlas/runtime/base/ledger_report.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/backend_memory.h"
#include "atlas/runtime/device/backend_modules.h"
#include "atlas/runtime/device/fault.h"
#include "atlas/runtime/device/redzone.h"

static atlas_status unimplemented(const atlas_backend *b, const char *op) {
  return atlas_backend_unimplemented(b, op);
}

#define DISPATCH(b, op, ...)                                   \
  ((b)->vtable->op != NULL ? (b)->vtable->op((b), __VA_ARGS__) \
                           : unimplemented((b), #op))
// Counts one operation of `kind` (a fault point).
static atlas_status fault_check(atlas_backend *b, atlas_fault_kind kind,
                                const char *what) {
  return atlas_fault_check(&b->faults, kind, what, b->name);
}

#define DISPATCH0(b, op) \
  ((b)->vtable->op != NULL ? (b)->vtable->op((b)) : unimplemented((b), #op))

// ---- argument checks, once for every backend ---------------------------------

static atlas_status check_event(const atlas_backend *b, const atlas_event *e,
                                const char *what) {
  if (e != NULL) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "%s: %s of a NULL event", b->name, what);
}

// The kernel was resolved through this backend's registry and there is a
// configuration to launch it with.
static atlas_status check_launch(const atlas_backend *b,
                                 const atlas_kernel *kernel,
                                 const atlas_launch_config *config) {
  if (kernel == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: launch of a NULL kernel", b->name);
  }
  if (b->registry == NULL || kernel->registry != b->registry) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "%s: kernel %s.%s belongs to another model's registry; look it up "
        "through this backend",
        b->name, kernel->module->name, kernel->def->name);
  }
  if (config == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: launch of %s.%s without a configuration",
                             b->name, kernel->module->name, kernel->def->name);
  }
  return ATLAS_OK;
}

static const char *type_name(char t) {
  switch (t) {
    case 'p':
      return "pointer";
    case 'i':
      return "int32";
    case 'u':
      return "uint32";
    case 'l':
      return "int64";
    case 'f':
      return "float";
    default:
      return "unknown type";
  }
}

// Checks typed arguments against the kernel's signature and points
// out_ptrs[i] at argument i, as a raw launch takes them.
static atlas_status pack_args(const atlas_backend *b,
                              const atlas_kernel *kernel, const atlas_arg *args,
                              size_t arg_count, void **out_ptrs) {
  const char *sig = kernel->def->signature ? kernel->def->signature : "";
  size_t expected = strlen(sig);
  if (arg_count != expected) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: kernel %s.%s takes %zu arguments (%s), %zu "
                             "given",
                             b->name, kernel->module->name, kernel->def->name,
                             expected, sig, arg_count);
  }
  if (arg_count > ATLAS_KERNEL_MAX_ARGS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: kernel %s.%s takes %zu arguments; a launch "
                             "passes at most %d",
                             b->name, kernel->module->name, kernel->def->name,
                             arg_count, ATLAS_KERNEL_MAX_ARGS);
  }
  if (arg_count > 0 && args == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: kernel %s.%s takes %zu arguments; none given",
                             b->name, kernel->module->name, kernel->def->name,
                             arg_count);
  }
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].type != sig[i]) {
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "%s: kernel %s.%s argument %zu is %s but %s was given", b->name,
          kernel->module->name, kernel->def->name, i, type_name(sig[i]),
          type_name(args[i].type));
    }
    out_ptrs[i] = (void *)&args[i].v;
  }
  return ATLAS_OK;
}

// ---- identity and lifetime ---------------------------------------------------------

const atlas_log_sink *atlas_backend_log_sink(const atlas_backend *backend) {
  return &backend->log;
}

const char *atlas_backend_name(const atlas_backend *backend) {
  return backend->name;
}

atlas_status atlas_backend_destroy(atlas_backend *backend) {
  if (backend == NULL) return ATLAS_OK;
  // A module thread uses the device: it ends before anything is released.
  atlas_backend_modules_drop(backend);
  return backend->vtable->destroy(backend);
}

atlas_status atlas_backend_alloc_at(atlas_backend *b, size_t bytes,
                                    atlas_site site, void **out_ptr) {
  return atlas_backend_memory_alloc(b, bytes, ATLAS_MEM_DEVICE, site, out_ptr);
}

atlas_status atlas_backend_alloc_managed_at(atlas_backend *b, size_t bytes,
                                            atlas_site site, void **out_ptr) {
  return atlas_backend_memory_alloc(b, bytes, ATLAS_MEM_MANAGED, site, out_ptr);
}

atlas_status atlas_backend_pinned_alloc_at(atlas_backend *b, size_t bytes,
                                           atlas_site site, void **out_ptr) {
  return atlas_backend_memory_alloc(b, bytes, ATLAS_MEM_PINNED_HOST, site,
                                    out_ptr);
}

atlas_status atlas_backend_free(atlas_backend *b, void *ptr) {
  return atlas_backend_memory_free(b, ptr, ATLAS_MEM_DEVICE);
}

atlas_status atlas_backend_pinned_free(atlas_backend *b, void *ptr) {
  return atlas_backend_memory_free(b, ptr, ATLAS_MEM_PINNED_HOST);
}

atlas_status atlas_backend_host_ptr_to_device(atlas_backend *b, void *host_ptr,
                                              void **out_device_ptr) {
  *out_device_ptr = NULL;
  atlas_ledger_entry e;
  atlas_status status = atlas_ledger_find(b->ledger, (uintptr_t)host_ptr, &e);
  if (status != ATLAS_OK || e.kind != ATLAS_MEM_PINNED_HOST) {
    atlas_status_free(status);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: %p is not pinned memory allocated by this "
                             "backend (atlas_backend_pinned_alloc)",
                             b->name, host_ptr);
  }
  // Ask for the address raw_alloc returned (what the driver knows); the
  // leading red zone, if any, is the same distance ahead on the device.
  void *base_device = NULL;
  ATLAS_RETURN_IF_ERROR(DISPATCH(
      b, host_ptr_to_device, (char *)host_ptr - e.lead_bytes, &base_device));
  *out_device_ptr = (char *)base_device + e.lead_bytes;
  return ATLAS_OK;
}

size_t atlas_backend_live_bytes(atlas_backend *b) {
  return atlas_ledger_live_bytes(b->ledger);
}

size_t atlas_backend_live_alloc_count(atlas_backend *b) {
  return atlas_ledger_live_count(b->ledger);
}

atlas_ledger *atlas_backend_ledger(atlas_backend *b) { return b->ledger; }

atlas_status atlas_backend_alloc_report(atlas_backend *b, size_t top_n,
                                        double min_mb, char **out_text) {
  // The ledger lives on the host: a report needs no device and is safe
  // during a capture.
  *out_text = NULL;
  return atlas_ledger_report_text(b->ledger, top_n, min_mb, out_text);
}

atlas_status atlas_backend_alloc_report_json(atlas_backend *b,
                                             char **out_json) {
  *out_json = NULL;
  return atlas_ledger_report_json(b->ledger, out_json);
}

atlas_status atlas_backend_sweep_unreleased(atlas_backend *b,
                                            atlas_sweep_result *out_result) {
  memset(out_result, 0, sizeof(*out_result));
  if (b->vtable->quiesce != NULL) {
    ATLAS_RETURN_IF_ERROR(b->vtable->quiesce(b, "sweeping unreleased memory"));
  }
  if (b->vtable->release_caches != NULL) {
    ATLAS_RETURN_IF_ERROR(b->vtable->release_caches(b));
  }
  return atlas_backend_memory_sweep(b, out_result);
}

size_t atlas_backend_redzone_bytes(const atlas_backend *b) {
  return b->redzone_bytes;
}

atlas_status atlas_backend_scan_redzones(
    atlas_backend *b, atlas_redzone_violation *out_violations,
    size_t max_violations, size_t *out_count) {
  *out_count = 0;
  if (b->vtable->quiesce != NULL) {
    ATLAS_RETURN_IF_ERROR(b->vtable->quiesce(b, "red-zone scan"));
  }
  return atlas_redzone_scan(b, out_violations, max_violations, out_count);
}

atlas_status atlas_backend_poison_redzones(atlas_backend *b, uint64_t lo,
                                           uint64_t hi) {
  if (b->vtable->quiesce != NULL) {
    ATLAS_RETURN_IF_ERROR(b->vtable->quiesce(b, "red-zone poisoning"));
  }
  return atlas_redzone_poison(b, lo, hi);
}

// ---- copies and fills: one path each, the public forms generated ------------

// Every copy: both pointers must be real when anything moves; then the copy
// is counted (a fault point), a zero-byte one too, and only a non-empty one
// reaches the backend.
static atlas_status copy(atlas_backend *b, atlas_copy_op op, const char *what) {
  size_t span = op.width_bytes > 0 && op.height > 0 ? op.width_bytes : 0;
  if (span > 0 && (op.dst == NULL || op.src == NULL)) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT, "%s: %s of %zu bytes with a NULL %s",
        b->name, what, span, op.dst == NULL ? "destination" : "source");
  }
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_COPY, what));
  if (span == 0) return ATLAS_OK;
  // A status never points into the op it was given (cppcheck takes the
  // returned handle for a pointer that may).
  // cppcheck-suppress returnDanglingLifetime
  return b->vtable->copy(b, &op);
}

static atlas_status fill(atlas_backend *b, atlas_fill_op op) {
  if (op.bytes > 0 && op.dst == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: memset of %zu bytes at NULL", b->name,
                             op.bytes);
  }
  if (op.bytes == 0) return ATLAS_OK;
  // A status never points into the op it was given (cppcheck takes the
  // returned handle for a pointer that may).
  // cppcheck-suppress returnDanglingLifetime
  return b->vtable->fill(b, &op);
}

// A plain copy of `bytes`: one row.
#define PLAIN_COPY(KIND, WHEN, STREAM, NAME)                                   \
  (atlas_copy_op) {                                                            \
    .kind = (KIND), .when = (WHEN), .dst = dst, .src = src,                    \
    .width_bytes = bytes, .height = 1, .dst_pitch = bytes, .src_pitch = bytes, \
    .stream = (STREAM), .name = (NAME)                                         \
  }
// The public copies differ only in direction, completion and wording.
// The public copies differ only in direction, completion and wording:
// atlas_backend_<NAME>(b, dst, src, bytes[, stream]).
#define DEFINE_COPY(NAME, KIND, WHEN, WHAT)                          \
  atlas_status atlas_backend_##NAME(atlas_backend *b, void *dst,     \
                                    const void *src, size_t bytes) { \
    return copy(b, PLAIN_COPY(KIND, WHEN, NULL, #NAME), WHAT);       \
  }
#define DEFINE_STREAM_COPY(NAME, KIND, WHEN, WHAT)                 \
  atlas_status atlas_backend_##NAME(atlas_backend *b, void *dst,   \
                                    const void *src, size_t bytes, \
                                    atlas_stream *stream) {        \
    return copy(b, PLAIN_COPY(KIND, WHEN, stream, #NAME), WHAT);   \
  }

DEFINE_COPY(h2d, ATLAS_COPY_H2D, ATLAS_XFER_SYNC, "h2d copy")
DEFINE_COPY(d2h, ATLAS_COPY_D2H, ATLAS_XFER_SYNC, "d2h copy")
DEFINE_COPY(d2d, ATLAS_COPY_D2D, ATLAS_XFER_SYNC, "d2d copy")
DEFINE_STREAM_COPY(d2h_on_stream, ATLAS_COPY_D2H, ATLAS_XFER_SYNC, "d2h copy")
DEFINE_STREAM_COPY(d2h_async, ATLAS_COPY_D2H, ATLAS_XFER_ASYNC,
                   "async d2h copy")
DEFINE_STREAM_COPY(h2d_async, ATLAS_COPY_H2D, ATLAS_XFER_ASYNC,
                   "async h2d copy")
DEFINE_STREAM_COPY(h2d_async_retained, ATLAS_COPY_H2D,
                   ATLAS_XFER_ASYNC_RETAINED, "async h2d copy (retained)")
DEFINE_STREAM_COPY(d2d_async, ATLAS_COPY_D2D, ATLAS_XFER_ASYNC,
                   "async d2d copy")

atlas_status atlas_backend_d2d_2d_async(atlas_backend *b, void *dst,
                                        size_t dst_pitch, const void *src,
                                        size_t src_pitch, size_t width_bytes,
                                        size_t height, atlas_stream *stream) {
  if (width_bytes > dst_pitch || width_bytes > src_pitch) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: 2D copy rows of %zu bytes do not fit the "
                             "pitches (src %zu, dst %zu); a pitch is the "
                             "distance between rows and must be at least the "
                             "row width",
                             b->name, width_bytes, src_pitch, dst_pitch);
  }
  // The rows span (height - 1) pitches plus one row: that must be addressable.
  size_t rows = height > 0 ? height - 1 : 0;
  if (rows > 0 && (dst_pitch > (SIZE_MAX - width_bytes) / rows ||
                   src_pitch > (SIZE_MAX - width_bytes) / rows)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: 2D copy of %zu rows with pitches %zu (src) "
                             "and %zu (dst) spans more than the address space",
                             b->name, height, src_pitch, dst_pitch);
  }
  atlas_copy_op op = {.kind = ATLAS_COPY_D2D,
                      .when = ATLAS_XFER_ASYNC,
                      .dst = dst,
                      .src = src,
                      .width_bytes = width_bytes,
                      .height = height,
                      .dst_pitch = dst_pitch,
                      .src_pitch = src_pitch,
                      .stream = stream,
                      .name = "d2d_2d_async"};
  return copy(b, op, "2D d2d copy");
}

atlas_status atlas_backend_memset(atlas_backend *b, void *dst, uint8_t value,
                                  size_t bytes) {
  return fill(b, (atlas_fill_op){.when = ATLAS_XFER_SYNC,
                                 .dst = dst,
                                 .value = value,
                                 .bytes = bytes,
                                 .name = "memset"});
}

atlas_status atlas_backend_memset_async(atlas_backend *b, void *dst,
                                        uint8_t value, size_t bytes,
                                        atlas_stream *stream) {
  return fill(b, (atlas_fill_op){.when = ATLAS_XFER_ASYNC,
                                 .dst = dst,
                                 .value = value,
                                 .bytes = bytes,
                                 .stream = stream,
                                 .name = "memset_async"});
}

atlas_stream *atlas_backend_default_stream(atlas_backend *b) {
  return b->vtable->default_stream ? b->vtable->default_stream(b) : NULL;
}

atlas_status atlas_backend_stream_create(atlas_backend *b,
                                         atlas_stream **out_stream) {
  *out_stream = NULL;
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_STREAM, "stream creation"));
  return DISPATCH(b, stream_create, out_stream);
}

atlas_status atlas_backend_stream_destroy(atlas_backend *b,
                                          atlas_stream *stream) {
  if (stream == NULL || stream == atlas_backend_default_stream(b)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: the default stream belongs to the backend "
                             "and is destroyed with it",
                             b->name);
  }
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
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_EVENT, "event creation"));
  return DISPATCH(b, event_create, out_event);
}

atlas_status atlas_backend_event_record(atlas_backend *b, atlas_event *event,
                                        atlas_stream *stream) {
  ATLAS_RETURN_IF_ERROR(check_event(b, event, "record"));
  return DISPATCH(b, event_record, event, stream);
}

atlas_status atlas_backend_event_wait(atlas_backend *b, atlas_stream *stream,
                                      atlas_event *event) {
  ATLAS_RETURN_IF_ERROR(check_event(b, event, "wait"));
  return DISPATCH(b, event_wait, stream, event);
}

atlas_status atlas_backend_event_synchronize(atlas_backend *b,
                                             atlas_event *event) {
  ATLAS_RETURN_IF_ERROR(check_event(b, event, "synchronize"));
  return DISPATCH(b, event_synchronize, event);
}

atlas_status atlas_backend_event_destroy(atlas_backend *b, atlas_event *event) {
  if (event == NULL) return ATLAS_OK;
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
  if (graph == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: launch of a NULL graph", b->name);
  }
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_LAUNCH, "graph launch"));
  return DISPATCH(b, launch_graph, graph, stream);
}

atlas_status atlas_backend_destroy_graph(atlas_backend *b, atlas_graph *graph) {
  if (graph == NULL) return ATLAS_OK;
  return DISPATCH(b, destroy_graph, graph);
}

atlas_kernel_registry *atlas_backend_kernel_registry(atlas_backend *b) {
  atlas_status_free(atlas_backend_modules_join(b));  // NULL on failure
  return b->registry;
}

atlas_status atlas_backend_modules_ready(atlas_backend *b) {
  return atlas_status_annotate(atlas_backend_modules_join(b),
                               "%s: loading kernel modules", b->name);
}

atlas_status atlas_backend_kernel_lookup(atlas_backend *b, const char *module,
                                         const char *function,
                                         const atlas_kernel **out_kernel) {
  return atlas_backend_modules_lookup(b, module, function, out_kernel);
}

atlas_status atlas_backend_launch(atlas_backend *b, const atlas_kernel *kernel,
                                  const atlas_launch_config *config,
                                  void **args) {
  ATLAS_RETURN_IF_ERROR(check_launch(b, kernel, config));
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_LAUNCH, "kernel launch"));
  return DISPATCH(b, launch, kernel, config, args);
}

atlas_status atlas_backend_launch_typed(atlas_backend *b,
                                        const atlas_kernel *kernel,
                                        const atlas_launch_config *config,
                                        const atlas_arg *args,
                                        size_t arg_count) {
  ATLAS_RETURN_IF_ERROR(check_launch(b, kernel, config));
  void *ptrs[ATLAS_KERNEL_MAX_ARGS];
  ATLAS_RETURN_IF_ERROR(pack_args(b, kernel, args, arg_count, ptrs));
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_LAUNCH, "kernel launch"));
  return DISPATCH(b, launch, kernel, config, ptrs);
}

const char *atlas_matmul_type_name(atlas_matmul_type type) {
  switch (type) {
    case ATLAS_MATMUL_F16:
      return "F16";
    case ATLAS_MATMUL_BF16:
      return "BF16";
    default:
      return "unknown type";
  }
}

// The shapes every backend can index: each dimension below 2^31 and every
// operand's byte count within size_t.
static atlas_status check_matmul(const atlas_backend *b, const float *out,
                                 const void *w, const void *x,
                                 atlas_matmul_type type, size_t m, size_t n,
                                 size_t k, atlas_matmul_out mode) {
  if (type != ATLAS_MATMUL_F16 && type != ATLAS_MATMUL_BF16) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: matmul of type %d; the types are F16 and "
                             "BF16",
                             b->name, (int)type);
  }
  if (mode != ATLAS_MATMUL_WRITE && mode != ATLAS_MATMUL_ACCUMULATE) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: matmul with output mode %d; the modes are "
                             "ATLAS_MATMUL_WRITE and ATLAS_MATMUL_ACCUMULATE",
                             b->name, (int)mode);
  }
  const size_t limit = (size_t)INT32_MAX;
  if (m > limit || n > limit || k > limit) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: matmul of %zu x %zu x %zu: each dimension "
                             "must be below 2^31",
                             b->name, m, n, k);
  }
  if ((m > 0 && n > SIZE_MAX / 4 / m) || (m > 0 && k > SIZE_MAX / 2 / m) ||
      (n > 0 && k > SIZE_MAX / 2 / n)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: matmul of %zu x %zu x %zu spans more than "
                             "the address space",
                             b->name, m, n, k);
  }
  bool empty = m == 0 || n == 0;
  if (!empty && (out == NULL || (k > 0 && (w == NULL || x == NULL)))) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: matmul of %zu x %zu x %zu with a NULL %s",
                             b->name, m, n, k,
                             out == NULL ? "output"
                             : w == NULL ? "weight matrix"
                                         : "input matrix");
  }
  return ATLAS_OK;
}

atlas_status atlas_backend_matmul(atlas_backend *b, atlas_stream *stream,
                                  float *out, const void *w, const void *x,
                                  atlas_matmul_type type, size_t m, size_t n,
                                  size_t k, atlas_matmul_out mode) {
  ATLAS_RETURN_IF_ERROR(check_matmul(b, out, w, x, type, m, n, k, mode));
  if (b->vtable->matmul == NULL) return unimplemented(b, "matmul");
  if (m == 0 || n == 0 || k == 0) {
    // The question "does this backend multiply?" (the entry answers OK or
    // UNIMPLEMENTED and touches nothing); not a launch.
    ATLAS_RETURN_IF_ERROR(
        b->vtable->matmul(b, stream, out, w, x, type, 0, 0, 0, mode));
    if (m == 0 || n == 0) return ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(fault_check(b, ATLAS_FAULT_LAUNCH, "matmul"));
  if (k == 0) {  // an empty sum: zeros, or nothing to add
    if (mode == ATLAS_MATMUL_ACCUMULATE) return ATLAS_OK;
    return atlas_backend_memset_async(b, out, 0, m * n * sizeof(float), stream);
  }
  return b->vtable->matmul(b, stream, out, w, x, type, m, n, k, mode);
}

bool atlas_backend_debug_sync_kernels(const atlas_backend *b) {
  return b->debug_sync;
}

// The facts come in one entry; each public question reads its field.
static atlas_status facts(atlas_backend *b, const char *what,
                          atlas_device_facts *out) {
  memset(out, 0, sizeof(*out));
  if (b->vtable->device_facts == NULL) return unimplemented(b, what);
  return b->vtable->device_facts(b, out);
}

// Each public question reads one field of that answer. TYPE names a type
// in a declaration, where parentheses cannot go.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DEFINE_FACT(NAME, TYPE, FIELD)                             \
  atlas_status atlas_backend_##NAME(atlas_backend *b, TYPE *out) { \
    atlas_device_facts f;                                          \
    atlas_status status = facts(b, #NAME, &f);                     \
    *out = f.FIELD;                                                \
    return status;                                                 \
  }
// NOLINTEND(bugprone-macro-parentheses)

DEFINE_FACT(total_memory, size_t, total_bytes)
DEFINE_FACT(free_memory, size_t, free_bytes)
DEFINE_FACT(device_free_memory, size_t, free_bytes)
DEFINE_FACT(sm_count, int, sm_count)

atlas_status atlas_backend_bind_to_thread(atlas_backend *b) {
  return DISPATCH0(b, bind_to_thread);
}

atlas_op_cache *atlas_backend_op_cache(atlas_backend *b) { return b->op_cache; }

void atlas_backend_inject_fault(atlas_backend *b, atlas_fault_kind kind,
                                uint64_t k) {
  atlas_fault_arm(&b->faults, kind, k);
}

uint64_t atlas_backend_op_count(const atlas_backend *b, atlas_fault_kind kind) {
  return atlas_fault_count(&b->faults, kind);
}

atlas_status atlas_backend_fault_point(atlas_backend *b, atlas_fault_kind kind,
                                       const char *what) {
  return atlas_fault_check(&b->faults, kind, what, b->name);
}
