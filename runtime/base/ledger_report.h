// Memory report: the ledger's live allocations aggregated by call site.
#ifndef ATLAS_RUNTIME_LEDGER_REPORT_H_
#define ATLAS_RUNTIME_LEDGER_REPORT_H_

#include <stddef.h>

#include "atlas/runtime/base/ledger.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct atlas_site_total {
  atlas_site site;  // file NULL for the folded remainder row
  size_t bytes;
  size_t count;
  size_t sites;  // how many sites the row stands for (1, or folded)
} atlas_site_total;

typedef struct atlas_site_report {
  atlas_site_total *rows;  // biggest first; remainder (if any) last
  size_t row_count;
  size_t live_bytes;  // sum of rows[].bytes, always
  size_t live_count;
  // Of those, the allocations whose release the device refused (still held).
  size_t release_failed_bytes;
  size_t release_failed_count;
} atlas_site_report;

// Aggregates by site. At most `top_n` site rows (0: no limit); sites past
// top_n or below `min_mb` (1 MB = 1e6 bytes) fold into one remainder row.
ATLAS_MUST_USE atlas_status atlas_site_report_build(
    const atlas_ledger_entry *entries, size_t count, size_t top_n,
    double min_mb, atlas_site_report *out_report);
void atlas_site_report_free(atlas_site_report *report);

// Renders a report as text, one line per row, the live total last.
ATLAS_MUST_USE atlas_status
atlas_site_report_text(const atlas_site_report *report, char **out_text);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LEDGER_REPORT_H_
