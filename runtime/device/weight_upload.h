// Weight upload: host bytes (a checkpoint file in the page cache, read with
// pread, or a buffer in memory) to backend memory at the speed of the link.
//
// Several threads each own a stream and a few pinned staging buffers. A
// thread claims the next chunk, reads it from the file (pread, never mmap: a
// file that shrinks is an error naming it, not a SIGBUS) or copies it from
// memory into a free staging buffer (waiting on that buffer's event), scans
// it while it is hot in cache (content digest, NaN/Inf; weight_scan.h), and
// queues an async copy to the device; the copy engine drains while the
// threads fill. Staging is ledgered pinned memory, released before
// returning, success or not.
#ifndef ATLAS_RUNTIME_WEIGHT_UPLOAD_H_
#define ATLAS_RUNTIME_WEIGHT_UPLOAD_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/weight_scan.h"
#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_upload_job {
  void *dst;        // backend memory
  const void *src;  // host memory (pageable is fine); NULL: read from fd
  size_t bytes;
  const char *what;  // for error messages ("model.layers.3.mlp.up_proj.weight")
  int fd;            // with src NULL: pread bytes at file_offset from it
  uint64_t file_offset;
  const char *file;          // the file's path, for error messages
  atlas_scan_finite finite;  // refuse NaN/Inf of this encoding (NONE: don't)
  uint64_t *digest;          // non-NULL: the content digest is added here
} atlas_upload_job;

typedef struct atlas_upload_options {
  int threads;             // 0: min(16, online CPUs)
  size_t chunk_bytes;      // 0: 2 MiB (staging buffer size)
  int buffers_per_thread;  // 0: 3
  void (*progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
  void *progress_ctx;
  uint64_t progress_base, progress_total;  // progress reports base + done
  // Benchmarks only: skip the digest and NaN/Inf scan, to measure its cost.
  int skip_scan;
} atlas_upload_options;

// Copies every job; on failure the first error (naming the job) is
// returned after all threads stopped and all staging was freed. A job with
// a non-finite element fails naming the tensor, the file and the first such
// element (the lowest job, then the lowest index). Jobs that
// completed stay written. Makes and frees its staging: see the uploader
// below to keep staging across uploads.
ATLAS_MUST_USE atlas_status
atlas_upload_run(atlas_backend *backend, const atlas_upload_job *jobs,
                 size_t job_count, const atlas_upload_options *options);

// An uploader keeps its streams, events and pinned staging between uploads
// (pinning memory costs milliseconds per megabyte-batch; a server that swaps
// often pays it once). `staging_bytes_hint` caps the staging buffer size
// (0: options->chunk_bytes).
typedef struct atlas_uploader atlas_uploader;

ATLAS_MUST_USE atlas_status atlas_uploader_create(
    atlas_backend *backend, const atlas_upload_options *options,
    size_t staging_bytes_hint, atlas_uploader **out_uploader);
ATLAS_MUST_USE atlas_status atlas_uploader_run(atlas_uploader *uploader,
                                               const atlas_upload_job *jobs,
                                               size_t job_count);
ATLAS_MUST_USE atlas_status atlas_uploader_destroy(atlas_uploader *uploader);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_WEIGHT_UPLOAD_H_
