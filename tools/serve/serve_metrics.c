// atlas serve's /metrics: Prometheus text exposition format 0.0.4.
#define _POSIX_C_SOURCE 200809L  // strdup
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/tools/serve/serve_state.h"

// Histogram bucket upper bounds in seconds (the last bucket is +Inf).
static const double kBuckets[15] = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                    0.05,  0.1,    0.25,  0.5,  1,
                                    2.5,   5,      10,    30,   60};

static const char *const kEndpoints[ATLAS_SERVE_EP_COUNT] = {
    "/v1/completions",
    "/v1/chat/completions",
    "/v1/models",
    "/health",
    "/metrics",
    "/admin",
    "other"};

static const char *const kOutcomes[5] = {"swapped", "refused", "restored",
                                         "lost", "kept"};

void atlas_serve_metrics_init(atlas_serve_metrics *m) {
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
}

void atlas_serve_metrics_destroy(atlas_serve_metrics *m) {
  pthread_mutex_destroy(&m->mu);
}

void atlas_serve_metrics_request(atlas_serve_metrics *m, int endpoint,
                                 int http_status) {
  if (endpoint < 0 || endpoint >= ATLAS_SERVE_EP_COUNT) {
    endpoint = ATLAS_SERVE_EP_OTHER;
  }
  if (http_status < 0 || http_status >= 600) http_status = 0;
  pthread_mutex_lock(&m->mu);
  m->endpoint_status[endpoint][http_status]++;
  pthread_mutex_unlock(&m->mu);
}

void atlas_serve_metrics_tokens(atlas_serve_metrics *m, uint64_t prompt,
                                uint64_t completion) {
  pthread_mutex_lock(&m->mu);
  m->prompt_tokens += prompt;
  m->completion_tokens += completion;
  pthread_mutex_unlock(&m->mu);
}

void atlas_serve_metrics_observe(void *metrics, bool first, double seconds) {
  atlas_serve_metrics *m = metrics;
  pthread_mutex_lock(&m->mu);
  atlas_serve_histogram *h = first ? &m->ttft : &m->itl;
  size_t b = 0;
  while (b < 15 && seconds > kBuckets[b]) ++b;
  h->counts[b]++;
  h->sum += seconds;
  h->count++;
  pthread_mutex_unlock(&m->mu);
}

void atlas_serve_metrics_swap(atlas_serve_metrics *m, int outcome) {
  if (outcome < 0 || outcome >= 5) return;
  pthread_mutex_lock(&m->mu);
  m->swaps[outcome]++;
  pthread_mutex_unlock(&m->mu);
}

typedef struct text {
  char *data;
  size_t len, cap;
  bool failed;
} text;

ATLAS_PRINTF_LIKE(2, 3)
static void put(text *t, const char *fmt, ...) {
  for (int tries = 0; tries < 2 && !t->failed; ++tries) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->data ? t->data + t->len : NULL,
                      t->data ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
    } else if (t->data != NULL && (size_t)n < t->cap - t->len) {
      t->len += (size_t)n;
      return;
    } else {
      size_t cap = (t->cap ? t->cap : 4096);
      while (cap < t->len + (size_t)n + 1) cap *= 2;
      char *grown = realloc(t->data, cap);
      if (grown == NULL) t->failed = true;
      t->data = grown ? grown : t->data;
      t->cap = grown ? cap : t->cap;
    }
  }
}

static void histogram(text *t, const char *name, const char *help,
                      const atlas_serve_histogram *h) {
  put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t b = 0; b < 15; ++b) {
    cum += h->counts[b];
    put(t, "%s_bucket{le=\"%g\"} %llu\n", name, kBuckets[b],
        (unsigned long long)cum);
  }
  cum += h->counts[15];
  put(t, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name,
      (unsigned long long)cum, name, h->sum, name,
      (unsigned long long)h->count);
}

// The folder a call site lives in: runtime/arch/decoder/x.c -> "arch",
// runtime/base/ledger.c -> "core", kernels/x.cu -> "kernels".
static void site_category(const char *file, char *out, size_t cap) {
  const char *p = strncmp(file, "runtime/", 8) == 0 ? file + 8 : file;
  const char *slash = strchr(p, '/');
  if (slash == NULL) {
    snprintf(out, cap, "%s", p == file ? "other" : "core");
    return;
  }
  size_t n = (size_t)(slash - p);
  snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
  for (char *c = out; *c; ++c) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (!ok) *c = '_';
  }
}

// The ledger's live bytes by site category, from the model's JSON report.
static void ledger_bytes(text *t, atlas_server *s) {
  put(t,
      "# HELP atlas_ledger_live_bytes Bytes the model holds on its "
      "backend, by the folder of the allocating call site.\n"
      "# TYPE atlas_ledger_live_bytes gauge\n");
  char *report = NULL;
  if (s->sm.model == NULL) return;
  // A split model has no JSON report yet: no per-site lines then.
  atlas_status st = atlas_report(s->sm.model, ATLAS_REPORT_JSON, NULL, &report);
  if (st != ATLAS_OK) {
    atlas_status_free(st);
    return;
  }
  json_t *root = json_loads(report, 0, NULL);
  atlas_free(report);
  json_t *sites = json_object_get(root, "sites");
  char names[32][32];
  uint64_t bytes[32];
  size_t count = 0;
  for (size_t i = 0; i < json_array_size(sites); ++i) {
    json_t *site = json_array_get(sites, i);
    const char *file = json_string_value(json_object_get(site, "file"));
    char cat[32];
    site_category(file ? file : "other", cat, sizeof cat);
    size_t k = 0;
    while (k < count && strcmp(names[k], cat) != 0) ++k;
    if (k == count && count < 32) {
      snprintf(names[count], sizeof names[count], "%s", cat);
      bytes[count++] = 0;
    }
    if (k < count) {
      bytes[k] += (uint64_t)json_integer_value(json_object_get(site, "bytes"));
    }
  }
  for (size_t k = 0; k < count; ++k) {
    put(t, "atlas_ledger_live_bytes{category=\"%s\"} %llu\n", names[k],
        (unsigned long long)bytes[k]);
  }
  json_t *total = json_object_get(root, "live_bytes");
  put(t, "atlas_ledger_live_bytes_total %llu\n",
      (unsigned long long)json_integer_value(total));
  json_decref(root);
}

static void engine_gauges(text *t, atlas_server *s) {
  atlas_scheduler_stats st;
  memset(&st, 0, sizeof st);
  bool have = s->sm.sched != NULL;
  if (have) atlas_scheduler_stats_get(s->sm.sched, &st);
  put(t,
      "# HELP atlas_sequences Sequences on the scheduler by state.\n"
      "# TYPE atlas_sequences gauge\n"
      "atlas_sequences{state=\"running\"} %zu\n"
      "atlas_sequences{state=\"waiting\"} %zu\n",
      st.running, st.waiting);
  put(t,
      "# HELP atlas_kv_blocks KV pool blocks by state.\n"
      "# TYPE atlas_kv_blocks gauge\n"
      "atlas_kv_blocks{state=\"used\"} %zu\n"
      "atlas_kv_blocks{state=\"cached\"} %zu\n"
      "atlas_kv_blocks{state=\"free\"} %zu\n",
      st.kv_blocks_used, st.kv_blocks_cached, st.kv_blocks_free);
  put(t,
      "# HELP atlas_prefix_cache_hit_tokens_total Prompt tokens the prefix "
      "cache supplied (this model).\n"
      "# TYPE atlas_prefix_cache_hit_tokens_total counter\n"
      "atlas_prefix_cache_hit_tokens_total %llu\n"
      "# HELP atlas_preempted_total Sequences preempted to free KV blocks "
      "(this model).\n# TYPE atlas_preempted_total counter\n"
      "atlas_preempted_total %llu\n"
      "# HELP atlas_prompt_tokens_computed_total Prompt positions forwards "
      "computed (this model; prefix-cache hits and n's forked choices share "
      "theirs).\n# TYPE atlas_prompt_tokens_computed_total counter\n"
      "atlas_prompt_tokens_computed_total %llu\n",
      (unsigned long long)st.prefix_hit_tokens,
      (unsigned long long)st.preempted,
      (unsigned long long)st.prompt_tokens_computed);
  put(t,
      "# HELP atlas_model_serving 1 while a model serves.\n"
      "# TYPE atlas_model_serving gauge\natlas_model_serving %d\n",
      have ? 1 : 0);
  if (!atomic_load(&s->swapping)) ledger_bytes(t, s);
}

static void counters(text *t, atlas_serve_metrics *m) {
  put(t,
      "# HELP atlas_requests_total HTTP requests answered, by endpoint "
      "and status.\n# TYPE atlas_requests_total counter\n");
  for (int e = 0; e < ATLAS_SERVE_EP_COUNT; ++e) {
    for (int code = 0; code < 600; ++code) {
      if (m->endpoint_status[e][code] == 0) continue;
      put(t, "atlas_requests_total{endpoint=\"%s\",status=\"%d\"} %llu\n",
          kEndpoints[e], code, (unsigned long long)m->endpoint_status[e][code]);
    }
  }
  put(t,
      "# HELP atlas_prompt_tokens_total Prompt tokens of finished "
      "requests.\n# TYPE atlas_prompt_tokens_total counter\n"
      "atlas_prompt_tokens_total %llu\n",
      (unsigned long long)m->prompt_tokens);
  put(t,
      "# HELP atlas_generation_tokens_total Tokens generated for finished "
      "requests.\n# TYPE atlas_generation_tokens_total counter\n"
      "atlas_generation_tokens_total %llu\n",
      (unsigned long long)m->completion_tokens);
  histogram(t, "atlas_time_to_first_token_seconds",
            "Seconds from admission to a choice's first token.", &m->ttft);
  histogram(t, "atlas_inter_token_latency_seconds",
            "Seconds between a choice's consecutive tokens.", &m->itl);
  put(t,
      "# HELP atlas_swaps_total Hot swaps by outcome.\n"
      "# TYPE atlas_swaps_total counter\n");
  for (int o = 0; o < 5; ++o) {
    put(t, "atlas_swaps_total{outcome=\"%s\"} %llu\n", kOutcomes[o],
        (unsigned long long)m->swaps[o]);
  }
}

atlas_status atlas_serve_metrics_text(atlas_server *s, char **out_text) {
  text t = {0};
  pthread_mutex_lock(&s->mu);
  engine_gauges(&t, s);
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&s->metrics.mu);
  counters(&t, &s->metrics);
  pthread_mutex_unlock(&s->metrics.mu);
  if (t.failed || t.data == NULL) {
    free(t.data);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for /metrics");
  }
  *out_text = t.data;
  return ATLAS_OK;
}
