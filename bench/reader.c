/* reader.c - reading a large file: the call-path tree and the call stack of
 * a 10M-event run, by the streamed walk (src/read/read_walk.c) against the
 * sorted path it replaced, in the same run.
 *
 * Records N timeline events (default 10M) of a time-step loop (32 regions,
 * nested) into a file, or takes --file, then for each path: the tree
 * (sp_results_call_tree, what `inspect --tree` builds) and rank 0's call
 * stack (sp_results_call_stack, what `report` draws and the exporters
 * read), each on a freshly opened file. (Own times walk the same way, but
 * only for files without stored exclusive totals.) Prints wall
 * and process CPU seconds, the peak RSS each step added per event, and the
 * ratios walk / sorted. Each step runs in a child process of its own (its
 * peak RSS over what opening the file took is the step's).
 *
 * With --threads T the loop runs on T threads at once (N/T events each,
 * the same regions), and with --budget B under max_buffer_bytes=B: the run
 * streams, and a streamed run's file is its staged blocks (docs/file-format.md
 * "Staged blocks"), whose rows of regions shared by the threads are out of
 * start order (each (row, block) segment in it).
 *
 * With --recurse each kernel runs inside a call of its step's solver (the
 * solver recursing once per kernel): a solver call is then open across
 * each hand-off of a streamed run, with calls of its own region inside it
 * (the case the copy way's assembly once wrote out of start order). A step
 * is then 28 calls, not a divisor of a buffer's 2^k: hand-offs fall inside
 * steps (ts_record's 32-call steps fill each buffer exactly, so nothing is
 * open at a hand-off but the calls of the threads' callers).
 *
 *   reader [--events N] [--file F] [--keep] [--reps R] [--threads T] [--budget B] [--recurse]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"
#include "timesteps.h"

extern int sp__walk_enabled; /* src/read/read_walk.c: 0 takes the sorted path */

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int recurse;

/* ts_record's loop with each kernel inside a call of the step's solver. */
static long record_recursing(sp_manager *m, const sp_region *regs, long events) {
  long done = 0;
  for (long step = 0; done < events; step++) {
    sp_region solver = regs[1 + step % 3];
    sp_region_begin(m, regs[0]);
    sp_region_begin(m, solver);
    for (int k = 0; k < 13 && done + 4 < events; k++) {
      sp_region_begin(m, solver);
      sp_region_begin(m, regs[4 + (k + step) % (TS_NREG - 4)]);
      sp_region_end(m, regs[4 + (k + step) % (TS_NREG - 4)]);
      sp_region_end(m, solver);
      done += 2;
    }
    sp_region_end(m, solver);
    sp_region_end(m, regs[0]);
    done += 2;
  }
  return done;
}

struct rec_arg {
  sp_manager *m;
  const sp_region *regs;
  long events, done;
};
static void *rec_thread(void *p) {
  struct rec_arg *a = p;
  a->done = recurse ? record_recursing(a->m, a->regs, a->events) : ts_record(a->m, a->regs, a->events);
  return NULL;
}

static long record(const char *out, long events, int threads, const char *budget) {
  sp_region regs[TS_NREG];
  ts_regions(regs);
  char mb[64];
  if (budget) snprintf(mb, sizeof mb, "max_buffer_bytes=%s", budget);
  sp_manager *m = ts_manager_with("reader", out, budget ? mb : NULL);
  long done = 0;
  if (threads <= 1) {
    done = recurse ? record_recursing(m, regs, events) : ts_record(m, regs, events);
  } else {
    pthread_t th[64];
    struct rec_arg a[64];
    for (int t = 0; t < threads; t++) {
      a[t] = (struct rec_arg){m, regs, events / threads, 0};
      if (pthread_create(&th[t], NULL, rec_thread, &a[t]) != 0) exit(1);
    }
    for (int t = 0; t < threads; t++) {
      pthread_join(th[t], NULL);
      done += a[t].done;
    }
  }
  long rec_kib = maxrss_kib();
  if (sp_manager_finalize(m, NULL, NULL) != SP_OK) {
    fprintf(stderr, "reader: finalize: %s\n", sp_last_error());
    exit(1);
  }
  sp_manager_destroy(m);
  /* this process's own peak (the reading steps run in children): what a
   * budget bounds, against the budget */
  printf("record: %ld events on %d thread(s), peak RSS %.1f MiB recording, %.1f MiB with finalize%s%s\n", done,
         threads, (double)rec_kib / 1024.0, (double)maxrss_kib() / 1024.0, budget ? ", max_buffer_bytes " : "",
         budget ? budget : "");
  return done;
}

struct step {
  double wall, cpu, bpe;
};

/* One operation on a fresh open, in a child process of its own, so that its
 * peak RSS is its own: 0 tree, 1 call stack of rank 0. */
static struct step run_here(const char *path, int op, uint64_t *events, long *rss_open) {
  sp_results *r = NULL;
  if (sp_results_open(path, &r) != SP_OK) {
    fprintf(stderr, "reader: %s\n", sp_last_error());
    exit(1);
  }
  *events = sp_results_num_events(r);
  *rss_open = maxrss_kib();
  double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  sp_status st = SP_OK;
  if (op == 0) {
    sp_tree_node *nodes = NULL;
    size_t n = 0;
    st = sp_results_call_tree(r, NULL, &nodes, &n);
    free(nodes);
  } else {
    sp_call *c = NULL;
    size_t n = 0;
    st = sp_results_call_stack(r, sp_results_rank(r, 0), NULL, &c, &n, NULL);
    free(c);
  }
  struct step s = {clock_s(CLOCK_MONOTONIC) - w0, clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0, 0};
  if (st != SP_OK) {
    fprintf(stderr, "reader: %s\n", sp_last_error());
    exit(1);
  }
  sp_results_free(r);
  return s;
}

static struct step run(const char *path, int op, uint64_t *events) {
  int fd[2];
  if (pipe(fd) != 0) exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    struct {
      struct step s;
      uint64_t events;
      long rss_open;
    } msg;
    msg.s = run_here(path, op, &msg.events, &msg.rss_open);
    if (write(fd[1], &msg, sizeof msg) != (ssize_t)sizeof msg) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  struct {
    struct step s;
    uint64_t events;
    long rss_open;
  } msg;
  ssize_t got = read(fd[0], &msg, sizeof msg);
  close(fd[0]);
  int status = 0;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || got != (ssize_t)sizeof msg || status != 0) {
    fprintf(stderr, "reader: the measuring process failed\n");
    exit(1);
  }
  *events = msg.events;
  msg.s.bpe =
      (double)(ru.ru_maxrss - msg.rss_open) * 1024.0 / (double)(msg.events ? msg.events : 1);
  return msg.s;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long events = 10000000;
  const char *file = NULL;
  int keep = 0, reps = 3, threads = 1;
  const char *budget = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc)
      events = atol(argv[++i]);
    else if (!strcmp(argv[i], "--file") && i + 1 < argc)
      file = argv[++i];
    else if (!strcmp(argv[i], "--keep"))
      keep = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
      budget = argv[++i];
    else if (!strcmp(argv[i], "--recurse"))
      recurse = 1;
    else {
      fprintf(stderr, "usage: reader [--events N] [--file F] [--keep] [--reps R] [--threads T] [--budget B] [--recurse]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > 99) reps = 3;
  if (threads < 1 || threads > 64) threads = 1;
  const char *path = file ? file : "bench_reader.h5";
  if (!file) record(path, events, threads, budget);
  static const char *what[2] = {"call-path tree", "call stack, rank 0"};
  printf("%-20s %-7s %9s %9s %11s %9s\n", "step", "path", "wall [s]", "cpu [s]", "peak B/ev",
         "cpu ratio");
  uint64_t n = 0;
  for (int op = 0; op < 2; op++) {
    struct step best[2];
    for (int p = 0; p < 2; p++) {
      double wall[99], cpu[99], bpe = 0;
      for (int k = 0; k < reps; k++) {
        sp__walk_enabled = p == 0;
        struct step s = run(path, op, &n);
        wall[k] = s.wall;
        cpu[k] = s.cpu;
        if (s.bpe > bpe) bpe = s.bpe;
      }
      qsort(wall, (size_t)reps, sizeof *wall, cmp_d);
      qsort(cpu, (size_t)reps, sizeof *cpu, cmp_d);
      best[p] = (struct step){wall[reps / 2], cpu[reps / 2], bpe};
    }
    sp__walk_enabled = 1;
    for (int p = 0; p < 2; p++)
      printf("%-20s %-7s %9.3f %9.3f %11.1f %9s\n", what[op], p ? "sorted" : "walk", best[p].wall,
             best[p].cpu, best[p].bpe, p ? "1.00" : "");
    printf("%-20s %-7s %9.3f %9.3f %11s %9.3f\n", "", "ratio", best[0].wall / best[1].wall,
           best[0].cpu / best[1].cpu, "", best[0].cpu / best[1].cpu);
  }
  printf("events %llu; medians of %d; peak B/ev: peak RSS of the step over the opened file, per "
         "event\n",
         (unsigned long long)n, reps);
  if (!file && !keep) remove(path);
  return 0;
}
