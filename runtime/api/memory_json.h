// The memory report as JSON, from the same rows as the text and the SVG, so
// --top and --min-mb shape all three alike.
#ifndef ATLAS_RUNTIME_API_MEMORY_JSON_H_
#define ATLAS_RUNTIME_API_MEMORY_JSON_H_

#include <stddef.h>

#include "atlas/runtime/base/ledger_report.h"

// {"live_bytes", "live_count", "top", "min_mb",
//  "sites": [{"file", "line", "func", "bytes", "count"}...],
//  "other": {"sites", "bytes", "count"} (only when rows were folded)}.
// The caller frees *out_json.
ATLAS_MUST_USE atlas_status atlas_memory_json(const atlas_site_report *report,
                                              size_t top, double min_mb,
                                              char **out_json);

#endif  // ATLAS_RUNTIME_API_MEMORY_JSON_H_
