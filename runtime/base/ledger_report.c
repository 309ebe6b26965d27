// Aggregation of live allocations by call site, as text and JSON.
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/runtime/base/ledger_report.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int site_cmp(const atlas_site *a, const atlas_site *b) {
  if (a->line != b->line) return (a->line > b->line) - (a->line < b->line);
  int c = strcmp(a->file ? a->file : "", b->file ? b->file : "");
  if (c != 0) return c;
  return strcmp(a->func ? a->func : "", b->func ? b->func : "");
}

static int total_by_bytes(const void *a, const void *b) {
  const atlas_site_total *x = a;
  const atlas_site_total *y = b;
  if (x->bytes != y->bytes)
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
  return site_cmp(&x->site, &y->site);
}

static size_t site_hash(const atlas_site *s) {
  uint64_t x = (uint64_t)(uintptr_t)s->file * 0x9e3779b97f4a7c15ULL;
  x ^= (uint64_t)(uintptr_t)s->func * 0xc2b2ae3d27d4eb4fULL;
  x ^= (uint64_t)(unsigned)s->line * 0x165667b19e3779f9ULL;
  return (size_t)(x ^ (x >> 29));
}

static bool same_site_ptrs(const atlas_site *a, const atlas_site *b) {
  return a->file == b->file && a->line == b->line && a->func == b->func;
}

static int total_by_site(const void *a, const void *b) {
  return site_cmp(&((const atlas_site_total *)a)->site,
                  &((const atlas_site_total *)b)->site);
}

// Groups entries by call site: a hash on the site's pointers (one pass over
// the entries), then a merge of rows whose strings are equal (the same
// header line seen from two translation units), then a sort of the rows.
static atlas_status aggregate(const atlas_ledger_entry *entries, size_t count,
                              atlas_site_total **out_rows, size_t *out_n) {
  size_t cap = 64;
  while (cap < count * 2) cap *= 2;
  size_t *table = malloc(cap * sizeof(size_t));  // row index + 1; 0 empty
  atlas_site_total *rows = malloc((count + 1) * sizeof(*rows));
  if (table == NULL || rows == NULL) {
    free(table);
    free(rows);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot aggregate %zu allocations",
                             count);
  }
  memset(table, 0, cap * sizeof(size_t));
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    const atlas_site *site = &entries[i].site;
    size_t h = site_hash(site) & (cap - 1);
    while (table[h] != 0 && !same_site_ptrs(&rows[table[h] - 1].site, site)) {
      h = (h + 1) & (cap - 1);
    }
    if (table[h] == 0) {
      rows[n] = (atlas_site_total){*site, 0, 0, 1};
      table[h] = ++n;
    }
    rows[table[h] - 1].bytes += entries[i].bytes;
    rows[table[h] - 1].count++;
  }
  free(table);
  qsort(rows, n, sizeof(*rows), total_by_site);
  size_t merged = 0;
  for (size_t i = 0; i < n; ++i) {
    if (merged > 0 && site_cmp(&rows[merged - 1].site, &rows[i].site) == 0) {
      rows[merged - 1].bytes += rows[i].bytes;
      rows[merged - 1].count += rows[i].count;
    } else {
      rows[merged++] = rows[i];
    }
  }
  *out_rows = rows;
  *out_n = merged;
  return ATLAS_OK;
}

atlas_status atlas_site_report_build(const atlas_ledger_entry *entries,
                                     size_t count, size_t top_n, double min_mb,
                                     atlas_site_report *out_report) {
  memset(out_report, 0, sizeof(*out_report));
  if (count == 0) return ATLAS_OK;
  atlas_site_total *rows = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(aggregate(entries, count, &rows, &n));
  if (rows == NULL) return ATLAS_OK;  // aggregate only leaves NULL on error
  for (size_t i = 0; i < n; ++i) out_report->live_bytes += rows[i].bytes;
  for (size_t i = 0; i < count; ++i) {
    if (!entries[i].release_failed) continue;
    out_report->release_failed_bytes += entries[i].bytes;
    out_report->release_failed_count++;
  }
  qsort(rows, n, sizeof(*rows), total_by_bytes);
  // Fold small sites and those past top_n into one remainder row.
  double min_bytes = min_mb * 1e6;
  size_t kept = 0;
  atlas_site_total rest = {{NULL, 0, NULL}, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    bool keep =
        (double)rows[i].bytes >= min_bytes && (top_n == 0 || kept < top_n);
    if (keep) {
      rows[kept++] = rows[i];
    } else {
      rest.bytes += rows[i].bytes;
      rest.count += rows[i].count;
      rest.sites++;
    }
  }
  if (rest.sites > 0) rows[kept++] = rest;
  out_report->rows = rows;
  out_report->row_count = kept;
  out_report->live_count = count;
  return ATLAS_OK;
}

void atlas_site_report_free(atlas_site_report *report) {
  free(report->rows);
  memset(report, 0, sizeof(*report));
}

// Appends to a growing string; returns false when out of memory.
typedef struct strbuf {
  char *data;
  size_t len, cap;
} strbuf;

static bool sb_printf(strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool sb_printf(strbuf *sb, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = sb->cap - sb->len;
    int n = vsnprintf(sb->data ? sb->data + sb->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < room) {
      sb->len += (size_t)n;
      return true;
    }
    size_t cap = (sb->cap + (size_t)n + 1) * 2;
    char *data = realloc(sb->data, cap);
    if (data == NULL) return false;
    sb->data = data;
    sb->cap = cap;
  }
}

atlas_status atlas_site_report_text(const atlas_site_report *report,
                                    char **out_text) {
  *out_text = NULL;
  strbuf sb = {NULL, 0, 0};
  bool ok = true;
  char amount[32];
  for (size_t i = 0; ok && i < report->row_count; ++i) {
    const atlas_site_total *r = &report->rows[i];
    atlas_format_bytes(r->bytes, amount, sizeof(amount));
    const char *noun = r->count == 1 ? "allocation" : "allocations";
    if (r->site.file != NULL) {
      ok = sb_printf(&sb, "%10s across %zu %s  %s:%d (%s)\n", amount, r->count,
                     noun, r->site.file, r->site.line, r->site.func);
    } else {
      ok = sb_printf(&sb, "%10s across %zu %s  (%zu smaller sites)\n", amount,
                     r->count, noun, r->sites);
    }
  }
  atlas_format_bytes(report->live_bytes, amount, sizeof(amount));
  ok = ok && sb_printf(&sb, "live: %s (%zu bytes) in %zu allocations\n", amount,
                       report->live_bytes, report->live_count);
  if (ok && report->release_failed_count > 0) {
    atlas_format_bytes(report->release_failed_bytes, amount, sizeof(amount));
    ok = sb_printf(
        &sb,
        "release failed: %s (%zu bytes) in %zu %s of those: the "
        "device refused to free them, so it still holds them (a "
        "later free or the sweep releases them)\n",
        amount, report->release_failed_bytes, report->release_failed_count,
        report->release_failed_count == 1 ? "allocation" : "allocations");
  }
  if (!ok) {
    free(sb.data);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot format the text");
  }
  *out_text = sb.data;
  return ATLAS_OK;
}

// The ledger's live entries grouped by site (see atlas_site_report_build).
static atlas_status report_of(atlas_ledger *ledger, size_t top_n, double min_mb,
                              atlas_site_report *out_report) {
  memset(out_report, 0, sizeof(*out_report));  // freeable whatever happens
  atlas_ledger_entry *entries = NULL;
  size_t count = 0;
  ATLAS_RETURN_IF_ERROR(
      atlas_ledger_snapshot_unordered(ledger, &entries, &count));
  atlas_status status =
      atlas_site_report_build(entries, count, top_n, min_mb, out_report);
  free(entries);
  return status;
}

atlas_status atlas_ledger_report_text(atlas_ledger *ledger, size_t top_n,
                                      double min_mb, char **out_text) {
  *out_text = NULL;
  atlas_site_report report;
  atlas_status status = report_of(ledger, top_n, min_mb, &report);
  if (status == ATLAS_OK) status = atlas_site_report_text(&report, out_text);
  atlas_site_report_free(&report);
  return status;
}

atlas_status atlas_ledger_report_json(atlas_ledger *ledger, char **out_json) {
  *out_json = NULL;
  atlas_site_report report;
  ATLAS_RETURN_IF_ERROR(report_of(ledger, 0, 0.0, &report));
  json_t *root = json_object();
  json_t *sites = json_array();
  bool ok = root != NULL && sites != NULL;
  for (size_t i = 0; ok && i < report.row_count; ++i) {
    const atlas_site_total *r = &report.rows[i];
    json_t *row =
        json_pack("{s:s, s:i, s:s, s:I, s:I}", "file", r->site.file, "line",
                  r->site.line, "func", r->site.func, "bytes",
                  (json_int_t)r->bytes, "count", (json_int_t)r->count);
    ok = row != NULL && json_array_append_new(sites, row) == 0;
  }
  ok = ok &&
       json_object_set_new(root, "live_bytes",
                           json_integer((json_int_t)report.live_bytes)) == 0 &&
       json_object_set_new(root, "live_count",
                           json_integer((json_int_t)report.live_count)) == 0 &&
       json_object_set_new(
           root, "release_failed_bytes",
           json_integer((json_int_t)report.release_failed_bytes)) == 0 &&
       json_object_set_new(
           root, "release_failed_count",
           json_integer((json_int_t)report.release_failed_count)) == 0 &&
       json_object_set(root, "sites", sites) == 0;
  char *text = ok ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(sites);
  json_decref(root);
  atlas_site_report_free(&report);
  if (text == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot build the JSON");
  }
  // jansson allocates with malloc by default; hand back a malloc'd copy anyway
  // so callers free() it regardless of jansson's allocator settings.
  *out_json = strdup(text);
  free(text);
  if (*out_json == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "memory report: cannot copy the JSON");
  }
  return ATLAS_OK;
}
