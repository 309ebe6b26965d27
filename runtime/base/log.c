#include "atlas/runtime/base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

void atlas_log(const atlas_log_sink *sink, atlas_log_level level,
               const char *fmt, ...) {
  bool to_stderr = sink == NULL || sink->fn == NULL;
  if (sink != NULL && level < sink->min_level) return;
  if (to_stderr && level < ATLAS_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  if (to_stderr) {
    fputs("atlas: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return;
  }
  char line[1024];
  int n = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n >= sizeof(line)) {
    // Long lines (leak reports) are formatted in full on the heap.
    char *big = malloc((size_t)n + 1);
    if (big != NULL) {
      va_start(ap, fmt);
      vsnprintf(big, (size_t)n + 1, fmt, ap);
      va_end(ap);
      sink->fn(sink->ctx, level, big);
      free(big);
      return;
    }
  }
  sink->fn(sink->ctx, level, line);
}
