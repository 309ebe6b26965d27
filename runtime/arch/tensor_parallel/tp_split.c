// The split (tp_split.h): each rank's share of every tensor, written as a
// safetensors file in memory that the decoder's loader reads unchanged.
#include "atlas/runtime/arch/tensor_parallel/tp_split.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_weights.h"
#include "atlas/runtime/parallel/communicator.h"

static atlas_status refuse(const char *where, const char *field, int64_t value,
                           int ranks, const char *rule) {
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "%s: tensor parallel %d does not split %s %lld (%s): choose a tensor "
      "parallel size that divides it",
      where, ranks, field, (long long)value, rule);
}

atlas_status atlas_tp_check_split(const atlas_decoder_config *c, int ranks,
                                  const char *where) {
  if (ranks < 1 || ranks > ATLAS_COMM_MAX_RANKS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: tensor parallel %d (1 to %d)", where, ranks,
                             ATLAS_COMM_MAX_RANKS);
  }
  if (c->quant.method != ATLAS_QUANT_NONE) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: tensor parallel %d: quantized checkpoints "
                             "are not split yet",
                             where, ranks);
  }
  if (c->num_experts > 0 && ranks > 1) {
    // Experts split by expert (or their FFNs by columns) is a design of its
    // own: refused until it is built.
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: tensor parallel %d: mixture-of-experts "
                             "layers (num_experts %lld) are not split yet",
                             where, ranks, (long long)c->num_experts);
  }
  if (c->num_attention_heads % ranks != 0) {
    return refuse(where, "num_attention_heads", c->num_attention_heads, ranks,
                  "whole heads per rank");
  }
  int64_t kv = c->num_key_value_heads;
  if (kv % ranks != 0 && ranks % kv != 0) {
    return refuse(where, "num_key_value_heads", kv, ranks,
                  "whole KV heads per rank, or each KV head on the same "
                  "number of ranks");
  }
  if (c->intermediate_size % ranks != 0) {
    return refuse(where, "intermediate_size", c->intermediate_size, ranks,
                  "gate and up by columns");
  }
  if (c->vocab_size % ranks != 0) {
    return refuse(where, "vocab_size", c->vocab_size, ranks,
                  "the embedding and lm_head by vocabulary rows");
  }
  return ATLAS_OK;
}

void atlas_tp_shard_config(const atlas_decoder_config *c, int ranks,
                           atlas_decoder_config *out) {
  *out = *c;
  out->num_attention_heads = c->num_attention_heads / ranks;
  out->num_key_value_heads =
      c->num_key_value_heads % ranks == 0 ? c->num_key_value_heads / ranks : 1;
  out->intermediate_size = c->intermediate_size / ranks;
  out->vocab_size = c->vocab_size / ranks;
}

int64_t atlas_tp_vocab_first(const atlas_decoder_config *c, int ranks,
                             int rank) {
  return c->vocab_size / ranks * rank;
}

// Rows [row0, row0 + rows) of the source, in order.
typedef struct row_block {
  int64_t row0, rows;
} row_block;

// One tensor of the shard.
typedef struct piece {
  char name[256];
  atlas_checkpoint_tensor src;
  int rank_out;  // 1: a vector of `rows`; 2: rows x cols
  int64_t rows, cols;
  row_block blocks[3];
  int nblocks;
  int64_t col0;  // the source columns [col0, col0 + cols)
  bool zero;     // zeros (o and down biases past rank 0)
  uint64_t offset, bytes;
} piece;

// The rank's rows of each split dimension.
typedef struct share {
  row_block q, kv, inter, vocab;
  int64_t q_total, kv_total, inter_total;
} share;

static share share_of(const atlas_decoder_config *c, int n, int r) {
  share s;
  int64_t hd = c->head_dim;
  int64_t qh = c->num_attention_heads / n;
  int64_t kv = c->num_key_value_heads;
  s.q = (row_block){r * qh * hd, qh * hd};
  if (kv % n == 0) {
    s.kv = (row_block){r * (kv / n) * hd, kv / n * hd};
  } else {
    s.kv = (row_block){(int64_t)(r / (n / kv)) * hd, hd};
  }
  int64_t i = c->intermediate_size / n;
  s.inter = (row_block){r * i, i};
  int64_t v = c->vocab_size / n;
  s.vocab = (row_block){r * v, v};
  s.q_total = c->num_attention_heads * hd;
  s.kv_total = kv * hd;
  s.inter_total = c->intermediate_size;
  return s;
}

static row_block shifted(row_block b, int64_t by) {
  return (row_block){b.row0 + by, b.rows};
}

// What rank r takes of `weight`, whose source shape is in p->src.
static void plan_piece(const share *s, atlas_decoder_weight weight, int rank,
                       piece *p) {
  const atlas_safetensors_tensor *t = p->src.tensor;
  int64_t src_rows = t->shape[0];
  int64_t src_cols = t->rank == 2 ? t->shape[1] : 1;
  p->rank_out = t->rank;
  p->cols = src_cols;
  p->col0 = 0;
  p->nblocks = 1;
  p->blocks[0] = (row_block){0, src_rows};
  switch (weight) {
    case ATLAS_DECODER_EMBED_TOKENS:
    case ATLAS_DECODER_LM_HEAD:
      p->blocks[0] = s->vocab;
      break;
    case ATLAS_DECODER_Q_PROJ:
    case ATLAS_DECODER_Q_BIAS:
      p->blocks[0] = s->q;
      break;
    case ATLAS_DECODER_K_PROJ:
    case ATLAS_DECODER_V_PROJ:
    case ATLAS_DECODER_K_BIAS:
    case ATLAS_DECODER_V_BIAS:
      p->blocks[0] = s->kv;
      break;
    case ATLAS_DECODER_GATE_PROJ:
    case ATLAS_DECODER_UP_PROJ:
    case ATLAS_DECODER_GATE_BIAS:
    case ATLAS_DECODER_UP_BIAS:
      p->blocks[0] = s->inter;
      break;
    case ATLAS_DECODER_O_PROJ:
      p->col0 = s->q.row0;
      p->cols = s->q.rows;
      break;
    case ATLAS_DECODER_DOWN_PROJ:
      p->col0 = s->inter.row0;
      p->cols = s->inter.rows;
      break;
    case ATLAS_DECODER_O_BIAS:
    case ATLAS_DECODER_DOWN_BIAS:
      p->zero = rank != 0;
      break;
    case ATLAS_DECODER_QKV_PROJ:
      p->nblocks = 3;
      p->blocks[0] = s->q;
      p->blocks[1] = shifted(s->kv, s->q_total);
      p->blocks[2] = shifted(s->kv, s->q_total + s->kv_total);
      break;
    case ATLAS_DECODER_GATE_UP_PROJ:
      p->nblocks = 2;
      p->blocks[0] = s->inter;
      p->blocks[1] = shifted(s->inter, s->inter_total);
      break;
    default:  // norms: whole on every rank
      break;
  }
  p->rows = 0;
  for (int b = 0; b < p->nblocks; ++b) p->rows += p->blocks[b].rows;
  p->bytes = (uint64_t)p->rows * (uint64_t)p->cols * atlas_dtype_size(t->dtype);
}

// Every tensor of the shard, in the checkpoint's plan order; count only
// when `out` is NULL.
static atlas_status plan_all(const atlas_decoder_config *c,
                             const atlas_checkpoint *ck, int n, int r,
                             bool lm_head_is_embedding, piece *out,
                             size_t *out_count) {
  share s = share_of(c, n, r);
  size_t count = 0;
  for (int l = -1; l < (int)c->num_hidden_layers; ++l) {
    for (int w = 0; w < ATLAS_DECODER_WEIGHT_COUNT; ++w) {
      atlas_decoder_weight weight = (atlas_decoder_weight)w;
      if (atlas_decoder_weight_is_per_layer(weight) != (l >= 0)) continue;
      if (weight == ATLAS_DECODER_EMBED_TOKENS) {
        weight = atlas_decoder_embedding_weight(c, ck);
      } else if (weight == ATLAS_DECODER_LM_HEAD) {
        if (lm_head_is_embedding || !atlas_decoder_weight_used(c, weight)) {
          continue;
        }
      } else if (!atlas_decoder_weight_used(c, weight)) {
        continue;
      }
      if (out != NULL) {
        piece *p = &out[count];
        memset(p, 0, sizeof(*p));
        ATLAS_RETURN_IF_ERROR(atlas_decoder_weight_name(
            c, weight, l < 0 ? 0 : l, p->name, sizeof(p->name)));
        ATLAS_RETURN_IF_ERROR(atlas_checkpoint_find(ck, p->name, &p->src));
        plan_piece(&s, weight, r, p);
      }
      count++;
    }
  }
  *out_count = count;
  return ATLAS_OK;
}

static atlas_status fill_piece(const piece *p, char *dst) {
  const atlas_safetensors_tensor *t = p->src.tensor;
  if (p->zero) {
    memset(dst, 0, p->bytes);
    return ATLAS_OK;
  }
  size_t es = atlas_dtype_size(t->dtype);
  int64_t src_cols = t->rank == 2 ? t->shape[1] : 1;
  if (p->cols == src_cols) {  // whole rows: one read a block
    for (int b = 0; b < p->nblocks; ++b) {
      uint64_t bytes = (uint64_t)p->blocks[b].rows * (uint64_t)src_cols * es;
      ATLAS_RETURN_IF_ERROR(atlas_safetensors_read(
          t, (uint64_t)p->blocks[b].row0 * (uint64_t)src_cols * es, bytes,
          dst));
      dst += bytes;
    }
    return ATLAS_OK;
  }
  // Some columns of every row: the tensor once, then the columns.
  char *whole = malloc(t->bytes ? t->bytes : 1);
  if (whole == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: %llu bytes to split it", t->name,
                             (unsigned long long)t->bytes);
  }
  atlas_status s = atlas_safetensors_read(t, 0, t->bytes, whole);
  for (int b = 0; s == ATLAS_OK && b < p->nblocks; ++b) {
    for (int64_t i = 0; i < p->blocks[b].rows; ++i) {
      const char *row =
          whole + (size_t)(p->blocks[b].row0 + i) * (size_t)src_cols * es;
      memcpy(dst, row + (size_t)p->col0 * es, (size_t)p->cols * es);
      dst += (size_t)p->cols * es;
    }
  }
  free(whole);
  return s;
}

// The safetensors header: {"name": {"dtype", "shape", "data_offsets"}}.
static atlas_status header_of(const piece *pieces, size_t count,
                              char **out_text) {
  json_t *root = json_object();
  bool ok = root != NULL;
  for (size_t i = 0; ok && i < count; ++i) {
    const piece *p = &pieces[i];
    json_t *shape = p->rank_out == 2 ? json_pack("[II]", (json_int_t)p->rows,
                                                 (json_int_t)p->cols)
                                     : json_pack("[I]", (json_int_t)p->rows);
    const uint64_t end = p->offset + p->bytes;
    json_t *entry = json_pack(
        "{s:s, s:o, s:[II]}", "dtype", atlas_dtype_name(p->src.tensor->dtype),
        "shape", shape, "data_offsets", (json_int_t)p->offset, (json_int_t)end);
    ok = entry != NULL && json_object_set_new(root, p->name, entry) == 0;
  }
  char *text = ok ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  *out_text = text;
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "cannot write a shard's safetensors header");
  }
  return ATLAS_OK;
}

// Rank `rank`'s pieces (malloc'd into *out, even when planning fails, so
// the caller frees them): the checkpoint's shapes checked, then counted
// and planned.
static atlas_status plan_rank(const atlas_decoder_config *c,
                              const atlas_checkpoint *ck, int ranks, int rank,
                              piece **out, size_t *out_count) {
  *out = NULL;
  *out_count = 0;
  // The shapes the slicing relies on.
  bool lm_head_is_embedding = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_decoder_check_checkpoint(c, ck, &lm_head_is_embedding));
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(
      plan_all(c, ck, ranks, rank, lm_head_is_embedding, NULL, &count));
  *out = calloc(count ? count : 1, sizeof(**out));
  if (*out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%s: planning rank %d's %zu tensors",
                             atlas_checkpoint_source(ck), rank, count);
  }
  *out_count = count;
  return plan_all(c, ck, ranks, rank, lm_head_is_embedding, *out, out_count);
}

atlas_status atlas_tp_shard_size(const atlas_decoder_config *c,
                                 const atlas_checkpoint *ck, int ranks,
                                 int rank, uint64_t *out_weight_bytes,
                                 size_t *out_tensor_count) {
  *out_weight_bytes = 0;
  *out_tensor_count = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_tp_check_split(c, ranks, atlas_checkpoint_source(ck)));
  piece *pieces = NULL;
  size_t count = 0;
  atlas_status s = plan_rank(c, ck, ranks, rank, &pieces, &count);
  for (size_t i = 0; s == ATLAS_OK && i < count; ++i) {
    *out_weight_bytes += pieces[i].bytes;
  }
  free(pieces);
  if (s == ATLAS_OK) *out_tensor_count = count;
  return s;
}

atlas_status atlas_tp_shard_write(const atlas_decoder_config *c,
                                  const atlas_checkpoint *ck, int ranks,
                                  int rank, void **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  const char *where = atlas_checkpoint_source(ck);
  ATLAS_RETURN_IF_ERROR(atlas_tp_check_split(c, ranks, where));
  if (rank < 0 || rank >= ranks) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "%s: rank %d of %d",
                             where, rank, ranks);
  }
  piece *pieces = NULL;
  size_t count = 0;
  atlas_status s = plan_rank(c, ck, ranks, rank, &pieces, &count);
  uint64_t data_bytes = 0;
  for (size_t i = 0; s == ATLAS_OK && i < count; ++i) {
    pieces[i].offset = data_bytes;
    data_bytes += pieces[i].bytes;
  }
  char *header = NULL;
  if (s == ATLAS_OK) s = header_of(pieces, count, &header);
  char *buf = NULL;
  size_t header_len = 0, total = 0;
  if (s == ATLAS_OK) {
    header_len = (strlen(header) + 7) / 8 * 8;  // padded with spaces
    total = 8 + header_len + (size_t)data_bytes;
    buf = malloc(total);
    if (buf == NULL) {
      s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                            "%s: %zu bytes for rank %d's weights", where, total,
                            rank);
    }
  }
  if (s == ATLAS_OK) {
    uint64_t n = header_len;
    for (int i = 0; i < 8; ++i) buf[i] = (char)(n >> (8 * i) & 0xff);
    memset(buf + 8, ' ', header_len);
    memcpy(buf + 8, header, strlen(header));
    char *data = buf + 8 + header_len;
    for (size_t i = 0; s == ATLAS_OK && i < count; ++i) {
      s = atlas_status_annotate(fill_piece(&pieces[i], data + pieces[i].offset),
                                "%s (rank %d of %d)", pieces[i].src.path, rank,
                                ranks);
    }
  }
  free(header);
  free(pieces);
  if (s != ATLAS_OK) {
    free(buf);
    return s;
  }
  *out_data = buf;
  *out_size = total;
  return ATLAS_OK;
}
