// Multi-threaded staged upload (see weight_upload.h).
#include "runtime/model/weight_upload.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kMaxThreads = 32, kMaxBuffers = 8 };

typedef struct chunk {
  size_t job;
  size_t offset;
  size_t bytes;
} chunk;

typedef struct shared {
  atlas_backend *backend;
  const atlas_upload_job *jobs;
  chunk *chunks;
  size_t chunk_count;
  size_t next;             // next chunk to claim (atomic)
  uint64_t done_bytes;     // (atomic)
  pthread_mutex_t mutex;   // guards error
  atlas_status error;      // first failure
  int failed;              // (atomic) stop claiming
  const atlas_upload_options *options;
  size_t staging_bytes;
  int buffers;
} shared;

typedef struct worker {
  shared *sh;
  int index;
  atlas_status status;  // setup/teardown failures of this worker
} worker;

static void fail(shared *sh, atlas_status status) {
  pthread_mutex_lock(&sh->mutex);
  if (sh->error == ATLAS_OK) {
    sh->error = status;
  } else {
    atlas_status_free(status);
  }
  pthread_mutex_unlock(&sh->mutex);
  __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
}

// Fills staging buffers and queues copies until no chunk is left.
static atlas_status pump(shared *sh, atlas_stream *stream, void **staging,
                         atlas_event **events, bool is_reporter) {
  size_t round = 0;
  for (;;) {
    if (__atomic_load_n(&sh->failed, __ATOMIC_RELAXED)) return ATLAS_OK;
    size_t i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
    if (i >= sh->chunk_count) return ATLAS_OK;
    const chunk *c = &sh->chunks[i];
    const atlas_upload_job *job = &sh->jobs[c->job];
    int slot = (int)(round++ % (size_t)sh->buffers);
    if (round > (size_t)sh->buffers) {
      // The copy that last read this buffer must be done before refilling.
      ATLAS_RETURN_IF_ERROR(atlas_backend_event_synchronize(sh->backend, events[slot]));
    }
    memcpy(staging[slot], (const char *)job->src + c->offset, c->bytes);
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
        atlas_backend_h2d_async_retained(sh->backend,
                                         (char *)job->dst + c->offset,
                                         staging[slot], c->bytes, stream),
        "uploading %s", job->what ? job->what : "weights"));
    ATLAS_RETURN_IF_ERROR(atlas_backend_event_record(sh->backend, events[slot], stream));
    uint64_t done = __atomic_add_fetch(&sh->done_bytes, c->bytes, __ATOMIC_RELAXED);
    const atlas_upload_options *o = sh->options;
    if (is_reporter && o->progress != NULL) {
      o->progress(o->progress_ctx, o->progress_base + done, o->progress_total);
    }
  }
}

static void *run_worker(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  atlas_backend *b = sh->backend;
  atlas_stream *stream = NULL;
  void *staging[kMaxBuffers] = {0};
  atlas_event *events[kMaxBuffers] = {0};
  atlas_status status = atlas_backend_bind_to_thread(b);
  if (status == ATLAS_OK) status = atlas_backend_stream_create(b, &stream);
  for (int k = 0; status == ATLAS_OK && k < sh->buffers; ++k) {
    status = atlas_backend_pinned_alloc(b, sh->staging_bytes, &staging[k]);
    if (status == ATLAS_OK) status = atlas_backend_event_create(b, &events[k]);
  }
  if (status == ATLAS_OK) status = pump(sh, stream, staging, events, w->index == 0);
  if (status != ATLAS_OK) fail(sh, status);
  // Teardown always runs: drain the stream before the staging goes away.
  atlas_status cleanup = ATLAS_OK;
  if (stream != NULL) {
    cleanup = atlas_status_join(cleanup, atlas_backend_stream_synchronize(b, stream));
  }
  for (int k = 0; k < sh->buffers; ++k) {
    if (events[k] != NULL) {
      cleanup = atlas_status_join(cleanup, atlas_backend_event_destroy(b, events[k]));
    }
    if (staging[k] != NULL) {
      cleanup = atlas_status_join(cleanup, atlas_backend_pinned_free(b, staging[k]));
    }
  }
  if (stream != NULL) {
    cleanup = atlas_status_join(cleanup, atlas_backend_stream_destroy(b, stream));
  }
  w->status = cleanup;
  return NULL;
}

static int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > 8 ? 8 : (int)n;
}

atlas_status atlas_upload_run(atlas_backend *backend,
                              const atlas_upload_job *jobs, size_t job_count,
                              const atlas_upload_options *options) {
  atlas_upload_options defaults;
  memset(&defaults, 0, sizeof(defaults));
  if (options == NULL) options = &defaults;
  size_t chunk_bytes = options->chunk_bytes ? options->chunk_bytes : (32u << 20);
  size_t total = 0, largest = 0, count = 0;
  for (size_t j = 0; j < job_count; ++j) {
    total += jobs[j].bytes;
    if (jobs[j].bytes > largest) largest = jobs[j].bytes;
    count += (jobs[j].bytes + chunk_bytes - 1) / chunk_bytes;
  }
  if (count == 0) return ATLAS_OK;
  // Small uploads get small staging: never more than the biggest job.
  size_t staging_bytes = largest < chunk_bytes ? largest : chunk_bytes;
  chunk *chunks = malloc(count * sizeof(chunk));
  if (chunks == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "upload: cannot plan %zu chunks", count);
  }
  size_t k = 0;
  for (size_t j = 0; j < job_count; ++j) {
    for (size_t off = 0; off < jobs[j].bytes; off += chunk_bytes) {
      size_t left = jobs[j].bytes - off;
      chunks[k++] = (chunk){j, off, left < chunk_bytes ? left : chunk_bytes};
    }
  }
  int threads = options->threads > 0 ? options->threads : default_threads();
  if (threads > kMaxThreads) threads = kMaxThreads;
  if ((size_t)threads > count) threads = (int)count;
  int buffers = options->buffers_per_thread > 0 ? options->buffers_per_thread : 2;
  if (buffers > kMaxBuffers) buffers = kMaxBuffers;
  shared sh = {backend, jobs, chunks, count, 0, 0, PTHREAD_MUTEX_INITIALIZER,
               ATLAS_OK, 0, options, staging_bytes, buffers};
  worker workers[kMaxThreads];
  pthread_t tids[kMaxThreads];
  int started = 1;  // worker 0 is this thread
  for (int t = 0; t < threads; ++t) workers[t] = (worker){&sh, t, ATLAS_OK};
  for (int t = 1; t < threads; ++t) {
    if (pthread_create(&tids[t], NULL, run_worker, &workers[t]) != 0) break;
    started++;
  }
  run_worker(&workers[0]);
  for (int t = 1; t < started; ++t) pthread_join(tids[t], NULL);
  atlas_status status = sh.error;
  for (int t = 0; t < started; ++t) status = atlas_status_join(status, workers[t].status);
  pthread_mutex_destroy(&sh.mutex);
  free(chunks);
  return status;
}
