#include "atlas/runtime/chat/jinja_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(jinja_buf *b, size_t extra) {
  if (b->oom) return false;
  if (b->len + extra + 1 <= b->cap) return true;
  if (extra > JINJA_MAX_BUILT_TEXT || b->len + extra > JINJA_MAX_BUILT_TEXT) {
    b->oom = b->too_large = true;
    return false;
  }
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->oom = true;
    return false;
  }
  b->data = p;
  b->cap = cap;
  return true;
}

void atlas_jinja_buf_append(jinja_buf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void atlas_jinja_buf_append_repeated(jinja_buf *b, const char *s, size_t n,
                                     size_t times) {
  size_t total = 0;
  if (n == 0 || times == 0) return;
  if (__builtin_mul_overflow(n, times, &total)) {
    b->oom = b->too_large = true;
    return;
  }
  if (!reserve(b, total)) return;
  char *dst = b->data + b->len;
  memcpy(dst, s, n);
  for (size_t done = n; done < total;) {  // what is written so far, again
    const size_t k = done < total - done ? done : total - done;
    memcpy(dst + done, dst, k);
    done += k;
  }
  b->len += total;
  b->data[b->len] = '\0';
}

void atlas_jinja_buf_puts(jinja_buf *b, const char *s) {
  atlas_jinja_buf_append(b, s, strlen(s));
}

void atlas_jinja_buf_putc(jinja_buf *b, char c) {
  atlas_jinja_buf_append(b, &c, 1);
}

void atlas_jinja_buf_printf(jinja_buf *b, const char *fmt, ...) {
  char small[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->oom = true;
    return;
  }
  if ((size_t)n < sizeof small) {
    atlas_jinja_buf_append(b, small, (size_t)n);
    return;
  }
  if (!reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void atlas_jinja_buf_free(jinja_buf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

uint32_t atlas_jinja_utf8_next(const char *str, size_t n, size_t *i) {
  const unsigned char *s = (const unsigned char *)str;
  const size_t p = *i;
  const unsigned char c = s[p];
  const size_t extra = c >= 0xf8   ? 0
                       : c >= 0xf0 ? 3
                       : c >= 0xe0 ? 2
                       : c >= 0xc0 ? 1
                                   : 0;
  if (extra > 0 && p + extra < n) {
    uint32_t cp = c & (0x3fu >> extra);
    bool ok = true;
    for (size_t k = 1; k <= extra; ++k) {
      if ((s[p + k] & 0xc0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (s[p + k] & 0x3f);
    }
    if (ok) {
      *i = p + 1 + extra;
      return cp;
    }
  }
  *i = p + 1;
  return c;
}

void atlas_jinja_utf8_put(jinja_buf *b, uint32_t cp) {
  char t[4];
  if (cp < 0x80) {
    t[0] = (char)cp;
    atlas_jinja_buf_append(b, t, 1);
  } else if (cp < 0x800) {
    t[0] = (char)(0xc0 | (cp >> 6));
    t[1] = (char)(0x80 | (cp & 0x3f));
    atlas_jinja_buf_append(b, t, 2);
  } else if (cp < 0x10000) {
    t[0] = (char)(0xe0 | (cp >> 12));
    t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[2] = (char)(0x80 | (cp & 0x3f));
    atlas_jinja_buf_append(b, t, 3);
  } else {
    t[0] = (char)(0xf0 | (cp >> 18));
    t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[3] = (char)(0x80 | (cp & 0x3f));
    atlas_jinja_buf_append(b, t, 4);
  }
}

size_t atlas_jinja_utf8_length(const char *s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n;) {
    atlas_jinja_utf8_next(s, n, &i);
    ++count;
  }
  return count;
}

size_t atlas_jinja_utf8_offset(const char *s, size_t n, size_t index) {
  size_t i = 0;
  for (size_t k = 0; k < index && i < n; ++k) atlas_jinja_utf8_next(s, n, &i);
  return i;
}

bool atlas_jinja_is_py_space(uint32_t cp) {
  if (cp <= 0x20)
    return (cp >= 0x09 && cp <= 0x0d) ||
           cp >= 0x1c;  // \t..\r, \x1c..\x1f, space
  switch (cp) {
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}
