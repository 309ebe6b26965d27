// Hot swap with an up-front budget check and restore on failure.
#define _POSIX_C_SOURCE 200809L  // strdup, clock_gettime
#include "atlas/runtime/model/swap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/base/ledger.h"
#include "atlas/runtime/base/log.h"

// MemAvailable from /proc/meminfo (0 when unknown). procfs files report
// size 0, so this reads lines rather than a size.
static uint64_t host_available_bytes(void) {
  FILE *f = fopen("/proc/meminfo", "re");
  if (f == NULL) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    static const char kKey[] = "MemAvailable:";
    if (strncmp(line, kKey, sizeof(kKey) - 1) == 0) {
      kb = strtoull(line + sizeof(kKey) - 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return (uint64_t)kb * 1024u;
}

// A host copy of the old model's files, proven to hold the bytes it was
// loaded from: what makes "restored" true bit for bit even when the files are
// overwritten, truncated or deleted during the swap.
static atlas_status snapshot_old(const atlas_model *old,
                                 const atlas_model_spec *next,
                                 atlas_checkpoint **out) {
  *out = NULL;
  const atlas_checkpoint *ck = atlas_model_checkpoint(old);
  if (ck == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "the old model keeps no source for its weights");
  }
  uint64_t need = atlas_checkpoint_file_bytes(ck);
  uint64_t limit = next->snapshot_limit_bytes != 0 ? next->snapshot_limit_bytes
                                                   : host_available_bytes();
  if (need > limit) {
    char a[32], b[32];
    atlas_format_bytes(need, a, sizeof(a));
    atlas_format_bytes(limit, b, sizeof(b));
    return atlas_status_make(ATLAS_STATUS_RESOURCE_EXHAUSTED,
                             "a host copy of its files needs %s but only %s "
                             "of host memory is available",
                             a, b);
  }
  return atlas_checkpoint_snapshot(ck, out);
}

static char *dup_or_null(const char *s) { return s != NULL ? strdup(s) : NULL; }

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

// Closes a model, turning a non-empty sweep into an error: a swap must not
// leave bytes behind, and must say so if it would.
static atlas_status close_clean(atlas_model *model) {
  atlas_teardown_report report;
  atlas_status status = atlas_model_close(model, &report);
  if (report.sweep.count > 0) {
    status = atlas_status_join(
        status,
        atlas_status_make(ATLAS_STATUS_INTERNAL,
                          "teardown left %zu allocations (%zu bytes) "
                          "that the sweep had to free:\n%s",
                          report.sweep.count, report.sweep.bytes,
                          report.sweep.sites ? report.sweep.sites : ""));
  }
  atlas_sweep_result_free(&report.sweep);
  return status;
}

// Opens the new model and proves it serves: one forward step (token 0, no
// new tokens) launches its kernels and checks its logits are finite, so a
// model that loads but cannot run fails inside the swap, while the old one
// can still be kept or restored, and never after "now serving". Generation
// starts from position 0 every time, so this leaves nothing behind.
static atlas_status open_proven(const atlas_model_spec *next,
                                atlas_model **out) {
  *out = NULL;
  atlas_model *fresh = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_model_open(next, &fresh));
  const uint32_t token = 0;
  uint32_t unused = 0;
  double t0 = now_ms();
  atlas_status status =
      atlas_model_generate(fresh, &token, 1, 0, &unused, NULL, NULL, NULL);
  atlas_log(&next->log, ATLAS_LOG_DEBUG, "swap: the proving step took %.1f ms",
            now_ms() - t0);
  if (status != ATLAS_OK) {
    return atlas_status_join(
        atlas_status_annotate(status,
                              "the new model loaded but its first "
                              "forward step failed"),
        close_clean(fresh));
  }
  *out = fresh;
  return ATLAS_OK;
}

atlas_status atlas_model_swap(atlas_model **current,
                              const atlas_model_spec *next,
                              atlas_swap_report *out_report) {
  atlas_swap_report local = {
      ATLAS_SWAP_REFUSED, 0, 0, 0, false, false, 0, 0, 0};
  atlas_swap_report *r = out_report != NULL ? out_report : &local;
  memset(r, 0, sizeof(*r));
  double t0 = now_ms();
  atlas_model *old = *current;
  if (old == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "swap: there is no current model");
  }
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      atlas_model_required_bytes(next, &r->needed_bytes), "swap: sizing %s",
      next->dir ? next->dir : (next->embedded ? next->embedded->name : "?")));
  atlas_backend *ob = atlas_model_backend(old);
  size_t free_bytes = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_status_annotate(atlas_backend_device_free_memory(ob, &free_bytes),
                            "swap: reading free device memory"));
  r->releasable_bytes = atlas_backend_live_bytes(ob);
  uint64_t budget = next->device_budget_bytes;
  if (budget != 0) {
    // Within a budget, what is free is the budget less what the current
    // model holds (and never more than the device really has).
    uint64_t left =
        budget > r->releasable_bytes ? budget - r->releasable_bytes : 0;
    if (left < free_bytes) free_bytes = (size_t)left;
  }
  r->free_bytes = free_bytes;
  char need[32], have[32], rel[32], avail[32];
  atlas_format_bytes(r->needed_bytes, need, sizeof(need));
  atlas_format_bytes(r->free_bytes, have, sizeof(have));
  atlas_format_bytes(r->releasable_bytes, rel, sizeof(rel));
  atlas_format_bytes(r->free_bytes + r->releasable_bytes, avail, sizeof(avail));
  if (r->needed_bytes > r->free_bytes + r->releasable_bytes) {
    r->path = ATLAS_SWAP_REFUSED;
    return atlas_status_make(
        ATLAS_STATUS_RESOURCE_EXHAUSTED,
        "swap refused before touching anything: the new model needs %s but "
        "only %s can be made available (%s free on the device + %s the "
        "current model %s would release); still serving %s",
        need, avail, have, rel, atlas_model_name(old), atlas_model_name(old));
  }

  atlas_model *fresh = NULL;
  if (r->needed_bytes <= r->free_bytes) {
    // Both fit: the old model serves until the new one is ready.
    r->path = ATLAS_SWAP_SIDE_BY_SIDE;
    double tl = now_ms();
    atlas_status status = open_proven(next, &fresh);
    r->load_ms = now_ms() - tl;
    if (status != ATLAS_OK) {
      r->total_ms = now_ms() - t0;
      return atlas_status_annotate(status,
                                   "swap failed; the old model %s was never "
                                   "unloaded and is still serving",
                                   atlas_model_name(old));
    }
    double tt = now_ms();
    status = close_clean(old);
    r->teardown_ms = now_ms() - tt;
    *current = fresh;
    r->swapped = true;
    r->total_ms = now_ms() - t0;
    return atlas_status_annotate(status,
                                 "swap done, but tearing down the old "
                                 "model reported");
  }

  // Only one fits: the old model must go first. Its weights come back, if
  // the new one fails, from a host copy of its files checked against what
  // was loaded; without one the swap is refused now.
  atlas_checkpoint *snapshot = NULL;
  atlas_status snap = snapshot_old(old, next, &snapshot);
  if (snap != ATLAS_OK) {
    r->path = ATLAS_SWAP_REFUSED;
    r->total_ms = now_ms() - t0;
    return atlas_status_annotate(
        snap,
        "swap refused before touching anything: only one model fits (the new "
        "model needs %s, %s is free), so the current model %s would be torn "
        "down first, and it could not be restored bit for bit if the new one "
        "failed; still serving %s",
        need, have, atlas_model_name(old), atlas_model_name(old));
  }
  r->path = ATLAS_SWAP_REPLACE;
  atlas_model_spec old_spec = *atlas_model_spec_of(old);
  // The old model's row, parsed config and EOS ids outlive its close: the
  // restore reads nothing from the files.
  const atlas_arch *old_arch = atlas_model_arch(old);
  atlas_eos old_eos = *atlas_model_eos(old);
  void *old_config = malloc(old_arch->config_size);
  if (old_config != NULL) {
    memcpy(old_config, atlas_model_config(old), old_arch->config_size);
  }
  // The model owns its strings; keep copies past its close. The new spec's
  // may point into the old model too (a caller passing its own spec back,
  // or atlas_model_info's name).
  char *old_dir = dup_or_null(old_spec.dir);
  char *old_backend = dup_or_null(old_spec.backend);
  atlas_model_spec fresh_spec = *next;
  char *next_dir = dup_or_null(next->dir);
  char *next_backend = dup_or_null(next->backend);
  if (old_config == NULL || (old_spec.dir != NULL && old_dir == NULL) ||
      (old_spec.backend != NULL && old_backend == NULL) ||
      (next->dir != NULL && next_dir == NULL) ||
      (next->backend != NULL && next_backend == NULL)) {
    atlas_checkpoint_close(snapshot);
    free(old_config);
    free(old_dir);
    free(old_backend);
    free(next_dir);
    free(next_backend);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "swap: out of host memory; nothing was changed");
  }
  old_spec.dir = old_dir;
  old_spec.backend = old_backend;
  old_spec.adopt_checkpoint = snapshot;
  old_spec.adopt_arch = old_arch;
  old_spec.adopt_config = old_config;
  old_spec.adopt_eos = &old_eos;
  old_spec.ignore_env_fault = true;
  // A restore never re-injects the new model's fault; a test may fail it on
  // purpose (fail_restore) to see a swap end with no model.
  old_spec.fault_kind = ATLAS_FAULT_ALLOC;
  old_spec.fault_at = next->fail_restore ? 1 : 0;
  old_spec.fail_module_load_at = 0;
  fresh_spec.dir = next_dir;
  fresh_spec.backend = next_backend;
  double tt = now_ms();
  atlas_status teardown = close_clean(old);
  r->teardown_ms = now_ms() - tt;
  *current = NULL;
  if (next->after_teardown != NULL)
    next->after_teardown(next->after_teardown_ctx);
  double tl = now_ms();
  atlas_status status = open_proven(&fresh_spec, &fresh);
  r->load_ms = now_ms() - tl;
  free(next_dir);  // the model keeps copies of its own
  free(next_backend);
  if (status == ATLAS_OK) {
    *current = fresh;
    r->swapped = true;
    atlas_checkpoint_close(snapshot);
    free(old_config);
    free(old_dir);
    free(old_backend);
    r->total_ms = now_ms() - t0;
    return atlas_status_annotate(teardown,
                                 "swap done, but tearing down the "
                                 "old model reported");
  }
  // The failed load reclaimed what it allocated; bring the old model back
  // from the snapshot (the model adopts it and keeps it as its source).
  atlas_model *restored = NULL;
  atlas_status restore = atlas_model_open(&old_spec, &restored);
  const char *old_name =
      old_dir ? old_dir : (old_spec.embedded ? old_spec.embedded->name : "?");
  if (restore == ATLAS_OK) {
    *current = restored;
    r->restored = true;
    status = atlas_status_annotate(status,
                                   "swap failed; the old model %s was "
                                   "restored and is serving (from a "
                                   "host copy of the bytes it was "
                                   "loaded from: the same weights, bit "
                                   "for bit)",
                                   old_name);
  } else {
    status = atlas_status_join(
        atlas_status_annotate(status, "swap failed"),
        atlas_status_annotate(restore,
                              "restoring the old model %s also failed; "
                              "no model is loaded",
                              old_name));
  }
  free(old_config);
  free(old_dir);
  free(old_backend);
  r->total_ms = now_ms() - t0;
  return atlas_status_join(status, teardown);
}
