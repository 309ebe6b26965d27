// atlas run and atlas swap: a checkpoint's generation, and the hot swap
// with the generation that follows it.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/atlas.h"
#include "atlas/atlas_testing.h"
#include "atlas/tools/atlas/cli_common.h"
#include "atlas/tools/atlas/cli_files.h"
#include "atlas/tools/atlas/cmd_run.h"
#include "atlas/tools/atlas/generate.h"
#include "atlas/tools/atlas/progress.h"

// "DIR/NAME" into out (ATLAS_CLI_PATH_MAX bytes).
static atlas_status path_in(const char *dir, const char *name, char *out) {
  int n = snprintf(out, ATLAS_CLI_PATH_MAX, "%s/%s", dir, name);
  if (n < 0 || n >= ATLAS_CLI_PATH_MAX) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "the path %s/%s is too long", dir, name);
  }
  return ATLAS_OK;
}

// --prompt / --prompt-file: DIR/tokenizer.json encodes the text (with the
// tokenizer's special tokens), or with --chat the text rendered as a user
// message (after --system's, if given) by DIR/tokenizer_config.json's chat
// template (the template writes them). For a GGUF file, its tokenizer.ggml.*
// metadata and tokenizer.chat_template serve instead.
// The model's tokenizer.json, loaded before any prompt is read (a wrong
// --model fails before stdin is consumed).
static atlas_status load_tokenizer(const run_options *o,
                                   atlas_tokenizer **out_t) {
  if (atlas_cli_is_gguf(o->model)) {
    ATLAS_RETURN_IF_ERROR(atlas_tokenizer_load_gguf(o->model, out_t));
  } else {
    char path[ATLAS_CLI_PATH_MAX];
    ATLAS_RETURN_IF_ERROR(path_in(o->model, "tokenizer.json", path));
    ATLAS_RETURN_IF_ERROR(atlas_tokenizer_load(path, out_t));
  }
  atlas_status s = atlas_tokenizer_set_limits(*out_t, &o->limits.tokenizer);
  if (s != ATLAS_OK) {
    atlas_tokenizer_free(*out_t);
    *out_t = NULL;
  }
  return s;
}

// Where the prompt text came from, for messages.
static const char *prompt_source(const run_options *o) {
  if (o->file_text == NULL) return "--prompt";
  return o->prompt_file[0] == '-' ? "stdin" : o->prompt_file;
}

static atlas_status encode_prompt(const run_options *o, atlas_tokenizer *t,
                                  uint32_t **out_ids, size_t *out_len) {
  if (!o->chat) {
    return atlas_status_annotate(
        atlas_tokenizer_encode(t, o->text, o->text_len, true, out_ids, out_len),
        "the prompt (%s)", prompt_source(o));
  }
  // A chat message is a C string: a NUL would cut it short unseen.
  const char *nul = memchr(o->text, '\0', o->text_len);
  if (nul != NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: a NUL byte at offset %zu; a chat message "
                             "is text without NUL bytes",
                             prompt_source(o), (size_t)(nul - o->text));
  }
  atlas_chat_template *tmpl = NULL;
  if (atlas_cli_is_gguf(o->model)) {
    ATLAS_RETURN_IF_ERROR(atlas_chat_template_load_gguf(o->model, &tmpl));
  } else {
    char path[ATLAS_CLI_PATH_MAX];
    ATLAS_RETURN_IF_ERROR(path_in(o->model, "tokenizer_config.json", path));
    ATLAS_RETURN_IF_ERROR(atlas_chat_template_load(path, &tmpl));
  }
  atlas_status limited = atlas_chat_template_set_limits(tmpl, &o->limits.chat);
  if (limited != ATLAS_OK) {
    atlas_chat_template_free(tmpl);
    return limited;
  }
  atlas_chat_message messages[2] = {{"system", o->system}, {"user", o->text}};
  bool system = o->system != NULL;
  char *text = NULL;
  atlas_status s =
      atlas_status_annotate(atlas_chat_template_apply(tmpl, messages + !system,
                                                      1 + system, true, &text),
                            "the chat prompt (%s%s)", prompt_source(o),
                            system ? " and --system" : "");
  atlas_chat_template_free(tmpl);
  if (s == ATLAS_OK) {
    s = atlas_tokenizer_encode(t, text, strlen(text), false, out_ids, out_len);
  }
  atlas_free(text);
  return s;
}
// swap's own error in *out_swap_error; the status is everything else.
static atlas_status swap_and_rerun(atlas_model **m, run_options *o,
                                   const atlas_open_options *oo,
                                   atlas_cli_logits_file *lf,
                                   atlas_status *out_swap_error) {
  *out_swap_error = ATLAS_OK;
  ATLAS_RETURN_IF_ERROR(atlas_cli_print_report(*m, 10, 0.0));
  atlas_progress progress;
  atlas_progress_init(&progress, "swapping");
  atlas_open_options next = *oo;
  next.progress_ctx = &progress;
  // The budget is the swap's: the first model opens without it.
  next.device_budget_bytes = (uint64_t)(o->budget_mb * 1e6 + 0.5);
  atlas_swap_info r;
  atlas_testing_fault fault = ATLAS_TESTING_FAULT_NONE;
  if (o->fail_alloc > 0) {
    fault = o->fail_restore ? ATLAS_TESTING_FAULT_ALLOC_AND_RESTORE
                            : ATLAS_TESTING_FAULT_ALLOC;
  }
  atlas_status swapped =
      atlas_testing_swap(m, o->to, &next, fault, (uint64_t)o->fail_alloc, &r);
  atlas_progress_finish(&progress);
  *out_swap_error = atlas_cli_report_swap(swapped, &r, o->model, o->to);
  if (*m == NULL) return ATLAS_OK;  // lost: nothing serves
  ATLAS_RETURN_IF_ERROR(atlas_cli_generate(*m, o->prompt, o->prompt_len,
                                           (size_t)o->steps, o->ignore_eos, lf,
                                           NULL, NULL));
  return atlas_cli_print_report(*m, 10, 0.0);
}

// `atlas run` (swap false) and `atlas swap`.
//
// --logits goes to a temporary file opened before anything loads (a path
// that cannot be written fails first) and is renamed into place only when
// every generation the command ran completed; otherwise it is removed. A
// swap that failed with the old model still serving is such a case: the
// old model generates again and the file holds its logits twice, which is
// how tools/fuzz/fault_sweep.sh proves the old model serves bit for bit. A swap
// that left no model is not: only the first generation ran. Under
// `swap`, ATLAS_FAULT applies to the swap only: the first model loads
// without it (atlas_testing_open_unfaulted).
static atlas_status run_or_swap(run_options *o, bool swap) {
  atlas_cli_output out;
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_open(
      "--logits", o->logits[0] != '\0' ? o->logits : NULL, &out));
  atlas_status s = atlas_cli_output_check_input(&out, "--model", o->model);
  if (s == ATLAS_OK && swap)
    s = atlas_cli_output_check_input(&out, "--to", o->to);
  if (s == ATLAS_OK) {
    s = atlas_cli_output_check_input(&out, "--prompt-file", o->prompt_file);
  }
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(&out);
    return s;
  }
  atlas_tokenizer *tokenizer = NULL;
  if (o->prompt_file[0] != '\0' || o->text != NULL) {
    s = load_tokenizer(o, &tokenizer);
  }
  if (s == ATLAS_OK && o->prompt_file[0] != '\0') {
    s = atlas_cli_read_limited(
        o->prompt_file, (size_t)o->limits.tokenizer.max_input_bytes,
        "--max-input-bytes", &o->file_text, &o->text_len);
    o->text = o->file_text;
  }
  if (s == ATLAS_OK && o->text != NULL) {
    s = encode_prompt(o, tokenizer, &o->prompt, &o->prompt_len);
    if (s == ATLAS_OK && o->prompt_len == 0) {
      s = atlas_status_make(
          ATLAS_STATUS_INVALID_ARGUMENT, "%s encodes to no tokens",
          o->file_text != NULL ? "--prompt-file" : "--prompt");
    }
    if (s == ATLAS_OK && o->max_seq != 0 &&
        o->max_seq < atlas_cli_positions_needed(o->prompt_len, o->steps)) {
      s = atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                            "--max-seq %ld is less than the %ld positions the "
                            "prompt's %zu tokens and --steps %ld need",
                            o->max_seq,
                            atlas_cli_positions_needed(o->prompt_len, o->steps),
                            o->prompt_len, o->steps);
    }
  }
  int64_t max_seq = o->max_seq;
  if (max_seq == 0) max_seq = (int64_t)o->prompt_len + o->steps;
  if (max_seq == 0) max_seq = 1;
  atlas_cli_logits_file lf = {out.f, o->logits};
  atlas_progress progress;
  atlas_progress_init(&progress, "loading");
  atlas_open_options oo;
  atlas_cli_open_options_for(o->backend, max_seq, &progress, &oo);
  oo.kv_cache_type = o->kv_dtype;
  oo.tensor_parallel = (int)o->tensor_parallel;
  oo.devices = o->device_count > 0 ? o->devices : NULL;
  // --steps against the model's context, checked while opening, before
  // anything is allocated: forward steps are every prompt token and every
  // generated token but the last.
  oo.context_needed = atlas_cli_positions_needed(o->prompt_len, o->steps);
  // The prompt's ids against the vocabulary, checked the same way: a swap
  // to a model that cannot read this prompt is refused while the old model
  // still serves, instead of swapping and then failing.
  for (size_t i = 0; o->prompt != NULL && i < o->prompt_len; ++i) {
    if ((int64_t)o->prompt[i] >= oo.vocab_needed) {
      oo.vocab_needed = (int64_t)o->prompt[i] + 1;
    }
  }
  atlas_model *m = NULL;
  if (s == ATLAS_OK) {
    s = swap ? atlas_testing_open_unfaulted(o->model, &oo, &m)
             : atlas_open(o->model, &oo, &m);
  }
  atlas_progress_finish(&progress);
  if (s == ATLAS_OK) {
    s = atlas_cli_generate(m, o->prompt, o->prompt_len, (size_t)o->steps,
                           o->ignore_eos, &lf, o, tokenizer);
  }
  atlas_status swap_error = ATLAS_OK;
  if (s == ATLAS_OK && swap) {
    s = swap_and_rerun(&m, o, &oo, &lf, &swap_error);
  }
  // A swap that left no model ran one generation of the two: its file
  // would hold the first model's rows alone and look whole. It goes.
  bool whole = swap_error == ATLAS_OK || m != NULL;
  atlas_tokenizer_free(tokenizer);
  s = atlas_status_join(s, atlas_cli_close_model(m, swap));
  if (s == ATLAS_OK && whole) {
    s = atlas_cli_output_commit(&out);
  } else {
    atlas_cli_output_abort(&out);
  }
  // The swap's own failure first: it says which model served.
  return atlas_status_join(swap_error, s);
}

int atlas_cli_run_main(int argc, char **argv, bool swap) {
  const atlas_cli_command *c =
      swap ? &atlas_cli_swap_command : &atlas_cli_run_command;
  run_options *o = calloc(1, sizeof(*o));
  if (o == NULL)
    return atlas_cli_finish(
        c->program, atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory"));
  o->backend = "auto";
  o->tensor_parallel = 1;
  o->top_p = 1.0;
  o->repetition_penalty = 1.0;
  atlas_cli_limits_init(&o->limits);
  int next = 0;
  atlas_cli_parse_result r = atlas_cli_parse(
      c, argc, argv, swap ? atlas_cli_set_swap : atlas_cli_set_run, o, &next);
  int rc;
  if (r != ATLAS_CLI_PARSED) {
    rc = atlas_cli_parsed_exit(r);
  } else if (!swap && (o->prompt != NULL) + (o->text != NULL) +
                              (o->prompt_file[0] != '\0') !=
                          1) {
    rc = atlas_cli_usage_error(
        c->program, o->prompt == NULL && o->text == NULL
                        ? "--tokens IDS is required (or --prompt TEXT, or "
                          "--prompt-file FILE)"
                        : "give one of --tokens, --prompt, --prompt-file");
  } else if (o->prompt != NULL && (o->chat || o->stop_count > 0)) {
    rc = atlas_cli_usage_error(c->program, "%s needs --prompt or --prompt-file",
                               o->chat ? "--chat" : "--stop");
  } else if (o->system != NULL && !o->chat) {
    rc = atlas_cli_usage_error(c->program, "--system needs --chat");
  } else if (o->device_count != 0 &&
             o->device_count != (size_t)o->tensor_parallel) {
    rc = atlas_cli_usage_error(c->program,
                               "--devices names %zu devices but "
                               "--tensor-parallel is %ld",
                               o->device_count, o->tensor_parallel);
  } else if (o->fail_restore && o->fail_alloc == 0) {
    rc = atlas_cli_usage_error(c->program,
                               "--fail-restore needs --fail-alloc N");
  } else if (o->max_seq != 0 &&
             o->max_seq < atlas_cli_positions_needed(o->prompt_len, o->steps)) {
    // (Not "prompt length + steps - 1": --steps 0 needs the prompt's.)
    rc = atlas_cli_usage_error(
        c->program,
        "--max-seq %ld is less than the %ld positions "
        "the prompt's %zu tokens and --steps %ld need",
        o->max_seq, atlas_cli_positions_needed(o->prompt_len, o->steps),
        o->prompt_len, o->steps);
  } else {
    rc = atlas_cli_finish(c->program, run_or_swap(o, swap));
  }
  free(o->prompt);
  free(o->file_text);
  free(o);
  return rc;
}
