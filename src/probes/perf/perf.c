/* perf.c - perf_events: hardware and software counters per region call.
 *
 * The events the perf_events setting names (perf_names.c) are counted per
 * thread, opened with perf_event_open() on the thread's first call (the
 * thread itself, any CPU): the hardware counters as one group (scheduled
 * together, read together), each software event on its own (a software
 * event in a group is not brought up to date when the group is read while
 * its leader does not tick), plus a PAPI EventSet for PAPI names
 * (perf_papi.c). A call's counters are read before its start
 * timestamp and after its end one (an outside extension): its columns are the
 * deltas, /events/perf_<event>, and each region's sums go to upstream's
 * rank<N>/perf_events/<region> (attributes calls and event_names, dataset
 * values u64[E]); in aggregation_mode only the sums.
 *
 * Reading: with rdpmc from the counters' mmap pages when every kernel event
 * is a hardware counter and the kernel allows user-space reads
 * (cap_user_rdpmc), else one read() of the whole group. A group the PMU
 * multiplexes is scaled by its enabled/running times, per call.
 *
 * What this machine cannot count is a setup error that names the event and
 * the reason (no PMU, perf_event_paranoid, seccomp), never zeros: setup
 * opens and reads the whole group once on the calling thread first.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "config/config_internal.h"
#include "probes/ext.h"
#include "probes/perf/perf_events.h"

#define MAX_EVENTS 16

struct perf_ev {
  char *name;   /* as the user wrote it */
  char *column;
  int papi;     /* counted through PAPI */
  int index;    /* within its backend: kernel descriptor, or PAPI set position */
  int grouped;  /* a hardware counter, in the thread's counter group */
  int gpos;     /* its position in the group */
  struct perf_event_attr attr;
};

struct perf_thr {
  struct perf_thr *next, *prev;
  int fd[MAX_EVENTS];
  struct perf_event_mmap_page *pc[MAX_EVENTS];
  int rdpmc; /* every kernel event read with rdpmc */
  int papi_set;
  int leader; /* the group's first descriptor, -1 without hardware counters */
  pid_t owner; /* the counted thread */
  uint64_t buf[3 + MAX_EVENTS];
  long long pbuf[MAX_EVENTS];
};

struct perf_proc {
  struct sp_manager *m;
  int n, nk, np, ng; /* events; kernel ones, PAPI ones, grouped kernel ones */
  struct perf_ev ev[MAX_EVENTS];
  int papi_codes[MAX_EVENTS];
  struct sp_ext_col cols[MAX_EVENTS + 2]; /* then scratch: time enabled, running */
  int user_only;
  pthread_mutex_t lock;
  struct perf_thr *threads;
  uint64_t n_rdpmc, n_read, n_failed; /* threads, by how they read */
};

static int perf_wanted(const struct sp_config *cfg) { return cfg->perf_events && cfg->perf_events[0]; }

static long perf_open(struct perf_event_attr *a, int group) {
  return syscall(SYS_perf_event_open, a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

static int paranoid_level(void) {
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int v = 2;
  if (f) {
    if (fscanf(f, "%d", &v) != 1) v = 2;
    fclose(f);
  }
  return v;
}

/* Why perf_event_open refused `ev`, and what to do about it. */
static sp_status open_error(const struct perf_ev *ev, int err) {
  int hw = ev->attr.type == PERF_TYPE_HARDWARE || ev->attr.type == PERF_TYPE_HW_CACHE || ev->attr.type == PERF_TYPE_RAW ||
           ev->attr.type >= PERF_TYPE_MAX;
  switch (err) {
  case ENOENT:
  case EOPNOTSUPP:
  case ENODEV:
    if (hw)
      return sp__set_error(SP_ERR_UNSUPPORTED,
                           "perf_events: cannot count '%s': this machine has no hardware PMU for it (%s; a virtual "
                           "machine without PMU passthrough, or an event of another CPU model). Software events "
                           "still work: task-clock, page-faults, context-switches, cpu-migrations; remove '%s' "
                           "from perf_events",
                           ev->name, strerror(err), ev->name);
    return sp__set_error(SP_ERR_UNSUPPORTED, "perf_events: the kernel cannot count '%s': %s", ev->name,
                         strerror(err));
  case EACCES:
  case EPERM:
    if (ev->attr.exclude_user && !ev->attr.exclude_kernel && paranoid_level() >= 2)
      return sp__set_error(SP_ERR_UNSUPPORTED,
                           "perf_events: not allowed to count '%s' (%s): it counts kernel space only (the ':k' "
                           "suffix), which kernel.perf_event_paranoid %d allows only to root or CAP_PERFMON; drop "
                           "':k', or count with kernel.perf_event_paranoid at 1",
                           ev->name, strerror(err), paranoid_level());
    return sp__set_error(SP_ERR_UNSUPPORTED,
                         "perf_events: not allowed to count '%s' (%s): kernel.perf_event_paranoid is %d; counting "
                         "your own threads needs it at 2 or below (user space only, which is what is asked for "
                         "unless you are root or have CAP_PERFMON), or the process runs under a seccomp filter "
                         "that blocks perf_event_open (containers)",
                         ev->name, strerror(err), paranoid_level());
  case ENOSYS:
    return sp__set_error(SP_ERR_UNSUPPORTED,
                         "perf_events: perf_event_open is not available (%s): this kernel lacks it or a seccomp "
                         "filter (container) removes it; unset perf_events",
                         strerror(err));
  case EMFILE:
  case ENFILE:
    return sp__set_error(SP_ERR_LIMIT,
                         "perf_events: no file descriptor left for '%s' (%s); each counted thread holds one per "
                         "event: raise `ulimit -n` or count fewer events",
                         ev->name, strerror(err));
  default:
    return sp__set_error(SP_ERR_UNSUPPORTED, "perf_events: the kernel refused '%s': %s", ev->name, strerror(err));
  }
}

static void close_thr(struct perf_proc *p, struct perf_thr *t) {
  for (int i = 0; i < p->nk; i++) {
    if (t->pc[i]) munmap(t->pc[i], (size_t)sysconf(_SC_PAGESIZE));
    if (t->fd[i] >= 0) close(t->fd[i]);
  }
#ifdef SP_HAVE_PAPI
  /* Another thread tearing down cannot touch a PAPI EventSet (bound to its
   * thread); PAPI reclaims it with the thread. */
  if (p->np && (pid_t)syscall(SYS_gettid) == t->owner) sp__papi_thread_close(t->papi_set);
#endif
}

static int is_grouped(const struct perf_event_attr *a) {
  return a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE || a->type == PERF_TYPE_RAW ||
         a->type >= PERF_TYPE_MAX;
}

/* The calling thread's counters; 0, or -1 with sp_last_error(). */
static int open_thr(struct perf_proc *p, struct perf_thr *t) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < MAX_EVENTS; i++) t->fd[i] = -1;
  t->papi_set = -1;
  t->owner = (pid_t)syscall(SYS_gettid);
  int leader = -1;
  /* the group first (its leader is its first member), then the others */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->n; i++) {
      struct perf_ev *ev = &p->ev[i];
      if (ev->papi || ev->grouped != !pass) continue;
      struct perf_event_attr a = ev->attr;
      a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | (ev->grouped ? PERF_FORMAT_GROUP : 0);
      a.disabled = 0;
      a.inherit = 0;
      long fd = perf_open(&a, ev->grouped ? leader : -1);
      if (fd < 0) {
        int e = errno;
        close_thr(p, t);
        open_error(ev, e);
        return -1;
      }
      t->fd[ev->index] = (int)fd;
      if (ev->grouped && leader < 0) leader = (int)fd;
    }
  t->leader = leader;
#if defined(__x86_64__) || defined(__i386__)
  /* rdpmc: every grouped counter readable from user space */
  if (p->ng) {
    long page = sysconf(_SC_PAGESIZE);
    int ok = 1;
    for (int i = 0; i < p->n && ok; i++) {
      if (p->ev[i].papi || !p->ev[i].grouped) continue;
      void *mp = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, t->fd[p->ev[i].index], 0);
      if (mp == MAP_FAILED) {
        ok = 0;
        break;
      }
      t->pc[p->ev[i].index] = mp;
      if (!t->pc[p->ev[i].index]->cap_user_rdpmc) ok = 0;
    }
    t->rdpmc = ok;
  }
#endif
#ifdef SP_HAVE_PAPI
  if (p->np) {
    char err[512];
    if (sp__papi_thread_open(p->papi_codes, p->np, &t->papi_set, err, sizeof err) != 0) {
      close_thr(p, t);
      sp__set_error(SP_ERR_UNSUPPORTED, "perf_events: %s", err);
      return -1;
    }
  }
#endif
  return 0;
}

#if defined(__x86_64__) || defined(__i386__)
/* One counter from user space (the kernel's seqlock protocol of
 * perf_event_mmap_page); 0 when it is not on a counter right now. */
static int rdpmc_read(const volatile struct perf_event_mmap_page *pc, uint64_t *value) {
  uint32_t seq;
  uint64_t count;
  do {
    seq = pc->lock;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    uint32_t idx = pc->index;
    if (!pc->cap_user_rdpmc || !idx) return 0;
    uint16_t width = pc->pmc_width;
    uint64_t raw = (uint64_t)__builtin_ia32_rdpmc((int)idx - 1);
    raw <<= 64 - width; /* sign-extend from the counter's width */
    count = (uint64_t)pc->offset + (uint64_t)((int64_t)raw >> (64 - width));
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } while (pc->lock != seq);
  *value = count;
  return 1;
}
#endif

/* Every counter of the thread into vals (user order), with the group's
 * enabled and running times (-1 when read with rdpmc or without a group:
 * no scaling). */
static int read_all(struct perf_proc *p, struct perf_thr *t, int64_t *vals, int64_t *en, int64_t *run) {
  int done = 0;
  *en = *run = -1;
#if defined(__x86_64__) || defined(__i386__)
  if (t->rdpmc) {
    uint64_t v[MAX_EVENTS];
    done = 1;
    for (int i = 0; i < p->n && done; i++)
      if (!p->ev[i].papi && p->ev[i].grouped) done = rdpmc_read(t->pc[p->ev[i].index], &v[i]);
    if (done)
      for (int i = 0; i < p->n; i++)
        if (!p->ev[i].papi && p->ev[i].grouped) vals[i] = (int64_t)v[i];
  }
#endif
  if (!done && p->ng) {
    ssize_t want = (ssize_t)((3 + (size_t)p->ng) * sizeof(uint64_t));
    if (read(t->leader, t->buf, (size_t)want) != want) return -1;
    *en = (int64_t)t->buf[1];
    *run = (int64_t)t->buf[2];
    for (int i = 0; i < p->n; i++)
      if (!p->ev[i].papi && p->ev[i].grouped) vals[i] = (int64_t)t->buf[3 + p->ev[i].gpos];
  }
  for (int i = 0; i < p->n; i++) {
    if (p->ev[i].papi || p->ev[i].grouped) continue;
    uint64_t b[3];
    if (read(t->fd[p->ev[i].index], b, sizeof b) != (ssize_t)sizeof b) return -1;
    vals[i] = (int64_t)b[0];
  }
#ifdef SP_HAVE_PAPI
  if (p->np) {
    if (sp__papi_read(t->papi_set, t->pbuf) != 0) return -1;
    for (int i = 0; i < p->n; i++)
      if (p->ev[i].papi) vals[i] = t->pbuf[p->ev[i].index];
  }
#endif
  return 0;
}

static void perf_enter(void *proc, void *thr, const struct sp_ext_call *c) {
  struct perf_proc *p = proc;
  if (read_all(p, thr, c->cols, &c->cols[p->n], &c->cols[p->n + 1]) != 0) c->cols[p->n] = -2; /* no value */
}

static void perf_exit(void *proc, void *thr, const struct sp_ext_call *c) {
  struct perf_proc *p = proc;
  int64_t v[MAX_EVENTS], en, run;
  int64_t *col = c->cols;
  if (col[p->n] == -2 || read_all(p, thr, v, &en, &run) != 0) {
    for (int i = 0; i < p->n; i++) col[i] = -1;
    return;
  }
  /* A multiplexed group counted only part of the call: scale its kernel
   * counters up; one that never ran has no value. */
  double scale = 1;
  if (en >= 0 && col[p->n] >= 0) {
    int64_t de = en - col[p->n], dr = run - col[p->n + 1];
    if (dr <= 0 && de > 0) scale = -1;
    else if (dr > 0 && dr < de) scale = (double)de / (double)dr;
  }
  for (int i = 0; i < p->n; i++) {
    int64_t d = v[i] - col[i];
    if (p->ev[i].grouped && scale != 1) d = scale < 0 ? -1 : (int64_t)((double)d * scale + 0.5);
    col[i] = d;
  }
}

static int perf_attach(void *proc, const struct sp_ext_thread *th, void **thrp) {
  struct perf_proc *p = proc;
  struct perf_thr *t = malloc(sizeof *t);
  if (!t || open_thr(p, t) != 0) {
    if (t) sp_ext_warn(p->m, "perf_events: thread %u (tid %d) is not counted: %s", th->index, (int)th->tid,
                       sp_last_error());
    free(t);
    __atomic_fetch_add(&p->n_failed, 1, __ATOMIC_RELAXED);
    return -1;
  }
  __atomic_fetch_add(t->rdpmc ? &p->n_rdpmc : &p->n_read, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&p->lock);
  t->prev = NULL;
  t->next = p->threads;
  if (p->threads) p->threads->prev = t;
  p->threads = t;
  pthread_mutex_unlock(&p->lock);
  *thrp = t;
  return 0;
}

static void perf_detach(void *proc, void *thr) {
  struct perf_proc *p = proc;
  struct perf_thr *t = thr;
  pthread_mutex_lock(&p->lock);
  if (t->prev) t->prev->next = t->next;
  else p->threads = t->next;
  if (t->next) t->next->prev = t->prev;
  pthread_mutex_unlock(&p->lock);
  close_thr(p, t);
  free(t);
}

static void free_proc(struct perf_proc *p) {
  for (int i = 0; i < p->n; i++) {
    free(p->ev[i].name);
    free(p->ev[i].column);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
}

static void perf_teardown(void *proc) { free_proc(proc); }

/* The child stands down: its inherited descriptors count the parent's
 * threads' events no longer; close them, nothing else. */
static void perf_after_fork(void *proc) {
  struct perf_proc *p = proc;
  pthread_mutex_init(&p->lock, NULL);
  for (struct perf_thr *t = p->threads, *n; t; t = n) {
    n = t->next;
    for (int i = 0; i < p->nk; i++) {
      if (t->pc[i]) munmap(t->pc[i], (size_t)sysconf(_SC_PAGESIZE));
      if (t->fd[i] >= 0) close(t->fd[i]);
    }
    free(t);
  }
  p->threads = NULL;
  free_proc(p);
}

static int unit_is_ns(const struct perf_ev *ev) {
  return !ev->papi && ev->attr.type == PERF_TYPE_SOFTWARE &&
         (ev->attr.config == PERF_COUNT_SW_TASK_CLOCK || ev->attr.config == PERF_COUNT_SW_CPU_CLOCK);
}

static sp_status perf_setup(struct sp_ext_setup *s, void **procp) {
  const struct sp_config *cfg = s->cfg;
  struct perf_proc *p = calloc(1, sizeof *p);
  if (!p) return sp__set_error(SP_ERR_NO_MEMORY, "perf_events: out of memory");
  pthread_mutex_init(&p->lock, NULL);
  p->m = s->manager;
  /* Kernel counting needs privilege past paranoid level 1: ask for user
   * space only where that is all we may have. */
  p->user_only = geteuid() != 0 && paranoid_level() >= 2;
  char err[1024];
  const char *papi_names[MAX_EVENTS];
  sp_status st = SP_OK;
  for (char **e = cfg->perf_events; e && *e && st == SP_OK; e++) {
    if (!**e) continue;
    if (p->n == MAX_EVENTS) {
      st = sp__set_error(SP_ERR_LIMIT, "perf_events: more than %d events asked for; count at most %d at once",
                         MAX_EVENTS, MAX_EVENTS);
      break;
    }
    for (int i = 0; i < p->n; i++)
      if (strcmp(p->ev[i].name, *e) == 0)
        st = sp__set_error(SP_ERR_INVALID_VALUE, "perf_events: '%s' is listed twice; name each event once", *e);
    if (st != SP_OK) break;
    struct perf_ev *ev = &p->ev[p->n];
    ev->name = sp__strdup(*e);
    ev->column = sp__perf_column_name(*e);
    if (!ev->name || !ev->column) {
      st = sp__set_error(SP_ERR_NO_MEMORY, "perf_events: out of memory");
      break;
    }
    p->n++;
    const char *papi_name;
    if (sp__perf_is_papi(*e, &papi_name)) {
#ifdef SP_HAVE_PAPI
      ev->papi = 1;
      ev->index = p->np;
      papi_names[p->np++] = papi_name;
#else
      (void)papi_name;
      (void)papi_names;
      st = sp__set_error(SP_ERR_UNSUPPORTED,
                         "perf_events: '%s' is a PAPI event, and this build has no PAPI (rebuild with Debian's "
                         "libpapi-dev installed, or use a kernel event name such as cycles or task-clock)",
                         *e);
#endif
      continue;
    }
    if (sp__perf_resolve(*e, p->user_only, &ev->attr, err, sizeof err) != 0) {
      st = sp__set_error(SP_ERR_INVALID_VALUE, "perf_events: %s", err);
      break;
    }
    ev->index = p->nk++;
    if ((ev->grouped = is_grouped(&ev->attr))) ev->gpos = p->ng++;
  }
#ifdef SP_HAVE_PAPI
  if (st == SP_OK && p->np && sp__papi_setup(papi_names, p->np, p->papi_codes, err, sizeof err) != 0)
    st = sp__set_error(SP_ERR_UNSUPPORTED, "perf_events: %s", err);
#endif
  if (st == SP_OK && p->n == 0) st = sp__set_error(SP_ERR_INVALID_VALUE, "perf_events: no event named");
  /* Count once on this thread: what cannot be counted fails setup now. */
  struct perf_thr probe;
  if (st == SP_OK && open_thr(p, &probe) != 0) st = SP_ERR_UNSUPPORTED; /* the message names the event */
  else if (st == SP_OK) {
    int64_t v[MAX_EVENTS], en, run;
    int rd = read_all(p, &probe, v, &en, &run);
    close_thr(p, &probe);
    if (rd != 0) st = sp__set_error(SP_ERR_UNSUPPORTED, "perf_events: the counters open but cannot be read");
  }
  if (st != SP_OK) {
    free_proc(p);
    return st;
  }
  for (int i = 0; i < p->n; i++)
    p->cols[i] = (struct sp_ext_col){p->ev[i].column, unit_is_ns(&p->ev[i]) ? "ns" : "count", 0, SP_EXT_FOLD_SUM, -1};
  p->cols[p->n] = (struct sp_ext_col){"perf_time_enabled", "ns", SP_EXT_COL_SCRATCH, SP_EXT_FOLD_NONE, -1};
  p->cols[p->n + 1] = (struct sp_ext_col){"perf_time_running", "ns", SP_EXT_COL_SCRATCH, SP_EXT_FOLD_NONE, -1};
  s->cols = p->cols;
  s->ncols = p->n + 2;
  *procp = p;
  return SP_OK;
}

/* Upstream's per-region totals, and how the counters were read. */
static sp_status perf_emit(void *proc, struct sp_ext_emit *out) {
  struct perf_proc *p = proc;
  const struct sp_ext_totals *t = sp_ext_totals(out);
  const char *names[MAX_EVENTS];
  for (int i = 0; i < p->n; i++) names[i] = p->ev[i].name;
  for (size_t r = 0; r < t->n; r++) {
    const char *rn = sp_region_name(t->region[r]);
    char *g = rn ? sp_ext_group_name(rn) : NULL;
    char *path = g ? malloc(strlen(g) + 16) : NULL;
    if (path) sprintf(path, "perf_events/%s", g);
    struct sp_ext_group *grp = path ? sp_ext_group(out, path) : NULL;
    uint64_t vals[MAX_EVENTS], dims = (uint64_t)p->n;
    for (int i = 0; i < p->n; i++) {
      int64_t v = t->values[r * (size_t)t->ncols + (size_t)i];
      vals[i] = t->taken[r * (size_t)t->ncols + (size_t)i] && v > 0 ? (uint64_t)v : 0;
    }
    int bad = !grp || sp_ext_group_attr_i64(grp, "calls", (int64_t)t->calls[r]) ||
              sp_ext_group_attr_strlist(grp, "event_names", names, (size_t)p->n) ||
              sp_ext_group_dset(grp, "values", SP_EXT_U64, 1, &dims, vals);
    free(path);
    free(g);
    if (bad) return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the perf_events totals");
  }
  uint64_t nr = __atomic_load_n(&p->n_rdpmc, __ATOMIC_RELAXED), nd = __atomic_load_n(&p->n_read, __ATOMIC_RELAXED);
  const char *how = nr && nd ? "rdpmc and read" : nr ? "rdpmc" : nd ? "read" : "none";
  if (sp_ext_meta_str(out, "perf_events_read", how) || sp_ext_meta_i64(out, "perf_events_user_only", p->user_only) ||
      sp_ext_meta_i64(out, "perf_events_threads_not_counted", (int64_t)__atomic_load_n(&p->n_failed, __ATOMIC_RELAXED)))
    return sp__set_error(SP_ERR_NO_MEMORY, "finalize: out of memory for the perf_events metadata");
  return SP_OK;
}

const struct sp_ext sp__ext_perf = {
    .abi = SP_EXT_ABI,
    .name = "perf_events",
    .kind = SP_EXT_COLUMNS | SP_EXT_AGGREGATE,
    .wanted = perf_wanted,
    .setup = perf_setup,
    .teardown = perf_teardown,
    .after_fork = perf_after_fork,
    .thread_attach = perf_attach,
    .thread_detach = perf_detach,
    .enter = perf_enter,
    .exit = perf_exit,
    .emit = perf_emit,
};
