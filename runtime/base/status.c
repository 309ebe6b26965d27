// Status objects: heap-allocated on failure, NULL on success.
// The definitions below are what status.h's analyzer model stands for.
#define ATLAS_STATUS_IMPLEMENTATION_
#include "atlas/runtime/base/status.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/escape.h"

struct atlas_status_s {
  atlas_status_code code;
  size_t count;      // failures joined into this one
  bool is_fixed;     // the out-of-memory fallback below: never freed
  const char *file;  // where the first failure was made (a literal)
  int line;
  const char *message;  // `storage` for heap statuses
  char storage[];
};

// When even the status cannot be allocated, callers still need a failure
// they can report; this one is const and never freed.
static const struct atlas_status_s kOutOfMemoryStatus = {
    ATLAS_STATUS_OUT_OF_MEMORY,
    1,
    true,
    __FILE__,
    __LINE__,
    "out of host memory while reporting an error"};

static atlas_status fixed_oom(void) {
  // Never written through: is_fixed keeps free() and annotate away from it.
  return (atlas_status)&kOutOfMemoryStatus;
}

// The most bytes of text a message keeps (joined failures included): the
// rest is cut with "...(N more bytes)", so that one bad string quoted whole
// cannot make a message megabytes long.
enum { MESSAGE_SHOWN = 16384 };

// Every message goes through atlas_escape here, whatever its callers quoted:
// control bytes other than the newlines that separate joined failures, and
// bytes that are not UTF-8, never reach a terminal or a log through a status.
static atlas_status status_from_text(atlas_status_code code, size_t count,
                                     const char *file, int line,
                                     const char *text) {
  size_t len = strlen(text);
  const unsigned flags = ATLAS_ESCAPE_KEEP_NEWLINE;
  bool clean = len <= MESSAGE_SHOWN && atlas_escape_is_clean(text, len, flags);
  size_t room = clean ? len + 1 : ATLAS_ESCAPE_BYTES(MESSAGE_SHOWN);
  atlas_status s = malloc(sizeof(*s) + room);
  if (s == NULL) return fixed_oom();
  s->code = code;
  s->count = count;
  s->is_fixed = false;
  s->file = file;
  s->line = line;
  if (clean) {
    memcpy(s->storage, text, len + 1);
  } else {
    atlas_escape(text, len, flags, MESSAGE_SHOWN, s->storage, room);
  }
  s->message = s->storage;
  return s;
}

static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *buf = malloc((size_t)n + 1);
  if (buf == NULL) return NULL;
  vsnprintf(buf, (size_t)n + 1, fmt, ap);
  return buf;
}

atlas_status atlas_status_make_at(const char *file, int line,
                                  atlas_status_code code, const char *fmt,
                                  ...) {
  if (code == ATLAS_STATUS_OK)
    code = ATLAS_STATUS_INTERNAL;  // never "OK error"
  va_list ap;
  va_start(ap, fmt);
  char *text = vformat(fmt, ap);
  va_end(ap);
  if (text == NULL) return fixed_oom();
  atlas_status s = status_from_text(code, 1, file, line, text);
  free(text);
  return s;
}

atlas_status atlas_status_annotate(atlas_status status, const char *fmt, ...) {
  if (status == ATLAS_OK) return ATLAS_OK;
  va_list ap;
  va_start(ap, fmt);
  char *prefix = vformat(fmt, ap);
  va_end(ap);
  if (prefix == NULL) return status;  // keep the original failure
  size_t plen = strlen(prefix);
  size_t mlen = strlen(status->message);
  char *text = malloc(plen + 2 + mlen + 1);
  if (text == NULL) {
    free(prefix);
    return status;
  }
  snprintf(text, plen + 2 + mlen + 1, "%s: %s", prefix, status->message);
  free(prefix);
  atlas_status out = status_from_text(status->code, status->count, status->file,
                                      status->line, text);
  free(text);
  if (out->is_fixed) return status;
  atlas_status_free(status);
  return out;
}

atlas_status atlas_status_join(atlas_status first, atlas_status second) {
  if (first == ATLAS_OK) return second;
  if (second == ATLAS_OK) return first;
  size_t a = strlen(first->message);
  size_t b = strlen(second->message);
  char *text = malloc(a + 1 + b + 1);
  if (text == NULL) {
    atlas_status_free(second);
    return first;
  }
  snprintf(text, a + 1 + b + 1, "%s\n%s", first->message, second->message);
  atlas_status out = status_from_text(first->code, first->count + second->count,
                                      first->file, first->line, text);
  free(text);
  if (out->is_fixed) {
    atlas_status_free(second);
    return first;
  }
  atlas_status_free(first);
  atlas_status_free(second);
  return out;
}

atlas_status_code atlas_status_code_of(atlas_status status) {
  return status == ATLAS_OK ? ATLAS_STATUS_OK : status->code;
}

const char *atlas_status_message(atlas_status status) {
  return status == ATLAS_OK ? "" : status->message;
}

size_t atlas_status_count(atlas_status status) {
  return status == ATLAS_OK ? 0 : status->count;
}

const char *atlas_status_code_name(atlas_status_code code) {
  switch (code) {
    case ATLAS_STATUS_OK:
      return "OK";
    case ATLAS_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case ATLAS_STATUS_NOT_FOUND:
      return "NOT_FOUND";
    case ATLAS_STATUS_OUT_OF_MEMORY:
      return "OUT_OF_MEMORY";
    case ATLAS_STATUS_UNAVAILABLE:
      return "UNAVAILABLE";
    case ATLAS_STATUS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case ATLAS_STATUS_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case ATLAS_STATUS_DATA_LOSS:
      return "DATA_LOSS";
    case ATLAS_STATUS_IO:
      return "IO";
    case ATLAS_STATUS_INTERNAL:
      return "INTERNAL";
    case ATLAS_STATUS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case ATLAS_STATUS_ABORTED:
      return "ABORTED";
  }
  return "UNKNOWN";
}

const char *atlas_status_file(atlas_status status) {
  return status == ATLAS_OK ? "" : status->file;
}

int atlas_status_line(atlas_status status) {
  return status == ATLAS_OK ? 0 : status->line;
}

void atlas_status_free(atlas_status status) {
  if (status != ATLAS_OK && !status->is_fixed) free(status);
}

atlas_status_code atlas_status_consume(atlas_status status) {
  atlas_status_code code = atlas_status_code_of(status);
  atlas_status_free(status);
  return code;
}
