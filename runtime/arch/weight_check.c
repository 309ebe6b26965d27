// Weight scan on the backend that holds the weights (see weight_check.h).
#include "atlas/runtime/arch/weight_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/base/weight_scan.h"

static bool wanted(const atlas_upload_job *job) {
  return job->bytes != 0 &&
         (job->digest != NULL || job->finite != ATLAS_SCAN_FINITE_NONE);
}

void atlas_weight_check_strip(const atlas_upload_job *jobs, size_t job_count,
                              atlas_upload_job *out) {
  for (size_t i = 0; i < job_count; ++i) {
    out[i] = jobs[i];
    out[i].digest = NULL;
    out[i].finite = ATLAS_SCAN_FINITE_NONE;
  }
}

// Launches the scan of every wanted job into results (digest, first bad).
static atlas_status launch_all(atlas_backend *b, const atlas_kernel *kernel,
                               const atlas_upload_job *jobs, size_t n,
                               uint64_t *results) {
  int sms = 0;
  ATLAS_RETURN_IF_ERROR(atlas_backend_sm_count(b, &sms));
  if (sms < 1) sms = 1;
  for (size_t i = 0; i < n; ++i) {
    if (!wanted(&jobs[i])) continue;
    // 8 warps a CTA, a warp a 4 KiB block; at most 8 CTAs an SM, striding.
    uint64_t blocks =
        (jobs[i].bytes + ATLAS_SCAN_BLOCK_BYTES - 1) / ATLAS_SCAN_BLOCK_BYTES;
    uint64_t ctas = (blocks + 7) / 8, cap = 8 * (uint64_t)sms;
    atlas_launch_config config = {{(uint32_t)(ctas < cap ? ctas : cap), 1, 1},
                                  {ATLAS_WEIGHT_SCAN_BLOCK, 1, 1},
                                  0,
                                  NULL,
                                  false};
    atlas_arg args[] = {ATLAS_ARG_PTR(jobs[i].dst),
                        ATLAS_ARG_I64((int64_t)jobs[i].bytes),
                        ATLAS_ARG_U32((uint32_t)jobs[i].finite),
                        ATLAS_ARG_PTR(results + 2 * i)};
    ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
        atlas_backend_launch_typed(b, kernel, &config, args, 4), "scanning %s",
        jobs[i].what ? jobs[i].what : "weights"));
  }
  return ATLAS_OK;
}

// Reads results back, adds digests, and names the first bad element.
static atlas_status collect(atlas_backend *b, const atlas_upload_job *jobs,
                            size_t n, const uint64_t *dev, uint64_t *host) {
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_d2h(b, host, dev, 2 * n * sizeof(uint64_t)));
  for (size_t i = 0; i < n; ++i) {
    if (wanted(&jobs[i]) && jobs[i].digest != NULL)
      *jobs[i].digest += host[2 * i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (!wanted(&jobs[i]) || jobs[i].finite == ATLAS_SCAN_FINITE_NONE ||
        host[2 * i + 1] == UINT64_MAX) {
      continue;
    }
    size_t elem = atlas_scan_finite_bytes(jobs[i].finite);
    unsigned char value[4] = {0, 0, 0, 0};
    ATLAS_RETURN_IF_ERROR(atlas_backend_d2h(
        b, value, (const char *)jobs[i].dst + host[2 * i + 1] * elem, elem));
    return atlas_scan_refuse(jobs[i].file, jobs[i].what, host[2 * i + 1],
                             atlas_scan_is_nan(value, jobs[i].finite));
  }
  return ATLAS_OK;
}

atlas_status atlas_weight_check_begin(atlas_backend *b,
                                      const atlas_upload_job *jobs,
                                      size_t job_count,
                                      atlas_weight_check *out) {
  *out = (atlas_weight_check){b, jobs, job_count, NULL, NULL};
  size_t wanted_count = 0;
  for (size_t i = 0; i < job_count; ++i) wanted_count += wanted(&jobs[i]);
  if (wanted_count == 0) return ATLAS_OK;
  const atlas_kernel *kernel = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      atlas_backend_kernel_lookup(b, ATLAS_WEIGHT_SCAN_MODULE,
                                  ATLAS_WEIGHT_SCAN_KERNEL, &kernel),
      "checking the uploaded weights"));
  if (job_count > SIZE_MAX / (2 * sizeof(uint64_t))) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "weight check: %zu tensors", job_count);
  }
  size_t bytes = 2 * job_count * sizeof(uint64_t);
  out->host = malloc(bytes);
  if (out->host == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "weight check: no host memory for %zu results",
                             job_count);
  }
  for (size_t i = 0; i < job_count; ++i) {
    out->host[2 * i] = 0;
    out->host[2 * i + 1] = UINT64_MAX;
  }
  atlas_status status = atlas_backend_alloc(b, bytes, &out->dev);
  if (status == ATLAS_OK)
    status = atlas_backend_h2d(b, out->dev, out->host, bytes);
  if (status == ATLAS_OK)
    status = launch_all(b, kernel, jobs, job_count, out->dev);
  if (status != ATLAS_OK) {
    // Nothing to collect: release now (finish then has nothing to do).
    status = atlas_status_join(status, atlas_weight_check_finish(out, false));
  }
  return status;
}

atlas_status atlas_weight_check_finish(atlas_weight_check *c,
                                       bool collect_results) {
  atlas_status status = ATLAS_OK;
  if (collect_results && c->dev != NULL) {
    status = collect(c->backend, c->jobs, c->count, c->dev, c->host);
  }
  if (c->dev != NULL) {
    status = atlas_status_join(status, atlas_backend_free(c->backend, c->dev));
  }
  free(c->host);
  c->dev = NULL;
  c->host = NULL;
  return status;
}

atlas_status atlas_weight_check_run(atlas_backend *b,
                                    const atlas_upload_job *jobs,
                                    size_t job_count) {
  atlas_weight_check c;
  ATLAS_RETURN_IF_ERROR(atlas_weight_check_begin(b, jobs, job_count, &c));
  return atlas_weight_check_finish(&c, true);
}
