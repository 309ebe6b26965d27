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

// The words a refusal quotes: what the new model needs, what is free.
typedef struct swap_words {
  char need[32], have[32];
} swap_words;

// Sizes the new model against what is free on the device (within the
// budget, if one is set) plus what the current model would release, and
// fills r's byte counts. RESOURCE_EXHAUSTED, before anything is touched,
// when it cannot fit either way.
static atlas_status check_fits(atlas_model *old, const atlas_model_spec *next,
                               atlas_swap_report *r, swap_words *w) {
  ATLAS_RETURN_IF_ERROR(atlas_status_annotate(
      atlas_model_required_bytes(next, &r->needed_bytes), "swap: sizing %s",
      next->dir ? next->dir : (next->embedded ? next->embedded->name : "?")));
  // Per device: each device of a split model holds a share, and the new
  // model's need is one device's (atlas_model_required_bytes); the
  // tightest device decides.
  bool first = true;
  uint64_t min_free = 0, min_avail = 0;
  for (int d = 0; d < atlas_model_tensor_parallel(old); ++d) {
    atlas_backend *ob = atlas_model_rank_backend(old, d);
    size_t free_bytes = 0;
    ATLAS_RETURN_IF_ERROR(
        atlas_status_annotate(atlas_backend_device_free_memory(ob, &free_bytes),
                              "swap: reading free device memory"));
    uint64_t releasable = atlas_backend_live_bytes(ob);
    uint64_t budget = next->device_budget_bytes;
    if (budget != 0) {
      // Within a budget, what is free is the budget less what the current
      // model holds (and never more than the device really has).
      uint64_t left = budget > releasable ? budget - releasable : 0;
      if (left < free_bytes) free_bytes = (size_t)left;
    }
    // Side by side needs `free` on every device, replacing `free +
    // releasable` on every device: the least of each (equal on one device).
    if (first || free_bytes < min_free) min_free = free_bytes;
    if (first || free_bytes + releasable < min_avail) {
      min_avail = free_bytes + releasable;
    }
    first = false;
  }
  r->free_bytes = min_free;
  r->releasable_bytes = min_avail - min_free;
  char rel[32], avail[32];
  atlas_format_bytes(r->needed_bytes, w->need, sizeof(w->need));
  atlas_format_bytes(r->free_bytes, w->have, sizeof(w->have));
  atlas_format_bytes(r->releasable_bytes, rel, sizeof(rel));
  atlas_format_bytes(r->free_bytes + r->releasable_bytes, avail, sizeof(avail));
  if (r->needed_bytes <= r->free_bytes + r->releasable_bytes) return ATLAS_OK;
  r->path = ATLAS_SWAP_REFUSED;
  return atlas_status_make(
      ATLAS_STATUS_RESOURCE_EXHAUSTED,
      "swap refused before touching anything: the new model needs %s but "
      "only %s can be made available (%s free on the device + %s the "
      "current model %s would release); still serving %s",
      w->need, avail, w->have, rel, atlas_model_name(old),
      atlas_model_name(old));
}

// Both fit: the old model serves until the new one is ready.
static atlas_status swap_side_by_side(atlas_model **current,
                                      const atlas_model_spec *next,
                                      atlas_swap_report *r, double t0) {
  atlas_model *old = *current, *fresh = NULL;
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

// What replacing needs beyond the old model's close: the spec that brings it
// back from the snapshot (its row, parsed config and EOS ids outlive its
// close, so the restore reads nothing from the files), and the new spec with
// strings of its own (the caller's may point into the old model: its own
// spec passed back, or atlas_model_info's name).
typedef struct replace_plan {
  atlas_model_spec old_spec, fresh_spec;
  atlas_eos old_eos;
  void *old_config;
  char *old_dir, *old_backend, *next_dir, *next_backend;
} replace_plan;

static void plan_free(replace_plan *p) {
  free(p->old_config);
  free(p->old_dir);
  free(p->old_backend);
  free(p->next_dir);
  free(p->next_backend);
  memset(p, 0, sizeof(*p));
}

// Fills `p`; OUT_OF_MEMORY (nothing kept) when a copy cannot be made.
static atlas_status plan_replace(atlas_model *old, const atlas_model_spec *next,
                                 atlas_checkpoint *snapshot, replace_plan *p) {
  memset(p, 0, sizeof(*p));
  p->old_spec = *atlas_model_spec_of(old);
  const atlas_arch *old_arch = atlas_model_arch(old);
  p->old_eos = *atlas_model_eos(old);
  p->old_config = malloc(old_arch->config_size);
  if (p->old_config != NULL) {
    memcpy(p->old_config, atlas_model_config(old), old_arch->config_size);
  }
  p->old_dir = dup_or_null(p->old_spec.dir);
  p->old_backend = dup_or_null(p->old_spec.backend);
  p->fresh_spec = *next;
  p->next_dir = dup_or_null(next->dir);
  p->next_backend = dup_or_null(next->backend);
  if (p->old_config == NULL || (p->old_spec.dir != NULL && !p->old_dir) ||
      (p->old_spec.backend != NULL && !p->old_backend) ||
      (next->dir != NULL && !p->next_dir) ||
      (next->backend != NULL && !p->next_backend)) {
    plan_free(p);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "swap: out of host memory; nothing was changed");
  }
  atlas_model_spec *o = &p->old_spec;
  o->dir = p->old_dir;
  o->backend = p->old_backend;
  o->adopt_checkpoint = snapshot;
  o->adopt_arch = old_arch;
  o->adopt_config = p->old_config;
  o->adopt_eos = &p->old_eos;
  o->ignore_env_fault = true;
  // A restore never re-injects the new model's fault; a test may fail it on
  // purpose (fail_restore) to see a swap end with no model.
  o->fault_kind = ATLAS_FAULT_ALLOC;
  o->fault_at = next->fail_restore ? 1 : 0;
  o->fail_module_load_at = 0;
  p->fresh_spec.dir = p->next_dir;
  p->fresh_spec.backend = p->next_backend;
  return ATLAS_OK;
}

// The new model failed to load after the old one went (the failed load
// reclaimed what it allocated): bring the old one back from the snapshot,
// which the model adopts and keeps as its source.
static atlas_status restore_old(atlas_model **current, replace_plan *p,
                                atlas_swap_report *r, atlas_status failure) {
  atlas_model *restored = NULL;
  atlas_status restore = atlas_model_open(&p->old_spec, &restored);
  const char *old_name =
      p->old_dir ? p->old_dir
                 : (p->old_spec.embedded ? p->old_spec.embedded->name : "?");
  if (restore == ATLAS_OK) {
    *current = restored;
    r->restored = true;
    return atlas_status_annotate(failure,
                                 "swap failed; the old model %s was "
                                 "restored and is serving (from a "
                                 "host copy of the bytes it was "
                                 "loaded from: the same weights, bit "
                                 "for bit)",
                                 old_name);
  }
  return atlas_status_join(
      atlas_status_annotate(failure, "swap failed"),
      atlas_status_annotate(restore,
                            "restoring the old model %s also failed; "
                            "no model is loaded",
                            old_name));
}

// Only one fits: the old model must go first. Its weights come back, if the
// new one fails, from a host copy of its files checked against what was
// loaded; without one the swap is refused now.
static atlas_status swap_replace(atlas_model **current,
                                 const atlas_model_spec *next,
                                 atlas_swap_report *r, double t0,
                                 const swap_words *w) {
  atlas_model *old = *current, *fresh = NULL;
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
        w->need, w->have, atlas_model_name(old), atlas_model_name(old));
  }
  r->path = ATLAS_SWAP_REPLACE;
  replace_plan plan;
  atlas_status status = plan_replace(old, next, snapshot, &plan);
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(snapshot);
    return status;
  }
  double tt = now_ms();
  atlas_status teardown = close_clean(old);
  r->teardown_ms = now_ms() - tt;
  *current = NULL;
  if (next->after_teardown != NULL)
    next->after_teardown(next->after_teardown_ctx);
  double tl = now_ms();
  status = open_proven(&plan.fresh_spec, &fresh);
  r->load_ms = now_ms() - tl;
  if (status == ATLAS_OK) {
    *current = fresh;
    r->swapped = true;
    atlas_checkpoint_close(snapshot);
    status = atlas_status_annotate(teardown,
                                   "swap done, but tearing down the "
                                   "old model reported");
  } else {
    status =
        atlas_status_join(restore_old(current, &plan, r, status), teardown);
  }
  plan_free(&plan);
  r->total_ms = now_ms() - t0;
  return status;
}

atlas_status atlas_model_swap(atlas_model **current,
                              const atlas_model_spec *next,
                              atlas_swap_report *out_report) {
  atlas_swap_report local = {
      ATLAS_SWAP_REFUSED, 0, 0, 0, false, false, 0, 0, 0};
  atlas_swap_report *r = out_report != NULL ? out_report : &local;
  memset(r, 0, sizeof(*r));
  double t0 = now_ms();
  if (*current == NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "swap: there is no current model");
  }
  swap_words words;
  ATLAS_RETURN_IF_ERROR(check_fits(*current, next, r, &words));
  if (r->needed_bytes <= r->free_bytes) {
    return swap_side_by_side(current, next, r, t0);
  }
  return swap_replace(current, next, r, t0, &words);
}
