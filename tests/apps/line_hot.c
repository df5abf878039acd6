/* line_hot.c - a program with known hot lines for the line-profile tests:
 * two threads each run region "compute", in which a separate function
 * (loop_a) and a function inlined into the thread's body (loop_b) spin for
 * 3:1 of the thread's CPU time. The CPU time each loop really took is
 * measured with the thread's own clock and printed on stderr
 * ("measured loop_a_ns=... loop_b_ns=..."), for the test to compare with
 * what the samples say. With `omp MS` instead, the main thread opens
 * "compute" and an OpenMP team of two threads spends MS ms of each one's CPU
 * in loop_a, the other thread with no region open of its own: its samples
 * belong to "compute" too ("measured loop_a_ns=... team=2"). The hot lines
 * are marked HOT_A and HOT_B. The
 * clock (a system call) is read every 1000000 steps (about 1.5 ms) only, so
 * that few samples land in it rather than in the loops. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scope_profiler.h"
#ifdef _OPENMP
#  include <omp.h>
#endif

static int64_t cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) static double loop_a(int64_t ns) {
  int64_t end = cpu_now() + ns;
  double x = 0;
  while (cpu_now() < end)
    for (int i = 0; i < 1000000; i++) x += (double)i * 0.5 + x * 1e-9; /* HOT_A */
  return x;
}

static inline __attribute__((always_inline)) double loop_b(int64_t ns) {
  int64_t end = cpu_now() + ns;
  double x = 0;
  while (cpu_now() < end)
    for (int i = 0; i < 1000000; i++) x -= (double)i * 0.25 + x * 1e-9; /* HOT_B */
  return x;
}

static int64_t ms = 300;
static int64_t measured_a[2], measured_b[2];
static volatile double sink;

static void *worker(void *p) {
  int k = (int)(intptr_t)p;
  SP_REGION("compute");
  int64_t t0 = cpu_now();
  sink += loop_a(ms * 1000000);
  int64_t t1 = cpu_now();
  sink += loop_b(ms * 1000000 / 3);
  int64_t t2 = cpu_now();
  measured_a[k] = t1 - t0;
  measured_b[k] = t2 - t1;
  return NULL;
}

/* loop_a on both threads of an OpenMP team opened inside "compute". */
static int team(void) {
#ifdef _OPENMP
  int64_t spent[2] = {0, 0};
  int n = 0;
  {
    SP_REGION("compute");
#  pragma omp parallel num_threads(2)
    {
      int64_t t0 = cpu_now();
      sink += loop_a(ms * 1000000);
      int k = omp_get_thread_num();
      if (k >= 0 && k < 2) spent[k] = cpu_now() - t0;
#  pragma omp atomic
      n++;
    }
  }
  fprintf(stderr, "measured loop_a_ns=%lld team=%d\n", (long long)(spent[0] + spent[1]), n);
  return 0;
#else
  fprintf(stderr, "line_hot: built without OpenMP\n");
  return 5;
#endif
}

int main(int argc, char **argv) {
  int omp = argc > 1 && !strcmp(argv[1], "omp");
  if (argc > 1 + omp) ms = atoi(argv[1 + omp]);
  sp_finalize_args fin = {.verbose = 1};
  sp_status st = sp_setup(NULL);
  if (st != SP_OK) return 3;
  if (omp) {
    int rc = team();
    st = sp_finalize(&fin, NULL);
    return rc ? rc : st == SP_OK ? 0 : 4;
  }
  pthread_t th[2];
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  st = sp_finalize(&fin, NULL);
  fprintf(stderr, "measured loop_a_ns=%lld loop_b_ns=%lld\n", (long long)(measured_a[0] + measured_a[1]),
          (long long)(measured_b[0] + measured_b[1]));
  return st == SP_OK ? 0 : 4;
}
