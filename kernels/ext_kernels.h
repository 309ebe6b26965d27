// The decoder's optional ops (module "decoder_ext"): what a family's
// descriptor asks for beyond the base layout (Gemma's GELU, embedding scale,
// soft-capping and query scale). A model whose descriptor needs none of them
// never resolves this module's kernels. Names and signatures are shared by
// the host C twins (ext_host.c and the attention twins it reuses) and, where
// present, the CUDA image.
//
//   scale(x, n, factor)                                              "puf"
//       x[i] *= factor (the embedding's scale)
//   softcap(x, n, cap)                                               "puf"
//       x[i] = cap * tanh(x[i] / cap) (the final logits' soft-capping)
//   gelu_tanh_mul(a, b, n)                                           "ppu"
//       a[i] = gelu_tanh(a[i]) * b[i], gelu_tanh(x) = 0.5 x (1 + tanh(
//       sqrt(2 / pi) (x + 0.044715 x^3))) (PyTorch's approximate="tanh")
//   gelu_tanh_mul_round_{f16,bf16}(out, a, b, count)                "pppu"
//       gelu_tanh_mul's value rounded to the 16-bit type into out (as
//       silu_mul_round, prefill_kernels.h); a and b unchanged
//   attention_ext_{f32,f16,bf16}(... attention's args ..., scale, cap)
//                                                          "pppppuuupuff"
//   attention_prefill_ext_{f32,f16,bf16}(... attention_prefill's args ...,
//       scale, cap)                                          "ppppuuuuuuff"
//   attention_decode_ext_{f32,f16,bf16}(... attention_decode's args ...,
//       scale, cap)                                        "ppppuuupuuppff"
//   attention_paged_ext_{f32,f16,bf16}(... attention_paged's args ...,
//       scale, cap)                                      "ppppuuupppuuuuff"
//       the base attentions (token_kernels.h, prefill_kernels.h,
//       paged_kernels.h) with each score q.k * scale (not 1 / sqrt(head_dim):
//       query_pre_attn_scalar^-0.5) and, where cap > 0, soft-capped: cap *
//       tanh(score / cap), before the softmax (Gemma 2's
//       attn_logit_softcapping)
#ifndef ATLAS_KERNELS_EXT_KERNELS_H_
#define ATLAS_KERNELS_EXT_KERNELS_H_

#include "atlas/runtime/device/kernel_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATLAS_DECODER_EXT_MODULE "decoder_ext"

// Sized so that adding a kernel without updating the count fails to compile.
#define ATLAS_DECODER_EXT_KERNEL_COUNT 17
extern const atlas_kernel_def
    atlas_decoder_ext_kernel_defs[ATLAS_DECODER_EXT_KERNEL_COUNT];

// Host C twins (no CUDA image yet: a CUDA backend refuses to load it,
// naming the module).
extern const atlas_module_def atlas_decoder_ext_module;
// The decoder's module set with this module: the rows of families whose
// descriptors may need it.
extern const atlas_module_set atlas_decoder_ext_module_set;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_KERNELS_EXT_KERNELS_H_
