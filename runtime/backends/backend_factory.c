// The backend table and the "auto" policy.
#include "atlas/runtime/backends/backend_factory.h"

#include <string.h>

#include "atlas/runtime/base/log.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/host_backend.h"

static const atlas_backend_factory_row kRows[] = {
    {"cuda", atlas_cuda_backend_create, 1},
    {"host", atlas_host_backend_create, 0},
};

const atlas_backend_factory_row *atlas_backend_factory_rows(size_t *out_count) {
  *out_count = sizeof(kRows) / sizeof(kRows[0]);
  return kRows;
}

static const atlas_backend_factory_row *find_row(const char *name) {
  for (size_t i = 0; i < sizeof(kRows) / sizeof(kRows[0]); ++i) {
    if (strcmp(kRows[i].name, name) == 0) return &kRows[i];
  }
  return NULL;
}

atlas_status atlas_backend_factory_check_name(const char *name) {
  if (name == NULL || strcmp(name, "auto") == 0 || find_row(name) != NULL) {
    return ATLAS_OK;
  }
  char known[256] = "";
  for (size_t i = 0; i < sizeof(kRows) / sizeof(kRows[0]); ++i) {
    strncat(known, kRows[i].name, sizeof(known) - strlen(known) - 1);
    strncat(known, ", ", sizeof(known) - strlen(known) - 1);
  }
  strncat(known, "auto", sizeof(known) - strlen(known) - 1);
  return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                           "unknown backend '%s' (expected one of: %s)", name,
                           known);
}

atlas_status atlas_backend_factory_create(const char *name,
                                          const atlas_backend_options *options,
                                          atlas_backend **out_backend) {
  *out_backend = NULL;
  ATLAS_RETURN_IF_ERROR(atlas_backend_factory_check_name(name));
  if (name != NULL && strcmp(name, "auto") != 0) {
    return find_row(name)->create(options, out_backend);
  }
  // auto: the first device backend that is there, else the host.
  atlas_status why = ATLAS_OK;
  for (size_t i = 0; i < sizeof(kRows) / sizeof(kRows[0]); ++i) {
    if (!kRows[i].drives_device) continue;
    atlas_status s = kRows[i].create(options, out_backend);
    if (atlas_status_code_of(s) != ATLAS_STATUS_UNAVAILABLE) {
      atlas_status_free(why);
      return s;
    }
    why = atlas_status_join(why, s);
  }
  atlas_log(options != NULL ? &options->log : NULL, ATLAS_LOG_INFO,
            "backend auto: using the host (%s)", atlas_status_message(why));
  atlas_status_free(why);
  return find_row("host")->create(options, out_backend);
}
