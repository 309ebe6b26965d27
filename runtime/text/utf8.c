#include "atlas/runtime/text/utf8.h"

#include <utf8proc.h>

#include "atlas/runtime/text/unicode.h"

// A lead byte's continuation count and the range its first continuation byte
// must fall in (Unicode Table 3-7: no overlongs, no surrogates, nothing past
// U+10FFFF); false for a byte no multi-byte sequence starts with.
static bool lead_byte(unsigned char b, size_t *out_need, unsigned char *out_lo,
                      unsigned char *out_hi) {
  *out_lo = 0x80;
  *out_hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    *out_need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    *out_need = 2;
    if (b == 0xE0) *out_lo = 0xA0;
    if (b == 0xED) *out_hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    *out_need = 3;
    if (b == 0xF0) *out_lo = 0x90;
    if (b == 0xF4) *out_hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

size_t atlas_utf8_valid_len(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t need;
  unsigned char lo, hi;
  if (!lead_byte(s[0], &need, &lo, &hi)) return 0;
  if (n < need + 1) return 0;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i <= need; i++) {
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  }
  return need + 1;
}

// Bytes of the maximal prefix of a valid sequence at s (at least 1): the
// unit that Rust's from_utf8_lossy replaces with one U+FFFD.
static size_t invalid_prefix_len(const unsigned char *s, size_t n) {
  size_t need;
  unsigned char lo, hi;
  if (!lead_byte(s[0], &need, &lo, &hi)) return 1;
  size_t i = 1;
  if (i < n && s[i] >= lo && s[i] <= hi) {
    i++;
    while (i <= need && i < n && s[i] >= 0x80 && s[i] <= 0xBF) i++;
  }
  return i;
}

uint32_t atlas_utf8_decode(const char *str, size_t *out_len) {
  const unsigned char *s = (const unsigned char *)str;
  unsigned char b = s[0];
  if (b < 0x80) {
    *out_len = 1;
    return b;
  }
  if (b < 0xE0) {
    *out_len = 2;
    return ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
  }
  if (b < 0xF0) {
    *out_len = 3;
    return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) |
           (s[2] & 0x3F);
  }
  *out_len = 4;
  return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
         ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

size_t atlas_utf8_first_invalid(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t l = atlas_utf8_valid_len(s + i, n - i);
    if (l == 0) return i;
    i += l;
  }
  return n;
}

atlas_status atlas_utf8_append_lossy(atlas_text_buf *out, const char *str,
                                     size_t n) {
  if (n == 0) return ATLAS_OK;  // str may be NULL then
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0, run = 0;
  while (i < n) {
    size_t l = s[i] < 0x80 ? 1 : atlas_utf8_valid_len(s + i, n - i);
    if (l) {
      i += l;
      continue;
    }
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, s + run, i - run));
    ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, "\xEF\xBF\xBD", 3));
    i += invalid_prefix_len(s + i, n - i);
    run = i;
  }
  return atlas_text_buf_append(out, s + run, n - run);
}

bool atlas_utf8_is_whitespace(uint32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85) return true;
  if (cp < 0x80) return false;
  utf8proc_category_t c = atlas_unicode_category(cp, ATLAS_UNICODE_17);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
         c == UTF8PROC_CATEGORY_ZP;
}

bool atlas_utf8_is_word_char(uint32_t cp) {
  // Rust regex's Unicode \w: Alphabetic, marks, decimal digits, connector
  // punctuation and the joiners. Alphabetic is letters, Nl and
  // Other_Alphabetic, which is marks (already in) plus enclosed Latin letters.
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
           (cp >= 'A' && cp <= 'Z') || cp == '_';
  }
  if (cp == 0x200C || cp == 0x200D) return true;
  if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
      (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189)) {
    return true;
  }
  switch (atlas_unicode_category(cp, ATLAS_UNICODE_16)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool atlas_utf8_is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  switch (atlas_unicode_category(cp, ATLAS_UNICODE_17)) {
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}
