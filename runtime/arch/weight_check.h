// Checks weights where they landed: after an upload, the `weight_scan`
// kernel reads each tensor back on its backend (the GPU reads its own memory
// at TB/s, where a host pass over the staged bytes cost a fifth of the load
// time) for its content digest and its first NaN/Inf.
#ifndef ATLAS_RUNTIME_ARCH_WEIGHT_CHECK_H_
#define ATLAS_RUNTIME_ARCH_WEIGHT_CHECK_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/backend.h"
#include "atlas/runtime/device/weight_upload.h"

#ifdef __cplusplus
extern "C" {
#endif

// For every job already uploaded to `backend` (dst holds its bytes): adds
// the digest to *job->digest (when non-NULL) and, when job->finite is set,
// fails naming the tensor, the file and the first non-finite element (the
// lowest job, then the lowest index), as atlas_upload_run would have. The
// backend must have the `weight_scan` module (atlas_decoder_module_set has).
ATLAS_MUST_USE atlas_status atlas_weight_check_run(atlas_backend *backend,
                                                   const atlas_upload_job *jobs,
                                                   size_t job_count);

// The same check in two halves, so that it overlaps the next upload: begin
// launches the scans and returns; finish waits for them, adds the digests
// and names the first bad element (collect_results false: only releases,
// for an error path). Every begin that returned OK needs its finish.
typedef struct atlas_weight_check {
  atlas_backend *backend;
  const atlas_upload_job *jobs;  // borrowed until finish
  size_t count;
  uint64_t *host;  // per job: digest, first bad element (UINT64_MAX: none)
  void *dev;
} atlas_weight_check;
ATLAS_MUST_USE atlas_status
atlas_weight_check_begin(atlas_backend *backend, const atlas_upload_job *jobs,
                         size_t job_count, atlas_weight_check *out);
ATLAS_MUST_USE atlas_status atlas_weight_check_finish(atlas_weight_check *check,
                                                      bool collect_results);

// The same jobs for an upload that leaves the scan to atlas_weight_check_run
// (digest NULL, finite NONE), written to out[0..job_count).
void atlas_weight_check_strip(const atlas_upload_job *jobs, size_t job_count,
                              atlas_upload_job *out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_WEIGHT_CHECK_H_
