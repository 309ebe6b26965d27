// The standard streams of a command-line tool (see cli_stdio.h).
#include "atlas/tools/atlas/cli_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "atlas/runtime/base/file_read.h"
#include "atlas/tools/atlas/cli_options.h"

void atlas_cli_keep_standard_fds(void) {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (got >= 0 && got != fd) close(got);
    }
  }
}

int atlas_cli_finish_stdout(const char *program, int status) {
  bool failed = fflush(stdout) != 0 || ferror(stdout);
  int err = errno;
  if (fclose(stdout) != 0 && !failed) {
    failed = true;
    err = errno;
  }
  if (!failed) return status;
  char text[ATLAS_STRERROR_BYTES];
  fprintf(stderr, "%s: writing the standard output failed: %s\n", program,
          atlas_strerror(err, text, sizeof(text)));
  return status == ATLAS_CLI_EXIT_OK ? ATLAS_CLI_EXIT_FAILURE : status;
}

_Static_assert(ATLAS_CLI_STRERROR_BYTES >= ATLAS_STRERROR_BYTES,
               "a buffer of ATLAS_CLI_STRERROR_BYTES holds every message");

const char *atlas_cli_strerror(int err, char *buf, size_t n) {
  return atlas_strerror(err, buf, n);
}
