// Escaping outside text for messages: see escape.h.
#include "atlas/runtime/base/escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

size_t atlas_escape_utf8_length(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  uint32_t min;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, cp = c & 0x1fu, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, cp = c & 0x0fu, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0;  // a continuation byte, an overlong lead (c0, c1) or f5..ff
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

// The code point of a well-formed sequence of `len` bytes.
static uint32_t code_point(const unsigned char *s, size_t len) {
  static const unsigned char kLeadMask[5] = {0, 0x7f, 0x1f, 0x0f, 0x07};
  uint32_t cp = s[0] & kLeadMask[len];
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (s[i] & 0x3fu);
  return cp;
}

// True for a code point shown escaped: controls and the reordering marks.
static bool is_escaped_point(uint32_t cp, unsigned flags) {
  if (cp == '\n') return (flags & ATLAS_ESCAPE_KEEP_NEWLINE) == 0;
  if (cp == '\\') return (flags & ATLAS_ESCAPE_BACKSLASH) != 0;
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return true;
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// How many bytes at `s` form one unit: a well-formed character (kept or
// escaped whole) or one stray byte (escaped). *out_escaped says which.
static size_t next_unit(const unsigned char *s, size_t n, unsigned flags,
                        bool *out_escaped) {
  size_t len = atlas_escape_utf8_length(s, n);
  if (len == 0) {
    *out_escaped = true;
    return 1;
  }
  *out_escaped = is_escaped_point(code_point(s, len), flags);
  return len;
}

int atlas_escape_is_clean(const char *s, size_t n, unsigned flags) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    bool escaped;
    i += next_unit(u + i, n - i, flags, &escaped);
    if (escaped) return 0;
  }
  return 1;
}

const char *atlas_escape(const char *s, size_t n, unsigned flags, size_t shown,
                         char *buf, size_t size) {
  if (size == 0) return buf;
  if (s == NULL) {
    s = "(null)";
    n = 6;
  }
  static const char kHex[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  // Room for the "...(N more bytes)" tail (at most 38 bytes with the NUL).
  size_t room = size > 40 ? size - 40 : 0;
  size_t limit = n < shown ? n : shown;
  size_t used = 0;
  size_t i = 0;
  while (i < limit) {
    bool escaped;
    size_t len = next_unit(u + i, n - i, flags, &escaped);
    size_t need = escaped ? 4 * len : len;
    if (i + len > limit || used + need > room) break;
    for (size_t k = 0; k < len; ++k) {
      unsigned char c = u[i + k];
      if (escaped) {
        buf[used++] = '\\';
        buf[used++] = 'x';
        buf[used++] = kHex[c >> 4];
        buf[used++] = kHex[c & 15];
      } else {
        buf[used++] = (char)c;
      }
    }
    i += len;
  }
  if (size <= 40 && i < n) used = 0;  // too small for any text and the tail
  buf[used] = '\0';
  if (i < n) snprintf(buf + used, size - used, "...(%zu more bytes)", n - i);
  return buf;
}
