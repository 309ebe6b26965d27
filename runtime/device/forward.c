#include "atlas/runtime/device/forward.h"

#include <string.h>

atlas_status atlas_forward_ctx_make(atlas_backend *backend,
                                    atlas_stream *stream,
                                    atlas_forward_ctx *out_ctx) {
  memset(out_ctx, 0, sizeof(*out_ctx));
  if (backend == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "forward context: no backend");
  }
  atlas_kernel_registry *registry = atlas_backend_kernel_registry(backend);
  if (registry == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "forward context: backend %s has no kernel "
                             "registry (create it with the model's module set)",
                             atlas_backend_name(backend));
  }
  out_ctx->backend = backend;
  out_ctx->registry = registry;
  out_ctx->stream =
      stream != NULL ? stream : atlas_backend_default_stream(backend);
  out_ctx->op_cache = atlas_backend_op_cache(backend);
  return ATLAS_OK;
}

atlas_status atlas_forward_kernel(const atlas_forward_ctx *ctx,
                                  const char *module, const char *kernel,
                                  const atlas_kernel **out_kernel) {
  *out_kernel = NULL;
  const atlas_kernel *k = NULL;
  ATLAS_RETURN_IF_ERROR(
      atlas_op_cache_kernel(ctx->op_cache, module, kernel, &k));
  if (k->registry != ctx->registry) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "forward: %s.%s resolved outside this model's "
                             "registry",
                             module, kernel);
  }
  *out_kernel = k;
  return ATLAS_OK;
}

atlas_status atlas_forward_launch_shared(const atlas_forward_ctx *ctx,
                                         const atlas_kernel *kernel,
                                         atlas_dim3 grid, atlas_dim3 block,
                                         uint32_t shared_bytes,
                                         const atlas_arg *args,
                                         size_t arg_count) {
  if (kernel == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "forward: launch of a kernel that was never "
                             "resolved");
  }
  atlas_launch_config config = {grid, block, shared_bytes, ctx->stream,
                                ctx->overlap};
  return atlas_backend_launch_typed(ctx->backend, kernel, &config, args,
                                    arg_count);
}

atlas_status atlas_forward_launch(const atlas_forward_ctx *ctx,
                                  const atlas_kernel *kernel, atlas_dim3 grid,
                                  atlas_dim3 block, const atlas_arg *args,
                                  size_t arg_count) {
  return atlas_forward_launch_shared(ctx, kernel, grid, block, 0, args,
                                     arg_count);
}

atlas_status atlas_forward_dispatch(const atlas_forward_ctx *ctx,
                                    const char *module, const char *kernel,
                                    atlas_dim3 grid, atlas_dim3 block,
                                    const atlas_arg *args, size_t arg_count) {
  const atlas_kernel *k = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_forward_kernel(ctx, module, kernel, &k));
  return atlas_forward_launch(ctx, k, grid, block, args, arg_count);
}
