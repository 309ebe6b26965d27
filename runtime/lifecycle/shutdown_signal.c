// The shutdown flag (shutdown_signal.h).
#define _POSIX_C_SOURCE 200809L  // sigaction
#include "atlas/runtime/lifecycle/shutdown_signal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "lint/atlas_static.h"

// LIFECYCLE: the number of the shutdown signal that arrived (0: none). A
// signal handler has no carrier to write into, and this belongs to the
// process's exit, not to any model: an integer, never a pointer.
ATLAS_STATIC(LIFECYCLE) static volatile sig_atomic_t g_shutdown_signal;

static void on_shutdown_signal(int sig) { g_shutdown_signal = sig; }

atlas_status atlas_lifecycle_shutdown_install(void) {
  static const int kSignals[] = {SIGTERM, SIGINT};
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_shutdown_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], &sa, NULL) != 0) {
      return atlas_status_make(
          ATLAS_STATUS_IO, "sigaction(%s) failed (errno %d)",
          kSignals[i] == SIGTERM ? "SIGTERM" : "SIGINT", errno);
    }
  }
  return ATLAS_OK;
}

bool atlas_lifecycle_shutdown_requested(void) { return g_shutdown_signal != 0; }

int atlas_lifecycle_shutdown_signal(void) { return (int)g_shutdown_signal; }
