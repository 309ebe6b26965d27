// Load speed, measured side by side in one run (see bench_load.h).
#define _GNU_SOURCE  // environ (glibc extensions)
#include "atlas/tools/bench/bench_load.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>  // environ (_GNU_SOURCE)

#include "atlas/kernels/weight_scan_kernels.h"
#include "atlas/runtime/arch/weight_check.h"
#include "atlas/runtime/base/file_read.h"
#include "atlas/runtime/cuda/cuda_backend.h"
#include "atlas/runtime/device/weight_upload.h"
#include "atlas/runtime/formats/checkpoint.h"
#include "atlas/runtime/model/swap.h"
#include "atlas/tools/checkpoint/make_checkpoint_demo_models.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check(atlas_status s, const char *what) {
  if (s == ATLAS_OK) return 0;
  fprintf(stderr, "bench load: %s: %s\n", what, atlas_status_message(s));
  atlas_status_free(s);
  return 1;
}

// Reads a file once so its bytes sit in the page cache.
static void warm(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  enum { kBuf = 1 << 20 };
  char *buf = malloc(kBuf);
  while (buf != NULL && read(fd, buf, kBuf) > 0) {
  }
  free(buf);
  close(fd);
}

typedef struct tensors {
  atlas_upload_job *jobs;
  size_t count;
  uint64_t bytes;
} tensors;

static int alloc_all(atlas_backend *b, tensors *t) {
  for (size_t i = 0; i < t->count; ++i) {
    if (check(atlas_backend_alloc(b, t->jobs[i].bytes, &t->jobs[i].dst),
              "alloc")) {
      return 1;
    }
  }
  return 0;
}

static void free_all(atlas_backend *b, tensors *t) {
  for (size_t i = 0; i < t->count; ++i) {
    atlas_status_free(atlas_backend_free(b, t->jobs[i].dst));
    t->jobs[i].dst = NULL;
  }
}

// Where the digest and NaN/Inf scan runs: not at all, on the host over the
// staged bytes (the earlier path), or on the device after the copy (now).
typedef enum scan_mode { SCAN_NONE, SCAN_HOST, SCAN_DEVICE } scan_mode;

// GB/s of one upload and its scan. With `kept`, the staging was made
// beforehand (an uploader kept across loads); otherwise the run makes and
// frees it.
static double time_upload(atlas_backend *b, tensors *t, int threads,
                          size_t chunk, bool kept, scan_mode scan) {
  atlas_upload_options o;
  memset(&o, 0, sizeof(o));
  o.threads = threads;
  o.chunk_bytes = chunk;
  o.skip_scan = scan != SCAN_HOST;
  atlas_uploader *u = NULL;
  if (kept && check(atlas_uploader_create(b, &o, 0, &u), "uploader")) return -1;
  double t0 = now_s();
  atlas_status s = kept ? atlas_uploader_run(u, t->jobs, t->count)
                        : atlas_upload_run(b, t->jobs, t->count, &o);
  if (s == ATLAS_OK && scan == SCAN_DEVICE) {
    s = atlas_weight_check_run(b, t->jobs, t->count);
  }
  if (check(s, "upload") || check(atlas_backend_synchronize(b), "sync")) {
    atlas_status_free(atlas_uploader_destroy(u));
    return -1;
  }
  double gbs = (double)t->bytes / (now_s() - t0) / 1e9;
  if (check(atlas_uploader_destroy(u), "uploader")) return -1;
  return gbs;
}

static double time_pageable(atlas_backend *b, tensors *t) {
  double t0 = now_s();
  for (size_t i = 0; i < t->count; ++i) {
    if (check(atlas_backend_h2d(b, t->jobs[i].dst, t->jobs[i].src,
                                t->jobs[i].bytes),
              "pageable h2d")) {
      return -1;
    }
  }
  return (double)t->bytes / (now_s() - t0) / 1e9;
}

// One pinned buffer of `bytes`, copied to one device buffer: the link.
static double time_pinned(atlas_backend *b, uint64_t bytes) {
  void *host = NULL, *dev = NULL;
  double gbs = -1;
  if (check(atlas_backend_pinned_alloc(b, bytes, &host), "pinned alloc"))
    return -1;
  if (!check(atlas_backend_alloc(b, bytes, &dev), "alloc")) {
    memset(host, 1, bytes);
    double best = 1e9;
    for (int r = 0; r < 3; ++r) {
      double t0 = now_s();
      if (check(atlas_backend_h2d_async_retained(b, dev, host, bytes, NULL),
                "h2d") ||
          check(atlas_backend_synchronize(b), "sync")) {
        break;
      }
      double dt = now_s() - t0;
      if (dt < best) best = dt;
    }
    gbs = (double)bytes / best / 1e9;
    atlas_status_free(atlas_backend_free(b, dev));
  }
  atlas_status_free(atlas_backend_pinned_free(b, host));
  return gbs;
}

// PyTorch's load_file on the same files, when python3 has torch; run
// without a shell (posix_spawnp), the path passed as an argument.
static const char kTorchScript[] =
    "import os, sys, time\n"
    "try:\n"
    "    import torch\n"
    "    from safetensors.torch import load_file\n"
    "except Exception as e:\n"
    "    print('pytorch: not available (%s)' % e); sys.exit(0)\n"
    "p = sys.argv[1]\n"
    "files = [os.path.join(p, f) for f in sorted(os.listdir(p)) if "
    "f.endswith('.safetensors')] if os.path.isdir(p) else [p]\n"
    "n = sum(os.path.getsize(f) for f in files)\n"
    "torch.zeros(1, device='cuda')\n"
    "best = 1e9\n"
    "for _ in range(3):\n"
    "    t0 = time.perf_counter(); ts = [load_file(f, device='cuda') for f in "
    "files]\n"
    "    torch.cuda.synchronize(); best = min(best, time.perf_counter() - t0)\n"
    "    del ts\n"
    "print('pytorch load_file(device=cuda): %.2f GB/s (%.3f s)' % (n / best / "
    "1e9, best))\n";

static void torch_load(const char *path) {
  fflush(stdout);
  char *const argv[] = {"python3", "-c", (char *)kTorchScript, (char *)path,
                        NULL};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "python3", NULL, NULL, argv, environ) != 0) {
    printf("pytorch: python3 not found\n");
    return;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
}

// The model's DEBUG lines (the load's phases) and the rest, as they come.
static void print_log(void *ctx, atlas_log_level level, const char *message) {
  (void)ctx;
  printf("  %s%s\n", level == ATLAS_LOG_DEBUG ? "debug: " : "", message);
}

// End-to-end swaps tiny -> model -> tiny, staging made per load ("fresh")
// and through an uploader kept on a transfer backend ("kept").
static int swap_times(const char *dir, uint64_t bytes) {
  const atlas_demo_model *d = atlas_demo_model_find("tiny-a");
  if (d == NULL) return 0;
  atlas_embedded_checkpoint e = {d->name, d->config_json, d->config_bytes,
                                 d->weights, d->weights_bytes};
  atlas_backend *transfer = NULL;
  atlas_uploader *u = NULL;
  if (check(atlas_cuda_backend_create(NULL, &transfer), "transfer backend") ||
      check(atlas_uploader_create(transfer, NULL, 0, &u), "uploader")) {
    atlas_status_free(atlas_backend_destroy(transfer));
    return 1;
  }
  int rc = 0;
  for (int kept = 0; rc == 0 && kept < 2; ++kept) {
    atlas_model_spec tiny, big;
    memset(&tiny, 0, sizeof(tiny));
    tiny.embedded = &e;
    tiny.backend = "cuda";
    tiny.max_seq = 64;
    tiny.uploader = kept ? u : NULL;
    tiny.log.fn = print_log;
    tiny.log.min_level = ATLAS_LOG_DEBUG;
    big = tiny;
    big.embedded = NULL;
    big.dir = dir;
    atlas_model *m = NULL;
    if (check(atlas_model_open(&tiny, &m), "open tiny")) return 1;
    for (int r = 0; r < 5; ++r) {  // the link's rate varies run to run
      atlas_swap_report in, out;
      if (check(atlas_model_swap(&m, &big, &in), "swap in") ||
          check(atlas_model_swap(&m, &tiny, &out), "swap out")) {
        rc = 1;
        break;
      }
      // The swap's load is the open plus its proving step (one forward);
      // the open alone is in the DEBUG line "open ...: ... load ... ms".
      printf(
          "swap (%s staging) tiny -> model: %.1f ms (open + proving step %.1f "
          "ms = "
          "%.2f GB/s, teardown %.1f ms); model -> tiny: %.1f ms\n",
          kept ? "kept" : "fresh", in.total_ms, in.load_ms,
          (double)bytes / (in.load_ms / 1e3) / 1e9, in.teardown_ms,
          out.total_ms);
    }
    rc |= check(atlas_model_close(m, NULL), "close");
  }
  rc |= check(atlas_uploader_destroy(u), "uploader");
  rc |= check(atlas_backend_destroy(transfer), "transfer backend");
  return rc;
}

// Adds one tensor to the upload list: read with pread, scanned (the load
// path since the switch from mmap).
static void add_tensor(tensors *t, const atlas_safetensors_tensor *st,
                       const atlas_safetensors *file) {
  atlas_checkpoint_tensor ct = {st, file, atlas_safetensors_path(file)};
  if (atlas_checkpoint_upload_job(&ct, NULL, &t->jobs[t->count]) == ATLAS_OK) {
    t->count++;
    t->bytes += st->bytes;
  }
}

// The same jobs reading from an mmap of each file (the load path before the
// switch to pread), for a side-by-side figure. Maps stay until exit.
static int map_sources(const tensors *t, atlas_upload_job *out) {
  // Digest slots and the NaN/Inf encoding stay: the scan rows must scan
  // (an earlier version stripped them here, so its "mmap + memcpy + scan" row
  // scanned nothing).
  for (size_t i = 0; i < t->count; ++i) out[i] = t->jobs[i];
  for (size_t i = 0; i < t->count; ++i) {
    if (out[i].src != NULL) continue;
    struct stat st;
    if (fstat(out[i].fd, &st) != 0 || st.st_size == 0) return 1;
    void *map =
        mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, out[i].fd, 0);
    if (map == MAP_FAILED) return 1;
    for (size_t j = i; j < t->count; ++j) {
      if (out[j].src == NULL && out[j].fd == out[i].fd) {
        out[j].src = (const char *)map + out[j].file_offset;
      }
    }
  }
  return 0;
}

// mmap vs pread, scan off vs on, at the uploader's default threads x 2 MiB,
// kept staging: best of 3 each. What the switch to pread and the NaN/digest
// scan cost.
static int compare_sources(atlas_backend *b, tensors *t) {
  atlas_upload_job *mapped = calloc(t->count ? t->count : 1, sizeof(*mapped));
  if (mapped == NULL || map_sources(t, mapped) != 0) {
    free(mapped);
    fprintf(stderr, "bench load: cannot map the files\n");
    return 1;
  }
  tensors m = {mapped, t->count, t->bytes};
  struct {
    const char *name;
    tensors *t;
    scan_mode scan;
  } rows[] = {
      {"mmap + memcpy, no scan (before)", &m, SCAN_NONE},
      {"pread, no scan", t, SCAN_NONE},
      {"pread + scan on the host (earlier)", t, SCAN_HOST},
      {"pread + scan on the device (now)", t, SCAN_DEVICE},
      {"mmap + memcpy + scan on the host", &m, SCAN_HOST},
  };
  enum { kRows = sizeof(rows) / sizeof(rows[0]) };
  double best[kRows] = {0};
  for (int rep = 0; rep < 3; ++rep) {
    for (int r = 0; r < kRows; ++r) {
      double g = time_upload(b, rows[r].t, 0, 2u << 20, true, rows[r].scan);
      if (g < 0) {
        free(mapped);
        return 1;
      }
      if (g > best[r]) best[r] = g;
    }
  }
  printf("%-44s %10s  (default threads, 2 MiB, kept staging, best of 3)\n",
         "source", "GB/s");
  for (int r = 0; r < kRows; ++r)
    printf("%-44s %10.2f\n", rows[r].name, best[r]);
  printf(
      "scan cost on the pread path: %.1f%% of load time on the device "
      "(now), %.1f%% on the host (earlier); pread vs mmap: %.3fx\n",
      100.0 * (best[1] / best[3] - 1.0), 100.0 * (best[1] / best[2] - 1.0),
      best[1] / best[0]);
  free(mapped);
  return 0;
}

int atlas_bench_load(const atlas_bench_load_options *options) {
  const char *path = options->path;
  struct stat st;
  if (stat(path, &st) != 0) {
    char text[ATLAS_STRERROR_BYTES];
    fprintf(stderr, "bench load: cannot stat %s: %s\n", path,
            atlas_strerror(errno, text, sizeof(text)));
    return 1;
  }
  // A checkpoint directory (single or sharded) or one safetensors file.
  atlas_checkpoint *ck = NULL;
  atlas_safetensors *file = NULL;
  size_t n = 0;
  if (S_ISDIR(st.st_mode)) {
    if (check(atlas_checkpoint_open(path, &ck), "open")) return 1;
    n = atlas_checkpoint_tensor_count(ck);
  } else {
    if (check(atlas_safetensors_open(path, &file), "open")) return 1;
    n = atlas_safetensors_count(file);
  }
  tensors t = {calloc(n ? n : 1, sizeof(atlas_upload_job)), 0, 0};
  double w0 = now_s();
  for (size_t i = 0; t.jobs != NULL && i < n; ++i) {
    if (ck != NULL) {
      atlas_checkpoint_tensor ct;
      atlas_checkpoint_tensor_at(ck, i, &ct);
      add_tensor(&t, ct.tensor, ct.shard);
    } else {
      add_tensor(&t, atlas_safetensors_at(file, i), file);
    }
  }
  if (ck != NULL) {
    for (size_t i = 0; i < atlas_checkpoint_shard_count(ck); ++i) {
      warm(atlas_safetensors_path(atlas_checkpoint_shard(ck, i)));
    }
  } else {
    warm(path);
  }
  atlas_backend *b = NULL;
  // The weight_scan module: the device scan of the default path.
  const atlas_module_def *scan_modules[] = {&atlas_weight_scan_module};
  atlas_module_set scan_set = {scan_modules, 1};
  atlas_backend_options bo;
  memset(&bo, 0, sizeof(bo));
  bo.modules = &scan_set;
  if (t.jobs == NULL || check(atlas_cuda_backend_create(&bo, &b), "cuda")) {
    free(t.jobs);
    atlas_checkpoint_close(ck);
    atlas_safetensors_close(file);
    return 1;
  }
  printf("checkpoint %s: %zu tensors, %.2f GB (page cache warmed in %.2f s)\n",
         path, t.count, (double)t.bytes / 1e9, now_s() - w0);
  int rc = alloc_all(b, &t);
  const int threads[] = {1, 4, 8, 16};
  const size_t chunks[] = {2u << 20, 4u << 20, 8u << 20};
  double best = 0;
  int best_t = 0;
  size_t best_c = 0;
  bool best_kept = false;
  printf("%-44s %10s\n", "technique", "GB/s");
  for (size_t ti = 0; rc == 0 && ti < sizeof(threads) / sizeof(threads[0]);
       ++ti) {
    for (size_t ci = 0; rc == 0 && ci < sizeof(chunks) / sizeof(chunks[0]);
         ++ci) {
      for (int kept = 0; kept < 2; ++kept) {
        double gbs =
            time_upload(b, &t, threads[ti], chunks[ci], kept, SCAN_DEVICE);
        if (gbs < 0) {
          rc = 1;
          break;
        }
        printf("staged, %2d threads, %zu MiB chunks, %-9s %10.2f\n",
               threads[ti], chunks[ci] >> 20, kept ? "kept" : "fresh", gbs);
        if (gbs > best) {
          best = gbs;
          best_t = threads[ti];
          best_c = chunks[ci];
          best_kept = kept;
        }
      }
    }
  }
  if (rc == 0) rc = compare_sources(b, &t);
  double pageable = -1;
  atlas_upload_job *mapped = calloc(t.count ? t.count : 1, sizeof(*mapped));
  if (rc == 0 && mapped != NULL && map_sources(&t, mapped) == 0) {
    tensors m = {mapped, t.count, t.bytes};
    pageable = time_pageable(b, &m);
  }
  free(mapped);
  free_all(b, &t);
  double pinned = rc == 0 ? time_pinned(b, t.bytes) : -1;
  printf("%-44s %10.2f\n", "naive pageable h2d per tensor", pageable);
  printf("%-44s %10.2f\n", "pinned h2d of the same bytes (ceiling)", pinned);
  printf(
      "best staged: %d threads, %zu MiB chunks, %s staging: %.2f GB/s = "
      "%.2fx of pinned, %.2fx of pageable\n",
      best_t, best_c >> 20, best_kept ? "kept" : "fresh", best, best / pinned,
      best / pageable);
  rc |= check(atlas_backend_destroy(b), "destroy");
  free(t.jobs);
  atlas_checkpoint_close(ck);
  atlas_safetensors_close(file);
  torch_load(path);
  char config[4096];
  snprintf(config, sizeof(config), "%s/config.json", path);
  if (rc == 0 && S_ISDIR(st.st_mode) && access(config, R_OK) == 0) {
    rc = swap_times(path, t.bytes);
  }
  return rc;
}
