#include "atlas/runtime/sampling/stop.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

// The offset of the first byte of `s` that is not well-formed UTF-8, or
// SIZE_MAX.
static size_t first_invalid_utf8(const char *s) {
  const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
  size_t at = 0;
  while (p[at] != 0) {
    utf8proc_int32_t c = -1;
    utf8proc_ssize_t n = utf8proc_iterate(p + at, -1, &c);
    if (n <= 0) return at;
    at += (size_t)n;
  }
  return SIZE_MAX;
}

atlas_status atlas_stop_init(atlas_stop *stop, const int32_t *eos_ids,
                             size_t n_eos, const char *const *stop_strings,
                             size_t n_stop, size_t max_tokens) {
  memset(stop, 0, sizeof(*stop));
  if (n_eos > 0 && eos_ids == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "stop conditions: %zu EOS ids but no array",
                             n_eos);
  }
  if (n_stop > 0 && stop_strings == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "stop conditions: %zu stop strings but no array",
                             n_stop);
  }
  stop->max_tokens = max_tokens;
  if (n_eos > 0) {
    stop->eos_ids = malloc(n_eos * sizeof(int32_t));
    if (!stop->eos_ids) goto oom;
    memcpy(stop->eos_ids, eos_ids, n_eos * sizeof(int32_t));
    stop->n_eos = n_eos;
  }
  if (n_stop > 0) {
    stop->stop_strings = calloc(n_stop, sizeof(char *));
    stop->stop_lens = calloc(n_stop, sizeof(size_t));
    if (!stop->stop_strings || !stop->stop_lens) goto oom;
    stop->n_stop = n_stop;
    for (size_t i = 0; i < n_stop; ++i) {
      if (stop_strings[i] == NULL || stop_strings[i][0] == '\0') {
        atlas_stop_deinit(stop);
        return atlas_status_make(
            ATLAS_STATUS_INVALID_ARGUMENT,
            "stop strings: entry %zu is empty; an empty stop string would "
            "stop before the first token",
            i);
      }
      // Matched byte by byte against UTF-8 text: a stop string that is not
      // UTF-8 could match, and end the text, inside a character.
      size_t bad = first_invalid_utf8(stop_strings[i]);
      if (bad != SIZE_MAX) {
        atlas_stop_deinit(stop);
        return atlas_status_make(
            ATLAS_STATUS_INVALID_ARGUMENT,
            "stop strings: entry %zu is not UTF-8 (at byte %zu)", i, bad);
      }
      stop->stop_lens[i] = strlen(stop_strings[i]);
      stop->stop_strings[i] = malloc(stop->stop_lens[i] + 1);
      if (!stop->stop_strings[i]) goto oom;
      memcpy(stop->stop_strings[i], stop_strings[i], stop->stop_lens[i] + 1);
    }
  }
  return ATLAS_OK;
oom:
  atlas_stop_deinit(stop);
  return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                           "stop conditions: out of memory");
}

void atlas_stop_deinit(atlas_stop *stop) {
  free(stop->eos_ids);
  for (size_t i = 0; stop->stop_strings && i < stop->n_stop; ++i)
    free(stop->stop_strings[i]);
  free(stop->stop_strings);
  free(stop->stop_lens);
  free(stop->buf);
  memset(stop, 0, sizeof(*stop));
}

// The earliest occurrence of any stop string in text[0..len); SIZE_MAX if none.
static size_t find_stop(const atlas_stop *stop, const char *text, size_t len) {
  size_t best = SIZE_MAX;
  for (size_t s = 0; s < stop->n_stop; ++s) {
    const size_t sl = stop->stop_lens[s];
    for (size_t i = 0; i + sl <= len && i < best; ++i) {
      if (memcmp(text + i, stop->stop_strings[s], sl) == 0) {
        best = i;
        break;
      }
    }
  }
  return best;
}

// Length of the longest suffix of text that is a proper prefix of a stop
// string: that much must wait for the next piece.
static size_t pending_suffix(const atlas_stop *stop, const char *text,
                             size_t len) {
  size_t best = 0;
  for (size_t s = 0; s < stop->n_stop; ++s) {
    const size_t sl = stop->stop_lens[s];
    for (size_t k = sl - 1; k > best; --k) {
      if (k <= len && memcmp(text + len - k, stop->stop_strings[s], k) == 0) {
        best = k;
        break;
      }
    }
  }
  return best;
}

// buf = the held text then `piece` (NUL-terminated); *out_len its length.
// The held text must already be at the front (held_from 0).
static atlas_status append_held(atlas_stop *stop, const char *piece,
                                size_t piece_len, size_t *out_len) {
  const size_t len = stop->held_len + piece_len;
  if (len + 1 > stop->cap) {
    size_t cap = stop->cap ? stop->cap : 64;
    while (cap < len + 1) cap *= 2;
    char *grown = realloc(stop->buf, cap);
    if (!grown) {
      return atlas_status_make(
          ATLAS_STATUS_OUT_OF_MEMORY,
          "stop conditions: out of memory holding %zu bytes of text", len);
    }
    stop->buf = grown;
    stop->cap = cap;
  }
  if (piece_len > 0) memcpy(stop->buf + stop->held_len, piece, piece_len);
  stop->buf[len] = '\0';
  *out_len = len;
  return ATLAS_OK;
}

bool atlas_stop_would_stop(const atlas_stop *stop, const char *piece,
                           size_t piece_len) {
  if (stop->n_stop == 0 || piece_len == 0 || piece == NULL) return false;
  const size_t len = stop->held_len + piece_len;
  char *text = malloc(len + 1);
  if (text == NULL) return false;  // seen at the next step instead
  if (stop->held_len > 0)
    memcpy(text, stop->buf + stop->held_from, stop->held_len);
  memcpy(text + stop->held_len, piece, piece_len);
  text[len] = '\0';
  const bool found = find_stop(stop, text, len) != SIZE_MAX;
  free(text);
  return found;
}

atlas_status atlas_stop_finish(atlas_stop *stop, const char *piece,
                               size_t piece_len, atlas_stop_step *out_step) {
  out_step->reason = ATLAS_STOP_NONE;
  out_step->emit = "";
  out_step->emit_len = 0;
  if (piece_len > 0 && piece == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "stop conditions: piece has length %zu but no text", piece_len);
  }
  if (stop->held_from > 0) {
    memmove(stop->buf, stop->buf + stop->held_from, stop->held_len);
    stop->held_from = 0;
  }
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(append_held(stop, piece, piece_len, &len));
  out_step->emit = stop->buf;
  out_step->emit_len = len;
  const size_t at = len > 0 ? find_stop(stop, stop->buf, len) : SIZE_MAX;
  if (at != SIZE_MAX) {
    stop->reason = ATLAS_STOP_STRING;
    out_step->reason = ATLAS_STOP_STRING;
    out_step->emit_len = at;
  }
  stop->held_len = 0;
  return ATLAS_OK;
}

atlas_status atlas_stop_feed(atlas_stop *stop, int32_t token, const char *piece,
                             size_t piece_len, atlas_stop_step *out_step) {
  out_step->reason = ATLAS_STOP_NONE;
  out_step->emit = "";
  out_step->emit_len = 0;
  if (stop->reason != ATLAS_STOP_NONE) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "stop conditions: fed a token after generation already stopped");
  }
  if (piece_len > 0 && piece == NULL) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "stop conditions: piece has length %zu but no text", piece_len);
  }
  stop->n_tokens++;
  bool eos = false;
  for (size_t i = 0; i < stop->n_eos; ++i)
    eos = eos || stop->eos_ids[i] == token;
  // The last call's emitted text is no longer needed: the held tail moves
  // to the front.
  if (stop->held_from > 0) {
    memmove(stop->buf, stop->buf + stop->held_from, stop->held_len);
    stop->held_from = 0;
  }
  if (eos) {
    // Whatever was held back was not a stop string after all.
    stop->reason = ATLAS_STOP_EOS;
    out_step->reason = ATLAS_STOP_EOS;
    out_step->emit = stop->buf ? stop->buf : "";
    out_step->emit_len = stop->held_len;
    stop->held_len = 0;
    return ATLAS_OK;
  }
  size_t len = 0;
  ATLAS_RETURN_IF_ERROR(append_held(stop, piece, piece_len, &len));
  out_step->emit = stop->buf;

  const size_t at = find_stop(stop, stop->buf, len);
  if (at != SIZE_MAX) {
    stop->reason = ATLAS_STOP_STRING;
    out_step->reason = ATLAS_STOP_STRING;
    out_step->emit_len = at;
    stop->held_len = 0;
    return ATLAS_OK;
  }
  if (stop->max_tokens > 0 && stop->n_tokens >= stop->max_tokens) {
    stop->reason = ATLAS_STOP_MAX_TOKENS;
    out_step->reason = ATLAS_STOP_MAX_TOKENS;
    out_step->emit_len = len;
    stop->held_len = 0;
    return ATLAS_OK;
  }
  const size_t keep = pending_suffix(stop, stop->buf, len);
  out_step->emit_len = len - keep;
  stop->held_from = len - keep;
  stop->held_len = keep;
  return ATLAS_OK;
}
