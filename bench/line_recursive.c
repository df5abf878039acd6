/* line_recursive.c - what recursive_profile costs per instrumented call and
 * what use_line_profiler costs at its default rate, as ratios to a baseline
 * measured in the same process and run (BENCHMARKS.md).
 *
 * Built with -finstrument-functions; every function here except tiny_instr
 * is no_instrument_function. recursive_profile: a loop calling tiny_plain
 * (not instrumented) is the baseline; the same loop over tiny_instr with the
 * hooks off (glibc-free: our hooks, a load and a branch), with them on (each
 * call a region call), and, for scale, tiny_plain inside an explicit
 * sp_region_begin/end pair. use_line_profiler: a fixed amount of work in one
 * region with line profiling off, then on with each sampling clock; the
 * ratio is on/off of the thread CPU time the work took. Every time is the
 * thread's CPU time, not wall time: the machines are shared.
 *
 *   line_recursive [--calls N] [--work-ms MS] [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"

#define NI __attribute__((no_instrument_function))
#define BARRIER() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;

__attribute__((noinline)) static void tiny_instr(unsigned long x) { sink += x; }
NI __attribute__((noinline)) static void tiny_plain(unsigned long x) { sink += x; }

NI static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
NI static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

NI static sp_manager *make(const char *extra, const char *extra2) {
  const char *ov[] = {"deactivate_file_output=1", "finalize_on_exit=0", "quiet=1", extra, extra2, NULL};
  sp_manager *m = sp_manager_create();
  sp_setup_args a = {.overrides = ov};
  if (!m || sp_manager_setup(m, &a) != SP_OK) {
    fprintf(stderr, "line_recursive: setup (%s) failed: %s\n", extra ? extra : "plain", sp_last_error());
    sp_manager_destroy(m);
    return NULL;
  }
  return m;
}

enum rcase { R_PLAIN, R_OFF, R_ON, R_PAIR, R_N };
static const char *const rnames[R_N] = {"plain call", "instrumented, recursive_profile off",
                                         "instrumented, recursive_profile on", "explicit region pair"};

/* Seconds for n calls of case c. */
NI static double run_recursive(enum rcase c, long n) {
  sp_manager *m = NULL;
  sp_region r = 0;
  if (c == R_ON && !(m = make("recursive_profile=1", NULL))) return -1;
  if (c == R_PAIR) {
    if (!(m = make(NULL, NULL))) return -1;
    r = sp_region_intern("bench.pair");
  }
  double t0 = cpu_s();
  switch (c) {
  case R_PLAIN:
    for (long i = 0; i < n; i++) tiny_plain((unsigned long)i);
    break;
  case R_OFF:
  case R_ON:
    for (long i = 0; i < n; i++) tiny_instr((unsigned long)i);
    break;
  case R_PAIR:
    for (long i = 0; i < n; i++) {
      sp_region_begin(m, r);
      tiny_plain((unsigned long)i);
      sp_region_end(m, r);
    }
    break;
  default:
    break;
  }
  double t = cpu_s() - t0;
  if (m) {
    sp_manager_finalize(m, NULL, NULL);
    sp_manager_destroy(m);
  }
  return t;
}

NI __attribute__((noinline)) static void work(double ms) {
  double end = cpu_s() + ms * 1e-3;
  while (cpu_s() < end)
    for (int i = 0; i < 20000; i++) sink += (unsigned long)i * 3u;
}

/* Thread CPU seconds of a fixed number of work iterations with line
 * profiling on with `sampler` (NULL: off). */
NI static double run_lines(const char *sampler, long iters, char *backend, size_t size, long *samples) {
  char kv[64];
  snprintf(kv, sizeof kv, "line_profile_sampler=%s", sampler ? sampler : "auto");
  sp_manager *m = make(sampler ? "use_line_profiler=1" : "use_line_profiler=0", kv);
  if (!m) return -1;
  sp_region r = sp_region_intern("bench.work");
  sp_region_begin(m, r);
  double t0 = cpu_s();
  for (long k = 0; k < iters; k++)
    for (int i = 0; i < 20000; i++) sink += (unsigned long)i * 3u;
  double t = cpu_s() - t0;
  sp_region_end(m, r);
  sp_results *res = NULL;
  sp_finalize_args fa = {.return_results = 1};
  sp_manager_finalize(m, &fa, &res);
  if (backend) {
    const sp_metadata_entry *b = res ? sp_results_metadata(res, "line_profile_sampler") : NULL;
    snprintf(backend, size, "%s", b && b->s ? b->s : "-");
    const sp_metadata_entry *n = res ? sp_results_metadata(res, "line_profile_samples") : NULL;
    *samples = n ? (long)n->i : 0;
  }
  sp_results_free(res);
  sp_manager_destroy(m);
  return t;
}

NI int main(int argc, char **argv) {
  long calls = 5000000, reps = 7;
  double work_ms = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--calls")) calls = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--work-ms")) work_ms = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atol(argv[i + 1]);
  }
  if (calls < 1 || reps < 1 || work_ms <= 0) {
    fprintf(stderr, "usage: line_recursive [--calls N] [--work-ms MS] [--reps R]\n");
    return 2;
  }
  double *t = calloc((size_t)reps * R_N, sizeof *t);
  if (!t) return 1;
  for (long k = 0; k < reps; k++) /* interleaved: load changes hit every case alike */
    for (int c = 0; c < R_N; c++) t[c * reps + k] = run_recursive((enum rcase)c, calls);
  printf("recursive_profile, %ld calls, median of %ld runs (ns per call; extra = minus the plain call)\n", calls,
         reps);
  double base = 0;
  for (int c = 0; c < R_N; c++) {
    qsort(t + c * reps, (size_t)reps, sizeof *t, cmp_d);
    double med = t[c * reps + reps / 2];
    if (med < 0) {
      printf("  %-38s unavailable\n", rnames[c]);
      continue;
    }
    double ns = med / (double)calls * 1e9;
    if (c == R_PLAIN) base = ns;
    printf("  %-38s %7.2f ns  extra %7.2f ns\n", rnames[c], ns, ns - base);
  }
  free(t);

  /* How many work iterations take work_ms of CPU here. */
  work(50); /* warm up */
  long probe = 0;
  double c0 = cpu_s();
  while (cpu_s() - c0 < 0.05) {
    for (int i = 0; i < 20000; i++) sink += (unsigned long)i * 3u;
    probe++;
  }
  long iters = (long)((double)probe * (work_ms * 1e-3) / 0.05);
  const char *samplers[] = {NULL, "perf", "timer"};
  const char *labels[] = {"off", "on, perf", "on, timer"};
  double *lt = calloc((size_t)reps * 3, sizeof *lt);
  char backend[3][32] = {"-", "-", "-"};
  long samples[3] = {0, 0, 0};
  if (!lt) return 1;
  for (long k = 0; k < reps; k++)
    for (int c = 0; c < 3; c++) lt[c * reps + k] = run_lines(samplers[c], iters, backend[c], sizeof backend[c], &samples[c]);
  printf("use_line_profiler at the default rate, %.0f ms of CPU work in one region, median of %ld runs\n",
         work_ms, reps);
  double off = 0;
  for (int c = 0; c < 3; c++) {
    qsort(lt + c * reps, (size_t)reps, sizeof *lt, cmp_d);
    double med = lt[c * reps + reps / 2];
    if (c == 0) off = med;
    if (med < 0) {
      printf("  %-10s unavailable\n", labels[c]);
      continue;
    }
    printf("  %-10s %8.1f ms CPU  ratio %.3f  (sampler: %s, %ld samples in the last run)\n", labels[c], med * 1e3,
           med / off, backend[c], samples[c]);
  }
  free(lt);
  return 0;
}
