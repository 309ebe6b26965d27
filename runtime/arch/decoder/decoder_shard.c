// The decode step's two meeting points with the other ranks of a split
// (decoder_shard.h).
#include "atlas/runtime/arch/decoder/decoder_shard.h"

atlas_status atlas_decoder_shard_sum(const atlas_decoder_shard *shard,
                                     atlas_stream *stream, float *x,
                                     uint64_t n) {
  if (shard == NULL) return ATLAS_OK;
  return atlas_comm_all_reduce_sum(shard->comm, shard->rank, stream, x,
                                   (size_t)n, ATLAS_COMM_F32);
}

atlas_status atlas_decoder_shard_embed(const atlas_decoder_shard *shard,
                                       atlas_stream *stream, float *x,
                                       uint64_t n) {
  if (shard == NULL) return ATLAS_OK;
  return atlas_comm_broadcast(shard->comm, shard->rank, stream, x, (size_t)n,
                              ATLAS_COMM_F32, shard->embed_root);
}
