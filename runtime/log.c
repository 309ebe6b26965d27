#include "atlas/runtime/log.h"

#include <stdarg.h>
#include <stdio.h>

void atlas_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("atlas: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
