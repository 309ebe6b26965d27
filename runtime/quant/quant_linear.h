// A quantized linear layer on a backend: its stored tensors in one device
// allocation, ledgered under the format's name (the ledger and `atlas
// report` show quantized weights by format, at their real size), and its
// products through module "quant", whose kernels are looked up once.
//
// This is the seam a decoder uses: a weight matrix either is plain (F32,
// F16, BF16, the architecture's own kernels) or carries an
// atlas_quant_linear, and the product is chosen once, when the model opens.
#ifndef ATLAS_RUNTIME_QUANT_QUANT_LINEAR_H_
#define ATLAS_RUNTIME_QUANT_QUANT_LINEAR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/quant/quant_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// Module "quant"'s kernels on one backend (the backend's module set must
// hold atlas_quant_module).
typedef struct atlas_quant_kernels {
  const atlas_kernel *matvec, *matmul;
} atlas_quant_kernels;

ATLAS_MUST_USE atlas_status
atlas_quant_kernels_resolve(atlas_backend *b, atlas_quant_kernels *out);

typedef struct atlas_quant_linear {
  atlas_quant_matrix m;
  void *block;  // the one allocation: w, scales, zeros, g_idx (256-aligned)
  void *w, *scales, *zeros, *g_idx;  // into block; NULL where absent
  uint64_t bytes;                    // the allocation's size
} atlas_quant_linear;

// The ledger's label for `layout`'s weights: "quantized weights (gptq)".
const char *atlas_quant_ledger_label(uint32_t layout);

// Allocates the layer's block and fills `jobs` (up to 4; *out_count set)
// with the uploads that fill it from the checkpoint; the caller runs them
// (with the rest of the model's) through weight_upload.
ATLAS_MUST_USE atlas_status atlas_quant_linear_alloc(
    atlas_backend *b, const atlas_quant_matrix *m, atlas_quant_linear *out,
    atlas_upload_job jobs[4], size_t *out_count);
ATLAS_MUST_USE atlas_status atlas_quant_linear_free(atlas_backend *b,
                                                    atlas_quant_linear *l);

// out (+)= W x (x: cols f32, out: rows f32), queued on `stream`.
ATLAS_MUST_USE atlas_status atlas_quant_linear_matvec(
    atlas_backend *b, const atlas_quant_kernels *k, atlas_stream *stream,
    const atlas_quant_linear *l, const float *x, float *out, bool accumulate);
// out (+)= x W^T for `count` rows of x (count x cols; out count x rows).
ATLAS_MUST_USE atlas_status atlas_quant_linear_matmul(
    atlas_backend *b, const atlas_quant_kernels *k, atlas_stream *stream,
    const atlas_quant_linear *l, const float *x, uint32_t count, float *out,
    bool accumulate);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_QUANT_QUANT_LINEAR_H_
