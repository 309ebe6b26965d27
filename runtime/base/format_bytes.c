// Byte counts as people read them (see format_bytes.h).
#include "atlas/runtime/base/format_bytes.h"

#include <stdio.h>

void atlas_format_bytes(uint64_t bytes, char *buf, size_t buf_size) {
  double b = (double)bytes;
  if (b >= 1e9) {
    snprintf(buf, buf_size, "%.2f GB", b / 1e9);
  } else if (b >= 1e6) {
    snprintf(buf, buf_size, "%.2f MB", b / 1e6);
  } else if (b >= 1e3) {
    snprintf(buf, buf_size, "%.2f kB", b / 1e3);
  } else {
    snprintf(buf, buf_size, "%llu B", (unsigned long long)bytes);
  }
}
