// Stop conditions for a generate loop, checked once per new token.
//
// Generation stops at an end-of-sequence id (any of a list), when a stop string
// appears in the decoded text (also when it is split across several tokens'
// pieces), or after max_tokens tokens. Text that might be the start of a stop
// string is held back until it is known not to be, so the caller can stream
// exactly what the user should see: everything before the stop string, never
// the stop string itself or the EOS token's text.
#ifndef ATLAS_RUNTIME_SAMPLING_STOP_H_
#define ATLAS_RUNTIME_SAMPLING_STOP_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_stop_reason {
  ATLAS_STOP_NONE = 0,    // keep generating
  ATLAS_STOP_EOS,         // the token is one of the EOS ids
  ATLAS_STOP_STRING,      // a stop string appeared in the text
  ATLAS_STOP_MAX_TOKENS,  // max_tokens tokens have been generated
} atlas_stop_reason;

typedef struct atlas_stop {
  int32_t *eos_ids;
  size_t n_eos;
  char **stop_strings;  // NUL-free, non-empty
  size_t *stop_lens;
  size_t n_stop;
  size_t max_tokens;  // 0: no limit
  size_t n_tokens;    // tokens seen so far
  char *buf;          // text held back (could start a stop string) lives at
  size_t held_from;   //   buf[held_from .. held_from + held_len); the text
  size_t held_len;    //   before it was emitted by the last call
  size_t cap;
  atlas_stop_reason reason;  // set once generation has stopped
} atlas_stop;

// Copies the lists. `stop_strings` may be NULL when n_stop is 0.
ATLAS_MUST_USE atlas_status atlas_stop_init(atlas_stop *stop,
                                            const int32_t *eos_ids,
                                            size_t n_eos,
                                            const char *const *stop_strings,
                                            size_t n_stop, size_t max_tokens);
void atlas_stop_deinit(atlas_stop *stop);

// What the caller should do after one token.
typedef struct atlas_stop_step {
  atlas_stop_reason reason;  // NONE: go on
  const char *emit;          // text to show now (points into the stop's buffer,
  size_t emit_len;           //   valid until the next call)
} atlas_stop_step;

// Feeds one generated token and its decoded text piece (the piece of an EOS
// token is ignored). Calling again after a stop is a FAILED_PRECONDITION.
ATLAS_MUST_USE atlas_status atlas_stop_feed(atlas_stop *stop, int32_t token,
                                            const char *piece, size_t piece_len,
                                            atlas_stop_step *out_step);

// Whether the held text followed by `piece` holds a stop string (nothing
// changes): for text known to be coming (whole characters a stream still
// holds back), so a stop string is seen at the token that completes it.
bool atlas_stop_would_stop(const atlas_stop *stop, const char *piece,
                           size_t piece_len);

// Generation ended (EOS, the token limit, or the caller): `piece` is the last
// text the stream held back (may be empty). Everything held is released up
// to the earliest stop string in it (reason ATLAS_STOP_STRING), else all of
// it. Callable once, whatever the stop's reason.
ATLAS_MUST_USE atlas_status atlas_stop_finish(atlas_stop *stop,
                                              const char *piece,
                                              size_t piece_len,
                                              atlas_stop_step *out_step);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_SAMPLING_STOP_H_
