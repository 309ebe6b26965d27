// atlas_report: the live-memory report as caller-owned text (the ledger's
// text, JSON or SVG; a split model's text per device).
#define _POSIX_C_SOURCE 200809L  // open_memstream, for the SVG report
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/runtime/api/memory_json.h"
#include "atlas/runtime/api/memory_svg.h"
#include "atlas/runtime/api/struct_size.h"
#include "atlas/runtime/base/ledger_report.h"
#include "atlas/runtime/model/model.h"

static const atlas_struct_field kReportFields[] = {
    ATLAS_STRUCT_FIELD(atlas_report_options, struct_size),
    ATLAS_STRUCT_FIELD(atlas_report_options, top),
    ATLAS_STRUCT_FIELD(atlas_report_options, min_mb),
};
const atlas_struct_layout atlas_report_options_layout = {
    "atlas_report_options", kReportFields,
    sizeof(kReportFields) / sizeof(kReportFields[0]), 3,
    sizeof(atlas_report_options)};

void atlas_report_options_init(atlas_report_options *options) {
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

static atlas_status svg_text(const atlas_model *model,
                             const atlas_site_report *sites, char **out_text) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_report: cannot open a memory stream");
  }
  // Sized to fit: a cut could split a UTF-8 character of the name.
  const char *name = atlas_model_name(model);
  const char *backend =
      atlas_backend_name(atlas_model_backend((atlas_model *)model));
  size_t title_len =
      strlen(name) + strlen(backend) + sizeof("Live memory of  on ");
  char *title = malloc(title_len);
  if (title == NULL) {
    fclose(f);
    free(buf);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_report: no memory for the SVG's title");
  }
  snprintf(title, title_len, "Live memory of %s on %s", name, backend);
  atlas_status s = atlas_memory_svg_write(sites, title, f);
  free(title);
  if (fclose(f) != 0 && s == ATLAS_OK) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "atlas_report: writing the SVG failed");
  }
  if (s != ATLAS_OK) {
    free(buf);
    return s;
  }
  *out_text = buf;
  return ATLAS_OK;
}

// The KV pool's blocks after the text report, when the model has a pool
// (atlas_kv_open): used by sequences, cached (reusable prefixes), free.
static atlas_status kv_report_line(const atlas_model *model, char **text) {
  atlas_kv_stats st;
  memset(&st, 0, sizeof(st));
  st.struct_size = sizeof(st);
  atlas_status s = atlas_kv_stats_get((atlas_model *)model, &st);
  if (s != ATLAS_OK || st.blocks_total == 0) return s;
  char line[256];
  int n =
      snprintf(line, sizeof(line),
               "KV pool: %zu blocks of %zu positions (%.1f MB): used %zu, "
               "cached %zu, free %zu; %zu sequences\n",
               st.blocks_total, st.block_tokens, (double)st.bytes / 1e6,
               st.blocks_used, st.blocks_cached, st.blocks_free, st.sequences);
  size_t len = strlen(*text);
  char *p = realloc(*text, len + (size_t)n + 1);
  if (p == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_report: no memory for the KV line");
  }
  memcpy(p + len, line, (size_t)n + 1);
  *text = p;
  return ATLAS_OK;
}

// A split model's text report: each device's ledger report under a line
// naming it, then the total over the devices.
static atlas_status split_report(atlas_model *model,
                                 const atlas_report_options *o,
                                 char **out_text) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "atlas_report: cannot open a memory stream");
  }
  int ranks = atlas_model_tensor_parallel(model);
  uint64_t total = 0, allocations = 0;
  atlas_status s = ATLAS_OK;
  for (int r = 0; s == ATLAS_OK && r < ranks; ++r) {
    atlas_backend *b = atlas_model_rank_backend(model, r);
    char *text = NULL;
    s = atlas_backend_alloc_report(b, o->top, o->min_mb, &text);
    if (s != ATLAS_OK) break;
    uint64_t live = atlas_backend_live_bytes(b);
    total += live;
    allocations += atlas_backend_live_alloc_count(b);
    fprintf(f, "device %d of %d (%s): %llu bytes live\n%s", r, ranks,
            atlas_backend_name(b), (unsigned long long)live, text);
    free(text);
  }
  fprintf(f, "total over %d devices: %llu bytes live in %llu allocations\n",
          ranks, (unsigned long long)total, (unsigned long long)allocations);
  if (fclose(f) != 0 && s == ATLAS_OK) {
    s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                          "atlas_report: writing the report failed");
  }
  if (s != ATLAS_OK) {
    free(buf);
    return s;
  }
  *out_text = buf;
  return ATLAS_OK;
}

atlas_status atlas_report(const atlas_model *model, atlas_report_format format,
                          const atlas_report_options *options,
                          char **out_text) {
  *out_text = NULL;
  if (model == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report: NULL model");
  }
  atlas_report_options o;
  atlas_report_options_init(&o);
  if (options != NULL) {  // as atlas_api.c's other options structs
    size_t n = 0;
    ATLAS_RETURN_IF_ERROR(atlas_struct_size_check(
        &atlas_report_options_layout, options->struct_size, options, &n));
    memcpy(&o, options, n);
    o.struct_size = sizeof(o);
  }
  if (!isfinite(o.min_mb) || o.min_mb < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report_options.min_mb must be a finite "
                             "number >= 0 (got %g)",
                             o.min_mb);
  }
  atlas_backend *b = atlas_model_backend((atlas_model *)model);
  if (format == ATLAS_REPORT_TEXT && atlas_model_tensor_parallel(model) > 1) {
    return split_report((atlas_model *)model, &o, out_text);
  }
  if (format == ATLAS_REPORT_TEXT) {
    ATLAS_RETURN_IF_ERROR(
        atlas_backend_alloc_report(b, o.top, o.min_mb, out_text));
    return kv_report_line(model, out_text);
  }
  if (atlas_model_tensor_parallel(model) > 1) {
    return atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                             "atlas_report: the JSON and SVG reports of a "
                             "model split over %d devices are not built; the "
                             "text report covers each device",
                             atlas_model_tensor_parallel(model));
  }
  if (format != ATLAS_REPORT_JSON && format != ATLAS_REPORT_SVG) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "atlas_report: unknown format %d", (int)format);
  }
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_ledger_snapshot(atlas_backend_ledger(b), &entries, &count));
  atlas_site_report sites;
  atlas_status s =
      atlas_site_report_build(entries, count, o.top, o.min_mb, &sites);
  free(entries);
  if (s != ATLAS_OK) return s;
  if (format == ATLAS_REPORT_JSON) {
    s = atlas_memory_json(&sites, o.top, o.min_mb, out_text);
  } else {
    s = svg_text(model, &sites, out_text);
  }
  atlas_site_report_free(&sites);
  return s;
}
