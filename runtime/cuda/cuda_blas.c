// cuBLASLt behind the CUDA backend's matmul (see cuda_blas.h).
#define _GNU_SOURCE  // RTLD_LOCAL, strdup
#include "atlas/runtime/cuda/cuda_blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atlas/runtime/base/log.h"

// ---- the slice of cublasLt.h Atlas uses --------------------------------------
// Values and layouts copied from cublasLt.h, cublas_api.h and library_types.h
// (CUDA 13.0); they are part of cuBLASLt's stable ABI (12.x and 13.x agree).
// Our own declarations, as cuda_driver.h does for the driver: nothing here
// needs CUDA's headers, so the backend builds on machines without CUDA.

typedef int cublasStatus_t;
typedef struct cublasLtContext *cublasLtHandle_t;
// Descriptors Atlas only holds pointers to.
typedef struct cublasLtMatrixLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtMatmulPreferenceOpaque *cublasLtMatmulPreference_t;
// Held by value: the layouts must be cuBLASLt's, byte for byte.
typedef struct {
  // cppcheck-suppress unusedStructMember
  uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  // cppcheck-suppress unusedStructMember
  float wavesCount;
  // cppcheck-suppress unusedStructMember
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64 &&
                   sizeof(cublasLtMatmulHeuristicResult_t) == 96,
               "cuBLASLt's by-value structs are 64 and 96 bytes");

enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
  CUBLAS_COMPUTE_32F = 68,
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
};

// (return type, field, exported symbol, parameters)
#define ATLAS_CUBLASLT_ENTRY_POINTS(X)                                        \
  X(cublasStatus_t, create, "cublasLtCreate", (cublasLtHandle_t * handle))    \
  X(cublasStatus_t, destroy, "cublasLtDestroy", (cublasLtHandle_t handle))    \
  X(size_t, version, "cublasLtGetVersion", (void))                            \
  X(const char *, status_name, "cublasLtGetStatusName",                       \
    (cublasStatus_t status))                                                  \
  X(const char *, status_string, "cublasLtGetStatusString",                   \
    (cublasStatus_t status))                                                  \
  X(cublasStatus_t, desc_create, "cublasLtMatmulDescCreate",                  \
    (cublasLtMatmulDesc_t * desc, int compute_type, int scale_type))          \
  X(cublasStatus_t, desc_destroy, "cublasLtMatmulDescDestroy",                \
    (cublasLtMatmulDesc_t desc))                                              \
  X(cublasStatus_t, desc_set, "cublasLtMatmulDescSetAttribute",               \
    (cublasLtMatmulDesc_t desc, int attr, const void *buf, size_t bytes))     \
  X(cublasStatus_t, layout_create, "cublasLtMatrixLayoutCreate",              \
    (cublasLtMatrixLayout_t * layout, int type, uint64_t rows, uint64_t cols, \
     int64_t ld))                                                             \
  X(cublasStatus_t, layout_destroy, "cublasLtMatrixLayoutDestroy",            \
    (cublasLtMatrixLayout_t layout))                                          \
  X(cublasStatus_t, pref_create, "cublasLtMatmulPreferenceCreate",            \
    (cublasLtMatmulPreference_t * pref))                                      \
  X(cublasStatus_t, pref_destroy, "cublasLtMatmulPreferenceDestroy",          \
    (cublasLtMatmulPreference_t pref))                                        \
  X(cublasStatus_t, pref_set, "cublasLtMatmulPreferenceSetAttribute",         \
    (cublasLtMatmulPreference_t pref, int attr, const void *buf,              \
     size_t bytes))                                                           \
  X(cublasStatus_t, heuristic, "cublasLtMatmulAlgoGetHeuristic",              \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,                      \
     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,                      \
     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,                      \
     cublasLtMatmulPreference_t pref, int requested,                          \
     cublasLtMatmulHeuristicResult_t *results, int *returned))                \
  X(cublasStatus_t, matmul, "cublasLtMatmul",                                 \
    (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,   \
     const void *a, cublasLtMatrixLayout_t a_desc, const void *b,             \
     cublasLtMatrixLayout_t b_desc, const void *beta, const void *c,          \
     cublasLtMatrixLayout_t c_desc, void *d, cublasLtMatrixLayout_t d_desc,   \
     const cublasLtMatmulAlgo_t *algo, void *workspace,                       \
     size_t workspace_bytes, CUstream stream))

// X-macro: `ret` is a type, `params` a parenthesized parameter list and
// `field` a declarator name; none can take the extra parentheses
// bugprone-macro-parentheses asks for.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ATLAS_CUBLASLT_FIELD_(ret, field, symbol, params) ret(*field) params;
// NOLINTEND(bugprone-macro-parentheses)

typedef struct cublaslt_api {
  ATLAS_CUBLASLT_ENTRY_POINTS(ATLAS_CUBLASLT_FIELD_)
} cublaslt_api;
#undef ATLAS_CUBLASLT_FIELD_

// ---- the per-backend state -----------------------------------------------------

// Algorithms chosen for recent shapes: the heuristic costs tens of
// microseconds, a prefill asks for the same few shapes in every layer.
enum { kAlgoCacheSize = 64 };

typedef struct algo_key {
  uint64_t m, n, k;
  int type;
  uint32_t align_w, align_x, align_out;  // of each pointer (bytes, <= 256)
} algo_key;

typedef struct algo_entry {
  bool used;
  algo_key key;
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes;
} algo_entry;

struct atlas_cuda_blas {
  atlas_backend *backend;
  char *setting;  // ATLAS_CUBLASLT as read at backend creation (NULL: unset)
  // The start (open the library, resolve it, make the handle, ask one
  // heuristic): inline at create, or on `thread` (start_background), or at
  // the first use. What it leaves below is read only after `settled`.
  pthread_mutex_t start_mutex;  // guards settled, on_thread, thread, usable
  bool settled;                 // the start ran and its outcome was said
  bool on_thread;               // started on `thread`, not joined yet
  pthread_t thread;
  bool usable;
  char why[512];              // why not, when the library did not open
  atlas_status start_status;  // why not, when it opened but did not start
  void *library;              // dlopen handle
  char library_name[256];
  cublaslt_api api;
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;  // f32 compute and scale, op(A) = T, op(B) = N
  pthread_mutex_t mutex;      // guards what follows
  void *workspace;            // ledgered; NULL until an algorithm needs it
  algo_entry cache[kAlgoCacheSize];
  size_t next_victim;
};

// Opens the library: the path in `setting` when it names one, else the
// sonames, else CUDA's default install directory (where the loader's path
// often does not reach). RTLD_NODELETE: a backend's dlclose drops its
// reference but never unmaps cuBLASLt (it carries its own CUDA runtime, whose
// start-up each reload would repeat and whose exit handlers must stay
// mapped); the handle and everything made with it are still per backend.
static void *open_library(const char *setting, char *name, size_t name_size,
                          char *why, size_t why_size) {
  static const char *const kNames[] = {
      "libcublasLt.so.13",
      "libcublasLt.so.12",
      "/usr/local/cuda/lib64/libcublasLt.so.13",
      "/usr/local/cuda/lib64/libcublasLt.so.12",
  };
  why[0] = '\0';
  if (setting != NULL && strchr(setting, '/') != NULL) {
    dlerror();
    void *lib = dlopen(setting, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    snprintf(name, name_size, "%s", setting);
    if (lib == NULL) {
      const char *e = dlerror();
      snprintf(why, why_size, "%s", e ? e : "dlopen failed");
    }
    return lib;
  }
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    dlerror();
    void *lib = dlopen(kNames[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (lib != NULL) {
      snprintf(name, name_size, "%s", kNames[i]);
      return lib;
    }
    if (i == 0) {
      const char *e = dlerror();
      snprintf(why, why_size, "%s", e ? e : "dlopen failed");
    }
  }
  return NULL;
}

static atlas_status resolve_symbols(atlas_cuda_blas *blas) {
#define ATLAS_CUBLASLT_RESOLVE_(ret, field, symbol, params)                   \
  {                                                                           \
    void *sym_ = dlsym(blas->library, symbol);                                \
    if (sym_ == NULL) {                                                       \
      return atlas_status_make(ATLAS_STATUS_UNAVAILABLE,                      \
                               "%s does not export %s: not a cuBLASLt Atlas " \
                               "can use (12.x or 13.x)",                      \
                               blas->library_name, symbol);                   \
    }                                                                         \
    memcpy(&blas->api.field, &sym_, sizeof(sym_));                            \
  }
  ATLAS_CUBLASLT_ENTRY_POINTS(ATLAS_CUBLASLT_RESOLVE_)
#undef ATLAS_CUBLASLT_RESOLVE_
  return ATLAS_OK;
}

static atlas_status check(const atlas_cuda_blas *blas, cublasStatus_t s,
                          const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return ATLAS_OK;
  const char *name = blas->api.status_name ? blas->api.status_name(s) : NULL;
  return atlas_status_make(ATLAS_STATUS_INTERNAL, "%s: %s failed: %s (%d) [%s]",
                           atlas_backend_name(blas->backend), what,
                           name ? name : "cuBLAS status", s,
                           blas->library_name);
}

atlas_status atlas_cuda_blas_release_workspace(atlas_cuda_blas *blas) {
  if (blas == NULL) return ATLAS_OK;
  pthread_mutex_lock(&blas->mutex);
  atlas_status status = ATLAS_OK;
  if (blas->workspace != NULL) {
    status = atlas_backend_free(blas->backend, blas->workspace);
    blas->workspace = NULL;
  }
  pthread_mutex_unlock(&blas->mutex);
  return status;
}

static atlas_status release(atlas_cuda_blas *blas) {
  atlas_status status = ATLAS_OK;
  pthread_mutex_lock(&blas->start_mutex);
  if (blas->on_thread) {  // a start nobody waited for: wait, say nothing
    pthread_join(blas->thread, NULL);
    blas->on_thread = false;
  }
  pthread_mutex_unlock(&blas->start_mutex);
  atlas_status_free(blas->start_status);
  if (blas->workspace != NULL) {
    status = atlas_backend_free(blas->backend, blas->workspace);
    blas->workspace = NULL;
  }
  if (blas->desc != NULL) {
    status = atlas_status_join(status,
                               check(blas, blas->api.desc_destroy(blas->desc),
                                     "cublasLtMatmulDescDestroy"));
  }
  if (blas->handle != NULL) {
    status = atlas_status_join(
        status,
        check(blas, blas->api.destroy(blas->handle), "cublasLtDestroy"));
  }
  if (blas->library != NULL) dlclose(blas->library);
  pthread_mutex_destroy(&blas->mutex);
  pthread_mutex_destroy(&blas->start_mutex);
  free(blas->setting);
  free(blas);
  return status;
}

atlas_status atlas_cuda_blas_destroy(atlas_cuda_blas *blas) {
  if (blas == NULL) return ATLAS_OK;
  return release(blas);
}

const char *atlas_cuda_blas_library(const atlas_cuda_blas *blas) {
  return blas != NULL ? blas->library_name : "";
}

// The largest power of two up to 256 that divides the address.
static uint32_t alignment(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uint32_t align = 256;
  while (align > 1 && (a % align) != 0) align /= 2;
  return align;
}

static bool same_key(const algo_key *a, const algo_key *b) {
  return a->m == b->m && a->n == b->n && a->k == b->k && a->type == b->type &&
         a->align_w == b->align_w && a->align_x == b->align_x &&
         a->align_out == b->align_out;
}

typedef struct layouts {
  cublasLtMatrixLayout_t a, b, d;
} layouts;

static atlas_status make_layouts(atlas_cuda_blas *blas, int type, uint64_t m,
                                 uint64_t n, uint64_t k, layouts *out) {
  memset(out, 0, sizeof(*out));
  ATLAS_RETURN_IF_ERROR(
      check(blas, blas->api.layout_create(&out->a, type, k, n, (int64_t)k),
            "cublasLtMatrixLayoutCreate (weights)"));
  ATLAS_RETURN_IF_ERROR(
      check(blas, blas->api.layout_create(&out->b, type, k, m, (int64_t)k),
            "cublasLtMatrixLayoutCreate (inputs)"));
  return check(blas,
               blas->api.layout_create(&out->d, CUDA_R_32F, n, m, (int64_t)n),
               "cublasLtMatrixLayoutCreate (output)");
}

static void free_layouts(atlas_cuda_blas *blas, layouts *l) {
  if (l->a) blas->api.layout_destroy(l->a);
  if (l->b) blas->api.layout_destroy(l->b);
  if (l->d) blas->api.layout_destroy(l->d);
}

// The heuristic's first choice for this shape and alignment, within the
// workspace Atlas offers.
static atlas_status choose(atlas_cuda_blas *blas, const layouts *l,
                           const algo_key *key,
                           cublasLtMatmulHeuristicResult_t *out) {
  cublasLtMatmulPreference_t pref = NULL;
  ATLAS_RETURN_IF_ERROR(check(blas, blas->api.pref_create(&pref),
                              "cublasLtMatmulPreferenceCreate"));
  uint64_t ws = ATLAS_CUDA_BLAS_WORKSPACE_BYTES;
  atlas_status status =
      check(blas,
            blas->api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                               &ws, sizeof(ws)),
            "setting the workspace preference");
  // A is the weights, B the inputs, C and D the output.
  const int align_attrs[] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                             CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                             CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                             CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t aligns[] = {key->align_w, key->align_x, key->align_out,
                             key->align_out};
  for (size_t i = 0; status == ATLAS_OK && i < 4; ++i) {
    status = check(
        blas,
        blas->api.pref_set(pref, align_attrs[i], &aligns[i], sizeof(aligns[i])),
        "setting the alignment preference");
  }
  int returned = 0;
  if (status == ATLAS_OK) {
    memset(out, 0, sizeof(*out));
    status = check(blas,
                   blas->api.heuristic(blas->handle, blas->desc, l->a, l->b,
                                       l->d, l->d, pref, 1, out, &returned),
                   "cublasLtMatmulAlgoGetHeuristic");
  }
  if (status == ATLAS_OK &&
      (returned < 1 || out->state != CUBLAS_STATUS_SUCCESS)) {
    status = atlas_status_make(ATLAS_STATUS_UNIMPLEMENTED,
                               "%s: cuBLASLt has no algorithm for this product",
                               atlas_backend_name(blas->backend));
  }
  blas->api.pref_destroy(pref);
  return status;
}

// One heuristic query of a small shape, on the start's thread: a process's
// first costs about 60 ms (cuBLASLt reads its kernel tables), which this
// takes off the first prompt. Only a failing call counts: a shape without
// an algorithm is the product's to meet.
static atlas_status probe_heuristic(atlas_cuda_blas *blas) {
  const algo_key key = {.m = 64,
                        .n = 64,
                        .k = 64,
                        .type = CUDA_R_16BF,
                        .align_w = 256,
                        .align_x = 256,
                        .align_out = 256};
  layouts l;
  atlas_status status = make_layouts(blas, key.type, key.m, key.n, key.k, &l);
  cublasLtMatmulHeuristicResult_t r;
  if (status == ATLAS_OK) status = choose(blas, &l, &key, &r);
  free_layouts(blas, &l);
  if (atlas_status_code_of(status) == ATLAS_STATUS_UNIMPLEMENTED) {
    atlas_status_free(status);
    status = ATLAS_OK;
  }
  return status;
}

// The start. The library not opening leaves blas->library NULL and `why`;
// anything else that fails leaves start_status.
static void start(atlas_cuda_blas *blas) {
  blas->library =
      open_library(blas->setting, blas->library_name,
                   sizeof(blas->library_name), blas->why, sizeof(blas->why));
  if (blas->library == NULL) return;
  atlas_status status = resolve_symbols(blas);
  if (status == ATLAS_OK) {
    status = check(blas, blas->api.create(&blas->handle), "cublasLtCreate");
    if (status != ATLAS_OK) blas->handle = NULL;
  }
  if (status == ATLAS_OK) {
    status = check(
        blas,
        blas->api.desc_create(&blas->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
    if (status != ATLAS_OK) blas->desc = NULL;
  }
  // W is stored k x n column-major (row-major n x k): op(A) = T gives n x k.
  int32_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  if (status == ATLAS_OK) {
    status = check(blas,
                   blas->api.desc_set(blas->desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                      &trans_a, sizeof(trans_a)),
                   "setting op(A) = T");
  }
  if (status == ATLAS_OK) {
    status = check(blas,
                   blas->api.desc_set(blas->desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                      &trans_b, sizeof(trans_b)),
                   "setting op(B) = N");
  }
  blas->start_status = status;
}

static void *start_on_thread(void *p) {
  atlas_cuda_blas *blas = p;
  // cuBLASLt's runtime takes the context current on the thread that starts it.
  atlas_status status =
      atlas_status_annotate(atlas_backend_bind_to_thread(blas->backend),
                            "binding the context to cuBLASLt's start thread");
  if (status == ATLAS_OK) {
    start(blas);
    // Only here, off the caller's path: inline, the first product's own
    // query pays this anyway.
    if (blas->library != NULL && blas->start_status == ATLAS_OK) {
      blas->start_status = probe_heuristic(blas);
    }
  } else {
    blas->start_status = status;
  }
  return NULL;
}

// Under start_mutex: waits for (or runs) the start and, the first time,
// says on the backend's sink what it came to. A library that loads but
// will not start is as good as absent: the backend still multiplies, with
// Atlas's kernels, and says why.
static void settle(atlas_cuda_blas *blas) {
  if (blas->settled) return;
  if (blas->on_thread) {
    pthread_join(blas->thread, NULL);
    blas->on_thread = false;
  } else {
    start(blas);
  }
  blas->settled = true;
  const atlas_log_sink *sink = atlas_backend_log_sink(blas->backend);
  const char *name = atlas_backend_name(blas->backend);
  if (blas->library == NULL && blas->start_status == ATLAS_OK) {
    atlas_log(sink, ATLAS_LOG_INFO,
              "%s: cuBLASLt not found (%s); 16-bit matrix products use "
              "Atlas's own kernels",
              name, blas->why);
  } else if (blas->start_status != ATLAS_OK) {
    atlas_log(sink, ATLAS_LOG_WARNING,
              "%s: cuBLASLt %s (%s); 16-bit matrix products use Atlas's own "
              "kernels",
              name,
              blas->library != NULL ? "found but not usable" : "did not start",
              atlas_status_message(blas->start_status));
  } else {
    blas->usable = true;
  }
}

atlas_status atlas_cuda_blas_create(atlas_backend *backend, const char *setting,
                                    bool background,
                                    atlas_cuda_blas **out_blas) {
  *out_blas = NULL;
  const atlas_log_sink *sink = atlas_backend_log_sink(backend);
  if (setting != NULL && setting[0] != '\0' && strcmp(setting, "0") != 0 &&
      strcmp(setting, "1") != 0 && strchr(setting, '/') == NULL) {
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "ATLAS_CUBLASLT='%.200s' is neither 0 (off), 1 "
                             "(on) nor a path to libcublasLt.so",
                             setting);
  }
  if (setting != NULL && strcmp(setting, "0") == 0) {
    atlas_log(sink, ATLAS_LOG_INFO,
              "%s: cuBLASLt disabled (ATLAS_CUBLASLT=0); 16-bit matrix "
              "products use Atlas's own kernels",
              atlas_backend_name(backend));
    return ATLAS_OK;
  }
  atlas_cuda_blas *blas = calloc(1, sizeof(*blas));
  char *copy = setting != NULL ? strdup(setting) : NULL;
  if (blas == NULL || (setting != NULL && copy == NULL)) {
    free(blas);
    free(copy);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "no memory for the cuBLASLt state");
  }
  blas->backend = backend;
  blas->setting = copy;
  pthread_mutex_init(&blas->mutex, NULL);
  pthread_mutex_init(&blas->start_mutex, NULL);
  if (!background && !atlas_cuda_blas_ready(blas)) {
    atlas_status_free(release(blas));
    return ATLAS_OK;
  }
  *out_blas = blas;
  return ATLAS_OK;
}

void atlas_cuda_blas_start_background(atlas_cuda_blas *blas) {
  if (blas == NULL) return;
  pthread_mutex_lock(&blas->start_mutex);
  if (!blas->settled && !blas->on_thread) {
    // No thread to spare: the first use starts it instead.
    blas->on_thread =
        pthread_create(&blas->thread, NULL, start_on_thread, blas) == 0;
  }
  pthread_mutex_unlock(&blas->start_mutex);
}

bool atlas_cuda_blas_ready(atlas_cuda_blas *blas) {
  pthread_mutex_lock(&blas->start_mutex);
  settle(blas);
  const bool usable = blas->usable;
  pthread_mutex_unlock(&blas->start_mutex);
  return usable;
}

// Under blas->mutex: the cached algorithm for `key`, or the heuristic's
// choice (cached), with the workspace it needs allocated.
static atlas_status algo_for(atlas_cuda_blas *blas, const algo_key *key,
                             const layouts *l, algo_entry *out) {
  for (size_t i = 0; i < kAlgoCacheSize; ++i) {
    if (blas->cache[i].used && same_key(&blas->cache[i].key, key)) {
      *out = blas->cache[i];
      return ATLAS_OK;
    }
  }
  cublasLtMatmulHeuristicResult_t r;
  ATLAS_RETURN_IF_ERROR(choose(blas, l, key, &r));
  algo_entry e = {.used = true,
                  .key = *key,
                  .algo = r.algo,
                  .workspace_bytes = r.workspaceSize};
  blas->cache[blas->next_victim] = e;
  blas->next_victim = (blas->next_victim + 1) % kAlgoCacheSize;
  *out = e;
  return ATLAS_OK;
}

atlas_status atlas_cuda_blas_matmul(atlas_cuda_blas *blas, CUstream stream,
                                    float *out, const void *w, const void *x,
                                    atlas_matmul_type type, size_t m, size_t n,
                                    size_t k, atlas_matmul_out mode) {
  int dtype = type == ATLAS_MATMUL_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  // The heuristic only offers algorithms these alignments allow (its
  // default assumes 256 bytes: an input row at an offset would break it).
  algo_key key = {.m = m,
                  .n = n,
                  .k = k,
                  .type = dtype,
                  .align_w = alignment(w),
                  .align_x = alignment(x),
                  .align_out = alignment(out)};
  layouts l;
  atlas_status status = make_layouts(blas, dtype, m, n, k, &l);
  algo_entry e;
  // One workspace for the backend: products are serialised on the host, and
  // the workspace is only safe for products that run one after another on
  // the device (one stream, or streams ordered by events).
  pthread_mutex_lock(&blas->mutex);
  if (status == ATLAS_OK) status = algo_for(blas, &key, &l, &e);
  if (status == ATLAS_OK && e.workspace_bytes > 0 && blas->workspace == NULL) {
    // At the size offered to every heuristic query, so that no choice needs
    // a bigger one; freed by release_caches (a sweep) and made again here.
    atlas_site site = {__FILE__, __LINE__, "cublasLt_workspace"};
    status = atlas_status_annotate(
        atlas_backend_alloc_at(blas->backend, ATLAS_CUDA_BLAS_WORKSPACE_BYTES,
                               site, &blas->workspace),
        "the cuBLASLt workspace");
  }
  if (status == ATLAS_OK) {
    // beta = 1: D = W X + C with C = D = out (in place: the same pointer
    // and layout, which cuBLASLt allows).
    const float alpha = 1.0f;
    const float beta = mode == ATLAS_MATMUL_ACCUMULATE ? 1.0f : 0.0f;
    // D (n x m, column-major, ld n) = op(W) (n x k) * X (k x m): row-major
    // out[m][n] = x[m][k] w[n][k]^T.
    status = check(blas,
                   blas->api.matmul(blas->handle, blas->desc, &alpha, w, l.a, x,
                                    l.b, &beta, out, l.d, out, l.d, &e.algo,
                                    e.workspace_bytes ? blas->workspace : NULL,
                                    e.workspace_bytes, stream),
                   "cublasLtMatmul");
  }
  pthread_mutex_unlock(&blas->mutex);
  free_layouts(blas, &l);
  if (status != ATLAS_OK) {
    return atlas_status_annotate(status, "matmul %zu x %zu x %zu (%s)", m, n, k,
                                 atlas_matmul_type_name(type));
  }
  return ATLAS_OK;
}
