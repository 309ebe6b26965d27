// Host backend: CPU memory, in-order streams, recorded graphs, C kernels.
#include "atlas/runtime/device/host_backend.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atlas/runtime/base/half.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/host_pool.h"

typedef enum node_kind { NODE_LAUNCH, NODE_MEMSET, NODE_COPY } node_kind;

// Arguments a captured launch keeps (qkv_rope has 20).
#define HOST_CAPTURE_MAX_ARGS 24

// One recorded operation. Launch arguments are copied by value (sizes come
// from the kernel's signature), so a graph replays without its caller.
typedef struct graph_node {
  node_kind kind;
  const atlas_kernel *kernel;
  atlas_launch_config config;
  uint64_t arg_values[HOST_CAPTURE_MAX_ARGS];
  size_t arg_count;
  void *dst;
  const void *src;
  void *staged;  // owned copy of an h2d_async source
  size_t bytes;
  uint8_t value;
} graph_node;

struct atlas_graph {
  graph_node *nodes;
  size_t count, cap;
};

struct atlas_stream {
  bool capturing;
  atlas_graph *capture;        // while capturing
  atlas_status capture_error;  // first failure while recording
};

struct atlas_event {
  bool recorded;
};

typedef struct host_backend {
  atlas_backend base;  // first member: the backend contract
  atlas_stream default_stream;
  atlas_host_pool *pool;  // NULL: unlimited
  bool owns_pool;         // made from options.capacity_bytes
} host_backend;

static host_backend *as_host(atlas_backend *b) { return (host_backend *)b; }

// ---- raw memory ------------------------------------------------------------

static atlas_status host_raw_alloc(atlas_backend *b, size_t bytes,
                                   atlas_mem_kind kind, void **out_ptr) {
  host_backend *h = as_host(b);
  // Pinned memory is host memory on a real device too: it does not count
  // against the (simulated) device's pool.
  atlas_host_pool *pool = kind == ATLAS_MEM_PINNED_HOST ? NULL : h->pool;
  if (pool != NULL) ATLAS_RETURN_IF_ERROR(atlas_host_pool_reserve(pool, bytes));
  // malloc's 16-byte alignment serves every kernel here (weights are read
  // with memcpy-safe loads); posix_memalign would cost ~2x per call.
  void *p = malloc(bytes);
  if (p == NULL) {
    if (pool != NULL) atlas_host_pool_release(pool, bytes);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory: malloc of %zu bytes failed",
                             bytes);
  }
  *out_ptr = p;
  return ATLAS_OK;
}

static atlas_status host_raw_free(atlas_backend *b, void *ptr, size_t bytes,
                                  atlas_mem_kind kind) {
  free(ptr);
  host_backend *h = as_host(b);
  if (h->pool != NULL && kind != ATLAS_MEM_PINNED_HOST) {
    atlas_host_pool_release(h->pool, bytes);
  }
  return ATLAS_OK;
}

// ---- streams and capture ---------------------------------------------------

static atlas_stream *resolve(atlas_backend *b, atlas_stream *stream) {
  return stream != NULL ? stream : &as_host(b)->default_stream;
}

static atlas_status graph_append(atlas_graph *g, const graph_node *node) {
  if (g->count == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    graph_node *nodes = realloc(g->nodes, cap * sizeof(*nodes));
    if (nodes == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "host graph: cannot record node %zu", g->count);
    }
    g->nodes = nodes;
    g->cap = cap;
  }
  g->nodes[g->count++] = *node;
  return ATLAS_OK;
}

static void graph_free(atlas_graph *g) {
  if (g == NULL) return;
  for (size_t i = 0; i < g->count; ++i) free(g->nodes[i].staged);
  free(g->nodes);
  free(g);
}

// Records `node` if the stream is capturing. Returns true when recorded (or
// when recording failed: the failure sticks to the capture, as on CUDA).
static bool record_if_capturing(atlas_stream *s, const graph_node *node) {
  if (!s->capturing) return false;
  if (s->capture_error == ATLAS_OK) {
    s->capture_error = graph_append(s->capture, node);
  }
  if (s->capture_error != ATLAS_OK) free(node->staged);
  return true;
}

static atlas_stream *host_default_stream(atlas_backend *b) {
  return &as_host(b)->default_stream;
}

static atlas_status host_stream_create(atlas_backend *b,
                                       atlas_stream **out_stream) {
  (void)b;
  *out_stream = calloc(1, sizeof(atlas_stream));
  if (*out_stream == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host backend: cannot create a stream");
  }
  return ATLAS_OK;
}

static atlas_status host_stream_destroy(atlas_backend *b, atlas_stream *s) {
  (void)b;
  if (s->capturing) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "host backend: stream is capturing; end or abort "
                             "the capture first");
  }
  free(s);
  return ATLAS_OK;
}

static atlas_status host_stream_synchronize(atlas_backend *b, atlas_stream *s) {
  s = resolve(b, s);
  if (s->capturing) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "host backend: cannot synchronise a stream that "
                             "is capturing");
  }
  return ATLAS_OK;  // work runs in order as it is queued
}

static atlas_status host_synchronize(atlas_backend *b) {
  return host_stream_synchronize(b, NULL);
}

static atlas_status host_event_create(atlas_backend *b, atlas_event **out) {
  (void)b;
  *out = calloc(1, sizeof(atlas_event));
  if (*out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host backend: cannot create an event");
  }
  return ATLAS_OK;
}

static atlas_status host_event_record(atlas_backend *b, atlas_event *e,
                                      atlas_stream *s) {
  (void)resolve(b, s);
  e->recorded = true;  // everything before it has already run
  return ATLAS_OK;
}

static atlas_status host_event_wait(atlas_backend *b, atlas_stream *s,
                                    atlas_event *e) {
  (void)resolve(b, s);
  (void)e;  // everything before it has already run
  return ATLAS_OK;
}

static atlas_status host_event_synchronize(atlas_backend *b, atlas_event *e) {
  (void)b;
  if (!e->recorded) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "host backend: synchronising an event that was "
                             "never recorded");
  }
  return ATLAS_OK;
}

static atlas_status host_event_destroy(atlas_backend *b, atlas_event *e) {
  (void)b;
  free(e);
  return ATLAS_OK;
}

static atlas_status host_stream_is_capturing(atlas_backend *b, atlas_stream *s,
                                             bool *out_capturing) {
  *out_capturing = resolve(b, s)->capturing;
  return ATLAS_OK;
}

static atlas_status host_begin_capture(atlas_backend *b, atlas_stream *s) {
  s = resolve(b, s);
  if (s->capturing) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "host backend: stream is already capturing");
  }
  s->capture = calloc(1, sizeof(atlas_graph));
  if (s->capture == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host backend: cannot start a capture");
  }
  s->capturing = true;
  s->capture_error = ATLAS_OK;
  return ATLAS_OK;
}

static atlas_status host_end_capture(atlas_backend *b, atlas_stream *s,
                                     atlas_graph **out_graph) {
  s = resolve(b, s);
  if (!s->capturing) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "host backend: end_capture on a stream that is "
                             "not capturing");
  }
  atlas_graph *g = s->capture;
  atlas_status error = s->capture_error;
  s->capturing = false;
  s->capture = NULL;
  s->capture_error = ATLAS_OK;
  if (error != ATLAS_OK) {
    graph_free(g);
    return atlas_status_annotate(error, "host backend: capture invalidated");
  }
  *out_graph = g;
  return ATLAS_OK;
}

static atlas_status host_abort_capture(atlas_backend *b, atlas_stream *s,
                                       bool *out_aborted) {
  s = resolve(b, s);
  if (!s->capturing) return ATLAS_OK;
  graph_free(s->capture);
  atlas_status_free(s->capture_error);
  s->capture = NULL;
  s->capture_error = ATLAS_OK;
  s->capturing = false;
  *out_aborted = true;
  return ATLAS_OK;
}

static atlas_status host_destroy_graph(atlas_backend *b, atlas_graph *g) {
  (void)b;
  graph_free(g);
  return ATLAS_OK;
}

// ---- copies and memsets ----------------------------------------------------

static atlas_status copy_now_or_record(atlas_backend *b, void *dst,
                                       const void *src, size_t bytes,
                                       atlas_stream *s, bool stage,
                                       const char *what) {
  s = resolve(b, s);
  if (s->capturing) {
    graph_node node = {
        .kind = NODE_COPY, .dst = dst, .src = src, .bytes = bytes};
    if (stage) {
      node.staged = malloc(bytes ? bytes : 1);
      if (node.staged == NULL) {
        return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                 "%s: cannot stage %zu bytes", what, bytes);
      }
      memcpy(node.staged, src, bytes);
      node.src = node.staged;
    }
    record_if_capturing(s, &node);
    return ATLAS_OK;
  }
  memmove(dst, src, bytes);
  return ATLAS_OK;
}

// One row at a time; a plain copy is one row. A synchronous d2h on a stream
// that is capturing cannot wait for what the graph will do; a synchronous
// d2h on the default stream, and the red zones' reads, copy at once.
static atlas_status host_copy(atlas_backend *b, const atlas_copy_op *op) {
  bool now = op->when == ATLAS_XFER_HOST_NOW ||
             (op->kind == ATLAS_COPY_D2H && op->when == ATLAS_XFER_SYNC);
  if (op->kind == ATLAS_COPY_D2H && op->when == ATLAS_XFER_SYNC &&
      op->stream != NULL && resolve(b, op->stream)->capturing) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "%s: a synchronous d2h cannot run on a stream "
                             "that is capturing",
                             b->name);
  }
  // An h2d whose source may go at return is staged when recorded.
  bool stage = op->kind == ATLAS_COPY_H2D &&
               (op->when == ATLAS_XFER_SYNC || op->when == ATLAS_XFER_ASYNC);
  for (size_t row = 0; row < op->height; ++row) {
    char *dst = (char *)op->dst + row * op->dst_pitch;
    const char *src = (const char *)op->src + row * op->src_pitch;
    if (now) {
      memmove(dst, src, op->width_bytes);
      continue;
    }
    ATLAS_RETURN_IF_ERROR(copy_now_or_record(b, dst, src, op->width_bytes,
                                             op->stream, stage, op->name));
  }
  return ATLAS_OK;
}

static atlas_status host_fill(atlas_backend *b, const atlas_fill_op *op) {
  if (op->when == ATLAS_XFER_HOST_NOW) {
    memset(op->dst, op->value, op->bytes);
    return ATLAS_OK;
  }
  atlas_stream *s = resolve(b, op->stream);
  graph_node node = {.kind = NODE_MEMSET,
                     .dst = op->dst,
                     .bytes = op->bytes,
                     .value = op->value};
  if (!record_if_capturing(s, &node)) memset(op->dst, op->value, op->bytes);
  return ATLAS_OK;
}

// ---- kernels ---------------------------------------------------------------

static size_t arg_size(char type) {
  return (type == 'p' || type == 'l') ? 8 : 4;
}

static atlas_status run_kernel(atlas_backend *b, const atlas_kernel *kernel,
                               const atlas_launch_config *config, void **args) {
  if (kernel->fn == NULL) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: kernel %s.%s has no host implementation",
                             b->name, kernel->module->name, kernel->def->name);
  }
  // ISO C has no cast between object and function pointers (-Wpedantic);
  // the bytes are the function's address (host_module_get_function).
  atlas_host_kernel_fn fn;
  memcpy(&fn, &kernel->fn, sizeof fn);
  fn(config, args);
  return ATLAS_OK;
}

static atlas_status host_launch(atlas_backend *b, const atlas_kernel *kernel,
                                const atlas_launch_config *config,
                                void **args) {
  atlas_stream *s = resolve(b, config->stream);
  if (!s->capturing) return run_kernel(b, kernel, config, args);
  const char *sig = kernel->def->signature ? kernel->def->signature : "";
  size_t n = strlen(sig);
  if (n > HOST_CAPTURE_MAX_ARGS) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: kernel %s.%s has %zu arguments; capture "
                             "supports %d",
                             b->name, kernel->module->name, kernel->def->name,
                             n, HOST_CAPTURE_MAX_ARGS);
  }
  graph_node node = {
      .kind = NODE_LAUNCH, .kernel = kernel, .config = *config, .arg_count = n};
  for (size_t i = 0; i < n; ++i) {
    memcpy(&node.arg_values[i], args[i], arg_size(sig[i]));
  }
  record_if_capturing(s, &node);
  return ATLAS_OK;
}

static atlas_status host_launch_graph(atlas_backend *b, atlas_graph *g,
                                      atlas_stream *s) {
  if (resolve(b, s)->capturing) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: launching a graph into a capture", b->name);
  }
  for (size_t i = 0; i < g->count; ++i) {
    graph_node *n = &g->nodes[i];
    switch (n->kind) {
      case NODE_LAUNCH: {
        void *ptrs[HOST_CAPTURE_MAX_ARGS];
        for (size_t k = 0; k < n->arg_count; ++k) ptrs[k] = &n->arg_values[k];
        atlas_launch_config config = n->config;
        config.stream = s;
        ATLAS_RETURN_IF_ERROR(run_kernel(b, n->kernel, &config, ptrs));
        break;
      }
      case NODE_MEMSET:
        memset(n->dst, n->value, n->bytes);
        break;
      case NODE_COPY:
        memmove(n->dst, n->src, n->bytes);
        break;
    }
  }
  return ATLAS_OK;
}

// ---- matrix products -------------------------------------------------------

static float load16(const void *p, size_t i, atlas_matmul_type type) {
  uint16_t h;
  memcpy(&h, (const char *)p + i * 2, 2);
  return type == ATLAS_MATMUL_BF16 ? atlas_bf16_to_f32(h) : atlas_f16_to_f32(h);
}

// The reference: every element widened to f32 (exact), products and sums in
// f32, k in order; accumulating, the sum is then added to out (one f32
// addition: what a separate add pass over out would compute).
static atlas_status host_matmul(atlas_backend *b, atlas_stream *stream,
                                float *out, const void *w, const void *x,
                                atlas_matmul_type type, size_t m, size_t n,
                                size_t k, atlas_matmul_out mode) {
  if (m == 0) return ATLAS_OK;  // the question: yes
  if (resolve(b, stream)->capturing) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: a matmul cannot be recorded into a capture",
                             b->name);
  }
  float *row = malloc(k * sizeof(float));
  if (row == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: matmul: no memory for a row of %zu values",
                             b->name, k);
  }
  for (size_t j = 0; j < n; ++j) {
    for (size_t c = 0; c < k; ++c) row[c] = load16(w, j * k + c, type);
    for (size_t i = 0; i < m; ++i) {
      float acc = 0.0f;
      for (size_t c = 0; c < k; ++c) acc += load16(x, i * k + c, type) * row[c];
      out[i * n + j] =
          mode == ATLAS_MATMUL_ACCUMULATE ? out[i * n + j] + acc : acc;
    }
  }
  free(row);
  return ATLAS_OK;
}

// ---- memory facts ----------------------------------------------------------

static size_t physical_bytes(int name) {
  long pages = sysconf(name);
  long page = sysconf(_SC_PAGESIZE);
  return (pages > 0 && page > 0) ? (size_t)pages * (size_t)page : 0;
}

// With a pool, the pool is the device: its capacity, less what its backends
// hold; without one, the machine's memory. CPUs stand in for SMs.
static atlas_status host_device_facts(atlas_backend *b,
                                      atlas_device_facts *out) {
  host_backend *h = as_host(b);
  if (h->pool != NULL) {
    out->total_bytes = atlas_host_pool_capacity(h->pool);
    out->free_bytes = out->total_bytes - atlas_host_pool_used(h->pool);
  } else {
    out->total_bytes = physical_bytes(_SC_PHYS_PAGES);
    out->free_bytes = physical_bytes(_SC_AVPHYS_PAGES);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  out->sm_count = n > 0 ? (int)n : 1;
  return ATLAS_OK;
}

static atlas_status host_bind_to_thread(atlas_backend *b) {
  (void)b;
  return ATLAS_OK;  // host memory is reachable from every thread
}

static atlas_status host_ptr_to_device(atlas_backend *b, void *host_ptr,
                                       void **out_device_ptr) {
  (void)b;
  *out_device_ptr = host_ptr;  // the CPU sees its own memory
  return ATLAS_OK;
}

// ---- lifetime --------------------------------------------------------------

static atlas_status host_destroy(atlas_backend *b) {
  host_backend *h = as_host(b);
  bool aborted = false;
  atlas_status status = host_abort_capture(b, &h->default_stream, &aborted);
  status = atlas_status_join(status, atlas_backend_base_deinit(b));
  if (h->owns_pool) atlas_host_pool_destroy(h->pool);
  free(h);
  return status;
}

static atlas_status host_module_load(void *ctx, const atlas_module_def *def,
                                     void **out_handle) {
  (void)ctx;
  *out_handle = (void *)def;
  return ATLAS_OK;
}

static atlas_status host_module_get_function(void *ctx, void *module_handle,
                                             const atlas_module_def *def,
                                             const atlas_kernel_def *kernel,
                                             void **out_fn) {
  (void)ctx;
  (void)module_handle;
  (void)def;
  // Function pointers and data pointers share a representation on every
  // platform POSIX supports (dlsym relies on it); ISO C has no cast between
  // them (-Wpedantic), so the address is copied as bytes.
  memcpy(out_fn, &kernel->host_fn, sizeof(*out_fn));
  return ATLAS_OK;
}

// Host kernels need function and data pointers of one size (above).
_Static_assert(sizeof(atlas_host_kernel_fn) <= sizeof(void *) &&
                   sizeof(void *) <= sizeof(atlas_host_kernel_fn),
               "function and data pointers differ in size");

static atlas_status host_module_unload(void *ctx, void *module_handle) {
  (void)ctx;
  (void)module_handle;
  return ATLAS_OK;
}

static const atlas_backend_vtable kHostVtable = {
    .destroy = host_destroy,
    .raw_alloc = host_raw_alloc,
    .raw_free = host_raw_free,
    .copy = host_copy,
    .fill = host_fill,
    .host_ptr_to_device = host_ptr_to_device,
    .default_stream = host_default_stream,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_synchronize = host_stream_synchronize,
    .synchronize = host_synchronize,
    .event_create = host_event_create,
    .event_record = host_event_record,
    .event_wait = host_event_wait,
    .event_synchronize = host_event_synchronize,
    .event_destroy = host_event_destroy,
    .stream_is_capturing = host_stream_is_capturing,
    .begin_capture = host_begin_capture,
    .end_capture = host_end_capture,
    .abort_capture_if_active = host_abort_capture,
    .launch_graph = host_launch_graph,
    .destroy_graph = host_destroy_graph,
    .launch = host_launch,
    .matmul = host_matmul,
    .device_facts = host_device_facts,
    .bind_to_thread = host_bind_to_thread,
};

atlas_status atlas_host_backend_create(const atlas_backend_options *options,
                                       atlas_backend **out_backend) {
  *out_backend = NULL;
  atlas_backend_options defaults = {0};
  if (options == NULL) options = &defaults;
  host_backend *h = calloc(1, sizeof(*h));
  if (h == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "host backend: cannot allocate");
  }
  atlas_status status = ATLAS_OK;
  if (options->host_pool != NULL) {
    h->pool = options->host_pool;
  } else if (options->capacity_bytes != 0) {
    status = atlas_host_pool_create(options->capacity_bytes, &h->pool);
    h->owns_pool = status == ATLAS_OK;
  }
  if (status != ATLAS_OK) {
    free(h);
    return status;
  }
  status = atlas_backend_base_init(&h->base, &kHostVtable, "host");
  if (status != ATLAS_OK) {
    if (h->owns_pool) atlas_host_pool_destroy(h->pool);
    free(h);
    return atlas_status_annotate(status, "creating the host backend");
  }
  h->base.log = options->log;
  if (options->share_registry != NULL) {
    atlas_kernel_registry_retain(options->share_registry);
    h->base.registry = options->share_registry;
  } else if (options->modules != NULL) {
    atlas_module_loader loader = {NULL, host_module_load,
                                  host_module_get_function, host_module_unload,
                                  NULL};
    status = atlas_kernel_registry_create(options->modules, loader,
                                          options->fail_module_load_at,
                                          &h->base.registry);
  }
  if (status != ATLAS_OK) {
    status = atlas_status_join(status, host_destroy(&h->base));
    return atlas_status_annotate(status, "creating the host backend");
  }
  *out_backend = &h->base;
  return ATLAS_OK;
}
