// Red zones: guard bands before and after each buffer of a backend built
// with ATLAS_REDZONE=<pad>, read back by a scan, a free and the sweep, and
// poisoned to bisect a stray write to one allocation. Works through the
// vtable's copy and fill (HOST_NOW); callers quiesce the device first.
#ifndef ATLAS_RUNTIME_DEVICE_REDZONE_H_
#define ATLAS_RUNTIME_DEVICE_REDZONE_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/device/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

// Each allocation has `pad` guard bytes after it and atlas_redzone_lead_bytes
// (pad) before it: pad rounded up to a multiple of ATLAS_REDZONE_ALIGN, so
// the address a caller gets keeps the alignment raw_alloc gave (cuMemAlloc's
// 256 bytes; malloc's 16 on the host).
#define ATLAS_REDZONE_ALIGN ((size_t)256)
static inline size_t atlas_redzone_lead_bytes(size_t pad) {
  // pad <= 2^30 (ATLAS_REDZONE's limit): no overflow.
  return (pad + ATLAS_REDZONE_ALIGN - 1) / ATLAS_REDZONE_ALIGN *
         ATLAS_REDZONE_ALIGN;
}

// Parses ATLAS_REDZONE once, when a backend is made (0 when unset).
ATLAS_MUST_USE atlas_status atlas_redzone_read_env(size_t *out_bytes);
// The fill a zone should hold: 0xA5 until poison is first called, then 0xEE
// inside the poisoned range and 0x00 outside it.
uint8_t atlas_redzone_fill(atlas_backend *b, uint64_t index);
// Fills both bands of a new allocation with the fill its index calls for.
ATLAS_MUST_USE atlas_status atlas_redzone_arm(atlas_backend *b,
                                              const atlas_ledger_entry *e);
// Reads one allocation's bands back before its memory goes (`when`: "when it
// was freed", ...): DATA_LOSS naming the allocation if anything wrote there.
ATLAS_MUST_USE atlas_status atlas_redzone_check(atlas_backend *b,
                                                const atlas_ledger_entry *e,
                                                const char *when);
// See atlas_backend_scan_redzones and atlas_backend_poison_redzones.
ATLAS_MUST_USE atlas_status
atlas_redzone_scan(atlas_backend *b, atlas_redzone_violation *out_violations,
                   size_t max_violations, size_t *out_count);
ATLAS_MUST_USE atlas_status atlas_redzone_poison(atlas_backend *b, uint64_t lo,
                                                 uint64_t hi);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_DEVICE_REDZONE_H_
