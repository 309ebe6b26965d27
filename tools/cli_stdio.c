// The standard streams of a command-line tool (see cli_stdio.h).
#include "atlas/tools/cli_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atlas/tools/cli_options.h"

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
  fprintf(stderr, "%s: writing the standard output failed: %s\n", program,
          strerror(err));
  return status == ATLAS_CLI_EXIT_OK ? ATLAS_CLI_EXIT_FAILURE : status;
}
