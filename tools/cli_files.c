// Command-line helpers (see cli_files.h).
#include "atlas/tools/cli_files.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atlas/runtime/arch/llama/llama_config.h"

atlas_status atlas_cli_output_open(const char *path, atlas_cli_output *out) {
  memset(out, 0, sizeof(*out));
  if (path == NULL) return ATLAS_OK;
  size_t n = strlen(path);
  out->path = strdup(path);
  out->tmp = malloc(n + 16);
  if (out->path == NULL || out->tmp == NULL) {
    atlas_cli_output_abort(out);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                             path);
  }
  snprintf(out->tmp, n + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(out->tmp);
  if (fd < 0) {
    int err = errno;
    free(out->tmp);
    out->tmp = NULL;
    atlas_cli_output_abort(out);
    return atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                             strerror(err));
  }
  out->f = fdopen(fd, "wb");
  if (out->f == NULL) {
    int err = errno;
    close(fd);
    atlas_cli_output_abort(out);
    return atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                             strerror(err));
  }
  return ATLAS_OK;
}

atlas_status atlas_cli_output_commit(atlas_cli_output *out) {
  if (out->f == NULL) {
    atlas_cli_output_abort(out);
    return ATLAS_OK;
  }
  int failed = fflush(out->f) != 0 || fsync(fileno(out->f)) != 0;
  int err = errno;
  failed |= fclose(out->f) != 0;
  out->f = NULL;
  if (!failed && rename(out->tmp, out->path) != 0) {
    failed = 1;
    err = errno;
  }
  if (failed) {
    atlas_status s = atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s",
                                       out->path, strerror(err));
    atlas_cli_output_abort(out);
    return s;
  }
  free(out->tmp);
  free(out->path);
  memset(out, 0, sizeof(*out));
  return ATLAS_OK;
}

void atlas_cli_output_abort(atlas_cli_output *out) {
  if (out->f != NULL) fclose(out->f);
  if (out->tmp != NULL) unlink(out->tmp);
  free(out->tmp);
  free(out->path);
  memset(out, 0, sizeof(*out));
}

atlas_status atlas_cli_parse_finite(const char *flag, const char *text,
                                    double min, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v < min) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s wants a finite number >= %g, not '%.200s'",
                             flag, min, text);
  }
  *out = v;
  return ATLAS_OK;
}

atlas_status atlas_cli_check_steps(const char *model_dir, size_t prompt_len,
                                   long steps) {
  if (steps < 0) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "--steps is required");
  }
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/config.json", model_dir);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "model directory path is too long");
  }
  atlas_llama_config c;
  ATLAS_RETURN_IF_ERROR(atlas_llama_config_load(path, &c));
  // Forward steps: every prompt token and every generated token but the last.
  uint64_t forwards = (uint64_t)prompt_len + (steps > 0 ? (uint64_t)steps - 1 : 0);
  if ((uint64_t)steps > (uint64_t)INT64_MAX ||
      forwards > (uint64_t)c.max_position_embeddings) {
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT,
        "--steps %ld with %zu prompt tokens needs %llu positions; %s has a "
        "context of %lld (max_position_embeddings)",
        steps, prompt_len, (unsigned long long)forwards, model_dir,
        (long long)c.max_position_embeddings);
  }
  return ATLAS_OK;
}
