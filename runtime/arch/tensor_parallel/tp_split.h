// The Megatron split of a decoder over N ranks (docs/PARALLELISM.md): what
// each rank holds, as a config and a checkpoint of its own, which the
// unchanged loader reads (decoder_shard.h says what the step does with it).
//
//   q, k, v, gate, up (and fused qkv, gate_up)  by output rows: whole heads,
//       whole KV heads (a KV head on N / kv ranks where N > kv), its
//       intermediate columns
//   o, down                                    by input columns; biases on
//       rank 0, zeros elsewhere (the sum adds them once)
//   embedding, lm_head                         by vocabulary rows
//   norms                                      whole on every rank
#ifndef ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_SPLIT_H_
#define ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_SPLIT_H_

#include <stddef.h>

#include "atlas/runtime/arch/decoder/decoder_config.h"
#include "atlas/runtime/formats/checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

// OK when `ranks` splits the config: num_attention_heads, intermediate_size
// and vocab_size multiples of it, num_key_value_heads a multiple or a
// divisor of it. Otherwise INVALID_ARGUMENT naming `where`, the field, its
// value and the ranks; UNIMPLEMENTED for a quantized checkpoint.
ATLAS_MUST_USE atlas_status atlas_tp_check_split(const atlas_decoder_config *c,
                                                 int ranks, const char *where);

// Rank `rank`'s config: heads, KV heads, intermediate and vocabulary its
// share; head_dim and the rest as they were.
void atlas_tp_shard_config(const atlas_decoder_config *c, int ranks,
                           atlas_decoder_config *out_config);

// The first vocabulary id rank `rank` holds (its rows of the embedding and
// lm_head are [first, first + vocab_size / ranks)).
int64_t atlas_tp_vocab_first(const atlas_decoder_config *c, int ranks,
                             int rank);

// What rank `rank`'s tensors of `ck` will hold, without reading them: their
// bytes as stored and how many there are (atlas_decoder_required_bytes_of).
ATLAS_MUST_USE atlas_status atlas_tp_shard_size(const atlas_decoder_config *c,
                                                const atlas_checkpoint *ck,
                                                int ranks, int rank,
                                                uint64_t *out_weight_bytes,
                                                size_t *out_tensor_count);

// Rank `rank`'s tensors of `ck` (checked against `c` first) as a
// safetensors file in memory: *out_data (free() it) of *out_size bytes, for
// atlas_checkpoint_open_buffer. Errors name the tensor and the file.
ATLAS_MUST_USE atlas_status atlas_tp_shard_write(const atlas_decoder_config *c,
                                                 const atlas_checkpoint *ck,
                                                 int ranks, int rank,
                                                 void **out_data,
                                                 size_t *out_size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_TENSOR_PARALLEL_TP_SPLIT_H_
