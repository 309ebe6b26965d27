#include "atlas/runtime/text/unicode.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct unicode_range {
  uint32_t lo, hi;
  utf8proc_category_t category[2];  // by atlas_unicode_version
} unicode_range;

static const unicode_range kAdded[] = {
#include "unicode_added.inc"  // generated, beside this file
};

static const unicode_range kSince9[] = {
#include "unicode_since9.inc"  // generated, beside this file
};

enum {
  kAddedCount = sizeof(kAdded) / sizeof(kAdded[0]),
  kSince9Count = sizeof(kSince9) / sizeof(kSince9[0]),
};

// The range of t[0..n) (sorted, disjoint) that holds cp, or NULL.
static const unicode_range *find(const unicode_range *t, size_t n,
                                 uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < t[mid].lo) {
      hi = mid;
    } else if (cp > t[mid].hi) {
      lo = mid + 1;
    } else {
      return &t[mid];
    }
  }
  return NULL;
}

utf8proc_category_t atlas_unicode_category(uint32_t cp,
                                           atlas_unicode_version v) {
  const unicode_range *r = find(kAdded, kAddedCount, cp);
  return r ? r->category[v] : utf8proc_category((utf8proc_int32_t)cp);
}

bool atlas_unicode_after_9(uint32_t cp) {
  return cp >= kSince9[0].lo && find(kSince9, kSince9Count, cp) != NULL;
}

// The two-letter names in utf8proc_category_t's order (index = value).
static const char kNames[][3] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc",
                                 "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
                                 "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs",
                                 "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};

enum { kNameCount = sizeof(kNames) / sizeof(kNames[0]) };

// Whether category c belongs to the category or group `name` (1 or 2
// letters, canonical case). Cn is never widened: adding cannot take a code
// point out.
static bool in_group(utf8proc_category_t c, const char *name, size_t len) {
  if ((size_t)c >= kNameCount || c == UTF8PROC_CATEGORY_CN) return false;
  if (len == 1) return kNames[c][0] == name[0];
  return kNames[c][0] == name[0] && kNames[c][1] == name[1];
}

// The canonical spelling ("Lu") of a general category or group named in any
// case, as PCRE2 and Oniguruma match names loosely; false for another name.
static bool canonical_name(const char *name, size_t len, char out[3]) {
  if (len < 1 || len > 2) return false;
  out[0] = (char)toupper((unsigned char)name[0]);
  out[1] = out[2] = '\0';
  if (len == 2) out[1] = (char)tolower((unsigned char)name[1]);
  if (len == 1) return memchr("LMNPSZC", out[0], 7) != NULL;
  for (size_t i = 0; i < kNameCount; i++) {
    if (kNames[i][0] == out[0] && kNames[i][1] == out[1]) return true;
  }
  return false;
}

atlas_status atlas_unicode_append_added(const char *name, size_t len,
                                        atlas_text_buf *out, bool *known) {
  char canon[3];
  *known = canonical_name(name, len, canon);
  if (!*known) return ATLAS_OK;
  name = canon;
  // Ranges of the group that touch are merged, so a class stays short.
  bool open = false;
  uint32_t lo = 0, hi = 0;
  for (size_t i = 0; i <= kAddedCount; i++) {
    bool last = i == kAddedCount;
    if (!last && !in_group(kAdded[i].category[ATLAS_UNICODE_16], name, len)) {
      continue;
    }
    if (!last && open && kAdded[i].lo == hi + 1) {
      hi = kAdded[i].hi;
      continue;
    }
    if (open) {
      char item[32];
      int n = snprintf(item, sizeof(item), "\\x{%x}-\\x{%x}", (unsigned)lo,
                       (unsigned)hi);
      ATLAS_RETURN_IF_ERROR(atlas_text_buf_append(out, item, (size_t)n));
    }
    if (last) break;
    open = true;
    lo = kAdded[i].lo;
    hi = kAdded[i].hi;
  }
  return ATLAS_OK;
}
