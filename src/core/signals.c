/* signals.c - keeping the profile of a killed or crashing run.
 *
 * Termination signals (the `signals` setting; SIGTERM, SIGINT, SIGXCPU and
 * SIGUSR1 by default, what batch systems send at a time limit): the handler
 * only writes the signal number to a pipe. A watcher thread, in normal
 * (not signal) context, stops recording, finalizes every active manager to
 * its HDF5 file with the calls still open ended there (cut short), and then
 * re-raises the signal with its default action. An ignored signal stays
 * ignored, and a handler of the application's is called (chained) by ours
 * and keeps the run going: the program finalizes it, as it would have.
 *
 * Under MPI the watcher cannot finalize (finalize is collective, and the
 * other ranks are being killed too): each rank spills instead, to
 * <file_path>.rank<R>.spill, with its rank, and `scope-profiler recover`
 * given all of them writes the job's one file. A finalize of the program's
 * may be under way then, stuck in a collective with ranks that died: the
 * watcher waits for its lock a bounded time only, then spills beside it
 * (mpi_spill); a finalize waits for a spill under way before it rewrites
 * the buffers, and a spill that comes later leaves them out (spill.c).
 *
 * Fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL; `crash_spill`):
 * HDF5 cannot run in a signal handler, so the handler writes the raw
 * per-thread buffers to <file_path>.spill with write(2) (spill.c), restores
 * the previous action and re-raises. `scope-profiler recover` turns the spill
 * into the HDF5 file. SIGKILL cannot be caught: nothing survives it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/mpi_hooks.h"
#include "core/spill.h"

static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction old_action[65];
static volatile sig_atomic_t ours[65];
static int pipe_fd[2] = {-1, -1};
static pthread_t watcher_thread;
static int watcher_running;

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL};

/* "SIGTERM" for SIGTERM (glibc's abbreviations); NULL for no signal. One
 * buffer per signal: the watcher and recovery name few, and always alike. */
const char *sp__signal_name(int sig) {
  static char names[65][24];
  const char *a = sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
  if (!a) return NULL;
  snprintf(names[sig], sizeof names[sig], "SIG%s", a);
  return names[sig];
}

static void chain(int sig, siginfo_t *si, void *uc) {
  const struct sigaction *o = &old_action[sig];
  if (o->sa_flags & SA_SIGINFO) {
    if (o->sa_sigaction) o->sa_sigaction(sig, si, uc);
  } else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) {
    o->sa_handler(sig);
  }
}

static void on_terminate(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  unsigned char b = (unsigned char)sig;
  /* Tell the watcher first: an application handler that exits must not
   * keep the profile from being asked for. */
  if (write(pipe_fd[1], &b, 1) < 0) { /* nothing an async-signal handler can do */ }
  chain(sig, si, uc);
  errno = saved;
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  (void)si;
  (void)uc;
  int saved = errno;
  for (int i = 0; i < SP_I_MAX_MANAGERS; i++) {
    struct sp_manager *m = sp__live_manager(i);
    if (m && m->run_active && m->have_cfg && m->cfg.crash_spill) {
      __atomic_store_n(&m->hot.state, SP_I_STATE_OFF, __ATOMIC_RELAXED);
      sp__spill_write(m, sig);
    }
  }
  /* The previous action (the application's handler or the default core
   * dump) takes over when the signal is delivered again. */
  sigaction(sig, &old_action[sig], NULL);
  ours[sig] = 0;
  raise(sig);
  errno = saved;
}

/* How long the watcher waits for a finalize under way before it spills
 * alongside it (a collective the dying job never completes would keep
 * the lock forever). */
#define SPILL_LOCK_WAIT_S 2

/* Under MPI: the rank's spill, never racing its finalize. With the lock,
 * finalize is not running (a run it finished needs no spill). Without it
 * within the bound, finalize holds it, in a collective or still writing:
 * the spill reads the buffers beside it, and finalize waits for it before
 * it rewrites them; one that has begun to (its file is then written, or
 * cannot be) is not waited for: the spill leaves the buffers out and says
 * how many calls they held (sp__spill_write_to). */
static void mpi_spill(struct sp_manager *m, int sig) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += SPILL_LOCK_WAIT_S;
  int rc;
  while ((rc = pthread_mutex_timedlock(&m->fin_lock, &until)) == EINTR) {
  }
  if (rc == 0) {
    if (m->run_active) sp__spill_write(m, sig);
    pthread_mutex_unlock(&m->fin_lock);
    return;
  }
  sp__spill_write(m, sig);
}

static void *watch(void *unused) {
  (void)unused;
  for (;;) {
    /* Every second without a signal, a clock anchor for each run: the
     * run's map follows the monotonic clock however long it lasts. */
    struct pollfd pfd = {pipe_fd[0], POLLIN, 0};
    int ready = poll(&pfd, 1, 1000);
    if (ready == 0) {
      sp__clock_note_all();
      continue;
    }
    if (ready < 0 && errno == EINTR) continue;
    unsigned char b;
    ssize_t r = read(pipe_fd[0], &b, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return NULL;
    int sig = b;
    const struct sigaction *o = &old_action[sig];
    /* The default action ends the process: the run is cut short, its open
     * calls end now. An application's handler (already run, chained) keeps
     * the program going: its run goes on and is the program's to finalize
     * (or the exit hook's); finalizing here would race with that finalize
     * and leave whichever came second in the file. */
    int terminate = !(o->sa_flags & SA_SIGINFO) && o->sa_handler == SIG_DFL;
    const char *name = sp__signal_name(sig);
    /* A manager the program destroys meanwhile (its own end racing the
     * signal) is freed only after its cut: destroy waits on the registry. */
    if (terminate) sp__live_hold();
    for (int i = 0; i < SP_I_MAX_MANAGERS && terminate; i++) {
      struct sp_manager *m = sp__live_manager(i);
      if (!m || !m->run_active || m->forked_child) continue;
      /* Stop recording and give calls in flight on other threads a moment
       * to leave begin/end before their buffers are read. */
      __atomic_store_n(&m->hot.state, SP_I_STATE_OFF, __ATOMIC_RELEASE);
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
      if (sp__mpi_ops && sp__mpi_ops->in_use()) {
        mpi_spill(m, sig); /* <file_path>.rank<R>.spill (setup named it) */
      } else {
        (void)sp__finalize_cut(m, name ? name : "a signal");
      }
      /* Recording stays off: the process dies of the signal next, and a
       * manager armed again here would be freed by a destroy waiting for
       * this cut while a thread records into it (review11 F3). */
    }
    if (terminate) sp__live_release();
    if (terminate) {
      /* The default action of these signals ends the process. */
      sigaction(sig, o, NULL);
      ours[sig] = 0;
      kill(getpid(), sig);
    }
  }
}

static int install(int sig, void (*fn)(int, siginfo_t *, void *)) {
  if (sig <= 0 || sig >= 65 || ours[sig]) return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &old_action[sig]) != 0) return -1;
  if (!(old_action[sig].sa_flags & SA_SIGINFO) && old_action[sig].sa_handler == SIG_IGN &&
      fn == on_terminate) {
    sigaction(sig, &old_action[sig], NULL); /* an ignored signal stays ignored */
    return 0;
  }
  ours[sig] = 1;
  return 0;
}

sp_status sp__signals_install(const struct sp_config *cfg) {
  pthread_mutex_lock(&sig_lock);
  sp_status st = SP_OK;
  const char *const *list = sp_config_signals(cfg);
  if (list && list[0] && !watcher_running) {
    if (pipe2(pipe_fd, O_CLOEXEC) != 0 || pthread_create(&watcher_thread, NULL, watch, NULL) != 0) {
      st = sp__set_error(SP_ERR_IO, "cannot start the signal watcher thread: %s; set signals = [] to "
                                    "run without signal handling", strerror(errno));
    } else {
      pthread_detach(watcher_thread);
      watcher_running = 1;
    }
  }
  for (size_t i = 0; st == SP_OK && list && list[i]; i++) {
    int sig = sp__signal_from_name(list[i]);
    if (!sig)
      st = sp__set_error(SP_ERR_INVALID_VALUE,
                         "signals: unknown signal \"%s\"; use names such as SIGTERM, SIGINT, SIGXCPU, SIGUSR1, "
                         "SIGUSR2, SIGHUP", list[i]);
    else if (install(sig, on_terminate) != 0)
      st = sp__set_error(SP_ERR_IO, "cannot install a handler for %s: %s", list[i], strerror(errno));
  }
  if (st == SP_OK && cfg->crash_spill)
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) install(fatal_signals[i], on_fatal);
  pthread_mutex_unlock(&sig_lock);
  return st;
}

/* The watcher thread does not survive fork(): the child starts it again at
 * its own setup. */
void sp__signals_after_fork_child(void) {
  pthread_mutex_init(&sig_lock, NULL);
  watcher_running = 0;
  if (pipe_fd[0] >= 0) close(pipe_fd[0]);
  if (pipe_fd[1] >= 0) close(pipe_fd[1]);
  pipe_fd[0] = pipe_fd[1] = -1;
  for (int s = 1; s < 65; s++)
    if (ours[s]) {
      sigaction(s, &old_action[s], NULL);
      ours[s] = 0;
    }
}
