// The tensor-parallel model (tp_model.h): N backends, N decoder ranks, one
// communicator; a thread per rank for every step.
#include "atlas/runtime/arch/tensor_parallel/tp_model.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/arch/decoder/decoder_arch.h"
#include "atlas/runtime/arch/decoder/decoder_shard.h"
#include "atlas/runtime/arch/registry.h"
#include "atlas/runtime/arch/tensor_parallel/tp_split.h"
#include "atlas/runtime/backends/backend_factory.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/parallel/comm_host.h"
#include "atlas/runtime/parallel/comm_nccl.h"

enum { TP_MAX_RANKS = 64 };

struct atlas_tp_model {
  int ranks;
  atlas_decoder_config config;  // the whole model's
  atlas_backend *backends[TP_MAX_RANKS];
  atlas_comm *comm;  // NULL when ranks == 1
  atlas_decoder_shard shards[TP_MAX_RANKS];
  atlas_decoder_model *models[TP_MAX_RANKS];
  float *scratch_logits[TP_MAX_RANKS];  // a rank's logits when the caller
                                        // wants none (host memory)
  // A worker thread per rank (ranks > 1), started at open and joined by
  // the unload: each step hands every worker its job (`jobs`, a new
  // `generation`) and waits until `pending` falls to 0.
  struct rank_worker {
    struct atlas_tp_model *m;
    int rank;
    pthread_t thread;
  } workers[TP_MAX_RANKS];
  int workers_started;
  pthread_mutex_t work_mutex;  // guards what follows
  pthread_cond_t work_cv, done_cv;
  uint64_t generation;
  int pending;
  bool stopping;
  struct rank_job *jobs;
};

// The rank workers (below, with the steps they run).
static atlas_status start_workers(atlas_tp_model *m);
static void stop_workers(atlas_tp_model *m);

int atlas_tp_model_ranks(const atlas_tp_model *m) { return m->ranks; }

atlas_status atlas_tp_required_bytes(const atlas_checkpoint *ck,
                                     const atlas_arch *arch, const void *config,
                                     int ranks, int64_t max_seq,
                                     uint64_t *out_bytes) {
  *out_bytes = 0;
  if (arch->load != atlas_decoder_arch_load ||
      arch->config_size != sizeof(atlas_decoder_config)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: tensor parallelism splits the decoder "
                             "families; %s is not one",
                             atlas_checkpoint_source(ck), arch->name);
  }
  const atlas_decoder_config *c = config;
  atlas_decoder_config rank_config;
  atlas_tp_shard_config(c, ranks, &rank_config);
  for (int r = 0; r < ranks; ++r) {
    uint64_t weights = 0, bytes = 0;
    size_t tensors = 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_tp_shard_size(c, ck, ranks, r, &weights, &tensors));
    ATLAS_RETURN_IF_ERROR(
        atlas_decoder_required_bytes_of(&rank_config, weights, tensors, max_seq,
                                        atlas_checkpoint_source(ck), &bytes));
    if (bytes > *out_bytes) *out_bytes = bytes;
  }
  return ATLAS_OK;
}

const atlas_decoder_config *atlas_tp_model_config(const atlas_tp_model *m) {
  return &m->config;
}

atlas_backend *atlas_tp_model_backend(atlas_tp_model *m, int rank) {
  return rank >= 0 && rank < m->ranks ? m->backends[rank] : NULL;
}

// config.json through the registry: a decoder family's row only.
static atlas_status read_config(const char *dir, atlas_decoder_config *out,
                                const atlas_module_set **out_modules) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/config.json", dir);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "model directory path is too long: %s", dir);
  }
  char *text = NULL;
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_file_read_small(path, "config.json", 1u << 20, &text, &len));
  const atlas_arch *arch = NULL;
  atlas_status s = atlas_arch_select(text, len, path, &arch);
  if (s == ATLAS_OK && (arch->load != atlas_decoder_arch_load ||
                        arch->config_size != sizeof(*out))) {
    s = atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                          "%s: tensor parallelism splits the decoder "
                          "families; %s is not one",
                          path, arch->name);
  }
  if (s == ATLAS_OK) s = arch->parse_config(text, len, path, out);
  free(text);
  if (s == ATLAS_OK) *out_modules = arch->modules;
  return s;
}

static bool is_cuda(const char *backend) {
  return backend != NULL && strcmp(backend, "cuda") == 0;
}

static atlas_status make_backends(atlas_tp_model *m, const atlas_tp_options *o,
                                  const atlas_module_set *modules) {
  const char *name = o->backend != NULL ? o->backend : "host";
  if (m->ranks > 1 && strcmp(name, "host") != 0 && !is_cuda(name)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tensor parallel %d needs the backend named: "
                             "\"host\" (simulated devices) or \"cuda\", not "
                             "\"%s\"",
                             m->ranks, name);
  }
  for (int r = 0; r < m->ranks; ++r) {
    atlas_backend_options bo;
    memset(&bo, 0, sizeof(bo));
    bo.modules = modules;
    bo.device = o->devices != NULL ? o->devices[r] : r;
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
        atlas_backend_factory_create(name, &bo, &m->backends[r]),
        "tensor parallel rank %d", r));
    if (o->ignore_env_fault) {
      for (int k = 0; k < ATLAS_FAULT_KIND_COUNT; ++k) {
        atlas_backend_inject_fault(m->backends[r], (atlas_fault_kind)k, 0);
      }
    }
    if (o->fault_at != 0 && r == o->fault_rank) {
      atlas_backend_inject_fault(m->backends[r], o->fault_kind, o->fault_at);
    }
  }
  if (m->ranks == 1) return ATLAS_OK;
  if (is_cuda(name)) {
    int devices[TP_MAX_RANKS];
    for (int r = 0; r < m->ranks; ++r) {
      devices[r] = o->devices != NULL ? o->devices[r] : r;
    }
    return atlas_comm_nccl_create(m->ranks, m->backends, devices,
                                  o->nccl_library, &m->comm);
  }
  return atlas_comm_host_create(m->ranks, m->backends, &m->comm);
}

// Rank r's shard: its tensors written in memory, loaded by the decoder.
static atlas_status load_rank(atlas_tp_model *m, const atlas_checkpoint *ck,
                              const atlas_tp_options *o, int r) {
  atlas_decoder_load_options lo = o->load;
  if (m->ranks == 1) {
    lo.shard = NULL;
    return atlas_decoder_model_load(m->backends[0], ck, &m->config, &lo,
                                    &m->models[0]);
  }
  atlas_decoder_config rank_config;
  atlas_tp_shard_config(&m->config, m->ranks, &rank_config);
  m->shards[r] = (atlas_decoder_shard){m->comm, r, 0, NULL};
  lo.shard = &m->shards[r];
  void *data = NULL;
  size_t size = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_tp_shard_write(&m->config, ck, m->ranks, r, &data, &size));
  char name[64];
  snprintf(name, sizeof(name), "tensor parallel rank %d of %d", r, m->ranks);
  atlas_checkpoint *shard_ck = NULL;
  atlas_status s = atlas_checkpoint_open_buffer(data, size, name, &shard_ck);
  if (s == ATLAS_OK) {
    s = atlas_decoder_model_load(m->backends[r], shard_ck, &rank_config, &lo,
                                 &m->models[r]);
  }
  atlas_checkpoint_close(shard_ck);
  free(data);
  if (s == ATLAS_OK) {
    m->scratch_logits[r] = malloc((size_t)rank_config.vocab_size * 4);
    if (m->scratch_logits[r] == NULL) {
      s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                            "rank %d: its logits (%lld floats)", r,
                            (long long)rank_config.vocab_size);
    }
  }
  return s;
}

// The model over `ck` (not kept) with the whole model's `config`.
static atlas_status open_split(const atlas_checkpoint *ck,
                               const atlas_decoder_config *config,
                               const atlas_module_set *modules,
                               const atlas_tp_options *o,
                               atlas_tp_model **out_model) {
  *out_model = NULL;
  if (o == NULL || o->ranks < 1 || o->ranks > TP_MAX_RANKS) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "tensor parallel %d (1 to %d)",
                             o != NULL ? o->ranks : 0, TP_MAX_RANKS);
  }
  // Refused before any device is touched.
  ATLAS_RETURN_IF_ERROR(
      atlas_tp_check_split(config, o->ranks, atlas_checkpoint_source(ck)));
  atlas_tp_model *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "tensor parallel model of %d ranks", o->ranks);
  }
  m->ranks = o->ranks;
  m->config = *config;
  pthread_mutex_init(&m->work_mutex, NULL);
  pthread_cond_init(&m->work_cv, NULL);
  pthread_cond_init(&m->done_cv, NULL);
  atlas_status s = make_backends(m, o, modules);
  for (int r = 0; s == ATLAS_OK && r < m->ranks; ++r) {
    s = atlas_status_annotate(load_rank(m, ck, o, r), "rank %d of %d", r,
                              m->ranks);
  }
  if (s == ATLAS_OK && m->ranks > 1) s = start_workers(m);
  if (s != ATLAS_OK) {
    atlas_status_free(atlas_tp_model_unload(m, NULL));
    return s;
  }
  *out_model = m;
  return ATLAS_OK;
}

atlas_status atlas_tp_model_open(const char *dir, const atlas_tp_options *o,
                                 atlas_tp_model **out_model) {
  *out_model = NULL;
  const atlas_module_set *modules = NULL;
  atlas_decoder_config config;
  ATLAS_RETURN_IF_ERROR(read_config(dir, &config, &modules));
  if (o != NULL) {
    // Refused before the checkpoint is opened.
    ATLAS_RETURN_IF_ERROR(atlas_tp_check_split(&config, o->ranks, dir));
  }
  atlas_checkpoint *ck = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_checkpoint_open(dir, &ck));
  atlas_status s = open_split(ck, &config, modules, o, out_model);
  atlas_checkpoint_close(ck);
  return s;
}

atlas_status atlas_tp_model_open_checkpoint(const atlas_checkpoint *ck,
                                            const atlas_arch *arch,
                                            const void *config,
                                            const atlas_tp_options *o,
                                            atlas_tp_model **out_model) {
  *out_model = NULL;
  if (arch->load != atlas_decoder_arch_load ||
      arch->config_size != sizeof(atlas_decoder_config)) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "%s: tensor parallelism splits the decoder "
                             "families; %s is not one",
                             atlas_checkpoint_source(ck), arch->name);
  }
  return open_split(ck, config, arch->modules, o, out_model);
}

// One rank's part of a step or of a prompt, on a thread of its own.
typedef struct rank_job {
  atlas_tp_model *m;
  int rank;
  bool prefill;
  // A step: the token at pos (seq_len as decode_step has it).
  uint32_t token, pos;
  int64_t seq_len;
  float *logits;  // this rank's vocabulary rows (a prefill: the last row's)
  bool want_id;
  uint32_t id;
  // A prefill: the rank's ids of the prompt (0 where another rank holds
  // the token) and, when a sink wants every row, its vocabulary rows of
  // each, one after another.
  const uint32_t *local;
  size_t n;
  float *rows;
  size_t rows_filled;
  // A batch step (tp_batch.c): the rank's batch, its logits in `logits`.
  const atlas_arch_batch *batch;
  atlas_status status;
} rank_job;

static atlas_status collect_rows(void *ctx, const float *logits, size_t n) {
  rank_job *j = ctx;
  memcpy(j->rows + j->rows_filled, logits, n * sizeof(float));
  j->rows_filled += n;
  return ATLAS_OK;
}

static atlas_status rank_work(rank_job *j) {
  atlas_tp_model *m = j->m;
  int r = j->rank;
  // A CUDA rank's context is made current on this thread (the host has
  // nothing to bind).
  atlas_status bind = atlas_backend_bind_to_thread(m->backends[r]);
  if (atlas_status_code_of(bind) == ATLAS_STATUS_UNIMPLEMENTED) {
    atlas_status_free(bind);
    bind = ATLAS_OK;
  }
  ATLAS_RETURN_IF_ERROR(bind);
  if (j->batch != NULL) {
    return atlas_decoder_forward_batch(m->models[r], j->batch, j->logits, NULL);
  }
  if (j->prefill) {
    return atlas_decoder_prefill(m->models[r], j->local, j->n, 0, j->logits,
                                 j->rows != NULL ? collect_rows : NULL, j);
  }
  int64_t per = m->config.vocab_size / m->ranks;
  int root = m->shards[r].embed_root;
  // The rank that holds the token's row embeds it; the others any row of
  // theirs, which the broadcast overwrites.
  uint32_t local =
      r == root ? (uint32_t)(j->token - (uint32_t)(per * root)) : 0;
  uint32_t local_id = 0;
  ATLAS_RETURN_IF_ERROR(atlas_decoder_decode_step(
      m->models[r], local, j->pos, j->seq_len, j->logits, &local_id));
  if (!j->want_id) return ATLAS_OK;
  float best = 0;
  return atlas_comm_argmax(m->comm, r, NULL, j->logits[local_id],
                           local_id + (uint32_t)(per * r), &best, &j->id);
}

static void *rank_thread(void *arg) {
  rank_job *j = arg;
  j->status = rank_work(j);
  // Peers waiting in a collective for this rank return instead of hanging.
  if (j->status != ATLAS_OK) {
    atlas_comm_abort(j->m->comm, j->rank, atlas_status_message(j->status));
  }
  return NULL;
}

// A rank's worker: each new generation's job, until the unload stops it.
static void *worker_main(void *arg) {
  struct rank_worker *w = arg;
  atlas_tp_model *m = w->m;
  uint64_t seen = 0;
  pthread_mutex_lock(&m->work_mutex);
  for (;;) {
    while (!m->stopping && m->generation == seen) {
      pthread_cond_wait(&m->work_cv, &m->work_mutex);
    }
    if (m->stopping) break;
    seen = m->generation;
    rank_job *j = &m->jobs[w->rank];
    pthread_mutex_unlock(&m->work_mutex);
    rank_thread(j);
    pthread_mutex_lock(&m->work_mutex);
    if (--m->pending == 0) pthread_cond_signal(&m->done_cv);
  }
  pthread_mutex_unlock(&m->work_mutex);
  return NULL;
}

static atlas_status start_workers(atlas_tp_model *m) {
  for (int r = 0; r < m->ranks; ++r) {
    m->workers[r].m = m;
    m->workers[r].rank = r;
    if (pthread_create(&m->workers[r].thread, NULL, worker_main,
                       &m->workers[r]) != 0) {
      return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                               "cannot start the thread of rank %d of %d", r,
                               m->ranks);
    }
    m->workers_started = r + 1;
  }
  return ATLAS_OK;
}

static void stop_workers(atlas_tp_model *m) {
  pthread_mutex_lock(&m->work_mutex);
  m->stopping = true;
  pthread_cond_broadcast(&m->work_cv);
  pthread_mutex_unlock(&m->work_mutex);
  for (int r = 0; r < m->workers_started; ++r) {
    pthread_join(m->workers[r].thread, NULL);
  }
  m->workers_started = 0;
}

// Every rank's job on its worker; every failure, by rank.
static atlas_status run_ranks(atlas_tp_model *m, rank_job *jobs) {
  if (atlas_comm_aborted(m->comm)) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "a rank of this tensor-parallel model failed "
                             "earlier; the model can only be unloaded");
  }
  pthread_mutex_lock(&m->work_mutex);
  m->jobs = jobs;
  m->pending = m->ranks;
  m->generation++;
  pthread_cond_broadcast(&m->work_cv);
  while (m->pending > 0) pthread_cond_wait(&m->done_cv, &m->work_mutex);
  m->jobs = NULL;
  pthread_mutex_unlock(&m->work_mutex);
  atlas_status status = ATLAS_OK;
  for (int r = 0; r < m->ranks; ++r) {
    status = atlas_status_join(
        status,
        atlas_status_annotate(jobs[r].status, "rank %d of %d", r, m->ranks));
  }
  return status;
}

atlas_status atlas_tp_model_step(atlas_tp_model *m, uint32_t token,
                                 uint32_t pos, int64_t seq_len,
                                 float *out_logits, uint32_t *out_token) {
  if (m->ranks == 1) {
    return atlas_decoder_decode_step(m->models[0], token, pos, seq_len,
                                     out_logits, out_token);
  }
  if ((int64_t)token >= m->config.vocab_size) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "token %u is outside the vocabulary (%lld ids)",
                             token, (long long)m->config.vocab_size);
  }
  int64_t per = m->config.vocab_size / m->ranks;
  rank_job jobs[TP_MAX_RANKS];
  for (int r = 0; r < m->ranks; ++r) {
    m->shards[r].embed_root = (int)((int64_t)token / per);
    memset(&jobs[r], 0, sizeof(jobs[r]));
    jobs[r].m = m;
    jobs[r].rank = r;
    jobs[r].token = token;
    jobs[r].pos = pos;
    jobs[r].seq_len = seq_len;
    jobs[r].logits =
        out_logits != NULL ? out_logits + per * r : m->scratch_logits[r];
    jobs[r].want_id = out_token != NULL;
  }
  atlas_status status = run_ranks(m, jobs);
  if (status == ATLAS_OK && out_token != NULL) *out_token = jobs[0].id;
  return status;
}

// The prompt through every rank in one batched prefill: out_last (vocab
// floats) gets its last row's logits; `sink` (may be NULL) every row's,
// the ranks' vocabulary rows put together.
static atlas_status prefill_ranks(atlas_tp_model *m, const uint32_t *prompt,
                                  size_t n, float *out_last,
                                  atlas_logits_sink sink, void *sink_ctx) {
  size_t vocab = (size_t)m->config.vocab_size;
  size_t per = vocab / (size_t)m->ranks;
  rank_job jobs[TP_MAX_RANKS];
  // Per rank: n local ids, n owner flags and (for a sink) n rows of `per`.
  size_t each = (n * sizeof(uint32_t) + n +
                 (sink != NULL ? n * per * sizeof(float) : 0) + 15) /
                16 * 16;  // each rank's part aligned for its floats
  char *buf = malloc(each * (size_t)m->ranks);
  if (buf == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "a prompt of %zu tokens over %d ranks", n,
                             m->ranks);
  }
  for (int r = 0; r < m->ranks; ++r) {
    char *mine = buf + each * (size_t)r;
    float *rows = (float *)(void *)mine;
    uint32_t *local =
        (uint32_t *)(void *)(mine +
                             (sink != NULL ? n * per * sizeof(float) : 0));
    uint8_t *owned = (uint8_t *)(local + n);
    for (size_t i = 0; i < n; ++i) {
      owned[i] = prompt[i] / per == (size_t)r;
      local[i] = owned[i] ? prompt[i] - (uint32_t)(per * (size_t)r) : 0;
    }
    m->shards[r].owned_rows = owned;
    memset(&jobs[r], 0, sizeof(jobs[r]));
    jobs[r].m = m;
    jobs[r].rank = r;
    jobs[r].prefill = true;
    jobs[r].local = local;
    jobs[r].n = n;
    jobs[r].logits = out_last + per * (size_t)r;
    jobs[r].rows = sink != NULL ? rows : NULL;
  }
  atlas_status s = run_ranks(m, jobs);
  for (int r = 0; r < m->ranks; ++r) m->shards[r].owned_rows = NULL;
  // Each row whole, for the sink: the ranks' slices side by side.
  float *row =
      sink != NULL && s == ATLAS_OK ? malloc(vocab * sizeof(float)) : NULL;
  if (sink != NULL && s == ATLAS_OK && row == NULL) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "a row of %zu logits",
                          vocab);
  }
  for (size_t i = 0; row != NULL && s == ATLAS_OK && i < n; ++i) {
    for (int r = 0; r < m->ranks; ++r) {
      memcpy(row + per * (size_t)r, jobs[r].rows + i * per,
             per * sizeof(float));
    }
    s = sink(sink_ctx, row, vocab);
  }
  free(row);
  free(buf);
  return s;
}

void atlas_tp_model_kv_shape(const atlas_tp_model *m,
                             atlas_arch_kv_shape *out) {
  atlas_decoder_kv_shape(m->models[0], out);
}

void atlas_tp_model_batch_limits(const atlas_tp_model *m, uint32_t block_tokens,
                                 atlas_arch_batch_limits *out) {
  atlas_decoder_batch_limits(m->models[0], block_tokens, out);
}

// Each sequence's logits, the ranks' slices side by side (`rank_logits`:
// per rank, seqs rows of `per`), into out_logits and/or their argmax (the
// first largest, as the argmax reduction picks).
static atlas_status join_logits(const atlas_tp_model *m, int ranks, size_t seqs,
                                float *const *rank_logits, float *row_buf,
                                float *out_logits, uint32_t *out_ids) {
  size_t vocab = (size_t)m->config.vocab_size;
  size_t per = vocab / (size_t)ranks;
  for (size_t i = 0; i < seqs; ++i) {
    float *row = out_logits != NULL ? out_logits + i * vocab : row_buf;
    for (int r = 0; r < ranks; ++r) {
      memcpy(row + per * (size_t)r, rank_logits[r] + i * per,
             per * sizeof(float));
    }
    if (out_ids == NULL) continue;
    uint32_t best = 0;
    for (size_t v = 0; v < vocab; ++v) {
      if (!isfinite(row[v])) {
        return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                                 "batch step: sequence %zu's logit %zu is "
                                 "not finite",
                                 i, v);
      }
      if (row[v] > row[best]) best = (uint32_t)v;
    }
    out_ids[i] = best;
  }
  return ATLAS_OK;
}

atlas_status atlas_tp_model_forward_batch(atlas_tp_model *m,
                                          const atlas_arch_batch *b,
                                          const atlas_arch_kv_pages *pages,
                                          float *out_logits,
                                          uint32_t *out_ids) {
  atlas_arch_batch rb[TP_MAX_RANKS];
  rb[0] = *b;
  rb[0].kv = &pages[0];
  // Read once: the rank jobs take m, and every loop below (join_logits's
  // too) must visibly cover the same ranks.
  const int ranks = m->ranks;
  if (ranks == 1) {
    return atlas_decoder_forward_batch(m->models[0], &rb[0], out_logits,
                                       out_ids);
  }
  size_t vocab = (size_t)m->config.vocab_size;
  size_t per = vocab / (size_t)ranks, n = b->rows;
  for (size_t i = 0; i < n; ++i) {
    if (b->tokens[i] >= vocab) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "batch row %zu: token %u is outside the "
                               "vocabulary (%zu ids)",
                               i, b->tokens[i], vocab);
    }
  }
  // Per rank: n local ids, n owner flags, then seqs rows of its logits;
  // and one whole row for the argmax.
  size_t each =
      (b->seqs * per * sizeof(float) + n * sizeof(uint32_t) + n + 15) / 16 * 16;
  char *buf = malloc(each * (size_t)ranks + vocab * sizeof(float));
  if (buf == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "a batch step of %zu rows over %d ranks", n,
                             ranks);
  }
  rank_job jobs[TP_MAX_RANKS];
  float *rank_logits[TP_MAX_RANKS];
  for (int r = 0; r < ranks; ++r) {
    char *mine = buf + each * (size_t)r;
    rank_logits[r] = (float *)(void *)mine;
    uint32_t *local =
        (uint32_t *)(void *)(mine + b->seqs * per * sizeof(float));
    uint8_t *owned = (uint8_t *)(local + n);
    for (size_t i = 0; i < n; ++i) {
      owned[i] = b->tokens[i] / per == (size_t)r;
      local[i] = owned[i] ? b->tokens[i] - (uint32_t)(per * (size_t)r) : 0;
    }
    m->shards[r].owned_rows = owned;
    rb[r] = *b;
    rb[r].kv = &pages[r];
    rb[r].tokens = local;
    memset(&jobs[r], 0, sizeof(jobs[r]));
    jobs[r].m = m;
    jobs[r].rank = r;
    jobs[r].batch = &rb[r];
    jobs[r].logits = rank_logits[r];
  }
  atlas_status s = run_ranks(m, jobs);
  for (int r = 0; r < ranks; ++r) m->shards[r].owned_rows = NULL;
  if (s == ATLAS_OK) {
    float *row_buf = (float *)(void *)(buf + each * (size_t)ranks);
    s = join_logits(m, ranks, b->seqs, rank_logits, row_buf, out_logits,
                    out_ids);
  }
  free(buf);
  return s;
}

// The prompt in one batched prefill where every rank has its scratch, else
// token by token; out_last gets the last row's logits.
static atlas_status run_prompt(atlas_tp_model *m, const uint32_t *prompt,
                               size_t n, float *out_last,
                               atlas_logits_sink sink, void *sink_ctx) {
  for (size_t i = 0; i < n; ++i) {
    if ((int64_t)prompt[i] >= m->config.vocab_size) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "prompt token %zu is id %u, outside the "
                               "vocabulary (%lld ids)",
                               i, prompt[i], (long long)m->config.vocab_size);
    }
  }
  if (atlas_decoder_has_prefill(m->models[0])) {
    if (m->ranks == 1) {
      return atlas_decoder_prefill(m->models[0], prompt, n, 0, out_last, sink,
                                   sink_ctx);
    }
    return prefill_ranks(m, prompt, n, out_last, sink, sink_ctx);
  }
  size_t vocab = (size_t)m->config.vocab_size;
  for (size_t i = 0; i < n; ++i) {
    ATLAS_RETURN_IF_ERROR(atlas_tp_model_step(
        m, prompt[i], (uint32_t)i, (int64_t)n,
        sink != NULL || i + 1 == n ? out_last : NULL, NULL));
    if (sink != NULL) ATLAS_RETURN_IF_ERROR(sink(sink_ctx, out_last, vocab));
  }
  return ATLAS_OK;
}

int64_t atlas_tp_model_max_seq(const atlas_tp_model *m) {
  return atlas_decoder_max_seq(m->models[0]);
}

atlas_status atlas_tp_model_generate(atlas_tp_model *m, const uint32_t *prompt,
                                     size_t prompt_len, size_t steps,
                                     uint32_t *out_tokens,
                                     atlas_logits_sink sink, void *sink_ctx) {
  return atlas_tp_model_generate_ex(m, prompt, prompt_len, steps, NULL,
                                    out_tokens, NULL, sink, sink_ctx);
}

static bool is_eos(const atlas_arch_generate_options *o, uint32_t token) {
  if (o == NULL || o->ignore_eos) return false;
  for (size_t i = 0; i < o->eos_count; ++i) {
    if (o->eos[i] == token) return true;
  }
  return false;
}

// The token a generating step chose: the options' choice from the logits,
// or the reduced argmax.
static atlas_status choose(const atlas_tp_model *m,
                           const atlas_arch_generate_options *o,
                           const float *logits, uint32_t argmax,
                           uint32_t *out) {
  if (o == NULL || o->choose == NULL) {
    *out = argmax;
    return ATLAS_OK;
  }
  size_t vocab = (size_t)m->config.vocab_size;
  ATLAS_RETURN_IF_ERROR(o->choose(o->choose_ctx, logits, vocab, out));
  if (*out >= vocab) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the chooser picked id %u, outside the "
                             "vocabulary (%zu ids)",
                             *out, vocab);
  }
  return ATLAS_OK;
}

atlas_status atlas_tp_model_generate_ex(
    atlas_tp_model *m, const uint32_t *prompt, size_t prompt_len, size_t steps,
    const atlas_arch_generate_options *o, uint32_t *out_tokens,
    size_t *out_count, atlas_logits_sink sink, void *sink_ctx) {
  if (out_count != NULL) *out_count = 0;
  if (prompt_len == 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "empty prompt");
  }
  size_t vocab = (size_t)m->config.vocab_size;
  // Zeroed: the ranks fill it on worker threads, out of the analyzer's sight.
  float *logits = calloc(vocab, sizeof(float));
  if (logits == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "%zu logits for generation", vocab);
  }
  atlas_status s = run_prompt(m, prompt, prompt_len, logits, sink, sink_ctx);
  if (steps == 0) {  // the prompt alone (a swap proves a model with it)
    free(logits);
    return s;
  }
  // The first token from the prompt's last logits: the first largest, as
  // the argmax reduction picks.
  uint32_t argmax = 0;
  for (size_t v = 1; s == ATLAS_OK && v < vocab; ++v) {
    if (logits[v] > logits[argmax]) argmax = (uint32_t)v;
  }
  size_t count = 0;
  bool want_logits = sink != NULL || (o != NULL && o->choose != NULL);
  // Each generated token but the last is fed back, at position
  // prompt_len + count - 1.
  for (;;) {
    uint32_t next = 0;
    if (s == ATLAS_OK) s = choose(m, o, logits, argmax, &next);
    if (s != ATLAS_OK) break;
    out_tokens[count++] = next;
    bool go_on =
        o == NULL || o->on_token == NULL || o->on_token(o->token_ctx, next);
    if (!go_on || is_eos(o, next) || count == steps) break;
    size_t pos = prompt_len + count - 1;
    s = atlas_tp_model_step(m, next, (uint32_t)pos, (int64_t)pos + 1,
                            want_logits ? logits : NULL, &argmax);
    if (s == ATLAS_OK && sink != NULL) s = sink(sink_ctx, logits, vocab);
  }
  free(logits);
  if (out_count != NULL) *out_count = count;
  return s;
}

atlas_status atlas_tp_model_unload(atlas_tp_model *m,
                                   atlas_tp_unload_report *out) {
  if (out != NULL) {
    memset(out, 0, sizeof(*out));
    out->ranks = m != NULL ? m->ranks : 0;
  }
  if (m == NULL) return ATLAS_OK;
  // The workers first (idle between steps), then the communicator: it may
  // hold buffers on the backends, which the ranks' sweeps would otherwise
  // report.
  stop_workers(m);
  pthread_cond_destroy(&m->done_cv);
  pthread_cond_destroy(&m->work_cv);
  pthread_mutex_destroy(&m->work_mutex);
  atlas_status status = atlas_comm_destroy(m->comm);
  for (int r = 0; r < m->ranks; ++r) {
    atlas_teardown_report rep;
    memset(&rep, 0, sizeof(rep));
    if (m->models[r] != NULL) {
      status = atlas_status_join(
          status,
          atlas_status_annotate(atlas_decoder_model_unload(m->models[r], &rep),
                                "unloading rank %d of %d", r, m->ranks));
    }
    if (out != NULL) {
      out->rank[r] = rep;
      out->leaked[r] = rep.sweep.count - rep.sweep.refused_count;
    } else {
      atlas_sweep_result_free(&rep.sweep);
    }
    free(m->scratch_logits[r]);
  }
  for (int r = 0; r < m->ranks; ++r) {
    if (m->backends[r] == NULL) continue;
    status = atlas_status_join(
        status, atlas_status_annotate(atlas_backend_destroy(m->backends[r]),
                                      "destroying rank %d's backend", r));
  }
  free(m);
  return status;
}

void atlas_tp_unload_report_free(atlas_tp_unload_report *report) {
  if (report == NULL) return;
  for (int r = 0; r < report->ranks; ++r) {
    atlas_sweep_result_free(&report->rank[r].sweep);
  }
}
