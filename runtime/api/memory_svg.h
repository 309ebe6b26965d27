// An SVG picture of live bytes by call site: one bar per site, biggest
// first, labelled with the size, the count and the site.
#ifndef ATLAS_RUNTIME_API_MEMORY_SVG_H_
#define ATLAS_RUNTIME_API_MEMORY_SVG_H_

#include <stdio.h>

#include "atlas/runtime/base/ledger_report.h"

ATLAS_MUST_USE atlas_status atlas_memory_svg_write(
    const atlas_site_report *report, const char *title, FILE *out);

#endif  // ATLAS_RUNTIME_API_MEMORY_SVG_H_
