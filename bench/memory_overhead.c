/* memory_overhead.c - what the allocation capture (libscope_profiler_memory.so)
 * costs per malloc+free pair, and how many capture-file bytes an event takes,
 * as ratios to the same loop without the interposer measured in the same run.
 *
 * The program re-executes itself once per mode, round-robin, ROUNDS times:
 *   bare      the C library alone
 *   loaded    the interposer preloaded, no capture running (the off path)
 *   capture   a capture running (sites are return addresses)
 *   native    a capture with native stacks (libunwind)
 * Each child times REPS repetitions of N pairs and reports medians of three
 * clocks: the allocating thread's CPU time (what the capture adds to the
 * program's own thread), the process's CPU time (that plus the writer
 * thread's coding and compression) and wall time (which, with fewer cores
 * than threads, also holds waits for the writer). The driver keeps, per
 * mode, the lowest median over the rounds (noise only ever adds time). Two loops: "same" frees what it just allocated
 * (a 32-byte block, the cheapest case for the allocator), "mixed" replaces a
 * random one of 4,096 live blocks of random size 16-4,096 bytes, so that
 * addresses and sizes vary as in a real program; file bytes per event are
 * given for both.
 *
 *   memory_overhead [--pairs N] [--reps R] [--rounds K] [--json FILE]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scope_profiler/memory.h"

#define BARRIER() __asm__ volatile("" ::: "memory")

static double clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define NCLOCKS 3
static const clockid_t clocks[NCLOCKS] = {CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID,
                                          CLOCK_MONOTONIC};
static const char *clock_names[NCLOCKS] = {"thread CPU", "process CPU", "wall"};

static void loop_same(long n) {
  for (long i = 0; i < n; i++) {
    void *p = malloc(32);
    BARRIER();
    free(p);
  }
}

#define POOL 4096
static void *pool[POOL];
static unsigned long long rng = 88172645463325252ull;
static unsigned long long next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static void loop_mixed(long n) {
  for (long i = 0; i < n; i++) {
    unsigned long long r = next();
    size_t k = r % POOL, size = 16 + (r >> 20) % 4081;
    free(pool[k]);
    pool[k] = malloc(size);
    BARRIER();
  }
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One mode, in this process: prints, per loop (same, mixed), the medians
 * of the three clocks in ns per pair, then bytes per event of both loops. */
static int child(const char *mode, long pairs, int reps) {
  const struct sp_memory_api *api = NULL;
  int capture = !strcmp(mode, "capture") || !strcmp(mode, "native");
  if (strcmp(mode, "bare")) {
    void *sym = dlsym(RTLD_DEFAULT, "sp_memory_api_v1");
    if (!sym) {
      fprintf(stderr, "memory_overhead: the interposer is not loaded in mode %s\n", mode);
      return 1;
    }
    api = sym;
  }
  for (size_t k = 0; k < POOL; k++) pool[k] = malloc(16 + k % 512);
  double med[2][NCLOCKS], bpe[2] = {0, 0};
  double *t = calloc((size_t)reps * NCLOCKS, sizeof *t);
  for (int loop = 0; loop < 2; loop++) {
    sp_memory_stats st = {0};
    for (int r = 0; r < reps; r++) {
      if (capture) {
        sp_memory_options o = SP_MEMORY_OPTIONS_INIT;
        o.path = "memory_overhead.bin";
        o.native_traces = !strcmp(mode, "native");
        if (api->start(&o)) {
          fprintf(stderr, "memory_overhead: %s\n", api->error());
          return 1;
        }
      }
      double t0[NCLOCKS];
      for (int c = 0; c < NCLOCKS; c++) t0[c] = clock_ns(clocks[c]);
      if (loop == 0)
        loop_same(pairs);
      else
        loop_mixed(pairs);
      /* The thread's time stops here; the writer's work on these pairs
       * ends with stop, which the other two clocks include. */
      t[0 * reps + r] = (clock_ns(clocks[0]) - t0[0]) / (double)pairs;
      if (capture) api->stop(&st);
      for (int c = 1; c < NCLOCKS; c++) t[c * reps + r] = (clock_ns(clocks[c]) - t0[c]) / (double)pairs;
    }
    for (int c = 0; c < NCLOCKS; c++) {
      qsort(t + c * reps, (size_t)reps, sizeof *t, cmp_d);
      med[loop][c] = t[c * reps + reps / 2];
    }
    bpe[loop] = st.events ? (double)st.file_bytes / (double)st.events : 0;
  }
  free(t);
  unlink("memory_overhead.bin");
  for (int loop = 0; loop < 2; loop++)
    for (int c = 0; c < NCLOCKS; c++) printf("%.3f ", med[loop][c]);
  printf("%.3f %.3f\n", bpe[0], bpe[1]);
  return 0;
}

static const char *modes[] = {"bare", "loaded", "capture", "native"};
#define NMODES 4

#define NVALS (2 * NCLOCKS + 2)
static int run_child(const char *self, const char *lib, int m, long pairs, int reps, double *out) {
  int fd[2];
  if (pipe(fd)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    if (m) setenv("LD_PRELOAD", lib, 1);
    else unsetenv("LD_PRELOAD");
    char p[32], r[32];
    snprintf(p, sizeof p, "%ld", pairs);
    snprintf(r, sizeof r, "%d", reps);
    execl(self, self, "--child", modes[m], p, r, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[256] = "";
  ssize_t n = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
  buf[n] = '\0';
  char *p = buf;
  for (int k = 0; k < NVALS; k++) {
    char *end;
    out[k] = strtod(p, &end);
    if (end == p) return -1;
    p = end;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--child")) return child(argv[2], atol(argv[3]), atoi(argv[4]));
  long pairs = 2000000;
  int reps = 7, rounds = 3;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else {
      fprintf(stderr, "usage: memory_overhead [--pairs N] [--reps R] [--rounds K] [--json FILE]\n");
      return 2;
    }
  }
  if (pairs < 1 || reps < 1 || rounds < 1) return 2;
  char self[4096];
  ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0) return 1;
  self[sl] = '\0';
  const char *lib = getenv("SP_MEMORY_LIB") ? getenv("SP_MEMORY_LIB") : SP_MEMORY_LIB;
  double best[NMODES][NVALS];
  for (int m = 0; m < NMODES; m++)
    for (int k = 0; k < NVALS; k++) best[m][k] = k < 2 * NCLOCKS ? 1e300 : 0;
  for (int r = 0; r < rounds; r++)
    for (int m = 0; m < NMODES; m++) {
      double v[NVALS];
      if (run_child(self, lib, m, pairs, reps, v)) {
        fprintf(stderr, "memory_overhead: mode %s failed\n", modes[m]);
        return 1;
      }
      for (int k = 0; k < 2 * NCLOCKS; k++)
        if (v[k] < best[m][k]) best[m][k] = v[k];
      for (int k = 2 * NCLOCKS; k < NVALS; k++) best[m][k] = v[k];
    }
  printf("malloc+free pairs: %ld x %d repetitions per child, best median of %d rounds\n", pairs,
         reps, rounds);
  static const char *loops[2] = {"same block (malloc(32); free)", "mixed (4,096 live blocks, 16-4,096 B)"};
  for (int loop = 0; loop < 2; loop++) {
    printf("\n%s: ns/pair, ratio and added ns against bare\n", loops[loop]);
    printf("%-8s", "mode");
    for (int c = 0; c < NCLOCKS; c++) printf(" %12s %7s %8s", clock_names[c], "/bare", "+ns");
    printf(" %10s\n", "B/event");
    for (int m = 0; m < NMODES; m++) {
      printf("%-8s", modes[m]);
      for (int c = 0; c < NCLOCKS; c++) {
        double v = best[m][loop * NCLOCKS + c], b = best[0][loop * NCLOCKS + c];
        printf(" %12.2f %7.2f %8.2f", v, v / b, v - b);
      }
      printf(" %10.2f\n", best[m][2 * NCLOCKS + loop]);
    }
  }
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) return 1;
    fprintf(f, "{\"pairs\": %ld, \"reps\": %d, \"rounds\": %d, \"modes\": {", pairs, reps, rounds);
    static const char *keys[NCLOCKS] = {"thread_cpu_ns", "process_cpu_ns", "wall_ns"};
    for (int m = 0; m < NMODES; m++) {
      fprintf(f, "%s\"%s\": {", m ? ", " : "", modes[m]);
      for (int loop = 0; loop < 2; loop++)
        for (int c = 0; c < NCLOCKS; c++)
          fprintf(f, "\"%s_%s\": %.3f, ", loop ? "mixed" : "same", keys[c], best[m][loop * NCLOCKS + c]);
      fprintf(f, "\"same_bytes_per_event\": %.3f, \"mixed_bytes_per_event\": %.3f}",
              best[m][2 * NCLOCKS], best[m][2 * NCLOCKS + 1]);
    }
    fprintf(f, "}}\n");
    fclose(f);
  }
  return 0;
}
