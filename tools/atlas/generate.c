// One generation for the atlas commands (generate.h).
#include "atlas/tools/atlas/generate.h"

#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "atlas/tools/atlas/cli_stdio.h"
#include "atlas/tools/atlas/cmd_run.h"
#include "atlas/tools/atlas/progress.h"

// ---- the work --------------------------------------------------------------------

// What one generation's callbacks share: the logits file and, for --stats,
// when the call began and when the first and last tokens came.
typedef struct generation_ctx {
  atlas_cli_logits_file *lf;
  size_t tokens;
  double start_ms, first_ms, last_ms;
} generation_ctx;

static atlas_status write_logits(void *ctx, const float *logits, size_t n) {
  atlas_cli_logits_file *lf = ((generation_ctx *)ctx)->lf;
  if (lf == NULL || lf->f == NULL) return ATLAS_OK;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "--logits writes the host's floats as little-endian; port this first"
#endif
  if (fwrite(logits, sizeof(float), n, lf->f) != n) {
    char reason[ATLAS_CLI_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "writing logits to %s: %s",
                             lf->path,
                             atlas_cli_strerror(errno, reason, sizeof(reason)));
  }
  return ATLAS_OK;
}

static bool time_token(void *ctx, uint32_t token) {
  (void)token;
  generation_ctx *g = ctx;
  g->last_ms = atlas_progress_now_ms();
  if (g->tokens++ == 0) g->first_ms = g->last_ms;
  return true;
}

// run --stats, on stderr: the prompt (its forward pass and the first token's
// choice) and the rest of the tokens, timed around atlas_generate.
static void print_stats(const generation_ctx *g, size_t prompt_len,
                        double end_ms) {
  if (g->tokens == 0) {
    fprintf(stderr, "stats: prompt %zu tokens in %.2f ms, no token generated\n",
            prompt_len, end_ms - g->start_ms);
    return;
  }
  fprintf(stderr, "stats: prompt %zu tokens, first token after %.2f ms",
          prompt_len, g->first_ms - g->start_ms);
  if (g->tokens > 1) {
    double ms = g->last_ms - g->first_ms;
    fprintf(stderr, "; %zu more tokens in %.2f ms (%.1f tokens/s)",
            g->tokens - 1, ms,
            ms > 0 ? (double)(g->tokens - 1) * 1e3 / ms : 0.0);
  }
  fputc('\n', stderr);
}
// Streams generated text to stdout as it arrives.
static bool print_text(void *ctx, const char *text, size_t len) {
  (void)ctx;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

atlas_status atlas_cli_generate(atlas_model *m, const uint32_t *prompt,
                                size_t n, size_t steps, bool ignore_eos,
                                atlas_cli_logits_file *lf,
                                const run_options *run,
                                const atlas_tokenizer *tokenizer) {
  uint32_t *out = calloc(steps ? steps : 1, sizeof(uint32_t));
  if (out == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "too many steps");
  }
  atlas_generate_options go;
  atlas_generate_options_init(&go);
  go.max_new_tokens = steps;
  go.ignore_eos = ignore_eos;
  generation_ctx g = {.lf = lf};
  go.ctx = &g;
  if (lf != NULL && lf->f != NULL) go.on_logits = write_logits;
  if (run != NULL && run->stats) go.on_token = time_token;
  if (run != NULL) {
    go.temperature = (float)run->temperature;
    go.top_k = (int32_t)run->top_k;
    go.top_p = (float)run->top_p;
    go.min_p = (float)run->min_p;
    go.repetition_penalty = (float)run->repetition_penalty;
    go.seed = run->seed;
    go.stop_strings = run->stops;
    go.stop_count = run->stop_count;
  }
  if (tokenizer != NULL) {
    go.tokenizer = tokenizer;
    go.on_text = print_text;
  }
  size_t count = 0;
  g.start_ms = atlas_progress_now_ms();
  atlas_status s = atlas_generate(m, prompt, n, &go, out, &count);
  double end_ms = atlas_progress_now_ms();
  if (s == ATLAS_OK && tokenizer == NULL) {
    for (size_t i = 0; i < count; ++i) printf("%s%u", i ? "," : "", out[i]);
  }
  if (s == ATLAS_OK || tokenizer != NULL) printf("\n");
  if (s == ATLAS_OK && go.on_token != NULL) {
    fflush(stdout);
    print_stats(&g, n, end_ms);
  }
  free(out);
  return s;
}
