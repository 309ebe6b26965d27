// Runs a fuzz entry point over files named on the command line, so the seed
// corpus is exercised by `bazel test` with the normal compiler.
#define _GNU_SOURCE  // mkdtemp, symlink, mkfifo
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    FILE *f = fopen(argv[i], "rb");
    if (f == NULL) {
      fprintf(stderr, "%s: cannot open\n", argv[i]);
      return 1;
    }
    uint8_t *buf = NULL;
    size_t size = 0;
    size_t cap = 0;
    for (;;) {
      if (size == cap) {
        cap = cap ? cap * 2 : 4096;
        uint8_t *grown = realloc(buf, cap);
        if (grown == NULL) {
          fprintf(stderr, "out of memory\n");
          return 1;
        }
        buf = grown;
      }
      size_t n = fread(buf + size, 1, cap - size, f);
      if (n == 0) break;
      size += n;
    }
    fclose(f);
    // An exact-size copy, so out-of-bounds reads hit the sanitizer's guard.
    uint8_t *exact = malloc(size ? size : 1);
    if (exact == NULL) return 1;
    for (size_t j = 0; j < size; ++j) exact[j] = buf[j];
    free(buf);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
  }
  printf("ran %d inputs\n", argc - 1);
  return 0;
}
