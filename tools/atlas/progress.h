// A load progress bar on stderr, shown only when stderr is a terminal and
// the load has taken more than a moment.
#ifndef ATLAS_TOOLS_PROGRESS_H_
#define ATLAS_TOOLS_PROGRESS_H_

#include <stdbool.h>
#include <stdint.h>

typedef struct atlas_progress {
  const char *label;
  bool enabled;  // stderr is a terminal
  bool drawn;    // something was printed (finish with a newline)
  double start_ms;
} atlas_progress;

void atlas_progress_init(atlas_progress *p, const char *label);
// Matches atlas_decoder_load_options.progress.
void atlas_progress_update(void *ctx, uint64_t done, uint64_t total);
void atlas_progress_finish(atlas_progress *p);
// The monotonic clock the bar measures with, in milliseconds (run --stats).
double atlas_progress_now_ms(void);

#endif  // ATLAS_TOOLS_PROGRESS_H_
