// The Unicode versions Hugging Face tokenizers classifies by, over the older
// tables of the Debian 12 libraries Atlas links (PCRE2 10.42: Unicode 14.0;
// utf8proc 2.8: 15.0). tokenizers 0.23.2, probed character by character:
//  - Oniguruma's \p{..} and the regex crate's \w: Unicode 16.0;
//  - Rust's char (is_numeric, which Digits splits on): Unicode 17.0;
//  - its normalizers (the unicode-normalization-alignments crate): 9.0.
// Without this, a character assigned since 14.0 (CJK Extensions H and I,
// Egyptian Hieroglyphs Extended-A, new digits, ...) is "unassigned" to the
// pre-tokenizer's \p{L} and the ids differ; one assigned since 9.0 would be
// normalized where tokenizers leaves it alone.
// The tables come from the Unicode Character Database:
// tools/dev/gen_unicode_added.sh.
#ifndef ATLAS_RUNTIME_TEXT_UNICODE_H_
#define ATLAS_RUNTIME_TEXT_UNICODE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <utf8proc.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/text_buf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_unicode_version {
  ATLAS_UNICODE_16,  // Oniguruma, the regex crate
  ATLAS_UNICODE_17,  // Rust's char
} atlas_unicode_version;

// The general category of cp in Unicode version v.
utf8proc_category_t atlas_unicode_category(uint32_t cp,
                                           atlas_unicode_version v);

// Whether cp was assigned after Unicode 9.0: to tokenizers' normalizers
// (NFC, NFD, NFKC, NFKD) it is unassigned, so it keeps its form, composes
// with nothing and is a starter.
bool atlas_unicode_after_9(uint32_t cp);

// For a general category or group named as in \p{..} ("L", "Lo", "N", ...):
// appends to out, as PCRE2 class items "\x{lo}-\x{hi}", every code point
// that is in it in Unicode 16.0 but was not in Unicode 14.0, and sets *known.
// Another name (a script, "Any", ...) appends nothing and sets *known false.
// Adding cannot take a code point out: with PCRE2 10.42, \p{Cn} still
// matches the code points assigned since 14.0, and \p{Mn} U+1171E (Mc since
// Unicode 15.0).
ATLAS_MUST_USE atlas_status atlas_unicode_append_added(const char *name,
                                                       size_t len,
                                                       atlas_text_buf *out,
                                                       bool *known);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_TEXT_UNICODE_H_
