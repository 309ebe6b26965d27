// For backend implementers: the vtable and the state every backend shares.
//
// A backend embeds `atlas_backend` as its first member, fills one vtable and
// calls atlas_backend_base_init / atlas_backend_base_deinit. The vtable holds
// only what differs between devices. The front door (backend.c) does the
// rest once, for every backend: ledger keeping, red zones, fault injection,
// the sweep, reports, kernel lookup, typed-argument packing, and every
// argument check (NULL pointers, zero sizes, pitches, NULL graphs and events,
// the default stream, kernels from another registry, argument limits). An
// entry is only reached with arguments that passed those checks.
//
// A new backend fills:
//   required  destroy, raw_alloc, raw_free, copy, fill
//   optional  quiesce (device work the host must wait for before touching
//             backend memory), host_ptr_to_device, streams, events, capture
//             and graphs, launch (raw argument pointers), matmul (16-bit
//             matrix products), device_facts, release_caches,
//             start_background, bind_to_thread
// A NULL optional entry makes its operation return UNIMPLEMENTED naming the
// backend and the operation; atlas_backend_base_init refuses a vtable that
// lacks a required entry.
#ifndef ATLAS_RUNTIME_BACKEND_IMPL_H_
#define ATLAS_RUNTIME_BACKEND_IMPL_H_

#include <pthread.h>
#include <stddef.h>

#include "atlas/runtime/device/backend_types.h"
#include "atlas/runtime/device/fault.h"

#ifdef __cplusplus
extern "C" {
#endif

// Which way a copy goes. Pointers are what the caller holds: host memory
// (pageable or pinned) and backend memory (device addresses as void*).
typedef enum atlas_copy_kind {
  ATLAS_COPY_H2D,
  ATLAS_COPY_D2H,
  ATLAS_COPY_D2D,
} atlas_copy_kind;

// When a copy or a fill completes.
typedef enum atlas_xfer_when {
  // The host touches backend memory now, outside every stream's order (red
  // zones, after quiesce): never recorded into a capture.
  ATLAS_XFER_HOST_NOW,
  // Done when the call returns, ordered after the work queued on `stream`
  // (NULL: the default stream).
  ATLAS_XFER_SYNC,
  // Queued on `stream`; an h2d's source may be freed at return (the backend
  // stages it).
  ATLAS_XFER_ASYNC,
  // Queued on `stream`; an h2d's source is read later: the caller keeps it
  // until the stream is synchronised.
  ATLAS_XFER_ASYNC_RETAINED,
} atlas_xfer_when;

// One copy: `height` rows of `width_bytes`, `*_pitch` bytes apart (a plain
// copy is one row, pitches equal to the width). The front door has checked
// it: pointers non-NULL, width and height > 0, width <= both pitches, the
// span addressable.
typedef struct atlas_copy_op {
  atlas_copy_kind kind;
  atlas_xfer_when when;
  void *dst;
  const void *src;
  size_t width_bytes, height;
  size_t dst_pitch, src_pitch;
  atlas_stream *stream;  // NULL: the default stream
  const char *name;      // the public operation, "d2h_async": for messages
} atlas_copy_op;

// One fill of `bytes` > 0 at a non-NULL `dst` with `value`.
typedef struct atlas_fill_op {
  atlas_xfer_when when;  // never ASYNC_RETAINED
  void *dst;
  uint8_t value;
  size_t bytes;
  atlas_stream *stream;  // NULL: the default stream
  const char *name;      // "memset_async", for messages
} atlas_fill_op;

// What a device says of itself (see atlas_backend_total_memory and the rest).
typedef struct atlas_device_facts {
  size_t total_bytes;
  size_t free_bytes;  // what the device (or the host pool) has free now
  int sm_count;       // streaming multiprocessors; CPUs on the host
} atlas_device_facts;

typedef struct atlas_backend_vtable {
  // ---- lifetime, raw memory, copies and fills (required) ----
  // Releases the device state and calls atlas_backend_base_deinit.
  atlas_status (*destroy)(atlas_backend *b);
  // The primitives the shared ledger code is built on. Addresses are what the
  // backend hands out (device addresses as void*). `bytes` includes the red
  // zones; raw_free gets the address raw_alloc returned (not the one past the
  // leading band that callers hold) and the bytes it was asked for.
  atlas_status (*raw_alloc)(atlas_backend *b, size_t bytes, atlas_mem_kind kind,
                            void **out_ptr);
  atlas_status (*raw_free)(atlas_backend *b, void *ptr, size_t bytes,
                           atlas_mem_kind kind);
  // Every copy and fill, the public ones and the red zones' (HOST_NOW). A
  // form the backend does not offer answers atlas_backend_unimplemented(b,
  // op->name); HOST_NOW d2h copies and fills must work.
  atlas_status (*copy)(atlas_backend *b, const atlas_copy_op *op);
  atlas_status (*fill)(atlas_backend *b, const atlas_fill_op *op);

  // ---- optional ----
  // Before the host reads or frees backend memory behind the streams' backs
  // (red-zone scan and poisoning, the sweep): refuse while a capture is open
  // (naming `what`), then wait for queued work. NULL: nothing to wait for.
  atlas_status (*quiesce)(atlas_backend *b, const char *what);
  // `host_ptr` is pinned memory of this backend (checked by the front door).
  atlas_status (*host_ptr_to_device)(atlas_backend *b, void *host_ptr,
                                     void **out_device_ptr);

  // Streams, events, capture. A NULL stream means the default stream; events
  // and graphs are non-NULL; stream_destroy never gets the default stream.
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

  // Raw launch: the kernel came from this backend's registry, `config` is
  // non-NULL and args[i] points to argument i (typed arguments were checked
  // against the signature and packed by the front door).
  atlas_status (*launch)(atlas_backend *b, const atlas_kernel *kernel,
                         const atlas_launch_config *config, void **args);

  // out = x w^T (see atlas_backend_matmul): the type F16 or BF16, each
  // dimension below 2^31 (checked by the front door). m = n = k = 0 is the
  // question "do you multiply?": answer OK or UNIMPLEMENTED, touch nothing.
  // Otherwise m, n, k > 0, the pointers are non-NULL and `mode` is one of
  // the two (ACCUMULATE: out += the product).
  atlas_status (*matmul)(atlas_backend *b, atlas_stream *stream, float *out,
                         const void *w, const void *x, atlas_matmul_type type,
                         size_t m, size_t n, size_t k, atlas_matmul_out mode);
  // Frees the memory the backend keeps for itself between calls (cuBLASLt's
  // workspace), remade when next needed: the sweep calls it first, so that
  // what it then finds is what nobody released, not the backend's own.
  atlas_status (*release_caches)(atlas_backend *b);
  // Starts, on a thread of its own, start-up work the backend would
  // otherwise do at its first use (CUDA: loading cuBLASLt), so that it
  // overlaps what the caller does next; called by atlas_backend_modules_start.
  // The backend waits for it where it needs the result, and at destroy.
  void (*start_background)(atlas_backend *b);

  // Device facts: memory and compute units.
  atlas_status (*device_facts)(atlas_backend *b, atlas_device_facts *out);
  atlas_status (*bind_to_thread)(atlas_backend *b);
} atlas_backend_vtable;

// The layout is pinned. The front door and every backend must agree on it, and
// a backend written against an older header must break at compile time, not
// call the wrong slot: a removed entry fails its designated initializer, and
// any added, removed or reordered entry (or a member that is not a function
// pointer) fails these assertions until the count and the last entry are
// updated on purpose, together with every backend and the list above.
#define ATLAS_BACKEND_VTABLE_ENTRIES 29
#ifdef __cplusplus
#define ATLAS_BACKEND_STATIC_ASSERT_ static_assert
#else
#define ATLAS_BACKEND_STATIC_ASSERT_ _Static_assert
#endif
ATLAS_BACKEND_STATIC_ASSERT_(sizeof(atlas_backend_vtable) ==
                                 ATLAS_BACKEND_VTABLE_ENTRIES *
                                     sizeof(void (*)(void)),
                             "atlas_backend_vtable changed size: update "
                             "ATLAS_BACKEND_VTABLE_ENTRIES and every backend");
ATLAS_BACKEND_STATIC_ASSERT_(offsetof(atlas_backend_vtable, destroy) == 0,
                             "destroy must stay the first vtable entry");
ATLAS_BACKEND_STATIC_ASSERT_(offsetof(atlas_backend_vtable, bind_to_thread) ==
                                 (ATLAS_BACKEND_VTABLE_ENTRIES - 1) *
                                     sizeof(void (*)(void)),
                             "bind_to_thread must stay the last vtable entry");
#undef ATLAS_BACKEND_STATIC_ASSERT_

// Modules loading on a thread of their own (backend_modules.c).
typedef struct atlas_module_job atlas_module_job;

struct atlas_backend {
  const atlas_backend_vtable *vtable;
  char name[32];  // "host", "cuda:0"
  atlas_ledger *ledger;
  size_t redzone_bytes;           // ATLAS_REDZONE, read once at creation
  bool debug_sync;                // ATLAS_DEBUG_SYNC, read once at creation
  pthread_mutex_t state_mutex;    // guards poison
  atlas_fault_state faults;       // atomics (__atomic builtins)
  bool poison_active;             // poison_redzones was called:
  uint64_t poison_lo, poison_hi;  // zones in [lo, hi) hold 0xEE, others 0x00
  atlas_op_cache *op_cache;
  atlas_kernel_registry *registry;  // set once modules_job is joined
  atlas_module_job *modules_job;    // background_modules: loading now
  atlas_status modules_error;       // its failure, kept until deinit
  atlas_log_sink log;               // from the options; zeroed: stderr
};

// UNIMPLEMENTED naming the backend and the operation: what the front door
// answers for a NULL entry, and a copy or fill entry for a form it lacks.
static inline atlas_status atlas_backend_unimplemented(const atlas_backend *b,
                                                       const char *op) {
  return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                           "backend %s does not implement %s", b->name, op);
}

// Fills the shared fields: name, ledger, environment switches, op cache.
// Refuses a vtable without one of the required entries. On failure
// everything it made is released.
ATLAS_MUST_USE atlas_status atlas_backend_base_init(
    atlas_backend *b, const atlas_backend_vtable *vtable, const char *name);
// An on/off environment switch, read when a backend is made: unset or empty
// leaves *out_on as it is (the caller's default), "0" is off, "1" on;
// anything else is INVALID_ARGUMENT naming the variable.
ATLAS_MUST_USE atlas_status atlas_backend_read_switch_env(const char *name,
                                                          bool *out_on);
// Releases the op cache's scratch, sweeps the ledger (reporting what it had to
// free as a leak), drops the registry reference and frees the ledger.
// Both live in backend_lifecycle.c; the shared code they build on is in
// fault.h, redzone.h, backend_memory.h and backend_modules.h, one concept
// each, below it.
ATLAS_MUST_USE atlas_status atlas_backend_base_deinit(atlas_backend *b);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_BACKEND_IMPL_H_
