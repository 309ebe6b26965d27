// Tokenizer throughput: encodes a text file with a tokenizer.json and prints
// MB/s, single-threaded. Its twin tools/bench/bench_tokenizer_hf.py times
// Hugging Face tokenizers (Rust) the same way on the same files, so the two can
// be compared side by side on one machine.
//
//   bench_tokenizer --tokenizer tokenizer.json --text big.txt
//       [--mode whole|lines] [--repeat N] [--ids-out FILE]
//
// whole: one encode call for the whole file; lines: one call per line (the
// newline kept with its line). add_special_tokens is off in both.
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/tokenizer.h"

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
// CPU time of this process: steadier than wall time on a shared machine.
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int fail(atlas_status st) {
  fprintf(stderr, "bench_tokenizer: %s\n", atlas_status_message(st));
  atlas_status_free(st);
  return 1;
}

static char *read_all(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 20, len = 0;
  char *data = malloc(cap);
  size_t n;
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

// Encodes the text once; returns the number of ids (and appends them to
// `ids_out` when given).
static atlas_status encode_once(atlas_tokenizer *tok, const char *text,
                                size_t len, int lines, FILE *ids_out,
                                size_t *out_ids) {
  size_t total = 0, pos = 0;
  while (pos < len || (pos == 0 && len == 0)) {
    size_t end = len;
    if (lines) {
      const char *nl = memchr(text + pos, '\n', len - pos);
      end = nl ? (size_t)(nl - text) + 1 : len;
    }
    uint32_t *ids = NULL;
    size_t n = 0;
    atlas_status st =
        atlas_tokenizer_encode(tok, text + pos, end - pos, false, &ids, &n);
    if (st) return st;
    if (ids_out) {
      for (size_t i = 0; i < n; i++) fprintf(ids_out, "%u\n", ids[i]);
    }
    free(ids);
    total += n;
    pos = end;
    if (len == 0) break;
  }
  *out_ids = total;
  return ATLAS_OK;
}

int main(int argc, char **argv) {
  const char *tok_path = NULL, *text_path = NULL, *ids_path = NULL;
  int lines = 0, repeat = 3;
  const struct option opts[] = {
      {"tokenizer", required_argument, NULL, 't'},
      {"text", required_argument, NULL, 'x'},
      {"mode", required_argument, NULL, 'm'},
      {"repeat", required_argument, NULL, 'r'},
      {"ids-out", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 't':
        tok_path = optarg;
        break;
      case 'x':
        text_path = optarg;
        break;
      case 'm':
        if (strcmp(optarg, "lines") == 0) {
          lines = 1;
        } else if (strcmp(optarg, "whole") != 0) {
          fprintf(stderr, "bench_tokenizer: --mode is whole or lines\n");
          return 2;
        }
        break;
      case 'r':
        repeat = (int)strtol(optarg, NULL, 10);
        break;
      case 'o':
        ids_path = optarg;
        break;
      default:
        fprintf(stderr,
                "usage: bench_tokenizer --tokenizer FILE --text FILE "
                "[--mode whole|lines] [--repeat N] [--ids-out FILE]\n");
        return c == 'h' ? 0 : 2;
    }
  }
  if (!tok_path || !text_path || repeat < 1) {
    fprintf(stderr, "bench_tokenizer: --tokenizer and --text are required\n");
    return 2;
  }
  size_t len = 0;
  char *text = read_all(text_path, &len);
  if (!text) {
    fprintf(stderr, "bench_tokenizer: cannot read %s\n", text_path);
    return 1;
  }
  double t0 = now_s();
  atlas_tokenizer *tok = NULL;
  atlas_status st = atlas_tokenizer_load(tok_path, &tok);
  if (st) {
    free(text);
    return fail(st);
  }
  double load_s = now_s() - t0;
  double best = 1e30, best_cpu = 1e30;
  size_t n_ids = 0;
  for (int r = 0; r < repeat; r++) {
    // Each run starts with an empty word cache, like a fresh process.
    if (r > 0) {
      atlas_tokenizer_free(tok);
      st = atlas_tokenizer_load(tok_path, &tok);
      if (st) break;
    }
    FILE *ids_out = (r == 0 && ids_path) ? fopen(ids_path, "w") : NULL;
    double t = now_s(), tc = cpu_s();
    st = encode_once(tok, text, len, lines, ids_out, &n_ids);
    double dt = now_s() - t, dtc = cpu_s() - tc;
    if (ids_out) fclose(ids_out);
    if (st) break;
    if ((!ids_out || repeat == 1) && dt < best) best = dt;
    if ((!ids_out || repeat == 1) && dtc < best_cpu) best_cpu = dtc;
  }
  atlas_tokenizer_free(tok);
  free(text);
  if (st) return fail(st);
  printf(
      "atlas: %s mode=%s bytes=%zu tokens=%zu load=%.2fs best_of_%d: "
      "wall %.3fs = %.2f MB/s, cpu %.3fs = %.2f MB/s\n",
      tok_path, lines ? "lines" : "whole", len, n_ids, load_s, repeat, best,
      (double)len / best / 1e6, best_cpu, (double)len / best_cpu / 1e6);
  return 0;
}
