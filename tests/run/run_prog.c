/* run_prog.c - a program that knows nothing of scope-profiler, for the
 * tests of `scope-profiler run` (tests/integration/test_run.sh). Built
 * twice: run-prog as is and run-prog-instr with -finstrument-functions
 * (neither links the library). Its call graph is known: main calls outer()
 * 3 times; each outer() runs fib(4) (9 calls, recursive) and calls leaf()
 * twice through a function pointer, so recursive profiling must find
 * outer 3, fib 27 and leaf 6 calls. Then, by argument:
 *   exit N     return N from main
 *   signal N   raise signal N after the calls and wait to be ended (as a
 *              program killed from outside goes on until the signal acts)
 *   spin MS    spend MS ms of CPU time in spin() first (line samples)
 *   team MS    an OpenMP team of two threads (built with OpenMP) that each
 *              spend MS ms of their own CPU time in spin() first, with
 *              no region open on either (line samples of the whole run)
 *   thread MS  a plain pthread (no OpenMP, no region) spends MS ms of its own
 *              CPU time in spin() while the main thread spends MS/3 ms of
 *              its own in main_spin(), then joins it
 *   close      close stdout before returning (the summary still prints)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#  include <omp.h>
#endif

static volatile int sink;

__attribute__((noinline)) static int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int (*volatile through_pointer)(int) = leaf;

__attribute__((noinline)) static void outer(int i) {
  sink += fib(4);
  sink += through_pointer(i);
  sink += through_pointer(i + 1);
}

/* MS ms of `clock`'s CPU time (the process's, or the calling thread's own). */
__attribute__((noinline)) static void spin(long ms, clockid_t clock) {
  struct timespec t0, t;
  clock_gettime(clock, &t0);
  do {
    for (int i = 0; i < 100000; i++) sink += i; /* SPIN_LINE */
    clock_gettime(clock, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* spin() under another name, for the main thread's share in `thread MS`. */
__attribute__((noinline)) static void main_spin(long ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    for (int i = 0; i < 100000; i++) sink += i; /* MAIN_SPIN_LINE */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void *thread_body(void *p) {
  spin(*(long *)p, CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

static int plain_thread(long ms) {
  pthread_t th;
  if (pthread_create(&th, NULL, thread_body, &ms) != 0) return 68;
  main_spin(ms / 3);
  pthread_join(th, NULL);
  return 0;
}

static int team(long ms) {
#ifdef _OPENMP
  int n = 0;
#  pragma omp parallel num_threads(2)
  {
    spin(ms, CLOCK_THREAD_CPUTIME_ID);
#  pragma omp atomic
    n++;
  }
  return n == 2 ? 0 : 66;
#else
  (void)ms;
  fprintf(stderr, "run_prog: built without OpenMP\n");
  return 67;
#endif
}

int main(int argc, char **argv) {
  int code = 0, sig = 0, close_out = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "exit") && i + 1 < argc) code = atoi(argv[++i]);
    else if (!strcmp(argv[i], "signal") && i + 1 < argc) sig = atoi(argv[++i]);
    else if (!strcmp(argv[i], "spin") && i + 1 < argc) spin(atol(argv[++i]), CLOCK_PROCESS_CPUTIME_ID);
    else if (!strcmp(argv[i], "team") && i + 1 < argc) {
      if ((code = team(atol(argv[++i])))) return code;
    } else if (!strcmp(argv[i], "thread") && i + 1 < argc) {
      if ((code = plain_thread(atol(argv[++i])))) return code;
    } else if (!strcmp(argv[i], "close")) close_out = 1;
    else {
      fprintf(stderr, "run_prog: unknown argument %s\n", argv[i]);
      return 64;
    }
  }
  for (int i = 0; i < 3; i++) outer(i);
  printf("run_prog: done\n");
  fflush(stdout);
  if (sig) {
    raise(sig);
    for (int i = 0; i < 100; i++) usleep(100000); /* 10 s at most */
    fprintf(stderr, "run_prog: still running 10 s after signal %d\n", sig);
    return 65;
  }
  if (close_out) close(STDOUT_FILENO);
  return code;
}
