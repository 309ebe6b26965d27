// The model's working memory (KV cache, scratch, prefill scratch) as one
// device allocation carved in 256-byte-aligned pieces. Private to the Llama
// architecture.
#ifndef ATLAS_RUNTIME_ARCH_DECODER_DECODER_BUFFERS_H_
#define ATLAS_RUNTIME_ARCH_DECODER_DECODER_BUFFERS_H_

#include <stdbool.h>
#include <stddef.h>

#include "atlas/runtime/base/site.h"
#include "atlas/runtime/base/status.h"
#include "atlas/runtime/device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// Teardown resource "buffers", registered before the resources that borrow
// from it (kv_cache, scratch, prefill_scratch: host structs only) and after
// the weights, so it is released after them and before the weights.
//
// Why one allocation: a driver allocation per buffer cost 60-80 us each on
// the H200, about 30 per load (2-3 ms of a 100 ms load), however small the
// buffer. The layout is walked twice: a sizing pass adds up the pieces,
// then one allocation, then a carving pass hands them out in the same order.
//
// What carving gives up: the ledger holds one entry (site
// decoder_buffers.c, atlas_decoder_buffers_commit) instead of one per buffer,
// and a red zone guards the whole, not each piece, so a kernel that overruns
// the KV cache into the scratch would go unseen. A backend built with
// ATLAS_REDZONE therefore gets one allocation per piece, at the piece's own
// call site, each with its guard band: red zones are a debugging mode, where
// finding the overrun is the point and 30 allocations cost nothing that
// matters.
typedef struct atlas_decoder_buffers {
  atlas_backend *backend;
  bool sizing;    // the sizing pass: pieces are counted, none handed out
  bool separate;  // red zones on: one backend allocation per piece
  // Zeroed pieces come first, so one memset clears them all (the arena).
  size_t zero_bytes, rest_bytes;  // sizes from the sizing pass
  size_t zero_used, rest_used;    // the carving pass so far
  char *base;                     // the one allocation (not separate)
  void **pieces;                  // separate: every allocation, in order
  size_t piece_count, piece_cap;
} atlas_decoder_buffers;

// Bytes the sizing pass found (both parts, aligned).
size_t atlas_decoder_buffers_bytes(const atlas_decoder_buffers *b);

// Room for `bytes` (256-byte aligned). In the sizing pass *out is NULL and
// only the sizes grow. `zeroed` pieces read as zero once
// atlas_decoder_buffers_zero has run.
ATLAS_MUST_USE atlas_status
atlas_decoder_buffers_take_at(atlas_decoder_buffers *b, size_t bytes,
                              bool zeroed, atlas_site site, void **out);
#define atlas_decoder_buffers_take(b, bytes, out) \
  atlas_decoder_buffers_take_at((b), (bytes), false, ATLAS_SITE, (void **)(out))
#define atlas_decoder_buffers_take_zeroed(b, bytes, out) \
  atlas_decoder_buffers_take_at((b), (bytes), true, ATLAS_SITE, (void **)(out))

// Ends the sizing pass: makes the one allocation (or, separate, room to
// record the pieces' allocations).
ATLAS_MUST_USE atlas_status
atlas_decoder_buffers_commit(atlas_decoder_buffers *b);

// After the carving pass: zeroes the zeroed pieces (one memset in the arena).
ATLAS_MUST_USE atlas_status
atlas_decoder_buffers_zero(atlas_decoder_buffers *b);

// The teardown release: frees the allocation(s) and the struct.
ATLAS_MUST_USE atlas_status atlas_decoder_buffers_release(void *buffers);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_ARCH_DECODER_DECODER_BUFFERS_H_
