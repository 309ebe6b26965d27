// Fault injection points: ATLAS_FAULT parsing and the counted check.
#include "atlas/runtime/device/fault.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *atlas_fault_kind_name(atlas_fault_kind kind) {
  switch (kind) {
    case ATLAS_FAULT_ALLOC:
      return "alloc";
    case ATLAS_FAULT_COPY:
      return "copy";
    case ATLAS_FAULT_STREAM:
      return "stream";
    case ATLAS_FAULT_EVENT:
      return "event";
    case ATLAS_FAULT_LAUNCH:
      return "launch";
    case ATLAS_FAULT_HOST_ALLOC:
      return "host-alloc";
    case ATLAS_FAULT_FREE:
      return "free";
    case ATLAS_FAULT_COLLECTIVE:
      return "collective";
    case ATLAS_FAULT_KIND_COUNT:
      break;
  }
  return "?";
}

// Parses ATLAS_FAULT=kind:n[,kind:n...] once, at creation, into fail_at.
atlas_status atlas_fault_read_env(atlas_fault_state *faults) {
  memset(faults, 0, sizeof(*faults));
  const char *text = getenv("ATLAS_FAULT");
  if (text == NULL || text[0] == '\0') return ATLAS_OK;
  const char *p = text;
  while (*p != '\0') {
    const char *colon = strchr(p, ':');
    int kind = -1;
    for (int k = 0; colon != NULL && k < ATLAS_FAULT_KIND_COUNT; ++k) {
      const char *name = atlas_fault_kind_name((atlas_fault_kind)k);
      if (strlen(name) == (size_t)(colon - p) &&
          strncmp(name, p, (size_t)(colon - p)) == 0) {
        kind = k;
      }
    }
    char *end = NULL;
    errno = 0;
    unsigned long long n = colon != NULL ? strtoull(colon + 1, &end, 10) : 0;
    if (kind < 0 || errno != 0 || end == colon + 1 || n == 0 ||
        colon[1] == '-' || (*end != ',' && *end != '\0')) {
      return atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT,
          "ATLAS_FAULT='%.200s' is not kind:n[,kind:n...] with kind one of "
          "alloc, copy, stream, event, launch, host-alloc, free, collective "
          "and n >= 1",
          text);
    }
    faults->fail_at[kind] = (uint64_t)n;
    p = *end == ',' ? end + 1 : end;
  }
  return ATLAS_OK;
}

atlas_status atlas_fault_check(atlas_fault_state *faults, atlas_fault_kind kind,
                               const char *what, const char *owner) {
  // Hot path: one relaxed increment and one load, no lock.
  uint64_t n = __atomic_add_fetch(&faults->count[kind], 1, __ATOMIC_RELAXED);
  uint64_t at = __atomic_load_n(&faults->fail_at[kind], __ATOMIC_RELAXED);
  if (at == 0 || n != at) return ATLAS_OK;
  // One-shot: only the thread that clears it reports the fault.
  if (!__atomic_compare_exchange_n(&faults->fail_at[kind], &at, 0, false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    return ATLAS_OK;
  }
  return atlas_status_make(
      ATLAS_STATUS_ABORTED,
      "injected fault: %s #%" PRIu64 " on backend %s failed", what, n, owner);
}

void atlas_fault_arm(atlas_fault_state *faults, atlas_fault_kind kind,
                     uint64_t k) {
  uint64_t now = __atomic_load_n(&faults->count[kind], __ATOMIC_RELAXED);
  __atomic_store_n(&faults->fail_at[kind], k == 0 ? 0 : now + k,
                   __ATOMIC_RELAXED);
}

uint64_t atlas_fault_count(const atlas_fault_state *faults,
                           atlas_fault_kind kind) {
  return __atomic_load_n(&faults->count[kind], __ATOMIC_RELAXED);
}
