#define _GNU_SOURCE  // vasprintf
#include "atlas/runtime/base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/escape.h"

// The most bytes of one line a sink or stderr gets (leak reports are long;
// a line quoting a hostile string whole must not be megabytes).
enum { LOG_SHOWN = 1 << 20 };

static void emit(const atlas_log_sink *sink, atlas_log_level level,
                 const char *line) {
  if (sink == NULL || sink->fn == NULL) {
    fprintf(stderr, "atlas: %s\n", line);
  } else {
    sink->fn(sink->ctx, level, line);
  }
}

// Every line is escaped (runtime/base/escape.h) before a sink sees it: a
// server's log must not carry a client's control bytes or text that is not
// UTF-8.
void atlas_log(const atlas_log_sink *sink, atlas_log_level level,
               const char *fmt, ...) {
  bool to_stderr = sink == NULL || sink->fn == NULL;
  if (sink != NULL && level < sink->min_level) return;
  if (to_stderr && level < ATLAS_LOG_INFO) return;
  va_list ap;
  va_start(ap, fmt);
  char *text = NULL;
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) {
    emit(sink, level,
         "(a log line that could not be formatted: out of memory)");
    return;
  }
  const unsigned flags = ATLAS_ESCAPE_KEEP_NEWLINE;
  if ((size_t)n <= LOG_SHOWN && atlas_escape_is_clean(text, (size_t)n, flags)) {
    emit(sink, level, text);
    free(text);
    return;
  }
  size_t size = ATLAS_ESCAPE_BYTES((size_t)LOG_SHOWN);
  char *shown = malloc(size);
  if (shown == NULL) {
    emit(sink, level, "(a log line that could not be escaped: out of memory)");
  } else {
    emit(sink, level,
         atlas_escape(text, (size_t)n, flags, LOG_SHOWN, shown, size));
    free(shown);
  }
  free(text);
}
