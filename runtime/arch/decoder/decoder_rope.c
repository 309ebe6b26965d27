// RoPE frequencies on the device for a forward's sequence length, and the
// captured decode step that bakes them in.
#include <stdlib.h>

#include "atlas/runtime/arch/decoder/decoder_model.h"

// The captured step bakes RoPE's attention factor in: drop it when that
// changes (dynamic RoPE past max_position_embeddings).
atlas_status atlas_decoder_drop_graph(atlas_decoder_model *m) {
  if (m->graph == NULL || m->graph->graph == NULL) return ATLAS_OK;
  atlas_graph *graph = m->graph->graph;
  m->graph->graph = NULL;
  return atlas_backend_destroy_graph(m->backend, graph);
}

// What the RoPE frequencies depend on at seq_len: only dynamic RoPE past
// max_position_embeddings depends on it.
int64_t atlas_decoder_rope_key(const atlas_decoder_model *m, int64_t seq_len) {
  const atlas_decoder_config *c = &m->config;
  if (c->rope.type == ATLAS_ROPE_LONGROPE) {
    // Two tables: the short factors up to the original length, the long
    // ones past it (1: not a length).
    return seq_len > atlas_rope_original_positions(&c->rope,
                                                   c->max_position_embeddings)
               ? 1
               : 0;
  }
  return c->rope.type == ATLAS_ROPE_DYNAMIC &&
                 seq_len > c->max_position_embeddings
             ? seq_len
             : 0;
}

// One RoPE table: computed in double for seq_len, uploaded as f32.
static atlas_status upload_table(atlas_decoder_model *m,
                                 const atlas_rope_config *rope, int64_t seq_len,
                                 float *dst, float *out_factor) {
  const atlas_decoder_config *c = &m->config;
  size_t half = (size_t)(m->rot_dim / 2);
  double *inv = malloc((half ? half : 1) * sizeof(double));
  float *f = malloc((half ? half : 1) * sizeof(float));
  atlas_status status = ATLAS_OK;
  if (inv == NULL || f == NULL) {
    status = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "cannot compute %zu RoPE frequencies", half);
  } else {
    double factor = 1.0;
    atlas_rope_inv_freq(rope, c->head_dim, c->max_position_embeddings, seq_len,
                        inv, &factor);
    for (size_t i = 0; i < half; ++i) f[i] = (float)inv[i];
    *out_factor = (float)factor;
    status = atlas_status_annotate(
        atlas_backend_h2d(m->backend, dst, f, half * sizeof(float)),
        "uploading RoPE frequencies");
  }
  free(inv);
  free(f);
  return status;
}

atlas_status atlas_decoder_rope_update(atlas_decoder_model *m,
                                       int64_t seq_len) {
  const atlas_decoder_config *c = &m->config;
  int64_t key = atlas_decoder_rope_key(m, seq_len);
  if (key == m->rope_seq_len) return ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_drop_graph(m));
  atlas_status status = upload_table(m, &c->rope, seq_len, m->scratch->inv_freq,
                                     &m->attention_factor);
  if (status == ATLAS_OK && c->local_rope) {
    status =
        upload_table(m, &c->rope_local, seq_len, m->scratch->inv_freq_local,
                     &m->attention_factor_local);
  }
  if (status == ATLAS_OK) m->rope_seq_len = key;
  return status;
}
