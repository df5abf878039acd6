/* line_sampler.c - per-thread CPU-time sampling of the program counter (see
 * line_sampler.h for the design).
 *
 * Signal safety: the handler reads only thread-local storage, the calling
 * thread's own tables and process-wide words (each user's state and
 * generation, the handler count), calls clock_gettime and, for perf_event,
 * ioctl: all async-signal-safe. Tables are allocated and freed in ordinary
 * context only. A table is freed only after its user's state is off, its
 * bit is cleared from every thread's user mask and no handler is running
 * (the handler raises the count before it reads the mask and states, so a
 * stop that saw the count at zero cannot meet a handler that saw the table
 * live); a thread's clock is closed only under the same condition, once no
 * user is left on it. A table is paired with the generation of the user it
 * belongs to, so a table of an earlier user of the same id is never written.
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

/* One user's share of one thread. */
struct part {
  uint32_t gen; /* the user generation its table belongs to; 0 = none */
  struct slot *slots;
  uint32_t mask, used, limit;
  int64_t last_cpu; /* thread CPU ns at this user's previous sample (or arming) */
  uint64_t samples, outside, dropped, dropped_ns, max_ns;
};

enum { CLOCK_NONE, CLOCK_PERF, CLOCK_TIMER };

struct lp_thread {
  struct lp_thread *next;
  uint32_t users; /* atomic: bit k = user k's part is live */
  int clock;      /* CLOCK_*: the thread's one clock, shared by its users */
  int perf_fd;    /* -1 unless sampled by perf_event */
  timer_t timer;
  int exited;
  struct part part[SP_LP_MAX_USERS];
};

enum { ST_OFF, ST_RUNNING, ST_COLLECTING };

struct user {
  int state;    /* atomic */
  int in_use;   /* under ctl_lock: from start to the end of its stop */
  uint32_t gen; /* atomic */
  struct sp_lp_params p;
  uint32_t nperf, ntimer, nfail; /* atomic: threads it armed, by clock */
};

static struct user users[SP_LP_MAX_USERS];
static int installed;       /* atomic: our SIGPROF handler is in place */
static int in_handler;      /* atomic: handlers running now */
static uint32_t generation; /* under ctl_lock: the last user generation given out */
static int nusers;          /* under ctl_lock */
static struct sigaction old_action;
/* ctl_lock serializes start, collect and stop; threads_lock guards the
 * thread list and the tables' pointers (arming, collecting, freeing). */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lp_thread *threads;
static pthread_key_t exit_key;
static int exit_key_made;

/* One pointer of thread-local storage (the library's TLS block is kept
 * small so that it can be dlopened). The structure it points to is freed
 * only after its thread exited and no user has a table in it. */
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

static void record(struct part *t, uint64_t pc, uint32_t region, uint64_t ns) {
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
  uint32_t mask = t && __atomic_load_n(&installed, __ATOMIC_SEQ_CST) ? __atomic_load_n(&t->users, __ATOMIC_SEQ_CST) : 0;
  if (mask) {
    /* perf_event: POLL_HUP is the last overflow the refresh allowed. */
    if (t->perf_fd >= 0 && si && si->si_code == POLL_HUP) ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1 << 30);
    int64_t now = thread_cpu_ns();
    for (int k = 0; k < SP_LP_MAX_USERS; k++) {
      if (!(mask & (1u << k))) continue;
      struct user *u = &users[k];
      struct part *pt = &t->part[k];
      if (__atomic_load_n(&u->state, __ATOMIC_SEQ_CST) != ST_RUNNING ||
          __atomic_load_n(&pt->gen, __ATOMIC_SEQ_CST) != __atomic_load_n(&u->gen, __ATOMIC_SEQ_CST))
        continue;
      uint64_t ns = now > pt->last_cpu ? (uint64_t)(now - pt->last_cpu) : 0;
      pt->last_cpu = now;
      if (ns > pt->max_ns) pt->max_ns = ns;
      uint32_t r = u->p.current_region ? u->p.current_region(u->p.ctx) : 0;
      if (!r) r = u->p.outside_region;
      if (r) {
        pt->samples++;
        record(pt, PC_OF(uc), r, ns);
      } else {
        pt->outside++;
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
  if (t->clock == CLOCK_TIMER) timer_delete(t->timer);
  t->clock = CLOCK_NONE;
}

/* Thread exit: its clock dies with it, but the timer id and the fd stay
 * until deleted; the tables stay for their users' next collect. */
static void on_thread_exit(void *p) {
  struct lp_thread *t = p;
  pthread_mutex_lock(&threads_lock);
  if (self == t) {
    disarm(t);
    t->exited = 1;
  }
  pthread_mutex_unlock(&threads_lock);
}

/* A forked child has none of the parent's clocks (timers are not
 * inherited; perf fds are, but count the parent's thread): it stands down,
 * and its copies of the tables are the parent's business. */
static void after_fork_child(void) {
  pthread_mutex_init(&ctl_lock, NULL);
  pthread_mutex_init(&threads_lock, NULL);
  if (!__atomic_load_n(&installed, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&installed, 0, __ATOMIC_SEQ_CST);
  for (struct lp_thread *t = threads; t; t = t->next)
    if (t->perf_fd >= 0) close(t->perf_fd);
  threads = NULL; /* leaked on purpose */
  self = NULL;    /* this thread starts afresh if armed again */
  for (int k = 0; k < SP_LP_MAX_USERS; k++) {
    __atomic_store_n(&users[k].state, ST_OFF, __ATOMIC_SEQ_CST);
    users[k].in_use = 0;
  }
  nusers = 0;
  sigaction(SIGPROF, &old_action, NULL);
}
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, after_fork_child); }

/* The first user's start: SIGPROF becomes ours. Under ctl_lock. */
static sp_status install(void) {
#ifndef PC_OF
  return sp__set_error(SP_ERR_UNSUPPORTED, "line profiling: reading the program counter of an interrupted "
                       "thread is not implemented for this architecture (x86-64 and AArch64 are)");
#else
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
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, &old_action) != 0)
    return sp__set_error(SP_ERR_UNSUPPORTED, "line profiling: cannot install the SIGPROF handler: %s",
                         strerror(errno));
  __atomic_store_n(&installed, 1, __ATOMIC_SEQ_CST);
  return SP_OK;
#endif
}

sp_status sp__lp_start(const struct sp_lp_params *p, int *id) {
  *id = -1;
  if (p->rate_hz < 1 || p->rate_hz > SP_LP_MAX_RATE)
    return sp__set_error(SP_ERR_INVALID_VALUE, "line profiling: rate %d Hz is out of range; use 1 to %d",
                         p->rate_hz, SP_LP_MAX_RATE);
  uint32_t slots = p->table_slots ? p->table_slots : DEFAULT_SLOTS;
  if (slots < 16 || (slots & (slots - 1)))
    return sp__set_error(SP_ERR_INVALID_VALUE, "line profiling: %u table slots is not a power of two >= 16",
                         slots);
  pthread_mutex_lock(&ctl_lock);
  int k = 0;
  while (k < SP_LP_MAX_USERS && users[k].in_use) k++;
  sp_status st = SP_OK;
  if (k == SP_LP_MAX_USERS)
    st = sp__set_error(SP_ERR_LIMIT, "line profiling: %d managers sample this process already, the most at "
                       "once; turn use_line_profiler off on one of them", SP_LP_MAX_USERS);
  else if (nusers == 0)
    st = install();
  if (st == SP_OK) {
    struct user *u = &users[k];
    u->in_use = 1;
    u->p = *p;
    u->p.table_slots = slots;
    __atomic_store_n(&u->nperf, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&u->ntimer, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&u->nfail, 0, __ATOMIC_RELAXED);
    if (++generation == 0) generation = 1;
    __atomic_store_n(&u->gen, generation, __ATOMIC_SEQ_CST);
    __atomic_store_n(&u->state, ST_RUNNING, __ATOMIC_SEQ_CST);
    nusers++;
    *id = k;
  }
  pthread_mutex_unlock(&ctl_lock);
  return st;
}

int sp__lp_running(void) { return __atomic_load_n(&installed, __ATOMIC_SEQ_CST) != 0; }

static int arm_perf(struct lp_thread *t, pid_t tid, int rate) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = (uint64_t)(1000000000 / rate);
  a.exclude_kernel = 1; /* allowed at perf_event_paranoid 2; samples are user PCs anyway */
  a.exclude_hv = 1;
  a.wakeup_events = 1;
  a.disabled = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return -1;
  struct f_owner_ex owner = {F_OWNER_TID, tid};
  t->perf_fd = fd; /* before the first signal can come */
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 << 30) != 0) {
    t->perf_fd = -1;
    close(fd);
    return -1;
  }
  return 0;
}

static int arm_timer(struct lp_thread *t, pid_t tid, int rate) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = tid;
  if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t->timer) != 0) return -1;
  long period = 1000000000L / rate;
  struct itimerspec it = {{period / 1000000000L, period % 1000000000L}, {period / 1000000000L, period % 1000000000L}};
  if (timer_settime(t->timer, 0, &it, NULL) != 0) {
    timer_delete(t->timer);
    return -1;
  }
  return 0;
}

int sp__lp_thread_arm(int k) {
  if (k < 0 || k >= SP_LP_MAX_USERS) return -1;
  struct user *u = &users[k];
  if (__atomic_load_n(&u->state, __ATOMIC_SEQ_CST) == ST_OFF) return -1;
  uint32_t gen = __atomic_load_n(&u->gen, __ATOMIC_SEQ_CST), bit = 1u << k;
  struct lp_thread *t = self;
  if (t && (__atomic_load_n(&t->users, __ATOMIC_SEQ_CST) & bit) && t->part[k].gen == gen) return 0;
  struct slot *s = calloc(u->p.table_slots, sizeof *s);
  if (!t && s && (t = calloc(1, sizeof *t))) {
    t->perf_fd = -1;
    pthread_mutex_lock(&threads_lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&threads_lock);
    __atomic_store_n(&self, t, __ATOMIC_SEQ_CST);
    pthread_setspecific(exit_key, t);
  }
  if (!s || !t) {
    free(s);
    __atomic_add_fetch(&u->nfail, 1, __ATOMIC_RELAXED);
    return -1;
  }
  pthread_mutex_lock(&threads_lock);
  /* A stop of this user since the check above must not find a table it
   * would never free. */
  if (__atomic_load_n(&u->state, __ATOMIC_SEQ_CST) == ST_OFF || __atomic_load_n(&u->gen, __ATOMIC_SEQ_CST) != gen) {
    pthread_mutex_unlock(&threads_lock);
    free(s);
    return -1;
  }
  struct part *pt = &t->part[k];
  free(pt->slots); /* an earlier generation's, if its stop did not meet it */
  memset(pt, 0, sizeof *pt);
  pt->slots = s;
  pt->mask = u->p.table_slots - 1;
  pt->limit = u->p.table_slots / 4 * 3;
  pt->last_cpu = thread_cpu_ns();
  /* Published before the clock starts: the first signal finds the table. */
  __atomic_store_n(&pt->gen, gen, __ATOMIC_SEQ_CST);
  __atomic_or_fetch(&t->users, bit, __ATOMIC_SEQ_CST);
  int clock = t->clock;
  if (clock == CLOCK_NONE && !t->exited) {
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (u->p.backend != SP_LP_TIMER && arm_perf(t, tid, u->p.rate_hz) == 0) clock = CLOCK_PERF;
    else if (u->p.backend != SP_LP_PERF && arm_timer(t, tid, u->p.rate_hz) == 0) clock = CLOCK_TIMER;
    t->clock = clock;
  }
  pthread_mutex_unlock(&threads_lock);
  __atomic_add_fetch(clock == CLOCK_PERF ? &u->nperf : clock == CLOCK_TIMER ? &u->ntimer : &u->nfail, 1,
                     __ATOMIC_RELAXED);
  return clock == CLOCK_NONE ? -1 : 0;
}

const char *sp__lp_backend_name(int k) {
  if (k < 0 || k >= SP_LP_MAX_USERS) return NULL;
  uint32_t p = __atomic_load_n(&users[k].nperf, __ATOMIC_RELAXED), t = __atomic_load_n(&users[k].ntimer, __ATOMIC_RELAXED);
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

/* The parts of user k (generation gen) of every thread. */
#define EACH_PART(t, pt, k, gen)                                                                    \
  for (struct lp_thread *t = threads; t; t = t->next)                                               \
    for (struct part *pt = &t->part[k]; pt && pt->slots && pt->gen == (gen); pt = NULL)

int sp__lp_collect(int k, struct sp_lp_entry **out, size_t *n, struct sp_lp_stats *stats, int reset) {
  *out = NULL;
  *n = 0;
  memset(stats, 0, sizeof *stats);
  if (k < 0 || k >= SP_LP_MAX_USERS) return 0;
  struct user *u = &users[k];
  pthread_mutex_lock(&ctl_lock);
  int prev = ST_RUNNING;
  if (!__atomic_compare_exchange_n(&u->state, &prev, ST_COLLECTING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    pthread_mutex_unlock(&ctl_lock);
    return prev == ST_OFF ? 0 : -1;
  }
  wait_handlers();
  uint32_t gen = __atomic_load_n(&u->gen, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&threads_lock);
  size_t total = 0;
  EACH_PART(t, pt, k, gen) total += pt->used;
  struct sp_lp_entry *e = total ? malloc(total * sizeof *e) : NULL;
  int rc = total && !e ? -1 : 0;
  size_t m = 0;
  EACH_PART(t, pt, k, gen) {
    for (uint32_t i = 0; e && i <= pt->mask; i++)
      if (pt->slots[i].pc) e[m++] = (struct sp_lp_entry){pt->slots[i].region, pt->slots[i].pc, pt->slots[i].hits, pt->slots[i].ns};
    stats->samples += pt->samples;
    stats->outside += pt->outside;
    stats->dropped += pt->dropped;
    stats->dropped_ns += pt->dropped_ns;
    if (pt->max_ns > stats->max_ns) stats->max_ns = pt->max_ns;
    if (reset && rc == 0) {
      memset(pt->slots, 0, (size_t)(pt->mask + 1) * sizeof *pt->slots);
      pt->used = 0;
      pt->samples = pt->outside = pt->dropped = pt->dropped_ns = pt->max_ns = 0;
    }
  }
  stats->threads_perf = __atomic_load_n(&u->nperf, __ATOMIC_RELAXED);
  stats->threads_timer = __atomic_load_n(&u->ntimer, __ATOMIC_RELAXED);
  stats->arm_failures = __atomic_load_n(&u->nfail, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&threads_lock);
  __atomic_store_n(&u->state, ST_RUNNING, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&ctl_lock);
  if (rc != 0) return rc;
  /* Threads share addresses: merge equal pairs. */
  if (m) qsort(e, m, sizeof *e, cmp_entry);
  size_t w = 0;
  for (size_t i = 0; i < m; i++) {
    if (w && e[w - 1].region == e[i].region && e[w - 1].pc == e[i].pc) {
      e[w - 1].hits += e[i].hits;
      e[w - 1].ns += e[i].ns;
    } else {
      e[w++] = e[i];
    }
  }
  *out = e;
  *n = w;
  return 0;
}

void sp__lp_stop(int k) {
  if (k < 0 || k >= SP_LP_MAX_USERS) return;
  struct user *u = &users[k];
  pthread_mutex_lock(&ctl_lock);
  if (!u->in_use) {
    pthread_mutex_unlock(&ctl_lock);
    return;
  }
  __atomic_store_n(&u->state, ST_OFF, __ATOMIC_SEQ_CST);
  int last = --nusers == 0;
  uint32_t bit = 1u << k;
  pthread_mutex_lock(&threads_lock);
  for (struct lp_thread *t = threads; t; t = t->next) __atomic_and_fetch(&t->users, ~bit, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&threads_lock);
  if (last) __atomic_store_n(&installed, 0, __ATOMIC_SEQ_CST);
  /* From here on no handler starts on this user's tables or on a clock no
   * user has left; wait for those running. */
  wait_handlers();
  pthread_mutex_lock(&threads_lock);
  struct lp_thread **link = &threads;
  while (*link) {
    struct lp_thread *t = *link;
    struct part *pt = &t->part[k];
    __atomic_store_n(&pt->gen, 0, __ATOMIC_SEQ_CST);
    free(pt->slots);
    pt->slots = NULL;
    if (__atomic_load_n(&t->users, __ATOMIC_SEQ_CST) == 0) {
      disarm(t);
      if (t->exited) { /* nothing points at it any more */
        *link = t->next;
        free(t);
        continue;
      }
    }
    link = &t->next;
  }
  /* The structures of live threads stay listed (their `self` points at
   * them), with no user and no clock; a thread armed again reuses its own. */
  pthread_mutex_unlock(&threads_lock);
  if (last) {
    /* Signals already queued would now find SIGPROF's old action: with the
     * default one that kills the process, so ignore them first. Setting
     * SIG_IGN discards those pending. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPROF, &ign, NULL);
    wait_handlers();
    sigaction(SIGPROF, &old_action, NULL);
  }
  u->in_use = 0;
  pthread_mutex_unlock(&ctl_lock);
}
