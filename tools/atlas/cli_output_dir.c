// A command-line tool's output folder (see cli_output_dir.h).
#define _GNU_SOURCE  // strndup, mkdtemp, nftw
#include "atlas/tools/atlas/cli_output_dir.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atlas/runtime/base/file_read.h"

// The thread that removes the temporary folder when the process is told to
// stop. `lock` orders its removal against the commit's rename: whichever
// comes first decides, and `done` tells the watcher the folder is no longer
// its to remove.
struct atlas_cli_dir_watch {
  pthread_t thread;
  pthread_mutex_t lock;
  sigset_t signals;   // what the watcher waits for
  sigset_t old_mask;  // the calling thread's mask before the open
  const char *tmp;
  bool done;
};

static int remove_entry(const char *path, const struct stat *st, int type,
                        struct FTW *at) {
  (void)st;
  (void)type;
  (void)at;
  (void)remove(path);
  return 0;  // best effort: go on with the rest
}

// A writer on another thread may add an entry between nftw's listing and
// its rmdir of the folder (the watcher runs while the tool writes): go
// round again until the folder is gone. Each pass removes what the last
// one missed, so a writer with a handful of files cannot keep it.
static void remove_tree(const char *path) {
  struct stat st;
  for (int pass = 0; pass < 64 && lstat(path, &st) == 0; ++pass) {
    (void)nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  }
}

// Ends the process by `sig`'s default action, so the caller sees the
// status it expects of that signal.
static void end_by(int sig) {
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
}

static void *watch_signals(void *arg) {
  atlas_cli_dir_watch *w = arg;
  int sig = 0;
  if (sigwait(&w->signals, &sig) != 0) return NULL;
  // From here on this thread ends the process; a commit's cancel waits.
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  pthread_mutex_lock(&w->lock);
  if (!w->done && w->tmp != NULL) remove_tree(w->tmp);
  w->done = true;
  end_by(sig);  // the lock is held to the end
  return NULL;
}

// Starts the watcher, before the folder exists (make_watched names it): a
// stop that came between its creation and the watcher's start would end
// the process by the signal's default action and leave it behind. Where
// the start fails the folder is still written, only not cleaned up after a
// kill.
static atlas_cli_dir_watch *watch_start(void) {
  atlas_cli_dir_watch *w = calloc(1, sizeof(*w));
  if (w == NULL) return NULL;
  sigemptyset(&w->signals);
  const int kStops[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof(kStops) / sizeof(kStops[0]); ++i) {
    // An ignored signal stays ignored (nohup, a background job's SIGINT).
    struct sigaction now;
    if (sigaction(kStops[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN) {
      sigaddset(&w->signals, kStops[i]);
    }
  }
  if (pthread_mutex_init(&w->lock, NULL) != 0) {
    free(w);
    return NULL;
  }
  if (pthread_sigmask(SIG_BLOCK, &w->signals, &w->old_mask) != 0) {
    pthread_mutex_destroy(&w->lock);
    free(w);
    return NULL;
  }
  if (pthread_create(&w->thread, NULL, watch_signals, w) != 0) {
    pthread_sigmask(SIG_SETMASK, &w->old_mask, NULL);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return NULL;
  }
  return w;
}

// Creates the temporary folder from the template `tmp` (mkdtemp) under the
// watcher's lock, so a stop finds either no folder or a folder it knows.
// Returns mkdtemp's errno, 0 on success.
static int make_watched(atlas_cli_dir_watch *w, char *tmp) {
  if (w != NULL) pthread_mutex_lock(&w->lock);
  int err = mkdtemp(tmp) == NULL ? errno : 0;
  if (w != NULL) {
    if (err == 0) w->tmp = tmp;
    pthread_mutex_unlock(&w->lock);
  }
  return err;
}

// Stops the watcher and restores the signal mask. A signal that arrived
// while blocked is delivered then, as it would have been without us.
static void watch_stop(atlas_cli_dir_watch *w) {
  if (w == NULL) return;
  pthread_cancel(w->thread);  // sigwait is a cancellation point
  pthread_join(w->thread, NULL);
  pthread_sigmask(SIG_SETMASK, &w->old_mask, NULL);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

// Fails when `path` holds something a rename onto it would destroy.
static atlas_status check_replaceable(const char *path) {
  DIR *d = opendir(path);
  if (d == NULL) {
    int err = errno;
    if (err == ENOENT) return ATLAS_OK;
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                             atlas_strerror(err, text, sizeof(text)));
  }
  const struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(d)) != NULL) {
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  }
  closedir(d);
  if (!empty) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "%s exists and is not empty: the output is "
                             "written as a new folder (remove it or name "
                             "another)",
                             path);
  }
  return ATLAS_OK;
}

// The final name, `path` without trailing slashes and with a link resolved.
static atlas_status final_name(const char *path, char **out) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  char *name = strndup(path, n);
  if (name == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                             path);
  }
  const char *slash = strrchr(name, '/');
  const char *base = slash != NULL ? slash + 1 : name;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
      strcmp(name, "/") == 0) {
    atlas_status s = atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "%s names a folder by '.', '..' or '/': name the new folder itself",
        path);
    free(name);
    return s;
  }
  struct stat st;
  if (lstat(name, &st) == 0 && S_ISLNK(st.st_mode)) {
    // Written through, as a file output is: the link's folder is replaced.
    char *target = realpath(name, NULL);
    int err = errno;
    if (target == NULL || stat(target, &st) != 0 || !S_ISDIR(st.st_mode)) {
      char text[ATLAS_STRERROR_BYTES];
      atlas_status s = atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "%s is a symbolic link to %s: name the folder to create", path,
          target == NULL
              ? (err == ENOENT ? "nothing"
                               : atlas_strerror(err, text, sizeof(text)))
              : "something that is not a folder");
      free(target);
      free(name);
      return s;
    }
    free(name);
    name = target;
  }
  *out = name;
  return ATLAS_OK;
}

// `<path>.tmp-XXXXXX`, or `.atlas-tmp-XXXXXX` in the same folder where the
// longer name would pass NAME_MAX.
static char *temporary_name(const char *path) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 32);
  if (tmp == NULL) return NULL;
  const char *slash = strrchr(path, '/');
  size_t folder_len = slash != NULL ? (size_t)(slash - path) + 1 : 0;
  if (n - folder_len + strlen(".tmp-XXXXXX") > NAME_MAX) {
    snprintf(tmp, n + 32, "%.*s.atlas-tmp-XXXXXX", (int)folder_len, path);
  } else {
    snprintf(tmp, n + 32, "%s.tmp-XXXXXX", path);
  }
  return tmp;
}

atlas_status atlas_cli_output_dir_open(const char *path,
                                       atlas_cli_output_dir *out) {
  memset(out, 0, sizeof(*out));
  ATLAS_RETURN_IF_ERROR(final_name(path, &out->path));
  atlas_status s = check_replaceable(out->path);
  if (s == ATLAS_OK) {
    out->tmp = temporary_name(out->path);
    if (out->tmp == NULL) {
      s = atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                            path);
    }
  }
  if (s == ATLAS_OK) {
    out->watch = watch_start();
    int err = make_watched(out->watch, out->tmp);
    if (err != 0) {
      char text[ATLAS_STRERROR_BYTES];
      s = atlas_status_make(ATLAS_STATUS_IO, "cannot create %s: %s", path,
                            atlas_strerror(err, text, sizeof(text)));
      free(out->tmp);
      out->tmp = NULL;
    }
  }
  if (s != ATLAS_OK) {
    atlas_cli_output_dir_abort(out);
    return s;
  }
  // mkdtemp makes the folder 0700; the final one gets what mkdir gave it.
  mode_t mask = umask(0);
  umask(mask);
  (void)chmod(out->tmp, 0755 & ~mask);
  return ATLAS_OK;
}

atlas_status atlas_cli_output_dir_commit(atlas_cli_output_dir *out) {
  atlas_cli_dir_watch *w = out->watch;
  if (w != NULL) pthread_mutex_lock(&w->lock);
  int rc = rename(out->tmp, out->path);
  int err = errno;
  if (w != NULL) {
    w->done = rc == 0;  // on failure the abort below still removes it
    pthread_mutex_unlock(&w->lock);
  }
  if (rc != 0) {
    char text[ATLAS_STRERROR_BYTES];
    atlas_status s =
        atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", out->path,
                          atlas_strerror(err, text, sizeof(text)));
    atlas_cli_output_dir_abort(out);
    return s;
  }
  watch_stop(w);
  free(out->tmp);
  free(out->path);
  memset(out, 0, sizeof(*out));
  return ATLAS_OK;
}

void atlas_cli_output_dir_abort(atlas_cli_output_dir *out) {
  atlas_cli_dir_watch *w = out->watch;
  if (w != NULL) pthread_mutex_lock(&w->lock);
  if (out->tmp != NULL && (w == NULL || !w->done)) remove_tree(out->tmp);
  if (w != NULL) {
    w->done = true;
    pthread_mutex_unlock(&w->lock);
  }
  watch_stop(w);
  free(out->tmp);
  free(out->path);
  memset(out, 0, sizeof(*out));
}
