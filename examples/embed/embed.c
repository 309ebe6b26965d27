// An embedder's program: Atlas through atlas/atlas.h only. Opens model A,
// generates, swaps to model B, generates, prints the memory report, closes
// and checks atlas_close's leak report ("leaked: 0 bytes").
//
// Usage: embed A/config.json B/config.json (the checkpoint directories).
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "runtime/status.h"  // the embedder's own, not Atlas's

static embed_status check(atlas_status st, const char *what) {
  if (st == ATLAS_OK) return EMBED_OK;
  fprintf(stderr, "embed: %s: %s\n", what, atlas_status_message(st));
  atlas_status_free(st);
  return EMBED_FAILED;
}

static embed_status generate(atlas_model *model, const char *label) {
  atlas_generate_options gen;
  atlas_generate_options_init(&gen);
  gen.max_new_tokens = 6;
  gen.ignore_eos = true;
  const uint32_t prompt[] = {1, 2, 3};
  uint32_t out[6];
  size_t n = 0;
  if (check(atlas_generate(model, prompt, 3, &gen, out, &n), "generate")) {
    return EMBED_FAILED;
  }
  atlas_model_info info = {.struct_size = sizeof info};
  if (check(atlas_model_info_get(model, &info), "model info"))
    return EMBED_FAILED;
  printf("%s: %s on %s, vocab %zu:", label, info.architecture, info.backend,
         info.vocab_size);
  for (size_t i = 0; i < n; i++) printf(" %u", (unsigned)out[i]);
  printf("\n");
  return n == 6 ? EMBED_OK : EMBED_FAILED;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: embed A/config.json B/config.json\n");
    return 2;
  }
  char *a = dirname(argv[1]);
  char *b = dirname(argv[2]);
  printf("atlas %s, backends %s\n", atlas_version(), atlas_backend_names());

  atlas_open_options open;
  atlas_open_options_init(&open);
  open.backend = "host";
  atlas_model *model = NULL;
  if (check(atlas_open(a, &open, &model), "open")) return 1;
  embed_status failed = generate(model, "model a");

  atlas_swap_info swap;
  if (!failed) failed = check(atlas_swap(&model, b, &open, &swap), "swap");
  if (!failed) {
    printf("swap: outcome %d (0: swapped), side by side %d\n",
           (int)swap.outcome, (int)swap.side_by_side);
    failed =
        swap.outcome == ATLAS_SWAP_OUTCOME_SWAPPED ? EMBED_OK : EMBED_FAILED;
  }
  if (!failed) failed = generate(model, "model b");

  char *report = NULL;
  atlas_report_options ropt;
  atlas_report_options_init(&ropt);
  ropt.top = 5;
  if (!failed)
    failed =
        check(atlas_report(model, ATLAS_REPORT_TEXT, &ropt, &report), "report");
  if (!failed) printf("%s", report);
  atlas_free(report);

  atlas_close_report closed;
  if (check(atlas_close(model, &closed), "close")) return 1;
  printf("leaked: %llu bytes in %zu allocations\n",
         (unsigned long long)closed.leaked_bytes, closed.leaked_allocations);
  return failed || closed.leaked_bytes != 0 ? 1 : 0;
}
