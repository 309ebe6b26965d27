// UTF-8 helpers with the exact semantics of Rust's standard library, which
// Hugging Face tokenizers inherits: validation, String::from_utf8_lossy, and
// char::is_whitespace / is_numeric and the regex crate's \w, each by the
// Unicode version tokenizers' build has (unicode.h).
#ifndef ATLAS_RUNTIME_TEXT_UTF8_H_
#define ATLAS_RUNTIME_TEXT_UTF8_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/text_buf.h"

// Length in bytes of the valid UTF-8 sequence at s[0..n), or 0 if invalid.
size_t atlas_utf8_valid_len(const unsigned char *s, size_t n);

// Decodes the character at s (which must be valid UTF-8); sets *out_len.
uint32_t atlas_utf8_decode(const char *s, size_t *out_len);

// Byte offset of the first invalid sequence, or n when s is valid.
size_t atlas_utf8_first_invalid(const char *s, size_t n);

// Appends s to out, replacing each maximal invalid subpart with U+FFFD
// (Rust's String::from_utf8_lossy).
ATLAS_MUST_USE atlas_status atlas_utf8_append_lossy(atlas_text_buf *out,
                                                    const char *s, size_t n);

// Rust char::is_whitespace (the White_Space property).
bool atlas_utf8_is_whitespace(uint32_t cp);
// Rust char::is_numeric (categories Nd, Nl, No): what Digits splits on.
bool atlas_utf8_is_numeric(uint32_t cp);
// Rust regex's Unicode \w, which added tokens' single_word tests.
bool atlas_utf8_is_word_char(uint32_t cp);

#endif  // ATLAS_RUNTIME_TEXT_UTF8_H_
