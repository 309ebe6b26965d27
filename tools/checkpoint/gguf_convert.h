// A GGUF file (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K tensors of a
// llama, qwen2 or qwen3 model) written as an ordinary checkpoint directory:
// config.json from the metadata, model.safetensors in F32 with the
// transformers names and a llama model's q/k rows put back in order
// (runtime/formats/gguf_model.h), every quantized block dequantized as
// ggml does (kernels/quant_decode.h). A converter: the whole model is held
// in host memory as F32 while it is written.
#ifndef ATLAS_TOOLS_CHECKPOINT_GGUF_CONVERT_H_
#define ATLAS_TOOLS_CHECKPOINT_GGUF_CONVERT_H_

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Writes out_dir/config.json and out_dir/model.safetensors (out_dir must
// exist). A tensor type Atlas does not read, or a tensor with no
// transformers name, is refused naming it.
ATLAS_MUST_USE atlas_status atlas_gguf_convert(const char *gguf_path,
                                               const char *out_dir);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_TOOLS_CHECKPOINT_GGUF_CONVERT_H_
