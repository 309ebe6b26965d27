// ForwardContext: everything derived from the loaded model, carried to every
// dispatch site.
//
// Nothing model-derived sits in a static: the backend, its kernel registry,
// the stream and the op cache travel here. An architecture embeds this core
// context in its own (an architecture adds its config and scratch),
// built by a make function that takes every field, so a new field breaks
// every construction site that forgot it at compile time.
#ifndef ATLAS_RUNTIME_FORWARD_H_
#define ATLAS_RUNTIME_FORWARD_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/op_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_forward_ctx {
  atlas_backend *backend;
  atlas_kernel_registry *registry;  // the model's kernels, and only them
  atlas_stream *stream;
  atlas_op_cache *op_cache;
  // Launches may overlap the one before (atlas_launch_config.overlap_prior):
  // set only around kernels that wait for their inputs (atlas_overlap_begin).
  bool overlap;
} atlas_forward_ctx;

// Fails when a piece is missing (NULL backend, no registry) rather than
// letting a dispatch site find out later.
ATLAS_MUST_USE atlas_status atlas_forward_ctx_make(atlas_backend *backend,
                                                   atlas_stream *stream,
                                                   atlas_forward_ctx *out_ctx);

// Resolves `module`.`kernel` in the context's registry, once (at load): the
// handle is what atlas_forward_launch takes on the hot path.
ATLAS_MUST_USE atlas_status
atlas_forward_kernel(const atlas_forward_ctx *ctx, const char *module,
                     const char *kernel, const atlas_kernel **out_kernel);

// Launches a kernel resolved by atlas_forward_kernel on the context's
// stream, with typed arguments checked against its signature.
ATLAS_MUST_USE atlas_status atlas_forward_launch(
    const atlas_forward_ctx *ctx, const atlas_kernel *kernel, atlas_dim3 grid,
    atlas_dim3 block, const atlas_arg *args, size_t arg_count);

// atlas_forward_launch with `shared_bytes` of dynamic shared memory per
// block (CUDA; at most 48 KiB without opting the kernel in; host kernels
// ignore it).
ATLAS_MUST_USE atlas_status atlas_forward_launch_shared(
    const atlas_forward_ctx *ctx, const atlas_kernel *kernel, atlas_dim3 grid,
    atlas_dim3 block, uint32_t shared_bytes, const atlas_arg *args,
    size_t arg_count);

// Resolves and launches in one call (a lookup per call: for tests and rare
// paths; dispatch sites resolve once).

ATLAS_MUST_USE atlas_status atlas_forward_dispatch(
    const atlas_forward_ctx *ctx, const char *module, const char *kernel,
    atlas_dim3 grid, atlas_dim3 block, const atlas_arg *args, size_t arg_count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORWARD_H_
