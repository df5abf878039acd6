/* overhead_ab.c - the overhead a run really paid, measured A/B on a real
 * loop, against the estimate the profiler writes into its file.
 *
 * The loop is a cross-section lookup in the style of XSBench: a random
 * energy, a binary search of a sorted grid much larger than the caches, and a
 * few loads around the hit (cache misses, little arithmetic). A runs the
 * lookups bare; B runs the same lookups with one region per lookup under the
 * default settings (file written). Repetitions alternate A and B in one
 * process. The measured overhead per region is (B - A) / lookups; the
 * estimate is the file's overhead_ns_per_call (the calibrated pair plus what
 * the run counted: out-of-line calls, fresh buffer pages, growth and
 * hand-offs), and overhead_pair_ns is the calibrated pair alone. C runs the
 * lookups between two bare rdtsc reads and no profiler: what reading the
 * clock around the lookup costs by itself in this loop. Times are
 * the process's CPU time (the threads' and any writer's).
 *
 * The estimate per region is the one the summary and inspect show: the
 * region's calls at the pair cost their mean length implies (warm pair for
 * calls under 20 pairs, the uncached pair from 40 on: common/overhead.h).
 * --compute K replaces the lookup by K dependent multiply-adds (no memory
 * traffic): a compute-bound loop of calls as long, where the profiler's
 * lines stay cached and the cold figure is too high.
 *
 *   overhead_ab [--lookups N] [--reps R] [--grid-mib M] [--threads T] [--compute K] [--dir DIR]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/overhead.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

/* Process CPU time: on a shared machine wall time is mostly waiting for a
 * core, while the CPU time of the lookups is what the regions add to. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double *grid;
static size_t ngrid;
static long lookups;
static sp_manager *mgr; /* NULL: run A (or C) */
static int raw_clock;    /* run C: two rdtsc per lookup, no profiler */
static volatile uint64_t clock_sink;
static sp_region reg;

static inline uint64_t next_rand(uint64_t *s) { /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1du;
}

static long compute_iters; /* --compute: a compute-bound call instead */

static double compute(uint64_t *seed) {
  double x = (double)(next_rand(seed) >> 11) * (1.0 / 9007199254740992.0);
  for (long i = 0; i < compute_iters; i++) x = x * 0.999999 + 1e-7;
  return x;
}

static double lookup(uint64_t *seed) {
  if (compute_iters) return compute(seed);
  double e = (double)(next_rand(seed) >> 11) * (1.0 / 9007199254740992.0);
  size_t lo = 0, hi = ngrid - 1;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (grid[mid] > e) hi = mid;
    else lo = mid;
  }
  double f = (e - grid[lo]) / (grid[hi] - grid[lo] + 1e-300);
  return grid[lo] * (1 - f) + grid[hi] * f + grid[(lo * 7) % ngrid];
}

struct worker {
  pthread_t th;
  uint64_t seed;
  double sum;
};

static void *work(void *arg) {
  struct worker *w = arg;
  double s = 0;
  if (mgr) {
    for (long i = 0; i < lookups; i++) {
      sp_region_begin(mgr, reg);
      s += lookup(&w->seed);
      sp_region_end(mgr, reg);
    }
  } else if (raw_clock) {
    for (long i = 0; i < lookups; i++) {
#if defined(__x86_64__)
      uint64_t t0 = __builtin_ia32_rdtsc();
      s += lookup(&w->seed);
      clock_sink = __builtin_ia32_rdtsc() - t0;
#else
      s += lookup(&w->seed);
#endif
    }
  } else {
    for (long i = 0; i < lookups; i++) s += lookup(&w->seed);
  }
  w->sum = s;
  return NULL;
}

static double run_threads(int nthreads, uint64_t seed0) {
  struct worker w[64];
  double t0 = now_s();
  for (int k = 0; k < nthreads; k++) {
    w[k].seed = seed0 + (uint64_t)k * 7919u;
    if (k) pthread_create(&w[k].th, NULL, work, &w[k]);
  }
  work(&w[0]);
  for (int k = 1; k < nthreads; k++) pthread_join(w[k].th, NULL);
  double dt = now_s() - t0;
  volatile double sink = 0;
  for (int k = 0; k < nthreads; k++) sink += w[k].sum;
  (void)sink;
  return dt;
}

static double meta_f(const sp_results *r, const char *key) {
  const sp_metadata_entry *e = sp_results_metadata(r, key);
  if (!e) return -1;
  return e->kind == SP_VALUE_FLOAT ? e->f : e->kind == SP_VALUE_INT ? (double)e->i : -1;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long mib = 256;
  int reps = 5, nthreads = 1;
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  lookups = 2000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--lookups") && i + 1 < argc) lookups = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--grid-mib") && i + 1 < argc) mib = atol(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--compute") && i + 1 < argc) compute_iters = atol(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else {
      fprintf(stderr,
              "usage: overhead_ab [--lookups N] [--reps R] [--grid-mib M] [--threads T] [--compute K] [--dir DIR]\n");
      return 2;
    }
  }
  if (lookups < 1000 || reps < 1 || reps > 99 || mib < 1 || nthreads < 1 || nthreads > 64 || compute_iters < 0) return 2;
  if (compute_iters) mib = 1; /* no grid to speak of */
  ngrid = (size_t)mib * 1024 * 1024 / sizeof *grid;
  grid = malloc(ngrid * sizeof *grid);
  if (!grid) return perror("grid"), 1;
  for (size_t i = 0; i < ngrid; i++) grid[i] = (double)i / (double)ngrid;
  reg = sp_region_intern("xs.lookup");
  char path[4200], fp[4300];
  snprintf(path, sizeof path, "%s/overhead_ab.%ld.h5", dir, (long)getpid());
  snprintf(fp, sizeof fp, "file_path=%s", path);
  const char *ov[] = {fp, "quiet=1", NULL};
  double a[99], b[99], c[99], est[99], pair[99], cold[99], extra[99];
  run_threads(nthreads, 1); /* warm the grid */
  for (int rep = 0; rep < reps; rep++) {
    mgr = NULL;
    a[rep] = run_threads(nthreads, 100 + (uint64_t)rep);
    raw_clock = 1;
    c[rep] = run_threads(nthreads, 100 + (uint64_t)rep);
    raw_clock = 0;
    mgr = sp_manager_create();
    if (!mgr || sp_manager_setup(mgr, &(sp_setup_args){.overrides = ov}) != SP_OK) {
      fprintf(stderr, "overhead_ab: setup failed: %s\n", sp_last_error());
      return 1;
    }
    b[rep] = run_threads(nthreads, 100 + (uint64_t)rep); /* the same lookups */
    sp_results *res = NULL;
    if (sp_manager_finalize(mgr, &(sp_finalize_args){.return_results = 1}, &res) != SP_OK || !res) {
      fprintf(stderr, "overhead_ab: finalize failed: %s\n", sp_last_error());
      return 1;
    }
    pair[rep] = meta_f(res, "overhead_pair_ns");
    cold[rep] = meta_f(res, "overhead_cold_pair_ns");
    double mean = -1;
    for (size_t i = 0; i < sp_results_num_regions(res); i++) {
      sp_region_stats st;
      if (!strcmp(sp_results_region_name(res, i), "xs.lookup") &&
          sp_results_region_stats(res, i, NULL, 0, &st) == SP_OK)
        mean = st.mean_ns;
    }
    est[rep] = sp__ovh_call_ns(mean, pair[rep], cold[rep]);
    double calls = (double)lookups * nthreads;
    extra[rep] = meta_f(res, "overhead_extra_ns") / calls; /* not in the region's estimate */
    sp_results_free(res);
    sp_manager_destroy(mgr);
    remove(path);
  }
  double per = (double)lookups; /* per lookup of one thread: threads run side by side */
  double d[99];
  for (int i = 0; i < reps; i++) d[i] = (b[i] - a[i]) * 1e9 / per;
  if (compute_iters)
    printf("%ld calls of %ld multiply-adds x %d thread(s), %d repetitions (A bare, B one region per call)\n", lookups,
           compute_iters, nthreads, reps);
  else
    printf("%ld lookups x %d thread(s), grid %ld MiB, %d repetitions (A bare, B one region per lookup)\n", lookups,
           nthreads, mib, reps);
  printf("%-4s %12s %12s %12s %12s %12s %12s %12s %12s\n", "rep", "A ns/lookup", "B ns/lookup", "B-A ns", "C-A ns",
         "estimate", "pair (cal.)", "cold (cal.)", "extra/call");
  double dc[99];
  for (int i = 0; i < reps; i++) {
    dc[i] = (c[i] - a[i]) * 1e9 / per;
    printf("%-4d %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", i, a[i] * 1e9 / per, b[i] * 1e9 / per,
           d[i], dc[i], est[i], pair[i], cold[i], extra[i]);
  }
  qsort(dc, (size_t)reps, sizeof *dc, cmp_d);
  qsort(d, (size_t)reps, sizeof *d, cmp_d);
  qsort(est, (size_t)reps, sizeof *est, cmp_d);
  qsort(pair, (size_t)reps, sizeof *pair, cmp_d);
  qsort(cold, (size_t)reps, sizeof *cold, cmp_d);
  printf("median: measured %.2f ns per region (two bare rdtsc per lookup: %.2f), estimated %.2f (pairs calibrated: "
         "%.2f warm, %.2f cold): estimate / measured = %.2f\n",
         d[reps / 2], dc[reps / 2], est[reps / 2], pair[reps / 2], cold[reps / 2],
         d[reps / 2] > 0 ? est[reps / 2] / d[reps / 2] : 0.0);
  free(grid);
  return 0;
}
