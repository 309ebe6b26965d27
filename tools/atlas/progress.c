#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include "atlas/tools/atlas/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

double atlas_progress_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void atlas_progress_init(atlas_progress *p, const char *label) {
  p->label = label;
  p->enabled = isatty(STDERR_FILENO) != 0;
  p->drawn = false;
  p->start_ms = atlas_progress_now_ms();
}

void atlas_progress_update(void *ctx, uint64_t done, uint64_t total) {
  atlas_progress *p = ctx;
  // Quick loads stay quiet: a bar that flashes for 50 ms is noise.
  if (!p->enabled || total == 0 ||
      atlas_progress_now_ms() - p->start_ms < 300.0)
    return;
  const int width = 30;
  int filled = (int)((double)done / (double)total * width);
  fprintf(stderr, "\r%s [", p->label);
  for (int i = 0; i < width; ++i) fputc(i < filled ? '#' : ' ', stderr);
  double secs = (atlas_progress_now_ms() - p->start_ms) / 1e3;
  // In GB throughout, as the rate: a bar is only drawn for loads that take
  // a while, so the sizes are large (and the CLI links only the public API,
  // which has no byte formatter).
  fprintf(stderr, "] %3d%% %.2f / %.2f GB  %.2f GB/s ",
          (int)(100.0 * done / total), (double)done / 1e9, (double)total / 1e9,
          secs > 0 ? done / secs / 1e9 : 0.0);
  p->drawn = true;
}

void atlas_progress_finish(atlas_progress *p) {
  if (p->drawn) fputc('\n', stderr);
  p->drawn = false;
}
