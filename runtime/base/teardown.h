// Teardown: ordered, fallible release of a model's resources.
//
// Resources are released in reverse registration order (a later resource may
// borrow an earlier one). A failure does not stop the teardown: every other
// resource is still released and every failure is reported, each named. The
// teardown ends with a sweep (normally the backend's sweep_unreleased), which
// frees what no resource covered and names the sites; a non-zero sweep after
// an otherwise clean teardown is logged as a leak.
//
// Teardown knows nothing of backends: the sweep is a callback.
#ifndef ATLAS_RUNTIME_TEARDOWN_H_
#define ATLAS_RUNTIME_TEARDOWN_H_

#include <stddef.h>

#include "atlas/runtime/base/ledger.h"
#include "atlas/runtime/base/log_sink.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef atlas_status (*atlas_release_fn)(void *resource);
typedef atlas_status (*atlas_sweep_fn)(void *ctx, atlas_sweep_result *out);

typedef struct atlas_teardown atlas_teardown;

typedef struct atlas_teardown_report {
  size_t released;           // resources whose release succeeded
  size_t failed;             // resources whose release failed
  atlas_sweep_result sweep;  // what the sweep had to free
} atlas_teardown_report;

ATLAS_MUST_USE atlas_status
atlas_teardown_create(atlas_teardown **out_teardown);

// Registers a resource. On failure (out of memory) it is NOT registered and
// the caller still owns it.
// Where the final sweep's leak report goes (default: stderr).
void atlas_teardown_set_log(atlas_teardown *teardown,
                            const atlas_log_sink *sink);

ATLAS_MUST_USE atlas_status atlas_teardown_register(atlas_teardown *teardown,
                                                    const char *name,
                                                    atlas_release_fn release,
                                                    void *resource);

size_t atlas_teardown_count(const atlas_teardown *teardown);

// Releases everything in reverse order, then sweeps (sweep may be NULL), and
// frees the teardown. Returns every failure joined, each naming its resource.
// `out_report` may be NULL; otherwise free its sweep with
// atlas_sweep_result_free.
ATLAS_MUST_USE atlas_status
atlas_teardown_run(atlas_teardown *teardown, atlas_sweep_fn sweep,
                   void *sweep_ctx, atlas_teardown_report *out_report);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_TEARDOWN_H_
