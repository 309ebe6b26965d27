// GPT-2's byte-level alphabet: each byte maps to a printable code point
// (bytes_to_unicode), so any byte string becomes a string of vocab symbols.
// Built per tokenizer at load; nothing static.
#ifndef ATLAS_RUNTIME_TEXT_BYTE_LEVEL_H_
#define ATLAS_RUNTIME_TEXT_BYTE_LEVEL_H_

#include <stdint.h>

#include "atlas/runtime/base/status.h"
#include "atlas/runtime/text/text_buf.h"

#define ATLAS_BYTE_LEVEL_MAX_CP 324

typedef struct atlas_byte_level {
  char utf8[256][2];      // the symbol of each byte, as UTF-8
  uint8_t utf8_len[256];  // 1 or 2
  int16_t cp_to_byte[ATLAS_BYTE_LEVEL_MAX_CP];  // -1 if not a symbol
} atlas_byte_level;

void atlas_byte_level_init(atlas_byte_level *bl);
// Appends the symbols of in[0..len) to out.
ATLAS_MUST_USE atlas_status atlas_byte_level_encode(const atlas_byte_level *bl,
                                                    const char *in, size_t len,
                                                    atlas_text_buf *out);

#endif  // ATLAS_RUNTIME_TEXT_BYTE_LEVEL_H_
