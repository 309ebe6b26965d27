// A decoder that is one rank of a tensor-parallel split
// (runtime/arch/tensor_parallel builds the split and drives the ranks).
// The rank's checkpoint holds its heads, its KV heads, its columns of gate
// and up, its rows of o and down, and its vocabulary rows of the embedding
// and lm_head; its config says so (heads / N, intermediate / N, vocab / N).
// Two points of the decode step then meet the other ranks:
//   - the embedding: the rank that holds the token's row broadcasts it;
//   - o and down: each rank's product is its part of the sum, all-reduced
//     before the residual add (or the sandwich norm).
// A batched prefill meets them the same way, except that each prompt row's
// token may belong to another rank: each rank embeds the rows it holds,
// zeroes the others, and the rows are all-reduced.
// A shard runs eagerly (no captured graph), and only through
// atlas_decoder_decode_step / forward_step and atlas_decoder_prefill.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_SHARD_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_SHARD_H_

#include <stdint.h>

#include "atlas/runtime/parallel/communicator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_decoder_shard {
  atlas_comm *comm;  // the model's; borrowed
  int rank;
  // The rank whose vocabulary rows hold this step's token: set by the
  // driver before each step (the others embed a row of their own, which
  // the broadcast overwrites).
  int embed_root;
  // For atlas_decoder_prefill: whether this rank holds the row of prompt
  // token i (set by the driver for the whole prompt; NULL outside one).
  const uint8_t *owned_rows;
} atlas_decoder_shard;

// x[0..n) = the sum over ranks of x, on `stream`; nothing when shard is
// NULL (the whole model).
ATLAS_MUST_USE atlas_status
atlas_decoder_shard_sum(const atlas_decoder_shard *shard, atlas_stream *stream,
                        float *x, uint64_t n);
// x[0..n) = shard->embed_root's x; nothing when shard is NULL.
ATLAS_MUST_USE atlas_status
atlas_decoder_shard_embed(const atlas_decoder_shard *shard,
                          atlas_stream *stream, float *x, uint64_t n);

// Prefill rows first_row .. first_row + rows of x (dim floats each): the
// rows whose token this rank does not hold are zeroed, then every rank's
// rows are added. Nothing when shard is NULL.
ATLAS_MUST_USE atlas_status atlas_decoder_shard_embed_rows(
    const atlas_decoder_shard *shard, atlas_backend *backend,
    atlas_stream *stream, float *x, size_t first_row, uint32_t rows,
    uint32_t dim);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_SHARD_H_
