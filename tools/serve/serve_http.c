// atlas serve's HTTP side on libmicrohttpd: one thread a connection (a slow
// client holds only its own), routes, the API key, size limits, streams.
#define _GNU_SOURCE  // getaddrinfo, strdup
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/serve/openai/oai_response.h"
#include "atlas/tools/serve/serve_state.h"

// One HTTP request's state, from its first callback to its completion.
typedef struct serve_request {
  atlas_server *s;
  int endpoint;
  char *body;
  size_t body_len;
  bool too_large;
  int status;  // what was answered (metrics, the access log)
  double started;
  char *method, *url;  // as the client sent them (quoted when logged)
  // A stream: the job, and bytes taken from it not yet handed to MHD.
  atlas_oai_job *job;
  char *pending;
  size_t pending_len, pending_at;
  bool complete, cut;
  double deadline;
} serve_request;

static void log_request(const serve_request *r) {
  const char *method = r->method ? r->method : "?";
  const char *url = r->url ? r->url : "?";
  char m[ATLAS_QUOTE_BYTES], u[ATLAS_QUOTE_BYTES];
  // Client strings are quoted: no control byte reaches the log.
  fprintf(stderr, "atlas serve: %s %s -> %d (%.3f s)\n",
          atlas_quote(method, m, sizeof m), atlas_quote(url, u, sizeof u),
          r->status, atlas_oai_now() - r->started);
}

static enum MHD_Result reply(struct MHD_Connection *c, serve_request *r,
                             int status, const char *type, char *body) {
  const char *text = body ? body : "{}";
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  free(body);
  if (resp == NULL) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  if (status == 401) {
    MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
  }
  r->status = status;
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
  MHD_destroy_response(resp);
  return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, serve_request *r,
                                  int status, char *body) {
  return reply(c, r, status, "application/json", body);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, serve_request *r,
                                   int status, const char *message,
                                   const char *param, const char *code) {
  char *body = NULL;
  atlas_status_free(
      atlas_oai_error_body(status, message, NULL, param, code, &body));
  return reply_json(c, r, status, body);
}

// Constant time over the longer of the two: no early exit on the first
// differing byte or on a length mismatch.
static bool key_equal(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  size_t n = na > nb ? na : nb;
  unsigned diff = (unsigned)(na ^ nb);
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < na ? (unsigned char)a[i] : 0;
    unsigned char y = i < nb ? (unsigned char)b[i] : 0;
    diff |= (unsigned)(x ^ y);
  }
  return diff == 0;
}

static bool authorized(atlas_server *s, struct MHD_Connection *c) {
  if (s->config.api_key == NULL) return true;
  const char *h =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (h == NULL || strncmp(h, "Bearer ", 7) != 0) return false;
  return key_equal(h + 7, s->config.api_key);
}

static void new_id(const char *prefix, char *out, size_t cap) {
  unsigned char b[12] = {0};
  if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
    uint64_t t = (uint64_t)time(NULL);
    memcpy(b, &t, sizeof t);
  }
  int n = snprintf(out, cap, "%s-", prefix);
  for (size_t i = 0; i < sizeof b && n > 0 && (size_t)n + 3 <= cap; ++i) {
    n += snprintf(out + n, cap - (size_t)n, "%02x", b[i]);
  }
}

// ---- streams -------------------------------------------------------------

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  serve_request *r = cls;
  for (int round = 0; round < 2; ++round) {
    if (r->pending_at < r->pending_len) {
      size_t n = r->pending_len - r->pending_at;
      if (n > max) n = max;
      memcpy(buf, r->pending + r->pending_at, n);
      r->pending_at += n;
      return (ssize_t)n;
    }
    if (r->complete) return MHD_CONTENT_READER_END_OF_STREAM;
    free(r->pending);
    r->pending = NULL;
    r->pending_len = r->pending_at = 0;
    if (!r->cut && r->deadline > 0 && atlas_oai_now() >= r->deadline) {
      r->cut = true;
      atlas_oai_job_cancel(r->job, 504,
                           "the request ran past --timeout-s and was cut");
    }
    // Wait at most half a second, so a deadline is noticed in time.
    double wake = atlas_oai_now() + 0.5;
    if (r->deadline > 0 && !r->cut && r->deadline < wake) wake = r->deadline;
    atlas_oai_job_state st = atlas_oai_job_wait(r->job, wake);
    if (st == ATLAS_OAI_JOB_REQUEUE) {
      struct timespec ts = {0, 10L * 1000 * 1000};
      nanosleep(&ts, NULL);  // a swap is about to submit it again
    }
    atlas_status_free(atlas_oai_job_take_stream(r->job, &r->pending,
                                                &r->pending_len, &r->complete));
  }
  return 0;
}

static void stream_free(void *cls) { (void)cls; }

// ---- completions ---------------------------------------------------------

static enum MHD_Result completion(struct MHD_Connection *c, serve_request *r,
                                  atlas_oai_endpoint ep) {
  atlas_server *s = r->s;
  atlas_oai_request *req = NULL;
  atlas_oai_error err;
  atlas_status st =
      atlas_oai_request_parse(r->body, r->body_len, ep, &req, &err);
  if (st != ATLAS_OK) {
    enum MHD_Result ok =
        reply_error(c, r, 400, atlas_status_message(st), err.param, NULL);
    atlas_status_free(st);
    return ok;
  }
  if (req->model != NULL && req->model[0] != '\0' &&
      strcmp(req->model, s->served_name) != 0) {
    char msg[600];
    snprintf(msg, sizeof msg,
             "The model '%.200s' does not exist; this "
             "server serves '%.200s'",
             req->model, s->served_name);
    atlas_oai_request_free(req);
    return reply_error(c, r, 404, msg, "model", "model_not_found");
  }
  bool stream = req->stream;
  char id[64];
  new_id(ep == ATLAS_OAI_CHAT ? "chatcmpl" : "cmpl", id, sizeof id);
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = 0;
  atlas_oai_job *job = NULL;
  st = atlas_oai_job_create(req, id, (int64_t)time(NULL), seed, &job);
  if (st != ATLAS_OK) {
    enum MHD_Result ok =
        reply_error(c, r, 500, atlas_status_message(st), NULL, NULL);
    atlas_status_free(st);
    return ok;
  }
  double deadline =
      s->config.timeout_s > 0 ? r->started + s->config.timeout_s : 0;
  int http = 500;
  st = atlas_serve_admit(s, job, deadline, &err, &http);
  if (st != ATLAS_OK) {
    enum MHD_Result ok =
        reply_error(c, r, http, atlas_status_message(st), err.param,
                    http == 503   ? "model_unavailable"
                    : http == 429 ? "queue_full"
                                  : NULL);
    atlas_status_free(st);
    atlas_serve_release(s, job);
    return ok;
  }
  if (stream) {
    r->job = job;
    r->deadline = deadline;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, (size_t)16 * 1024, stream_read, r, stream_free);
    if (resp == NULL) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    r->status = 200;
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok;
  }
  atlas_oai_job_state js = atlas_oai_job_wait_end_by(job, deadline);
  if (js == ATLAS_OAI_JOB_RUNNING) {
    atlas_oai_job_cancel(job, 504,
                         "the request ran past --timeout-s and was cut");
    atlas_oai_job_wait_end(job);
  }
  char *body = NULL;
  st = atlas_oai_job_result(job, &http, &body);
  atlas_serve_release(s, job);
  if (st != ATLAS_OK) {
    enum MHD_Result ok =
        reply_error(c, r, 500, atlas_status_message(st), NULL, NULL);
    atlas_status_free(st);
    return ok;
  }
  return reply_json(c, r, http, body);
}

// ---- other routes --------------------------------------------------------

static enum MHD_Result models(struct MHD_Connection *c, serve_request *r,
                              const char *one) {
  atlas_server *s = r->s;
  pthread_mutex_lock(&s->mu);
  bool serving = s->sm.model != NULL;
  pthread_mutex_unlock(&s->mu);
  const char *names[1] = {s->served_name};
  if (one != NULL) {
    if (!serving || strcmp(one, s->served_name) != 0) {
      return reply_error(c, r, 404, "no such model", "model",
                         "model_not_found");
    }
    json_t *m =
        json_pack("{s:s s:s s:I s:s}", "id", s->served_name, "object", "model",
                  "created", (json_int_t)0, "owned_by", "atlas");
    char *body = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    return reply_json(c, r, 200, body);
  }
  char *body = NULL;
  atlas_status_free(atlas_oai_models_body(names, serving ? 1 : 0, 0, &body));
  return reply_json(c, r, 200, body);
}

static enum MHD_Result admin_swap(struct MHD_Connection *c, serve_request *r) {
  json_error_t je;
  json_t *root = json_loadb(r->body ? r->body : "", r->body_len, 0, &je);
  json_t *dir = json_object_get(root, "model");
  if (!json_is_string(dir) || json_string_length(dir) == 0) {
    json_decref(root);
    return reply_error(c, r, 400,
                       root == NULL ? "the body is not valid JSON"
                                    : "model: a checkpoint directory (a "
                                      "non-empty string) is required",
                       root == NULL ? NULL : "model", NULL);
  }
  int http = 500;
  char *body = NULL;
  atlas_serve_swap(r->s, json_string_value(dir), &http, &body);
  json_decref(root);
  return reply_json(c, r, http, body);
}

static enum MHD_Result admin_report(struct MHD_Connection *c,
                                    serve_request *r) {
  atlas_server *s = r->s;
  char *text = NULL;
  atlas_status st = ATLAS_OK;
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->swapping) || s->sm.model == NULL) {
    st = atlas_status_make(ATLAS_STATUS_UNAVAILABLE, "%s",
                           s->sm.model ? "a swap is under way" : s->lost_why);
  } else {
    st = atlas_report(s->sm.model, ATLAS_REPORT_JSON, NULL, &text);
  }
  pthread_mutex_unlock(&s->mu);
  if (st != ATLAS_OK) {
    enum MHD_Result ok = reply_error(c, r, 503, atlas_status_message(st), NULL,
                                     "model_unavailable");
    atlas_status_free(st);
    return ok;
  }
  char *copy = strdup(text);
  atlas_free(text);
  return reply_json(c, r, 200, copy);
}

// ---- dispatch -------------------------------------------------------------

static int endpoint_of(const char *url) {
  if (strcmp(url, "/v1/completions") == 0) return ATLAS_SERVE_EP_COMPLETIONS;
  if (strcmp(url, "/v1/chat/completions") == 0) return ATLAS_SERVE_EP_CHAT;
  if (strncmp(url, "/v1/models", 10) == 0) return ATLAS_SERVE_EP_MODELS;
  if (strcmp(url, "/health") == 0) return ATLAS_SERVE_EP_HEALTH;
  if (strcmp(url, "/metrics") == 0) return ATLAS_SERVE_EP_METRICS;
  if (strncmp(url, "/admin/", 7) == 0) return ATLAS_SERVE_EP_ADMIN;
  return ATLAS_SERVE_EP_OTHER;
}

static enum MHD_Result wrong_method(struct MHD_Connection *c, serve_request *r,
                                    const char *allow) {
  char *body = NULL;
  char msg[96];
  snprintf(msg, sizeof msg, "this route takes %s", allow);
  atlas_status_free(atlas_oai_error_body(405, msg, NULL, NULL, NULL, &body));
  const char *text = body ? body : "{}";
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  free(body);
  if (resp == NULL) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Allow", allow);
  r->status = 405;
  enum MHD_Result ok = MHD_queue_response(c, 405, resp);
  MHD_destroy_response(resp);
  return ok;
}

static enum MHD_Result route(struct MHD_Connection *c, serve_request *r,
                             const char *url, const char *method) {
  atlas_server *s = r->s;
  bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
  switch (r->endpoint) {
    case ATLAS_SERVE_EP_HEALTH: {
      if (!get) return wrong_method(c, r, "GET");
      char *body = NULL;
      int status = atlas_serve_health(s, &body);
      return reply_json(c, r, status, body);
    }
    case ATLAS_SERVE_EP_METRICS: {
      if (!get) return wrong_method(c, r, "GET");
      char *text = NULL;
      atlas_status st = atlas_serve_metrics_text(s, &text);
      if (st != ATLAS_OK) {
        enum MHD_Result ok =
            reply_error(c, r, 500, atlas_status_message(st), NULL, NULL);
        atlas_status_free(st);
        return ok;
      }
      return reply(c, r, 200, "text/plain; version=0.0.4", text);
    }
    default:
      break;
  }
  if (r->endpoint == ATLAS_SERVE_EP_OTHER ||
      (r->endpoint == ATLAS_SERVE_EP_ADMIN && strcmp(url, "/admin/swap") != 0 &&
       strcmp(url, "/admin/report") != 0)) {
    return reply_error(c, r, 404, "no such route", NULL, "not_found");
  }
  if (!authorized(s, c)) {
    return reply_error(c, r, 401,
                       "a valid API key is required: send "
                       "\"Authorization: Bearer KEY\"",
                       NULL, "invalid_api_key");
  }
  switch (r->endpoint) {
    case ATLAS_SERVE_EP_COMPLETIONS:
    case ATLAS_SERVE_EP_CHAT:
      if (!post) return wrong_method(c, r, "POST");
      return completion(c, r,
                        r->endpoint == ATLAS_SERVE_EP_CHAT
                            ? ATLAS_OAI_CHAT
                            : ATLAS_OAI_COMPLETIONS);
    case ATLAS_SERVE_EP_MODELS:
      if (!get) return wrong_method(c, r, "GET");
      if (strcmp(url, "/v1/models") == 0) return models(c, r, NULL);
      if (strncmp(url, "/v1/models/", 11) == 0) {
        return models(c, r, url + 11);
      }
      return reply_error(c, r, 404, "no such route", NULL, "not_found");
    default:  // admin
      if (strcmp(url, "/admin/swap") == 0) {
        return post ? admin_swap(c, r) : wrong_method(c, r, "POST");
      }
      return get ? admin_report(c, r) : wrong_method(c, r, "GET");
  }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)version;
  atlas_server *s = cls;
  serve_request *r = *con_cls;
  if (r == NULL) {
    r = calloc(1, sizeof *r);
    if (r == NULL) return MHD_NO;
    r->s = s;
    r->started = atlas_oai_now();
    r->endpoint = endpoint_of(url);
    r->method = strdup(method);
    r->url = strdup(url);
    *con_cls = r;
    pthread_mutex_lock(&s->mu);
    s->connections++;
    pthread_mutex_unlock(&s->mu);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl != NULL && strtoull(cl, NULL, 10) > ATLAS_SERVE_BODY_MAX) {
      r->too_large = true;  // refused before reading a byte of it
      char msg[128];
      snprintf(msg, sizeof msg, "the request body is larger than %d bytes",
               ATLAS_SERVE_BODY_MAX);
      return reply_error(c, r, 413, msg, NULL, "body_too_large");
    }
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (!r->too_large && r->body_len + *upload_size <= ATLAS_SERVE_BODY_MAX) {
      char *grown = realloc(r->body, r->body_len + *upload_size + 1);
      if (grown == NULL) return MHD_NO;
      r->body = grown;
      memcpy(r->body + r->body_len, upload, *upload_size);
      r->body_len += *upload_size;
      r->body[r->body_len] = '\0';
    } else {
      r->too_large = true;  // chunked past the cap: dropped, refused below
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->status != 0) return MHD_YES;  // answered already (413)
  if (r->too_large) {
    char msg[128];
    snprintf(msg, sizeof msg, "the request body is larger than %d bytes",
             ATLAS_SERVE_BODY_MAX);
    return reply_error(c, r, 413, msg, NULL, "body_too_large");
  }
  return route(c, r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)toe;
  atlas_server *s = cls;
  serve_request *r = *con_cls;
  if (r == NULL) return;
  // A stream's job: a client gone mid-stream is cancelled here, and its
  // sequence's blocks go back to the pool.
  if (r->job != NULL) atlas_serve_release(s, r->job);
  (void)c;
  atlas_serve_metrics_request(&s->metrics, r->endpoint, r->status);
  log_request(r);
  free(r->method);
  free(r->url);
  free(r->pending);
  free(r->body);
  free(r);
  *con_cls = NULL;
  pthread_mutex_lock(&s->mu);
  s->connections--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static void on_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512], quoted[ATLAS_QUOTE_BYTES];
  vsnprintf(line, sizeof line, fmt, ap);
  // libmicrohttpd's messages may carry the client's bytes.
  fprintf(stderr, "atlas serve: http: %s\n",
          atlas_quote(line, quoted, sizeof quoted));
}

atlas_status atlas_serve_http_start(atlas_server *s) {
  char port[16];
  snprintf(port, sizeof port, "%d", s->config.port);
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(s->config.host, port, &hints, &ai);
  if (rc != 0 || ai == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT, "--host %s: %s",
                             s->config.host, gai_strerror(rc));
  }
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ITC | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  s->daemon = MHD_start_daemon(
      flags, (uint16_t)s->config.port, NULL, NULL, on_request, s,
      MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
      (unsigned)ATLAS_SERVE_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      (unsigned)ATLAS_SERVE_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned)ATLAS_SERVE_IDLE_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      (size_t)ATLAS_SERVE_HEADER_MAX, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
      s, MHD_OPTION_EXTERNAL_LOGGER, on_log, s, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (s->daemon == NULL) {
    return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,
                             "could not listen on %s port %d (in use, or "
                             "not an address of this machine)",
                             s->config.host, s->config.port);
  }
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->bound_port = info ? info->port : (uint16_t)s->config.port;
  return ATLAS_OK;
}

void atlas_serve_http_quiesce(atlas_server *s) {
  if (s->daemon == NULL) return;
  MHD_socket fd = MHD_quiesce_daemon(s->daemon);
  (void)fd;  // stays open until MHD_stop_daemon closes it
}

void atlas_serve_http_stop(atlas_server *s) {
  if (s->daemon == NULL) return;
  MHD_stop_daemon(s->daemon);
  s->daemon = NULL;
}
