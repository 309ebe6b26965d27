// The minimal backend: the required entries and a few counted optional ones.
#include "tests/runtime/minimal_backend.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/device/backend_impl.h"

typedef struct minimal_backend {
  atlas_backend base;  // first member: the backend contract
  atlas_minimal_calls calls;
  int refuse_frees;                             // raw_frees still to refuse
  char stream_token, graph_token, event_token;  // addresses as handles
} minimal_backend;

static minimal_backend *as_min(atlas_backend *b) {
  return (minimal_backend *)b;
}

// ---- required -------------------------------------------------------------------

static atlas_status min_destroy(atlas_backend *b) {
  atlas_status status = atlas_backend_base_deinit(b);
  free(b);
  return status;
}

static atlas_status min_raw_alloc(atlas_backend *b, size_t bytes,
                                  atlas_mem_kind kind, void **out_ptr) {
  (void)b;
  (void)kind;
  *out_ptr = malloc(bytes);
  if (*out_ptr != NULL) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "minimal: malloc(%zu)",
                           bytes);
}

static atlas_status min_raw_free(atlas_backend *b, void *ptr, size_t bytes,
                                 atlas_mem_kind kind) {
  (void)kind;
  if (as_min(b)->refuse_frees > 0) {
    as_min(b)->refuse_frees--;
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "minimal: raw_free of %zu bytes refused", bytes);
  }
  free(ptr);
  return ATLAS_OK;
}

// Copies: the red zones' reads (required), and two counted public forms,
// h2d and the 2D d2d; every other form is UNIMPLEMENTED.
static atlas_status min_copy(atlas_backend *b, const atlas_copy_op *op) {
  bool read = op->when == ATLAS_XFER_HOST_NOW;
  bool h2d = op->kind == ATLAS_COPY_H2D && op->when == ATLAS_XFER_SYNC;
  bool d2d_2d = op->kind == ATLAS_COPY_D2D && op->when == ATLAS_XFER_ASYNC &&
                strcmp(op->name, "d2d_2d_async") == 0;
  if (!read && !h2d && !d2d_2d) return atlas_backend_unimplemented(b, op->name);
  if (h2d) as_min(b)->calls.h2d++;
  if (d2d_2d) as_min(b)->calls.d2d_2d++;
  for (size_t r = 0; r < op->height; ++r) {
    memcpy((char *)op->dst + r * op->dst_pitch,
           (const char *)op->src + r * op->src_pitch, op->width_bytes);
  }
  return ATLAS_OK;
}

// Fills: the red zones' (required) and the synchronous memset, counted.
static atlas_status min_fill(atlas_backend *b, const atlas_fill_op *op) {
  if (op->when == ATLAS_XFER_ASYNC)
    return atlas_backend_unimplemented(b, op->name);
  if (op->when == ATLAS_XFER_SYNC) as_min(b)->calls.memset++;
  memset(op->dst, op->value, op->bytes);
  return ATLAS_OK;
}

static atlas_stream *min_default_stream(atlas_backend *b) {
  return (atlas_stream *)&as_min(b)->stream_token;
}

static atlas_status min_stream_destroy(atlas_backend *b, atlas_stream *s) {
  (void)s;
  as_min(b)->calls.stream_destroy++;
  return ATLAS_OK;
}

static atlas_status min_event_record(atlas_backend *b, atlas_event *e,
                                     atlas_stream *s) {
  (void)e;
  (void)s;
  as_min(b)->calls.event_record++;
  return ATLAS_OK;
}

static atlas_status min_launch_graph(atlas_backend *b, atlas_graph *g,
                                     atlas_stream *s) {
  (void)g;
  (void)s;
  as_min(b)->calls.launch_graph++;
  return ATLAS_OK;
}

static atlas_status min_destroy_graph(atlas_backend *b, atlas_graph *g) {
  (void)g;
  as_min(b)->calls.destroy_graph++;
  return ATLAS_OK;
}

static atlas_status min_launch(atlas_backend *b, const atlas_kernel *kernel,
                               const atlas_launch_config *config, void **args) {
  (void)config;
  minimal_backend *m = as_min(b);
  m->calls.launch++;
  size_t n = strlen(kernel->def->signature);
  for (size_t i = 0; i < n && i < 4; ++i) m->calls.last_args[i] = args[i];
  return ATLAS_OK;
}

static const atlas_backend_vtable kMinimalVtable = {
    .destroy = min_destroy,
    .raw_alloc = min_raw_alloc,
    .raw_free = min_raw_free,
    .copy = min_copy,
    .fill = min_fill,
    .default_stream = min_default_stream,
    .stream_destroy = min_stream_destroy,
    .event_record = min_event_record,
    .launch_graph = min_launch_graph,
    .destroy_graph = min_destroy_graph,
    .launch = min_launch,
};

// ---- kernels: resolved, never run ---------------------------------------------------

static atlas_status min_module_load(void *ctx, const atlas_module_def *def,
                                    void **out_handle) {
  (void)ctx;
  *out_handle = (void *)def;
  return ATLAS_OK;
}

static atlas_status min_get_function(void *ctx, void *module,
                                     const atlas_module_def *def,
                                     const atlas_kernel_def *kernel,
                                     void **out_fn) {
  (void)ctx;
  (void)module;
  (void)def;
  *out_fn = (void *)kernel;
  return ATLAS_OK;
}

static atlas_status min_module_unload(void *ctx, void *module) {
  (void)ctx;
  (void)module;
  return ATLAS_OK;
}

atlas_status atlas_minimal_backend_create(const atlas_backend_options *options,
                                          atlas_backend **out_backend) {
  *out_backend = NULL;
  minimal_backend *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "minimal backend");
  }
  atlas_status status =
      atlas_backend_base_init(&m->base, &kMinimalVtable, "minimal");
  if (status != ATLAS_OK) {
    free(m);
    return status;
  }
  if (options != NULL && options->modules != NULL) {
    atlas_module_loader loader = {NULL, min_module_load, min_get_function,
                                  min_module_unload, NULL};
    status = atlas_kernel_registry_create(options->modules, loader, 0,
                                          &m->base.registry);
    if (status != ATLAS_OK) {
      return atlas_status_join(status, min_destroy(&m->base));
    }
  }
  *out_backend = &m->base;
  return ATLAS_OK;
}

const atlas_minimal_calls *atlas_minimal_backend_calls(atlas_backend *b) {
  return &as_min(b)->calls;
}

atlas_graph *atlas_minimal_backend_graph(atlas_backend *b) {
  return (atlas_graph *)&as_min(b)->graph_token;
}

atlas_event *atlas_minimal_backend_event(atlas_backend *b) {
  return (atlas_event *)&as_min(b)->event_token;
}

void atlas_minimal_backend_refuse_frees(atlas_backend *b, int n) {
  as_min(b)->refuse_frees = n;
}
