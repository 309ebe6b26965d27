// The model a serving command answers with (serve_model.h).
#define _POSIX_C_SOURCE 200809L  // strdup
#include "atlas/tools/serve/serve_model.h"

#include "atlas/atlas_testing.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static atlas_status path_in(const char *dir, const char *name, char **out) {
  size_t n = strlen(dir) + strlen(name) + 2;
  *out = malloc(n);
  if (*out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for a "
                             "path");
  }
  snprintf(*out, n, "%s/%s", dir, name);
  return ATLAS_OK;
}

static bool is_gguf(const char *path) {
  size_t n = strlen(path);
  return n > 5 && strcasecmp(path + n - 5, ".gguf") == 0;
}

// DIR/tokenizer.json (required) and DIR/tokenizer_config.json's chat
// template (optional: without one, chat requests are refused by name); a
// GGUF file's tokenizer.ggml.* and tokenizer.chat_template likewise.
static atlas_status load_text(const char *dir,
                              const atlas_serve_model_config *c,
                              atlas_tokenizer **out_tok,
                              atlas_chat_template **out_chat) {
  *out_tok = NULL;
  *out_chat = NULL;
  char *path = NULL;
  const bool gguf = is_gguf(dir);
  atlas_status s = ATLAS_OK;
  if (gguf) {
    s = atlas_tokenizer_load_gguf(dir, out_tok);
  } else {
    ATLAS_RETURN_IF_ERROR(path_in(dir, "tokenizer.json", &path));
    s = atlas_tokenizer_load(path, out_tok);
    free(path);
  }
  if (s == ATLAS_OK && c->tokenizer_limits != NULL) {
    s = atlas_tokenizer_set_limits(*out_tok, c->tokenizer_limits);
    if (s != ATLAS_OK) {
      atlas_tokenizer_free(*out_tok);
      *out_tok = NULL;
    }
  }
  if (s != ATLAS_OK) {
    return atlas_status_annotate(s, gguf ? "serving needs the file's tokenizer"
                                         : "serving needs the checkpoint's "
                                           "tokenizer.json");
  }
  // The template's file: the GGUF file itself, or tokenizer_config.json.
  ATLAS_RETURN_IF_ERROR(
      path_in(dir, gguf ? "" : "tokenizer_config.json", &path));
  if (gguf) path[strlen(dir)] = '\0';  // DIR, not "DIR/"
  struct stat st;
  if (stat(path, &st) == 0) {
    s = gguf ? atlas_chat_template_load_gguf(path, out_chat)
             : atlas_chat_template_load(path, out_chat);
    if (s == ATLAS_OK && c->chat_limits != NULL) {
      s = atlas_chat_template_set_limits(*out_chat, c->chat_limits);
      if (s != ATLAS_OK) {  // a bad limit is the command line's error
        atlas_chat_template_free(*out_chat);
        *out_chat = NULL;
        atlas_tokenizer_free(*out_tok);
        *out_tok = NULL;
        free(path);
        return s;
      }
    }
    if (s != ATLAS_OK) {
      // Completions still work; chat requests say there is no template.
      fprintf(stderr,
              "atlas: no chat template (%s); /v1/chat/completions "
              "is refused\n",
              atlas_status_message(s));
      atlas_status_free(s);
      *out_chat = NULL;
    }
  }
  free(path);
  return ATLAS_OK;
}

static void open_options(const atlas_serve_model_config *c,
                         atlas_open_options *o) {
  atlas_open_options_init(o);
  o->backend = c->backend;
  o->kv_cache_type = c->kv_dtype;
  o->max_seq = c->max_seq;
  o->device_budget_bytes = c->device_budget_bytes;
  o->tensor_parallel = c->tensor_parallel;
  o->devices = c->devices;
}

static atlas_status bad_fail_swaps(const char *spec) {
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "--fail-swaps: '%.100s' is not K:KIND:N[,...] "
                           "(K, N >= 1; KIND alloc or lost; at most %d)",
                           spec, ATLAS_SERVE_MAX_FAIL_SWAPS);
}

// --fail-swaps: "K:KIND:N" entries, comma-separated (strtoull: sscanf's %llu
// cannot report an overflow).
static atlas_status parse_fail_swaps(const char *spec, atlas_serve_model *sm) {
  sm->fault_count = 0;
  for (const char *p = spec; p != NULL && *p != '\0';) {
    if (sm->fault_count == ATLAS_SERVE_MAX_FAIL_SWAPS)
      return bad_fail_swaps(spec);
    char *end = NULL;
    errno = 0;
    unsigned long long k =
        isdigit((unsigned char)*p) ? strtoull(p, &end, 10) : 0;
    const char *kind = end != NULL && *end == ':' ? end + 1 : NULL;
    size_t kind_len =
        kind != NULL ? strspn(kind, "abcdefghijklmnopqrstuvwxyz") : 0;
    unsigned long long n = 0;
    end = NULL;
    if (kind != NULL && kind[kind_len] == ':' &&
        isdigit((unsigned char)kind[kind_len + 1])) {
      n = strtoull(kind + kind_len + 1, &end, 10);
    }
    bool alloc = kind_len == 5 && strncmp(kind, "alloc", 5) == 0;
    bool lost = kind_len == 4 && strncmp(kind, "lost", 4) == 0;
    if (errno != 0 || end == NULL || k == 0 || n == 0 || !(alloc || lost) ||
        (*end != ',' && *end != '\0')) {
      return bad_fail_swaps(spec);
    }
    sm->faults[sm->fault_count++] = (atlas_serve_swap_fault){k, lost, n};
    p = end + (*end == ',');
  }
  return ATLAS_OK;
}

static atlas_status start_scheduler(atlas_serve_model *sm) {
  atlas_model_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ATLAS_RETURN_IF_ERROR(atlas_model_info_get(sm->model, &info));
  sm->vocab_size = info.vocab_size;
  sm->max_seq = info.max_seq;
  atlas_scheduler_options so;
  atlas_scheduler_options_init(&so);
  if (sm->config.max_running) so.max_running = sm->config.max_running;
  so.kv_budget_bytes = sm->config.kv_budget_bytes;
  return atlas_scheduler_create(sm->model, &so, &sm->sched);
}

atlas_status atlas_serve_model_open(const atlas_serve_model_config *config,
                                    atlas_serve_model *out) {
  memset(out, 0, sizeof *out);
  out->config = *config;
  out->dir = strdup(config->dir);
  out->config.dir = out->dir;
  if (out->dir == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory");
  }
  atlas_status s = parse_fail_swaps(config->fail_swaps, out);
  out->config.fail_swaps = NULL;  // parsed: the caller's string may go
  if (s == ATLAS_OK)
    s = load_text(config->dir, config, &out->tokenizer, &out->chat);
  atlas_open_options o;
  open_options(config, &o);
  // As `atlas swap` does, with ATLAS_FAULT set the first model loads
  // without it, so that every injected fault lands in a swap.
  const char *fault = getenv("ATLAS_FAULT");
  if (s == ATLAS_OK && fault != NULL && fault[0] != '\0') {
    s = atlas_testing_open_unfaulted(config->dir, &o, &out->model);
  } else if (s == ATLAS_OK) {
    s = atlas_open(config->dir, &o, &out->model);
  }
  if (s == ATLAS_OK) s = start_scheduler(out);
  if (s != ATLAS_OK) {
    atlas_status_free(atlas_serve_model_close(out, false));
  }
  return s;
}

void atlas_serve_model_env(const atlas_serve_model *sm, atlas_oai_env *env) {
  memset(env, 0, sizeof *env);
  env->sched = sm->sched;
  env->tokenizer = sm->tokenizer;
  env->chat = sm->chat;
  env->vocab_size = sm->vocab_size;
  env->max_seq = sm->max_seq;
}

atlas_status atlas_serve_model_stop(atlas_serve_model *sm) {
  atlas_status s = atlas_scheduler_destroy(sm->sched);
  sm->sched = NULL;
  return s;
}

// After a swap whose new model serves: its text files replace the old.
static void take_text(atlas_serve_model *sm, char *dir, atlas_tokenizer *tok,
                      atlas_chat_template *chat) {
  atlas_tokenizer_free(sm->tokenizer);
  atlas_chat_template_free(sm->chat);
  free(sm->dir);
  sm->tokenizer = tok;
  sm->chat = chat;
  sm->dir = dir;
  sm->config.dir = dir;
}

// The swap itself, failing as --fail-swaps asks for this one.
static atlas_status swap_model(atlas_serve_model *sm, const char *dir,
                               atlas_swap_info *info) {
  for (size_t i = 0; i < sm->fault_count; ++i) {
    const atlas_serve_swap_fault *f = &sm->faults[i];
    if (f->swap != sm->swaps) continue;
    return atlas_testing_swap(&sm->model, dir, NULL,
                              f->lost ? ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE
                                      : ATLAS_TESTING_FAULT_ALLOC,
                              f->at, info);
  }
  return atlas_swap(&sm->model, dir, NULL, info);
}

atlas_status atlas_serve_model_swap(atlas_serve_model *sm, const char *dir,
                                    atlas_swap_info *info) {
  memset(info, 0, sizeof *info);
  info->outcome = ATLAS_SWAP_OUTCOME_REFUSED;
  sm->swaps++;
  if (sm->sched != NULL) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "swap: the scheduler is still running");
  }
  atlas_tokenizer *tok = NULL;
  atlas_chat_template *chat = NULL;
  char *dir_copy = strdup(dir);
  atlas_status s =
      dir_copy ? load_text(dir, &sm->config, &tok, &chat)
               : atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory");
  if (s == ATLAS_OK && sm->model == NULL) {
    // Nothing serves (a lost swap): this swap is an open.
    atlas_open_options o;
    open_options(&sm->config, &o);
    s = atlas_open(dir, &o, &sm->model);
    info->outcome =
        s == ATLAS_OK ? ATLAS_SWAP_OUTCOME_SWAPPED : ATLAS_SWAP_OUTCOME_LOST;
  } else if (s == ATLAS_OK) {
    s = swap_model(sm, dir, info);
  }
  if (s == ATLAS_OK) {
    take_text(sm, dir_copy, tok, chat);
  } else {
    free(dir_copy);
    atlas_tokenizer_free(tok);
    atlas_chat_template_free(chat);
  }
  if (sm->model != NULL) {
    // Whatever serves now gets a scheduler; a failure here leaves none (503
    // until the next swap) and is reported with the swap's.
    s = atlas_status_join(s, start_scheduler(sm));
  }
  return s;
}

atlas_status atlas_serve_model_close(atlas_serve_model *sm, bool say) {
  atlas_status s = atlas_serve_model_stop(sm);
  atlas_close_report r;
  memset(&r, 0, sizeof r);
  s = atlas_status_join(s, atlas_close(sm->model, &r));
  if (say && sm->model != NULL) {
    fprintf(stderr,
            "atlas: model closed; leaked: %llu bytes in %zu "
            "allocations\n",
            (unsigned long long)r.leaked_bytes, r.leaked_allocations);
  } else if (say) {
    fprintf(stderr, "atlas: no model was serving; leaked: 0 bytes\n");
  }
  sm->model = NULL;
  atlas_tokenizer_free(sm->tokenizer);
  atlas_chat_template_free(sm->chat);
  free(sm->dir);
  memset(sm, 0, sizeof *sm);
  return s;
}
