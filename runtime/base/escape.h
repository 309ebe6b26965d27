// Escaping text that came from outside (a file, a prompt, a path, an option)
// before it goes into a message, a status or a log line.
//
// A message must never carry a terminal's control sequences or bytes that are
// not UTF-8, and one bad string must not make it megabytes long. This is the
// one function every such message uses: the statuses (runtime/status.c), the
// CLI's messages and the logs.
#ifndef ATLAS_RUNTIME_BASE_ESCAPE_H_
#define ATLAS_RUNTIME_BASE_ESCAPE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// What is escaped as \xNN (one per byte), whatever the flags: C0 controls
// (0x00-0x1f) but see ATLAS_ESCAPE_KEEP_NEWLINE, DEL, the C1 controls
// (U+0080-U+009F), the bidirectional overrides and isolates (U+202A-U+202E,
// U+2066-U+2069: text that displays in another order than it reads), and
// every byte that is not part of well-formed UTF-8 (overlong forms,
// surrogates, beyond U+10FFFF, cut sequences). Other UTF-8 is kept.
enum {
  // Escape the backslash too: for quoting one value, so that what is shown
  // can be read back unambiguously ('\x5c' for a backslash).
  ATLAS_ESCAPE_BACKSLASH = 1u << 0,
  // Keep '\n' as it is: for whole messages, where lines separate joined
  // failures. Other control bytes are still escaped.
  ATLAS_ESCAPE_KEEP_NEWLINE = 1u << 1,
};

// Escapes `s` (`n` bytes) into `buf` (`size` bytes, always NUL-terminated
// when size > 0), showing at most `shown` input bytes; the rest is cut at a
// character boundary with "...(N more bytes)". When `buf` is too small for
// all `shown` bytes, it is cut earlier the same way. Returns buf.
const char *atlas_escape(const char *s, size_t n, unsigned flags, size_t shown,
                         char *buf, size_t size);

// The buffer size that holds `shown` input bytes escaped, plus the tail.
#define ATLAS_ESCAPE_BYTES(shown) (4 * (shown) + 48)

// True when `s` (`n` bytes) needs no escaping under `flags` (nothing above
// would change it): lets a caller skip the copy.
int atlas_escape_is_clean(const char *s, size_t n, unsigned flags);

// The length in bytes of the well-formed UTF-8 sequence at `s` (at most `n`
// bytes available), or 0 when the byte there does not start one.
size_t atlas_escape_utf8_length(const unsigned char *s, size_t n);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_BASE_ESCAPE_H_
