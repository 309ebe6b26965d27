// Command-line helpers (see cli_files.h).
#define _GNU_SOURCE  // O_TMPFILE, strdup, linkat
#include "atlas/tools/atlas/cli_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atlas/runtime/base/file_read.h"

atlas_status atlas_cli_read_all(const char *path, size_t max_bytes, char **out,
                                size_t *out_len) {
  return atlas_cli_read_limited(path, max_bytes, NULL, out, out_len);
}

atlas_status atlas_cli_read_limited(const char *path, size_t max_bytes,
                                    const char *limit_flag, char **out,
                                    size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  bool is_stdin = strcmp(path, "-") == 0;
  const char *name = is_stdin ? "stdin" : path;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (f == NULL) {
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(
        errno == ENOENT ? ATLAS_STATUS_NOT_FOUND : ATLAS_STATUS_IO,
        "%s: cannot open: %s", name, atlas_strerror(errno, text, sizeof(text)));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) memset(&st, 0, sizeof(st));
  if (S_ISDIR(st.st_mode)) {
    if (!is_stdin) fclose(f);
    return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                             "%s: is a folder, not a file", name);
  }
  // A regular file is read into one buffer of its size (one copy of the
  // text in memory); a pipe into one that doubles (realloc moves a large
  // block by remapping its pages, not copying them).
  size_t cap = 4096, len = 0;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    size_t size = (size_t)st.st_size;
    cap = (size < max_bytes ? size : max_bytes) + 2;
  }
  char *buf = malloc(cap);
  // Never more than one byte past the limit is read (an endless source
  // such as /dev/zero costs max_bytes, not twice that).
  const size_t most = max_bytes < SIZE_MAX - 2 ? max_bytes + 2 : SIZE_MAX;
  while (buf != NULL) {
    len += fread(buf + len, 1, cap - len - 1, f);
    if (len < cap - 1 || len > max_bytes) break;
    size_t next = cap > most / 2 ? most : cap * 2;
    char *bigger = next <= cap ? NULL : realloc(buf, next);
    if (bigger == NULL) free(buf);
    buf = bigger;
    cap = next;
  }
  bool read_failed = ferror(f) != 0;
  int read_errno = errno;
  if (!is_stdin) fclose(f);
  if (buf == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                             "reading %s: out of memory", name);
  }
  if (len > max_bytes) {
    free(buf);
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT, "%s: more than %zu bytes%s%s%s", name,
        max_bytes, limit_flag ? " (the limit " : "",
        limit_flag ? limit_flag : "", limit_flag ? " raises)" : "");
  }
  if (read_failed) {
    free(buf);
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_IO, "reading %s: %s", name,
        atlas_strerror(read_errno ? read_errno : EIO, text, sizeof(text)));
  }
  buf[len] = '\0';
  *out = buf;
  *out_len = len;
  return ATLAS_OK;
}

// The descriptor a path names (/dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N), or -1.
static int descriptor_of(const char *path) {
  if (strcmp(path, "/dev/stdout") == 0) return 1;
  if (strcmp(path, "/dev/stderr") == 0) return 2;
  const char *digits = NULL;
  if (strncmp(path, "/dev/fd/", 8) == 0) digits = path + 8;
  if (strncmp(path, "/proc/self/fd/", 14) == 0) digits = path + 14;
  if (digits == NULL || *digits == '\0') return -1;
  long fd = 0;
  for (const char *p = digits; *p; ++p) {
    if (*p < '0' || *p > '9' || fd > 1000000) return -1;
    fd = fd * 10 + (*p - '0');
  }
  return (int)fd;
}

// The file an output replaces: `path` with its symbolic links resolved (a
// link is written through, not replaced), or, for a new file, the resolved
// folder and the name. A link to nothing is refused: what it meant is unclear.
static atlas_status resolve_target(const char *flag, const char *path,
                                   char **out) {
  *out = NULL;
  struct stat ls;
  if (lstat(path, &ls) == 0) {
    char *rp = realpath(path, NULL);
    if (rp == NULL) {
      int err = errno;
      char text[ATLAS_STRERROR_BYTES];
      return atlas_status_make(
          S_ISLNK(ls.st_mode) ? ATLAS_STATUS_FAILED_PRECONDITION
                              : ATLAS_STATUS_IO,
          "%s %s: %s%s", flag, path,
          S_ISLNK(ls.st_mode) ? "a symbolic link to nothing: " : "",
          atlas_strerror(err, text, sizeof(text)));
    }
    *out = rp;
    return ATLAS_OK;
  }
  if (errno != ENOENT) {
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s %s: %s", flag, path,
                             atlas_strerror(errno, text, sizeof(text)));
  }
  const char *slash = strrchr(path, '/');
  const char *name = slash != NULL ? slash + 1 : path;
  char *folder = slash == NULL   ? strdup(".")
                 : slash == path ? strdup("/")
                                 : strndup(path, (size_t)(slash - path));
  if (folder == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                             path);
  }
  char *rp = realpath(folder, NULL);
  int err = errno;
  free(folder);
  if (rp == NULL || name[0] == '\0') {
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_IO, "%s: cannot create %s: %s", flag, path,
        rp == NULL ? atlas_strerror(err, text, sizeof(text)) : "no file name");
  }
  size_t n = strlen(rp) + strlen(name) + 2;
  *out = malloc(n);
  if (*out != NULL)
    snprintf(*out, n, "%s%s%s", rp, strcmp(rp, "/") ? "/" : "", name);
  free(rp);
  return *out != NULL ? ATLAS_OK
                      : atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY,
                                          "no memory for %s", path);
}

atlas_status atlas_cli_output_open(const char *flag, const char *path,
                                   atlas_cli_output *out) {
  memset(out, 0, sizeof(*out));
  if (path == NULL) return ATLAS_OK;
  out->flag = flag;
  out->path = strdup(path);
  if (out->path == NULL) {
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                             path);
  }
  int named_fd = descriptor_of(path);
  if (named_fd >= 0) {
    // An open descriptor: written through a copy of it, as a shell
    // redirection would (its offset, its O_APPEND). Opened again by name it
    // would be truncated, or a file behind it replaced.
    int fd = fcntl(named_fd, F_DUPFD_CLOEXEC, 3);
    out->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (out->f == NULL) {
      int err = errno;
      if (fd >= 0) close(fd);
      atlas_cli_output_abort(out);
      char text[ATLAS_STRERROR_BYTES];
      return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot write %s: %s", flag,
                               path, atlas_strerror(err, text, sizeof(text)));
    }
    return ATLAS_OK;
  }
  atlas_status s = resolve_target(flag, path, &out->target);
  if (s != ATLAS_OK) {
    atlas_cli_output_abort(out);
    return s;
  }
  struct stat st;
  if (stat(out->target, &st) == 0) {
    out->exists = true;
    out->dev = st.st_dev;
    out->ino = st.st_ino;
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
      // A pipe or a device (/dev/stdout, /dev/null): written through, as
      // a shell redirection would; there is nothing to replace.
      out->f = fopen(out->target, "wb");
      if (out->f == NULL) {
        int err = errno;
        atlas_cli_output_abort(out);
        char text[ATLAS_STRERROR_BYTES];
        return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot open %s: %s",
                                 flag, path,
                                 atlas_strerror(err, text, sizeof(text)));
      }
      return ATLAS_OK;
    }
    if (!S_ISREG(st.st_mode)) {
      atlas_cli_output_abort(out);
      return atlas_status_make(
          ATLAS_STATUS_FAILED_PRECONDITION,
          "%s %s is %s, not a file: name a file to write", flag, path,
          S_ISDIR(st.st_mode) ? "a folder" : "a socket or a block device");
    }
  }
  size_t n = strlen(out->target);
  out->tmp = malloc(n + 32);
  if (out->tmp == NULL) {
    atlas_cli_output_abort(out);
    return atlas_status_make(ATLAS_STATUS_OUT_OF_MEMORY, "no memory for %s",
                             path);
  }
  // NAME.tmp.XXXXXX beside it; a name too long for that (NAME_MAX) gets a
  // short temporary name in the same folder.
  const char *slash = strrchr(out->target, '/');
  size_t folder_len = slash != NULL ? (size_t)(slash - out->target) + 1 : 0;
  if (n - folder_len + 11 > NAME_MAX) {
    snprintf(out->tmp, n + 32, "%.*s.atlas-tmp.XXXXXX", (int)folder_len,
             out->target);
  } else {
    snprintf(out->tmp, n + 32, "%s.tmp.XXXXXX", out->target);
  }
  // An unnamed file in the target's folder (O_TMPFILE) leaves nothing
  // behind if the process dies before the commit (Ctrl-C, a kill); it gets
  // its temporary name only when complete. Where the file system cannot
  // (or /proc, for the link, is missing), a named temporary file.
  int fd = -1;
  if (access("/proc/self/fd", X_OK) == 0) {
    char *folder = strndup(out->target, folder_len > 1 ? folder_len - 1 : 1);
    if (folder != NULL)
      fd = open(folder, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    free(folder);
  }
  if (fd >= 0) {
    out->unnamed = true;
  } else {
    fd = mkstemp(out->tmp);
    // mkstemp makes the file 0600; the final file gets what fopen would give.
    mode_t mask = umask(0);
    umask(mask);
    if (fd >= 0) (void)fchmod(fd, 0666 & ~mask);
  }
  if (fd < 0) {
    int err = errno;
    free(out->tmp);
    out->tmp = NULL;
    atlas_cli_output_abort(out);
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot create %s: %s", flag,
                             path, atlas_strerror(err, text, sizeof(text)));
  }
  out->f = fdopen(fd, "wb");
  if (out->f == NULL) {
    int err = errno;
    close(fd);
    atlas_cli_output_abort(out);
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot create %s: %s", flag,
                             path, atlas_strerror(err, text, sizeof(text)));
  }
  return ATLAS_OK;
}

// Whether `out` would replace the file `dirfd`/`name` (a regular file).
static bool replaces(const atlas_cli_output *out, int dirfd, const char *name) {
  struct stat st;
  return fstatat(dirfd, name, &st, 0) == 0 && S_ISREG(st.st_mode) &&
         st.st_dev == out->dev && st.st_ino == out->ino;
}

atlas_status atlas_cli_output_check_input(const atlas_cli_output *out,
                                          const char *input_flag,
                                          const char *input) {
  if (out->path == NULL || !out->exists || out->tmp == NULL || input == NULL ||
      input[0] == '\0' || strcmp(input, "-") == 0) {
    return ATLAS_OK;
  }
  bool hit = false;
  DIR *d = opendir(input);
  bool folder = d != NULL;
  if (folder) {  // a checkpoint folder: every file in it is an input
    const struct dirent *e;
    while (!hit && (e = readdir(d)) != NULL)
      hit = replaces(out, dirfd(d), e->d_name);
    closedir(d);
  } else {
    hit = replaces(out, AT_FDCWD, input);
  }
  if (!hit) return ATLAS_OK;
  return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                           "%s %s would replace %s, which %s %s reads: name "
                           "another file",
                           out->flag, out->path, folder ? "a file" : "the file",
                           input_flag, input);
}

atlas_status atlas_cli_output_check_pair(const atlas_cli_output *a,
                                         const atlas_cli_output *b) {
  if (a->target == NULL || b->target == NULL ||
      strcmp(a->target, b->target) != 0) {
    return ATLAS_OK;
  }
  return atlas_status_make(ATLAS_STATUS_INVALID_ARGUMENT,
                           "%s %s and %s %s name the same file", a->flag,
                           a->path, b->flag, b->path);
}

// Links the unnamed file to a fresh temporary name (out->tmp, whose
// XXXXXX it fills), as mkstemp would have named it.
static int name_unnamed(atlas_cli_output *out) {
  if (out->tmp == NULL) {  // an unnamed file always has its template
    errno = EINVAL;
    return -1;
  }
  char proc[64];
  snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fileno(out->f));
  static const char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char *x = out->tmp + strlen(out->tmp) - 6;
  for (int attempt = 0; attempt < 100; ++attempt) {
    unsigned char r[6];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) return -1;
    for (int i = 0; i < 6; ++i) x[i] = kChars[r[i] % (sizeof(kChars) - 1)];
    if (linkat(AT_FDCWD, proc, AT_FDCWD, out->tmp, AT_SYMLINK_FOLLOW) == 0) {
      out->unnamed = false;
      return 0;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

atlas_status atlas_cli_output_close(atlas_cli_output *out) {
  if (out->f == NULL) return ATLAS_OK;
  int failed = fflush(out->f) != 0;
  // fsync only makes sense for a file (a pipe or a tty refuses it).
  if (!failed && out->tmp != NULL) failed = fsync(fileno(out->f)) != 0;
  if (!failed && out->unnamed) failed = name_unnamed(out) != 0;
  int err = errno;
  if (fclose(out->f) != 0 && !failed) {
    failed = 1;
    err = errno;
  }
  out->f = NULL;
  if (failed) {
    char text[ATLAS_STRERROR_BYTES];
    atlas_status s =
        atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", out->path,
                          atlas_strerror(err, text, sizeof(text)));
    atlas_cli_output_abort(out);
    return s;
  }
  return ATLAS_OK;
}

atlas_status atlas_cli_output_commit(atlas_cli_output *out) {
  ATLAS_RETURN_IF_ERROR(atlas_cli_output_close(out));
  if (out->tmp != NULL && rename(out->tmp, out->target) != 0) {
    char text[ATLAS_STRERROR_BYTES];
    atlas_status s =
        atlas_status_make(ATLAS_STATUS_IO, "writing %s: %s", out->path,
                          atlas_strerror(errno, text, sizeof(text)));
    atlas_cli_output_abort(out);
    return s;
  }
  free(out->tmp);
  free(out->target);
  free(out->path);
  memset(out, 0, sizeof(*out));
  return ATLAS_OK;
}

void atlas_cli_output_abort(atlas_cli_output *out) {
  if (out->f != NULL) fclose(out->f);  // an unnamed file vanishes with it
  if (out->tmp != NULL && !out->unnamed) unlink(out->tmp);
  free(out->tmp);
  free(out->target);
  free(out->path);
  memset(out, 0, sizeof(*out));
}
