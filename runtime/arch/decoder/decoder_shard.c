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

atlas_status atlas_decoder_shard_embed_rows(const atlas_decoder_shard *shard,
                                            atlas_backend *backend,
                                            atlas_stream *stream, float *x,
                                            size_t first_row, uint32_t rows,
                                            uint32_t dim) {
  if (shard == NULL) return ATLAS_OK;
  if (shard->owned_rows == NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "rank %d: a prefill without its rows' owners",
                             shard->rank);
  }
  // Runs of rows held elsewhere, one fill each.
  for (uint32_t i = 0; i < rows;) {
    if (shard->owned_rows[first_row + i]) {
      ++i;
      continue;
    }
    uint32_t end = i;
    while (end < rows && !shard->owned_rows[first_row + end]) ++end;
    ATLAS_RETURN_IF_ERROR(atlas_backend_memset_async(
        backend, x + (size_t)i * dim, 0,
        (size_t)(end - i) * dim * sizeof(float), stream));
    i = end;
  }
  return atlas_comm_all_reduce_sum(shard->comm, shard->rank, stream, x,
                                   (size_t)rows * dim, ATLAS_COMM_F32);
}
