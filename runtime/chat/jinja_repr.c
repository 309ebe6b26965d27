// Python's repr of a str, as Jinja2 prints a string inside a list, a tuple
// or a dict. Strings here are bytes: a byte that does not start a UTF-8
// sequence reads as the code point of its value (atlas_jinja_utf8_next).
//
// Strings reach megabytes (a client's message, a repeated literal), so the
// output gathers in a few KiB on the stack and each byte costs one table
// lookup: a branch per class of character made a few MB of bytes that are
// not UTF-8 take seconds under the fuzzers' comparison tracing.
#include <string.h>
#include <utf8proc.h>

#include "atlas/runtime/chat/jinja_text.h"

// Python's str.isprintable() (Py_UNICODE_ISPRINTABLE): a code point is
// unprintable when its general category is Cc, Cf, Cs, Co, Cn (unassigned),
// Zl, Zp, or Zs other than the space. Categories come from utf8proc, whose
// Unicode version may differ from the Python that renders a template (see
// runtime/chat/README.md). Past U+10FFFF (a 4-byte form that is too large)
// there is no character: utf8proc says Cn, so it is escaped.
static bool py_unprintable(uint32_t cp) {
  if (cp < 0x7f) return cp < 0x20;
  if (cp <= 0xa0) return true;
  if (cp > 0x10ffff) return true;
  switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return true;
    default:
      return false;
  }
}

// What repr writes for one byte, taken as the code point of its value, and
// what the byte may start.
enum { REPR_BYTE = 0, REPR_LEAD = 1, REPR_QUOTE = 2 };
typedef struct repr_byte {
  char out[4];  // the byte's repr, len bytes of it
  unsigned char len;
  unsigned char kind;  // REPR_BYTE: out is all; REPR_LEAD: may start a
                       // sequence; REPR_QUOTE: ' or ", escaped when the quote
} repr_byte;

// The table, computed by the compiler from these rules: printable ASCII as
// itself, \\ \n \r \t, other controls and the bytes that are unprintable as
// Latin-1 code points (0x7f..0xa0, 0xad) as \xNN, the rest as the UTF-8 of
// U+0080..U+00FF.
#define R_HEX(d) ((d) < 10 ? '0' + (d) : 'a' + (d)-10)
#define R_SHORT(c) ((c) == '\\' || (c) == '\n' || (c) == '\r' || (c) == '\t')
#define R_SHORT_LETTER(c) \
  ((c) == '\\' ? '\\' : (c) == '\n' ? 'n' : (c) == '\r' ? 'r' : 't')
#define R_HEXED(c) \
  (!R_SHORT(c) && ((c) < 0x20 || ((c) >= 0x7f && (c) <= 0xa0) || (c) == 0xad))
#define R_ASCII(c) ((c) >= 0x20 && (c) < 0x7f && (c) != '\\')
#define R_ENTRY(c)                                           \
  {                                                          \
    {(char)(R_ASCII(c)                 ? (c)                 \
            : R_SHORT(c) || R_HEXED(c) ? '\\'                \
                                       : 0xc0 | ((c) >> 6)), \
     (char)(R_ASCII(c)   ? 0                                 \
            : R_SHORT(c) ? R_SHORT_LETTER(c)                 \
            : R_HEXED(c) ? 'x'                               \
                         : 0x80 | ((c)&0x3f)),               \
     (char)(R_HEXED(c) ? R_HEX((c) >> 4) : 0),               \
     (char)(R_HEXED(c) ? R_HEX((c)&15) : 0)},                \
        R_ASCII(c)   ? 1                                     \
        : R_HEXED(c) ? 4                                     \
                     : 2,                                    \
        (c) == '\'' || (c) == '"'   ? REPR_QUOTE             \
        : (c) >= 0xc0 && (c) < 0xf8 ? REPR_LEAD              \
                                    : REPR_BYTE              \
  }
#define R_ROW(h)                                                              \
  R_ENTRY(h), R_ENTRY(h + 1), R_ENTRY(h + 2), R_ENTRY(h + 3), R_ENTRY(h + 4), \
      R_ENTRY(h + 5), R_ENTRY(h + 6), R_ENTRY(h + 7), R_ENTRY(h + 8),         \
      R_ENTRY(h + 9), R_ENTRY(h + 10), R_ENTRY(h + 11), R_ENTRY(h + 12),      \
      R_ENTRY(h + 13), R_ENTRY(h + 14), R_ENTRY(h + 15)
static const repr_byte kReprByte[256] = {
    R_ROW(0x00), R_ROW(0x10), R_ROW(0x20), R_ROW(0x30),
    R_ROW(0x40), R_ROW(0x50), R_ROW(0x60), R_ROW(0x70),
    R_ROW(0x80), R_ROW(0x90), R_ROW(0xa0), R_ROW(0xb0),
    R_ROW(0xc0), R_ROW(0xd0), R_ROW(0xe0), R_ROW(0xf0)};

// What repr writes for a code point decoded from a sequence that it does
// not copy (an overlong form, an unprintable code point): an escape or the
// code point's shortest UTF-8. Returns the length, at most 10 (\U and eight
// digits).
static size_t repr_code_point(uint32_t cp, char q, char *dst) {
  size_t k = 0;
  if (cp == (uint32_t)(unsigned char)q || cp == '\\' || cp == '\n' ||
      cp == '\r' || cp == '\t') {
    dst[k++] = '\\';
    dst[k++] = cp == (uint32_t)(unsigned char)q ? q : R_SHORT_LETTER(cp);
  } else if (py_unprintable(cp)) {
    const int digits = cp < 0x100 ? 2 : cp < 0x10000 ? 4 : 8;
    dst[k++] = '\\';
    dst[k++] = digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
    for (int d = digits - 1; d >= 0; --d) {
      dst[k++] = (char)R_HEX((cp >> (4 * d)) & 15);
    }
  } else if (cp < 0x80) {
    dst[k++] = (char)cp;
  } else if (cp < 0x800) {
    dst[k++] = (char)(0xc0 | (cp >> 6));
    dst[k++] = (char)(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    dst[k++] = (char)(0xe0 | (cp >> 12));
    dst[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[k++] = (char)(0x80 | (cp & 0x3f));
  } else {
    dst[k++] = (char)(0xf0 | (cp >> 18));
    dst[k++] = (char)(0x80 | ((cp >> 12) & 0x3f));
    dst[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[k++] = (char)(0x80 | (cp & 0x3f));
  }
  return k;
}

// A byte the table leaves open at s[*i]: a quote, or a byte that may start
// a UTF-8 sequence. Writes its repr at dst; returns the length (at most 10).
static size_t repr_open_byte(const char *s, size_t n, size_t *i, char q,
                             char *dst) {
  static const uint32_t kShortest[5] = {0, 0, 0x80, 0x800, 0x10000};
  const repr_byte *e = &kReprByte[(unsigned char)s[*i]];
  if (e->kind == REPR_QUOTE) {
    const size_t k = s[*i] == q;
    dst[0] = '\\';
    dst[k] = s[(*i)++];
    return k + 1;
  }
  const size_t at = *i;
  const uint32_t cp = atlas_jinja_utf8_next(s, n, i);
  const size_t bytes = *i - at;
  if (bytes == 1) {  // not UTF-8: the byte as a code point
    memcpy(dst, e->out, 4);
    return e->len;
  }
  if (cp >= kShortest[bytes] && !py_unprintable(cp)) {
    memcpy(dst, s + at, bytes);
    return bytes;
  }
  return repr_code_point(cp, q, dst);
}

void atlas_jinja_repr_string(const char *s, size_t n, jinja_buf *out) {
  const bool has_single = memchr(s, '\'', n) != NULL,
             has_double = memchr(s, '"', n) != NULL;
  const char q = has_single && !has_double ? '"' : '\'';
  char chunk[4096];
  size_t used = 0;
  chunk[used++] = q;
  for (size_t i = 0; i < n;) {
    if (sizeof chunk - used < 16) {
      atlas_jinja_buf_append(out, chunk, used);
      used = 0;
    }
    // A byte writes at most 4 and a character at most 10 (4 a byte, but the
    // last may run 3 bytes past stop): what this many bytes write fits.
    size_t stop = i + (sizeof chunk - used - 10) / 4;
    if (stop > n) stop = n;
    char *dst = chunk + used;
    while (i < stop) {
      const repr_byte *e = &kReprByte[(unsigned char)s[i]];
      if (e->kind == REPR_BYTE) {
        memcpy(dst, e->out, 4);
        dst += e->len;
        ++i;
      } else {
        dst += repr_open_byte(s, n, &i, q, dst);
      }
    }
    used = (size_t)(dst - chunk);  // 4 bytes or more are left
  }
  chunk[used++] = q;
  atlas_jinja_buf_append(out, chunk, used);
}
