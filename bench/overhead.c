/* overhead.c - cost of one region begin/end pair, as ratios to baselines
 * measured in the same process and run (these machines are noisy, so only
 * same-run ratios mean anything).
 *
 * Baselines: an empty loop, a raw rdtsc pair, a clock_gettime pair. Cases:
 * compiled out (SP_DISABLE), deactivated (deactivate_profiling), timeline
 * (the default recording mode), a handle-per-call vs a name interned each
 * call, the exported out-of-line begin/end (what bindings call), nested
 * regions 3 deep, a region whose opt-in tag is not enabled,
 * track_threads, and aggregation mode; then the front ends beside C: the C
 * macro SP_REGION_M, C++'s SP_PROFILE_SCOPE_M, sp::Scope on a handle and on a
 * run-time name (bench/overhead_cxx.cpp), Fortran by handle and by name
 * (bench/overhead_fortran.f90), on a created manager and on the default one.
 * Each case is timed REPS times over N pairs;
 * the median is reported with min and max.
 *
 *   overhead [--pairs N] [--reps R] [--json FILE]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scope_profiler.h"

#define BARRIER() __asm__ volatile("" ::: "memory")

void bench_loop_compiled_out(long n);
#if defined(SP_BENCH_CXX)
void bench_cxx_macro(sp_manager *m, long n);
void bench_cxx_scope(sp_manager *m, long n);
void bench_cxx_runtime_name(sp_manager *m, long n);
#endif
#if defined(SP_BENCH_FORTRAN)
void bench_fortran_handle(sp_manager *m, long n);
void bench_fortran_name(sp_manager *m, long n);
void bench_fortran_default(long n);
#endif

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The thread's CPU time: on a loaded machine, wall time also counts the
 * time other processes held the core. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static sp_manager *mgr;
static sp_region reg, reg2, reg3;

static void loop_empty(long n) {
  for (long i = 0; i < n; i++) BARRIER();
}
static void loop_rdtsc(long n) {
  static volatile unsigned long long sink;
  for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
    unsigned long long a = __builtin_ia32_rdtsc();
    BARRIER();
    unsigned long long b = __builtin_ia32_rdtsc();
    sink = b - a;
#endif
  }
}
static void loop_clock_gettime(long n) {
  static volatile long sink;
  struct timespec a, b;
  for (long i = 0; i < n; i++) {
    clock_gettime(CLOCK_MONOTONIC, &a);
    BARRIER();
    clock_gettime(CLOCK_MONOTONIC, &b);
    sink = b.tv_nsec - a.tv_nsec;
  }
}
static void loop_region(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(mgr, reg);
    BARRIER();
    sp_region_end(mgr, reg);
  }
}
/* What bindings pay: the same pair through the exported out-of-line calls. */
static void loop_region_fn(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin_fn(mgr, reg);
    BARRIER();
    sp_region_end_fn(mgr, reg);
  }
}
static sp_region tagged;
static void loop_tagged(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(mgr, tagged);
    BARRIER();
    sp_region_end(mgr, tagged);
  }
}
/* The same disabled opt-in region at a call site: the site keeps the decision. */
static void loop_tagged_site(long n) {
  for (long i = 0; i < n; i++) {
    SP_REGION_TAGS_M(mgr, "bench.tagged_site", "bench-opt-in");
    BARRIER();
  }
}
static void loop_interned(long n) {
  for (long i = 0; i < n; i++) {
    sp_region r = sp_region_intern("bench.interned");
    sp_region_begin(mgr, r);
    BARRIER();
    sp_region_end(mgr, r);
  }
}
/* The front ends, each against the C call that does the same. */
static void loop_c_macro(long n) {
  for (long i = 0; i < n; i++) {
    SP_REGION_M(mgr, "bench");
    BARRIER();
  }
}
static void loop_c_default(long n) {
  for (long i = 0; i < n; i++) {
    sp_begin(reg);
    BARRIER();
    sp_end(reg);
  }
}
#if defined(SP_BENCH_CXX)
static void loop_cxx_macro(long n) { bench_cxx_macro(mgr, n); }
static void loop_cxx_scope(long n) { bench_cxx_scope(mgr, n); }
static void loop_cxx_runtime_name(long n) { bench_cxx_runtime_name(mgr, n); }
#endif
#if defined(SP_BENCH_FORTRAN)
static void loop_fortran_handle(long n) { bench_fortran_handle(mgr, n); }
static void loop_fortran_name(long n) { bench_fortran_name(mgr, n); }
static void loop_fortran_default(long n) { bench_fortran_default(n); }
#endif
static void loop_nested3(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(mgr, reg);
    sp_region_begin(mgr, reg2);
    sp_region_begin(mgr, reg3);
    BARRIER();
    sp_region_end(mgr, reg3);
    sp_region_end(mgr, reg2);
    sp_region_end(mgr, reg);
  }
}

/* Two worker threads that live for a whole case (so their buffers are
 * already grown and paged in, as in a real run): each repetition releases
 * both at a barrier to record N pairs on their regions, and the wall time of
 * the slower one per pair is the per-thread cost under concurrency. */
static sp_region thread_regions[2];
static long thread_pairs;
static pthread_barrier_t go, done;
static int stop_workers;
static int workers_raw; /* 1: the threads time raw rdtsc pairs (their baseline) */
static pthread_t workers[2];
static int workers_up;

static void *thread_body(void *arg) {
  for (;;) {
    pthread_barrier_wait(&go);
    if (stop_workers) return NULL;
    sp_region r = thread_regions[(intptr_t)arg];
    if (workers_raw)
      loop_rdtsc(thread_pairs);
    else
      for (long i = 0; i < thread_pairs; i++) {
        sp_region_begin(mgr, r);
        BARRIER();
        sp_region_end(mgr, r);
      }
    pthread_barrier_wait(&done);
  }
}

static void two_threads(long n) {
  if (!workers_up) {
    pthread_barrier_init(&go, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    stop_workers = 0;
    for (intptr_t i = 0; i < 2; i++) pthread_create(&workers[i], NULL, thread_body, (void *)i);
    workers_up = 1;
  }
  thread_pairs = n;
  pthread_barrier_wait(&go);
  pthread_barrier_wait(&done);
}

static void stop_two_threads(void) {
  if (!workers_up) return;
  stop_workers = 1;
  pthread_barrier_wait(&go);
  for (int i = 0; i < 2; i++) pthread_join(workers[i], NULL);
  pthread_barrier_destroy(&go);
  pthread_barrier_destroy(&done);
  workers_up = 0;
}

struct result {
  const char *name;
  double med, min, max; /* ns per pair */
  double cpu;           /* median of the thread's CPU time, ns per pair */
};

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Between repetitions the recording manager is finalized without output so
 * every repetition starts from the same (already grown) buffers. */
static struct result measure(const char *name, void (*fn)(long), long pairs, int reps, double per,
                             int reset) {
  double *t = malloc(2 * (size_t)reps * sizeof *t), *c = t + reps;
  fn(pairs / 10); /* warm-up: page in buffers, train branches */
  if (reset) sp_manager_finalize(mgr, NULL, NULL);
  for (int r = 0; r < reps; r++) {
    double c0 = cpu_s(), t0 = now_s();
    fn(pairs);
    double t1 = now_s(), c1 = cpu_s();
    t[r] = (t1 - t0) * 1e9 / (double)pairs / per;
    c[r] = (c1 - c0) * 1e9 / (double)pairs / per;
    if (reset) sp_manager_finalize(mgr, NULL, NULL);
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  qsort(c, (size_t)reps, sizeof *c, cmp_d);
  struct result res = {name, t[reps / 2], t[0], t[reps - 1], c[reps / 2]};
  free(t);
  return res;
}

static sp_manager *make_manager(const char *const *overrides) {
  sp_manager *m = sp_manager_create();
  sp_setup_args a = {.overrides = overrides};
  if (!m || sp_manager_setup(m, &a) != SP_OK) {
    fprintf(stderr, "overhead: setup failed: %s\n", sp_last_error());
    exit(1);
  }
  return m;
}

int main(int argc, char **argv) {
  long pairs = 2000000;
  int reps = 11;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else {
      fprintf(stderr, "usage: overhead [--pairs N] [--reps R] [--json FILE]\n");
      return 2;
    }
  }
  if (pairs < 1000 || reps < 1) return 2;
  reg = sp_region_intern("bench");
  reg2 = sp_region_intern("bench.inner");
  reg3 = sp_region_intern("bench.leaf");

  static const char *const off[] = {"deactivate_profiling=1", NULL};
  static const char *const on[] = {"deactivate_file_output=1", NULL};
  static const char *const agg[] = {"deactivate_file_output=1", "aggregation_mode=1", NULL};
  static const char *const thr[] = {"deactivate_file_output=1", "track_threads=1", NULL};
  sp_register_opt_in_tag("bench-opt-in");
  tagged = sp_region_intern_ex("bench.tagged", NULL, -1, NULL, "bench-opt-in");
  struct result res[32];
  int n = 0;
  res[n++] = measure("empty loop", loop_empty, pairs, reps, 1, 0);
  res[n++] = measure("rdtsc pair", loop_rdtsc, pairs, reps, 1, 0);
  res[n++] = measure("clock_gettime pair", loop_clock_gettime, pairs, reps, 1, 0);
  res[n++] = measure("compiled out", bench_loop_compiled_out, pairs, reps, 1, 0);
  mgr = make_manager(off);
  res[n++] = measure("deactivated", loop_region, pairs, reps, 1, 0);
  sp_manager_destroy(mgr);
  mgr = make_manager(on);
  res[n++] = measure("timeline", loop_region, pairs, reps, 1, 1);
  res[n++] = measure("timeline, out-of-line calls (_fn)", loop_region_fn, pairs, reps, 1, 1);
  res[n++] = measure("timeline, interned name", loop_interned, pairs, reps, 1, 1);
  res[n++] = measure("timeline, nested 3 deep (per pair)", loop_nested3, pairs / 3, reps, 3, 1);
  res[n++] = measure("disabled opt-in tag", loop_tagged, pairs, reps, 1, 1);
  res[n++] = measure("disabled opt-in tag, call site", loop_tagged_site, pairs, reps, 1, 1);
  res[n++] = measure("C: SP_REGION_M", loop_c_macro, pairs, reps, 1, 1);
#if defined(SP_BENCH_CXX)
  res[n++] = measure("C++: SP_PROFILE_SCOPE_M", loop_cxx_macro, pairs, reps, 1, 1);
  res[n++] = measure("C++: sp::Scope(manager, Region)", loop_cxx_scope, pairs, reps, 1, 1);
  res[n++] = measure("C++: sp::Scope(manager, string_view)", loop_cxx_runtime_name, pairs, reps, 1, 1);
#endif
#if defined(SP_BENCH_FORTRAN)
  res[n++] = measure("Fortran: by handle", loop_fortran_handle, pairs, reps, 1, 1);
  res[n++] = measure("Fortran: by name", loop_fortran_name, pairs, reps, 1, 1);
#endif
  {
    /* The default manager: sp_begin/sp_end and the Fortran calls without a
     * manager argument. */
    sp_manager *own = mgr;
    sp_setup_args a = {.overrides = on};
    if (sp_setup(&a) != SP_OK) {
      fprintf(stderr, "overhead: setup failed: %s\n", sp_last_error());
      return 1;
    }
    mgr = SP_DEFAULT;
    res[n++] = measure("C: sp_begin/sp_end, default manager", loop_c_default, pairs, reps, 1, 1);
#if defined(SP_BENCH_FORTRAN)
    res[n++] = measure("Fortran: by handle, default manager", loop_fortran_default, pairs, reps, 1, 1);
#endif
    mgr = own;
  }
  thread_regions[0] = reg;
  thread_regions[1] = reg2;
  workers_raw = 1;
  res[n++] = measure("2 threads, rdtsc pairs (per thread)", two_threads, pairs, reps, 1, 0);
  workers_raw = 0;
  res[n++] = measure("2 threads, own regions (per thread)", two_threads, pairs, reps, 1, 1);
  thread_regions[1] = reg;
  res[n++] = measure("2 threads, one shared region (per thread)", two_threads, pairs, reps, 1, 1);
  stop_two_threads();
  sp_manager_destroy(mgr);
  mgr = make_manager(thr);
  res[n++] = measure("timeline, track_threads", loop_region, pairs, reps, 1, 1);
  sp_manager_destroy(mgr);
  mgr = make_manager(agg);
  res[n++] = measure("aggregation", loop_region, pairs, reps, 1, 1);
  res[n++] = measure("aggregation, nested 3 deep (per pair)", loop_nested3, pairs / 3, reps, 3, 1);
  sp_manager_destroy(mgr);

  double empty = res[0].med, tsc = res[1].med, cg = res[2].med, tsc_cpu = res[1].cpu;
  printf("scope-profiler %s overhead: %ld pairs x %d reps, clock=%s; median [min, max] ns per begin/end pair\n",
         sp_version_string(), pairs, reps, getenv("SCOPE_PROFILER_CLOCK") ? getenv("SCOPE_PROFILER_CLOCK") : "auto");
  printf("%-36s %9s %19s %9s %9s %9s %9s %9s\n", "case", "ns/pair", "[min, max]", "/ rdtsc", "/ cgt", "- empty",
         "cpu ns", "cpu/rdtsc");
  for (int i = 0; i < n; i++)
    printf("%-36s %9.2f [%7.2f, %7.2f] %9.2f %9.2f %9.2f %9.2f %9.2f\n", res[i].name, res[i].med, res[i].min,
           res[i].max, res[i].med / tsc, res[i].med / cg, res[i].med - empty, res[i].cpu, res[i].cpu / tsc_cpu);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      perror(json);
      return 1;
    }
    fprintf(f, "{\n  \"pairs\": %ld,\n  \"reps\": %d,\n  \"cases\": [\n", pairs, reps);
    for (int i = 0; i < n; i++)
      fprintf(f,
              "    {\"case\": \"%s\", \"ns_per_pair\": %.3f, \"min\": %.3f, \"max\": %.3f, "
              "\"ratio_rdtsc\": %.3f, \"ratio_clock_gettime\": %.3f, \"minus_empty\": %.3f, "
              "\"cpu_ns_per_pair\": %.3f, \"cpu_ratio_rdtsc\": %.3f}%s\n",
              res[i].name, res[i].med, res[i].min, res[i].max, res[i].med / tsc, res[i].med / cg,
              res[i].med - empty, res[i].cpu, res[i].cpu / tsc_cpu, i + 1 < n ? "," : "");
    fprintf(f, "  ]\n}\n");
    fclose(f);
  }
  return 0;
}
