/* test-memory.c - the allocation interposer (libscope_profiler_memory.so,
 * linked into this test before libc) and the capture reader: exact per-thread
 * counters and per-region figures for every entry point from 8 threads,
 * realloc growing and shrinking, a leak found by file and line, the peak's
 * call site with native traces, fork with and without follow_fork, signal
 * handlers that allocate, threads that existed before the capture started,
 * direct mmap/munmap, a 10M-allocation storm that loses nothing in bounded
 * memory, and hostile capture files.
 *
 * Built with -fno-builtin: the compiler must not fold the allocations away.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/memcap.h"
#include "h5util.h"
#include "harness.h"
#include "read/memcap_read.h"
#include "scope_profiler.h"
#include "scope_profiler/memory.h"

#define PATH "cap.bin"

/* Starts a capture, and skips the case when this process's malloc is not
 * the interposer's (a sanitizer's interceptors come first under ASan). */
static void start_with(const sp_memory_options *o) {
  if (sp_memory_start(o)) SP_FAIL_("sp_memory_start: %s", sp_memory_error());
  struct sp_memory_counters *c = sp_memory_thread_counters();
  int64_t before = c->alloc_count;
  free(malloc(1));
  if (c->alloc_count == before) {
    sp_memory_stop(NULL);
    SKIP("malloc here is not the interposer's (a sanitizer intercepts it)");
  }
}

static void start(const char *path, int native, int follow) {
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = path;
  o.native_traces = native;
  o.follow_fork = follow;
  start_with(&o);
}

static sp_memory_stats stop(void) {
  sp_memory_stats st;
  if (sp_memory_stop(&st)) SP_FAIL_("sp_memory_stop: %s", sp_memory_error());
  return st;
}

static sp_memcap *open_capture(const char *path, sp_memcap_stats *s) {
  sp_memcap *c;
  ASSERT_OK(sp__memcap_open(path, &c));
  if (s) ASSERT_OK(sp__memcap_analyze(c, 16, s));
  return c;
}

static const struct sp_memcap_region_stat *region(const sp_memcap_stats *s, uint32_t id) {
  for (size_t i = 0; i < s->nregions; i++)
    if (s->regions[i].id == id) return &s->regions[i];
  SP_FAIL_("region %u is not in the capture", id);
}

/*====== Expected figures, kept by the test itself ======*/

struct expect {
  int64_t alloc_bytes, freed_bytes, alloc_count, free_count, live, peak, end_bytes;
  uint64_t kinds[SP_MEMCAP_KIND_END];
};

static void *got(struct expect *x, void *p, unsigned kind) {
  ASSERT(p != NULL);
  int64_t u = (int64_t)malloc_usable_size(p);
  x->alloc_bytes += u;
  x->alloc_count++;
  x->live += u;
  if (x->live > x->peak) x->peak = x->live;
  x->kinds[kind]++;
  return p;
}

static void gone(struct expect *x, void *p, unsigned kind) {
  int64_t u = (int64_t)malloc_usable_size(p);
  x->freed_bytes += u;
  x->free_count++;
  x->live -= u;
  x->kinds[kind]++;
}

static void release(struct expect *x, void *p) {
  gone(x, p, SP_MEMCAP_FREE);
  free(p);
}

static void *resize(struct expect *x, void *p, size_t n) {
  if (p) gone(x, p, SP_MEMCAP_REALLOC_FREE);
  return got(x, realloc(p, n), SP_MEMCAP_REALLOC);
}

/* Every entry point once, sizes varied by `salt`; one block is left live. */
static void entry_points(struct expect *x, size_t salt) {
  void *a = got(x, malloc(24 + salt), SP_MEMCAP_MALLOC);
  void *b = got(x, calloc(3, 40 + salt), SP_MEMCAP_CALLOC);
  void *c = resize(x, NULL, 64 + salt);     /* realloc(NULL) allocates */
  c = resize(x, c, 4096 + salt);            /* grows */
  c = resize(x, c, 16 + salt);              /* shrinks */
  void *old = c;
  gone(x, old, SP_MEMCAP_REALLOC_FREE);
  c = got(x, reallocarray(c, 10, 20 + salt), SP_MEMCAP_REALLOC);
  void *d = NULL;
  ASSERT_EQ(posix_memalign(&d, 64, 200 + salt), 0);
  got(x, d, SP_MEMCAP_POSIX_MEMALIGN);
  void *e = got(x, aligned_alloc(128, 256), SP_MEMCAP_ALIGNED_ALLOC);
  void *f = got(x, memalign(32, 100 + salt), SP_MEMCAP_MEMALIGN);
  void *g = got(x, valloc(1000 + salt), SP_MEMCAP_VALLOC);
  void *h = got(x, pvalloc(5000 + salt), SP_MEMCAP_PVALLOC);
  ASSERT_EQ((uintptr_t)d % 64, 0);
  ASSERT_EQ((uintptr_t)e % 128, 0);
  ASSERT_EQ((uintptr_t)f % 32, 0);
  ASSERT_EQ((uintptr_t)g % 4096, 0);
  void *v[] = {a, b, c, d, e, f, g, h};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) release(x, v[i]);
  void *kept = got(x, malloc(333 + salt), SP_MEMCAP_MALLOC);
  x->end_bytes += (int64_t)malloc_usable_size(kept);
}

struct worker {
  uint32_t region;
  struct expect x;
  struct sp_memory_counters delta;
  int64_t peak;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  struct sp_memory_counters *c = sp_memory_thread_counters(), before = *c;
  c->region = w->region;
  c->peak_bytes = c->live_bytes; /* as the column probe does at a region's entry */
  for (int rep = 0; rep < 50; rep++) entry_points(&w->x, w->region + (size_t)rep);
  w->peak = c->peak_bytes - before.live_bytes;
  c->region = 0;
  w->delta.alloc_bytes = c->alloc_bytes - before.alloc_bytes;
  w->delta.freed_bytes = c->freed_bytes - before.freed_bytes;
  w->delta.alloc_count = c->alloc_count - before.alloc_count;
  w->delta.live_bytes = c->live_bytes - before.live_bytes;
  return NULL;
}

SP_TEST(entry_points_from_8_threads_exact) {
  start(PATH, 0, 0);
  pthread_t t[8];
  struct worker w[8];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 8; i++) {
    w[i].region = 100 + (uint32_t)i;
    pthread_create(&t[i], NULL, worker_main, &w[i]);
  }
  for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
  sp_memory_region_name(100, "solver");
  sp_memory_stats st = stop();
  ASSERT_EQ(st.lost_events, 0);
  ASSERT_EQ(st.unattributed, 0);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  ASSERT(c->complete);
  ASSERT_STR_EQ(sp__memcap_region_name(c, 100), "solver");
  uint64_t kinds[SP_MEMCAP_KIND_END] = {0}, want[SP_MEMCAP_KIND_END] = {0};
  for (int i = 0; i < 8; i++) {
    const struct expect *x = &w[i].x;
    /* The thread's own counters. */
    ASSERT_EQ(w[i].delta.alloc_bytes, x->alloc_bytes);
    ASSERT_EQ(w[i].delta.freed_bytes, x->freed_bytes);
    ASSERT_EQ(w[i].delta.alloc_count, x->alloc_count);
    ASSERT_EQ(w[i].delta.live_bytes, x->end_bytes);
    ASSERT_EQ(w[i].peak, x->peak);
    ASSERT_EQ(x->alloc_count, 50 * 12);
    /* The capture's figures for the thread's region. */
    const struct sp_memcap_region_stat *r = region(&s, w[i].region);
    ASSERT_EQ(r->alloc_bytes, x->alloc_bytes);
    ASSERT_EQ(r->alloc_count, x->alloc_count);
    ASSERT_EQ(r->freed_bytes, x->freed_bytes);
    ASSERT_EQ(r->free_count, x->free_count);
    ASSERT_EQ(r->end_bytes, x->end_bytes);
    ASSERT_EQ(r->end_count, 50);
    for (unsigned k = 0; k < SP_MEMCAP_KIND_END; k++) want[k] += x->kinds[k];
  }
  struct sp_memcap_iter *it;
  ASSERT_OK(sp__memcap_iter_new(c, &it));
  struct sp_memcap_event e;
  uint32_t th;
  uint64_t last = 0;
  while (sp__memcap_iter_next(it, &e, &th) == 1) {
    ASSERT(e.t >= last); /* time order across threads */
    last = e.t;
    if (e.region >= 100 && e.region < 108) kinds[e.kind]++;
  }
  sp__memcap_iter_free(it);
  for (unsigned k = 0; k < SP_MEMCAP_KIND_END; k++) {
    if (want[k] != kinds[k]) SP_FAIL_("kind %s: %llu events, expected %llu", sp__memcap_kind_name(k),
                                      (unsigned long long)kinds[k], (unsigned long long)want[k]);
  }
  ASSERT_EQ(want[SP_MEMCAP_PVALLOC], 400);
  ASSERT_EQ(want[SP_MEMCAP_REALLOC], 8 * 50 * 4);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

SP_TEST(realloc_grows_and_shrinks) {
  start(PATH, 0, 0);
  struct sp_memory_counters *c = sp_memory_thread_counters(), b = *c;
  c->region = 5;
  c->peak_bytes = c->live_bytes;
  void *p = malloc(100);
  size_t u0 = malloc_usable_size(p);
  p = realloc(p, 100000); /* grows (moves) */
  size_t u1 = malloc_usable_size(p);
  p = realloc(p, 40); /* shrinks */
  size_t u2 = malloc_usable_size(p);
  int64_t peak = c->peak_bytes - b.live_bytes;
  p = realloc(p, 0); /* glibc: frees, returns NULL */
  ASSERT(p == NULL);
  c->region = 0;
  ASSERT_EQ(c->alloc_count - b.alloc_count, 3);
  ASSERT_EQ(c->alloc_bytes - b.alloc_bytes, (int64_t)(u0 + u1 + u2));
  ASSERT_EQ(c->freed_bytes - b.freed_bytes, (int64_t)(u0 + u1 + u2));
  ASSERT_EQ(c->live_bytes, b.live_bytes);
  /* realloc's old block is released before its new one is allocated */
  ASSERT_EQ(peak, (int64_t)(u0 > u1 ? u0 : u1));
  stop();
  sp_memcap_stats s;
  sp_memcap *cap = open_capture(PATH, &s);
  const struct sp_memcap_region_stat *r = region(&s, 5);
  ASSERT_EQ(r->alloc_count, 3);
  ASSERT_EQ(r->free_count, 3);
  ASSERT_EQ(r->end_bytes, 0);
  ASSERT_EQ(s.peak_bytes, u1); /* the grown block, alone */
  ASSERT_EQ(r->peak_bytes, u1);
  sp__memcap_stats_free(&s);
  sp__memcap_close(cap);
}

/* The site is the wrapper's return address, so a tail call (return
 * malloc(n)) would show its caller: keep the block in a global. */
static int leak_line;
static void *kept_block;
__attribute__((noinline)) static void leaky(void) {
  leak_line = __LINE__ + 1;
  kept_block = malloc(7777);
  memset(kept_block, 1, 16);
}

/* The symbolised call site of a site key: basename of file, line, function. */
static void site_of(sp_memcap *c, sp_symbolizer *sym, uint64_t key, const char **file, int *line,
                    const char **fn) {
  struct sp_sym in;
  uint64_t pc = sp__memcap_site_pc(c, key);
  ASSERT(pc != 0);
  ASSERT_OK(sp__sym_lookup(sym, pc - 1, &in));
  ASSERT(in.nframes > 0);
  const char *f = in.frames[0].file ? in.frames[0].file : "";
  *file = strrchr(f, '/') ? strrchr(f, '/') + 1 : f;
  *line = in.frames[0].line;
  *fn = in.frames[0].function;
}

SP_TEST(leak_found_by_file_and_line) {
  start(PATH, 0, 0);
  leaky();
  for (int i = 0; i < 100; i++) free(malloc(64)); /* released: not leaks */
  stop();
  free(kept_block);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  sp_symbolizer *sym = sp__memcap_symbolizer(c);
  int found = 0;
  for (size_t i = 0; i < s.nleaks; i++) {
    const char *file, *fn;
    int line;
    site_of(c, sym, s.leaks[i].key, &file, &line, &fn);
    if (s.leaks[i].requested == 7777) {
      ASSERT_STR_EQ(file, "test-memory.c");
      ASSERT_EQ(line, leak_line);
      ASSERT_STR_EQ(fn, "leaky");
      ASSERT_EQ(s.leaks[i].count, 1);
      found = 1;
    }
  }
  ASSERT(found);
  sp__sym_free(sym);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

static int small_line, big_line;
__attribute__((noinline)) static void phase_small(void) {
  void *v[10];
  small_line = __LINE__ + 1;
  for (int i = 0; i < 10; i++) v[i] = malloc(1 << 20);
  for (int i = 0; i < 10; i++) free(v[i]);
}
__attribute__((noinline)) static void phase_big(void) {
  void *v[20];
  big_line = __LINE__ + 1;
  for (int i = 0; i < 20; i++) v[i] = malloc(1 << 20);
  for (int i = 0; i < 20; i++) free(v[i]);
}
__attribute__((noinline)) static void phases(void) {
  phase_small();
  phase_big();
  phase_small();
}

SP_TEST(peak_attributed_to_its_call_site_with_native_traces) {
  start(PATH, 1, 0);
  phases();
  sp_memory_stats st = stop();
  ASSERT_GT(st.stacks, 0);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  ASSERT(c->flags & SP_MEMCAP_F_NATIVE);
  ASSERT_GE(s.peak_bytes, 20u << 20);
  ASSERT_LT(s.peak_bytes, 22u << 20);
  ASSERT(s.npeak_sites > 0);
  sp_symbolizer *sym = sp__memcap_symbolizer(c);
  const char *file, *fn;
  int line;
  site_of(c, sym, s.peak_sites[0].key, &file, &line, &fn);
  ASSERT_STR_EQ(fn, "phase_big");
  ASSERT_STR_EQ(file, "test-memory.c");
  ASSERT_EQ(line, big_line);
  ASSERT_EQ(s.peak_sites[0].count, 20);
  ASSERT_GE(s.peak_sites[0].bytes, 20u << 20);
  /* The stack goes on through the callers. */
  const struct sp_memcap_stack *stk = &c->stacks[s.peak_sites[0].key - 1];
  ASSERT_GE(stk->n, 3);
  struct sp_sym in;
  ASSERT_OK(sp__sym_lookup(sym, stk->pc[1] - 1, &in));
  ASSERT_STR_EQ(in.frames[in.nframes - 1].function, "phases");
  (void)small_line;
  sp__sym_free(sym);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

/* Forks: the child allocates 4321 bytes and leaks them, then exits. */
static pid_t fork_child(int use_stop) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    struct sp_memory_counters *c = sp_memory_thread_counters();
    c->region = 77;
    void *p = malloc(4321);
    (void)p;
    if (use_stop && sp_memory_active()) sp_memory_stop(NULL);
    exit(sp_memory_active() ? 10 : 0); /* exit: the library stops a running capture */
  }
  return pid;
}

/* fork_child, waited for: its exit status says whether it was still
 * capturing when it exited (10) or not (0). */
static pid_t fork_and_wait(int use_stop, int want_exit) {
  pid_t pid = fork_child(use_stop);
  int status;
  waitpid(pid, &status, 0);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), want_exit);
  return pid;
}

/* The capture a followed child writes: the parent's path + "." + its pid. */
static void child_path(char *buf, size_t size, const char *parent, pid_t pid) {
  snprintf(buf, size, "%s.%d", parent, (int)pid);
}

static int has_region(const sp_memcap_stats *s, uint32_t id) {
  for (size_t i = 0; i < s->nregions; i++)
    if (s->regions[i].id == id) return 1;
  return 0;
}

SP_TEST(fork_follow_fork_writes_the_child_file) {
  start(PATH, 0, 1);
  struct sp_memory_counters *c = sp_memory_thread_counters();
  c->region = 11;
  void *before = malloc(1234); /* the parent's, before the fork */
  pid_t pid = fork_and_wait(0, 10); /* still capturing in the child */
  c->region = 12;
  void *after = malloc(99);
  c->region = 0;
  stop();
  free(before);
  free(after);
  char child[64];
  child_path(child, sizeof child, PATH, pid);
  sp_memcap_stats s;
  sp_memcap *cc = open_capture(child, &s);
  ASSERT(cc->complete);
  ASSERT(cc->flags & SP_MEMCAP_F_FORK_CHILD);
  ASSERT_EQ(cc->pid, pid);
  ASSERT_EQ(cc->ppid, getpid());
  const struct sp_memcap_region_stat *r = region(&s, 77);
  ASSERT_EQ(r->alloc_count, 1);
  void *q = malloc(4321);
  ASSERT_EQ(r->end_bytes, malloc_usable_size(q)); /* the leak, exactly */
  free(q);
  ASSERT(!has_region(&s, 11)); /* the parent's events stay in the parent's file */
  ASSERT(!has_region(&s, 12));
  sp__memcap_stats_free(&s);
  sp__memcap_close(cc);
  sp_memcap *pc = open_capture(PATH, &s);
  ASSERT(!has_region(&s, 77));
  ASSERT_EQ(region(&s, 11)->alloc_count, 1);
  ASSERT_EQ(region(&s, 12)->alloc_count, 1);
  sp__memcap_stats_free(&s);
  sp__memcap_close(pc);
}

SP_TEST(fork_without_follow_fork_stops_in_the_child) {
  start(PATH, 0, 0);
  pid_t pid = fork_and_wait(0, 0); /* not capturing in the child */
  stop();
  char child[64];
  child_path(child, sizeof child, PATH, pid);
  ASSERT(!sp_test_file_exists(child));
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  ASSERT(!has_region(&s, 77));
  ASSERT(c->complete);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

SP_TEST(child_that_stops_its_own_capture) {
  start(PATH, 0, 1);
  pid_t pid = fork_and_wait(1, 0);
  stop();
  char child[64];
  child_path(child, sizeof child, PATH, pid);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(child, &s);
  ASSERT_EQ(region(&s, 77)->alloc_count, 1);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

static volatile sig_atomic_t handler_allocs, storm_go, storm_done;
static void on_signal(int sig) {
  (void)sig;
  void *p = malloc(48);
  free(p);
  handler_allocs++;
}

/* Signals the allocating thread as fast as the system lets it. */
static void *signaller(void *arg) {
  pthread_t target = *(pthread_t *)arg;
  while (!storm_go) usleep(100);
  while (!storm_done) {
    pthread_kill(target, SIGUSR1);
    usleep(5);
  }
  return NULL;
}

SP_TEST(signal_handlers_that_allocate_lose_nothing) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, NULL);
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = PATH;
  o.queue_bytes = 1 << 17; /* two blocks: the thread waits for the writer often */
  start_with(&o);
  /* The signaller first: creating a thread allocates (its TLS vector). */
  pthread_t self = pthread_self(), sig;
  pthread_create(&sig, NULL, signaller, &self);
  struct sp_memory_counters *c = sp_memory_thread_counters(), b = *c;
  c->region = 9;
  storm_go = 1;
  long n = 0;
  while (handler_allocs < 3000 && n < 20000000) {
    free(malloc(32));
    n++;
  }
  storm_done = 1;
  pthread_join(sig, NULL);
  c->region = 0;
  long h = handler_allocs;
  ASSERT_GT(h, 0);
  ASSERT_EQ(c->alloc_count - b.alloc_count, n + h);
  ASSERT_EQ(c->freed_bytes - b.freed_bytes, c->alloc_bytes - b.alloc_bytes);
  sp_memory_stats st = stop();
  ASSERT_EQ(st.unattributed, 0);
  ASSERT_EQ(st.lost_events, 0);
  sp_memcap_stats s;
  sp_memcap *cap = open_capture(PATH, &s);
  const struct sp_memcap_region_stat *r = region(&s, 9);
  ASSERT_EQ(r->alloc_count, n + h);
  ASSERT_EQ(r->free_count, n + h);
  ASSERT_EQ(r->end_bytes, 0);
  sp__memcap_stats_free(&s);
  sp__memcap_close(cap);
}

static pthread_barrier_t gate;
static void *early_thread(void *arg) {
  struct worker *w = arg;
  pthread_barrier_wait(&gate); /* created before the capture starts */
  struct sp_memory_counters *c = sp_memory_thread_counters();
  c->region = w->region;
  for (int i = 0; i < 1000; i++) release(&w->x, got(&w->x, malloc(16 + (size_t)i), SP_MEMCAP_MALLOC));
  c->region = 0;
  return NULL;
}

SP_TEST(threads_created_before_the_capture) {
  pthread_barrier_init(&gate, NULL, 5);
  pthread_t t[4];
  struct worker w[4];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 4; i++) {
    w[i].region = 200 + (uint32_t)i;
    pthread_create(&t[i], NULL, early_thread, &w[i]);
  }
  usleep(20000);
  start(PATH, 0, 0);
  pthread_barrier_wait(&gate);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  stop();
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  for (int i = 0; i < 4; i++) {
    const struct sp_memcap_region_stat *r = region(&s, w[i].region);
    ASSERT_EQ(r->alloc_count, 1000);
    ASSERT_EQ(r->alloc_bytes, w[i].x.alloc_bytes);
    ASSERT_EQ(r->freed_bytes, w[i].x.freed_bytes);
  }
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

SP_TEST(nothing_is_recorded_without_a_capture) {
  struct sp_memory_counters *c = sp_memory_thread_counters(), b = *c;
  for (int i = 0; i < 1000; i++) free(malloc(100));
  ASSERT_EQ(c->alloc_count, b.alloc_count);
  ASSERT_EQ(c->alloc_bytes, b.alloc_bytes);
  ASSERT(!sp_memory_active());
  ASSERT_EQ(sp_memory_stop(NULL), -1);
  ASSERT_CONTAINS(sp_memory_error(), "no capture is running");
}

SP_TEST(start_refuses_bad_options) {
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  ASSERT_EQ(sp_memory_start(&o), -1);
  ASSERT_CONTAINS(sp_memory_error(), "no capture path");
  o.path = "/nonexistent-dir/x.bin";
  ASSERT_EQ(sp_memory_start(&o), -1);
  ASSERT_CONTAINS(sp_memory_error(), "cannot create the memory capture /nonexistent-dir/x.bin");
  o.path = PATH;
  o.max_frames = 1000;
  ASSERT_EQ(sp_memory_start(&o), -1);
  ASSERT_CONTAINS(sp_memory_error(), "max_frames");
  o.max_frames = 0;
  ASSERT_EQ(sp_memory_start(&o), 0);
  ASSERT_EQ(sp_memory_start(&o), -1);
  ASSERT_CONTAINS(sp_memory_error(), "already running");
  stop();
  ASSERT(!sp_memory_active());
  /* a second capture in the same process */
  start(PATH, 0, 0);
  free(malloc(10));
  stop();
}

SP_TEST(direct_mmap_and_munmap) {
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = PATH;
  o.trace_mmap = 1;
  start_with(&o);
  struct sp_memory_counters *c = sp_memory_thread_counters(), b = *c;
  c->region = 3;
  size_t len = 1 << 20;
  char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT(m != MAP_FAILED);
  ASSERT_EQ(c->alloc_bytes - b.alloc_bytes, (int64_t)len);
  munmap(m + len / 2, len / 2); /* a partial release */
  ASSERT_EQ(c->live_bytes - b.live_bytes, (int64_t)len / 2);
  munmap(m, len / 2);
  ASSERT_EQ(c->live_bytes - b.live_bytes, 0);
  /* a file mapping is not memory the program allocated */
  FILE *f = fopen("file.dat", "w+");
  fputs("hello", f);
  fflush(f);
  void *fm = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fileno(f), 0);
  munmap(fm, 4096);
  fclose(f);
  c->region = 0;
  ASSERT_EQ(c->live_bytes - b.live_bytes, 0);
  stop();
  sp_memcap_stats s;
  sp_memcap *cap = open_capture(PATH, &s);
  ASSERT(cap->flags & SP_MEMCAP_F_MMAP);
  const struct sp_memcap_region_stat *r = region(&s, 3);
  ASSERT_EQ(r->end_bytes, 0);
  ASSERT_EQ(r->freed_bytes, r->alloc_bytes);
  sp__memcap_stats_free(&s);
  sp__memcap_close(cap);
}

static long hwm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) v = atol(line + 6);
  if (f) fclose(f);
  return v;
}

static void *storm(void *arg) {
  struct sp_memory_counters *c = sp_memory_thread_counters();
  c->region = 7;
  for (long i = 0; i < 5000000; i++) free(malloc(16 + (size_t)(i & 63)));
  c->region = 0;
  (void)arg;
  return NULL;
}

SP_TEST(storm_of_10M_allocations_loses_nothing_in_bounded_memory) {
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = PATH;
  o.queue_bytes = 1 << 20; /* 16 blocks: the writer must keep up or make threads wait */
  start_with(&o);
  long hwm0 = hwm_kib();
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, storm, NULL);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  sp_memory_stats st = stop();
  long grew = hwm_kib() - hwm0;
  ASSERT_EQ(st.lost_events, 0);
  ASSERT_GE(st.events, 20000000);
  /* queue bound + one block per thread (3 threads) + the writer's spare */
  ASSERT_LE(st.buffer_bytes_peak, (16 + 3 + 2) * 65536);
  ASSERT_LT(grew, 16 * 1024); /* KiB: the process did not grow with the events */
  printf("# storm: %llu events, %llu file bytes (%.2f B/event), buffers peak %llu B, %llu waits, "
         "VmHWM +%ld KiB\n", (unsigned long long)st.events, (unsigned long long)st.file_bytes,
         (double)st.file_bytes / (double)st.events, (unsigned long long)st.buffer_bytes_peak,
         (unsigned long long)st.waits, grew);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(PATH, &s);
  ASSERT_EQ(c->stat.lost, 0);
  const struct sp_memcap_region_stat *r = region(&s, 7);
  ASSERT_EQ(r->alloc_count, 10000000);
  ASSERT_EQ(r->free_count, 10000000);
  ASSERT_EQ(r->end_bytes, 0);
  ASSERT_EQ(s.replaced, 0);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

/*====== Hostile files ======*/

static void put_rec(FILE *f, uint32_t type, const void *p, uint32_t n, uint32_t stored_override,
                    int bad_crc) {
  unsigned char h[SP_MEMCAP_RECORD_HEADER] = {0};
  sp__memcap_le32(h, type);
  sp__memcap_le32(h + 4, stored_override ? stored_override : n);
  sp__memcap_le32(h + 8, n);
  sp__memcap_le32(h + 16, sp__memcap_crc32(p, n) ^ (bad_crc ? 1u : 0u));
  fwrite(h, 1, sizeof h, f);
  fwrite(p, 1, n, f);
}

static void put_prelude(FILE *f, unsigned version) {
  fwrite(SP_MEMCAP_MAGIC, 1, SP_MEMCAP_MAGIC_LEN, f);
  fputc((int)(version & 0xFF), f);
  fputc((int)(version >> 8), f);
}

static void put_head(FILE *f, unsigned flags) {
  struct sp_memcap_buf b = {0};
  sp__memcap_put_varint(&b, flags);
  for (int i = 0; i < 6; i++) sp__memcap_put_varint(&b, 1);
  sp__memcap_put_string(&b, "prog", 4);
  put_rec(f, SP_MEMCAP_HEAD, b.p, (uint32_t)b.n, 0, 0);
  free(b.p);
}

static void put_events(FILE *f, unsigned kind, uint64_t site) {
  uint64_t w[SP_MEMCAP_ALLOC_WORDS] = {100, 0x1000, SP_MEMCAP_META(kind, 1), 32, 30, site};
  struct sp_memcap_buf b = {0};
  uint64_t scratch[SP_MEMCAP_ENC_SCRATCH(6)];
  sp__memcap_encode_events(&b, 0, w, SP_MEMCAP_IS_ALLOC(kind) ? 6 : 4, scratch);
  put_rec(f, SP_MEMCAP_EVNT, b.p, (uint32_t)b.n, 0, 0);
  free(b.p);
}

static sp_status open_status(const char *path) {
  sp_memcap *c = NULL;
  sp_status st = sp__memcap_open(path, &c);
  sp__memcap_close(c);
  return st;
}

/* A capture file begun with the prelude of format `version`. */
static FILE *new_capture(const char *path, unsigned version) {
  FILE *f = fopen(path, "wb");
  ASSERT(f);
  put_prelude(f, version);
  return f;
}

/* Closes the hostile file f and checks that opening it is a format error
 * whose message contains `says`. */
static void refused(FILE *f, const char *path, const char *says) {
  fclose(f);
  ASSERT_EQ(open_status(path), SP_ERR_FORMAT);
  ASSERT_CONTAINS(sp_last_error(), says);
}

SP_TEST(hostile_capture_files_are_refused) {
  FILE *f = new_capture("ok.bin", 1);
  put_head(f, 0);
  put_events(f, SP_MEMCAP_MALLOC, 0x400000);
  fclose(f);
  ASSERT_OK(open_status("ok.bin"));

  f = fopen("magic.bin", "wb");
  fputs("not a capture at all, just text\n", f);
  refused(f, "magic.bin", "is not a scope-profiler memory capture");

  f = fopen("memray.bin", "wb");
  unsigned char memray[40] = {'m', 'e', 'm', 'r', 'a', 'y'};
  fwrite(memray, 1, sizeof memray, f);
  refused(f, "memray.bin", "Memray");

  f = new_capture("version.bin", 9);
  put_head(f, 0);
  refused(f, "version.bin", "format version 9");

  f = new_capture("crc.bin", 1);
  unsigned char junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  put_rec(f, SP_MEMCAP_HEAD, junk, sizeof junk, 0, 1);
  refused(f, "crc.bin", "checksum");

  f = new_capture("nohead.bin", 1);
  put_events(f, SP_MEMCAP_MALLOC, 1);
  refused(f, "nohead.bin", "first record is not HEAD");

  f = new_capture("huge.bin", 1);
  put_rec(f, SP_MEMCAP_HEAD, junk, sizeof junk, 0xFFFFFFF0u, 0);
  refused(f, "huge.bin", "claims");

  f = new_capture("kind.bin", 1);
  put_head(f, 0);
  put_events(f, 200, 1);
  refused(f, "kind.bin", "unknown kind 200");

  f = new_capture("stack.bin", 1);
  put_head(f, SP_MEMCAP_F_NATIVE);
  put_events(f, SP_MEMCAP_MALLOC, 5);
  refused(f, "stack.bin", "native stack 5");

  f = new_capture("count.bin", 1);
  put_head(f, 0);
  unsigned char liar[] = {0, 0xFF, 0xFF, 0x03, 0, 1, 1, 1, 1, 1};
  put_rec(f, SP_MEMCAP_EVNT, liar, sizeof liar, 0, 0);
  refused(f, "count.bin", "claims");

  f = new_capture("stray.bin", 1);
  put_head(f, 0);
  unsigned char clk[] = {1, 1, 9, 9};
  put_rec(f, SP_MEMCAP_CLCK, clk, sizeof clk, 0, 0);
  refused(f, "stray.bin", "stray bytes");

  /* a capture cut short (its program died) opens with what it holds */
  f = new_capture("cut.bin", 1);
  put_head(f, 0);
  put_events(f, SP_MEMCAP_MALLOC, 1);
  fwrite("EVNT\x40\0\0\0", 1, 8, f);
  fclose(f);
  sp_memcap *c;
  ASSERT_OK(sp__memcap_open("cut.bin", &c));
  ASSERT(c->truncated);
  ASSERT(!c->complete);
  ASSERT_EQ(c->nevents, 1);
  sp__memcap_close(c);
}

SP_TEST(preloaded_into_other_programs) {
  if (!sp_test_file_exists(SP_TEST_BINARY_DIR "/src/memory/libscope_profiler_memory.so"))
    SKIP("the interposer is not built here");
  sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
  o.path = PATH;
  start_with(&o); /* skips under a sanitizer, whose runtime must be preloaded first */
  stop();
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "LD_PRELOAD=%s/src/memory/libscope_profiler_memory.so sh -c 'ls / >/dev/null && "
           "%s -c \"import json, threading; t = threading.Thread(target=lambda: json.dumps([1]*1000)); "
           "t.start(); t.join()\"'",
           SP_TEST_BINARY_DIR, SP_TEST_PYTHON);
  ASSERT_EQ(sp_test_sh(cmd), 0);
}

/*====== use_memray: the column probe (src/probes/memory.c) ======*/

static struct {
  int n;
  char text[16][1024];
} msgs;
static void on_message(sp_message_level level, const char *text, void *user) {
  (void)level;
  (void)user;
  if (msgs.n < 16) snprintf(msgs.text[msgs.n++], sizeof msgs.text[0], "%s", text);
}

/* use_memray starts its own capture: a short one first skips the case where
 * a sanitizer owns malloc. */
static void require_interposer(void) {
  start("probe.bin", 0, 0);
  stop();
}

static sp_manager *setup_memray(const char *const *ov) {
  sp_set_message_handler(on_message, NULL);
  sp_manager *m = sp_manager_create();
  ASSERT(m);
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  return m;
}

/* One column of the calls of region `name` (its single row), in call order. */
static int64_t *region_column(const char *file, const char *name, const char *col, long long *n) {
  long long idx = h5_region_index(file, name), k;
  ASSERT(idx >= 0);
  int64_t *ids = h5_i64(file, "/rank_region_index/region_ids", &k);
  int64_t *off = h5_i64(file, "/rank_region_index/event_offsets", &k);
  int64_t *cnt = h5_i64(file, "/rank_region_index/event_counts", &k);
  long long all;
  int64_t *v = h5_i64(file, col, &all);
  ASSERT(ids && off && cnt && v);
  int64_t *out = NULL;
  for (long long i = 0; i < k; i++)
    if (ids[i] == idx) {
      out = malloc((size_t)cnt[i] * sizeof *out);
      memcpy(out, v + off[i], (size_t)cnt[i] * sizeof *out);
      *n = cnt[i];
    }
  ASSERT(out);
  free(ids), free(off), free(cnt), free(v);
  return out;
}

/* The per-call memory columns of region `name`'s calls. */
struct mem_calls {
  int64_t *alloc, *freed, *count, *peak;
  long long n;
};
static struct mem_calls mem_calls_of(const char *file, const char *name) {
  struct mem_calls c;
  c.alloc = region_column(file, name, "/events/mem_alloc_bytes", &c.n);
  c.freed = region_column(file, name, "/events/mem_freed_bytes", &c.n);
  c.count = region_column(file, name, "/events/mem_alloc_count", &c.n);
  c.peak = region_column(file, name, "/events/mem_peak_bytes", &c.n);
  return c;
}
static void mem_calls_free(struct mem_calls *c) { free(c->alloc), free(c->freed), free(c->count), free(c->peak); }

static size_t usable_of(size_t n) {
  void *p = malloc(n);
  size_t u = malloc_usable_size(p);
  free(p);
  return u;
}

static const size_t inner_size[3] = {1000, 30000, 500};
#define OUTER_SIZE 7000

/* What the inner calls allocate, in usable bytes: the sum and the largest. */
static void inner_totals(int64_t *sum, int64_t *max) {
  *sum = *max = 0;
  for (int k = 0; k < 3; k++) {
    int64_t u = (int64_t)usable_of(inner_size[k]);
    *sum += u;
    if (u > *max) *max = u;
  }
}

/* outer { keep X; inner x3 { malloc s_k; free } ; free X } */
static void nested_work(sp_manager *m) {
  sp_region warm = sp_region_intern("warm"), outer = sp_region_intern("outer"),
            inner = sp_region_intern("inner");
  sp_region_begin(m, warm); /* the thread's first call sets its buffers up */
  sp_region_end(m, warm);
  sp_region_begin(m, outer);
  void *x = malloc(OUTER_SIZE);
  for (int k = 0; k < 3; k++) {
    sp_region_begin(m, inner);
    void *p = malloc(inner_size[k]);
    memset(p, 1, 8);
    free(p);
    sp_region_end(m, inner);
  }
  free(x);
  sp_region_end(m, outer);
}

SP_TEST(use_memray_per_call_columns_exact) {
  require_interposer();
  const char *ov[] = {"file_path=run.h5", "use_memray=true", NULL};
  sp_manager *m = setup_memray(ov);
  ASSERT(sp_memory_active());
  nested_work(m);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  ASSERT(!sp_memory_active()); /* finalize completes the capture */
  struct mem_calls in = mem_calls_of("run.h5", "inner");
  ASSERT_EQ(in.n, 3);
  int64_t max_inner, sum_inner;
  inner_totals(&sum_inner, &max_inner);
  for (int k = 0; k < 3; k++) {
    int64_t u = (int64_t)usable_of(inner_size[k]);
    ASSERT_EQ(in.alloc[k], u);
    ASSERT_EQ(in.freed[k], u);
    ASSERT_EQ(in.count[k], 1);
    ASSERT_EQ(in.peak[k], u);
  }
  mem_calls_free(&in);
  int64_t ux = (int64_t)usable_of(OUTER_SIZE);
  struct mem_calls out = mem_calls_of("run.h5", "outer");
  ASSERT_EQ(out.n, 1);
  ASSERT_EQ(out.alloc[0], ux + sum_inner);
  ASSERT_EQ(out.freed[0], ux + sum_inner);
  ASSERT_EQ(out.count[0], 4);
  ASSERT_EQ(out.peak[0], ux + max_inner); /* X held while the largest inner block was live */
  mem_calls_free(&out);
  char *unit = h5_attr_str("run.h5", "/events/mem_peak_bytes", "units");
  ASSERT_STR_EQ(unit, "bytes");
  free(unit);
  ASSERT_EQ(h5_raw_len("run.h5", "/events/mem_saved_peak"), -1); /* scratch */
  /* per-region totals: sums, and the largest peak */
  long long nr, n;
  char **names = h5_strings("run.h5", "/rank0/memory/regions", &nr);
  int64_t *calls = h5_i64("run.h5", "/rank0/memory/calls", &n);
  int64_t *tb = h5_i64("run.h5", "/rank0/memory/alloc_bytes", &n);
  int64_t *tp = h5_i64("run.h5", "/rank0/memory/peak_bytes", &n);
  int found = 0;
  for (long long i = 0; i < nr; i++)
    if (!strcmp(names[i], "inner")) {
      ASSERT_EQ(calls[i], 3);
      ASSERT_EQ(tb[i], sum_inner);
      ASSERT_EQ(tp[i], max_inner);
      found = 1;
    }
  ASSERT(found);
  h5_strings_free(names, nr);
  free(calls), free(tb), free(tp);
  ASSERT_GT(h5_raw_len("run.h5", "/rank0/memory/timeline_net_bytes"), 0);
  char *cap = h5_attr_str("run.h5", "/metadata", "memory_profile");
  ASSERT_STR_EQ(cap, "run.memray.bin"); /* the seed's default: the suffix replaced */
  free(cap);
  /* The capture names the regions and agrees with the columns. */
  sp_memcap_stats st;
  sp_memcap *capf = open_capture("run.memray.bin", &st);
  int inner_id = -1;
  for (size_t i = 0; i < capf->nregions; i++)
    if (!strcmp(capf->regions[i].name, "inner")) inner_id = (int)capf->regions[i].id;
  ASSERT(inner_id > 0);
  const struct sp_memcap_region_stat *r = region(&st, (uint32_t)inner_id);
  ASSERT_EQ(r->alloc_bytes, sum_inner);
  ASSERT_EQ(r->alloc_count, 3);
  sp__memcap_stats_free(&st);
  sp__memcap_close(capf);
  sp_manager_destroy(m);
}

SP_TEST(use_memray_in_aggregation_mode) {
  require_interposer();
  const char *ov[] = {"file_path=agg.h5", "use_memray=true", "aggregation_mode=true", NULL};
  sp_manager *m = setup_memray(ov);
  nested_work(m);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  long long nr, n;
  char **names = h5_strings("agg.h5", "/rank0/memory/regions", &nr);
  int64_t *tb = h5_i64("agg.h5", "/rank0/memory/alloc_bytes", &n);
  int64_t *tp = h5_i64("agg.h5", "/rank0/memory/peak_bytes", &n);
  int64_t *tc = h5_i64("agg.h5", "/rank0/memory/alloc_count", &n);
  int64_t sum, max;
  inner_totals(&sum, &max);
  int found = 0;
  for (long long i = 0; i < nr; i++) {
    if (!strcmp(names[i], "inner")) {
      ASSERT_EQ(tb[i], sum);
      ASSERT_EQ(tp[i], max);
      ASSERT_EQ(tc[i], 3);
      found++;
    }
    if (!strcmp(names[i], "outer")) {
      ASSERT_EQ(tc[i], 4);
      ASSERT_EQ(tp[i], (int64_t)usable_of(OUTER_SIZE) + max);
      found++;
    }
  }
  ASSERT_EQ(found, 2);
  h5_strings_free(names, nr);
  free(tb), free(tp), free(tc);
  sp_manager_destroy(m);
}

/* A streamed run whose write failed is kept (docs/reliability.md): the
 * failed finalize stopped the capture and emitted the memory group into a
 * run that was never written; the retry writes the group once, with the
 * totals of the whole run (before: no group, the probe had gone idle). */
SP_TEST(use_memray_on_a_streamed_run_kept_after_a_failed_write) {
  require_interposer();
  const char *ov[] = {"file_path=kept.h5", "use_memray=true", "max_buffer_bytes=16777216", NULL};
  sp_manager *m = setup_memray(ov);
  sp_region many = sp_region_intern("many");
  enum { N = 600000 };
  for (long i = 0; i < N; i++) {
    sp_region_begin(m, many);
    sp_region_end(m, many);
  }
  nested_work(m);
  ASSERT_EQ(mkdir("kept.h5", 0755), 0);
  ASSERT_EQ(sp_manager_finalize(m, NULL, NULL), SP_ERR_IO);
  ASSERT_CONTAINS(sp_last_error(), "The run is kept as it was"); /* (it streamed) */
  ASSERT_EQ(rmdir("kept.h5"), 0);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  long long nr = -1, n;
  char **names = h5_strings("kept.h5", "/rank0/memory/regions", &nr);
  fprintf(stderr, "  written: %lld regions in rank0/memory\n", names ? nr : -1);
  ASSERT(names != NULL);
  int64_t *calls = h5_i64("kept.h5", "/rank0/memory/calls", &n);
  int64_t *tb = h5_i64("kept.h5", "/rank0/memory/alloc_bytes", &n);
  int64_t sum_inner, max_inner;
  inner_totals(&sum_inner, &max_inner);
  int found = 0;
  for (long long i = 0; i < nr; i++) {
    fprintf(stderr, "  %s: %lld calls, %lld bytes\n", names[i], (long long)calls[i], (long long)tb[i]);
    if (!strcmp(names[i], "many")) found += calls[i] == N;
    if (!strcmp(names[i], "inner")) found += calls[i] == 3 && tb[i] == sum_inner;
  }
  ASSERT_EQ(found, 2);
  h5_strings_free(names, nr);
  free(calls), free(tb);
  char *cap = h5_attr_str("kept.h5", "/metadata", "memory_profile");
  ASSERT(cap != NULL);
  free(cap);
}

SP_TEST(use_memray_options_and_warnings) {
  require_interposer();
  const char *ov[] = {"file_path=w.h5", "use_memray=true", "memray.trace_python_allocators=true",
                      "memray.native_traces=true", "memray.path=elsewhere.bin", NULL};
  sp_manager *m = setup_memray(ov);
  int python = 0;
  for (int i = 0; i < msgs.n; i++) python += strstr(msgs.text[i], "no Python interpreter") != NULL;
  ASSERT_EQ(python, 1);
  phases();
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  sp_memcap *c = open_capture("elsewhere.bin", NULL);
  ASSERT(c->flags & SP_MEMCAP_F_NATIVE);
  ASSERT(c->nstacks > 0);
  sp__memcap_close(c);
  /* a capture path that cannot be created fails the setup, saying why */
  const char *bad[] = {"file_path=b.h5", "use_memray=true", "memory_profile_path=/nonexistent/x.bin",
                       NULL};
  sp_manager *m2 = sp_manager_create();
  sp_setup_args a = {.overrides = bad};
  ASSERT_NE(sp_manager_setup(m2, &a), SP_OK);
  ASSERT_CONTAINS(sp_last_error(), "/nonexistent/x.bin");
  sp_manager_destroy(m2);
}

SP_TEST(use_memray_follow_fork_from_the_settings) {
  require_interposer();
  const char *ov[] = {"file_path=ff.h5", "use_memray=true", "memray_follow_fork=true", NULL};
  sp_manager *m = setup_memray(ov);
  pid_t pid = fork_and_wait(0, 10);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  char child[64];
  child_path(child, sizeof child, "ff.memray.bin", pid);
  sp_memcap_stats s;
  sp_memcap *c = open_capture(child, &s);
  ASSERT(c->flags & SP_MEMCAP_F_FORK_CHILD);
  ASSERT_EQ(region(&s, 77)->alloc_count, 1);
  sp__memcap_stats_free(&s);
  sp__memcap_close(c);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
