/* test-line.c - the libdw symboliser (src/common/symbolize.c): functions,
 * files, lines and inlined frames of addresses in this very test program,
 * whose lines are known because they are in this file (__LINE__), in this
 * process and offline (the executable added by path and load address), and
 * the answers for addresses in no object; and the SIGPROF sampler
 * (src/probes/line_sampler.c) on threads whose work per function is known
 * by their own CPU clocks; and line records handed in from elsewhere
 * (sp_manager_add_line_records, the Python package's way in) written after
 * the sampled ones of the same run. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__)
#  define SP_UNDER_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define SP_UNDER_TSAN 1
#  endif
#endif
#ifndef SP_UNDER_TSAN
#  define SP_UNDER_TSAN 0
#endif

#include "common/symbolize.h"
#include "harness.h"
#include "probes/line_sampler.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

/* The address of the instruction at this point of the source, for the
 * line table to map back. */
#if defined(__x86_64__)
#  define HERE(pc) __asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc))
#elif defined(__aarch64__)
#  define HERE(pc) __asm__ volatile("adr %0, ." : "=r"(pc))
#endif

static volatile uint64_t sink;

__attribute__((noinline, used)) static int static_target(int x) { /* decl line: STATIC_LINE */
  sink += (uint64_t)x;
  return x + 1;
}
static const int static_line = __LINE__ - 4;

#ifdef HERE
static int inl_line, call_line;
static inline __attribute__((always_inline)) uint64_t inlined_pc(void) {
  uint64_t pc;
  HERE(pc); inl_line = __LINE__;
  return pc;
}

__attribute__((noinline)) static uint64_t outer_pc(void) {
  uint64_t pc = inlined_pc(); call_line = __LINE__;
  return pc + 0 * sink;
}
#endif

static sp_symbolizer *self_symbolizer(void) {
  sp_symbolizer *s = sp__sym_new();
  if (s) ASSERT_EQ(sp__sym_add_self(s), 0);
  return s;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = s ? strlen(s) : 0, m = strlen(suffix);
  return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

SP_TEST(static_function_named_with_file_and_line) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = self_symbolizer();
  ASSERT(s);
  const char *file = NULL;
  int line = 0;
  const char *name = sp__sym_function(s, (uint64_t)(uintptr_t)&static_target, &file, &line);
  ASSERT_STR_EQ(name, "static_target");
  ASSERT(ends_with(file, "test-line.c"));
  ASSERT_EQ(line, static_line);
  sp__sym_free(s);
}

SP_TEST(inlined_frames_in_order) {
#ifndef HERE
  SKIP("no program-counter capture for this architecture");
#else
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  uint64_t pc = outer_pc();
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, pc, &sym), 0);
  ASSERT_EQ(sym.nframes, 2);
  ASSERT_STR_EQ(sym.frames[0].function, "inlined_pc");
  ASSERT_EQ(sym.frames[0].line, inl_line);
  ASSERT(ends_with(sym.frames[0].file, "test-line.c"));
  ASSERT_STR_EQ(sym.frames[1].function, "outer_pc");
  ASSERT_EQ(sym.frames[1].line, call_line);
  ASSERT(ends_with(sym.frames[1].file, "test-line.c"));
  ASSERT_GT(sym.frames[0].decl_line, 0);
  ASSERT_LT(sym.frames[0].decl_line, inl_line);
  /* The ELF symbol is the out-of-line function. */
  ASSERT_STR_EQ(sym.symbol, "outer_pc");
  ASSERT(ends_with(sym.module, "test-line"));
  /* A second lookup is the cached answer. */
  struct sp_sym again;
  ASSERT_EQ(sp__sym_lookup(s, pc, &again), 0);
  ASSERT_EQ(memcmp(&sym, &again, sizeof sym), 0);
  sp__sym_free(s);
#endif
}

SP_TEST(address_in_no_object_is_unknown) {
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, 0x10, &sym), -1);
  ASSERT(sym.module == NULL);
  ASSERT_EQ(sym.nframes, 0);
  ASSERT_EQ(sp__sym_lookup(s, 0, &sym), -1);
  const char *file;
  int line;
  ASSERT(sp__sym_function(s, 0x10, &file, &line) == NULL);
  sp__sym_free(s);
}

SP_TEST(shared_library_symbol_without_lines) {
  /* libc carries no DWARF unless libc6-dbg is installed: then only the
   * module and the symbol are known. */
  void *p = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT(p);
  sp_symbolizer *s = self_symbolizer();
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, (uint64_t)(uintptr_t)p, &sym), 0);
  ASSERT_CONTAINS(sym.module, "libc");
  ASSERT(sym.symbol && strstr(sym.symbol, "getpid"));
  ASSERT_EQ(sym.symbol_offset, 0);
  ASSERT_GT(sym.module_offset, 0);
  sp__sym_free(s);
}

SP_TEST(many_addresses_grow_the_cache) {
  if (!sp__sym_have_lines()) SKIP("built without libdw");
  sp_symbolizer *s = self_symbolizer();
  uint64_t base = (uint64_t)(uintptr_t)&static_target;
  for (uint64_t i = 0; i < 2000; i++) {
    struct sp_sym sym;
    ASSERT_EQ(sp__sym_lookup(s, base + i, &sym), 0);
  }
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, base, &sym), 0);
  ASSERT_STR_EQ(sym.symbol, "static_target");
  sp__sym_free(s);
}

/* The main program's load bias and address range, as a capture would
 * record them. */
struct exe_range {
  uint64_t base, start, end;
};
static int exe_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct exe_range *r = data;
  r->base = info->dlpi_addr;
  r->start = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < r->start) r->start = a;
    if (a + ph->p_memsz > r->end) r->end = a + ph->p_memsz;
  }
  return 1; /* the first entry is the executable */
}

SP_TEST(offline_module_by_path_and_base) {
  struct exe_range r = {0, 0, 0};
  dl_iterate_phdr(exe_cb, &r);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  sp_symbolizer *s = sp__sym_new();
  uint64_t fn = (uint64_t)(uintptr_t)&static_target;
  struct sp_sym sym;
  ASSERT_EQ(sp__sym_lookup(s, fn, &sym), -1); /* nothing added yet */
  int rc = sp__sym_add_module(s, exe, r.base, r.start, r.end);
  ASSERT_EQ(sp__sym_lookup(s, fn, &sym), 0);  /* the miss was not kept */
  ASSERT_STR_EQ(sym.module, exe);
  ASSERT_EQ(sym.module_offset, fn - r.base);
  if (sp__sym_have_lines()) {
    ASSERT_EQ(rc, 0);
    const char *file;
    int line;
    ASSERT_STR_EQ(sp__sym_function(s, fn, &file, &line), "static_target");
    ASSERT_EQ(line, static_line);
  }
  /* A file that is not ELF still names its range. */
  ASSERT_EQ(sp__sym_add_module(s, "/nonexistent/lib.so", 0x100000, 0x100000, 0x200000), -1);
  ASSERT_EQ(sp__sym_lookup(s, 0x100010, &sym), 0);
  ASSERT_STR_EQ(sym.module, "/nonexistent/lib.so");
  ASSERT_EQ(sym.module_offset, 0x10);
  ASSERT_EQ(sym.nframes, 0);
  sp__sym_free(s);
}

/*====== The sampler ======*/

/* volatile: the handler reads it between the stores the compiler would
 * otherwise drop as overwritten. samples_here counts the samples the
 * handler took on this thread (it asks for the region once per sample), so
 * that a thread can end a phase of its work exactly at a sample. */
static __thread volatile uint32_t cur_region;
static __thread volatile uint64_t samples_here;
static int uid; /* the sampler user of the test */
static uint32_t test_region(void *ctx) {
  (void)ctx;
  samples_here++;
  return cur_region;
}

static int64_t cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Two loops that spin until the thread has spent `ns` of CPU in them and,
 * with `to_sample`, on until the sampler's next sample on this thread (at
 * most 10 s of CPU more), so that no sample's interval straddles the
 * switch from one loop to the next. The clock (a system call) is read only
 * every 1000000 dependent steps (about 1.5 ms): the CPU timer's signal is
 * delivered when the thread returns to user space, so a clock read gets
 * the sample of a tick that came during it (on a loaded machine under ASan,
 * with 20000 steps per read, clock_gettime got 18 % of the samples). */
#define SPIN_LOOP(op)                                                                    \
  int64_t end = cpu_now() + ns;                                                          \
  double x = 0;                                                                          \
  while (cpu_now() < end)                                                                \
    for (int i = 0; i < 1000000; i++) x op (double)i * 0.5 + x * 1e-9;                   \
  uint64_t s0 = samples_here;                                                            \
  for (int64_t limit = end + 10000000000; to_sample && samples_here == s0 && cpu_now() < limit;) \
    for (int i = 0; i < 1000000 && samples_here == s0; i++) x op (double)i * 0.5 + x * 1e-9;      \
  __atomic_add_fetch(&sink, (uint64_t)(x < 0 ? -x : x), __ATOMIC_RELAXED) /* threads share it */
__attribute__((noinline)) static void spin_a_to(int64_t ns, int to_sample) { SPIN_LOOP(+=); }
__attribute__((noinline)) static void spin_b_to(int64_t ns, int to_sample) { SPIN_LOOP(-=); }
static void spin_a(int64_t ns) { spin_a_to(ns, 0); }
/* Spin in spin_a until the sampler has taken at least k more samples on
 * this thread; returns how many it took (fewer only if it took none for
 * 10 s of CPU; more when signals came together, as ThreadSanitizer, which
 * defers them, delivers them). */
static uint64_t take_samples(uint64_t k) {
  uint64_t s0 = samples_here, before;
  do {
    before = samples_here;
    spin_a_to(0, 1);
  } while (samples_here - s0 < k && samples_here != before);
  return samples_here - s0;
}

struct split {
  int64_t a, b;     /* measured CPU ns in each loop */
  uint64_t samples; /* taken on the thread from its first loop's start to the second's end */
};

/* A thread that spends 150 ms of CPU in spin_a (region 7), then 50 ms in
 * spin_b (region 8), each phase ending at a sample and the first one
 * starting right after one (taken outside regions, in spin_b), so every
 * sample's interval lies in one phase: the samples' time per region must be
 * the CPU time measured per phase, whatever the load and however many
 * periods a signal stands for. */
/* The phases' start: spins outside regions (in spin_b) until a sample, so
 * that the first phase begins right after one; the thread's samples then. */
static uint64_t phases_begin(void) {
  cur_region = 0;
  spin_b_to(0, 1);
  return samples_here;
}

/* A phase: region `region` from *t (the last phase's end, on the thread's
 * CPU clock) for ns of CPU in `spin`, ending at a sample; its measured CPU
 * ns, *t moved to its end. */
static int64_t phase(uint32_t region, void (*spin)(int64_t, int), int64_t ns, int64_t *t) {
  cur_region = region;
  spin(ns, 1);
  int64_t end = cpu_now(), d = end - *t;
  *t = end;
  return d;
}

static void *split_worker(void *p) {
  struct split *sp = p;
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  uint64_t s0 = phases_begin();
  int64_t t = cpu_now();
  sp->a = phase(7, spin_a_to, 150000000, &t);
  sp->b = phase(8, spin_b_to, 50000000, &t);
  cur_region = 0;
  sp->samples = samples_here - s0;
  return NULL;
}

/* ns per region and, of each region, ns in its own loop (spin_a for 7,
 * spin_b for 8), in what the loop calls (its clock read, and a sanitizer's
 * instrumentation of it) and elsewhere, with hits, over the collected
 * entries. */
struct by_fn {
  uint64_t region_ns[2], own_ns[2], calls_ns[2], hits;
};

/* What the spin loops call: cpu_now()'s clock_gettime (libc, the vDSO, or a
 * sanitizer's interceptor of it: a CPU-timer signal raised while the thread
 * is in the system call lands just after it) and, in a sanitizer build, the
 * runtime's checks of the loop's memory accesses (__tsan_read8 of
 * samples_here). */
static int loop_callee(const char *fn) {
  return strstr(fn, "clock_gettime") != NULL || !strncmp(fn, "__tsan_", 7) || !strncmp(fn, "__asan_", 7) ||
         !strncmp(fn, "__ubsan_", 8) || !strncmp(fn, "__sanitizer_", 12) || !strncmp(fn, "__interceptor_", 14);
}
static struct by_fn by_function(const struct sp_lp_entry *e, size_t n) {
  sp_symbolizer *s = self_symbolizer();
  struct by_fn r;
  memset(&r, 0, sizeof r);
  for (size_t i = 0; i < n; i++) {
    if (e[i].region != 7 && e[i].region != 8) continue;
    int k = e[i].region == 8;
    struct sp_sym sym;
    sp__sym_lookup(s, e[i].pc, &sym);
    const char *fn = sym.symbol ? sym.symbol : "";
    const char *own = k ? "spin_b_to" : "spin_a_to"; /* or a clone of it: spin_b_to.constprop.0 */
    if (!strncmp(fn, own, 9) && (fn[9] == 0 || fn[9] == '.')) {
      r.own_ns[k] += e[i].ns;
    } else if (e[i].ns > 0) { /* for a failure's diagnosis: where the rest went */
      int callee = loop_callee(fn);
      if (callee) r.calls_ns[k] += e[i].ns;
      fprintf(stderr, "  region %u, %s: %s (%s) %.1f ms\n", e[i].region, callee ? "called by the loop" : "other",
              fn[0] ? fn : "??", sym.module ? sym.module : "??", (double)e[i].ns / 1e6);
    }
    r.region_ns[k] += e[i].ns;
    r.hits += e[i].hits;
  }
  sp__sym_free(s);
  return r;
}

static void known_split(enum sp_lp_backend backend) {
  struct sp_lp_params p = {.rate_hz = 1000, .backend = backend, .current_region = test_region};
  ASSERT_OK(sp__lp_start(&p, &uid));
  struct split w[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, split_worker, &w[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  struct sp_lp_entry *e;
  size_t n;
  struct sp_lp_stats st;
  ASSERT_EQ(sp__lp_collect(uid, &e, &n, &st, 1), 0);
  if (backend == SP_LP_PERF) ASSERT_EQ(st.threads_perf, 2);
  if (backend == SP_LP_TIMER) ASSERT_EQ(st.threads_timer, 2);
  ASSERT_EQ(st.arm_failures, 0);
  ASSERT_EQ(st.dropped, 0);
  struct by_fn f = by_function(e, n);
  double ma = (double)(w[0].a + w[1].a), mb = (double)(w[0].b + w[1].b);
  double ra = (double)f.region_ns[0], rb = (double)f.region_ns[1];
  double a = (double)(f.own_ns[0] + f.calls_ns[0]), b = (double)(f.own_ns[1] + f.calls_ns[1]);
  double other = ra + rb - a - b;
  double measured = ma / (ma + mb), sampled = a / (a + b);
  fprintf(stderr, "  %s: spin_a %.1f %% of the loops' sampled time (measured %.1f %%); regions 7/8: "
          "sampled %.2f/%.2f ms, measured %.2f/%.2f ms; %llu samples, %.2f ms each; %.2f ms elsewhere\n",
          sp__lp_backend_name(uid), 100 * sampled, 100 * measured, ra / 1e6, rb / 1e6, ma / 1e6, mb / 1e6,
          (unsigned long long)f.hits, (ra + rb) / 1e6 / (double)(f.hits ? f.hits : 1), other / 1e6);
  /* Every sample's interval lies in one phase: the regions' times are the
   * measured ones, to within the few microseconds between a sample and the
   * clock read that ends its phase (and the handler's own tail). */
  ASSERT_NEAR(ra, ma, 0.02 * ma + 2e6);
  ASSERT_NEAR(rb, mb, 0.02 * mb + 2e6);
  /* Nearly all of each region's time is at addresses in its own loop or
   * what it calls, so spin_a's share of the two loops is the measured one,
   * off by no more than what landed elsewhere (the handler's tail). */
  ASSERT_LT(other, 0.1 * (ra + rb));
  ASSERT_NEAR(sampled, measured, 0.01 + other / (a + b));
  uint64_t taken = w[0].samples + w[1].samples;
  ASSERT_EQ(f.hits, taken);
  ASSERT_EQ(st.samples, taken);
  /* perf samples every millisecond of CPU (less the periods that end in the
   * kernel). The CPU timer fires only at a kernel tick that finds the thread
   * running, which under load can be one in several of its ticks (10-13 ms
   * per sample at load 15 here): no rate is promised for it. Nor under
   * ThreadSanitizer, which defers signals and delivers those that met as
   * one (2.7 ms per perf sample here). */
#if !SP_UNDER_TSAN
  if (backend == SP_LP_PERF) ASSERT_LT((ra + rb) / (double)taken, 2e6);
#endif
  free(e);
  sp__lp_stop(uid);
  ASSERT(!sp__lp_running());
}

static int perf_allowed(void) {
  struct sp_lp_params p = {.rate_hz = 1000, .backend = SP_LP_PERF, .current_region = test_region};
  if (sp__lp_start(&p, &uid) != SP_OK) return 0;
  int ok = sp__lp_thread_arm(uid) == 0;
  sp__lp_stop(uid);
  return ok;
}

SP_TEST(sampler_perf_known_split_two_threads) {
  if (!perf_allowed()) SKIP("perf_event_open refused (perf_event_paranoid, seccomp)");
  known_split(SP_LP_PERF);
}

SP_TEST(sampler_timer_known_split_two_threads) { known_split(SP_LP_TIMER); }

static void *spin_outside(void *p) {
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  cur_region = 0;
  uint64_t s0 = samples_here;
  take_samples(30);
  /* No sample between the count and the thread's end: one there was counted
   * outside but not taken (TSan, 31 != 30 in a clean-clone CI). */
  sigset_t prof;
  sigemptyset(&prof);
  sigaddset(&prof, SIGPROF);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &prof, NULL), 0);
  *(uint64_t *)p = samples_here - s0;
  return NULL;
}

SP_TEST(sampler_outside_regions_counted_or_given_to_root) {
  for (int root = 0; root < 2; root++) {
    struct sp_lp_params p = {.rate_hz = 1000, .current_region = test_region, .outside_region = root ? 42u : 0u};
    ASSERT_OK(sp__lp_start(&p, &uid));
    pthread_t th;
    uint64_t taken = 0;
    ASSERT_EQ(pthread_create(&th, NULL, spin_outside, &taken), 0);
    pthread_join(th, NULL); /* the thread is gone: its samples are not */
    struct sp_lp_entry *e;
    size_t n;
    struct sp_lp_stats st;
    ASSERT_EQ(sp__lp_collect(uid, &e, &n, &st, 1), 0);
    if (root) {
      ASSERT_GT(n, 0);
      for (size_t i = 0; i < n; i++) ASSERT_EQ(e[i].region, 42);
      ASSERT_GE(taken, 30);
      ASSERT_EQ(st.samples, taken);
      ASSERT_EQ(st.outside, 0);
    } else {
      ASSERT_EQ(n, 0);
      ASSERT_GE(taken, 30);
      ASSERT_EQ(st.outside, taken);
    }
    free(e);
    /* reset: a second collect starts from nothing */
    ASSERT_EQ(sp__lp_collect(uid, &e, &n, &st, 1), 0);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(st.samples + st.outside, 0);
    sp__lp_stop(uid);
  }
}

SP_TEST(sampler_full_table_drops_and_counts) {
  struct sp_lp_params p = {.rate_hz = 2000, .current_region = test_region, .table_slots = 16};
  ASSERT_OK(sp__lp_start(&p, &uid));
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  for (uint32_t r = 1; r <= 40; r++) { /* a sample in each of 40 regions: 40 pairs > 12 */
    cur_region = r;
    ASSERT_GE(take_samples(1), 1);
  }
  cur_region = 0;
  struct sp_lp_entry *e;
  size_t n;
  struct sp_lp_stats st;
  ASSERT_EQ(sp__lp_collect(uid, &e, &n, &st, 0), 0);
  ASSERT_LE(n, 12);
  ASSERT_GE(st.dropped, 40 - 12);
  ASSERT_GT(st.dropped_ns, 0);
  free(e);
  sp__lp_stop(uid);
}

static void program_handler(int sig) { (void)sig; }

SP_TEST(sampler_refuses_a_program_sigprof_and_bad_rates) {
  struct sp_lp_params p = {.rate_hz = 0, .current_region = test_region};
  ASSERT_EQ(sp__lp_start(&p, &uid), SP_ERR_INVALID_VALUE);
  p.rate_hz = 1000;
  p.table_slots = 100;
  ASSERT_EQ(sp__lp_start(&p, &uid), SP_ERR_INVALID_VALUE);
  p.table_slots = 0;
  signal(SIGPROF, program_handler);
  ASSERT_EQ(sp__lp_start(&p, &uid), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "SIGPROF");
  signal(SIGPROF, SIG_DFL);
  /* Up to SP_LP_MAX_USERS users at once, each its own id. */
  int ids[SP_LP_MAX_USERS], extra;
  for (int i = 0; i < SP_LP_MAX_USERS; i++) {
    ASSERT_OK(sp__lp_start(&p, &ids[i]));
    for (int j = 0; j < i; j++) ASSERT(ids[j] != ids[i]);
  }
  ASSERT_EQ(sp__lp_start(&p, &extra), SP_ERR_LIMIT);
  ASSERT_CONTAINS(sp_last_error(), "use_line_profiler off");
  for (int i = 0; i < SP_LP_MAX_USERS; i++) {
    ASSERT(sp__lp_running());
    sp__lp_stop(ids[i]);
  }
  ASSERT(!sp__lp_running());
  /* Stopped: the old action is back, and the thread's stale table is not
   * used by the next sampler. */
  struct sigaction cur;
  sigaction(SIGPROF, NULL, &cur);
  ASSERT(cur.sa_handler == SIG_DFL);
  ASSERT_OK(sp__lp_start(&p, &uid));
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  cur_region = 3;
  uint64_t taken = take_samples(5);
  cur_region = 0;
  ASSERT_GE(taken, 5);
  struct sp_lp_entry *e;
  size_t n;
  struct sp_lp_stats st;
  ASSERT_EQ(sp__lp_collect(uid, &e, &n, &st, 1), 0);
  ASSERT_EQ(st.samples, taken);
  free(e);
  sp__lp_stop(uid);
}

/* Two users (two managers' samplers) share the SIGPROF handler and a
 * thread's clock: user b sees region r + 100 where user a sees r. */
static int uid_b;
static uint32_t region_b(void *ctx) {
  (void)ctx;
  return cur_region ? cur_region + 100 : 0;
}

struct shared {
  int both;         /* the thread is armed for user b too, after a */
  int64_t ns;       /* measured CPU ns in region 7 */
  uint64_t samples; /* taken in it */
};

/* As split_worker: one phase in region 7 between two samples. */
static void *shared_worker(void *p) {
  struct shared *w = p;
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  if (w->both) ASSERT_EQ(sp__lp_thread_arm(uid_b), 0);
  uint64_t s0 = phases_begin();
  int64_t t = cpu_now();
  w->ns = phase(7, spin_a_to, 60000000, &t);
  cur_region = 0;
  w->samples = samples_here - s0;
  return NULL;
}

static double region_ns(const struct sp_lp_entry *e, size_t n, uint32_t region) {
  double ns = 0;
  for (size_t i = 0; i < n; i++) ns += e[i].region == region ? (double)e[i].ns : 0;
  return ns;
}

SP_TEST(sampler_serves_two_users) {
  struct sp_lp_params pa = {.rate_hz = 1000, .current_region = test_region};
  struct sp_lp_params pb = {.rate_hz = 1000, .current_region = region_b};
  ASSERT_OK(sp__lp_start(&pa, &uid));
  ASSERT_OK(sp__lp_start(&pb, &uid_b));
  ASSERT(uid != uid_b);
  /* Thread 0 is armed for both, thread 1 for a only. */
  struct shared w[2] = {{.both = 1}, {.both = 0}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, shared_worker, &w[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  struct sp_lp_entry *ea, *eb;
  size_t na, nb;
  struct sp_lp_stats sa, sb;
  /* b's collect leaves a's samples alone, and each sees its own regions. */
  ASSERT_EQ(sp__lp_collect(uid_b, &eb, &nb, &sb, 1), 0);
  ASSERT_EQ(sp__lp_collect(uid, &ea, &na, &sa, 1), 0);
  double a7 = region_ns(ea, na, 7), b107 = region_ns(eb, nb, 107);
  fprintf(stderr, "  a: %.2f ms in region 7 (measured %.2f), %llu samples; b: %.2f ms in 107 (measured %.2f), "
          "%llu samples\n", a7 / 1e6, (double)(w[0].ns + w[1].ns) / 1e6, (unsigned long long)sa.samples,
          b107 / 1e6, (double)w[0].ns / 1e6, (unsigned long long)sb.samples);
  ASSERT_EQ(region_ns(ea, na, 107), 0);
  ASSERT_EQ(region_ns(eb, nb, 7), 0);
  /* Every sample of a thread goes to each of its users, weighed since that
   * user's previous one: the same phases, the same times. */
  ASSERT_NEAR(a7, (double)(w[0].ns + w[1].ns), 0.02 * (double)(w[0].ns + w[1].ns) + 2e6);
  ASSERT_NEAR(b107, (double)w[0].ns, 0.02 * (double)w[0].ns + 2e6);
  ASSERT_EQ(sa.samples, w[0].samples + w[1].samples);
  ASSERT_EQ(sb.samples, w[0].samples);
  ASSERT_EQ(sa.threads_perf + sa.threads_timer, 2);
  ASSERT_EQ(sb.threads_perf + sb.threads_timer, 1);
  free(ea);
  free(eb);
  /* b stops: a goes on sampling, on a thread armed before and one after. */
  sp__lp_stop(uid_b);
  ASSERT(sp__lp_running());
  w[0].both = 0;
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, shared_worker, &w[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ASSERT_EQ(sp__lp_collect(uid, &ea, &na, &sa, 1), 0);
  ASSERT_EQ(sa.samples, w[0].samples + w[1].samples);
  ASSERT_NEAR(region_ns(ea, na, 7), (double)(w[0].ns + w[1].ns), 0.02 * (double)(w[0].ns + w[1].ns) + 2e6);
  free(ea);
  /* A collect of a stopped user has nothing. */
  ASSERT_EQ(sp__lp_collect(uid_b, &eb, &nb, &sb, 1), 0);
  ASSERT_EQ(nb, 0);
  sp__lp_stop(uid);
  ASSERT(!sp__lp_running());
  struct sigaction cur;
  sigaction(SIGPROF, NULL, &cur);
  ASSERT(cur.sa_handler == SIG_DFL);
}

SP_TEST(sampler_forked_child_stands_down) {
  struct sp_lp_params p = {.rate_hz = 1000, .current_region = test_region};
  ASSERT_OK(sp__lp_start(&p, &uid));
  ASSERT_EQ(sp__lp_thread_arm(uid), 0);
  pid_t pid = fork();
  if (pid == 0) {
    cur_region = 5;
    spin_a(50000000); /* no clock here: no SIGPROF, and no crash */
    _exit(sp__lp_running() ? 3 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  sp__lp_stop(uid);
}

/*====== Records handed in ======*/

static sp_manager *line_manager(int line_profiler) {
  sp_manager *m = sp_manager_create();
  ASSERT(m);
  const char *ov[] = {"deactivate_file_output=1", line_profiler ? "use_line_profiler=1" : "use_line_profiler=0",
                      "quiet=1", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  return m;
}

SP_TEST(added_line_records_follow_the_sampled_ones) {
  sp_manager *m = line_manager(1);
  sp_region work = sp_region_intern("work");
  sp_region_begin(m, work);
  spin_a(100000000);
  sp_region_end(m, work);
  const int64_t lines0[] = {11, 12, 14}, hits0[] = {1, 5, 2}, lines1[] = {static_line + 1};
  const int64_t hits1[] = {3};
  const double times0[] = {100.0, 5000.5, 42.0}, times1[] = {7.25};
  sp_line_profile in[2];
  memset(in, 0, sizeof in);
  in[0] = (sp_line_profile){.region = "work", .filename = "/nonexistent/mod.py", .function = "py_fn",
                            .first_lineno = 10, .unit = 1e-9, .n = 3, .line_numbers = lines0, .hits = hits0,
                            .times = times0, .source = "def py_fn():\n  a\n  b\n\n  c\n", .source_first_lineno = 10};
  /* No region, no source: the lines are read from the file. */
  in[1] = (sp_line_profile){.filename = SP_TEST_SOURCE_DIR "/tests/unit/test-line.c", .function = "static_target",
                            .first_lineno = static_line, .unit = 1e-6, .n = 1, .line_numbers = lines1,
                            .hits = hits1, .times = times1};
  /* Bad records are refused whole: nothing of the call is kept. */
  sp_line_profile bad[2] = {in[0], in[1]};
  bad[1].function = NULL;
  ASSERT_EQ(sp_manager_add_line_records(m, bad, 2), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "record 1 has no function");
  bad[1] = in[1];
  bad[1].unit = 0;
  ASSERT_EQ(sp_manager_add_line_records(m, bad, 2), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "unit");
  bad[1] = in[1];
  bad[1].times = NULL;
  ASSERT_EQ(sp_manager_add_line_records(m, bad, 2), SP_ERR_INVALID_ARGUMENT);
  ASSERT_OK(sp_manager_add_line_records(m, in, 1));
  ASSERT_OK(sp_manager_add_line_records(m, in + 1, 1));
  ASSERT_OK(sp_manager_add_line_records(m, NULL, 0));

  sp_finalize_args fa = {.return_results = 1};
  sp_results *r = NULL;
  ASSERT_OK(sp_manager_finalize(m, &fa, &r));
  const sp_line_profile *p;
  size_t n;
  ASSERT_OK(sp_results_line_profiles(r, &p, &n));
  ASSERT_GE(n, 2);
  size_t k = n - 2; /* the sampled ones come first, with their module */
  for (size_t i = 0; i < k; i++) ASSERT(p[i].module != NULL);
  if (sp__lp_running()) ASSERT_GE(k, 1); /* spin_a's lines */
  ASSERT_EQ(p[k].index, k);
  ASSERT_STR_EQ(p[k].region, "work");
  ASSERT_STR_EQ(p[k].filename, "/nonexistent/mod.py");
  ASSERT_STR_EQ(p[k].function, "py_fn");
  ASSERT_EQ(p[k].first_lineno, 10);
  ASSERT_NEAR(p[k].unit, 1e-9, 1e-20);
  ASSERT_EQ(p[k].n, 3);
  for (size_t i = 0; i < 3; i++) {
    ASSERT_EQ(p[k].line_numbers[i], lines0[i]);
    ASSERT_EQ(p[k].hits[i], hits0[i]);
    ASSERT_NEAR(p[k].times[i], times0[i], 1e-9);
  }
  ASSERT(p[k].module == NULL && p[k].addresses == NULL);
  ASSERT_STR_EQ(p[k].source, in[0].source);
  ASSERT_EQ(p[k].source_first_lineno, 10);
  ASSERT_EQ(p[k + 1].index, k + 1);
  ASSERT_STR_EQ(p[k + 1].region, "");
  ASSERT_STR_EQ(p[k + 1].function, "static_target");
  ASSERT_NEAR(p[k + 1].unit, 1e-6, 1e-15);
  ASSERT_EQ(p[k + 1].hits[0], 3);
  ASSERT_NEAR(p[k + 1].times[0], 7.25, 1e-12);
  ASSERT(p[k + 1].source && p[k + 1].source_first_lineno == static_line); /* from the first line on */
  ASSERT_CONTAINS(p[k + 1].source, "sink += (uint64_t)x;");
  sp_results_free(r);

  /* Consumed by that finalize: the next run has only its own. */
  const char *ov[] = {"deactivate_file_output=1", "use_line_profiler=1", "quiet=1", NULL};
  sp_setup_args a = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &a));
  sp_region_begin(m, work);
  sp_region_end(m, work);
  ASSERT_OK(sp_manager_finalize(m, &fa, &r));
  ASSERT_OK(sp_results_line_profiles(r, &p, &n));
  for (size_t i = 0; i < n; i++) ASSERT(strcmp(p[i].function, "py_fn") != 0);
  sp_results_free(r);
  sp_manager_destroy(m);
}

SP_TEST(added_line_records_need_a_line_profiled_run) {
  const int64_t line = 3, hits = 1;
  const double t = 1;
  sp_line_profile rec = {.filename = "a.py", .function = "f", .unit = 1e-9, .n = 1, .line_numbers = &line,
                         .hits = &hits, .times = &t};
  sp_manager *idle = sp_manager_create();
  ASSERT_EQ(sp_manager_add_line_records(idle, &rec, 1), SP_ERR_INACTIVE);
  ASSERT_CONTAINS(sp_last_error(), "use_line_profiler");
  sp_manager_destroy(idle);
  sp_manager *m = line_manager(0);
  ASSERT_EQ(sp_manager_add_line_records(m, &rec, 1), SP_ERR_INACTIVE);
  ASSERT_OK(sp_manager_finalize(m, NULL, NULL));
  sp_manager_destroy(m);
  ASSERT_EQ(sp_manager_add_line_records(NULL, &rec, 1), SP_ERR_INVALID_ARGUMENT);
}

/* Two managers with use_line_profiler on at once: each gets the native
 * samples of its own regions (the sampler serves both). */
SP_TEST(two_managers_sample_their_own_regions) {
  sp_manager *m1 = line_manager(1), *m2 = line_manager(1);
  sp_region r1 = sp_region_intern("work_one"), r2 = sp_region_intern("work_two");
  sp_region_begin(m1, r1);
  spin_a(300000000);
  sp_region_end(m1, r1);
  sp_region_begin(m2, r2);
  spin_a(300000000);
  sp_region_end(m2, r2);
  sp_finalize_args fa = {.return_results = 1};
  sp_manager *ms[2] = {m1, m2};
  const char *own[2] = {"work_one", "work_two"};
  for (int k = 0; k < 2; k++) {
    sp_results *r = NULL;
    ASSERT_OK(sp_manager_finalize(ms[k], &fa, &r));
    const sp_line_profile *p;
    size_t n;
    ASSERT_OK(sp_results_line_profiles(r, &p, &n));
    int found = 0;
    for (size_t i = 0; i < n; i++) {
      ASSERT_STR_EQ(p[i].region, own[k]); /* the other manager's region is not this one's */
      found |= !strncmp(p[i].function, "spin_a_to", 9);
    }
    ASSERT(found);
    sp_results_free(r);
    sp_manager_destroy(ms[k]);
  }
  ASSERT(!sp__lp_running());
}

/* A run's finalize ends its sampling: a manager that lives on after it (as
 * Python's often do) holds no user of the sampler, so more managers than
 * the sampler has users for can set up, finalize and stay. */
SP_TEST(a_finalized_run_releases_the_sampler) {
  sp_manager *m[SP_LP_MAX_USERS + 1];
  for (int i = 0; i <= SP_LP_MAX_USERS; i++) {
    m[i] = line_manager(1);
    ASSERT(sp__lp_running());
    ASSERT_OK(sp_manager_finalize(m[i], NULL, NULL));
    ASSERT(!sp__lp_running());
  }
  for (int i = 0; i <= SP_LP_MAX_USERS; i++) sp_manager_destroy(m[i]);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
