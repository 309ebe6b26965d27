// atlas report: a checkpoint's live memory by call site, as text, JSON and
// SVG.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_common.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/atlas/commands.h"
#include "atlas/tools/atlas/progress.h"

typedef struct report_options {
  char model[ATLAS_CLI_PATH_MAX];
  char json[ATLAS_CLI_PATH_MAX];
  char svg[ATLAS_CLI_PATH_MAX];
  const char *backend;
  long top;
  double min_mb;
  long max_seq;  // 0: the runtime's default (the model's context, <= 2048)
  double kv_budget_mb;   // > 0: open the paged KV pool of this size first
  long tensor_parallel;  // devices to split over (1: one)
  int devices[64];       // --devices (device_count of them)
  size_t device_count;
} report_options;
// ---- report --------------------------------------------------------------------

enum {
  REPORT_MODEL,
  REPORT_BACKEND,
  REPORT_MAX_SEQ,
  REPORT_TOP,
  REPORT_MIN_MB,
  REPORT_JSON,
  REPORT_SVG,
  REPORT_KV_BUDGET,
  REPORT_TENSOR_PARALLEL,
  REPORT_DEVICES,
  REPORT_OPTION_COUNT
};

static const atlas_cli_option kReportOptions[] = {
    [REPORT_MODEL] = {"model", "DIR", true, NULL, "checkpoint folder"},
    [REPORT_BACKEND] = {"backend", "KIND", false, "auto",
                        atlas_cli_backend_help},
    [REPORT_MAX_SEQ] = {"max-seq", "N", false,
                        "the model's max_position_embeddings, at most 2048",
                        "positions the KV cache and scratch are sized for; "
                        "give run's prompt length + steps to see what run "
                        "holds"},
    [REPORT_TOP] = {"top", "N", false, "10",
                    "at most N call sites (0: all); the rest fold into one "
                    "row, in the text, the JSON and the SVG"},
    [REPORT_MIN_MB] = {"min-mb", "MB", false, "0",
                       "fold sites holding less than MB (1e6 bytes) into the "
                       "remainder row, in the text, the JSON and the SVG"},
    [REPORT_JSON] = {"json", "FILE", false, "none",
                     "also write the report as JSON to FILE"},
    [REPORT_SVG] = {"svg", "FILE", false, "none",
                    "also draw the report as an SVG bar chart in FILE"},
    [REPORT_KV_BUDGET] = {"kv-budget-mb", "MB", false, "none",
                          "also make the paged KV pool that serving uses, of "
                          "MB (1e6 bytes): its allocation is a site, and a "
                          "last line counts its blocks used, cached and "
                          "free"},
    [REPORT_TENSOR_PARALLEL] = {"tensor-parallel", "N", false, "1",
                                "split the model over N devices (as atlas "
                                "run): the text report then shows each "
                                "device's ledger and their total"},
    [REPORT_DEVICES] = {"devices", "LIST", false, "0,1,...",
                        "with --tensor-parallel N: the N CUDA devices"},
};

const atlas_cli_command atlas_cli_report_command = {
    "atlas report",
    "--model DIR [options]",
    "Loads the checkpoint in DIR and prints the live memory by call site:\n"
    "weights, KV cache and scratch, biggest first.",
    kReportOptions,
    REPORT_OPTION_COUNT,
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_report(void *opts, size_t index, const char *value) {
  report_options *o = opts;
  char flag[64];
  snprintf(flag, sizeof(flag), "--%s", kReportOptions[index].name);
  switch (index) {
    case REPORT_MODEL:
      return atlas_cli_resolve_path(flag, value, o->model);
    case REPORT_JSON:
      return atlas_cli_resolve_path(flag, value, o->json);
    case REPORT_SVG:
      return atlas_cli_resolve_path(flag, value, o->svg);
    case REPORT_BACKEND:
      return atlas_cli_parse_backend(value, &o->backend);
    case REPORT_MAX_SEQ:
      return atlas_cli_parse_long(flag, value, 1, ATLAS_CLI_MAX_SEQ,
                                  &o->max_seq);
    case REPORT_TOP:
      return atlas_cli_parse_long(flag, value, 0, 1L << 30, &o->top);
    case REPORT_MIN_MB:
      return atlas_cli_parse_double(flag, value, 0.0, &o->min_mb);
    case REPORT_KV_BUDGET:
      return atlas_cli_parse_double(flag, value, 0.0, &o->kv_budget_mb);
    case REPORT_TENSOR_PARALLEL:
      return atlas_cli_parse_long(flag, value, 1, 64, &o->tensor_parallel);
    case REPORT_DEVICES:
      return atlas_cli_parse_devices(flag, value, o->devices, &o->device_count);
    default:
      return atlas_status_make(ATLAS_STATUS_INTERNAL, "option %s unhandled",
                               flag);
  }
}
// One report format into an output opened before the load.
static atlas_status write_report_file(const atlas_model *m,
                                      atlas_report_format format,
                                      const report_options *o,
                                      atlas_cli_output *out) {
  atlas_report_options ro;
  atlas_report_options_init(&ro);
  ro.top = (size_t)o->top;
  ro.min_mb = o->min_mb;
  char *text = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_report(m, format, &ro, &text));
  size_t len = strlen(text);
  bool ok = fwrite(text, 1, len, out->f) == len;
  int err = errno;  // before atlas_free, which may change it
  atlas_free(text);
  if (!ok) {
    char reason[ATLAS_CLI_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", out->path,
                             atlas_cli_strerror(err, reason, sizeof(reason)));
  }
  return ATLAS_OK;
}

// `atlas report`. --json and --svg are opened (as temporary files) before the
// load, so a path that cannot be written fails first, and renamed into place
// only when the whole report succeeded; on failure neither file appears.
static atlas_status report(const report_options *o) {
  atlas_cli_output json, svg;
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_open(
      "--json", o->json[0] != '\0' ? o->json : NULL, &json));
  atlas_status s =
      atlas_cli_output_open("--svg", o->svg[0] != '\0' ? o->svg : NULL, &svg);
  if (s == ATLAS_OK) s = atlas_cli_output_check_pair(&json, &svg);
  if (s == ATLAS_OK)
    s = atlas_cli_output_check_input(&json, "--model", o->model);
  if (s == ATLAS_OK)
    s = atlas_cli_output_check_input(&svg, "--model", o->model);
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(&json);
    atlas_cli_output_abort(&svg);
    return s;
  }
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_open_options oo;
  atlas_cli_open_options_for(o->backend, o->max_seq, &progress, &oo);
  oo.tensor_parallel = (int)o->tensor_parallel;
  oo.devices = o->device_count > 0 ? o->devices : NULL;
  atlas_model *m = NULL;
  s = o->device_count != 0 && o->device_count != (size_t)o->tensor_parallel
          ? atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                              "--devices names %zu devices but "
                              "--tensor-parallel is %ld",
                              o->device_count, o->tensor_parallel)
          : atlas_open(o->model, &oo, &m);
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK && o->kv_budget_mb > 0) {
    atlas_kv_options ko;
    atlas_kv_options_init(&ko);
    ko.budget_bytes = (uint64_t)(o->kv_budget_mb * 1e6);
    s = atlas_kv_open(m, &ko);
  }
  // The JSON and the SVG come from the same rows as the text (--top,
  // --min-mb).
  if (s == ATLAS_OK) s = atlas_cli_print_report(m, (size_t)o->top, o->min_mb);
  if (s == ATLAS_OK && json.f != NULL) {
    s = write_report_file(m, ATLAS_REPORT_JSON, o, &json);
  }
  if (s == ATLAS_OK && svg.f != NULL) {
    s = write_report_file(m, ATLAS_REPORT_SVG, o, &svg);
  }
  s = atlas_status_join(s, atlas_close(m, NULL));
  // Both written out before either is renamed: they appear together.
  if (s == ATLAS_OK) s = atlas_cli_output_close(&json);
  if (s == ATLAS_OK) s = atlas_cli_output_close(&svg);
  if (s == ATLAS_OK) s = atlas_cli_output_commit(&json);
  if (s == ATLAS_OK) s = atlas_cli_output_commit(&svg);
  atlas_cli_output_abort(&json);  // no-ops after a commit
  atlas_cli_output_abort(&svg);
  if (s == ATLAS_OK && o->json[0] != '\0') {
    printf("wrote the JSON report to %s\n", o->json);
  }
  if (s == ATLAS_OK && o->svg[0] != '\0') {
    printf("wrote the SVG chart to %s\n", o->svg);
  }
  return s;
}
int atlas_cli_report_main(int argc, char **argv) {
  report_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return atlas_cli_finish(
        atlas_cli_report_command.program,
        atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  o->backend = "auto";
  o->top = 10;
  int next = 0;
  atlas_cli_parse_result r = atlas_cli_parse(&atlas_cli_report_command, argc,
                                             argv, set_report, o, &next);
  int rc = r != ATLAS_CLI_PARSED
               ? atlas_cli_parsed_exit(r)
               : atlas_cli_finish(atlas_cli_report_command.program, report(o));
  free(o);
  return rc;
}
