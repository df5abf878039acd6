/* mem_capture.c - recording allocations: per-thread records and buffer
 * blocks, the hand-off to the writer, start and stop, fork, and the
 * exported control functions.
 *
 * A recording thread appends its events to its own 64 KiB block (no lock,
 * no atomic read-modify-write) and updates its own counters. A full block
 * goes to the writer's queue under a mutex; the queue is bounded, so a
 * thread that outruns the writer waits for it instead of losing events or
 * growing memory. A thread's partial block goes to the queue when the
 * thread exits (a pthread key destructor, run as late as glibc allows) and
 * at stop.
 *
 * Stop must not hand a block to the writer while its owner is appending.
 * Each recording sets its record's `busy` flag, then checks that the
 * capture is still on; stop clears the flag word, issues membarrier() (a
 * full barrier in every running thread, so the two sides need no fence on
 * the recording path) and waits for every busy flag to drop.
 *
 * Signal handlers: an allocation made by a handler that interrupted a
 * wrapper of the same thread is written to the record's defer area and
 * folded in by the interrupted wrapper before it returns; the handler and
 * the wrapper never interleave otherwise, so no atomic operation is needed
 * except the final compare-and-swap that empties the area.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#define MEM_HAVE_MEMBARRIER 1
#endif

#include "memory/mem_internal.h"

MEM_HIDDEN struct mem_capture mem__cap = {
    .ctl = PTHREAD_MUTEX_INITIALIZER,
    .list = PTHREAD_MUTEX_INITIALIZER,
    .qlock = PTHREAD_MUTEX_INITIALIZER,
    .qfull = PTHREAD_COND_INITIALIZER,
    .qspace = PTHREAD_COND_INITIALIZER,
    .fd = -1,
};

#define CAP mem__cap
#define barrier() __asm__ __volatile__("" ::: "memory")

static MEM_TLS char last_error[512];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return -1;
}

/*====== Clock and memory ======*/

MEM_HIDDEN int64_t mem__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

MEM_HIDDEN int64_t mem__real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

MEM_HIDDEN uint64_t mem__ticks(void) {
#if defined(__x86_64__)
  if (MEM_LIKELY(CAP.tsc)) return __builtin_ia32_rdtsc();
#endif
  return (uint64_t)mem__mono_ns();
}

/* The profiler's rule (src/core/clock.c): the TSC where CPUID calls it
 * invariant, SCOPE_PROFILER_CLOCK=monotonic|tsc to force either. */
static int use_tsc(void) {
#if defined(__x86_64__)
  const char *force = getenv("SCOPE_PROFILER_CLOCK");
  if (force && !strcmp(force, "monotonic")) return 0;
  if (force && !strcmp(force, "tsc")) return 1;
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d >> 8) & 1;
#else
  return 0;
#endif
}

MEM_HIDDEN void *mem__map(size_t bytes) {
  /* The system call itself: our mmap wrapper must not record our tables. */
  long p = syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == -1 || (unsigned long)p > -4096UL ? NULL : (void *)p;
}

MEM_HIDDEN void mem__unmap(void *p, size_t bytes) {
  if (p) syscall(SYS_munmap, p, bytes);
}

MEM_HIDDEN void *mem__buf_grow(void *old, size_t old_cap, size_t new_cap) {
  void *p = mem__map(new_cap);
  if (p && old) {
    memcpy(p, old, old_cap);
    mem__unmap(old, old_cap);
  }
  return p;
}

/*====== Blocks and the queue ======*/

static size_t event_words(uint64_t meta) {
  return SP_MEMCAP_IS_ALLOC(meta & 0xFF) ? SP_MEMCAP_ALLOC_WORDS : SP_MEMCAP_FREE_WORDS;
}

static uint64_t block_events(const struct mem_block *b) {
  uint64_t n = 0;
  for (size_t i = 0; i < b->nwords; i += event_words(b->w[i + 2])) n++;
  return n;
}

/* qlock held. */
static struct mem_block *pool_get(void) {
  struct mem_block *b = CAP.pool;
  if (b) {
    CAP.pool = b->next;
  } else {
    b = mem__map(sizeof *b);
    if (!b) return NULL;
    if (++CAP.nblocks > CAP.nblocks_peak) CAP.nblocks_peak = CAP.nblocks;
  }
  b->next = NULL;
  b->nwords = 0;
  return b;
}

/* qlock held. */
static void enqueue(struct mem_block *b) {
  b->next = NULL;
  if (CAP.qtail)
    CAP.qtail->next = b;
  else
    CAP.qhead = b;
  CAP.qtail = b;
  CAP.nqueued++;
  pthread_cond_signal(&CAP.qfull);
}

/* A fresh block for thread `index`, waiting for the writer to give one back
 * when no memory can be mapped. qlock held. */
static struct mem_block *fresh_block(uint32_t index) {
  struct mem_block *b;
  while (!(b = pool_get()) && CAP.writer_running && !CAP.writer_failed)
    pthread_cond_wait(&CAP.qspace, &CAP.qlock);
  if (b) b->thread = index;
  return b;
}

/* r's block is full: queue it (waiting while the queue is at its bound) and
 * take a fresh one. Returns the block to append to, or NULL (events lost). */
static struct mem_block *handoff(struct mem_tls *t, struct mem_thread *r) {
  /* The guard stays "recording", not "internal": waiting here can take a
   * while, and what a signal handler allocates meanwhile must be deferred,
   * not dropped (no call below allocates). */
  (void)t;
  int saved = errno;
  pthread_mutex_lock(&CAP.qlock);
  struct mem_block *full = r->cur, *b;
  if (full && (CAP.writer_failed || !CAP.writer_running)) {
    CAP.lost += block_events(full);
    full->nwords = 0;
    b = full;
  } else {
    /* While we wait, this thread's signal handlers defer what they allocate
     * into r->defer, drained only once this event is recorded. A long wait
     * (a loaded machine) would overflow it and lose their events, so the
     * wait is sliced and gives up the queue bound once the deferred buffer
     * is half full: the bound yields one block rather than events. */
    while (full && CAP.nqueued >= CAP.max_queued && CAP.writer_running && !CAP.writer_failed) {
      if (__atomic_load_n(&r->ndefer, __ATOMIC_RELAXED) >= MEM_DEFER_WORDS / 2) break;
      CAP.waits++;
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 500000;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&CAP.qspace, &CAP.qlock, &until);
    }
    if (full) enqueue(full);
    b = fresh_block(r->index); /* NULL: no memory and no writer to give any back */
  }
  pthread_mutex_unlock(&CAP.qlock);
  r->cur = b;
  errno = saved;
  return b;
}

/*====== Thread records ======*/

static pthread_key_t exit_key;
static int exit_key_ok;
static pthread_mutex_t strag_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_thread *strag; /* events of threads past their exit destructor */

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* A record serving the current generation: a free one or a new one. list
 * lock held, capture on. */
static struct mem_thread *new_record(void) {
  struct mem_thread *r;
  for (r = CAP.all; r; r = r->next_all)
    if (!r->gen) break;
  if (!r) {
    r = mem__map(sizeof *r);
    if (!r) return NULL;
    r->next_all = CAP.all;
    __atomic_store_n(&CAP.all, r, __ATOMIC_RELEASE);
  }
  pthread_mutex_lock(&CAP.qlock);
  r->cur = pool_get();
  pthread_mutex_unlock(&CAP.qlock);
  if (!r->cur) return NULL;
  r->index = CAP.next_index++;
  r->cur->thread = r->index;
  r->ndefer = 0;
  r->busy = 0;
  r->tid = my_tid();
  __atomic_store_n(&r->gen, CAP.gen, __ATOMIC_RELEASE);
  return r;
}

static struct mem_thread *acquire_record(struct mem_tls *t) {
  int saved = errno;
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  struct mem_thread *r = NULL;
  pthread_mutex_lock(&CAP.list);
  if (HOT_ON()) r = new_record();
  if (r) {
    char name[17] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    mem__meta_add_thread(r->index, r->tid, name);
  }
  pthread_mutex_unlock(&CAP.list);
  if (r) {
    t->rec = r;
    t->gen = r->gen;
    if (exit_key_ok) pthread_setspecific(exit_key, r);
  }
  t->guard = g;
  errno = saved;
  return r;
}

/* Runs at thread exit. Other keys' destructors may still free memory after
 * ours, so ours asks to be called again until glibc's last round. */
static void thread_exit(void *arg) {
  struct mem_thread *r = arg;
  struct mem_tls *t = &mem__tls;
  static MEM_TLS int rounds;
  if (++rounds < PTHREAD_DESTRUCTOR_ITERATIONS) {
    pthread_setspecific(exit_key, r);
    return;
  }
  t->guard |= MEM_G_INTERNAL;
  pthread_mutex_lock(&CAP.list);
  if (t->rec == r && r->gen && r->gen == CAP.gen) {
    pthread_mutex_lock(&CAP.qlock);
    if (r->cur && r->cur->nwords && CAP.writer_running)
      enqueue(r->cur);
    else if (r->cur) {
      r->cur->next = CAP.pool;
      CAP.pool = r->cur;
    }
    pthread_mutex_unlock(&CAP.qlock);
    r->cur = NULL;
    __atomic_store_n(&r->gen, 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&CAP.list);
  t->rec = NULL;
  t->exited = 1;
  t->guard &= ~MEM_G_INTERNAL;
}

/*====== Recording ======*/

static void count_event(struct mem_tls *t, const uint64_t *w) {
  struct sp_memory_counters *c = &t->c;
  unsigned kind = w[2] & 0xFF;
  int64_t u = (int64_t)w[3];
  if (SP_MEMCAP_IS_ALLOC(kind)) {
    c->alloc_bytes += u;
    c->alloc_count++;
    c->live_bytes += u;
    if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
  } else {
    c->freed_bytes += u;
    c->live_bytes -= u;
  }
}

static int append(struct mem_tls *t, struct mem_thread *r, const uint64_t *w, size_t n) {
  struct mem_block *b = r->cur;
  if (MEM_UNLIKELY(!b || b->nwords + n > MEM_BLOCK_WORDS)) {
    b = handoff(t, r);
    if (!b) {
      __atomic_add_fetch(&CAP.lost, 1, __ATOMIC_RELAXED);
      return -1;
    }
  }
  uint64_t *d = b->w + b->nwords;
  for (size_t i = 0; i < n; i++) d[i] = w[i];
  b->nwords += (uint32_t)n;
  return 0;
}

/* Folds in what signal handlers deferred while we were recording. */
static void drain(struct mem_tls *t, struct mem_thread *r) {
  uint32_t done = 0;
  for (;;) {
    uint32_t n = r->ndefer;
    while (done < n) {
      const uint64_t *w = &r->defer[done];
      size_t len = event_words(w[2]);
      if (append(t, r, w, len) == 0) count_event(t, w);
      done += (uint32_t)len;
    }
    uint32_t expect = n;
    if (__atomic_compare_exchange_n(&r->ndefer, &expect, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return;
  }
}

/* An event seen while this thread's guard is set. */
static void nested(struct mem_tls *t, const uint64_t *w, size_t n) {
  if (t->guard & MEM_G_INTERNAL) return; /* our own allocations */
  struct mem_thread *r = t->rec;
  if (!r || t->gen != __atomic_load_n(&CAP.gen, __ATOMIC_RELAXED) ||
      r->ndefer + n > MEM_DEFER_WORDS) {
    __atomic_add_fetch(&CAP.unattributed, 1, __ATOMIC_RELAXED);
    return;
  }
  uint32_t at = r->ndefer;
  for (size_t i = 0; i < n; i++) r->defer[at + i] = w[i];
  barrier();
  r->ndefer = at + (uint32_t)n;
}

/* Records one event (or a realloc's two) for the calling thread. */
static void record(struct mem_tls *t, uint64_t *w, size_t n, void *site) {
  if (MEM_UNLIKELY(t->guard)) {
    nested(t, w, n);
    return;
  }
  t->guard = MEM_G_RECORDING;
  barrier();
  struct mem_thread *r = t->rec;
  int strag_locked = 0;
  if (MEM_UNLIKELY(!r || t->gen != __atomic_load_n(&CAP.gen, __ATOMIC_RELAXED))) {
    if (t->exited) {
      /* Past our exit destructor: a shared record, under a lock. */
      t->guard |= MEM_G_INTERNAL;
      pthread_mutex_lock(&strag_lock);
      t->guard &= ~MEM_G_INTERNAL;
      strag_locked = 1;
      r = strag;
      if (!r || r->gen != CAP.gen) {
        pthread_mutex_lock(&CAP.list);
        r = HOT_ON() ? new_record() : NULL;
        if (r) mem__meta_add_thread(r->index, 0, "(exiting threads)");
        pthread_mutex_unlock(&CAP.list);
        strag = r;
      }
    } else {
      r = acquire_record(t);
    }
  }
  if (MEM_LIKELY(r != NULL)) {
    r->busy = 1;
    barrier();
    if (MEM_LIKELY(HOT_ON())) {
      /* The site word of an allocation: its stack id with native traces. */
      for (size_t i = 0; i < n; i += event_words(w[i + 2]))
        if (SP_MEMCAP_IS_ALLOC(w[i + 2] & 0xFF) && MEM_UNLIKELY(CAP.native)) {
          t->guard |= MEM_G_INTERNAL;
          int saved = errno;
          w[i + 5] = mem__stack_id(site);
          errno = saved;
          t->guard &= ~MEM_G_INTERNAL;
        }
      for (size_t i = 0; i < n;) {
        size_t len = event_words(w[i + 2]);
        if (append(t, r, w + i, len) == 0) count_event(t, w + i);
        i += len;
      }
      if (MEM_UNLIKELY(r->ndefer)) drain(t, r);
    }
    barrier();
    r->busy = 0;
  }
  if (strag_locked) pthread_mutex_unlock(&strag_lock);
  barrier();
  t->guard = 0;
}

/* The common case of one event, inline: a thread with its record for this
 * capture, no guard, no native stack. Returns 0 when the event must take
 * the general path (record()). */
static inline __attribute__((always_inline)) int fast_event(struct mem_tls *t, uint64_t w1,
                                                            uint64_t meta, uint64_t usable,
                                                            uint64_t req, uint64_t site, size_t n) {
  struct mem_thread *r = t->rec;
  if (MEM_UNLIKELY(t->guard || !r || t->gen != __atomic_load_n(&CAP.gen, __ATOMIC_RELAXED) ||
                   CAP.native))
    return 0;
  t->guard = MEM_G_RECORDING;
  barrier();
  r->busy = 1;
  barrier();
  if (MEM_LIKELY(HOT_ON())) {
    struct mem_block *b = r->cur;
    if (MEM_UNLIKELY(!b || b->nwords + n > MEM_BLOCK_WORDS)) b = handoff(t, r);
    if (MEM_LIKELY(b != NULL)) {
      uint64_t *d = b->w + b->nwords;
      d[0] = mem__ticks();
      d[1] = w1;
      d[2] = meta;
      d[3] = usable;
      struct sp_memory_counters *c = &t->c;
      if (n == SP_MEMCAP_ALLOC_WORDS) {
        d[4] = req;
        d[5] = site;
        c->alloc_bytes += (int64_t)usable;
        c->alloc_count++;
        c->live_bytes += (int64_t)usable;
        if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
      } else {
        c->freed_bytes += (int64_t)usable;
        c->live_bytes -= (int64_t)usable;
      }
      b->nwords += (uint32_t)n;
    } else {
      __atomic_add_fetch(&CAP.lost, 1, __ATOMIC_RELAXED);
    }
    if (MEM_UNLIKELY(r->ndefer)) drain(t, r);
  }
  barrier();
  r->busy = 0;
  barrier();
  t->guard = 0;
  return 1;
}

MEM_HIDDEN void mem__on_alloc(void *p, size_t req, unsigned kind, void *site) {
  struct mem_tls *t = &mem__tls;
  if (!p || (t->guard & MEM_G_INTERNAL)) return;
  uint64_t usable = kind == SP_MEMCAP_MMAP      ? (req + 4095) & ~(uint64_t)4095
                    : kind == SP_MEMCAP_FOREIGN ? req
                                                : mem__usable(p);
  if (MEM_UNLIKELY(usable < req)) usable = req; /* no malloc_usable_size behind us */
  uint64_t meta = SP_MEMCAP_META(kind, t->c.region);
  if (MEM_LIKELY(fast_event(t, (uintptr_t)p, meta, usable, req, (uintptr_t)site,
                            SP_MEMCAP_ALLOC_WORDS)))
    return;
  uint64_t w[SP_MEMCAP_ALLOC_WORDS] = {mem__ticks(), (uintptr_t)p, meta, usable, req, (uintptr_t)site};
  record(t, w, SP_MEMCAP_ALLOC_WORDS, site);
}

MEM_HIDDEN void mem__on_free(void *p, unsigned kind) {
  struct mem_tls *t = &mem__tls;
  if (t->guard & MEM_G_INTERNAL) return;
  uint64_t usable = mem__usable(p);
  uint64_t meta = SP_MEMCAP_META(kind, t->c.region);
  if (MEM_LIKELY(fast_event(t, (uintptr_t)p, meta, usable, 0, 0, SP_MEMCAP_FREE_WORDS))) return;
  uint64_t w[SP_MEMCAP_FREE_WORDS] = {mem__ticks(), (uintptr_t)p, meta, usable};
  record(t, w, SP_MEMCAP_FREE_WORDS, NULL);
}

MEM_HIDDEN void *mem__realloc(void *p, size_t n, void *site) {
  struct mem_tls *t = &mem__tls;
  if (!p) {
    void *q = mem__real.realloc(NULL, n);
    if (q) mem__on_alloc(q, n, SP_MEMCAP_REALLOC, site);
    return q;
  }
  if (t->guard & MEM_G_INTERNAL) return mem__real.realloc(p, n);
  /* The old block's release is timed before the call: once it returns, the
   * old address may already belong to another thread's allocation. */
  uint64_t w[SP_MEMCAP_FREE_WORDS + SP_MEMCAP_ALLOC_WORDS];
  w[0] = mem__ticks();
  w[1] = (uintptr_t)p;
  w[2] = SP_MEMCAP_META(SP_MEMCAP_REALLOC_FREE, t->c.region);
  w[3] = mem__usable(p);
  void *q = mem__real.realloc(p, n);
  if (!q && n) return NULL; /* failed: p is untouched */
  size_t nw = SP_MEMCAP_FREE_WORDS;
  if (q) {
    uint64_t *a = w + SP_MEMCAP_FREE_WORDS;
    a[0] = mem__ticks();
    a[1] = (uintptr_t)q;
    a[2] = SP_MEMCAP_META(SP_MEMCAP_REALLOC, t->c.region);
    a[3] = mem__usable(q);
    if (MEM_UNLIKELY(a[3] < n)) a[3] = n;
    a[4] = n;
    a[5] = (uintptr_t)site;
    nw += SP_MEMCAP_ALLOC_WORDS;
  }
  record(t, w, nw, site);
  return q;
}

/*====== Direct mappings (trace_mmap) ======*/

/* The anonymous mappings recorded so far, sorted by start, so that munmap
 * releases what was recorded and nothing else (file mappings, the C
 * library's own). A munmap that cuts into a recorded mapping releases all
 * of it and records what remains as new mappings. */
struct span {
  uint64_t lo, hi;
  uint64_t site;
};
static pthread_mutex_t spans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct span *spans;
static size_t nspans, spans_cap;

static int spans_insert(uint64_t lo, uint64_t hi, uint64_t site) {
  if (nspans == spans_cap) {
    size_t cap = spans_cap ? spans_cap * 2 : 256;
    struct span *v = mem__buf_grow(spans, spans_cap * sizeof *v, cap * sizeof *v);
    if (!v) return -1;
    spans = v;
    spans_cap = cap;
  }
  size_t i = nspans;
  while (i > 0 && spans[i - 1].lo > lo) i--;
  memmove(&spans[i + 1], &spans[i], (nspans - i) * sizeof *spans);
  spans[i] = (struct span){lo, hi, site};
  nspans++;
  return 0;
}

MEM_HIDDEN void mem__on_mmap(void *p, size_t len, void *site) {
  struct mem_tls *t = &mem__tls;
  if (t->guard & MEM_G_INTERNAL) return;
  uint64_t lo = (uintptr_t)p, hi = lo + ((len + 4095) & ~(uint64_t)4095);
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  pthread_mutex_lock(&spans_lock);
  int rc = spans_insert(lo, hi, (uintptr_t)site);
  pthread_mutex_unlock(&spans_lock);
  t->guard = g;
  if (rc == 0) mem__on_alloc(p, len, SP_MEMCAP_MMAP, site);
}

MEM_HIDDEN void mem__on_munmap(void *p, size_t len) {
  struct mem_tls *t = &mem__tls;
  if (t->guard & MEM_G_INTERNAL) return;
  uint64_t lo = (uintptr_t)p, hi = lo + ((len + 4095) & ~(uint64_t)4095);
  struct span gone[8], keep[16];
  size_t ngone = 0, nkeep = 0;
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  pthread_mutex_lock(&spans_lock);
  for (size_t i = 0; i < nspans && ngone < 8;) {
    struct span s = spans[i];
    if (s.lo >= hi) break;
    if (s.hi <= lo) {
      i++;
      continue;
    }
    gone[ngone++] = s;
    memmove(&spans[i], &spans[i + 1], (nspans - i - 1) * sizeof *spans);
    nspans--;
    if (s.lo < lo) keep[nkeep++] = (struct span){s.lo, lo, s.site};
    if (s.hi > hi) keep[nkeep++] = (struct span){hi, s.hi, s.site};
  }
  for (size_t i = 0; i < nkeep; i++) spans_insert(keep[i].lo, keep[i].hi, keep[i].site);
  pthread_mutex_unlock(&spans_lock);
  t->guard = g;
  for (size_t i = 0; i < ngone; i++) {
    uint64_t w[SP_MEMCAP_FREE_WORDS] = {mem__ticks(), gone[i].lo,
                                        SP_MEMCAP_META(SP_MEMCAP_MUNMAP, t->c.region),
                                        gone[i].hi - gone[i].lo};
    record(t, w, SP_MEMCAP_FREE_WORDS, NULL);
  }
  /* What remains is timed after the release, like any allocation. */
  for (size_t i = 0; i < nkeep; i++)
    mem__on_alloc((void *)(uintptr_t)keep[i].lo, keep[i].hi - keep[i].lo, SP_MEMCAP_MMAP,
                  (void *)(uintptr_t)keep[i].site);
}

/*====== Barrier for stop ======*/

static int membarrier_mode; /* 0 none, 1 private expedited, 2 global */

static void membarrier_setup(void) {
#ifdef MEM_HAVE_MEMBARRIER
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0) return;
  if ((cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0)
    membarrier_mode = 1;
  else if (cmds & MEMBARRIER_CMD_GLOBAL)
    membarrier_mode = 2;
#endif
}

/* A full barrier in every thread of the process. Without membarrier, a
 * pause long enough for every store buffer to drain. */
static void heavy_barrier(void) {
#ifdef MEM_HAVE_MEMBARRIER
  if (membarrier_mode == 1 && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
    return;
  if (membarrier_mode == 2 && syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0) == 0) return;
#endif
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/*====== Fork ======*/

static void atfork_prepare(void) {
  mem__tls.guard |= MEM_G_INTERNAL;
  pthread_mutex_lock(&CAP.ctl);
  pthread_mutex_lock(&strag_lock);
  pthread_mutex_lock(&CAP.list);
  mem__stacks_atfork_prepare();
  mem__meta_lock();
  pthread_mutex_lock(&spans_lock);
  pthread_mutex_lock(&CAP.qlock);
}

static void atfork_parent(void) {
  pthread_mutex_unlock(&CAP.qlock);
  pthread_mutex_unlock(&spans_lock);
  mem__meta_unlock();
  mem__stacks_atfork_parent();
  pthread_mutex_unlock(&CAP.list);
  pthread_mutex_unlock(&strag_lock);
  pthread_mutex_unlock(&CAP.ctl);
  mem__tls.guard &= ~MEM_G_INTERNAL;
}

/* Everything buffered belongs to the parent, which writes it: the child
 * forgets it, and either stops or starts its own file. */
static void drop_buffers(void) {
  for (struct mem_block *b = CAP.qhead, *next; b; b = next) {
    next = b->next;
    b->next = CAP.pool;
    CAP.pool = b;
  }
  CAP.qhead = CAP.qtail = NULL;
  CAP.nqueued = 0;
  for (struct mem_thread *r = CAP.all; r; r = r->next_all) {
    if (r->gen && r->cur) {
      r->cur->next = CAP.pool;
      CAP.pool = r->cur;
    }
    r->cur = NULL;
    r->gen = 0;
    r->busy = 0;
    r->ndefer = 0;
  }
  strag = NULL;
}

static void atfork_child(void) {
  pthread_mutex_init(&CAP.ctl, NULL);
  pthread_mutex_init(&strag_lock, NULL);
  pthread_mutex_init(&CAP.list, NULL);
  pthread_mutex_init(&CAP.qlock, NULL);
  pthread_mutex_init(&spans_lock, NULL);
  pthread_cond_init(&CAP.qfull, NULL);
  pthread_cond_init(&CAP.qspace, NULL);
  mem__stacks_atfork_child();
  mem__meta_unlock(); /* re-initialises */
  int was_on = HOT_ON();
  __atomic_and_fetch(&mem__hot, ~(MEM_HOT_ON | MEM_HOT_MMAP), __ATOMIC_SEQ_CST);
  CAP.writer_running = 0; /* the writer thread does not exist here */
  drop_buffers();
  CAP.gen++;
  if (CAP.fd >= 0) close(CAP.fd);
  CAP.fd = -1;
  if (was_on && CAP.follow_fork) {
    char err[256];
    CAP.fork_child = 1;
    CAP.ppid = getppid();
    snprintf(CAP.file, sizeof CAP.file, "%s.%ld", CAP.path, (long)getpid());
    CAP.lost = CAP.unattributed = CAP.events = CAP.allocations = CAP.raw_bytes = CAP.file_bytes = 0;
    CAP.writer_failed = CAP.stopping = 0;
    CAP.next_index = 0;
    mem__meta_rewind();
    if (mem__writer_open(err, sizeof err) == 0 && mem__writer_start(err, sizeof err) == 0) {
      if (membarrier_mode == 1) membarrier_setup(); /* registration is per process */
      uint32_t on = MEM_HOT_ON | (CAP.mmap_on ? MEM_HOT_MMAP : 0);
      __atomic_or_fetch(&mem__hot, on, __ATOMIC_SEQ_CST);
    } else if (CAP.fd >= 0) {
      close(CAP.fd);
      CAP.fd = -1;
    }
  }
  mem__tls.guard &= ~MEM_G_INTERNAL;
}

/*====== Start and stop ======*/

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_once(void) {
  exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
  membarrier_setup();
}

int sp_memory_start(const sp_memory_options *o) {
  struct mem_tls *t = &mem__tls;
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  int rc = -1;
  char err[sizeof last_error];
  err[0] = '\0';
  pthread_once(&once, init_once);
  pthread_mutex_lock(&CAP.ctl);
  if (!o || o->size < sizeof(sp_memory_options)) {
    fail("sp_memory_start: options are missing or from an older header; initialise them with "
         "SP_MEMORY_OPTIONS_INIT");
  } else if (HOT_ON()) {
    fail("sp_memory_start: a capture is already running (%s); stop it with sp_memory_stop() first",
         CAP.file);
  } else if (!o->path || !*o->path) {
    fail("sp_memory_start: no capture path; set memory_profile_path or file_path");
  } else if (strlen(o->path) + 24 > sizeof CAP.path) {
    fail("sp_memory_start: the capture path is longer than %zu bytes", sizeof CAP.path - 24);
  } else if (o->max_frames < 0 || o->max_frames > 256) {
    fail("sp_memory_start: max_frames is %d; it must be 1-256 (0 for the default, 64)",
         o->max_frames);
  } else if (o->compression_level < 0 || o->compression_level > 19) {
    fail("sp_memory_start: compression_level is %d; it must be 1-19 (0 for the default, 3)",
         o->compression_level);
  } else if (o->native_traces && !mem__stacks_available()) {
    fail("sp_memory_start: native traces need libunwind, and this build has none; install "
         "libunwind-dev and rebuild, or turn memray_native_traces off");
  } else if (o->queue_bytes < 0) {
    fail("sp_memory_start: queue_bytes is negative");
  } else {
    snprintf(CAP.path, sizeof CAP.path, "%s", o->path);
    snprintf(CAP.file, sizeof CAP.file, "%s", o->path);
    CAP.native = o->native_traces != 0;
    CAP.follow_fork = o->follow_fork != 0;
    CAP.mmap_on = o->trace_mmap != 0;
    CAP.max_frames = o->max_frames ? o->max_frames : 64;
    CAP.level = o->compression_level ? o->compression_level : 3;
    int64_t qb = o->queue_bytes ? o->queue_bytes : 8 << 20;
    CAP.max_queued = (uint32_t)(qb / MEM_BLOCK_BYTES < 2 ? 2 : qb / MEM_BLOCK_BYTES > 65536 ? 65536
                                                                   : qb / MEM_BLOCK_BYTES);
    CAP.fork_child = 0;
    CAP.ppid = getppid();
    CAP.tsc = use_tsc();
    mem__usable_check();
    CAP.lost = CAP.unattributed = CAP.events = CAP.allocations = CAP.raw_bytes = CAP.file_bytes = 0;
    CAP.waits = 0;
    CAP.nblocks_peak = CAP.nblocks;
    CAP.writer_failed = CAP.stopping = 0;
    CAP.next_index = 0;
    pthread_mutex_lock(&CAP.list);
    CAP.gen++;
    pthread_mutex_unlock(&CAP.list);
    strag = NULL;
    nspans = 0;
    mem__stacks_reset();
    mem__meta_reset(1);
    if (mem__writer_open(err, sizeof err) == 0 && mem__writer_start(err, sizeof err) == 0) {
      uint32_t on = MEM_HOT_ON | (CAP.mmap_on ? MEM_HOT_MMAP : 0);
      __atomic_or_fetch(&mem__hot, on, __ATOMIC_SEQ_CST);
      rc = 0;
    } else {
      if (CAP.fd >= 0) close(CAP.fd);
      CAP.fd = -1;
      fail("%s", err);
    }
  }
  pthread_mutex_unlock(&CAP.ctl);
  t->guard = g;
  return rc;
}

static void fill_stats(sp_memory_stats *st) {
  memset(st, 0, sizeof *st);
  st->events = CAP.events;
  st->allocations = CAP.allocations;
  st->lost_events = CAP.lost;
  st->unattributed = CAP.unattributed;
  st->raw_bytes = CAP.raw_bytes;
  st->file_bytes = CAP.file_bytes;
  st->stacks = mem__stacks_count();
  st->threads = CAP.next_index;
  st->buffer_bytes_peak = CAP.nblocks_peak * sizeof(struct mem_block);
  st->waits = CAP.waits;
}

int sp_memory_stop(sp_memory_stats *stats) {
  struct mem_tls *t = &mem__tls;
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  int rc = 0;
  char err[sizeof last_error];
  err[0] = '\0';
  pthread_mutex_lock(&CAP.ctl);
  if (!HOT_ON()) {
    rc = fail("sp_memory_stop: no capture is running");
    if (stats) memset(stats, 0, sizeof *stats);
    pthread_mutex_unlock(&CAP.ctl);
    t->guard = g;
    return rc;
  }
  __atomic_and_fetch(&mem__hot, ~(MEM_HOT_ON | MEM_HOT_MMAP), __ATOMIC_SEQ_CST);
  heavy_barrier();
  /* Wait for recordings in flight (the writer keeps draining meanwhile, so
   * a thread waiting for queue space finishes). A thread stuck for 10 s
   * keeps its block; its events count as lost. */
  for (struct mem_thread *r = __atomic_load_n(&CAP.all, __ATOMIC_ACQUIRE); r; r = r->next_all) {
    if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != CAP.gen) continue;
    for (int spins = 0; r->busy && spins < 100000; spins++) {
      struct timespec ts = {0, 100 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  pthread_mutex_lock(&strag_lock);
  pthread_mutex_lock(&CAP.list);
  pthread_mutex_lock(&CAP.qlock);
  for (struct mem_thread *r = CAP.all; r; r = r->next_all) {
    if (r->gen != CAP.gen) continue;
    if (r->busy) {
      if (r->cur) CAP.lost += block_events(r->cur);
      r->cur = NULL; /* left to its owner: never reused */
    } else if (r->cur && r->cur->nwords) {
      enqueue(r->cur);
    } else if (r->cur) {
      r->cur->next = CAP.pool;
      CAP.pool = r->cur;
    }
    r->cur = NULL;
    if (!r->busy) __atomic_store_n(&r->gen, 0, __ATOMIC_RELEASE);
  }
  strag = NULL;
  pthread_mutex_unlock(&CAP.qlock);
  CAP.gen++;
  pthread_mutex_unlock(&CAP.list);
  pthread_mutex_unlock(&strag_lock);
  if (mem__writer_finish(err, sizeof err)) rc = fail("%s", err);
  /* Every block is back in the pool: give the memory back. */
  pthread_mutex_lock(&CAP.qlock);
  for (struct mem_block *b = CAP.pool, *next; b; b = next) {
    next = b->next;
    mem__unmap(b, sizeof *b);
    CAP.nblocks--;
  }
  CAP.pool = NULL;
  pthread_mutex_unlock(&CAP.qlock);
  if (stats) fill_stats(stats);
  pthread_mutex_unlock(&CAP.ctl);
  t->guard = g;
  return rc;
}

int sp_memory_active(void) { return HOT_ON() ? 1 : 0; }

const char *sp_memory_error(void) { return last_error; }

struct sp_memory_counters *sp_memory_thread_counters(void) { return &mem__tls.c; }

void sp_memory_region_name(uint32_t id, const char *name) {
  struct mem_tls *t = &mem__tls;
  uint32_t g = t->guard;
  t->guard |= MEM_G_INTERNAL;
  if (name) mem__meta_add_region(id, name, strlen(name));
  t->guard = g;
}

void sp_memory_record_alloc(void *p, size_t size) {
  if (HOT_ON()) mem__on_alloc(p, size, SP_MEMCAP_FOREIGN, __builtin_return_address(0));
}

void sp_memory_record_free(void *p, size_t size) {
  if (!HOT_ON() || !p) return;
  struct mem_tls *t = &mem__tls;
  uint64_t w[SP_MEMCAP_FREE_WORDS] = {mem__ticks(), (uintptr_t)p,
                                      SP_MEMCAP_META(SP_MEMCAP_FOREIGN_FREE, t->c.region), size};
  record(t, w, SP_MEMCAP_FREE_WORDS, NULL);
}

const struct sp_memory_api sp_memory_api_v1 = {
    SP_MEMORY_ABI,
    sizeof(struct sp_memory_api),
    sp_memory_start,
    sp_memory_stop,
    sp_memory_active,
    sp_memory_error,
    sp_memory_thread_counters,
    sp_memory_region_name,
    sp_memory_record_alloc,
    sp_memory_record_free,
    sp_memory_timeline,
};

/* A program that never stops its capture (no finalize, a forked child that
 * returns from main) still gets a complete file: libraries' destructors run
 * after the program's atexit handlers, so the profiler's own exit hook has
 * had its turn. A process that ends with _exit() or a signal keeps what the
 * writer wrote so far (docs/memory-capture.md). */
__attribute__((destructor)) static void stop_at_exit(void) {
  if (HOT_ON()) (void)sp_memory_stop(NULL);
}
