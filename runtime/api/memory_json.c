#include "atlas/runtime/api/memory_json.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static json_t *row_json(const atlas_site_total *r) {
  if (r->site.file == NULL) {
    return json_pack("{s:I, s:I, s:I}", "sites", (json_int_t)r->sites, "bytes",
                     (json_int_t)r->bytes, "count", (json_int_t)r->count);
  }
  return json_pack("{s:s, s:i, s:s, s:I, s:I}", "file", r->site.file, "line",
                   r->site.line, "func", r->site.func ? r->site.func : "",
                   "bytes", (json_int_t)r->bytes, "count",
                   (json_int_t)r->count);
}

atlas_status atlas_memory_json(const atlas_site_report *report, size_t top,
                               double min_mb, char **out_json) {
  *out_json = NULL;
  // release_failed_*: the live allocations whose release the device
  // refused (still held), as the ledger's own JSON report says them.
  json_t *root = json_pack(
      "{s:I, s:I, s:I, s:I, s:I, s:f}", "live_bytes",
      (json_int_t)report->live_bytes, "live_count",
      (json_int_t)report->live_count, "release_failed_bytes",
      (json_int_t)report->release_failed_bytes, "release_failed_count",
      (json_int_t)report->release_failed_count, "top", (json_int_t)top,
      "min_mb", min_mb);
  json_t *sites = json_array();
  bool ok = root != NULL && sites != NULL &&
            json_object_set(root, "sites", sites) == 0;
  for (size_t i = 0; ok && i < report->row_count; ++i) {
    const atlas_site_total *r = &report->rows[i];
    json_t *row = row_json(r);
    if (row == NULL) {
      ok = false;
    } else if (r->site.file == NULL) {
      ok = json_object_set_new(root, "other", row) == 0;
    } else {
      ok = json_array_append_new(sites, row) == 0;
    }
  }
  char *text = ok ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(sites);
  json_decref(root);
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot build the JSON");
  }
  // jansson may use its own allocator: hand back a malloc'd copy.
  size_t n = strlen(text);
  *out_json = malloc(n + 2);
  if (*out_json != NULL) {
    memcpy(*out_json, text, n);
    (*out_json)[n] = '\n';
    (*out_json)[n + 1] = '\0';
  }
  free(text);
  if (*out_json == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot copy the JSON");
  }
  return ATLAS_OK;
}
