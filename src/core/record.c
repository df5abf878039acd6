/* record.c - the out-of-line half of region begin/end, and per-thread state.
 *
 * The inlined path in detail.h handles the common case; everything else lands
 * here: a thread's first call on a manager (it registers once and gets a dense
 * index), a full buffer (doubling growth: events are addressed by index, so an
 * open call's slot stays valid across a realloc), pause (calls begun while
 * paused become "ghost" stack entries so their ends still match), opt-in tags,
 * regions extensions take (ext.c calls them around the timestamps), and ends
 * that do not match. Problems are counted per thread, never printed, and
 * reported at finalize.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "core/stream.h"

/* What a TLS slot points at while its thread has no record of that slot's
 * manager: room 0 and end_floor UINT32_MAX send every timeline call out of
 * line, acc_lim 0 every aggregation begin, and the open stack's top is a
 * sentinel no end matches (detail.h, sp_i_open_key). Read-only: the inlined
 * path writes a record only after these tests passed. */
static const struct sp_i_event disarmed_open[1] = {{0, 0, 0, UINT32_MAX}};
static const struct sp_i_thread disarmed = {
    .end_floor = UINT32_MAX,
    .top = (struct sp_i_event *)&disarmed_open[1],
    .open_end = (struct sp_i_event *)&disarmed_open[1],
};
#define DISARMED ((struct sp_i_thread *)&disarmed)
#define DISARMED4 DISARMED, DISARMED, DISARMED, DISARMED

SP_API SP_I_TLS struct sp_i_tls_block sp_i_tls = {{DISARMED4, DISARMED4, DISARMED4, DISARMED4}, {0}};

/* The inlined path's view of a record that is no longer armed (its manager
 * destroyed, its thread ended): as the static one. */
static void disarm(struct sp_i_thread *h) {
  h->room = 0;
  h->end_floor = UINT32_MAX;
  h->acc_lim = 0;
  h->top = h->open_end = DISARMED->top;
}

/*====== TLS slots ======*/

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  struct sp_manager *m;
  uint32_t gen;
} slots[SP_I_MAX_MANAGERS];
static uint32_t next_gen = 1;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* A lock held by another thread at fork() stays locked forever in the child,
 * where that thread does not exist: start the child with fresh ones. */
void sp__record_after_fork_child(void) { pthread_mutex_init(&slot_lock, NULL); }

int sp__slot_acquire(struct sp_manager *m) {
  pthread_mutex_lock(&slot_lock);
  int s = -1;
  /* Slot 0 is reserved for the default manager. */
  for (int i = m->is_default ? 0 : 1; i < SP_I_MAX_MANAGERS; i++)
    if (!slots[i].m) {
      s = i;
      break;
    }
  if (s >= 0) {
    slots[s].m = m;
    /* 32 bits: a wrap needs 4e9 manager lifetimes; 0 stays "never". */
    if (next_gen == 0) next_gen = 1;
    slots[s].gen = next_gen++;
    m->hot.slot = (uint32_t)s;
    m->hot.gen = slots[s].gen;
  }
  pthread_mutex_unlock(&slot_lock);
  return s;
}

void sp__slot_release(struct sp_manager *m) {
  pthread_mutex_lock(&slot_lock);
  /* Before the slot can go to another manager: a thread whose TLS still
   * points at one of these records must take that manager's calls out of
   * line (the inlined path tests no generation). The open stacks stay
   * reachable through `open` until sp__threads_free. */
  pthread_mutex_lock(&m->lock);
  for (sp_thread_rec *t = m->threads; t; t = t->next) disarm(&t->hot);
  pthread_mutex_unlock(&m->lock);
  if (slots[m->hot.slot].m == m) {
    slots[m->hot.slot].m = NULL;
    slots[m->hot.slot].gen = 0;
  }
  m->hot.gen = 0;
  pthread_mutex_unlock(&slot_lock);
}

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Thread exit: TLS is still readable in key destructors, so the dying thread
 * can stamp its own records with its end time and CPU time; pthread_join
 * returns only after they ran. A runtime whose join returns earlier
 * (Python's threading, which wakes join() when the interpreter's thread
 * state goes, before the OS thread exits) calls sp_thread_end() itself, so
 * a table written right after the join shows the thread ended, as upstream
 * reads the end on the dying thread. Stamped once: the key destructor then
 * finds nothing left. */
void sp_thread_end(void) {
  pthread_mutex_lock(&slot_lock);
  for (int s = 0; s < SP_I_MAX_MANAGERS; s++) {
    sp_thread_rec *t = (sp_thread_rec *)sp_i_tls.t[s];
    if (sp_i_tls.t[s] == DISARMED) continue;
    if (t->zombie) { /* its manager was destroyed: the record was left to us */
      free(t);
      sp_i_tls.t[s] = DISARMED;
      continue;
    }
    if (!slots[s].m || sp_i_tls.gen[s] != slots[s].gen) {
      /* Its manager is being destroyed (the slot released, its records not
       * freed yet): the record is the manager's to free, not a zombie left
       * to a thread that is ending. */
      t->in_tls = 0;
      sp_i_tls.t[s] = DISARMED;
      continue;
    }
    t->exited = 1;
    t->last_ns = sp__clock_now_ns();
    t->cpu_ns = thread_cpu_ns();
    sp__ext_thread_exit(slots[s].m, t);
    sp_i_tls.gen[s] = 0;
    /* later calls on this thread take a new record (the inlined path tests
     * no generation); the manager keeps this one */
    t->in_tls = 0;
    sp_i_tls.t[s] = DISARMED;
  }
  pthread_mutex_unlock(&slot_lock);
}

static void on_thread_exit(void *unused) {
  (void)unused;
  sp_thread_end();
}

static void make_exit_key(void) { pthread_key_create(&exit_key, on_thread_exit); }

/*====== Threads ======*/

sp__int_fn sp__find_int_fn(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  sp__int_fn fn;
  memcpy(&fn, &p, sizeof fn); /* POSIX guarantees the round trip */
  return p ? fn : NULL;
}

/* Resolved lazily and without linking OpenMP: present only when the
 * program itself uses it. Threads attach concurrently: look up once. */
static sp__int_fn omp_in_parallel_fn, omp_thread_num_fn;
static pthread_once_t omp_lookup_once = PTHREAD_ONCE_INIT;

static void omp_lookup(void) {
  omp_in_parallel_fn = sp__find_int_fn("omp_in_parallel");
  omp_thread_num_fn = sp__find_int_fn("omp_get_thread_num");
}

static int omp_thread_num(void) {
  pthread_once(&omp_lookup_once, omp_lookup);
  if (omp_in_parallel_fn && omp_thread_num_fn && omp_in_parallel_fn()) return omp_thread_num_fn();
  return -1;
}

sp_thread_rec *sp__thread_attach(struct sp_manager *m) {
  uint32_t slot = m->hot.slot;
  if (sp_i_tls.gen[slot] == m->hot.gen && sp_i_tls.t[slot] != DISARMED) return (sp_thread_rec *)sp_i_tls.t[slot];
  uint64_t tick0 = sp_i_ticks();
  sp_thread_rec *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  uint64_t cap = m->have_cfg && m->cfg.buffer_limit > 0 ? (uint64_t)m->cfg.buffer_limit : 1024;
  /* max_buffer_bytes bounds the live buffers of all threads together (a
   * quarter of it: stream.c): a thread's first buffer takes what is left
   * of that, halving buffer_limit down to 1024 events at least. Taken
   * whole, four threads' first buffers of 2^20 events (24 MiB each) were
   * three quarters of a 128 MiB budget before any hand-off, and with the
   * blocks in flight and the spares the run peaked 60% over it. */
  if (m->have_cfg && !m->cfg.deactivate_file_output) {
    uint64_t per = sizeof *t->hot.ev + (size_t)m->ext_stride * 8, lim = sp__stream_live_limit(m);
    uint64_t used = __atomic_load_n(&m->buf_bytes, __ATOMIC_RELAXED);
    while (cap > 1024 && used + cap * per > lim) cap /= 2;
  }
  t->hot.ev = malloc(cap * sizeof *t->hot.ev);
  t->hot.stack = malloc(64 * sizeof *t->hot.stack);
  if (m->ext_stride && (t->cols = malloc(cap * (size_t)m->ext_stride * sizeof *t->cols))) sp__ext_fill(m, t->cols, 0, cap);
  if (!t->hot.ev || !t->hot.stack || (m->ext_stride && !t->cols)) {
    free(t->hot.ev);
    free(t->hot.stack);
    free(t->cols);
    free(t);
    return NULL;
  }
  t->hot.cap = cap;
  t->hot.stack_cap = 64;
  t->hot.stack_lim = 64;
  __atomic_fetch_add(&m->buf_bytes, cap * (sizeof *t->hot.ev + (size_t)m->ext_stride * 8), __ATOMIC_RELAXED);
  if (sp__thread_grow_open(t) != 0 || sp__ext_grow_open(m, t) != 0 ||
      sp__thread_grow_acc(t, sp__region_max_id() + 1) != 0) {
    free(t->hot.ev);
    free(t->hot.stack);
    sp__thread_free_open(&t->hot);
    free(t->open_cols);
    free(t->hot.acc);
    free(t->cols);
    free(t);
    return NULL;
  }
  t->m = m;
  t->tid = (pid_t)syscall(SYS_gettid);
  t->ident = (uint64_t)pthread_self();
  t->omp_thread = omp_thread_num();
  t->first_ns = sp__clock_now_ns();
  t->last_ns = -1;
  t->cpu_ns = -1;
  if (pthread_getname_np(pthread_self(), t->name, sizeof t->name) != 0) t->name[0] = 0;
  pthread_once(&exit_key_once, make_exit_key);
  pthread_setspecific(exit_key, (void *)1);

  pthread_mutex_lock(&m->lock);
  t->index = m->nthreads++;
  sp_thread_rec **tail = &m->threads;
  while (*tail) tail = &(*tail)->next;
  *tail = t; /* registration order = index order */
  pthread_mutex_unlock(&m->lock);

  /* The slot's previous record: a destroyed manager's, left to this thread
   * (freed now), or one its manager keeps (no longer this thread's). */
  pthread_mutex_lock(&slot_lock);
  if (sp_i_tls.t[slot] != DISARMED) {
    sp_thread_rec *old = (sp_thread_rec *)sp_i_tls.t[slot];
    if (old->zombie)
      free(old);
    else
      old->in_tls = 0;
  }
  t->in_tls = 1;
  sp_i_tls.t[slot] = &t->hot;
  sp_i_tls.gen[slot] = m->hot.gen;
  pthread_mutex_unlock(&slot_lock);
  t->ovh_fresh_bytes += cap * (sizeof *t->hot.ev + (size_t)m->ext_stride * 8);
  t->ovh_ticks += sp_i_ticks() - tick0;
  return t;
}

/* sp_ext_current_region() may read ev and stack from a signal handler on
 * this very thread: it answers 0 while `busy` is up. */
#define BUSY_BEGIN(t)                   \
  do {                                  \
    (t)->busy++;                        \
    __atomic_signal_fence(__ATOMIC_SEQ_CST); \
  } while (0)
#define BUSY_END(t)                     \
  do {                                  \
    __atomic_signal_fence(__ATOMIC_SEQ_CST); \
    (t)->busy--;                        \
  } while (0)

int sp__thread_grow_events(sp_thread_rec *t) {
  struct sp_manager *m = t->m;
  uint64_t ncap = t->hot.cap * 2;
  BUSY_BEGIN(t);
  struct sp_i_event *ev = realloc(t->hot.ev, ncap * sizeof *ev);
  if (ev) t->hot.ev = ev;
  BUSY_END(t);
  if (!ev) return -1;
  if (m->ext_stride) {
    int64_t *cols = realloc(t->cols, ncap * (size_t)m->ext_stride * sizeof *cols);
    if (!cols) return -1; /* ev grew but cap did not: consistent */
    t->cols = cols;
    sp__ext_fill(m, cols, t->hot.cap, ncap);
  }
  __atomic_fetch_add(&m->buf_bytes, t->hot.cap * (sizeof *ev + (size_t)m->ext_stride * 8), __ATOMIC_RELAXED);
  t->ovh_fresh_bytes += t->hot.cap * (sizeof *ev + (size_t)m->ext_stride * 8); /* the new half */
  t->hot.cap = ncap;
  return 0;
}

/* A full buffer: stream it when growing would pass the memory budget (and
 * streaming is possible), else grow it. 0 when there is room again. */
static int make_room(struct sp_manager *m, sp_thread_rec *t) {
  uint64_t tick0 = sp_i_ticks(), grow = t->hot.cap * (sizeof *t->hot.ev + (size_t)m->ext_stride * 8);
  int rc;
  if (!m->cfg.deactivate_file_output &&
      __atomic_load_n(&m->buf_bytes, __ATOMIC_RELAXED) + grow > sp__stream_live_limit(m) &&
      sp__stream_handoff(m, t) == 0 && t->hot.n < t->hot.cap)
    rc = 0;
  else
    rc = sp__thread_grow_events(t);
  t->ovh_ticks += sp_i_ticks() - tick0; /* what the call that found the buffer full waited */
  return rc;
}

void sp__agg_reset(struct sp_i_agg *a, size_t n) {
  for (size_t i = 0; i < n; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].min = INT64_MAX;
    a[i].max = INT64_MIN;
    a[i].start_min = UINT64_MAX;
  }
}

/* The open-call stack is allocated with its sentinel entry in front. */
int sp__thread_grow_open(sp_thread_rec *t) {
  uint32_t ncap = t->hot.open_cap ? t->hot.open_cap * 2 : 64;
  uint32_t n = sp__agg_nopen(&t->hot);
  BUSY_BEGIN(t);
  struct sp_i_event *o = realloc(t->hot.open ? t->hot.open - 1 : NULL, ((size_t)ncap + 1) * sizeof *o);
  if (o) {
    if (!t->hot.open) { /* the sentinel: no end matches it (detail.h, sp_i_open_key) */
      memset(o, 0, sizeof *o);
      o->depth = UINT32_MAX;
    }
    t->hot.open = o + 1;
    t->hot.top = t->hot.open + n;
    t->hot.open_end = t->hot.open + ncap;
    t->hot.open_cap = ncap;
  }
  BUSY_END(t);
  return o ? 0 : -1;
}

void sp__thread_free_open(struct sp_i_thread *h) {
  if (h->open) free(h->open - 1);
  h->open = h->top = h->open_end = NULL;
  h->open_cap = 0;
}

/* acc_lim: the handles the inlined begin takes, those with an accumulator
 * that are live now (ids only grow: a live id stays live). */
static void arm_acc(sp_thread_rec *t) {
  uint32_t live = sp__region_max_id();
  t->hot.acc_lim = t->hot.acc_cap ? (live < t->hot.acc_cap - 1 ? live : t->hot.acc_cap - 1) : 0;
}

int sp__thread_grow_acc(sp_thread_rec *t, uint32_t need) {
  if (need > t->hot.acc_cap) {
    uint32_t ncap = t->hot.acc_cap ? t->hot.acc_cap : 64;
    while (ncap < need) ncap *= 2;
    struct sp_i_agg *a = realloc(t->hot.acc, (size_t)ncap * sizeof *a);
    if (!a) return -1;
    sp__agg_reset(a + t->hot.acc_cap, ncap - t->hot.acc_cap);
    t->hot.acc = a;
    t->hot.acc_cap = ncap;
  }
  arm_acc(t);
  return 0;
}

double sp__agg_m2(const struct sp_i_agg *a) {
#if defined(__SIZEOF_INT128__)
  /* total = q n + rr: sq - total^2 / n = (sq - q^2 n - 2 q rr) - rr^2 / n,
   * the first part exact in 128 bits (it lies in [0, sq]). */
  sp_i_i128 n = (sp_i_i128)a->count, s1 = a->total, q = s1 / n, rr = s1 % n;
  sp_i_i128 big = (sp_i_i128)a->sq - q * q * n - 2 * q * rr;
  double m2 = (double)big - (double)rr * (double)rr / (double)a->count;
#else
  double n = (double)a->count, s1 = (double)a->total;
  double m2 = (double)a->sq[1] * 18446744073709551616.0 + (double)a->sq[0] - s1 * s1 / n;
#endif
  return m2 > 0 ? m2 : 0;
}

int sp__thread_grow_stack(sp_thread_rec *t) {
  uint32_t ncap = t->hot.stack_cap * 2;
  BUSY_BEGIN(t);
  uint64_t *s = realloc(t->hot.stack, (size_t)ncap * sizeof *s);
  if (s) {
    t->hot.stack = s;
    t->hot.stack_cap = ncap;
    sp__thread_rearm(t->m, t);
  }
  BUSY_END(t);
  return s ? 0 : -1;
}

/* A record's buffers; the record itself is the caller's to free or keep. */
static void thread_buffers_free(struct sp_manager *m, sp_thread_rec *t) {
  sp__ext_thread_release(m, t);
  free(t->hot.ev);
  free(t->hot.stack); /* a running task's stack lives here, its record holds NULL */
  free(t->ctx_stack);
  /* top and open_end stay as sp__slot_release disarmed them: a thread may
   * still read them */
  if (t->hot.open) free(t->hot.open - 1);
  free(t->hot.acc);
  free(t->cols);
  free(t->open_cols);
  free(t->optin);
  free(t->kept_ids);
  free(t->kept_child);
  free(t->carry);
}

/* A forked child has only the thread that called fork(). The records of the
 * others (ended or not) are reachable from no TLS slot there, yet they kept
 * their logs until the manager was destroyed (never, for the default one),
 * and a run the child sets up listed those not ended in its thread table.
 * Called from the child's atfork handler, after ext.c's: one thread, the
 * locks fresh, and glibc's malloc usable (its own child handler ran first).
 * The indices stay: the child's new threads take the next ones. A task whose
 * thread is gone loses its open calls (they were in that thread's log); one
 * running there gets that thread's stack, empty, and is switched out. */
void sp__threads_after_fork_child(struct sp_manager *m) {
  const struct sp_i_thread *mine =
      sp_i_tls.gen[m->hot.slot] == m->hot.gen ? sp_i_tls.t[m->hot.slot] : NULL;
  size_t per_event = sizeof(struct sp_i_event) + (size_t)m->ext_stride * 8;
  for (sp_thread_rec **p = &m->threads; *p;) {
    sp_thread_rec *t = *p;
    if (&t->hot == mine) {
      p = &t->next;
      continue;
    }
    for (uint32_t k = 0; k < m->ntasks; k++) {
      struct sp_task *task = m->tasks[k];
      if (task->thread != t) continue;
      task->thread = NULL;
      task->depth = 0;
      if (!task->stack && t->cur_task == task) {
        task->stack = t->hot.stack;
        task->cap = t->hot.stack_cap;
        task->out_at = 0;
        t->hot.stack = NULL;
      }
    }
    __atomic_fetch_sub(&m->buf_bytes, t->hot.cap * per_event, __ATOMIC_RELAXED);
    *p = t->next;
    thread_buffers_free(m, t);
    free(t);
  }
}

void sp__threads_free(struct sp_manager *m) {
  sp_thread_rec *t = m->threads;
  while (t) {
    sp_thread_rec *n = t->next;
    thread_buffers_free(m, t);
    /* A live thread's TLS still pointing here: the record stays, disarmed,
     * until that thread attaches to this slot again or ends (both decide
     * under the same lock). */
    pthread_mutex_lock(&slot_lock);
    int keep = t->in_tls;
    if (keep) t->zombie = 1; /* disarmed by sp__slot_release */
    pthread_mutex_unlock(&slot_lock);
    if (!keep) free(t);
    t = n;
  }
  m->threads = NULL;
  m->nthreads = 0;
}

/*====== Slow paths ======*/

/* Whether an opt-in region stays disabled on this manager. Decided once per
 * (thread, region, setup) and cached in the thread's own array, so a disabled
 * region costs the slow-path call and one byte load. */
static int opt_in_disabled(struct sp_manager *m, sp_thread_rec *t, uint32_t r) {
  if (!(r & SP_I_REGION_SLOW_BIT)) return 0;
  uint32_t id = r & ~SP_I_REGION_SLOW_BIT;
  if (t->optin_epoch != m->optin_epoch) {
    if (t->optin) memset(t->optin, 0, t->optin_cap);
    t->optin_epoch = m->optin_epoch;
  }
  if (id >= t->optin_cap) {
    uint32_t ncap = t->optin_cap ? t->optin_cap : 64;
    while (ncap <= id) ncap *= 2;
    uint8_t *n = realloc(t->optin, ncap);
    if (n) {
      memset(n + t->optin_cap, 0, ncap - t->optin_cap);
      t->optin = n;
      t->optin_cap = ncap;
    }
  }
  uint8_t d = id < t->optin_cap ? t->optin[id] : 0;
  if (!d) {
    const struct sp_region_info *ri = sp__region_info(id);
    d = 2;
    for (size_t i = 0; ri && i < ri->ntags && d == 2; i++)
      if (sp__config_tag_enabled(&m->cfg, ri->tags[i])) d = 1;
    if (id < t->optin_cap) t->optin[id] = d;
    if (d == 2) sp__optin_mark_off(m, id);
  }
  return d == 2;
}

/* What both slow paths do first: the calling thread's record, the region id
 * without its opt-in bit; NULL (with the status in *rc) for a call to ignore
 * (off, disabled opt-in region) or refuse (no memory, invalid handle). */
static sp_thread_rec *slow_entry(struct sp_manager *m, uint32_t r, uint32_t *id, int *rc) {
  *rc = 0;
  if (__atomic_load_n(&m->hot.state, __ATOMIC_RELAXED) == SP_I_STATE_OFF) return NULL;
  sp_thread_rec *t = sp__thread_attach(m);
  if (!t) {
    __atomic_fetch_add(&m->problems.dropped_events, 1, __ATOMIC_RELAXED);
    *rc = sp__set_error(SP_ERR_NO_MEMORY, "out of memory registering a thread; the call was not recorded");
    return NULL;
  }
  *id = r & ~SP_I_REGION_SLOW_BIT;
  /* A manager made while a region was being interned may hold a smaller
   * count than the registry (detail.h): catch up, so the handle goes inline
   * from now on. */
  uint32_t live = sp__region_max_id();
  if (__atomic_load_n(&m->hot.nregions, __ATOMIC_RELAXED) < live) __atomic_store_n(&m->hot.nregions, live, __ATOMIC_RELAXED);
  if (*id == 0 || !sp__region_info(*id)) {
    t->invalid_regions++;
    *rc = sp__set_error(SP_ERR_INVALID_ARGUMENT,
                        "region handle %u was never returned by sp_region_intern() or SP_REGION; the call "
                        "was ignored (counted as an invalid handle)", (unsigned)r);
    return NULL;
  }
  return opt_in_disabled(m, t, r) ? NULL : t;
}

static sp_status no_memory(sp_thread_rec *t) {
  t->dropped_events++;
  return sp__set_error(SP_ERR_NO_MEMORY, "out of memory growing a thread's buffers; the call was not "
                                         "recorded (counted as dropped)");
}

/* A call the end does not close: counted, and the thread's message says
 * which call is open, so the caller sees this error and not an older one. */
static sp_status unmatched(sp_thread_rec *t, uint32_t id, uint32_t open_id) {
  t->unmatched_ends++;
  const struct sp_region_info *ri = sp__region_info(id), *oi = open_id ? sp__region_info(open_id) : NULL;
  if (!oi)
    return sp__set_error(SP_ERR_UNMATCHED_END, "end of \"%s\" with no call open on this thread; ignored "
                         "(counted as an unmatched end)", ri ? ri->name : "?");
  return sp__set_error(SP_ERR_UNMATCHED_END, "end of \"%s\" while \"%s\" is the innermost open call on "
                       "this thread; ignored (counted as an unmatched end)", ri ? ri->name : "?", oi->name);
}

/* A call that is not recorded, pushed so that its end still matches: the
 * entry before the depth that publishes it (a signal handler reads them). */
static void push_ghost(sp_thread_rec *t, uint32_t id) {
  t->hot.stack[t->hot.depth] = SP_I_GHOST_BIT | id;
  SP_I_SIGNAL_FENCE();
  t->hot.depth++;
}

static int begin_timeline(struct sp_manager *m, sp_thread_rec *t, uint32_t id) {
  if (t->hot.depth == t->hot.stack_cap && sp__thread_grow_stack(t) != 0) return no_memory(t);
  if (m->paused) {
    push_ghost(t, id);
    return 0;
  }
  if (t->hot.n == t->hot.cap && make_room(m, t) != 0) {
    push_ghost(t, id); /* its end must still match */
    return no_memory(t);
  }
  int stride = m->ext_stride;
  uint32_t mask = m->next ? sp__ext_decide(m, t, id) : 0;
  uint64_t i = t->hot.n++;
  struct sp_i_event *ev = &t->hot.ev[i];
  uint32_t depth = t->hot.depth;
  t->hot.stack[t->hot.depth] = i;
  ev->region = id;
  /* A depth-0 call of a thread that adopted a context: its parent is the
   * context's call, on another thread. */
  ev->depth = depth ? depth : sp__xparent_depth(m);
  ev->end = 0;
  SP_I_SIGNAL_FENCE(); /* as the inlined push: the entry, then the depth */
  t->hot.depth++;
  int64_t *cols = stride ? t->cols + i * (uint64_t)stride : NULL;
  if (cols) cols[0] = mask; /* the slot is fresh: its columns hold their fills */
  /* Outside extensions before the timestamp: their cost is not the call's. */
  if (mask & ~m->ext_inside) sp__ext_enter(m, t, mask & ~m->ext_inside, id, depth, i, cols);
  ev->start = sp_i_ticks();
  if (mask & m->ext_inside) sp__ext_enter(m, t, mask & m->ext_inside, id, depth, i, cols);
  return 0;
}

SP_API int sp_i_begin_slow(void *mv, uint32_t r) {
  struct sp_manager *m = mv;
  int rc;
  uint32_t id;
  sp_thread_rec *t = slow_entry(m, r, &id, &rc);
  if (!t) return rc;
  t->ovh_slow_calls++;
  int stride = m->ext_stride;
  if (m->cfg.aggregation_mode) {
    if (t->hot.top == t->hot.open_end && (sp__thread_grow_open(t) != 0 || sp__ext_grow_open(m, t) != 0))
      return no_memory(t);
    /* Every call on the stack has its accumulator (the inlined end relies
     * on it); this also lets later begins of id go inline. */
    if (!m->paused && sp__thread_grow_acc(t, id + 1) != 0) return no_memory(t);
    uint32_t depth = sp__agg_nopen(&t->hot);
    struct sp_i_event *ev = t->hot.top;
    if (m->paused) {
      ev->region = 0; /* ghost: its end must still match */
      ev->depth = id;
      SP_I_SIGNAL_FENCE(); /* the entry before the pointer that publishes it */
      t->hot.top = ev + 1;
      return 0;
    }
    sp_i_open_set(ev, id);
    ev->end = 0;
    SP_I_SIGNAL_FENCE();
    t->hot.top = ev + 1;
    uint32_t mask = m->next ? sp__ext_decide(m, t, id) : 0;
    int64_t *cols = stride ? t->open_cols + (size_t)depth * (size_t)stride : NULL;
    if (cols) { /* scratch for this call: no earlier call may show through */
      sp__ext_fill(m, cols, 0, 1);
      cols[0] = mask;
    }
    if (mask & ~m->ext_inside) sp__ext_enter(m, t, mask & ~m->ext_inside, id, depth, UINT64_MAX, cols);
    ev->start = sp_i_ticks();
    if (mask & m->ext_inside) sp__ext_enter(m, t, mask & m->ext_inside, id, depth, UINT64_MAX, cols);
    return 0;
  }
  rc = begin_timeline(m, t, id);
  /* A stack nearly full would end the room every few begins of a shallow
   * loop (ends do not give room back): grown ahead, once, where the inlined
   * path records every call (with extensions, a slow begin's allocation
   * would be the call's to use_memray). */
  if ((__atomic_load_n(&m->hot.state, __ATOMIC_RELAXED) & ~SP_I_STATE_CLOCK) == SP_I_STATE_TIMELINE &&
      t->hot.stack_lim == t->hot.stack_cap && t->hot.stack_cap - t->hot.depth < SP__STACK_AHEAD &&
      t->hot.cap - t->hot.n > t->hot.stack_cap - t->hot.depth)
    (void)sp__thread_grow_stack(t); /* out of memory: only slower */
  sp__thread_rearm(m, t);
  return rc;
}

/* Aggregation mode: the innermost open call (region id, accumulator
 * present) ends at `now`, extensions included. */
static void agg_end_top(struct sp_manager *m, sp_thread_rec *t, uint32_t id, uint64_t now, int mono) {
  int stride = m->ext_stride;
  uint32_t depth = sp__agg_nopen(&t->hot) - 1;
  /* A call the inlined path began wrote no scratch: only a region an
   * extension takes has a mask there. */
  int64_t *cols = stride ? t->open_cols + (size_t)depth * (size_t)stride : NULL;
  uint32_t mask = cols && m->next ? (uint32_t)cols[0] & sp__ext_decide(m, t, id) : 0;
  if (mask & m->ext_inside) {
    sp__ext_exit(m, t, mask & m->ext_inside, id, depth, UINT64_MAX, cols);
    uint64_t later = sp_i_ticks();
    if (later > now) now = later;
  }
  sp_i_agg_close(&t->hot, id, now, mono);
  if (mask & ~m->ext_inside) sp__ext_exit(m, t, mask & ~m->ext_inside, id, depth, UINT64_MAX, cols);
  if (mask) sp__ext_fold_call(m, t, id, cols);
}

static int end_timeline(struct sp_manager *m, sp_thread_rec *t, uint32_t id, uint64_t now) {
  if (t->hot.depth == 0) return unmatched(t, id, 0);
  uint64_t top = t->hot.stack[t->hot.depth - 1];
  if (top & SP_I_GHOST_BIT) {
    if ((uint32_t)top != id) return unmatched(t, id, (uint32_t)top);
    t->hot.depth--;
    return 0;
  }
  struct sp_i_event *ev = &t->hot.ev[top];
  if (ev->region != id) return unmatched(t, id, ev->region);
  int stride = m->ext_stride;
  int64_t *cols = stride ? t->cols + top * (uint64_t)stride : NULL;
  uint32_t mask = cols ? (uint32_t)cols[0] : 0;
  if (mask & m->ext_inside) {
    sp__ext_exit(m, t, mask & m->ext_inside, id, t->hot.depth - 1, top, cols);
    uint64_t later = sp_i_ticks();
    if (later > now) now = later;
  }
  ev->end = now;
  t->hot.depth--;
  /* Timestamp first, then outside extensions: their cost stays outside the
   * measured interval on both ends. */
  if (mask & ~m->ext_inside) sp__ext_exit(m, t, mask & ~m->ext_inside, id, t->hot.depth, top, cols);
  return 0;
}

SP_API int sp_i_end_slow(void *mv, uint32_t r) {
  struct sp_manager *m = mv;
  uint64_t now = sp_i_ticks();
  int rc;
  uint32_t id;
  sp_thread_rec *t = slow_entry(m, r, &id, &rc);
  if (!t) return rc;
  t->ovh_slow_calls++;
  if (m->cfg.aggregation_mode) {
    if (sp__agg_nopen(&t->hot) == 0) return unmatched(t, id, 0);
    struct sp_i_event *ev = t->hot.top - 1;
    if (ev->region == 0 && ev->depth == id) { /* ghost */
      t->hot.top--;
      return 0;
    }
    if (ev->region != id) return unmatched(t, id, ev->region ? ev->region : ev->depth);
    if (sp__thread_grow_acc(t, id + 1) != 0) {
      t->hot.top--;
      return no_memory(t);
    }
    agg_end_top(m, t, id, now, 1);
    return 0;
  }
  rc = end_timeline(m, t, id, now);
  if (t->hot.end_floor) sp__thread_rearm(m, t);
  return rc;
}

/* What the inlined begin/end hand over when the state has a flag (CLOCK:
 * not the TSC; EXT: extensions run) or the handle is not plain: the same
 * inlined bodies, with the clock tested at run time, for regions no
 * extension takes; disabled opt-in handles return at once; the rest goes
 * to the slow path. */
SP_API int sp_i_begin_other(void *mv, uint32_t r) {
  const struct sp_i_hot *h = mv;
  uint32_t state = sp_i_state(h);
  if (state == SP_I_STATE_OFF) return 0;
  int plain = sp_i_plain_region(h, r);
  if (plain && (state & SP_I_STATE_EXT) && sp_i_ext_plain(h, r)) state &= ~SP_I_STATE_EXT;
  uint32_t mode = state & ~SP_I_STATE_CLOCK;
  int tsc = !(state & SP_I_STATE_CLOCK);
  if (plain && mode == SP_I_STATE_AGGREGATE) return sp_i_agg_begin(mv, h, r, tsc);
  if (plain && mode == SP_I_STATE_TIMELINE) return sp_i_tl_begin(mv, h, r, tsc);
  if ((r & SP_I_REGION_SLOW_BIT) && sp_i_optin_off(h, r)) return 0;
  return sp_i_begin_slow(mv, r);
}

SP_API int sp_i_end_other(void *mv, uint32_t r) {
  const struct sp_i_hot *h = mv;
  uint32_t state = sp_i_state(h);
  if (state == SP_I_STATE_OFF) return 0;
  int plain = r - 1u < SP_I_REGION_SLOW_BIT - 1u;
  if (plain && (state & SP_I_STATE_EXT) && sp_i_ext_plain(h, r)) state &= ~SP_I_STATE_EXT;
  uint32_t mode = state & ~SP_I_STATE_CLOCK;
  int tsc = !(state & SP_I_STATE_CLOCK);
  if (plain && mode == SP_I_STATE_AGGREGATE) return sp_i_agg_end(mv, h, r, tsc);
  if (plain && mode == SP_I_STATE_TIMELINE) return sp_i_tl_end(mv, h, r, tsc);
  if ((r & SP_I_REGION_SLOW_BIT) && sp_i_optin_off(h, r)) return 0;
  return sp_i_end_slow(mv, r);
}

/*====== Calls whose end never comes ======*/

void sp__cut_note(struct sp_manager *m, int64_t id) {
  if (m->ncut == m->cut_cap) {
    size_t cap = m->cut_cap ? m->cut_cap * 2 : 16;
    int64_t *n = realloc(m->cut_ids, cap * sizeof *n);
    if (!n) return; /* the call is still written; only its mark is lost */
    m->cut_ids = n;
    m->cut_cap = cap;
  }
  m->cut_ids[m->ncut++] = id;
}

/* Aggregation mode: the open call on top of t ends at `now` (`mono`: read
 * on t's own thread). */
static void agg_close_top(struct sp_manager *m, sp_thread_rec *t, uint64_t now, int mono) {
  struct sp_i_event *ev = t->hot.top - 1;
  if (ev->region == 0 || sp__thread_grow_acc(t, ev->region + 1) != 0) { /* a ghost, or no memory */
    t->hot.top--;
    return;
  }
  if (now < ev->start) now = ev->start;
  agg_end_top(m, t, ev->region, now, mono);
}

int sp__end_closing(struct sp_manager *m, uint32_t r) {
  uint32_t id = r & ~SP_I_REGION_SLOW_BIT;
  uint32_t slot = m->hot.slot;
  if (__atomic_load_n(&m->hot.state, __ATOMIC_RELAXED) == SP_I_STATE_OFF || sp_i_tls.gen[slot] != m->hot.gen ||
      !sp_i_tls.t[slot])
    return sp_i_end(m, r);
  sp_thread_rec *t = (sp_thread_rec *)sp_i_tls.t[slot];
  uint64_t now = sp_i_ticks();
  if (m->cfg.aggregation_mode) {
    uint32_t d = sp__agg_nopen(&t->hot);
    while (d && t->hot.open[d - 1].region != id && !(t->hot.open[d - 1].region == 0 && t->hot.open[d - 1].depth == id)) d--;
    if (d == 0 || d == sp__agg_nopen(&t->hot)) return sp_i_end(m, r);
    while (sp__agg_nopen(&t->hot) > d) {
      t->left_open += t->hot.top[-1].region != 0;
      agg_close_top(m, t, now, 1);
    }
    return sp_i_end(m, r);
  }
  uint32_t d = t->hot.depth;
  while (d) {
    uint64_t e = t->hot.stack[d - 1];
    if ((e & SP_I_GHOST_BIT) ? (uint32_t)e == id : t->hot.ev[e].region == id) break;
    d--;
  }
  /* Not open here, or the innermost call: an ordinary end. */
  if (d == 0 || d == t->hot.depth) return sp_i_end(m, r);
  while (t->hot.depth > d) {
    uint64_t e = t->hot.stack[t->hot.depth - 1];
    uint32_t rid = (e & SP_I_GHOST_BIT) ? (uint32_t)e : t->hot.ev[e].region;
    if (!(e & SP_I_GHOST_BIT)) {
      t->hot.ev[e].depth |= SP__DEPTH_CUT;
      t->left_open++;
    }
    (void)end_timeline(m, t, rid, now);
  }
  int rc = end_timeline(m, t, id, now);
  if (t->hot.end_floor) sp__thread_rearm(m, t);
  return rc;
}

void sp__cut_open_calls(struct sp_manager *m, uint64_t tick1) {
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    if (m->have_cfg && m->cfg.aggregation_mode) {
      while (sp__agg_nopen(&t->hot)) {
        t->left_open += t->hot.top[-1].region != 0;
        agg_close_top(m, t, tick1, 0);
      }
      continue;
    }
    /* Every open call of the log (the thread's stack, a task's, the thread
     * context's while a task runs): those not ended yet. */
    for (uint64_t i = 0; i < t->hot.n; i++) {
      struct sp_i_event *ev = &t->hot.ev[i];
      if (ev->end || !ev->region) continue;
      ev->end = tick1 > ev->start ? tick1 : ev->start;
      ev->depth |= SP__DEPTH_CUT;
      t->left_open++;
    }
    t->hot.depth = 0;
    t->ctx_depth = 0;
  }
  for (uint32_t k = 0; k < m->ntasks; k++) m->tasks[k]->depth = 0;
}

/*====== Out-of-line entry points (bindings, dlopen users) ======*/

/* A NULL manager is refused rather than dereferenced: an FFI caller's null
 * pointer must not take the program down. */
SP_API int sp_region_begin_fn(sp_manager *m, sp_region r) { return m ? sp_i_begin(m, r) : SP_ERR_INVALID_ARGUMENT; }
SP_API int sp_region_end_fn(sp_manager *m, sp_region r) { return m ? sp_i_end(m, r) : SP_ERR_INVALID_ARGUMENT; }

/*====== Disabled opt-in regions, for the inlined path ======*/

/* Set bit `id` of a bitmap that lock-free readers load size first (see
 * sp_i_optin_off, sp_i_ext_plain); the caller holds the writers' lock. A
 * bitmap that must grow is replaced, and the old one retired, not freed:
 * readers may still hold it. Out of memory: the bit stays unset, and the
 * slow path keeps deciding (correct, just slower). */
void sp__bitmap_set(uint64_t **bitsp, uint32_t *nbitsp, uint64_t ***retired, size_t *nretired, uint32_t id) {
  if (id >= *nbitsp) {
    uint32_t nbits = *nbitsp ? *nbitsp : 1024;
    while (nbits <= id) nbits *= 2;
    uint64_t *bits = calloc(nbits / 64, sizeof *bits);
    uint64_t **ret = realloc(*retired, (*nretired + 1) * sizeof *ret);
    if (ret) *retired = ret;
    if (!bits || !ret) {
      free(bits);
      return;
    }
    if (*bitsp) {
      memcpy(bits, *bitsp, *nbitsp / 8);
      (*retired)[(*nretired)++] = *bitsp;
    }
    /* Bits first, then the size: a reader that sees the new size sees the
     * new array. */
    __atomic_store_n(bitsp, bits, __ATOMIC_RELEASE);
    __atomic_store_n(nbitsp, nbits, __ATOMIC_RELEASE);
  }
  __atomic_fetch_or(&(*bitsp)[id >> 6], UINT64_C(1) << (id & 63), __ATOMIC_RELEASE);
}

void sp__optin_mark_off(struct sp_manager *m, uint32_t id) {
  pthread_mutex_lock(&m->lock);
  sp__bitmap_set(&m->hot.optin_off, &m->hot.optin_nbits, &m->optin_retired, &m->noptin_retired, id);
  pthread_mutex_unlock(&m->lock);
}

/* A new setup may enable other tags: forget every decision, including those
 * call sites keep (they hold the previous key). */
void sp__optin_reset(struct sp_manager *m) {
  static uint32_t next_key;
  uint32_t key;
  /* 0 is a site's "none"; UINT32_MAX the default manager's key before its first setup */
  while ((key = __atomic_add_fetch(&next_key, 1, __ATOMIC_RELAXED)) == 0 || key == UINT32_MAX) {}
  pthread_mutex_lock(&m->lock);
  if (m->hot.optin_off) memset(m->hot.optin_off, 0, m->hot.optin_nbits / 8);
  __atomic_store_n(&m->hot.optin_key, key, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&m->lock);
}

/*====== The overhead the run paid ======*/

struct sp_overhead sp__overhead_collect(struct sp_manager *m, const struct sp_run *run,
                                        const struct sp_clock_map *cm, int keep) {
  struct sp_overhead o = {0, 0, 0, m->overhead_ns, 0, 0};
  uint64_t ticks = 0;
  for (size_t i = 0; i < run->nrows; i++)
    o.calls += run->rows[i].count ? run->rows[i].count : (uint64_t)run->rows[i].aggregate_count;
  for (sp_thread_rec *t = m->threads; t; t = t->next) {
    o.slow_calls += t->ovh_slow_calls;
    o.fresh_bytes += t->ovh_fresh_bytes;
    ticks += t->ovh_ticks;
    if (!keep) t->ovh_slow_calls = t->ovh_fresh_bytes = t->ovh_ticks = 0;
  }
  if (m->overhead_ns < 0) return o; /* nothing calibrated (deactivated, paused at setup) */
  double ns_per_tick = (double)cm->mult / 4294967296.0;
  double pages = (double)o.fresh_bytes / 4096.0;
  o.extra_ns = (double)o.slow_calls * (m->overhead_slow_ns > 0 ? m->overhead_slow_ns : 0) +
               pages * (m->overhead_fault_ns > 0 ? m->overhead_fault_ns : 0) + (double)ticks * ns_per_tick;
  o.total_ns = (double)o.calls * m->overhead_ns + o.extra_ns;
  return o;
}
