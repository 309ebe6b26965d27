// Reading input files without ever blocking or faulting.
//
// Every open uses O_NONBLOCK and fstat before any read, so a FIFO, a
// directory, a device, a socket or a dangling symbolic link is an error that
// names exactly which, never a hang. Data is read with pread (never mmap):
// a file that shrinks while it is read is an error naming the file, not a
// SIGBUS. The identity a file had when opened (device, inode, size, times) is
// kept so a change during a load can be detected afterwards.
#ifndef ATLAS_RUNTIME_FILE_READ_H_
#define ATLAS_RUNTIME_FILE_READ_H_

#include <stddef.h>
#include <stdint.h>

#include "atlas/runtime/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// What identifies the contents of an open file.
typedef struct atlas_file_identity {
  uint64_t dev, ino, size;
  int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
} atlas_file_identity;

// Opens `path` read-only for a regular file. `role` says what the file is
// for in messages ("config.json", "safetensors file"). Errors say which kind
// of non-regular file it is (FIFO, directory, character or block device,
// socket) or that it is a dangling symbolic link (naming the target).
ATLAS_MUST_USE atlas_status
atlas_file_open_regular(const char *path, const char *role, int *out_fd,
                        atlas_file_identity *out_identity);

// Reads exactly `bytes` at `offset`. A short read is DATA_LOSS naming the
// file: it changed size while being read.
ATLAS_MUST_USE atlas_status atlas_file_pread_exact(int fd, const char *path,
                                                   void *dst, size_t bytes,
                                                   uint64_t offset);

// FAILED_PRECONDITION naming the file when its size or times differ from
// `identity` (it was written or replaced in place since it was opened).
ATLAS_MUST_USE atlas_status atlas_file_check_unchanged(
    int fd, const char *path, const atlas_file_identity *identity);

// Reads a whole small file (a JSON config or index) of at most `max_bytes`
// into a malloc'd buffer (NUL-terminated; *out_size excludes the NUL).
ATLAS_MUST_USE atlas_status atlas_file_read_small(const char *path,
                                                  const char *role,
                                                  uint64_t max_bytes,
                                                  char **out_data,
                                                  size_t *out_size);

// Writes `s` (at most `n` bytes of it) into buf for a message, escaped by
// atlas_escape (runtime/base/escape.h: controls, backslashes and bytes that are
// not UTF-8 as \xNN), cut to ATLAS_QUOTE_SHOWN bytes of input with
// "...(N more bytes)". Returns buf.
#define ATLAS_QUOTE_SHOWN 200
#define ATLAS_QUOTE_BYTES (4 * ATLAS_QUOTE_SHOWN + 48)
const char *atlas_quote_n(const char *s, size_t n, char *buf, size_t size);
const char *atlas_quote(const char *s, char *buf, size_t size);
// For paths (which the user typed, but may end in a name from a file):
// escaped the same way, cut at ATLAS_QUOTE_PATH_SHOWN bytes.
#define ATLAS_QUOTE_PATH_SHOWN 1024
#define ATLAS_QUOTE_PATH_BYTES (4 * ATLAS_QUOTE_PATH_SHOWN + 48)
const char *atlas_quote_path(const char *path, char *buf, size_t size);
// A JSON parser's error text (jansson's json_error_t.text) for a message,
// without the "near '...'" part that quotes the file's own bytes: a message
// says where (line, column) and what, never what a file says (a config may be
// a symbolic link to anything). Escaped and cut as atlas_quote.
const char *atlas_quote_json_error(const char *text, char *buf, size_t size);

// strerror(err)'s text without strerror's buffer, which POSIX lets another
// thread's call overwrite (weights upload on worker threads): the text goes
// to buf (n > 0 bytes; ATLAS_STRERROR_BYTES hold every message) or is a
// constant string; returns the text either way, valid while buf lives.
#define ATLAS_STRERROR_BYTES 128
const char *atlas_strerror(int err, char *buf, size_t n);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ATLAS_RUNTIME_FILE_READ_H_
