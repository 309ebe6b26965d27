// What the atlas commands share (cli_common.h).
#include "atlas/tools/atlas/cli_common.h"

#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// ---- shared option values ----------------------------------------------------

const char atlas_cli_backend_help[] =
    "host, cuda, or auto (cuda when a GPU is usable, else host)";

// One of atlas_backend_names() ("cuda,host,auto").
atlas_status atlas_cli_parse_backend(const char *value, const char **out) {
  const char *names = atlas_backend_names();
  size_t len = strlen(value);
  for (const char *p = names; len > 0 && *p != '\0';) {
    const char *end = strchr(p, ',');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, value, n) == 0) {
      *out = value;
      return ATLAS_OK;
    }
    p += n + (end != NULL);
  }
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "unknown backend '%s' (expected one of: %s)", value,
                           names);
}

// "1,2,3" -> token ids (the caller frees *out).
atlas_status atlas_cli_parse_devices(const char *flag, const char *value,
                                     int devices[64], size_t *out_count) {
  *out_count = 0;
  uint32_t *ids = NULL;
  size_t n = 0;
  ATLAS_RETURN_IF_ERROR(atlas_cli_parse_ids(flag, value, &ids, &n));
  atlas_status s = ATLAS_OK;
  if (n > 64) {
    s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                          "%s: %zu devices, at most 64", flag, n);
  }
  for (size_t i = 0; s == ATLAS_OK && i < n; ++i) {
    if (ids[i] > 1024) {
      s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                            "%s: %u is not a device ordinal", flag, ids[i]);
    }
    devices[i] = (int)ids[i];
  }
  free(ids);
  if (s == ATLAS_OK) *out_count = n;
  return s;
}

atlas_status atlas_cli_parse_ids(const char *flag, const char *text,
                                 uint32_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  size_t cap = 1;
  for (const char *p = text; *p; ++p) cap += *p == ',';
  uint32_t *ids = malloc(cap * sizeof(uint32_t));
  if (ids == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many tokens");
  }
  const char *p = text;
  while (*p) {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(p, &end, 10);
    // Each id starts with a digit (no sign, no space) and a comma is
    // followed by one ("1,,2" and "1,2," are refused).
    if (!(*p >= '0' && *p <= '9') || end == p || errno != 0 || v > UINT32_MAX ||
        (*end != ',' && *end != '\0') || (*end == ',' && end[1] == '\0')) {
      free(ids);
      *n = 0;
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "%s wants comma-separated ids, not '%s'", flag,
                               text);
    }
    ids[(*n)++] = (uint32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (*n == 0) {
    free(ids);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s needs at least one id", flag);
  }
  *out = ids;
  return ATLAS_OK;
}

void atlas_cli_open_options_for(const char *backend, int64_t max_seq,
                                atlas_progress *progress,
                                atlas_open_options *out) {
  atlas_open_options_init(out);
  out->backend = backend;
  out->max_seq = max_seq;
  out->progress = atlas_progress_update;
  out->progress_ctx = progress;
}

atlas_status atlas_cli_print_report(const atlas_model *m, size_t top,
                                    double min_mb) {
  atlas_model_info info = {.struct_size = sizeof(info)};
  ATLAS_RETURN_IF_ERROR(atlas_model_info_get(m, &info));
  atlas_report_options ro;
  atlas_report_options_init(&ro);
  ro.top = top;
  ro.min_mb = min_mb;
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_report(m, ATLAS_REPORT_TEXT, &ro, &text));
  printf("memory report (%s on %s, KV cache for %lld positions):\n%s",
         info.name, info.backend, (long long)info.max_seq, text);
  atlas_free(text);
  return ATLAS_OK;
}

// Says which of a swap's outcomes happened, on stderr, first and in capitals
// when it failed (never a timing line for a swap that did not happen).
atlas_status atlas_cli_report_swap(atlas_status s, const atlas_swap_info *r,
                                   const char *old_name, const char *new_name) {
  if (s == ATLAS_OK) {
    fprintf(stderr,
            "swap: now serving %s (%s path: teardown %.2f ms, load %.2f ms, "
            "total %.2f ms)\n",
            new_name, r->side_by_side ? "side-by-side" : "replace",
            r->teardown_ms, r->load_ms, r->total_ms);
    return ATLAS_OK;
  }
  switch (r->outcome) {
    case ATLAS_SWAP_OUTCOME_SWAPPED:
      return atlas_status_annotate(s,
                                   "swapped to %s, but tearing down %s "
                                   "reported an error",
                                   new_name, old_name);
    case ATLAS_SWAP_OUTCOME_RESTORED:
      fprintf(stderr,
              "swap: FAILED part-way; the old model %s was restored "
              "and is serving again\n",
              old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_REFUSED:
      if (r->needed_bytes == 0) {
        // Refused before the budget check: the new model could not be sized.
        fprintf(stderr,
                "swap: REFUSED before anything changed: the new model could "
                "not be read, or cannot take this prompt (reason below). The "
                "old model %s is still serving.\n",
                old_name);
        return s;
      }
      fprintf(stderr,
              "swap: REFUSED before anything changed: the new model needs "
              "%llu bytes; %llu bytes could be made available (%llu free + "
              "%llu held by the old model). The old model %s is still "
              "serving.\n",
              (unsigned long long)r->needed_bytes,
              (unsigned long long)r->free_bytes +
                  (unsigned long long)r->releasable_bytes,
              (unsigned long long)r->free_bytes,
              (unsigned long long)r->releasable_bytes, old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_KEPT:
      fprintf(stderr,
              "swap: FAILED loading the new model beside the old one; "
              "the old model %s was never unloaded and is still "
              "serving\n",
              old_name);
      return s;  // the runtime's reason, which names the outcome too
    case ATLAS_SWAP_OUTCOME_LOST:
    default:
      fprintf(stderr,
              "swap: FAILED, and the old model %s could not be "
              "restored; no model is loaded\n",
              old_name);
      return s;
  }
}

// What the close's sweep released after the device had refused to free it:
// not a leak (the status says which free was refused), but said, so that
// the bytes are accounted for.
void atlas_cli_print_refused(const atlas_close_report *td) {
  if (td->refused_allocations == 0) return;
  printf("released after a refused free: %llu bytes in %zu allocation%s\n",
         (unsigned long long)td->refused_bytes, td->refused_allocations,
         td->refused_allocations == 1 ? "" : "s");
}

void atlas_cli_print_close(const atlas_close_report *td) {
  printf("teardown: %zu resources released in reverse order, %zu failed\n",
         td->released, td->failed);
  printf("leaked: %llu bytes\n", (unsigned long long)td->leaked_bytes);
  atlas_cli_print_refused(td);
}

// Closes the model and, for `swap`, says what the close found: the ordered
// teardown's count and the sweep's leaked bytes (nonzero is an error).
atlas_status atlas_cli_close_model(atlas_model *m, bool say) {
  if (m == NULL) return ATLAS_OK;
  atlas_close_report td;
  atlas_status s = atlas_close(m, &td);
  if (!say) return s;
  atlas_cli_print_close(&td);
  if (td.leaked_allocations > 0) {
    s = atlas_status_join(
        s, atlas_status_make(ATLAS_STATUS_INTERNAL,
                             "the sweep found %zu unreleased allocations "
                             "(%llu bytes)",
                             td.leaked_allocations,
                             (unsigned long long)td.leaked_bytes));
  }
  return s;
}

// The swap and what follows it: the model serving afterwards (the new one,
// or the old one when the swap was refused, kept it or restored it)
// generates again, so its ids and logits show what is serving. Returns the
// ---- dispatch ----------------------------------------------------------------------

int atlas_cli_finish(const char *program, atlas_status s) {
  if (s == ATLAS_OK) return ATLAS_CLI_EXIT_OK;
  atlas_cli_print_error(program, atlas_status_message(s), "");
  atlas_status_free(s);
  return ATLAS_CLI_EXIT_FAILURE;
}

int atlas_cli_parsed_exit(atlas_cli_parse_result r) {
  return r == ATLAS_CLI_HELP ? ATLAS_CLI_EXIT_OK : ATLAS_CLI_EXIT_USAGE;
}

bool atlas_cli_is_gguf(const char *path) {
  size_t n = strlen(path);
  return n > 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

atlas_status atlas_cli_load_tokenizer(const char *path, atlas_tokenizer **out) {
  return atlas_cli_is_gguf(path) ? atlas_tokenizer_load_gguf(path, out)
                                 : atlas_tokenizer_load(path, out);
}
