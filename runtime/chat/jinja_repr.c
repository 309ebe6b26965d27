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

// The table, written out from these rules: printable ASCII as itself,
// \\ \n \r \t, other controls and the bytes that are unprintable as Latin-1
// code points (0x7f..0xa0, 0xad) as \xNN, the rest as the UTF-8 of
// U+0080..U+00FF. ' and " are quotes; 0xc0..0xf7 may lead a sequence.
static const repr_byte kReprByte[256] = {
    {{'\\', 'x', '0', '0'}, 4, REPR_BYTE},  // 0x00
    {{'\\', 'x', '0', '1'}, 4, REPR_BYTE},  // 0x01
    {{'\\', 'x', '0', '2'}, 4, REPR_BYTE},  // 0x02
    {{'\\', 'x', '0', '3'}, 4, REPR_BYTE},  // 0x03
    {{'\\', 'x', '0', '4'}, 4, REPR_BYTE},  // 0x04
    {{'\\', 'x', '0', '5'}, 4, REPR_BYTE},  // 0x05
    {{'\\', 'x', '0', '6'}, 4, REPR_BYTE},  // 0x06
    {{'\\', 'x', '0', '7'}, 4, REPR_BYTE},  // 0x07
    {{'\\', 'x', '0', '8'}, 4, REPR_BYTE},  // 0x08
    {{'\\', 't'}, 2, REPR_BYTE},            // 0x09
    {{'\\', 'n'}, 2, REPR_BYTE},            // 0x0a
    {{'\\', 'x', '0', 'b'}, 4, REPR_BYTE},  // 0x0b
    {{'\\', 'x', '0', 'c'}, 4, REPR_BYTE},  // 0x0c
    {{'\\', 'r'}, 2, REPR_BYTE},            // 0x0d
    {{'\\', 'x', '0', 'e'}, 4, REPR_BYTE},  // 0x0e
    {{'\\', 'x', '0', 'f'}, 4, REPR_BYTE},  // 0x0f
    {{'\\', 'x', '1', '0'}, 4, REPR_BYTE},  // 0x10
    {{'\\', 'x', '1', '1'}, 4, REPR_BYTE},  // 0x11
    {{'\\', 'x', '1', '2'}, 4, REPR_BYTE},  // 0x12
    {{'\\', 'x', '1', '3'}, 4, REPR_BYTE},  // 0x13
    {{'\\', 'x', '1', '4'}, 4, REPR_BYTE},  // 0x14
    {{'\\', 'x', '1', '5'}, 4, REPR_BYTE},  // 0x15
    {{'\\', 'x', '1', '6'}, 4, REPR_BYTE},  // 0x16
    {{'\\', 'x', '1', '7'}, 4, REPR_BYTE},  // 0x17
    {{'\\', 'x', '1', '8'}, 4, REPR_BYTE},  // 0x18
    {{'\\', 'x', '1', '9'}, 4, REPR_BYTE},  // 0x19
    {{'\\', 'x', '1', 'a'}, 4, REPR_BYTE},  // 0x1a
    {{'\\', 'x', '1', 'b'}, 4, REPR_BYTE},  // 0x1b
    {{'\\', 'x', '1', 'c'}, 4, REPR_BYTE},  // 0x1c
    {{'\\', 'x', '1', 'd'}, 4, REPR_BYTE},  // 0x1d
    {{'\\', 'x', '1', 'e'}, 4, REPR_BYTE},  // 0x1e
    {{'\\', 'x', '1', 'f'}, 4, REPR_BYTE},  // 0x1f
    {{' '}, 1, REPR_BYTE},                  // 0x20
    {{'!'}, 1, REPR_BYTE},                  // 0x21
    {{'"'}, 1, REPR_QUOTE},                 // 0x22
    {{'#'}, 1, REPR_BYTE},                  // 0x23
    {{'$'}, 1, REPR_BYTE},                  // 0x24
    {{'%'}, 1, REPR_BYTE},                  // 0x25
    {{'&'}, 1, REPR_BYTE},                  // 0x26
    {{'\''}, 1, REPR_QUOTE},                // 0x27
    {{'('}, 1, REPR_BYTE},                  // 0x28
    {{')'}, 1, REPR_BYTE},                  // 0x29
    {{'*'}, 1, REPR_BYTE},                  // 0x2a
    {{'+'}, 1, REPR_BYTE},                  // 0x2b
    {{','}, 1, REPR_BYTE},                  // 0x2c
    {{'-'}, 1, REPR_BYTE},                  // 0x2d
    {{'.'}, 1, REPR_BYTE},                  // 0x2e
    {{'/'}, 1, REPR_BYTE},                  // 0x2f
    {{'0'}, 1, REPR_BYTE},                  // 0x30
    {{'1'}, 1, REPR_BYTE},                  // 0x31
    {{'2'}, 1, REPR_BYTE},                  // 0x32
    {{'3'}, 1, REPR_BYTE},                  // 0x33
    {{'4'}, 1, REPR_BYTE},                  // 0x34
    {{'5'}, 1, REPR_BYTE},                  // 0x35
    {{'6'}, 1, REPR_BYTE},                  // 0x36
    {{'7'}, 1, REPR_BYTE},                  // 0x37
    {{'8'}, 1, REPR_BYTE},                  // 0x38
    {{'9'}, 1, REPR_BYTE},                  // 0x39
    {{':'}, 1, REPR_BYTE},                  // 0x3a
    {{';'}, 1, REPR_BYTE},                  // 0x3b
    {{'<'}, 1, REPR_BYTE},                  // 0x3c
    {{'='}, 1, REPR_BYTE},                  // 0x3d
    {{'>'}, 1, REPR_BYTE},                  // 0x3e
    {{'?'}, 1, REPR_BYTE},                  // 0x3f
    {{'@'}, 1, REPR_BYTE},                  // 0x40
    {{'A'}, 1, REPR_BYTE},                  // 0x41
    {{'B'}, 1, REPR_BYTE},                  // 0x42
    {{'C'}, 1, REPR_BYTE},                  // 0x43
    {{'D'}, 1, REPR_BYTE},                  // 0x44
    {{'E'}, 1, REPR_BYTE},                  // 0x45
    {{'F'}, 1, REPR_BYTE},                  // 0x46
    {{'G'}, 1, REPR_BYTE},                  // 0x47
    {{'H'}, 1, REPR_BYTE},                  // 0x48
    {{'I'}, 1, REPR_BYTE},                  // 0x49
    {{'J'}, 1, REPR_BYTE},                  // 0x4a
    {{'K'}, 1, REPR_BYTE},                  // 0x4b
    {{'L'}, 1, REPR_BYTE},                  // 0x4c
    {{'M'}, 1, REPR_BYTE},                  // 0x4d
    {{'N'}, 1, REPR_BYTE},                  // 0x4e
    {{'O'}, 1, REPR_BYTE},                  // 0x4f
    {{'P'}, 1, REPR_BYTE},                  // 0x50
    {{'Q'}, 1, REPR_BYTE},                  // 0x51
    {{'R'}, 1, REPR_BYTE},                  // 0x52
    {{'S'}, 1, REPR_BYTE},                  // 0x53
    {{'T'}, 1, REPR_BYTE},                  // 0x54
    {{'U'}, 1, REPR_BYTE},                  // 0x55
    {{'V'}, 1, REPR_BYTE},                  // 0x56
    {{'W'}, 1, REPR_BYTE},                  // 0x57
    {{'X'}, 1, REPR_BYTE},                  // 0x58
    {{'Y'}, 1, REPR_BYTE},                  // 0x59
    {{'Z'}, 1, REPR_BYTE},                  // 0x5a
    {{'['}, 1, REPR_BYTE},                  // 0x5b
    {{'\\', '\\'}, 2, REPR_BYTE},           // 0x5c
    {{']'}, 1, REPR_BYTE},                  // 0x5d
    {{'^'}, 1, REPR_BYTE},                  // 0x5e
    {{'_'}, 1, REPR_BYTE},                  // 0x5f
    {{'`'}, 1, REPR_BYTE},                  // 0x60
    {{'a'}, 1, REPR_BYTE},                  // 0x61
    {{'b'}, 1, REPR_BYTE},                  // 0x62
    {{'c'}, 1, REPR_BYTE},                  // 0x63
    {{'d'}, 1, REPR_BYTE},                  // 0x64
    {{'e'}, 1, REPR_BYTE},                  // 0x65
    {{'f'}, 1, REPR_BYTE},                  // 0x66
    {{'g'}, 1, REPR_BYTE},                  // 0x67
    {{'h'}, 1, REPR_BYTE},                  // 0x68
    {{'i'}, 1, REPR_BYTE},                  // 0x69
    {{'j'}, 1, REPR_BYTE},                  // 0x6a
    {{'k'}, 1, REPR_BYTE},                  // 0x6b
    {{'l'}, 1, REPR_BYTE},                  // 0x6c
    {{'m'}, 1, REPR_BYTE},                  // 0x6d
    {{'n'}, 1, REPR_BYTE},                  // 0x6e
    {{'o'}, 1, REPR_BYTE},                  // 0x6f
    {{'p'}, 1, REPR_BYTE},                  // 0x70
    {{'q'}, 1, REPR_BYTE},                  // 0x71
    {{'r'}, 1, REPR_BYTE},                  // 0x72
    {{'s'}, 1, REPR_BYTE},                  // 0x73
    {{'t'}, 1, REPR_BYTE},                  // 0x74
    {{'u'}, 1, REPR_BYTE},                  // 0x75
    {{'v'}, 1, REPR_BYTE},                  // 0x76
    {{'w'}, 1, REPR_BYTE},                  // 0x77
    {{'x'}, 1, REPR_BYTE},                  // 0x78
    {{'y'}, 1, REPR_BYTE},                  // 0x79
    {{'z'}, 1, REPR_BYTE},                  // 0x7a
    {{'{'}, 1, REPR_BYTE},                  // 0x7b
    {{'|'}, 1, REPR_BYTE},                  // 0x7c
    {{'}'}, 1, REPR_BYTE},                  // 0x7d
    {{'~'}, 1, REPR_BYTE},                  // 0x7e
    {{'\\', 'x', '7', 'f'}, 4, REPR_BYTE},  // 0x7f
    {{'\\', 'x', '8', '0'}, 4, REPR_BYTE},  // 0x80
    {{'\\', 'x', '8', '1'}, 4, REPR_BYTE},  // 0x81
    {{'\\', 'x', '8', '2'}, 4, REPR_BYTE},  // 0x82
    {{'\\', 'x', '8', '3'}, 4, REPR_BYTE},  // 0x83
    {{'\\', 'x', '8', '4'}, 4, REPR_BYTE},  // 0x84
    {{'\\', 'x', '8', '5'}, 4, REPR_BYTE},  // 0x85
    {{'\\', 'x', '8', '6'}, 4, REPR_BYTE},  // 0x86
    {{'\\', 'x', '8', '7'}, 4, REPR_BYTE},  // 0x87
    {{'\\', 'x', '8', '8'}, 4, REPR_BYTE},  // 0x88
    {{'\\', 'x', '8', '9'}, 4, REPR_BYTE},  // 0x89
    {{'\\', 'x', '8', 'a'}, 4, REPR_BYTE},  // 0x8a
    {{'\\', 'x', '8', 'b'}, 4, REPR_BYTE},  // 0x8b
    {{'\\', 'x', '8', 'c'}, 4, REPR_BYTE},  // 0x8c
    {{'\\', 'x', '8', 'd'}, 4, REPR_BYTE},  // 0x8d
    {{'\\', 'x', '8', 'e'}, 4, REPR_BYTE},  // 0x8e
    {{'\\', 'x', '8', 'f'}, 4, REPR_BYTE},  // 0x8f
    {{'\\', 'x', '9', '0'}, 4, REPR_BYTE},  // 0x90
    {{'\\', 'x', '9', '1'}, 4, REPR_BYTE},  // 0x91
    {{'\\', 'x', '9', '2'}, 4, REPR_BYTE},  // 0x92
    {{'\\', 'x', '9', '3'}, 4, REPR_BYTE},  // 0x93
    {{'\\', 'x', '9', '4'}, 4, REPR_BYTE},  // 0x94
    {{'\\', 'x', '9', '5'}, 4, REPR_BYTE},  // 0x95
    {{'\\', 'x', '9', '6'}, 4, REPR_BYTE},  // 0x96
    {{'\\', 'x', '9', '7'}, 4, REPR_BYTE},  // 0x97
    {{'\\', 'x', '9', '8'}, 4, REPR_BYTE},  // 0x98
    {{'\\', 'x', '9', '9'}, 4, REPR_BYTE},  // 0x99
    {{'\\', 'x', '9', 'a'}, 4, REPR_BYTE},  // 0x9a
    {{'\\', 'x', '9', 'b'}, 4, REPR_BYTE},  // 0x9b
    {{'\\', 'x', '9', 'c'}, 4, REPR_BYTE},  // 0x9c
    {{'\\', 'x', '9', 'd'}, 4, REPR_BYTE},  // 0x9d
    {{'\\', 'x', '9', 'e'}, 4, REPR_BYTE},  // 0x9e
    {{'\\', 'x', '9', 'f'}, 4, REPR_BYTE},  // 0x9f
    {{'\\', 'x', 'a', '0'}, 4, REPR_BYTE},  // 0xa0
    {{'\xc2', '\xa1'}, 2, REPR_BYTE},       // 0xa1
    {{'\xc2', '\xa2'}, 2, REPR_BYTE},       // 0xa2
    {{'\xc2', '\xa3'}, 2, REPR_BYTE},       // 0xa3
    {{'\xc2', '\xa4'}, 2, REPR_BYTE},       // 0xa4
    {{'\xc2', '\xa5'}, 2, REPR_BYTE},       // 0xa5
    {{'\xc2', '\xa6'}, 2, REPR_BYTE},       // 0xa6
    {{'\xc2', '\xa7'}, 2, REPR_BYTE},       // 0xa7
    {{'\xc2', '\xa8'}, 2, REPR_BYTE},       // 0xa8
    {{'\xc2', '\xa9'}, 2, REPR_BYTE},       // 0xa9
    {{'\xc2', '\xaa'}, 2, REPR_BYTE},       // 0xaa
    {{'\xc2', '\xab'}, 2, REPR_BYTE},       // 0xab
    {{'\xc2', '\xac'}, 2, REPR_BYTE},       // 0xac
    {{'\\', 'x', 'a', 'd'}, 4, REPR_BYTE},  // 0xad
    {{'\xc2', '\xae'}, 2, REPR_BYTE},       // 0xae
    {{'\xc2', '\xaf'}, 2, REPR_BYTE},       // 0xaf
    {{'\xc2', '\xb0'}, 2, REPR_BYTE},       // 0xb0
    {{'\xc2', '\xb1'}, 2, REPR_BYTE},       // 0xb1
    {{'\xc2', '\xb2'}, 2, REPR_BYTE},       // 0xb2
    {{'\xc2', '\xb3'}, 2, REPR_BYTE},       // 0xb3
    {{'\xc2', '\xb4'}, 2, REPR_BYTE},       // 0xb4
    {{'\xc2', '\xb5'}, 2, REPR_BYTE},       // 0xb5
    {{'\xc2', '\xb6'}, 2, REPR_BYTE},       // 0xb6
    {{'\xc2', '\xb7'}, 2, REPR_BYTE},       // 0xb7
    {{'\xc2', '\xb8'}, 2, REPR_BYTE},       // 0xb8
    {{'\xc2', '\xb9'}, 2, REPR_BYTE},       // 0xb9
    {{'\xc2', '\xba'}, 2, REPR_BYTE},       // 0xba
    {{'\xc2', '\xbb'}, 2, REPR_BYTE},       // 0xbb
    {{'\xc2', '\xbc'}, 2, REPR_BYTE},       // 0xbc
    {{'\xc2', '\xbd'}, 2, REPR_BYTE},       // 0xbd
    {{'\xc2', '\xbe'}, 2, REPR_BYTE},       // 0xbe
    {{'\xc2', '\xbf'}, 2, REPR_BYTE},       // 0xbf
    {{'\xc3', '\x80'}, 2, REPR_LEAD},       // 0xc0
    {{'\xc3', '\x81'}, 2, REPR_LEAD},       // 0xc1
    {{'\xc3', '\x82'}, 2, REPR_LEAD},       // 0xc2
    {{'\xc3', '\x83'}, 2, REPR_LEAD},       // 0xc3
    {{'\xc3', '\x84'}, 2, REPR_LEAD},       // 0xc4
    {{'\xc3', '\x85'}, 2, REPR_LEAD},       // 0xc5
    {{'\xc3', '\x86'}, 2, REPR_LEAD},       // 0xc6
    {{'\xc3', '\x87'}, 2, REPR_LEAD},       // 0xc7
    {{'\xc3', '\x88'}, 2, REPR_LEAD},       // 0xc8
    {{'\xc3', '\x89'}, 2, REPR_LEAD},       // 0xc9
    {{'\xc3', '\x8a'}, 2, REPR_LEAD},       // 0xca
    {{'\xc3', '\x8b'}, 2, REPR_LEAD},       // 0xcb
    {{'\xc3', '\x8c'}, 2, REPR_LEAD},       // 0xcc
    {{'\xc3', '\x8d'}, 2, REPR_LEAD},       // 0xcd
    {{'\xc3', '\x8e'}, 2, REPR_LEAD},       // 0xce
    {{'\xc3', '\x8f'}, 2, REPR_LEAD},       // 0xcf
    {{'\xc3', '\x90'}, 2, REPR_LEAD},       // 0xd0
    {{'\xc3', '\x91'}, 2, REPR_LEAD},       // 0xd1
    {{'\xc3', '\x92'}, 2, REPR_LEAD},       // 0xd2
    {{'\xc3', '\x93'}, 2, REPR_LEAD},       // 0xd3
    {{'\xc3', '\x94'}, 2, REPR_LEAD},       // 0xd4
    {{'\xc3', '\x95'}, 2, REPR_LEAD},       // 0xd5
    {{'\xc3', '\x96'}, 2, REPR_LEAD},       // 0xd6
    {{'\xc3', '\x97'}, 2, REPR_LEAD},       // 0xd7
    {{'\xc3', '\x98'}, 2, REPR_LEAD},       // 0xd8
    {{'\xc3', '\x99'}, 2, REPR_LEAD},       // 0xd9
    {{'\xc3', '\x9a'}, 2, REPR_LEAD},       // 0xda
    {{'\xc3', '\x9b'}, 2, REPR_LEAD},       // 0xdb
    {{'\xc3', '\x9c'}, 2, REPR_LEAD},       // 0xdc
    {{'\xc3', '\x9d'}, 2, REPR_LEAD},       // 0xdd
    {{'\xc3', '\x9e'}, 2, REPR_LEAD},       // 0xde
    {{'\xc3', '\x9f'}, 2, REPR_LEAD},       // 0xdf
    {{'\xc3', '\xa0'}, 2, REPR_LEAD},       // 0xe0
    {{'\xc3', '\xa1'}, 2, REPR_LEAD},       // 0xe1
    {{'\xc3', '\xa2'}, 2, REPR_LEAD},       // 0xe2
    {{'\xc3', '\xa3'}, 2, REPR_LEAD},       // 0xe3
    {{'\xc3', '\xa4'}, 2, REPR_LEAD},       // 0xe4
    {{'\xc3', '\xa5'}, 2, REPR_LEAD},       // 0xe5
    {{'\xc3', '\xa6'}, 2, REPR_LEAD},       // 0xe6
    {{'\xc3', '\xa7'}, 2, REPR_LEAD},       // 0xe7
    {{'\xc3', '\xa8'}, 2, REPR_LEAD},       // 0xe8
    {{'\xc3', '\xa9'}, 2, REPR_LEAD},       // 0xe9
    {{'\xc3', '\xaa'}, 2, REPR_LEAD},       // 0xea
    {{'\xc3', '\xab'}, 2, REPR_LEAD},       // 0xeb
    {{'\xc3', '\xac'}, 2, REPR_LEAD},       // 0xec
    {{'\xc3', '\xad'}, 2, REPR_LEAD},       // 0xed
    {{'\xc3', '\xae'}, 2, REPR_LEAD},       // 0xee
    {{'\xc3', '\xaf'}, 2, REPR_LEAD},       // 0xef
    {{'\xc3', '\xb0'}, 2, REPR_LEAD},       // 0xf0
    {{'\xc3', '\xb1'}, 2, REPR_LEAD},       // 0xf1
    {{'\xc3', '\xb2'}, 2, REPR_LEAD},       // 0xf2
    {{'\xc3', '\xb3'}, 2, REPR_LEAD},       // 0xf3
    {{'\xc3', '\xb4'}, 2, REPR_LEAD},       // 0xf4
    {{'\xc3', '\xb5'}, 2, REPR_LEAD},       // 0xf5
    {{'\xc3', '\xb6'}, 2, REPR_LEAD},       // 0xf6
    {{'\xc3', '\xb7'}, 2, REPR_LEAD},       // 0xf7
    {{'\xc3', '\xb8'}, 2, REPR_BYTE},       // 0xf8
    {{'\xc3', '\xb9'}, 2, REPR_BYTE},       // 0xf9
    {{'\xc3', '\xba'}, 2, REPR_BYTE},       // 0xfa
    {{'\xc3', '\xbb'}, 2, REPR_BYTE},       // 0xfb
    {{'\xc3', '\xbc'}, 2, REPR_BYTE},       // 0xfc
    {{'\xc3', '\xbd'}, 2, REPR_BYTE},       // 0xfd
    {{'\xc3', '\xbe'}, 2, REPR_BYTE},       // 0xfe
    {{'\xc3', '\xbf'}, 2, REPR_BYTE},       // 0xff
};

// What repr writes for a code point decoded from a sequence that it does
// not copy (an overlong form, an unprintable code point): an escape or the
// code point's shortest UTF-8. Returns the length, at most 10 (\U and eight
// digits).
static size_t repr_code_point(uint32_t cp, char q, char *dst) {
  static const char kHex[] = "0123456789abcdef";
  size_t k = 0;
  char letter = 0;  // a short escape's letter; q is never NUL
  if (cp == (uint32_t)(unsigned char)q) {
    letter = q;
  } else if (cp == '\\') {
    letter = '\\';
  } else if (cp == '\n') {
    letter = 'n';
  } else if (cp == '\r') {
    letter = 'r';
  } else if (cp == '\t') {
    letter = 't';
  }
  if (letter != 0) {
    dst[k++] = '\\';
    dst[k++] = letter;
  } else if (py_unprintable(cp)) {
    int digits = 8;
    char kind = 'U';
    if (cp < 0x100) {
      digits = 2;
      kind = 'x';
    } else if (cp < 0x10000) {
      digits = 4;
      kind = 'u';
    }
    dst[k++] = '\\';
    dst[k++] = kind;
    for (int d = digits - 1; d >= 0; --d) {
      dst[k++] = kHex[(cp >> (4 * d)) & 15];
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
