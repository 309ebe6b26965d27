// Non-blocking, fstat-first opens and pread-only reads (see file_read.h).
#define _GNU_SOURCE  // pread, O_NONBLOCK, strdup, clock_gettime
#include "atlas/runtime/base/file_read.h"

#include "atlas/runtime/base/escape.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

static atlas_file_identity identity_of(const struct stat *st) {
  atlas_file_identity id;
  id.dev = (uint64_t)st->st_dev;
  id.ino = (uint64_t)st->st_ino;
  id.size = (uint64_t)st->st_size;
  id.mtime_sec = (int64_t)st->st_mtim.tv_sec;
  id.mtime_nsec = (int64_t)st->st_mtim.tv_nsec;
  id.ctime_sec = (int64_t)st->st_ctim.tv_sec;
  id.ctime_nsec = (int64_t)st->st_ctim.tv_nsec;
  return id;
}

// Why open() failed, with the dangling-link case told apart from absence.
static atlas_status open_error(const char *path, const char *role, int err) {
  char q[ATLAS_QUOTE_PATH_BYTES];
  atlas_quote_path(path, q, sizeof(q));
  struct stat lst;
  if (err == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) n = 0;
    target[n] = '\0';
    char qt[ATLAS_QUOTE_PATH_BYTES];
    atlas_quote_path(target, qt, sizeof(qt));
    return atlas_status_make(ATLAS_STATUS_NOT_FOUND,
                             "%s: %s is a dangling symbolic link (its target "
                             "\"%s\" does not exist)",
                             q, role, qt);
  }
  char text[ATLAS_STRERROR_BYTES];
  return atlas_status_make(
      err == ENOENT ? ATLAS_STATUS_NOT_FOUND : ATLAS_STATUS_IO,
      "%s: cannot open %s: %s", q, role,
      atlas_strerror(err, text, sizeof(text)));
}

atlas_status atlas_file_open_regular(const char *path, const char *role,
                                     int *out_fd,
                                     atlas_file_identity *out_identity) {
  *out_fd = -1;
  // O_NONBLOCK: opening a FIFO with no writer would otherwise block forever.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return open_error(path, role, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    char q[ATLAS_QUOTE_PATH_BYTES];
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot stat %s: %s",
                             atlas_quote_path(path, q, sizeof(q)), role,
                             atlas_strerror(err, text, sizeof(text)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    char q[ATLAS_QUOTE_PATH_BYTES];
    return atlas_status_make(
        ATLAS_STATUS_INVALID_ARGUMENT, "%s: %s is %s, not a regular file",
        atlas_quote_path(path, q, sizeof(q)), role, kind_of(st.st_mode));
  }
  *out_fd = fd;
  if (out_identity != NULL) *out_identity = identity_of(&st);
  return ATLAS_OK;
}

atlas_status atlas_file_pread_exact(int fd, const char *path, void *dst,
                                    size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n =
        pread(fd, (char *)dst + done, bytes - done, (off_t)(offset + done));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      int err = errno;  // before atlas_quote_path
      char q[ATLAS_QUOTE_PATH_BYTES];
      atlas_quote_path(path, q, sizeof(q));
      if (n < 0) {
        char text[ATLAS_STRERROR_BYTES];
        return atlas_status_make(ATLAS_STATUS_IO,
                                 "%s: reading %zu bytes at offset %llu: %s", q,
                                 bytes, (unsigned long long)offset,
                                 atlas_strerror(err, text, sizeof(text)));
      }
      return atlas_status_make(
          ATLAS_STATUS_DATA_LOSS,
          "%s: the file ended at byte %llu while reading %zu bytes at offset "
          "%llu: it changed size during the load",
          q, (unsigned long long)(offset + done), bytes,
          (unsigned long long)offset);
    }
    done += (size_t)n;
  }
  return ATLAS_OK;
}

atlas_status atlas_file_check_unchanged(int fd, const char *path,
                                        const atlas_file_identity *identity) {
  struct stat st;
  char q[ATLAS_QUOTE_PATH_BYTES];
  if (fstat(fd, &st) != 0) {
    int err = errno;  // before atlas_quote_path
    char text[ATLAS_STRERROR_BYTES];
    return atlas_status_make(ATLAS_STATUS_IO, "%s: cannot stat: %s",
                             atlas_quote_path(path, q, sizeof(q)),
                             atlas_strerror(err, text, sizeof(text)));
  }
  atlas_file_identity now = identity_of(&st);
  if (now.size != identity->size) {
    return atlas_status_make(
        ATLAS_STATUS_FAILED_PRECONDITION,
        "%s: the file changed size from %llu to %llu bytes after it was "
        "opened (written while in use)",
        atlas_quote_path(path, q, sizeof(q)),
        (unsigned long long)identity->size, (unsigned long long)now.size);
  }
  if (now.mtime_sec != identity->mtime_sec ||
      now.mtime_nsec != identity->mtime_nsec ||
      now.ctime_sec != identity->ctime_sec ||
      now.ctime_nsec != identity->ctime_nsec) {
    return atlas_status_make(ATLAS_STATUS_FAILED_PRECONDITION,
                             "%s: the file was modified after it was opened "
                             "(its modification time changed)",
                             atlas_quote_path(path, q, sizeof(q)));
  }
  return ATLAS_OK;
}

atlas_status atlas_file_read_small(const char *path, const char *role,
                                   uint64_t max_bytes, char **out_data,
                                   size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  int fd = -1;
  atlas_file_identity id;
  ATLAS_RETURN_IF_ERROR(atlas_file_open_regular(path, role, &fd, &id));
  char q[ATLAS_QUOTE_PATH_BYTES];
  if (id.size > max_bytes) {
    close(fd);
    return atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                             "%s: %llu bytes is too large for %s (limit %llu)",
                             atlas_quote_path(path, q, sizeof(q)),
                             (unsigned long long)id.size, role,
                             (unsigned long long)max_bytes);
  }
  char *data = malloc((size_t)id.size + 1);
  if (data == NULL) {
    close(fd);
    return atlas_status_make(
        ATLAS_STATUS_OUT_OF_MEMORY, "%s: out of host memory reading %llu bytes",
        atlas_quote_path(path, q, sizeof(q)), (unsigned long long)id.size);
  }
  atlas_status status =
      atlas_file_pread_exact(fd, path, data, (size_t)id.size, 0);
  if (status == ATLAS_OK) {
    // Growing is a change too: one byte more than fstat said must not exist.
    char extra;
    ssize_t n = pread(fd, &extra, 1, (off_t)id.size);
    if (n > 0) {
      status = atlas_status_make(ATLAS_STATUS_DATA_LOSS,
                                 "%s: the file grew while it was read",
                                 atlas_quote_path(path, q, sizeof(q)));
    }
  }
  close(fd);
  if (status != ATLAS_OK) {
    free(data);
    return status;
  }
  data[id.size] = '\0';
  *out_data = data;
  *out_size = (size_t)id.size;
  return ATLAS_OK;
}

const char *atlas_quote_n(const char *s, size_t n, char *buf, size_t size) {
  return atlas_escape(s, n, ATLAS_ESCAPE_BACKSLASH, ATLAS_QUOTE_SHOWN, buf,
                      size);
}

const char *atlas_quote(const char *s, char *buf, size_t size) {
  return atlas_quote_n(s, s != NULL ? strlen(s) : 0, buf, size);
}

const char *atlas_quote_json_error(const char *text, char *buf, size_t size) {
  if (text == NULL) text = "";
  const char *near = strstr(text, " near ");
  size_t n = near != NULL ? (size_t)(near - text) : strlen(text);
  return atlas_escape(text, n, 0, ATLAS_QUOTE_SHOWN, buf, size);
}

const char *atlas_quote_path(const char *path, char *buf, size_t size) {
  return atlas_escape(path, path != NULL ? strlen(path) : 0,
                      ATLAS_ESCAPE_BACKSLASH, ATLAS_QUOTE_PATH_SHOWN, buf,
                      size);
}

// strerror_r is glibc's where _GNU_SOURCE is defined, as in this file
// (char *: the text, in buf or a constant string), else the XSI one (int: 0
// or an error number, the text in buf); atlas_strerror takes whichever the
// headers declare, so a change of feature macros cannot misread it.
static const char *strerror_gnu(const char *text, const char *buf, size_t n,
                                int err) {
  (void)buf;
  (void)n;
  (void)err;
  return text;
}

static const char *strerror_xsi(int rc, char *buf, size_t n, int err) {
  // EINVAL (an unknown number) may leave buf empty: strerror's wording then.
  // ERANGE leaves as much of the text as fits.
  if (rc != 0 && (rc != ERANGE || buf[0] == '\0')) {
    (void)snprintf(buf, n, "Unknown error %d", err);
  }
  return buf;
}

const char *atlas_strerror(int err, char *buf, size_t n) {
  if (buf == NULL || n == 0) return "";
  buf[0] = '\0';
  return _Generic(strerror_r(err, buf, n), char *: strerror_gnu,
                  int: strerror_xsi)(strerror_r(err, buf, n), buf, n, err);
}
