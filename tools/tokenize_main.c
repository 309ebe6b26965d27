// A small tool to try a tokenizer.json by hand (the atlas CLI's tokenize /
// detokenize commands are wired by the lead):
//
//   tokenize --tokenizer FILE [--no-special] (--text STRING | --file PATH)
//   tokenize --tokenizer FILE --decode 1,2,3 [--skip-special]
//
// Encoding prints the ids, comma-separated; decoding prints the text.
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/status.h"
#include "atlas/runtime/text/tokenizer.h"

static int fail(atlas_status st) {
  fprintf(stderr, "tokenize: %s\n", atlas_status_message(st));
  atlas_status_free(st);
  return 1;
}

static char *read_file(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0, n;
  char *data = malloc(cap);
  while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      cap *= 2;
      char *d = realloc(data, cap);
      if (!d) free(data);
      data = d;
    }
  }
  fclose(f);
  *out_len = len;
  return data;
}

static int decode(atlas_tokenizer *tok, const char *list, bool skip) {
  // Every id takes at least two characters ("1,"), so this many slots do.
  size_t cap = strlen(list) / 2 + 1, n = 0;
  uint32_t *ids = malloc(cap * sizeof(*ids));
  if (!ids) {
    fprintf(stderr, "tokenize: out of memory\n");
    return 1;
  }
  const char *p = list;
  while (*p && n < cap) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v > UINT32_MAX) {
      fprintf(stderr, "tokenize: --decode wants ids like 1,2,3 (at \"%s\")\n", p);
      free(ids);
      return 2;
    }
    ids[n++] = (uint32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  char *text = NULL;
  size_t len = 0;
  atlas_status st = atlas_tokenizer_decode(tok, ids, n, skip, &text, &len);
  free(ids);
  if (st) return fail(st);
  fwrite(text, 1, len, stdout);
  fputc('\n', stdout);
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  const char *tok_path = NULL, *text = NULL, *file = NULL, *ids = NULL;
  bool add_special = true, skip_special = false;
  const struct option opts[] = {
      {"tokenizer", required_argument, NULL, 't'},
      {"text", required_argument, NULL, 'x'},
      {"file", required_argument, NULL, 'f'},
      {"decode", required_argument, NULL, 'd'},
      {"no-special", no_argument, NULL, 'n'},
      {"skip-special", no_argument, NULL, 's'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 't': tok_path = optarg; break;
      case 'x': text = optarg; break;
      case 'f': file = optarg; break;
      case 'd': ids = optarg; break;
      case 'n': add_special = false; break;
      case 's': skip_special = true; break;
      default:
        fprintf(stderr,
                "usage: tokenize --tokenizer FILE [--no-special] (--text S | "
                "--file PATH)\n       tokenize --tokenizer FILE --decode "
                "1,2,3 [--skip-special]\n");
        return 2;
    }
  }
  if (!tok_path || (!text && !file && !ids)) {
    fprintf(stderr, "tokenize: --tokenizer and one of --text, --file, "
                    "--decode are required\n");
    return 2;
  }
  atlas_tokenizer *tok = NULL;
  atlas_status st = atlas_tokenizer_load(tok_path, &tok);
  if (st) return fail(st);
  int rc = 0;
  if (ids) {
    rc = decode(tok, ids, skip_special);
  } else {
    size_t len = text ? strlen(text) : 0;
    char *data = NULL;
    if (file && !(data = read_file(file, &len))) {
      fprintf(stderr, "tokenize: cannot read %s\n", file);
      rc = 1;
    }
    uint32_t *out = NULL;
    size_t n = 0;
    if (!rc) {
      st = atlas_tokenizer_encode(tok, data ? data : text, len, add_special,
                                  &out, &n);
      if (st) rc = fail(st);
    }
    for (size_t i = 0; !rc && i < n; i++) printf(i ? ",%u" : "%u", out[i]);
    if (!rc) printf("\n");
    free(out);
    free(data);
  }
  atlas_tokenizer_free(tok);
  return rc;
}
