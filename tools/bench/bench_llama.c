// bench prefill DIR [--tokens 512,2048] [--reps N] [--backend B] [--kv-dtype T]
// bench decode DIR [--context 128] [--steps N] [--backend B] [--kv-dtype T]
//
// Prefill: the median wall time of atlas_decoder_prefill over a random prompt
// (the last token's logits copied back, as generation needs them); a 16-bit
// --kv-dtype selects the 16-bit prefill products (docs/CLI.md, --kv-dtype).
// Decode: after a prefill of `context` tokens, ms per atlas_decoder_forward
// step (one token, greedy on the device, the id copied back) over `steps`
// steps, with the step replayed as a captured graph and then launched kernel by
// kernel. Both print the device's copy bandwidth (a 1 GiB device-to-device
// copy, bytes read + written) so a caller can form the bandwidth floor. Lines
// starting with RESULT are for tools/gpu/gpu_speed.py; the rest is for people.
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_arch.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/model/model.h"
#include "atlas/tools/bench/bench_llama.h"
#include "atlas/tools/bench/bench_stats.h"

static int check(const atlas_bench_llama_options *a, atlas_status s,
                 const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", a->program, what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

static int open_model(const atlas_bench_llama_options *a, int64_t max_seq,
                      atlas_model **out) {
  atlas_model_spec spec;
  memset(&spec, 0, sizeof(spec));
  spec.dir = a->dir;
  spec.backend = a->backend;
  spec.max_seq = max_seq;
  spec.kv_dtype = a->kv_dtype;
  spec.kv_dtype_auto = a->kv_auto;
  double t0 = atlas_bench_now_ms();
  char what[4200];  // a path, as bench.c resolved it (PATH_MAX)
  snprintf(what, sizeof(what), "opening %s", a->dir);
  if (check(a, atlas_model_open(&spec, out), what)) return 1;
  if (atlas_model_arch(*out)->load != atlas_decoder_arch_load) {
    fprintf(stderr,
            "%s: %s is a %s model; prefill and decode bench the "
            "Llama forward pass (llama, qwen2, qwen3, mistral)\n",
            a->program, a->dir, atlas_model_arch_name(*out));
    atlas_status_free(atlas_model_close(*out, NULL));
    *out = NULL;
    return 1;
  }
  const atlas_decoder_model *m =
      (const atlas_decoder_model *)(void *)atlas_model_impl(*out);
  printf("loaded %s on %s in %.1f ms (KV cache %lld positions, %s%s)\n", a->dir,
         atlas_backend_name(atlas_model_backend(*out)),
         atlas_bench_now_ms() - t0, (long long)atlas_model_max_seq(*out),
         atlas_dtype_name(m->kv->dtype), a->kv_auto ? ", the default" : "");
  return 0;
}

// The Llama-family model under `model` (open_model checked the row).
static atlas_decoder_model *llama_of(atlas_model *model) {
  return (atlas_decoder_model *)(void *)atlas_model_impl(model);
}

// A 1 GiB device-to-device copy, median of 5: GB/s counting read + write.
// Returns 1 (said on stderr) when it could not be measured.
static int print_bandwidth(const atlas_bench_llama_options *a,
                           atlas_backend *b) {
  size_t bytes = (size_t)1 << 30;
  void *src = NULL, *dst = NULL;
  if (check(a, atlas_backend_alloc(b, bytes, &src), "bandwidth buffer") ||
      check(a, atlas_backend_alloc(b, bytes, &dst), "bandwidth buffer")) {
    if (src) atlas_status_free(atlas_backend_free(b, src));
    return 1;
  }
  double t[6];
  int rc = 0;
  for (int i = 0; rc == 0 && i < 6; ++i) {
    double t0 = atlas_bench_now_ms();
    atlas_status s = atlas_backend_d2d(b, dst, src, bytes);
    if (s == ATLAS_OK) s = atlas_backend_synchronize(b);
    rc = check(a, s, "d2d copy");
    t[i] = atlas_bench_now_ms() - t0;
  }
  if (rc == 0) {
    double ms = atlas_bench_median(t + 1, 5);
    printf("device copy bandwidth: %.0f GB/s (1 GiB d2d, read + write)\n",
           2.0 * (double)bytes / ms / 1e6);
    printf("RESULT copy_gbps %.1f\n", 2.0 * (double)bytes / ms / 1e6);
  }
  rc |= check(a, atlas_backend_free(b, dst), "freeing the bandwidth buffer");
  rc |= check(a, atlas_backend_free(b, src), "freeing the bandwidth buffer");
  return rc;
}

// What bench.c's parse guarantees, checked where the options arrive; the
// longest length to `out_longest`.
static int check_options(const atlas_bench_llama_options *a,
                         long *out_longest) {
  if (a->dir == NULL || a->size_count == 0 ||
      a->size_count > ATLAS_BENCH_LLAMA_MAX_SIZES || a->count < 1) {
    fprintf(stderr,
            "%s: a checkpoint DIR, 1 to %d lengths and a count of at "
            "least 1 are needed\n",
            a->program, ATLAS_BENCH_LLAMA_MAX_SIZES);
    return 1;
  }
  long longest = 1;
  for (size_t i = 0; i < a->size_count; ++i) {
    if (a->sizes[i] < 1) {
      fprintf(stderr, "%s: length %ld: lengths start at 1\n", a->program,
              a->sizes[i]);
      return 1;
    }
    if (a->sizes[i] > longest) longest = a->sizes[i];
  }
  *out_longest = longest;
  return 0;
}

static uint32_t *random_tokens(size_t n, int64_t vocab) {
  uint32_t *t = malloc(n * sizeof(uint32_t));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; t != NULL && i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t[i] = (uint32_t)(x % (uint64_t)vocab);
  }
  return t;
}

int atlas_bench_prefill(const atlas_bench_llama_options *a) {
  long longest = 1;
  if (check_options(a, &longest)) return 1;
  atlas_model *model = NULL;
  if (open_model(a, longest, &model)) return 1;
  atlas_decoder_model *m = llama_of(model);
  int64_t vocab = atlas_decoder_config_of(m)->vocab_size;
  uint32_t *tokens = random_tokens((size_t)longest, vocab);
  float *logits = malloc((size_t)vocab * sizeof(float));
  double *t = calloc((size_t)a->count + 1, sizeof(double));
  int rc = tokens == NULL || logits == NULL || t == NULL;
  if (rc) fprintf(stderr, "%s: out of host memory\n", a->program);
  const atlas_decoder_prefill_scratch *ps = m->prefill;
  printf("prefill products with 16-bit weights: %s\n",
         ps == NULL      ? "none (prompts run token by token)"
         : !ps->one_term ? "f32 inputs, three 16-bit terms (f32 KV cache)"
         : ps->matmul    ? "inputs rounded to 16 bits, one term, backend matmul"
                      : "inputs rounded to 16 bits, one term, gemm16 kernels");
  if (rc == 0) rc = print_bandwidth(a, atlas_model_backend(model));
  for (size_t s = 0; rc == 0 && s < a->size_count; ++s) {
    size_t n = (size_t)a->sizes[s];
    for (long r = 0; rc == 0 && r <= a->count; ++r) {  // r == 0: warm-up
      double t0 = atlas_bench_now_ms();
      rc = check(a, atlas_decoder_prefill(m, tokens, n, 0, logits, NULL, NULL),
                 "prefill");
      t[r] = atlas_bench_now_ms() - t0;
    }
    if (rc) break;
    double ms = atlas_bench_median(t + 1, (size_t)a->count);
    printf(
        "atlas prefill %5zu tokens: %9.2f ms (median of %ld; %.0f tokens/s)\n",
        n, ms, a->count, (double)n / ms * 1e3);
    printf("RESULT prefill_%zu_ms %.3f\n", n, ms);
  }
  free(t);
  free(logits);
  free(tokens);
  rc |= check(a, atlas_model_close(model, NULL), "closing the model");
  return rc;
}

int atlas_bench_decode(const atlas_bench_llama_options *a) {
  long longest = 1;
  if (check_options(a, &longest)) return 1;
  // The cache holds the context and the longer of the timed steps and the
  // three warm-up steps (both start at the context's end).
  long decoded = a->count > 3 ? a->count : 3;
  atlas_model *model = NULL;
  if (open_model(a, longest + decoded + 1, &model)) return 1;
  atlas_decoder_model *m = llama_of(model);
  int64_t vocab = atlas_decoder_config_of(m)->vocab_size;
  uint32_t *tokens = random_tokens((size_t)longest, vocab);
  float *logits = malloc((size_t)vocab * sizeof(float));
  uint32_t *ids = malloc((size_t)decoded * sizeof(uint32_t));
  int rc = tokens == NULL || logits == NULL || ids == NULL;
  if (rc) fprintf(stderr, "%s: out of host memory\n", a->program);
  if (rc == 0) rc = print_bandwidth(a, atlas_model_backend(model));
  for (size_t s = 0; rc == 0 && s < a->size_count; ++s) {
    size_t ctx = (size_t)a->sizes[s];
    rc = check(a, atlas_decoder_prefill(m, tokens, ctx, 0, logits, NULL, NULL),
               "prefill of the context");
    // The captured step with the device a step ahead of the host (what
    // generation does without a sampler or a logits sink: only the id comes
    // back), then the host reading each id before the next step, without
    // launch overlap, and launched one by one.
    // Last, the decode attention with a block per 128-key split (the layout
    // before blocks took several splits each).
    const struct {
      bool graph, overlap, ahead, split_blocks;
      const char *name, *key;
    } modes[] = {
        {true, true, true, false, "captured graph, device a step ahead", ""},
        {true, true, false, false, "captured graph, host reads each id",
         "_sync"},
        {true, false, true, false, "captured graph, no launch overlap",
         "_nooverlap"},
        {false, true, true, false, "eager launches", "_eager"},
        {true, true, true, true, "captured graph, attention a block a split",
         "_blocksplit"},
    };
    for (size_t mode = 0; rc == 0 && mode < sizeof(modes) / sizeof(modes[0]);
         ++mode) {
      rc = check(a, atlas_decoder_set_decode_graph(m, modes[mode].graph),
                 "decode mode");
      if (rc == 0) {
        rc = check(a, atlas_decoder_set_decode_overlap(m, modes[mode].overlap),
                   "decode mode");
      }
      if (rc == 0) {
        rc = check(a, atlas_decoder_set_decode_ahead(m, modes[mode].ahead),
                   "decode mode");
      }
      if (rc == 0) {
        rc = check(a,
                   atlas_decoder_set_decode_attention_blocks(
                       m, modes[mode].split_blocks ? UINT32_MAX : 0),
                   "decode mode");
      }
      // Warm-up steps (the first captures the graph), then the timed ones
      // (rewritten: positions ctx .. ctx + steps - 1).
      if (rc == 0) {
        rc = check(a,
                   atlas_decoder_decode_greedy(m, tokens[ctx - 1],
                                               (uint32_t)ctx, 3, ids),
                   "decode");
      }
      double t0 = atlas_bench_now_ms();
      if (rc == 0) {
        rc =
            check(a,
                  atlas_decoder_decode_greedy(m, tokens[ctx - 1], (uint32_t)ctx,
                                              (size_t)a->count, ids),
                  "decode");
      }
      if (rc) break;
      double ms = (atlas_bench_now_ms() - t0) / (double)a->count;
      printf("atlas decode at context %5zu: %7.3f ms/token (%ld steps, %s)\n",
             ctx, ms, a->count, modes[mode].name);
      printf("RESULT decode%s_%zu_ms %.4f\n", modes[mode].key, ctx, ms);
    }
  }
  free(ids);
  free(logits);
  free(tokens);
  rc |= check(a, atlas_model_close(model, NULL), "closing the model");
  return rc;
}
