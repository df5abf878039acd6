/* line_sampler.c - per-thread CPU-time sampling of the program counter (see
 * line_sampler.h for the design).
 *
 * Signal safety: the handler reads only thread-local storage, the calling
 * thread's own table and two process-wide words (the state and the handler
 * count), calls clock_gettime and, for perf_event, ioctl: all async-signal-
 * safe. Tables are allocated and freed in ordinary context only. A table is
 * freed only after every clock is disarmed, SIGPROF's action is restored and
 * no handler is running (the handler raises the count before it reads the
 * state, so a stop that saw the count at zero cannot meet a handler that saw
 * the sampler running). A thread's pointer to its table is paired with the
 * sampler generation it belongs to, so a thread armed under an earlier
 * sampler never writes into freed memory.
 */
#include "probes/line_sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/error.h"

#if defined(__x86_64__)
#  define PC_OF(uc) ((uint64_t)((ucontext_t *)(uc))->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
#  define PC_OF(uc) ((uint64_t)((ucontext_t *)(uc))->uc_mcontext.pc)
#endif

#define DEFAULT_SLOTS 16384u

struct slot {
  uint64_t pc; /* 0 = empty */
  uint32_t region;
  uint32_t hits;
  uint64_t ns;
};

struct lp_thread {
  struct lp_thread *next;
  uint32_t gen;            /* the sampler generation this table belongs to; 0 = none */
  struct slot *slots;
  uint32_t mask, used, limit;
  int64_t last_cpu;        /* thread CPU ns at the previous sample (or arming) */
  uint64_t samples, outside, dropped, dropped_ns, max_ns;
  int perf_fd;             /* -1 unless sampled by perf_event */
  timer_t timer;
  int have_timer;
  int exited;
};

enum { ST_OFF, ST_RUNNING, ST_COLLECTING };

static int state = ST_OFF;  /* atomic */
static int in_handler;      /* atomic: handlers running now */
static uint32_t generation; /* bumped at every start */
static struct sp_lp_params params;
static struct sigaction old_action;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lp_thread *threads;
static pthread_key_t exit_key;
static int exit_key_made;
static uint32_t nperf, ntimer, nfail;

/* One pointer of thread-local storage (the library's TLS block is kept
 * small so that it can be dlopened). The structure it points to is never
 * freed: its generation says whether its table belongs to the running
 * sampler. */
static __thread __attribute__((tls_model("initial-exec"))) struct lp_thread *self;

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t mix(uint64_t pc, uint32_t region) {
  uint64_t x = pc ^ ((uint64_t)region << 40) ^ ((uint64_t)region * UINT64_C(0x9e3779b97f4a7c15));
  x ^= x >> 31;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 29;
  return x;
}

static void record(struct lp_thread *t, uint64_t pc, uint32_t region, uint64_t ns) {
  uint32_t i = (uint32_t)mix(pc, region) & t->mask;
  for (;;) {
    struct slot *s = &t->slots[i];
    if (s->pc == pc && s->region == region) {
      s->hits++;
      s->ns += ns;
      return;
    }
    if (s->pc == 0) {
      if (t->used >= t->limit) break;
      t->used++;
      s->pc = pc;
      s->region = region;
      s->hits = 1;
      s->ns = ns;
      return;
    }
    i = (i + 1) & t->mask;
  }
  t->dropped++;
  t->dropped_ns += ns;
}

#ifdef PC_OF
static void on_sigprof(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  int saved_errno = errno;
  __atomic_add_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
  struct lp_thread *t = self;
  if (__atomic_load_n(&state, __ATOMIC_SEQ_CST) != ST_OFF && t &&
      __atomic_load_n(&t->gen, __ATOMIC_SEQ_CST) == __atomic_load_n(&generation, __ATOMIC_SEQ_CST)) {
    /* perf_event: POLL_HUP is the last overflow the refresh allowed. */
    if (t->perf_fd >= 0 && si && si->si_code == POLL_HUP) ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1 << 30);
    if (__atomic_load_n(&state, __ATOMIC_SEQ_CST) == ST_RUNNING) {
      int64_t now = thread_cpu_ns();
      uint64_t ns = now > t->last_cpu ? (uint64_t)(now - t->last_cpu) : 0;
      t->last_cpu = now;
      if (ns > t->max_ns) t->max_ns = ns;
      uint32_t r = params.current_region ? params.current_region(params.ctx) : 0;
      if (!r) r = params.outside_region;
      if (r) {
        t->samples++;
        record(t, PC_OF(uc), r, ns);
      } else {
        t->outside++;
      }
    }
  }
  __atomic_sub_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
  errno = saved_errno;
}
#endif

static void wait_handlers(void) {
  while (__atomic_load_n(&in_handler, __ATOMIC_SEQ_CST)) sched_yield();
}

static void disarm(struct lp_thread *t) {
  if (t->perf_fd >= 0) {
    ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    close(t->perf_fd);
    t->perf_fd = -1;
  }
  if (t->have_timer) {
    timer_delete(t->timer);
    t->have_timer = 0;
  }
}

/* Thread exit: its clock dies with it, but the timer id and the fd stay
 * until deleted; the samples stay for the next collect. */
static void on_thread_exit(void *p) {
  struct lp_thread *t = p;
  pthread_mutex_lock(&threads_lock);
  if (self == t && t->gen == generation) {
    disarm(t);
    t->exited = 1;
  }
  pthread_mutex_unlock(&threads_lock);
}

/* A forked child has none of the parent's clocks (timers are not
 * inherited; perf fds are, but count the parent's thread): it stands down,
 * and its copies of the tables are the parent's business. */
static void after_fork_child(void) {
  pthread_mutex_init(&threads_lock, NULL);
  if (__atomic_load_n(&state, __ATOMIC_RELAXED) == ST_OFF) return;
  for (struct lp_thread *t = threads; t; t = t->next)
    if (t->perf_fd >= 0) close(t->perf_fd);
  threads = NULL; /* leaked on purpose: a handler may still look at self */
  __atomic_store_n(&state, ST_OFF, __ATOMIC_SEQ_CST);
  sigaction(SIGPROF, &old_action, NULL);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

sp_status sp__lp_start(const struct sp_lp_params *p) {
#ifndef PC_OF
  (void)p;
  return sp__set_error(SP_ERR_UNSUPPORTED, "line profiling: reading the program counter of an interrupted "
                       "thread is not implemented for this architecture (x86-64 and AArch64 are)");
#else
  if (__atomic_load_n(&state, __ATOMIC_SEQ_CST) != ST_OFF)
    return sp__set_error(SP_ERR_ALREADY_ACTIVE, "line profiling is already sampling this process (another "
                         "manager has use_line_profiler on); only one manager at a time can sample");
  if (p->rate_hz < 1 || p->rate_hz > SP_LP_MAX_RATE)
    return sp__set_error(SP_ERR_INVALID_VALUE, "line profiling: rate %d Hz is out of range; use 1 to %d",
                         p->rate_hz, SP_LP_MAX_RATE);
  uint32_t slots = p->table_slots ? p->table_slots : DEFAULT_SLOTS;
  if (slots < 16 || (slots & (slots - 1)))
    return sp__set_error(SP_ERR_INVALID_VALUE, "line profiling: %u table slots is not a power of two >= 16",
                         slots);
  struct sigaction cur;
  if (sigaction(SIGPROF, NULL, &cur) != 0)
    return sp__set_error(SP_ERR_UNSUPPORTED, "line profiling: cannot read SIGPROF's action: %s", strerror(errno));
  if ((cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction != NULL
                                  : (cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN))
    return sp__set_error(SP_ERR_CONFLICT, "line profiling needs SIGPROF, and the program (or another "
                         "profiler, e.g. gprof or gperftools) already handles it; run without that profiler, or "
                         "turn use_line_profiler off");
  pthread_once(&atfork_once, register_atfork);
  if (!exit_key_made) {
    if (pthread_key_create(&exit_key, on_thread_exit) != 0)
      return sp__set_error(SP_ERR_LIMIT, "line profiling: no thread-specific key left (pthread_key_create)");
    exit_key_made = 1;
  }
  params = *p;
  params.table_slots = slots;
  nperf = ntimer = nfail = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  __atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
  if (sigaction(SIGPROF, &sa, &old_action) != 0)
    return sp__set_error(SP_ERR_UNSUPPORTED, "line profiling: cannot install the SIGPROF handler: %s",
                         strerror(errno));
  __atomic_store_n(&state, ST_RUNNING, __ATOMIC_SEQ_CST);
  return SP_OK;
#endif
}

int sp__lp_running(void) { return __atomic_load_n(&state, __ATOMIC_SEQ_CST) != ST_OFF; }

static int arm_perf(struct lp_thread *t, pid_t tid) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = (uint64_t)(1000000000 / params.rate_hz);
  a.exclude_kernel = 1; /* allowed at perf_event_paranoid 2; samples are user PCs anyway */
  a.exclude_hv = 1;
  a.wakeup_events = 1;
  a.disabled = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return -1;
  struct f_owner_ex owner = {F_OWNER_TID, tid};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 << 30) != 0) {
    close(fd);
    return -1;
  }
  t->perf_fd = fd;
  return 0;
}

static int arm_timer(struct lp_thread *t, pid_t tid) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = tid;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t->timer) != 0) return -1;
  long period = 1000000000L / params.rate_hz;
  struct itimerspec it = {{period / 1000000000L, period % 1000000000L}, {period / 1000000000L, period % 1000000000L}};
  if (timer_settime(t->timer, 0, &it, NULL) != 0) {
    timer_delete(t->timer);
    return -1;
  }
  t->have_timer = 1;
  return 0;
}

int sp__lp_thread_arm(void) {
  if (__atomic_load_n(&state, __ATOMIC_SEQ_CST) == ST_OFF) return -1;
  uint32_t gen = __atomic_load_n(&generation, __ATOMIC_SEQ_CST);
  if (self && self->gen == gen) return 0;
  /* A structure of an earlier sampler is reused; its table was freed. */
  struct lp_thread *t = self ? self : calloc(1, sizeof *t);
  struct slot *s = t ? calloc(params.table_slots, sizeof *s) : NULL;
  if (!s) {
    if (t != self) free(t);
    __atomic_add_fetch(&nfail, 1, __ATOMIC_RELAXED);
    return -1;
  }
  memset(t, 0, sizeof *t);
  t->slots = s;
  t->mask = params.table_slots - 1;
  t->limit = params.table_slots / 4 * 3;
  t->perf_fd = -1;
  t->last_cpu = thread_cpu_ns();
  pthread_mutex_lock(&threads_lock);
  t->next = threads;
  threads = t;
  pthread_mutex_unlock(&threads_lock);
  /* Published before the clock starts: the first signal finds its table. */
  __atomic_store_n(&self, t, __ATOMIC_SEQ_CST);
  __atomic_store_n(&t->gen, gen, __ATOMIC_SEQ_CST);
  pthread_setspecific(exit_key, t);
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (params.backend != SP_LP_TIMER && arm_perf(t, tid) == 0) {
    __atomic_add_fetch(&nperf, 1, __ATOMIC_RELAXED);
    return 0;
  }
  if (params.backend != SP_LP_PERF && arm_timer(t, tid) == 0) {
    __atomic_add_fetch(&ntimer, 1, __ATOMIC_RELAXED);
    return 0;
  }
  __atomic_add_fetch(&nfail, 1, __ATOMIC_RELAXED);
  return -1;
}

const char *sp__lp_backend_name(void) {
  uint32_t p = __atomic_load_n(&nperf, __ATOMIC_RELAXED), t = __atomic_load_n(&ntimer, __ATOMIC_RELAXED);
  if (p && t) return "mixed";
  if (p) return "perf_event task-clock";
  if (t) return "timer";
  return NULL;
}

static int cmp_entry(const void *a, const void *b) {
  const struct sp_lp_entry *x = a, *y = b;
  if (x->region != y->region) return x->region < y->region ? -1 : 1;
  return x->pc < y->pc ? -1 : x->pc > y->pc;
}

int sp__lp_collect(struct sp_lp_entry **out, size_t *n, struct sp_lp_stats *stats, int reset) {
  *out = NULL;
  *n = 0;
  memset(stats, 0, sizeof *stats);
  int prev = ST_RUNNING;
  if (!__atomic_compare_exchange_n(&state, &prev, ST_COLLECTING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return prev == ST_OFF ? 0 : -1;
  wait_handlers();
  pthread_mutex_lock(&threads_lock);
  size_t total = 0;
  for (struct lp_thread *t = threads; t; t = t->next) total += t->used;
  struct sp_lp_entry *e = total ? malloc(total * sizeof *e) : NULL;
  int rc = total && !e ? -1 : 0;
  size_t k = 0;
  for (struct lp_thread *t = threads; t; t = t->next) {
    for (uint32_t i = 0; e && i <= t->mask; i++)
      if (t->slots[i].pc) e[k++] = (struct sp_lp_entry){t->slots[i].region, t->slots[i].pc, t->slots[i].hits, t->slots[i].ns};
    stats->samples += t->samples;
    stats->outside += t->outside;
    stats->dropped += t->dropped;
    stats->dropped_ns += t->dropped_ns;
    if (t->max_ns > stats->max_ns) stats->max_ns = t->max_ns;
    if (reset && rc == 0) {
      memset(t->slots, 0, (size_t)(t->mask + 1) * sizeof *t->slots);
      t->used = 0;
      t->samples = t->outside = t->dropped = t->dropped_ns = t->max_ns = 0;
    }
  }
  stats->threads_perf = nperf;
  stats->threads_timer = ntimer;
  stats->arm_failures = nfail;
  pthread_mutex_unlock(&threads_lock);
  __atomic_store_n(&state, ST_RUNNING, __ATOMIC_SEQ_CST);
  if (rc != 0) return rc;
  /* Threads share addresses: merge equal pairs. */
  if (k) qsort(e, k, sizeof *e, cmp_entry);
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if (m && e[m - 1].region == e[i].region && e[m - 1].pc == e[i].pc) {
      e[m - 1].hits += e[i].hits;
      e[m - 1].ns += e[i].ns;
    } else {
      e[m++] = e[i];
    }
  }
  *out = e;
  *n = m;
  return 0;
}

void sp__lp_stop(void) {
  if (__atomic_load_n(&state, __ATOMIC_SEQ_CST) == ST_OFF) return;
  __atomic_store_n(&state, ST_OFF, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&threads_lock);
  for (struct lp_thread *t = threads; t; t = t->next) disarm(t);
  pthread_mutex_unlock(&threads_lock);
  /* Signals already queued would now find SIGPROF's old action: with the
   * default one that kills the process, so keep ignoring until they are
   * gone. Setting SIG_IGN discards those pending. */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPROF, &ign, NULL);
  wait_handlers();
  sigaction(SIGPROF, &old_action, NULL);
  pthread_mutex_lock(&threads_lock);
  struct lp_thread *t = threads;
  threads = NULL;
  pthread_mutex_unlock(&threads_lock);
  /* The structures stay (threads' `self` point at them), marked as no
   * sampler's; a thread armed again reuses its own. Those of threads that
   * exited are freed: nothing points at them any more. */
  while (t) {
    struct lp_thread *next = t->next;
    __atomic_store_n(&t->gen, 0, __ATOMIC_SEQ_CST);
    free(t->slots);
    t->slots = NULL;
    if (t->exited) free(t);
    t = next;
  }
}
