// Teardown: a stack of named releases, run newest first.
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/base/teardown.h"

#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/log.h"

typedef struct registered {
  char *name;
  atlas_release_fn release;
  void *ptr;
} registered;

struct atlas_teardown {
  registered *items;
  size_t count, cap;
  atlas_log_sink log;  // where a leak found by the final sweep is reported
};

void atlas_teardown_set_log(atlas_teardown *teardown,
                            const atlas_log_sink *sink) {
  if (sink != NULL) teardown->log = *sink;
}

atlas_status atlas_teardown_create(atlas_teardown **out_teardown) {
  *out_teardown = calloc(1, sizeof(atlas_teardown));
  if (*out_teardown == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "teardown: cannot allocate");
  }
  return ATLAS_OK;
}

atlas_status atlas_teardown_register(atlas_teardown *teardown, const char *name,
                                     atlas_release_fn release, void *resource) {
  atlas_teardown *t = teardown;
  if (name == NULL) {  // every failure names its resource
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "teardown: a resource registered without a name");
  }
  if (release == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "teardown: resource '%s' has no release function",
                             name);
  }
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 8;
    registered *items = realloc(t->items, cap * sizeof(*items));
    if (items == NULL) {
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "teardown: cannot register '%s'", name);
    }
    t->items = items;
    t->cap = cap;
  }
  registered *r = &t->items[t->count];
  r->name = strdup(name);
  if (r->name == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "teardown: cannot register '%s'", name);
  }
  r->release = release;
  r->ptr = resource;
  t->count++;
  return ATLAS_OK;
}

size_t atlas_teardown_count(const atlas_teardown *t) { return t->count; }

atlas_status atlas_teardown_run(atlas_teardown *t, atlas_sweep_fn sweep,
                                void *sweep_ctx,
                                atlas_teardown_report *out_report) {
  atlas_teardown_report report;
  memset(&report, 0, sizeof(report));
  atlas_status failures = ATLAS_OK;
  for (size_t i = t->count; i-- > 0;) {
    registered *r = &t->items[i];
    atlas_status s = r->release(r->ptr);
    if (s == ATLAS_OK) {
      report.released++;
    } else {
      report.failed++;
      failures = atlas_status_join(
          failures, atlas_status_annotate(s, "releasing '%s'", r->name));
    }
    free(r->name);
  }
  atlas_log_sink log = t->log;
  free(t->items);
  free(t);
  if (sweep != NULL) {
    atlas_status s = sweep(sweep_ctx, &report.sweep);
    failures =
        atlas_status_join(failures, atlas_status_annotate(s, "final sweep"));
    const atlas_sweep_result *w = &report.sweep;
    size_t leaks = w->count - w->refused_count;
    if (leaks > 0 && report.failed == 0) {
      atlas_log(&log, ATLAS_LOG_WARNING,
                "leak: teardown released everything registered, yet the sweep "
                "found %zu allocations (%zu bytes) that no resource covered%s "
                "and freed %zu of the %zu it found:\n%s",
                leaks, w->bytes - w->refused_bytes,
                w->refused_count > 0 ? " (and some whose free the device had "
                                       "refused)"
                                     : "",
                w->count - w->unfreed_count, w->count,
                w->sites ? w->sites : "");
    } else if (leaks > 0) {
      // The failures say which releases broke, not what they left behind:
      // the sweep's sites are the only record of that, so say them too.
      // What the device refused to free stays live: the sweep only found it.
      atlas_log(&log, ATLAS_LOG_WARNING,
                "teardown: after %zu failed release(s) the sweep found %zu "
                "allocations (%zu bytes) still live and freed %zu of them:\n%s",
                report.failed, w->count, w->bytes, w->count - w->unfreed_count,
                w->sites ? w->sites : "");
    } else if (w->count > 0) {
      // Only allocations whose free the device refused (the failures, or an
      // earlier call's status, name each): released here, not leaked.
      atlas_log(&log, ATLAS_LOG_WARNING,
                "teardown: the sweep released %zu allocations (%zu bytes) "
                "whose free the device had refused (no leak); freed %zu of "
                "them:\n%s",
                w->count, w->bytes, w->count - w->unfreed_count,
                w->sites ? w->sites : "");
    }
  }
  if (out_report != NULL) {
    *out_report = report;
  } else {
    atlas_sweep_result_free(&report.sweep);
  }
  return failures;
}
