// Multi-threaded staged upload (see weight_upload.h).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/device/weight_upload.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atlas/runtime/base/file_read.h"

enum { kMaxThreads = 32, kMaxBuffers = 8 };

typedef struct chunk {
  size_t job;
  size_t offset;
  size_t bytes;
} chunk;

// What one thread owns for the life of the uploader.
typedef struct lane {
  atlas_stream *stream;
  void *staging[kMaxBuffers];
  atlas_event *events[kMaxBuffers];
  size_t used;  // buffers filled so far (the next refill waits on its event)
} lane;

struct atlas_uploader {
  atlas_backend *backend;
  atlas_upload_options options;
  int threads, buffers;
  size_t staging_bytes;
  lane lanes[kMaxThreads];
};

typedef struct run_state {
  atlas_uploader *u;
  const atlas_upload_job *jobs;
  chunk *chunks;
  size_t chunk_count;
  size_t next;            // next chunk to claim (atomic)
  uint64_t done_bytes;    // (atomic)
  pthread_mutex_t mutex;  // guards error and the first non-finite element
  atlas_status error;     // first failure
  int failed;             // (atomic) stop claiming
  size_t bad_job;         // lowest job with a non-finite element (or count)
  uint64_t bad_index;     // its lowest such element
  int bad_is_nan;
  uint64_t reported;  // the last done_bytes lane 0 reported
} run_state;

typedef struct worker {
  run_state *rs;
  int index;
} worker;

static void fail(run_state *rs, atlas_status status) {
  pthread_mutex_lock(&rs->mutex);
  if (rs->error == ATLAS_OK) {
    rs->error = status;
  } else {
    atlas_status_free(status);
  }
  pthread_mutex_unlock(&rs->mutex);
  __atomic_store_n(&rs->failed, 1, __ATOMIC_RELAXED);
}

// Reads `bytes` at `offset` of a file job straight into staging.
static atlas_status read_piece(const atlas_upload_job *job, uint64_t offset,
                               size_t bytes, void *dst) {
  size_t done = 0;
  uint64_t at = job->file_offset + offset;
  while (done < bytes) {
    ssize_t n =
        pread(job->fd, (char *)dst + done, bytes - done, (off_t)(at + done));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      char text[ATLAS_STRERROR_BYTES];
      return atlas_status_make(ATLAS_STATUS_IO, "%s: reading %s: %s",
                               job->file ? job->file : "?",
                               job->what ? job->what : "weights",
                               atlas_strerror(errno, text, sizeof(text)));
    }
    if (n == 0) {
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: the file ended at byte %llu while reading %s (bytes %llu..%llu):"
          " it changed size during the load",
          job->file ? job->file : "?", (unsigned long long)(at + done),
          job->what ? job->what : "weights", (unsigned long long)at,
          (unsigned long long)(at + bytes));
    }
    done += (size_t)n;
  }
  return ATLAS_OK;
}

// Digest and NaN/Inf scan of `bytes` staged at `staged`, which hold the
// job's bytes from `offset` (a multiple of ATLAS_SCAN_BLOCK_BYTES).
static void scan_piece(run_state *rs, size_t job_index, uint64_t offset,
                       size_t bytes, const void *staged) {
  const atlas_upload_job *job = &rs->jobs[job_index];
  if (job->digest == NULL && job->finite == ATLAS_SCAN_FINITE_NONE) return;
  uint64_t first_bad = UINT64_MAX;
  uint64_t d =
      atlas_weight_scan(staged, bytes, offset, job->finite, &first_bad);
  if (job->digest != NULL) __atomic_add_fetch(job->digest, d, __ATOMIC_RELAXED);
  if (first_bad == UINT64_MAX) return;
  size_t elem = atlas_scan_finite_bytes(job->finite);
  const unsigned char *p =
      (const unsigned char *)staged + (first_bad * elem - offset);
  pthread_mutex_lock(&rs->mutex);
  if (job_index < rs->bad_job ||
      (job_index == rs->bad_job && first_bad < rs->bad_index)) {
    rs->bad_job = job_index;
    rs->bad_index = first_bad;
    rs->bad_is_nan = atlas_scan_is_nan(p, job->finite);
  }
  pthread_mutex_unlock(&rs->mutex);
}

// Bytes read (or copied) and then scanned at a time: small enough that the
// scan reads them from the core's cache. Scanning a whole 2 MiB chunk after
// pread read it back from memory and cut the pread path from 46 to 20 GB/s
// on the H200 machine; mmap + memcpy + scan, piece by piece, kept 49.
enum { kScanPiece = 64 * (int)ATLAS_SCAN_BLOCK_BYTES };

// Fills staging with a chunk piece by piece, scanning each piece while it is
// in cache.
static atlas_status stage_chunk(run_state *rs, const chunk *c, void *staging) {
  const atlas_upload_job *job = &rs->jobs[c->job];
  bool scan = !rs->u->options.skip_scan;
  for (size_t at = 0; at < c->bytes; at += kScanPiece) {
    size_t n = c->bytes - at < kScanPiece ? c->bytes - at : kScanPiece;
    char *dst = (char *)staging + at;
    if (job->src != NULL) {
      memcpy(dst, (const char *)job->src + c->offset + at, n);
    } else {
      ATLAS_RETURN_IF_ERROR(read_piece(job, c->offset + at, n, dst));
    }
    if (scan) scan_piece(rs, c->job, c->offset + at, n, dst);
  }
  return ATLAS_OK;
}

// Fills staging buffers and queues copies until no chunk is left.
static atlas_status pump(run_state *rs, lane *l, bool is_reporter) {
  atlas_uploader *u = rs->u;
  for (;;) {
    if (__atomic_load_n(&rs->failed, __ATOMIC_RELAXED)) return ATLAS_OK;
    size_t i = __atomic_fetch_add(&rs->next, 1, __ATOMIC_RELAXED);
    if (i >= rs->chunk_count) return ATLAS_OK;
    const chunk *c = &rs->chunks[i];
    const atlas_upload_job *job = &rs->jobs[c->job];
    int slot = (int)(l->used % (size_t)u->buffers);
    if (l->used >= (size_t)u->buffers) {
      // The copy that last read this buffer must be done before refilling.
      ATLAS_RETURN_IF_ERROR(
          atlas_backend_event_synchronize(u->backend, l->events[slot]));
    }
    l->used++;
    ATLAS_RETURN_IF_ERROR(stage_chunk(rs, c, l->staging[slot]));
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
        atlas_backend_h2d_async_retained(u->backend,
                                         (char *)job->dst + c->offset,
                                         l->staging[slot], c->bytes, l->stream),
        "uploading %s", job->what ? job->what : "weights"));
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_event_record(u->backend, l->events[slot], l->stream));
    uint64_t done =
        __atomic_add_fetch(&rs->done_bytes, c->bytes, __ATOMIC_RELAXED);
    const atlas_upload_options *o = &u->options;
    if (is_reporter && o->progress != NULL) {
      o->progress(o->progress_ctx, o->progress_base + done, o->progress_total);
      rs->reported = done;
    }
  }
}

static void *run_worker(void *arg) {
  worker *w = arg;
  run_state *rs = w->rs;
  lane *l = &rs->u->lanes[w->index];
  atlas_status status = atlas_backend_bind_to_thread(rs->u->backend);
  if (status == ATLAS_OK) status = pump(rs, l, w->index == 0);
  // Drain this lane before the run ends: the caller may free the sources.
  status = atlas_status_join(
      status, atlas_backend_stream_synchronize(rs->u->backend, l->stream));
  if (status != ATLAS_OK) fail(rs, status);
  return NULL;
}

// min(16, online CPUs): with the NaN/Inf + digest scan on, 16 threads x
// 2 MiB (kept staging) measured 49.4 GB/s on the H200 machine against 27.6
// with 8 (docs/PERFORMANCE.md); without the scan 8 threads were enough.
static int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > 16 ? 16 : (int)n;
}

atlas_status atlas_uploader_destroy(atlas_uploader *u) {
  if (u == NULL) return ATLAS_OK;
  atlas_backend *b = u->backend;
  atlas_status status = ATLAS_OK;
  for (int t = 0; t < u->threads; ++t) {
    lane *l = &u->lanes[t];
    if (l->stream != NULL) {
      status = atlas_status_join(
          status, atlas_backend_stream_synchronize(b, l->stream));
    }
    for (int k = 0; k < u->buffers; ++k) {
      if (l->events[k] != NULL) {
        status = atlas_status_join(
            status, atlas_backend_event_destroy(b, l->events[k]));
      }
      if (l->staging[k] != NULL) {
        status = atlas_status_join(status,
                                   atlas_backend_pinned_free(b, l->staging[k]));
      }
    }
    if (l->stream != NULL) {
      status =
          atlas_status_join(status, atlas_backend_stream_destroy(b, l->stream));
    }
  }
  free(u);
  return status;
}

atlas_status atlas_uploader_create(atlas_backend *backend,
                                   const atlas_upload_options *options,
                                   size_t staging_bytes_hint,
                                   atlas_uploader **out_uploader) {
  *out_uploader = NULL;
  atlas_uploader *u = calloc(1, sizeof(*u));
  if (u == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "upload: cannot allocate an uploader");
  }
  u->backend = backend;
  if (options != NULL) u->options = *options;
  // Defaults measured on an H200 (docs/PERFORMANCE.md): 2 MiB chunks beat
  // larger chunks (less to pin); threads: default_threads.
  if (u->options.chunk_bytes == 0) u->options.chunk_bytes = 2u << 20;
  u->staging_bytes = u->options.chunk_bytes;
  if (staging_bytes_hint != 0 && staging_bytes_hint < u->staging_bytes) {
    u->staging_bytes = staging_bytes_hint;
  }
  // Chunks start at multiples of the staging size within a job; digests
  // need them at multiples of the scan block.
  u->staging_bytes = (u->staging_bytes + ATLAS_SCAN_BLOCK_BYTES - 1) /
                     ATLAS_SCAN_BLOCK_BYTES * ATLAS_SCAN_BLOCK_BYTES;
  u->threads = u->options.threads > 0 ? u->options.threads : default_threads();
  if (u->threads > kMaxThreads) u->threads = kMaxThreads;
  u->buffers =
      u->options.buffers_per_thread > 0 ? u->options.buffers_per_thread : 3;
  if (u->buffers > kMaxBuffers) u->buffers = kMaxBuffers;
  atlas_status status = ATLAS_OK;
  for (int t = 0; status == ATLAS_OK && t < u->threads; ++t) {
    lane *l = &u->lanes[t];
    status = atlas_backend_stream_create(backend, &l->stream);
    for (int k = 0; status == ATLAS_OK && k < u->buffers; ++k) {
      status =
          atlas_backend_pinned_alloc(backend, u->staging_bytes, &l->staging[k]);
      if (status == ATLAS_OK)
        status = atlas_backend_event_create(backend, &l->events[k]);
    }
  }
  if (status != ATLAS_OK) {
    return atlas_status_join(
        atlas_status_annotate(status, "upload: preparing staging"),
        atlas_uploader_destroy(u));
  }
  *out_uploader = u;
  return ATLAS_OK;
}

atlas_status atlas_uploader_run(atlas_uploader *u, const atlas_upload_job *jobs,
                                size_t job_count) {
  size_t chunk_bytes = u->staging_bytes;
  size_t count = 0;
  for (size_t j = 0; j < job_count; ++j) {
    if (jobs[j].src == NULL && jobs[j].bytes != 0 && jobs[j].fd < 0) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "upload: job %s has neither a source buffer "
                               "nor a file",
                               jobs[j].what ? jobs[j].what : "?");
    }
    count += jobs[j].bytes / chunk_bytes + (jobs[j].bytes % chunk_bytes != 0);
  }
  if (count == 0) return ATLAS_OK;
  if (count > SIZE_MAX / sizeof(chunk)) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "upload: %zu chunks cannot be planned", count);
  }
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
  int threads = u->threads;
  if ((size_t)threads > count) threads = (int)count;
  if (threads < 1) threads = 1;
  run_state rs = {
      u,        jobs, chunks,    count, 0, 0, PTHREAD_MUTEX_INITIALIZER,
      ATLAS_OK, 0,    job_count, 0,     0, 0};
  worker workers[kMaxThreads];
  pthread_t tids[kMaxThreads];
  memset(workers, 0, sizeof(workers));
  int started = 1;  // worker 0 is this thread
  for (int t = 0; t < threads; ++t) {
    workers[t] = (worker){&rs, t};
    u->lanes[t].used = 0;
  }
  for (int t = 1; t < threads; ++t) {
    if (pthread_create(&tids[t], NULL, run_worker, &workers[t]) != 0) break;
    started++;
  }
  run_worker(&workers[0]);
  for (int t = 1; t < started; ++t) pthread_join(tids[t], NULL);
  pthread_mutex_destroy(&rs.mutex);
  free(chunks);
  // Lane 0 reports what it sees; the others may finish after its last
  // chunk, so the run's end is reported here (one thread, in order).
  const atlas_upload_options *o = &u->options;
  if (rs.error == ATLAS_OK && o->progress != NULL &&
      rs.reported != rs.done_bytes) {
    o->progress(o->progress_ctx, o->progress_base + rs.done_bytes,
                o->progress_total);
  }
  if (rs.error == ATLAS_OK && rs.bad_job < job_count) {
    const atlas_upload_job *job = &jobs[rs.bad_job];
    return atlas_scan_refuse(job->file, job->what, rs.bad_index, rs.bad_is_nan);
  }
  return rs.error;
}

atlas_status atlas_upload_run(atlas_backend *backend,
                              const atlas_upload_job *jobs, size_t job_count,
                              const atlas_upload_options *options) {
  size_t largest = 0, total_chunks = 0;
  size_t chunk = options != NULL && options->chunk_bytes ? options->chunk_bytes
                                                         : (2u << 20);
  for (size_t j = 0; j < job_count; ++j) {
    if (jobs[j].bytes > largest) largest = jobs[j].bytes;
    total_chunks += jobs[j].bytes / chunk + (jobs[j].bytes % chunk != 0);
  }
  if (total_chunks == 0) return ATLAS_OK;
  atlas_upload_options o;
  memset(&o, 0, sizeof(o));
  if (options != NULL) o = *options;
  // Never more lanes than chunks, nor staging larger than the biggest job.
  int threads = o.threads > 0 ? o.threads : default_threads();
  if ((size_t)threads > total_chunks) threads = (int)total_chunks;
  o.threads = threads;
  atlas_uploader *u = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_uploader_create(backend, &o, largest, &u));
  if (u == NULL) {
    return atlas_status_make(ATLAS_STATUS_INTERNAL, "upload: no uploader made");
  }
  atlas_status status = atlas_uploader_run(u, jobs, job_count);
  return atlas_status_join(status, atlas_uploader_destroy(u));
}
