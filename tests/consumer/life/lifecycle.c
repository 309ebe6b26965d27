#include "life/lifecycle.h"

#include <signal.h>

#include "lint/atlas_static.h"

// Set by the SIGTERM handler, read by the main loop: the process's relation to its exit, which no
// request or model owns. This workspace's lifecycle file is life/lifecycle.c (lifecycle_files).
ATLAS_STATIC(LIFECYCLE) static volatile sig_atomic_t g_stop_requested;

static void on_term(int sig) {
  (void)sig;
  g_stop_requested = 1;
}

int life_install(void) { return signal(SIGTERM, on_term) == SIG_ERR ? -1 : 0; }

int life_should_stop(void) { return g_stop_requested != 0; }
