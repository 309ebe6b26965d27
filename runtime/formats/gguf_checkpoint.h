// A GGUF file opened as a checkpoint, so the decoder reads it as it reads a
// safetensors directory: the tensors under their transformers names
// (gguf_model.h), and the config.json its metadata says.
//
// What the view holds:
// - F32, F16, BF16 tensors: read from the GGUF file where they lie;
// - a layer's projections in Q8_0, Q4_0, Q4_K, Q5_K or Q6_K: kept in their
//   blocks (dtypes ATLAS_DTYPE_GGUF_*), read from the file, run by the quant
//   kernels (the config says quant_method "gguf");
// - a llama model's attn_q / attn_k weights and biases: llama.cpp's
//   converter interleaved each head's two rotary halves, so their rows are
//   put back in order in host memory (blocks stay blocks: a row is whole
//   blocks);
// - a quantized token embedding or output projection: dequantized to F32
//   in host memory as ggml does (the decoder reads those in F32, F16 or
//   BF16 only);
// - rope_freqs.weight (Llama 3.1's rope factors): not a tensor of the view,
//   its llama3 parameters are in the config (gguf_model.h).
// A tensor type or name Atlas does not read, and metadata it cannot express,
// are refused naming the tensor or the key.
#ifndef ATLAS_RUNTIME_FORMATS_GGUF_CHECKPOINT_H_
#define ATLAS_RUNTIME_FORMATS_GGUF_CHECKPOINT_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/formats/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

// Whether `path` names a GGUF file rather than a checkpoint directory: it
// ends in ".gguf" (any case).
bool atlas_gguf_is_path(const char *path);

// Opens `path` as a checkpoint (out_ck) and writes the config.json its
// metadata implies (out_config_json: malloc'd, NUL-terminated; may be NULL
// when not wanted). On error nothing stays open or allocated.
ATLAS_MUST_USE atlas_status atlas_gguf_checkpoint_open(
    const char *path, atlas_checkpoint **out_ck, char **out_config_json);

// The same over a whole file held in memory (not copied: it must outlive
// the checkpoint); `name` is used in messages.
ATLAS_MUST_USE atlas_status atlas_gguf_checkpoint_open_buffer(
    const void *data, size_t size, const char *name, atlas_checkpoint **out_ck,
    char **out_config_json);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FORMATS_GGUF_CHECKPOINT_H_
