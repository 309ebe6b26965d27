// ptx_image IN.fatbin OUT.fatbin ARCH...: a fatbin holding only the PTX
// entries of IN for the given architectures (e.g. 80 90), copied as they
// are (compressed as nvcc left them). This is the image kernels/images/
// keeps for machines without nvcc: the driver JIT-compiles it for the GPU.
// An empty IN (built without nvcc) gives an empty OUT.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/fatbin_info.h"

enum { kMaxEntries = 64 };

static int fail(const char *what, const char *path) {
  fprintf(stderr, "ptx_image: %s: %s\n", path, what);
  return 1;
}

static unsigned char *read_all(const char *path, size_t *out_size) {
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 20, size = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf != NULL && (got = fread(buf + size, 1, cap - size, f)) > 0) {
    size += got;
    if (size == cap) {
      unsigned char *bigger = realloc(buf, cap * 2);
      if (bigger == NULL) free(buf);
      buf = bigger;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  *out_size = size;
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: ptx_image IN.fatbin OUT.fatbin ARCH...\n");
    return 2;
  }
  const char *in_path = argv[1], *out_path = argv[2];
  size_t size = 0;
  unsigned char *in = read_all(in_path, &size);
  if (in == NULL) return fail("cannot read", in_path);
  FILE *out = fopen(out_path, "wb");
  if (out == NULL) {
    free(in);
    return fail("cannot create", out_path);
  }
  int rc = 0;
  if (size > 0) {
    atlas_fatbin_entry entries[kMaxEntries];
    size_t count = 0;
    const char *why =
        atlas_fatbin_parse(in, size, entries, kMaxEntries, &count);
    if (why != NULL || count > kMaxEntries) {
      rc = fail(why != NULL ? why : "more entries than ptx_image handles",
                in_path);
    }
    const atlas_fatbin_entry *keep[kMaxEntries];
    size_t kept = 0;
    unsigned long long payload = 0;
    for (int a = 3; rc == 0 && a < argc; ++a) {
      unsigned long arch = strtoul(argv[a], NULL, 10);
      size_t i = 0;
      while (i < count &&
             !(entries[i].kind == ATLAS_FATBIN_PTX && entries[i].arch == arch))
        ++i;
      if (i == count) {
        fprintf(stderr, "ptx_image: %s has no PTX for compute_%s\n", in_path,
                argv[a]);
        rc = 1;
      } else {
        keep[kept++] = &entries[i];
        payload += entries[i].bytes;
      }
    }
    if (rc == 0) {
      unsigned char header[ATLAS_FATBIN_HEADER_BYTES];
      memcpy(header, in, 8);  // magic, version
      header[6] = ATLAS_FATBIN_HEADER_BYTES, header[7] = 0;
      memcpy(header + 8, &payload, 8);
      fwrite(header, 1, sizeof(header), out);
      for (size_t i = 0; i < kept; ++i)
        fwrite(in + keep[i]->offset, 1, keep[i]->bytes, out);
    }
  }
  if (fclose(out) != 0 && rc == 0) rc = fail("cannot write", out_path);
  free(in);
  return rc;
}
