// The types of the backend interface: handles, options, typed kernel
// arguments, matmul operands, red-zone findings. Declarations only, so that
// the shared code under the front door (red zones, ledgered memory, module
// loading, the op cache) can name them without reaching up to backend.h,
// the front door itself.
#ifndef ATLAS_RUNTIME_DEVICE_BACKEND_TYPES_H_
#define ATLAS_RUNTIME_DEVICE_BACKEND_TYPES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/ledger.h"
#include "atlas/runtime/base/log_sink.h"
#include "atlas/runtime/base/site.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/kernel_module.h"
#include "atlas/runtime/device/kernel_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_backend atlas_backend;
typedef struct atlas_event atlas_event;
typedef struct atlas_graph atlas_graph;
typedef struct atlas_op_cache atlas_op_cache;

// Options read when a backend is built. Environment switches are read once at
// creation (ATLAS_REDZONE, ATLAS_DEBUG_SYNC) and stored in the backend.
typedef struct atlas_backend_options {
  // Kernels of the model this backend serves; NULL for none.
  const atlas_module_set *modules;
  // Share another backend's registry (same model) instead of loading `modules`.
  atlas_kernel_registry *share_registry;
  // Device ordinal (CUDA only).
  int device;
  // Host backend only: refuse allocations past this many live bytes
  // (0: unlimited). Lets CI exercise out-of-memory and budget paths.
  size_t capacity_bytes;
  // Host backend only: draw from a pool shared with other host backends
  // (one simulated device); overrides capacity_bytes.
  struct atlas_host_pool *host_pool;
  // > 0: the k-th module load while building the backend fails.
  size_t fail_module_load_at;
  // Load `modules` on a thread of their own, started by
  // atlas_backend_modules_start, so that what the caller does next (a
  // weight upload) overlaps them; the first kernel lookup (or
  // atlas_backend_modules_ready, or destroy) waits, and a load failure is
  // reported there instead of by create. CUDA only (the host's are tables).
  // On CUDA it also defers cuBLASLt's start (opening the library, its
  // handle, its first heuristic query: 0.1-0.3 s once a process) to a
  // thread of its own started at the same point; the first matmul (or
  // capture, or destroy) waits for it, and the lines that say cuBLASLt is
  // absent or unusable come there instead of at create.
  bool background_modules;
  // Where this backend's log lines go (zeroed: stderr).
  atlas_log_sink log;
} atlas_backend_options;

// One allocation with a violated red zone (either band, or both).
typedef struct atlas_redzone_violation {
  uint64_t index;  // creation index of the allocation
  uintptr_t addr;
  size_t bytes;         // allocation size
  size_t first_offset;  // offset of the first changed byte past `bytes`
                        // (SIZE_MAX: the band after is intact)
  atlas_site site;
  size_t underrun;  // how many bytes before `addr` the changed byte
                    // nearest to it lies (1: addr - 1; 0: the band
                    // before is intact)
} atlas_redzone_violation;

// The most arguments a kernel launch passes (typed or raw).
#define ATLAS_KERNEL_MAX_ARGS 64

// Typed arguments, checked against the kernel's signature before launch.
typedef struct atlas_arg {
  char type;  // 'p', 'i', 'u', 'l', 'f' (see atlas_kernel_def.signature)
  union {
    void *p;
    int32_t i;
    uint32_t u;
    int64_t l;
    float f;
  } v;
} atlas_arg;

#ifdef __cplusplus
#define ATLAS_ARG_INIT_(t, field, x) \
  ([&] {                             \
    atlas_arg a_{};                  \
    a_.type = (t);                   \
    a_.v.field = (x);                \
    return a_;                       \
  }())
#define ATLAS_ARG_PTR(x) ATLAS_ARG_INIT_('p', p, (void *)(x))
#define ATLAS_ARG_I32(x) ATLAS_ARG_INIT_('i', i, (int32_t)(x))
#define ATLAS_ARG_U32(x) ATLAS_ARG_INIT_('u', u, (uint32_t)(x))
#define ATLAS_ARG_I64(x) ATLAS_ARG_INIT_('l', l, (int64_t)(x))
#define ATLAS_ARG_F32(x) ATLAS_ARG_INIT_('f', f, (float)(x))
#else
#define ATLAS_ARG_PTR(x) ((atlas_arg){.type = 'p', .v.p = (void *)(x)})
#define ATLAS_ARG_I32(x) ((atlas_arg){.type = 'i', .v.i = (int32_t)(x)})
#define ATLAS_ARG_U32(x) ((atlas_arg){.type = 'u', .v.u = (uint32_t)(x)})
#define ATLAS_ARG_I64(x) ((atlas_arg){.type = 'l', .v.l = (int64_t)(x)})
#define ATLAS_ARG_F32(x) ((atlas_arg){.type = 'f', .v.f = (float)(x)})
#endif

// The 16-bit types a matmul multiplies.
typedef enum atlas_matmul_type {
  ATLAS_MATMUL_F16 = 1,
  ATLAS_MATMUL_BF16 = 2,
} atlas_matmul_type;

// What a matmul does with `out`: overwrite it with the product, or add the
// product to what it holds (a residual connection, x += W h, without a
// separate pass over x).
typedef enum atlas_matmul_out {
  ATLAS_MATMUL_WRITE = 0,       // out = x w^T
  ATLAS_MATMUL_ACCUMULATE = 1,  // out += x w^T
} atlas_matmul_out;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_BACKEND_TYPES_H_
