// Whether tokenizing stays linear in time and bounded in memory on text an
// attacker writes (issue 57): encodes 1, 10 and 100 MB (by default) of
// ordinary text and of adversarial text, each in a child process, and prints
// the CPU seconds per MB and the peak memory the encode added, as a multiple
// of the text's size, and for each kind the time per MB at each size over
// that at the smallest (1.00 is linear). A program, not a test: it times
// things. --merges N also times loading a tokenizer.json of N merges (the
// merges of every pair of sqrt(N) characters, as many vocabulary entries).
//
//   bench_tokenizer_budget --tokenizer tokenizer.json [--sizes 1,10,100]
//       [--kinds ordinary,flood,spaces,word] [--merges 1000000]
//
// Kinds of text:
//   ordinary  English-like sentences with numbers and punctuation
//   flood     distinct random words of 8-200 letters: every word misses the
//             BPE word cache and fills it (a fixed hash let crafted words
//             collide there; the cache is bounded and its hash seeded)
//   spaces    runs of spaces and newlines (the pre-tokenizers' whitespace
//             branches and lstrip)
//   word      one word of letters without end (BPE merges over the whole
//             length: refused past the limit max_word_bytes, 1 MiB)
#define _GNU_SOURCE  // wait4
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/tokenizer.h"

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// The resident set now, in bytes (from /proc/self/statm).
static size_t rss_now(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  char line[128] = "";
  if (f != NULL) {
    if (fgets(line, sizeof(line), f) == NULL) line[0] = '\0';
    fclose(f);
  }
  // "size resident shared ...", in pages.
  char *end = NULL;
  (void)strtoul(line, &end, 10);
  unsigned long resident = end != NULL ? strtoul(end, NULL, 10) : 0;
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static char *make_text(const char *kind, size_t n) {
  char *t = malloc(n + 1);
  if (t == NULL) return NULL;
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  static const char kSentence[] =
      "The quick brown fox, number %u, jumps over 12 lazy dogs; isn't it "
      "fine? Yes!\n";
  while (i < n) {
    if (strcmp(kind, "ordinary") == 0) {
      char line[160];
      int k = snprintf(line, sizeof(line), kSentence,
                       (unsigned)(next_random(&seed) % 100000));
      for (int j = 0; j < k && i < n; ++j) t[i++] = line[j];
    } else if (strcmp(kind, "flood") == 0) {
      size_t len = 8 + next_random(&seed) % 193;
      for (size_t j = 0; j < len && i < n; ++j) {
        t[i++] = (char)('a' + next_random(&seed) % 26);
      }
      if (i < n) t[i++] = ' ';
    } else if (strcmp(kind, "spaces") == 0) {
      t[i++] = (next_random(&seed) % 64) == 0 ? '\n' : ' ';
    } else {  // word
      t[i++] = (char)('a' + next_random(&seed) % 26);
    }
  }
  t[n] = '\0';
  return t;
}

// Child: load, make the text, encode; prints one line. Exit 0 on success.
static int run_one(const char *path, const char *kind, size_t mb, int fd) {
  atlas_tokenizer *tok = NULL;
  atlas_status st = atlas_tokenizer_load(path, &tok);
  if (st != ATLAS_OK) {
    fprintf(stderr, "%s\n", atlas_status_message(st));
    atlas_status_free(st);
    return 1;
  }
  size_t n = mb << 20;
  char *text = make_text(kind, n);
  if (text == NULL) return 1;
  size_t before = rss_now();
  double t0 = cpu_s();
  uint32_t *ids = NULL;
  size_t count = 0;
  st = atlas_tokenizer_encode(tok, text, n, false, &ids, &count);
  double secs = cpu_s() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  size_t peak = (size_t)ru.ru_maxrss * 1024;
  double added = peak > before ? (double)(peak - before) : 0.0;
  if (st != ATLAS_OK) {
    printf("%-9s %5zu MB  refused after %.2f s: %s\n", kind, mb, secs,
           atlas_status_message(st));
    atlas_status_free(st);
    secs = -1.0;
  } else {
    printf("%-9s %5zu MB  %10zu ids  %7.3f s  %6.3f s/MB  peak +%.2f x text\n",
           kind, mb, count, secs, secs / (double)mb, added / (double)n);
  }
  fflush(stdout);
  if (write(fd, &secs, sizeof(secs)) != (ssize_t)sizeof(secs)) return 1;
  free(ids);
  free(text);
  atlas_tokenizer_free(tok);
  return 0;
}

// Child: builds a tokenizer.json of n merges and loads it.
static int run_merges(size_t n) {
  size_t side = 1;
  while ((side + 1) * (side + 1) <= n) side++;
  size_t cap = side * side * 40 + side * 24 + 256, len = 0;
  char *j = malloc(cap);
  if (j == NULL) return 1;
  // Characters from U+4E00, 3 bytes each in UTF-8.
  char c[4] = {0};
#define CH(i)                                            \
  (c[0] = (char)(0xE0 | ((0x4E00 + (i)) >> 12)),         \
   c[1] = (char)(0x80 | (((0x4E00 + (i)) >> 6) & 0x3F)), \
   c[2] = (char)(0x80 | ((0x4E00 + (i)) & 0x3F)), c)
  len += (size_t)sprintf(j + len, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
  size_t id = 0;
  for (size_t i = 0; i < side; i++) {
    len += (size_t)sprintf(j + len, "\"%s\":%zu,", CH(i), id++);
  }
  for (size_t i = 0; i < side; i++) {
    for (size_t k = 0; k < side; k++) {
      len += (size_t)sprintf(j + len, "\"%s", CH(i));
      len += (size_t)sprintf(j + len, "%s\":%zu,", CH(k), id++);
    }
  }
  len--;  // the last comma
  len += (size_t)sprintf(j + len, "},\"merges\":[");
  for (size_t i = 0; i < side; i++) {
    for (size_t k = 0; k < side; k++) {
      len += (size_t)sprintf(j + len, "\"%s ", CH(i));
      len += (size_t)sprintf(j + len, "%s\",", CH(k));
    }
  }
  len--;
  len += (size_t)sprintf(j + len, "]}}");
#undef CH
  size_t before = rss_now();
  double t0 = cpu_s();
  atlas_tokenizer *tok = NULL;
  atlas_status st =
      atlas_tokenizer_load_from_memory(j, len, "merges.json", &tok);
  double secs = cpu_s() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  size_t peak = (size_t)ru.ru_maxrss * 1024;
  printf(
      "merges %9zu  load %.3f s  (%.2f us a merge; JSON %.1f MB)  peak +%zu "
      "MB\n",
      side * side, secs, secs * 1e6 / (double)(side * side), (double)len / 1e6,
      (peak > before ? peak - before : 0) >> 20);
  if (st != ATLAS_OK) printf("  refused: %s\n", atlas_status_message(st));
  fflush(stdout);
  atlas_status_free(st);
  atlas_tokenizer_free(tok);
  free(j);
  return 0;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  char sizes[256] = "1,10,100";
  char kinds[256] = "ordinary,flood,spaces,word";
  char merges[256] = "";
  static const struct option kOptions[] = {
      {"tokenizer", required_argument, NULL, 't'},
      {"sizes", required_argument, NULL, 's'},
      {"kinds", required_argument, NULL, 'k'},
      {"merges", required_argument, NULL, 'm'},
      {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", kOptions, NULL)) != -1) {
    if (c == 't') {
      path = optarg;
    } else if (c == 's') {
      snprintf(sizes, sizeof(sizes), "%s", optarg);
    } else if (c == 'k') {
      snprintf(kinds, sizeof(kinds), "%s", optarg);
    } else if (c == 'm') {
      snprintf(merges, sizeof(merges), "%s", optarg);
    } else {
      return 2;
    }
  }
  if (path == NULL) {
    fprintf(
        stderr,
        "usage: bench_tokenizer_budget --tokenizer FILE [--sizes 1,10,100]\n");
    return 2;
  }
  static const char *const kKinds[] = {"ordinary", "flood", "spaces", "word"};
  int rc = 0;
  for (size_t k = 0; k < sizeof(kKinds) / sizeof(kKinds[0]); ++k) {
    if (strstr(kinds, kKinds[k]) == NULL) continue;
    char list[256];
    snprintf(list, sizeof(list), "%s", sizes);
    double first_per_mb = 0.0;
    size_t first_mb = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
      size_t mb = (size_t)strtoul(tok, NULL, 10);
      if (mb == 0) continue;
      int p[2];
      if (pipe(p) != 0) return 1;
      fflush(stdout);  // a child must not print the parent's lines again
      pid_t pid = fork();
      if (pid == 0) {
        close(p[0]);
        _exit(run_one(path, kKinds[k], mb, p[1]));
      }
      close(p[1]);
      double secs = -1.0;
      if (read(p[0], &secs, sizeof(secs)) != (ssize_t)sizeof(secs)) secs = -1;
      close(p[0]);
      int status = 0;
      if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        printf("%-9s %5zu MB  FAILED (status %d)\n", kKinds[k], mb, status);
        rc = 1;
      } else if (secs >= 0.0 && first_mb == 0) {
        first_mb = mb;
        first_per_mb = secs / (double)mb;
      } else if (secs >= 0.0 && first_per_mb > 0.0) {
        printf("%-9s %5zu MB  time a MB %.2f x that at %zu MB\n", kKinds[k], mb,
               secs / (double)mb / first_per_mb, first_mb);
      }
    }
  }
  char list[256];
  snprintf(list, sizeof(list), "%s", merges);
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    size_t n = (size_t)strtoul(tok, NULL, 10);
    if (n == 0) continue;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(run_merges(n));
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      printf("merges %zu FAILED (status %d)\n", n, status);
      rc = 1;
    }
  }
  return rc;
}
