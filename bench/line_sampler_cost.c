/* line_sampler_cost.c - what one line-profile sample costs, and whose cost
 * it is: the kernel's and the VM's (the clock and the signal) or the
 * library's handler (src/probes/line_sampler.c).
 *
 *   build/bench/line_sampler_cost [--rate HZ] [--work-ms MS] [--reps R]
 *
 * The same fixed work (a loop calibrated to about MS ms of thread CPU time)
 * runs under five cases, interleaved, R times each: no sampling; each clock
 * (perf_event task-clock, POSIX CPU-time timer) at HZ delivering SIGPROF to
 * an empty handler that only counts; and each clock driving the library's
 * sampler with its real handler. Thread CPU time of the work, medians:
 *   clock + signal  (empty - off) / signals     the kernel's (and VM's) share
 *   our handler     (sampler - empty) / samples what the library adds
 * The handler's own instructions are counted with callgrind
 * (`valgrind --tool=callgrind --toggle-collect=on_sigprof ... --case timer`).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probes/line_sampler.h"

static volatile uint64_t sink;
static volatile long signals;

static int64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static void work(uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++) sink += i ^ (sink >> 3);
}

static void count_signal(int sig) {
  (void)sig;
  signals++;
}

static uint32_t always_one(void *ctx) {
  (void)ctx;
  return 1;
}

/* A bare clock of the given kind on this thread, SIGPROF to count_signal. */
struct bare {
  int fd;
  timer_t timer;
  int have_timer;
};

static int bare_arm(struct bare *b, int perf, int rate) {
  memset(b, 0, sizeof *b);
  b->fd = -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = count_signal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGPROF, &sa, NULL);
  pid_t tid = (pid_t)syscall(SYS_gettid);
  long period = 1000000000L / rate;
  if (perf) {
    struct perf_event_attr a = {.size = sizeof a, .type = PERF_TYPE_SOFTWARE,
                                .config = PERF_COUNT_SW_TASK_CLOCK, .sample_period = (uint64_t)period,
                                .exclude_kernel = 1, .exclude_hv = 1, .wakeup_events = 1, .disabled = 1};
    struct f_owner_ex owner = {F_OWNER_TID, tid};
    b->fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return b->fd < 0 || fcntl(b->fd, F_SETFL, O_ASYNC) || fcntl(b->fd, F_SETSIG, SIGPROF) ||
                   fcntl(b->fd, F_SETOWN_EX, &owner) || ioctl(b->fd, PERF_EVENT_IOC_REFRESH, 1 << 30)
               ? -1
               : 0;
  }
  struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGPROF};
  ev._sigev_un._tid = tid;
  struct itimerspec it = {{0, period}, {0, period}};
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &b->timer) != 0) return -1;
  b->have_timer = 1;
  return timer_settime(b->timer, 0, &it, NULL);
}

static void bare_disarm(struct bare *b) {
  if (b->fd >= 0) close(b->fd);
  if (b->have_timer) timer_delete(b->timer);
  signal(SIGPROF, SIG_IGN);
  signal(SIGPROF, SIG_DFL);
}

enum { OFF, PERF_EMPTY, PERF_OURS, TIMER_EMPTY, TIMER_OURS, NCASES };
static const char *const names[NCASES] = {"off", "perf clock, empty handler", "perf clock, our sampler",
                                          "timer clock, empty handler", "timer clock, our sampler"};

/* One case: the work's thread CPU ns, and the signals (empty) or samples (ours). */
static int run_case(int c, int rate, uint64_t iters, int64_t *ns, long *events) {
  struct bare b;
  int perf = c == PERF_EMPTY || c == PERF_OURS, user = -1;
  if (c == PERF_EMPTY || c == TIMER_EMPTY) {
    signals = 0;
    if (bare_arm(&b, perf, rate) != 0) return -1;
  } else if (c != OFF) {
    struct sp_lp_params p = {.rate_hz = rate, .backend = perf ? SP_LP_PERF : SP_LP_TIMER,
                             .current_region = always_one};
    if (sp__lp_start(&p, &user) != SP_OK || sp__lp_thread_arm(user) != 0) {
      sp__lp_stop(user);
      return -1;
    }
  }
  int64_t t0 = cpu_ns();
  work(iters);
  *ns = cpu_ns() - t0;
  *events = 0;
  if (c == PERF_EMPTY || c == TIMER_EMPTY) {
    bare_disarm(&b);
    *events = signals;
  } else if (c != OFF) {
    struct sp_lp_entry *e = NULL;
    size_t n = 0;
    struct sp_lp_stats st;
    if (sp__lp_collect(user, &e, &n, &st, 1) == 0) *events = (long)st.samples;
    free(e);
    sp__lp_stop(user);
  }
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rate = 1000, work_ms = 300, reps = 9, only = -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--rate") && i + 1 < argc) rate = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--work-ms") && i + 1 < argc) work_ms = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) { /* one sampler case once (for callgrind) */
      i++;
      only = !strcmp(argv[i], "perf") ? PERF_OURS : !strcmp(argv[i], "timer") ? TIMER_OURS : -2;
    } else {
      fprintf(stderr, "usage: %s [--rate HZ] [--work-ms MS] [--reps R] [--case perf|timer]\n", argv[0]);
      return 2;
    }
  }
  if (rate < 1 || work_ms < 1 || reps < 1 || reps > 99 || only == -2) {
    fprintf(stderr, "line_sampler_cost: bad arguments\n");
    return 2;
  }
  /* Calibrate the loop to work_ms of thread CPU time. */
  uint64_t iters = 1000000;
  for (;;) {
    int64_t t0 = cpu_ns();
    work(iters);
    int64_t dt = cpu_ns() - t0;
    if (dt > 50000000) {
      iters = (uint64_t)((double)iters * work_ms * 1e6 / (double)dt);
      break;
    }
    iters *= 4;
  }
  if (only >= 0) {
    int64_t ns;
    long ev;
    if (run_case(only, rate, iters, &ns, &ev) != 0) return 3;
    printf("%s: %.1f ms, %ld samples\n", names[only], ns / 1e6, ev);
    return 0;
  }
  int64_t ns[NCASES][99];
  long ev[NCASES][99];
  int ok[NCASES] = {0};
  for (int r = 0; r < reps; r++)
    for (int c = 0; c < NCASES; c++) ok[c] += run_case(c, rate, iters, &ns[c][r], &ev[c][r]) == 0;
  double med[NCASES], evs[NCASES];
  printf("line sampler at %d Hz, %d ms of work, %d reps (medians of the work's thread CPU time)\n", rate,
         work_ms, reps);
  for (int c = 0; c < NCASES; c++) {
    if (ok[c] != reps) {
      printf("%-28s not available here\n", names[c]);
      med[c] = -1;
      continue;
    }
    int64_t sorted[99];
    memcpy(sorted, ns[c], (size_t)reps * sizeof *sorted);
    qsort(sorted, (size_t)reps, sizeof *sorted, cmp_i64);
    med[c] = (double)sorted[reps / 2];
    long total = 0;
    for (int r = 0; r < reps; r++) total += ev[c][r];
    evs[c] = (double)total / reps;
    printf("%-28s %8.2f ms  x%.3f  %7.1f %s/run\n", names[c], med[c] / 1e6, med[c] / med[OFF], evs[c],
           c == OFF ? "-" : (c == PERF_EMPTY || c == TIMER_EMPTY) ? "signals" : "samples");
  }
  for (int k = 0; k < 2; k++) {
    int e = k ? TIMER_EMPTY : PERF_EMPTY, o = k ? TIMER_OURS : PERF_OURS;
    if (med[e] < 0 || med[o] < 0 || evs[e] <= 0 || evs[o] <= 0) continue;
    printf("%s clock: clock + signal %.2f us per signal, our handler %.2f us per sample\n", k ? "timer" : "perf",
           (med[e] - med[OFF]) / evs[e] / 1e3, (med[o] - med[e]) / evs[o] / 1e3);
  }
  return 0;
}
