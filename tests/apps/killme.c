/* killme.c - an instrumented program for the signal tests: it records
 * `work` calls, prints "ready N" once N calls are complete, then either keeps
 * working until a signal arrives (--wait) or raises a signal itself
 * (--raise SIG, after --pause-ms MS). With --app-handler it installs its own SIGUSR1 handler
 * before setup, which must keep working (chained), and then finishes
 * normally. Output file: SCOPE_PROFILER_FILE_PATH (default killme.h5). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scope_profiler.h"

static volatile sig_atomic_t app_handler_ran;
static void app_handler(int sig) {
  (void)sig;
  app_handler_ran = 1;
}

static void work(int n) {
  SP_REGION("work");
  volatile double x = 0;
  for (int i = 0; i < n; i++) x += i * 0.5;
}

int main(int argc, char **argv) {
  int ready_after = 1000, raise_sig = 0, app = 0, pause_ms = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ready") && i + 1 < argc) ready_after = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--raise") && i + 1 < argc) raise_sig = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--app-handler")) app = 1;
    else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) pause_ms = atoi(argv[++i]);
  }
  if (app) signal(SIGUSR1, app_handler);
  /* Background jobs of a non-interactive shell start with SIGINT ignored,
   * and an ignored signal stays ignored under the profiler: restore it. */
  signal(SIGINT, SIG_DFL);
  if (!getenv("SCOPE_PROFILER_FILE_PATH")) setenv("SCOPE_PROFILER_FILE_PATH", "killme.h5", 1);
  if (sp_setup(NULL) != SP_OK) {
    fprintf(stderr, "killme: setup: %s\n", sp_last_error());
    return 3;
  }
  for (int i = 0; i < ready_after; i++) work(100);
  printf("ready %d\n", ready_after);
  fflush(stdout);
  if (raise_sig) {
    /* a moment for the stream writer to finish what it has (a streaming run) */
    struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000};
    if (pause_ms) nanosleep(&pause, NULL);
    SP_REGION("crashing");
    if (raise_sig == SIGSEGV) {
      volatile int *p = NULL;
      *p = 1; /* a real fault, not just raise() */
    }
    raise(raise_sig);
    return 4; /* not reached for fatal signals */
  }
  /* Wait for a signal, recording as we go. */
  for (int i = 0; i < 20000 && !(app && app_handler_ran); i++) {
    work(100);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (app) {
    printf("app handler ran: %d\n", (int)app_handler_ran);
    for (int i = 0; i < 10; i++) work(100);
    sp_finalize(NULL, NULL);
    return 0;
  }
  return 5; /* no signal came */
}
