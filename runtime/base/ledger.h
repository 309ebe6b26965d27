// Ledger: every live allocation of one backend, with its bytes and call site.
//
// One ledger per backend instance, never global. Thread-safe (one mutex);
// insert and remove are O(1) on average (open addressing keyed by address).
#ifndef ATLAS_RUNTIME_LEDGER_H_
#define ATLAS_RUNTIME_LEDGER_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/format_bytes.h"
#include "atlas/runtime/base/site.h"
#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum atlas_mem_kind {
  ATLAS_MEM_DEVICE = 0,
  ATLAS_MEM_MANAGED,
  ATLAS_MEM_PINNED_HOST,
} atlas_mem_kind;

typedef struct atlas_ledger_entry {
  uintptr_t addr;        // what the caller holds
  size_t bytes;          // what the caller asked for
  size_t redzone_bytes;  // guard band after `bytes` (0 without ATLAS_REDZONE)
  // Guard band before `addr`: the device's allocation starts at
  // addr - lead_bytes and spans lead_bytes + bytes + redzone_bytes.
  size_t lead_bytes;
  uint64_t index;  // creation index, 1-based, unique per ledger
  atlas_mem_kind kind;
  atlas_site site;
  // The device refused to free it (the free returned that error): the memory
  // is still held, so it stays live here until a later free or the sweep
  // releases it, and the reports count it apart.
  bool release_failed;
} atlas_ledger_entry;

typedef struct atlas_ledger atlas_ledger;

ATLAS_MUST_USE atlas_status atlas_ledger_create(atlas_ledger **out_ledger);
void atlas_ledger_destroy(atlas_ledger *ledger);

// Records a live allocation and assigns its creation index. Fails if the
// address is already live (the allocator handed out the same bytes twice).
ATLAS_MUST_USE atlas_status atlas_ledger_insert(
    atlas_ledger *ledger, uintptr_t addr, size_t bytes, size_t redzone_bytes,
    atlas_mem_kind kind, atlas_site site, uint64_t *out_index);
// As insert, with a guard band of `lead_bytes` before `addr` as well.
ATLAS_MUST_USE atlas_status atlas_ledger_insert_banded(
    atlas_ledger *ledger, uintptr_t addr, size_t bytes, size_t lead_bytes,
    size_t redzone_bytes, atlas_mem_kind kind, atlas_site site,
    uint64_t *out_index);

// Forgets an allocation and returns its entry. A free of an address the
// ledger does not hold is an error that says whether it was freed before
// (and where it had been allocated), lies inside a live allocation or one of
// its guard bands (named), or was never allocated here.
ATLAS_MUST_USE atlas_status atlas_ledger_remove(atlas_ledger *ledger,
                                                uintptr_t addr,
                                                atlas_ledger_entry *out_entry);

// As remove, but first asks `check` (under the ledger's lock) whether this
// entry may be removed; a non-OK answer is returned and nothing changes.
typedef atlas_status (*atlas_ledger_check)(void *ctx,
                                           const atlas_ledger_entry *entry);
ATLAS_MUST_USE atlas_status atlas_ledger_remove_if(
    atlas_ledger *ledger, uintptr_t addr, atlas_ledger_check check,
    void *check_ctx, atlas_ledger_entry *out_entry);

// Puts back an entry that remove returned, because the device refused to
// release its memory: same address, bytes, site and creation index, marked
// release_failed. Fails if the address is live again.
ATLAS_MUST_USE atlas_status
atlas_ledger_restore(atlas_ledger *ledger, const atlas_ledger_entry *entry);

// Looks up a live allocation (NOT_FOUND if not live).
ATLAS_MUST_USE atlas_status atlas_ledger_find(atlas_ledger *ledger,
                                              uintptr_t addr,
                                              atlas_ledger_entry *out_entry);

size_t atlas_ledger_live_bytes(atlas_ledger *ledger);
size_t atlas_ledger_live_count(atlas_ledger *ledger);

// Copies every live entry, sorted by creation index, into a malloc'd array
// the caller frees. *out_entries is NULL when there are none.
ATLAS_MUST_USE atlas_status atlas_ledger_snapshot(
    atlas_ledger *ledger, atlas_ledger_entry **out_entries, size_t *out_count);

// As snapshot, in no particular order (cheaper: no sort).
ATLAS_MUST_USE atlas_status atlas_ledger_snapshot_unordered(
    atlas_ledger *ledger, atlas_ledger_entry **out_entries, size_t *out_count);

// Memory report aggregated by call site, biggest first, one line per site:
//   "9.70 GB across 48 allocations  runtime/arch/<family>/load.c:212
//   (load_layers)"
// At most `top_n` site lines (0: all); sites below `min_mb` megabytes are
// folded into one remainder line. The lines sum to the live total, which is
// printed last, then (only when there are any) the allocations whose release
// the device refused: "release failed: 1.00 kB (1000 bytes) in 1 allocation
// ...". The caller frees *out_text.
ATLAS_MUST_USE atlas_status atlas_ledger_report_text(atlas_ledger *ledger,
                                                     size_t top_n,
                                                     double min_mb,
                                                     char **out_text);

// The same report as JSON: {"live_bytes":N,"live_count":N,"sites":[{"file":..,
// "line":..,"func":..,"bytes":..,"count":..}, ...], "release_failed_bytes":N,
// "release_failed_count":N} (all sites, biggest first; the last two count
// the live allocations whose release the device refused). The caller frees
// *out_json.
ATLAS_MUST_USE atlas_status atlas_ledger_report_json(atlas_ledger *ledger,
                                                     char **out_json);

// What a sweep of unreleased allocations found and freed: each one a leak,
// except those whose free the device had refused (refused_count).
typedef struct atlas_sweep_result {
  size_t count;  // allocations found
  size_t bytes;
  char *sites;  // report naming the sites (malloc'd; NULL when count == 0)
  // Of those, the ones the device refused to free: still held, still live
  // on the ledger (release_failed), each named in the sweep's status.
  size_t unfreed_count;
  size_t unfreed_bytes;
  // Of those, the ones whose free the device had already refused
  // (release_failed): released, and kept live only because the device still
  // held them, so not leaks. count - refused_count allocations were never
  // released by anyone: those are the leaks.
  size_t refused_count;
  size_t refused_bytes;
} atlas_sweep_result;

void atlas_sweep_result_free(atlas_sweep_result *result);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_LEDGER_H_
