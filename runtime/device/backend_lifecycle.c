// A backend's shared state from birth to death: atlas_backend_base_init
// fills what every backend carries (name, ledger, environment switches,
// fault points, op cache); atlas_backend_base_deinit releases it, ending
// with the sweep of what nobody released.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/log.h"
#include "atlas/runtime/device/backend_impl.h"
#include "atlas/runtime/device/backend_memory.h"
#include "atlas/runtime/device/backend_modules.h"
#include "atlas/runtime/device/fault.h"
#include "atlas/runtime/device/op_cache.h"
#include "atlas/runtime/device/redzone.h"

atlas_status atlas_backend_read_switch_env(const char *name, bool *out_on) {
  const char *text = getenv(name);
  if (text == NULL || text[0] == '\0') return ATLAS_OK;  // the default
  if (strcmp(text, "0") == 0 || strcmp(text, "1") == 0) {
    *out_on = text[0] == '1';
    return ATLAS_OK;
  }
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "%s='%.200s' is neither 0 (off) nor 1 (on)", name,
                           text);
}

// The entries the shared code cannot do without.
static atlas_status check_required(const atlas_backend_vtable *v,
                                   const char *name) {
  const char *missing = v == NULL              ? "the whole vtable"
                        : v->destroy == NULL   ? "destroy"
                        : v->raw_alloc == NULL ? "raw_alloc"
                        : v->raw_free == NULL  ? "raw_free"
                        : v->copy == NULL      ? "copy"
                        : v->fill == NULL      ? "fill"
                                               : NULL;
  if (missing == NULL) return ATLAS_OK;
  return atlas_status_make(
      ATLAS_STATUS_INVALID_ARGUMENT,
      "backend %s: its vtable lacks %s, which every "
      "backend must fill (see runtime/device/backend_impl.h)",
      name, missing);
}

atlas_status atlas_backend_base_init(atlas_backend *b,
                                     const atlas_backend_vtable *vtable,
                                     const char *name) {
  ATLAS_RETURN_IF_ERROR(check_required(vtable, name));
  b->vtable = vtable;
  snprintf(b->name, sizeof(b->name), "%s", name);
  ATLAS_RETURN_IF_ERROR(atlas_redzone_read_env(&b->redzone_bytes));
  b->debug_sync = false;
  ATLAS_RETURN_IF_ERROR(
      atlas_backend_read_switch_env("ATLAS_DEBUG_SYNC", &b->debug_sync));
  ATLAS_RETURN_IF_ERROR(atlas_fault_read_env(&b->faults));
  b->poison_active = false;
  b->poison_lo = b->poison_hi = 0;
  ATLAS_RETURN_IF_ERROR(atlas_ledger_create(&b->ledger));
  atlas_status status = atlas_op_cache_create(b, &b->op_cache);
  if (status != ATLAS_OK) {
    atlas_ledger_destroy(b->ledger);
    b->ledger = NULL;
    return status;
  }
  pthread_mutex_init(&b->state_mutex, NULL);
  b->registry = NULL;
  b->modules_job = NULL;
  b->modules_error = ATLAS_OK;
  return ATLAS_OK;
}

atlas_status atlas_backend_base_deinit(atlas_backend *b) {
  atlas_status status = atlas_op_cache_destroy(b->op_cache);
  b->op_cache = NULL;
  atlas_sweep_result swept;
  status = atlas_status_join(status, atlas_backend_memory_sweep(b, &swept));
  if (swept.count > swept.refused_count) {
    // Last-resort reclamation is expected after a failed load; say what it
    // had to free so a leak on the clean path is visible.
    atlas_log(&b->log, ATLAS_LOG_WARNING,
              "backend %s reclaimed %zu unreleased allocations (%zu bytes) "
              "at destroy%s%s:\n%s",
              b->name, swept.count - swept.refused_count,
              swept.bytes - swept.refused_bytes,
              swept.refused_count > 0 ? ", and released the ones whose free "
                                        "the device had refused"
                                      : "",
              swept.unfreed_count > 0 ? "; the device refused to free some "
                                        "(the status names them), which "
                                        "stay allocated"
                                      : "",
              swept.sites ? swept.sites : "");
  } else if (swept.count > 0) {
    // Every one was freed before and refused by the device: nothing leaked,
    // but the memory was held until now, so say what was released.
    atlas_log(&b->log, ATLAS_LOG_WARNING,
              "backend %s released at destroy %zu allocations (%zu bytes) "
              "whose free the device had refused (no leak); freed %zu of "
              "them%s:\n%s",
              b->name, swept.count, swept.bytes,
              swept.count - swept.unfreed_count,
              swept.unfreed_count > 0 ? ", the device refused again for the "
                                        "rest (the status names them), which "
                                        "stay allocated"
                                      : "",
              swept.sites ? swept.sites : "");
  }
  atlas_sweep_result_free(&swept);
  atlas_backend_modules_drop(b);
  atlas_status_free(b->modules_error);
  b->modules_error = ATLAS_OK;
  status =
      atlas_status_join(status, atlas_kernel_registry_release(b->registry));
  b->registry = NULL;
  atlas_ledger_destroy(b->ledger);
  b->ledger = NULL;
  pthread_mutex_destroy(&b->state_mutex);
  return status;
}
