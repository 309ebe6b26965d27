#include "atlas/runtime/text/byte_level.h"

#include <string.h>

void atlas_byte_level_init(atlas_byte_level *bl) {
  uint32_t next = 256;
  for (int i = 0; i < ATLAS_BYTE_LEVEL_MAX_CP; i++) bl->cp_to_byte[i] = -1;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    uint32_t cp = printable ? (uint32_t)b : next++;
    bl->cp_to_byte[cp] = (int16_t)b;
    if (cp < 0x80) {
      bl->utf8[b][0] = (char)cp;
      bl->utf8_len[b] = 1;
    } else {
      bl->utf8[b][0] = (char)(0xC0 | (cp >> 6));
      bl->utf8[b][1] = (char)(0x80 | (cp & 0x3F));
      bl->utf8_len[b] = 2;
    }
  }
}

atlas_status atlas_byte_level_encode(const atlas_byte_level *bl, const char *in,
                                     size_t len, atlas_text_buf *out) {
  ATLAS_RETURN_IF_ERROR(atlas_text_buf_reserve(out, 2 * len));
  char *d = out->data + out->len;
  for (size_t i = 0; i < len; i++) {
    unsigned char b = (unsigned char)in[i];
    d[0] = bl->utf8[b][0];
    if (bl->utf8_len[b] == 2) {
      d[1] = bl->utf8[b][1];
      d += 2;
    } else {
      d += 1;
    }
  }
  out->len = (size_t)(d - out->data);
  return ATLAS_OK;
}
