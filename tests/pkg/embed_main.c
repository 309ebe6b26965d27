// A program that knows Atlas only through the installed atlas/atlas.h and
// pkg-config: opens a checkpoint, generates, closes, prints the leak report.
#include <stdio.h>
#include <stdlib.h>

#include <atlas/atlas.h>

static int fail(atlas_status st, const char *what) {
  fprintf(stderr, "%s: %s\n", what, atlas_status_message(st));
  atlas_status_free(st);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  printf("atlas %s\n", atlas_version());
  atlas_open_options open;
  atlas_open_options_init(&open);
  open.backend = "host";
  atlas_model *model = NULL;
  atlas_status st = atlas_open(argv[1], &open, &model);
  if (st) return fail(st, "open");
  atlas_generate_options gen;
  atlas_generate_options_init(&gen);
  gen.max_new_tokens = 4;
  gen.ignore_eos = true;
  const uint32_t prompt[] = {1, 2, 3};
  uint32_t out[4];
  size_t n = 0;
  st = atlas_generate(model, prompt, 3, &gen, out, &n);
  if (st) {
    atlas_status_free(atlas_close(model, NULL));
    return fail(st, "generate");
  }
  printf("generated:");
  for (size_t i = 0; i < n; i++) printf(" %u", (unsigned)out[i]);
  printf("\n");
  atlas_close_report report;
  st = atlas_close(model, &report);
  if (st) return fail(st, "close");
  printf("leaked: %llu bytes in %zu allocations\n",
         (unsigned long long)report.leaked_bytes, report.leaked_allocations);
  return n == 4 && report.leaked_bytes == 0 ? 0 : 1;
}
