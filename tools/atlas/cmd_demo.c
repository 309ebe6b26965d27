// atlas demo: two models built into the binary, loaded, run, hot-swapped and
// torn down, with the memory reports and what leaked (nothing).
#include <stdio.h>

#include "atlas/atlas.h"
#include "atlas/tools/atlas/cli_common.h"
#include "atlas/tools/atlas/commands.h"
#include "atlas/tools/atlas/generate.h"
#include "atlas/tools/checkpoint/make_checkpoint_demo_models.h"

typedef struct demo_options {
  const char *backend;
} demo_options;
// ---- demo ----------------------------------------------------------------------

static const atlas_cli_option kDemoOptions[] = {
    {"backend", "KIND", false, "host", atlas_cli_backend_help},
};

const atlas_cli_command atlas_cli_demo_command = {
    "atlas demo",
    "[options]",
    "Loads tiny-a, a Llama model built into this binary, generates 8 tokens\n"
    "after the prompt 1,2,3, hot-swaps to tiny-b in the same process,\n"
    "generates again, tears everything down and reports what leaked "
    "(nothing).\n"
    "Both models have random weights: the token ids are not text, and a\n"
    "random model often repeats an id; that is expected.",
    kDemoOptions,
    sizeof(kDemoOptions) / sizeof(kDemoOptions[0]),
    0,
    ATLAS_VERSION_STRING};

static atlas_status set_demo(void *opts, size_t index, const char *value) {
  demo_options *o = opts;
  (void)index;  // only --backend
  return atlas_cli_parse_backend(value, &o->backend);
}
static atlas_status print_model_line(const atlas_model *m) {
  atlas_model_info info = {.struct_size = sizeof(info)};
  ATLAS_RETURN_IF_ERROR(atlas_model_info_get(m, &info));
  printf("model %s on %s\n", info.name, info.backend);
  return ATLAS_OK;
}

// The README's main job: load an embedded model, generate, swap to the
// second embedded model in the same process, generate, tear down, report.
static atlas_status demo(const demo_options *o) {
  const atlas_demo_model *a = atlas_demo_model_find("tiny-a");
  const atlas_demo_model *b = atlas_demo_model_find("tiny-b");
  if (a == NULL || b == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_NOT_FOUND,
        "the embedded demo models are missing from this build");
  }
  atlas_open_options oo;
  atlas_open_options_init(&oo);
  oo.backend = o->backend;
  oo.max_seq = 64;
  const uint32_t prompt[] = {1, 2, 3};
  const size_t steps = 8;

  printf(
      "demo: two tiny Llama models built into this binary, tiny-a and "
      "tiny-b, with RANDOM weights:\n"
      "their token ids are not text, and repeated ids are expected, not a "
      "bug.\nprompt 1,2,3; %zu tokens each, greedy.\n\n",
      steps);
  atlas_model *m = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_open_memory(a->name, a->config_json,
                                          a->config_bytes, a->weights,
                                          a->weights_bytes, &oo, &m));
  atlas_status s = print_model_line(m);
  if (s == ATLAS_OK) {
    printf("generated: ");
    s = atlas_cli_generate(m, prompt, 3, steps, false, NULL, NULL, NULL);
  }
  if (s == ATLAS_OK) s = atlas_cli_print_report(m, 10, 0.0);
  if (s == ATLAS_OK) {
    atlas_swap_info r;
    s = atlas_swap_memory(&m, b->name, b->config_json, b->config_bytes,
                          b->weights, b->weights_bytes, &oo, &r);
    if (s == ATLAS_OK) {
      atlas_model_info info = {.struct_size = sizeof(info)};
      s = atlas_model_info_get(m, &info);
      if (s == ATLAS_OK) {
        printf(
            "\nswapped to %s in %.2f ms (%s; teardown %.2f ms, load %.2f "
            "ms)\n",
            info.name, r.total_ms, r.side_by_side ? "side by side" : "replace",
            r.teardown_ms, r.load_ms);
        printf("generated: ");
        s = atlas_cli_generate(m, prompt, 3, steps, false, NULL, NULL, NULL);
      }
    } else {
      s = atlas_cli_report_swap(s, &r, a->name, b->name);
    }
  }
  if (s == ATLAS_OK) s = atlas_cli_print_report(m, 10, 0.0);
  if (m == NULL) return s;
  atlas_close_report td;
  atlas_status closed = atlas_close(m, &td);
  if (closed == ATLAS_OK) {
    printf("\n");
    atlas_cli_print_close(&td);
    if (td.leaked_allocations > 0 && s == ATLAS_OK) {
      s = atlas_status_make(ATLAS_STATUS_INTERNAL,
                            "the sweep found %zu unreleased allocations "
                            "(%llu bytes)",
                            td.leaked_allocations,
                            (unsigned long long)td.leaked_bytes);
    }
  }
  return atlas_status_join(s, closed);
}
int atlas_cli_demo_main(int argc, char **argv) {
  demo_options o = {"host"};
  int next = 0;
  atlas_cli_parse_result r =
      atlas_cli_parse(&atlas_cli_demo_command, argc, argv, set_demo, &o, &next);
  if (r != ATLAS_CLI_PARSED) return atlas_cli_parsed_exit(r);
  return atlas_cli_finish(atlas_cli_demo_command.program, demo(&o));
}
