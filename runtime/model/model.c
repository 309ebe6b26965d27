// A served model: checkpoint -> its own backend -> Llama model.
#include "atlas/runtime/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/kernels/llama_kernels.h"
#include "atlas/runtime/log.h"

struct atlas_model {
  atlas_model_spec spec;
  char *dir;           // owned copy of spec.dir
  char *backend_name;  // owned copy of spec.backend
  atlas_backend *backend;
  atlas_llama_model *llama;
  // Kept open while serving: the source of these weights, with the digests
  // the load recorded (what a swap snapshots to restore them bit for bit).
  atlas_checkpoint *ck;
};

static const char *spec_name(const atlas_model_spec *spec) {
  return spec->dir != NULL ? spec->dir
                           : (spec->embedded ? spec->embedded->name : "(none)");
}

// Opens the checkpoint and its config; nothing touches a device.
static atlas_status open_checkpoint(const atlas_model_spec *spec,
                                    atlas_checkpoint **out_ck,
                                    atlas_llama_config *out_config) {
  *out_ck = NULL;
  if (spec->adopt_checkpoint != NULL && spec->adopt_config != NULL) {
    *out_config = *spec->adopt_config;
    *out_ck = spec->adopt_checkpoint;
    return ATLAS_OK;
  }
  if (spec->dir != NULL) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/config.json", spec->dir);
    if (n < 0 || (size_t)n >= sizeof(path)) {
      return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                               "model directory path is too long: %s", spec->dir);
    }
    ATLAS_RETURN_IF_ERROR(atlas_llama_config_load(path, out_config));
    return atlas_checkpoint_open(spec->dir, out_ck);
  }
  if (spec->embedded == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "model spec names neither a directory nor an "
                             "embedded checkpoint");
  }
  const atlas_embedded_checkpoint *e = spec->embedded;
  ATLAS_RETURN_IF_ERROR(atlas_llama_config_parse(e->config_json, e->config_size,
                                                 e->name, out_config));
  return atlas_checkpoint_open_buffer(e->safetensors, e->safetensors_size,
                                      e->name, out_ck);
}

static atlas_status create_backend(const atlas_model_spec *spec,
                                   atlas_backend **out) {
  atlas_backend_options o;
  memset(&o, 0, sizeof(o));
  o.modules = &atlas_llama_module_set;
  o.device = spec->device;
  o.host_pool = spec->host_pool;
  o.fail_module_load_at = spec->fail_module_load_at;
  atlas_status status = atlas_backend_factory_create(spec->backend, &o, out);
  if (status == ATLAS_OK && spec->ignore_env_fault) {
    for (int k = 0; k < ATLAS_FAULT_KIND_COUNT; ++k) {
      atlas_backend_inject_fault(*out, (atlas_fault_kind)k, 0);
    }
  }
  if (status == ATLAS_OK && spec->fault_at != 0) {
    atlas_backend_inject_fault(*out, spec->fault_kind, spec->fault_at);
  }
  return status;
}

atlas_status atlas_model_required_bytes(const atlas_model_spec *spec,
                                        uint64_t *out_bytes) {
  *out_bytes = 0;
  atlas_checkpoint *ck = NULL;
  atlas_llama_config config;
  atlas_status status = open_checkpoint(spec, &ck, &config);
  if (status == ATLAS_OK) {
    status = atlas_llama_required_bytes(&config, ck, spec->max_seq, out_bytes);
  }
  if (ck != spec->adopt_checkpoint) atlas_checkpoint_close(ck);
  return status;
}

atlas_status atlas_model_open(const atlas_model_spec *spec,
                              atlas_model **out_model) {
  *out_model = NULL;
  atlas_model *m = calloc(1, sizeof(*m));
  if (m == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "out of host memory opening %s", spec_name(spec));
  }
  m->spec = *spec;
  m->spec.adopt_checkpoint = NULL;  // adopted below; never reused
  m->spec.adopt_config = NULL;
  m->spec.after_teardown = NULL;
  if (spec->dir != NULL) {
    m->dir = strdup(spec->dir);
    if (m->dir == NULL) {
      atlas_checkpoint_close(spec->adopt_checkpoint);
      free(m);
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "out of host memory opening %s", spec->dir);
    }
    m->spec.dir = m->dir;
  }
  if (spec->backend != NULL) {
    m->backend_name = strdup(spec->backend);
    if (m->backend_name == NULL) {
      atlas_checkpoint_close(spec->adopt_checkpoint);
      free(m->dir);
      free(m);
      return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                               "out of host memory opening %s", spec_name(spec));
    }
    m->spec.backend = m->backend_name;
  }
  atlas_checkpoint *ck = NULL;
  atlas_llama_config config;
  atlas_status status = open_checkpoint(spec, &ck, &config);
  if (status == ATLAS_OK) status = create_backend(spec, &m->backend);
  if (status == ATLAS_OK) {
    atlas_llama_load_options lo = {spec->max_seq, spec->progress,
                                   spec->progress_ctx, spec->uploader};
    status = atlas_llama_load(m->backend, ck, &config, &lo, &m->llama);
  }
  if (status == ATLAS_OK) {
    // A file written while it was read may have given mixed bytes.
    status = atlas_checkpoint_check_unchanged(ck);
    if (status != ATLAS_OK) {
      status = atlas_status_join(
          atlas_status_annotate(status, "loading %s", spec_name(spec)),
          atlas_llama_unload(m->llama, NULL));
      m->llama = NULL;
    }
  }
  if (status != ATLAS_OK) {
    atlas_checkpoint_close(ck);
    // The backend's destroy is the last resort for anything still on its
    // ledger; after a failed load there should be nothing.
    status = atlas_status_join(status, atlas_backend_destroy(m->backend));
    free(m->dir);
    free(m->backend_name);
    free(m);
    return status;
  }
  m->ck = ck;
  *out_model = m;
  return ATLAS_OK;
}

atlas_status atlas_model_close(atlas_model *model,
                               atlas_teardown_report *out_report) {
  if (model == NULL) return ATLAS_OK;
  atlas_status status = atlas_llama_unload(model->llama, out_report);
  status = atlas_status_join(status, atlas_backend_destroy(model->backend));
  atlas_checkpoint_close(model->ck);
  free(model->dir);
  free(model->backend_name);
  free(model);
  return status;
}

atlas_backend *atlas_model_backend(atlas_model *model) { return model->backend; }
const atlas_checkpoint *atlas_model_checkpoint(const atlas_model *model) {
  return model->ck;
}
atlas_llama_model *atlas_model_llama(atlas_model *model) { return model->llama; }
const atlas_model_spec *atlas_model_spec_of(const atlas_model *model) {
  return &model->spec;
}
const char *atlas_model_name(const atlas_model *model) {
  return spec_name(&model->spec);
}
