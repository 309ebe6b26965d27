// A quantized linear layer on a backend (quant_linear.h).
#include "atlas/runtime/quant/quant_linear.h"

#include <string.h>

#include "atlas/kernels/quant_kernels.h"

#define ALIGN 256u

const char *atlas_quant_ledger_label(uint32_t layout) {
  switch (layout) {
    case ATLAS_QUANT_LAYOUT_FP8:
      return "quantized weights (fp8)";
    case ATLAS_QUANT_LAYOUT_INT_ROWS:
      return "quantized weights (compressed-tensors int)";
    case ATLAS_QUANT_LAYOUT_GPTQ:
      return "quantized weights (gptq)";
    case ATLAS_QUANT_LAYOUT_AWQ:
      return "quantized weights (awq)";
    case ATLAS_QUANT_LAYOUT_GGUF_Q8_0:
      return "quantized weights (gguf Q8_0)";
    case ATLAS_QUANT_LAYOUT_GGUF_Q4_0:
      return "quantized weights (gguf Q4_0)";
    case ATLAS_QUANT_LAYOUT_GGUF_Q4_K:
      return "quantized weights (gguf Q4_K)";
    case ATLAS_QUANT_LAYOUT_GGUF_Q5_K:
      return "quantized weights (gguf Q5_K)";
    case ATLAS_QUANT_LAYOUT_GGUF_Q6_K:
      return "quantized weights (gguf Q6_K)";
    default:
      return "quantized weights";
  }
}

atlas_status atlas_quant_kernels_resolve(atlas_backend *b,
                                         atlas_quant_kernels *out) {
  memset(out, 0, sizeof(*out));
  ATLAS_RETURN_IF_ERROR(atlas_backend_kernel_lookup(
      b, ATLAS_QUANT_MODULE, ATLAS_QUANT_MATVEC_KERNEL, &out->matvec));
  return atlas_backend_kernel_lookup(b, ATLAS_QUANT_MODULE,
                                     ATLAS_QUANT_MATMUL_KERNEL, &out->matmul);
}

static uint64_t round_up(uint64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

atlas_status atlas_quant_linear_alloc(atlas_backend *b,
                                      const atlas_quant_matrix *m,
                                      atlas_quant_linear *out,
                                      atlas_upload_job jobs[4],
                                      size_t *out_count) {
  memset(out, 0, sizeof(*out));
  *out_count = 0;
  out->m = *m;
  const atlas_checkpoint_tensor *parts[4] = {&m->w, &m->scales, &m->zeros,
                                             &m->g_idx};
  uint64_t at[4] = {0, 0, 0, 0}, total = 0;
  for (int i = 0; i < 4; ++i) {
    if (parts[i]->tensor == NULL) continue;
    at[i] = total;
    total += round_up(parts[i]->tensor->bytes);
  }
  if (total > (uint64_t)SIZE_MAX) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "a quantized layer of %llu bytes",
                             (unsigned long long)total);
  }
  // The site's function names the format: the ledger's report groups the
  // quantized weights by it.
  atlas_site site = {__FILE__, __LINE__, atlas_quant_ledger_label(m->layout)};
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_alloc_at(b, (size_t)total, site, &out->block));
  out->bytes = total;
  void **ptrs[4] = {&out->w, &out->scales, &out->zeros, &out->g_idx};
  for (int i = 0; i < 4; ++i) {
    if (parts[i]->tensor == NULL) continue;
    *ptrs[i] = (char *)out->block + at[i];
    atlas_status s =
        atlas_checkpoint_upload_job(parts[i], *ptrs[i], &jobs[*out_count]);
    if (s != ATLAS_OK) {
      atlas_status_free(atlas_quant_linear_free(b, out));
      return s;
    }
    ++*out_count;
  }
  return ATLAS_OK;
}

atlas_status atlas_quant_linear_free(atlas_backend *b, atlas_quant_linear *l) {
  atlas_status s = ATLAS_OK;
  if (l->block != NULL) s = atlas_backend_free(b, l->block);
  memset(l, 0, sizeof(*l));
  return s;
}

// `out` is written by the kernel: passed on as an address only.
static atlas_status launch(atlas_backend *b, const atlas_kernel *kernel,
                           atlas_stream *stream, const atlas_quant_linear *l,
                           const float *x, uint32_t count, void *out,
                           bool accumulate) {
  if (kernel == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "the quant kernels were not resolved");
  }
  const atlas_quant_matrix *m = &l->m;
  atlas_launch_config c;
  memset(&c, 0, sizeof(c));
  c.grid.x = (m->rows + ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK - 1) /
             ATLAS_QUANT_MATVEC_ROWS_PER_BLOCK;
  c.grid.y = count == 0 ? 1
                        : (count + ATLAS_QUANT_MATMUL_X_ROWS - 1) /
                              ATLAS_QUANT_MATMUL_X_ROWS;
  c.grid.z = 1;
  c.block.x = ATLAS_QUANT_MATVEC_BLOCK;
  c.block.y = c.block.z = 1;
  c.stream = stream;
  atlas_arg args[15];
  size_t n = 0;
  args[n++] = ATLAS_ARG_PTR(out);
  args[n++] = ATLAS_ARG_PTR(x);
  args[n++] = ATLAS_ARG_PTR(l->w);
  args[n++] = ATLAS_ARG_PTR(l->scales);
  args[n++] = ATLAS_ARG_PTR(l->zeros);
  args[n++] = ATLAS_ARG_PTR(l->g_idx);
  if (count > 0) args[n++] = ATLAS_ARG_U32(count);
  const uint32_t u[8] = {m->rows,    m->cols,    m->layout, m->bits,
                         m->group_k, m->block_n, m->flags,  accumulate};
  for (int i = 0; i < 8; ++i) args[n++] = ATLAS_ARG_U32(u[i]);
  return atlas_backend_launch_typed(b, kernel, &c, args, n);
}

atlas_status atlas_quant_linear_matvec(
    atlas_backend *b, const atlas_quant_kernels *k, atlas_stream *stream,
    const atlas_quant_linear *l, const float *x, float *out, bool accumulate) {
  return launch(b, k->matvec, stream, l, x, 0, out, accumulate);
}

atlas_status atlas_quant_linear_matmul(atlas_backend *b,
                                       const atlas_quant_kernels *k,
                                       atlas_stream *stream,
                                       const atlas_quant_linear *l,
                                       const float *x, uint32_t count,
                                       float *out, bool accumulate) {
  if (count == 0) return ATLAS_OK;
  return launch(b, k->matmul, stream, l, x, count, out, accumulate);
}
