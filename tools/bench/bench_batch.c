// bench_batch DIR [--seqs 1,8,32,64,128,256] [--prompt 512] [--steps 64]
//                 [--backend cuda] [--ttft-requests 32] [--ttft-prompt 1000]
//
// Many sequences on one model (runtime/serve/batch.h), side by side in one
// run:
// - for each concurrency N: N random prompts of --prompt tokens prefilled
//   through the batch step, then --steps decode steps of all N at once
//   (greedy, ids on the device): the median step time, aggregate tokens/s,
//   and the roofline (weight bytes + KV bytes read per step) / the measured
//   copy bandwidth;
// - batch 1 on today's one-sequence path (atlas_decoder_decode_greedy, the
//   captured step, the device running ahead) at the same context;
// - prefix caching: --ttft-requests requests sharing a --ttft-prompt-token
//   prompt (each with 8 tokens of its own) through the scheduler, after one
//   request with that prompt ran: mean time to first token with and without
//   the prefix cache.
// The KV cache takes the weights' 16-bit type (the default). Lines starting
// with RESULT are for scripts.
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atlas/runtime/arch/decoder/decoder.h"
#include "atlas/runtime/arch/decoder/decoder_model.h"
#include "atlas/runtime/model/model.h"
#include "atlas/runtime/serve/batch.h"
#include "atlas/runtime/serve/scheduler.h"
#include "atlas/tools/atlas/cli_options.h"
#include "atlas/tools/bench/bench_stats.h"

enum { kMaxCounts = 16 };

typedef struct options {
  const char *dir, *backend;
  long seqs[kMaxCounts];
  size_t seq_count;
  long prompt, steps, ttft_requests, ttft_prompt;
} options;

static int check(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench_batch: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

static uint32_t next_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*s >> 33);
}

static int parse(int argc, char **argv, options *o) {
  memset(o, 0, sizeof(*o));
  o->backend = "cuda";
  o->prompt = 512;
  o->steps = 64;
  o->ttft_requests = 32;
  o->ttft_prompt = 1000;
  const long defaults[] = {1, 8, 32, 64, 128, 256};
  memcpy(o->seqs, defaults, sizeof(defaults));
  o->seq_count = 6;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] != '-') {
      o->dir = a;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "bench_batch: %s needs a value\n", a);
      return 1;
    }
    ++i;
    if (strcmp(a, "--backend") == 0) {
      o->backend = v;
    } else if (strcmp(a, "--prompt") == 0) {
      if (check(atlas_cli_parse_long(a, v, 1, 1L << 30, &o->prompt), "options"))
        return 1;
    } else if (strcmp(a, "--steps") == 0) {
      if (check(atlas_cli_parse_long(a, v, 1, 1L << 30, &o->steps), "options"))
        return 1;
    } else if (strcmp(a, "--ttft-requests") == 0) {
      if (check(atlas_cli_parse_long(a, v, 1, 1L << 30, &o->ttft_requests),
                "options"))
        return 1;
    } else if (strcmp(a, "--ttft-prompt") == 0) {
      if (check(atlas_cli_parse_long(a, v, 1, 1L << 30, &o->ttft_prompt),
                "options"))
        return 1;
    } else if (strcmp(a, "--seqs") == 0) {
      o->seq_count = 0;
      for (const char *p = v; *p && o->seq_count < kMaxCounts;) {
        o->seqs[o->seq_count++] = strtol(p, (char **)&p, 10);
        if (*p == ',') ++p;
      }
    } else {
      fprintf(stderr, "bench_batch: unknown option %s\n", a);
      return 1;
    }
  }
  if (o->dir == NULL || o->prompt < 1 || o->steps < 1) {
    fprintf(stderr,
            "usage: bench_batch DIR [--seqs 1,8,...] [--prompt N] [--steps N] "
            "[--backend B] [--ttft-requests N] [--ttft-prompt N]\n");
    return 1;
  }
  return 0;
}

// GB/s of a 1 GiB device-to-device copy, read + written (median of 5).
static double bandwidth(atlas_backend *b) {
  size_t bytes = (size_t)1 << 30;
  void *src = NULL, *dst = NULL;
  if (check(atlas_backend_alloc(b, bytes, &src), "bandwidth buffer")) return 0;
  if (check(atlas_backend_alloc(b, bytes, &dst), "bandwidth buffer")) {
    atlas_status_free(atlas_backend_free(b, src));
    return 0;
  }
  double t[6];
  for (int i = 0; i < 6; ++i) {
    double t0 = atlas_bench_now_ms();
    atlas_status s = atlas_backend_d2d(b, dst, src, bytes);
    if (s == ATLAS_OK) s = atlas_backend_synchronize(b);
    atlas_status_free(s);
    t[i] = atlas_bench_now_ms() - t0;
  }
  atlas_status_free(atlas_backend_free(b, dst));
  atlas_status_free(atlas_backend_free(b, src));
  return 2.0 * (double)bytes / atlas_bench_median(t + 1, 5) / 1e6;
}

// Bytes of the weights a decode step reads (every matrix once; the
// embedding's one row is nothing).
static double weight_bytes(const atlas_decoder_model *m) {
  const atlas_decoder_config *c = &m->config;
  double h = (double)c->hidden_size,
         q = (double)c->num_attention_heads * (double)c->head_dim;
  double kv = (double)c->num_key_value_heads * (double)c->head_dim;
  double per = h * q * 2 + h * kv * 2 + 3 * h * (double)c->intermediate_size;
  double elt = (double)atlas_dtype_size(m->weights->layers[0].wq.dtype);
  return (per * (double)c->num_hidden_layers + h * (double)c->vocab_size) * elt;
}

static double kv_bytes_per_position(const atlas_decoder_model *m) {
  const atlas_decoder_config *c = &m->config;
  return 2.0 * (double)c->num_hidden_layers * (double)c->num_key_value_heads *
         (double)c->head_dim * (double)atlas_dtype_size(m->kv->dtype);
}

// N sequences: prefill, then `steps` decode steps of all N.
static int run_batch(const options *o, atlas_model *model, long n, double gbps,
                     double wbytes, double kvpos) {
  atlas_batch_engine_options eo;
  memset(&eo, 0, sizeof(eo));
  atlas_batch_engine *e = NULL;
  if (check(atlas_batch_engine_create(model, &eo, &e), "making the KV pool")) {
    return 1;
  }
  int rc = 0;
  size_t vocab = (size_t)atlas_model_vocab_size(model);
  atlas_batch_seq **seqs = calloc((size_t)n, sizeof(atlas_batch_seq *));
  atlas_batch_item *items = calloc((size_t)n, sizeof(*items));
  uint32_t *tok = calloc((size_t)n, sizeof(uint32_t));
  size_t rows_max = atlas_batch_engine_max_rows(e);
  uint32_t *prompt = malloc((rows_max + (size_t)o->prompt) * sizeof(uint32_t));
  double *t = malloc((size_t)o->steps * sizeof(double));
  uint64_t rng = 42;
  for (long i = 0; rc == 0 && i < n; ++i) {
    rc = check(atlas_batch_seq_create(e, &seqs[i]), "a sequence");
  }
  // Prefill: as many whole prompts a step as the step's rows hold.
  size_t rows = atlas_batch_engine_max_rows(e);
  size_t per = (rows / (size_t)o->prompt) ? rows / (size_t)o->prompt : 1;
  double p0 = atlas_bench_now_ms();
  for (long i = 0; rc == 0 && i < n; i += (long)per) {
    size_t k = 0;
    for (long j = i; j < n && k < per; ++j, ++k) {
      uint32_t *pj = prompt + (size_t)k * (size_t)o->prompt;
      for (long p = 0; p < o->prompt; ++p) {
        pj[p] = next_rand(&rng) % (uint32_t)vocab;
      }
      items[k] =
          (atlas_batch_item){seqs[j], pj, (size_t)o->prompt, NULL, &tok[j]};
    }
    rc = check(atlas_batch_step(e, items, k), "prefill");
  }
  double prefill_ms = atlas_bench_now_ms() - p0;
  for (long s = 0; rc == 0 && s < o->steps; ++s) {
    for (long i = 0; i < n; ++i) {
      items[i] = (atlas_batch_item){seqs[i], &tok[i], 1, NULL, &tok[i]};
    }
    double t0 = atlas_bench_now_ms();
    rc = check(atlas_batch_step(e, items, (size_t)n), "decode step");
    t[s] = atlas_bench_now_ms() - t0;
  }
  if (rc == 0) {
    double ms = atlas_bench_median(t, (size_t)o->steps);
    double ctx = (double)o->prompt + (double)o->steps / 2;
    double floor_ms = (wbytes + kvpos * ctx * (double)n) / (gbps * 1e6);
    printf(
        "%5ld seqs  step %8.3f ms  %9.0f tok/s  floor %7.3f ms  "
        "(%.0f%% of it)  prefill %.0f ms\n",
        n, ms, (double)n * 1e3 / ms, floor_ms, 100.0 * floor_ms / ms,
        prefill_ms);
    printf("RESULT batch_%ld_step_ms %.4f\n", n, ms);
    printf("RESULT batch_%ld_tok_s %.1f\n", n, (double)n * 1e3 / ms);
    printf("RESULT batch_%ld_floor_ms %.4f\n", n, floor_ms);
  }
  for (long i = 0; i < n; ++i) atlas_batch_seq_free(e, seqs[i]);
  rc |= check(atlas_batch_engine_destroy(e), "freeing the KV pool");
  free(seqs);
  free(items);
  free(tok);
  free(prompt);
  free(t);
  return rc;
}

// Today's one-sequence path at the same context: prefill, then the greedy
// loop (captured step, device ahead).
static int run_single(const options *o, atlas_model *model) {
  atlas_decoder_model *m =
      (atlas_decoder_model *)(void *)atlas_model_impl(model);
  size_t vocab = (size_t)atlas_model_vocab_size(model);
  uint32_t *prompt = malloc((size_t)o->prompt * sizeof(uint32_t));
  uint32_t *out = malloc((size_t)o->steps * sizeof(uint32_t));
  uint64_t rng = 7;
  for (long p = 0; p < o->prompt; ++p) {
    prompt[p] = next_rand(&rng) % (uint32_t)vocab;
  }
  int rc = check(
      atlas_decoder_prefill(m, prompt, (size_t)o->prompt, 0, NULL, NULL, NULL),
      "one-sequence prefill");
  double best = 0;
  for (int round = 0; rc == 0 && round < 3; ++round) {
    double t0 = atlas_bench_now_ms();
    rc = check(atlas_decoder_decode_greedy(m, 1, (uint32_t)o->prompt,
                                           (size_t)o->steps, out),
               "one-sequence decode");
    double ms = (atlas_bench_now_ms() - t0) / (double)o->steps;
    if (round == 0 || ms < best) best = ms;
  }
  if (rc == 0) {
    printf("    1 seq   one-sequence path %.3f ms a token (best of 3)\n", best);
    printf("RESULT single_step_ms %.4f\n", best);
  }
  free(prompt);
  free(out);
  return rc;
}

typedef struct ttft_state {
  double submit_ms, first_ms;
  bool got;
} ttft_state;

static void on_event(void *ctx, const atlas_sched_event *e) {
  ttft_state *t = ctx;
  if (e->has_token && !t->got) {
    t->got = true;
    t->first_ms = atlas_bench_now_ms();
  }
}

// Mean time to first token of `requests` requests sharing a prompt, after
// one request with that prompt ran (its blocks cached when `prefix`).
static int run_ttft(const options *o, atlas_model *model, bool prefix,
                    double *out_ms) {
  atlas_scheduler_options so;
  atlas_scheduler_options_init(&so);
  so.prefix_cache = prefix;
  atlas_scheduler *s = NULL;
  if (check(atlas_scheduler_create(model, &so, &s), "scheduler")) return 1;
  size_t vocab = (size_t)atlas_model_vocab_size(model);
  size_t len = (size_t)o->ttft_prompt + 8;
  uint32_t *p = malloc(len * sizeof(uint32_t));
  uint64_t rng = 99;
  for (size_t i = 0; i < len; ++i) p[i] = next_rand(&rng) % (uint32_t)vocab;
  long n = o->ttft_requests;
  ttft_state *st = calloc((size_t)n + 1, sizeof(ttft_state));
  atlas_request_options ro;
  atlas_request_options_init(&ro);
  ro.max_tokens = 1;
  ro.ignore_eos = true;
  ro.on_event = on_event;
  int rc = 0;
  for (long r = -1; rc == 0 && r < n; ++r) {
    if (r >= 0) {
      for (size_t i = 0; i < 8; ++i) {
        p[o->ttft_prompt + i] = next_rand(&rng) % (uint32_t)vocab;
      }
    }
    ro.ctx = &st[r + 1];
    st[r + 1].submit_ms = atlas_bench_now_ms();
    rc = check(atlas_scheduler_submit(s, p, len, &ro, NULL), "submit");
    // The first request runs alone: the shared prompt is then cached.
    for (bool worked = true; rc == 0 && worked && r < 0;) {
      rc = check(atlas_scheduler_step(s, &worked), "step");
    }
  }
  for (bool worked = true; rc == 0 && worked;) {
    rc = check(atlas_scheduler_step(s, &worked), "step");
  }
  double sum = 0;
  for (long r = 1; r <= n; ++r) sum += st[r].first_ms - st[r].submit_ms;
  *out_ms = sum / (double)n;
  rc |= check(atlas_scheduler_destroy(s), "scheduler destroy");
  free(p);
  free(st);
  return rc;
}

int main(int argc, char **argv) {
  options o;
  if (parse(argc, argv, &o)) return 2;
  long longest = o.prompt + o.steps + 1;
  if (o.ttft_prompt + 9 > longest) longest = o.ttft_prompt + 9;
  atlas_model_spec spec;
  memset(&spec, 0, sizeof(spec));
  spec.dir = o.dir;
  spec.backend = o.backend;
  spec.max_seq = longest;
  spec.kv_dtype_auto = true;
  spec.ignore_eos = true;
  atlas_model *model = NULL;
  if (check(atlas_model_open(&spec, &model), "opening the model")) return 1;
  atlas_decoder_model *m =
      (atlas_decoder_model *)(void *)atlas_model_impl(model);
  atlas_backend *b = atlas_model_backend(model);
  double gbps = bandwidth(b);
  double wbytes = weight_bytes(m), kvpos = kv_bytes_per_position(m);
  printf(
      "%s on %s: weights %.2f GB, KV %.1f KB a position (%s), copy "
      "bandwidth %.0f GB/s; prompt %ld, %ld decode steps measured\n",
      o.dir, atlas_backend_name(b), wbytes / 1e9, kvpos / 1e3,
      atlas_dtype_name(m->kv->dtype), gbps, o.prompt, o.steps);
  printf("RESULT copy_gbps %.1f\n", gbps);
  int rc = run_single(&o, model);
  for (size_t i = 0; rc == 0 && i < o.seq_count; ++i) {
    rc = run_batch(&o, model, o.seqs[i], gbps, wbytes, kvpos);
  }
  if (rc == 0 && o.ttft_requests > 0) {
    double with = 0, without = 0;
    rc = run_ttft(&o, model, false, &without);
    if (rc == 0) rc = run_ttft(&o, model, true, &with);
    if (rc == 0) {
      printf(
          "prefix cache: %ld requests sharing %ld tokens: mean TTFT "
          "%.2f ms without, %.2f ms with (%.1fx)\n",
          o.ttft_requests, o.ttft_prompt, without, with, without / with);
      printf("RESULT ttft_without_ms %.3f\nRESULT ttft_with_ms %.3f\n", without,
             with);
    }
  }
  rc |= check(atlas_model_close(model, NULL), "closing the model");
  return rc;
}
