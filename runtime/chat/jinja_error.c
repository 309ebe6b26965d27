// The chat-template engine's errors (see jinja_error.h).
#include "atlas/runtime/chat/jinja_error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define POSITION_PREFIX "chat template line "

atlas_status atlas_jinja_error_at(int line, int col, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           POSITION_PREFIX "%d column %d: %s", line, col, msg);
}

atlas_status atlas_jinja_oom(const char *stage) {
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "chat template: out of memory while %s", stage);
}

atlas_status atlas_jinja_buf_status(const jinja_buf *b, const char *stage) {
  if (!b->oom) return ATLAS_OK;
  if (b->too_large) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "chat template: text too large while %s: the engine builds at most "
        "%llu MiB in one string or output",
        stage, JINJA_MAX_BUILT_TEXT >> 20);
  }
  return atlas_jinja_oom(stage);
}

// Whether the message already names a template position.
static bool has_position(atlas_status st) {
  return st != ATLAS_OK && strncmp(atlas_status_message(st), POSITION_PREFIX,
                                   strlen(POSITION_PREFIX)) == 0;
}

atlas_status atlas_jinja_error_annotate(atlas_status st, int line, int col) {
  if (st == ATLAS_OK || has_position(st)) return st;
  return atlas_status_annotate(st, POSITION_PREFIX "%d column %d", line, col);
}
