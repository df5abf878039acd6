/* long_run.c - a long run on a busy machine: one recording thread pinned to
 * one core, 50M timeline pairs with the default settings, against the rdtsc
 * pair measured on the same core in the same process.
 *
 * HPC jobs use every core, so whatever the profiler does beside the
 * recording thread (the streaming writer, page faults on fresh buffer pages)
 * shows in the thread's wall time even when its CPU time stays at the floor.
 * Each case reports wall and thread CPU time per pair, the process's CPU
 * time per pair (the writer thread included), minor page faults and resident
 * memory per recorded event, and the ratio of its wall time to the rdtsc
 * pair's. A second baseline is the floor of any writer that stages the
 * events to a file: writing 32 bytes per event (what the stream writer
 * stages per call) into a fresh file from a buffer in cache, the kernel's
 * page-cache copy only, on the same core. Cases, run in this order after
 * the baselines:
 *   default         the default settings: events stream through a staging
 *                   file once the buffers pass a quarter of max_buffer_bytes
 *   in memory       max_buffer_bytes out of reach: buffers only grow
 *   no file         deactivate_file_output (nothing streams, buffers grow)
 * Finalize is timed apart and not counted in the pairs.
 *
 * --default-only runs the baselines and the default case alone (for a
 * profiler attached to the run). Built as long_run_waits (the static
 * library, LONG_RUN_INTERNAL) it also reports the recording thread's
 * hand-offs, how many of them waited for the writer and for how long
 * (sp__stream_waits), and --in-flight 1|2 sets how many blocks a hand-off
 * lets be on their way to the writer (sp__stream_test_in_flight).
 *
 *   long_run [--pairs N] [--cpu C] [--dir DIR] [--json FILE] [--default-only]
 *   long_run_waits [the same] [--in-flight 1|2]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "scope_profiler.h"
#ifdef LONG_RUN_INTERNAL
#include "core/stream.h"
#endif

#define BARRIER() __asm__ volatile("" ::: "memory")

static double clock_s(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* Resident set now, in KiB (VmRSS), and its peak (VmHWM). */
static void rss_kib(long *now, long *peak) {
  *now = *peak = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "VmRSS:", 6)) *now = atol(line + 6);
    if (!strncmp(line, "VmHWM:", 6)) *peak = atol(line + 6);
  }
  fclose(f);
}

struct result {
  const char *name;
  double wall_ns, cpu_ns, proc_ns; /* per pair */
  double faults_per_kev, rss_b_per_ev, peak_b_per_ev, fin_s;
  unsigned long long handoffs, waits; /* long_run_waits only */
  double wait_ms;
};

struct span {
  double w, c, p;
  long flt, rss, hwm;
};
static struct span span_now(void) {
  struct span s = {clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_THREAD_CPUTIME_ID), clock_s(CLOCK_PROCESS_CPUTIME_ID),
                   minflt(), 0, 0};
  rss_kib(&s.rss, &s.hwm);
  return s;
}
static void span_fill(struct result *r, struct span a, struct span b, long pairs) {
  r->wall_ns = (b.w - a.w) * 1e9 / (double)pairs;
  r->cpu_ns = (b.c - a.c) * 1e9 / (double)pairs;
  r->proc_ns = (b.p - a.p) * 1e9 / (double)pairs;
  r->faults_per_kev = (double)(b.flt - a.flt) * 1000.0 / (double)pairs;
  r->rss_b_per_ev = (double)(b.rss - a.rss) * 1024.0 / (double)pairs;
  r->peak_b_per_ev = (double)(b.hwm - a.hwm) * 1024.0 / (double)pairs;
}

static volatile unsigned long long sink;

static struct result run_rdtsc(long pairs) {
  struct result r = {"rdtsc pair (baseline)", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  struct span a = span_now();
  for (long i = 0; i < pairs; i++) {
#if defined(__x86_64__)
    unsigned long long t0 = __builtin_ia32_rdtsc();
    BARRIER();
    sink = __builtin_ia32_rdtsc() - t0;
#else
    BARRIER();
#endif
  }
  span_fill(&r, a, span_now(), pairs);
  return r;
}

/* The staging floor: 32 B per event written to a fresh file, 128 KiB per
 * write from one buffer (in cache), per event. */
static struct result run_write_floor(long pairs, const char *dir) {
  struct result r = {"staging write, 32 B/event", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  char path[4200];
  snprintf(path, sizeof path, "%s/long_run.%ld.floor", dir, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  static char buf[1 << 17];
  memset(buf, 1, sizeof buf);
  struct span a = span_now();
  for (long left = pairs * 32; fd >= 0 && left > 0; left -= (long)sizeof buf)
    if (write(fd, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf) < 0) break;
  span_fill(&r, a, span_now(), pairs);
  if (fd >= 0) close(fd);
  remove(path);
  return r;
}

static int run_case(struct result *r, const char *name, const char *dir, const char *extra, long pairs) {
  char path[4200], fp[4300];
  snprintf(path, sizeof path, "%s/long_run.%ld.h5", dir, (long)getpid());
  snprintf(fp, sizeof fp, "file_path=%s", path);
  const char *ov[] = {fp, "quiet=1", extra, NULL};
  sp_manager *m = sp_manager_create();
  if (!m || sp_manager_setup(m, &(sp_setup_args){.overrides = ov}) != SP_OK) {
    fprintf(stderr, "long_run: setup failed: %s\n", sp_last_error());
    return -1;
  }
  sp_region reg = sp_region_intern("long_run.pair");
  memset(r, 0, sizeof *r);
  r->name = name;
  struct span a = span_now();
  for (long i = 0; i < pairs; i++) {
    sp_region_begin(m, reg);
    BARRIER();
    sp_region_end(m, reg);
  }
  struct span b = span_now();
  span_fill(r, a, b, pairs);
#ifdef LONG_RUN_INTERNAL
  uint64_t h = 0, w = 0, wns = 0;
  sp__stream_waits(m, &h, &w, &wns);
  r->handoffs = h;
  r->waits = w;
  r->wait_ms = (double)wns * 1e-6;
#endif
  double f0 = clock_s(CLOCK_MONOTONIC);
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  r->fin_s = clock_s(CLOCK_MONOTONIC) - f0;
  sp_manager_destroy(m);
  remove(path);
  if (st != SP_OK) {
    fprintf(stderr, "long_run: finalize failed: %s\n", sp_last_error());
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  long pairs = 50000000;
  int cpu = -1;
  int default_only = 0;
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--default-only")) default_only = 1;
#ifdef LONG_RUN_INTERNAL
    else if (!strcmp(argv[i], "--in-flight") && i + 1 < argc) sp__stream_test_in_flight = atoi(argv[++i]);
#endif
    else {
      fprintf(stderr, "usage: long_run [--pairs N] [--cpu C] [--dir DIR] [--json FILE] [--default-only]\n");
      return 2;
    }
  }
  if (pairs < 1000) return 2;
  /* Pin the process (the writer thread it starts inherits the mask): the
   * recording thread then shares its core with everything the profiler does. */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    if (cpu < 0)
      for (int c = CPU_SETSIZE - 1; c >= 0; c--)
        if (CPU_ISSET(c, &set)) {
          cpu = c;
          break;
        }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) perror("long_run: sched_setaffinity");
  }
  struct result res[5];
  int n = 0;
  res[n++] = run_rdtsc(pairs);
  res[n++] = run_write_floor(pairs, dir);
  if (run_case(&res[n++], "timeline, default settings", dir, NULL, pairs) ||
      (!default_only && (run_case(&res[n++], "timeline, in memory", dir, "max_buffer_bytes=68719476736", pairs) ||
                         run_case(&res[n++], "timeline, no file", dir, "deactivate_file_output=1", pairs))))
    return 1;
  printf("%ld pairs, one thread pinned to cpu %d\n", pairs, cpu);
  printf("%-28s %9s %9s %9s %8s %10s %9s %9s %8s\n", "case", "wall ns", "cpu ns", "proc ns", "/ rdtsc",
         "flt/1k ev", "RSS B/ev", "peak B/ev", "final s");
  for (int i = 0; i < n; i++)
    printf("%-28s %9.2f %9.2f %9.2f %8.2f %10.2f %9.2f %9.2f %8.2f\n", res[i].name, res[i].wall_ns,
           res[i].cpu_ns, res[i].proc_ns, res[i].wall_ns / res[0].wall_ns, res[i].faults_per_kev,
           res[i].rss_b_per_ev, res[i].peak_b_per_ev, res[i].fin_s);
#ifdef LONG_RUN_INTERNAL
  printf("hand-offs of the default case: %llu, %llu of them waited for the writer, %.1f ms in all (in flight: %s)\n",
         res[2].handoffs, res[2].waits, res[2].wait_ms,
         sp__stream_test_in_flight ? (sp__stream_test_in_flight == 1 ? "1" : "2") : "the default rule");
#endif
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) return perror(json), 1;
    fprintf(f, "{\"pairs\": %ld, \"cpu\": %d, \"cases\": [", pairs, cpu);
    for (int i = 0; i < n; i++)
      fprintf(f, "%s{\"case\": \"%s\", \"wall_ns\": %.3f, \"cpu_ns\": %.3f, \"process_cpu_ns\": %.3f, "
                 "\"ratio_to_rdtsc\": %.4f, \"faults_per_1000_events\": %.3f, \"rss_bytes_per_event\": %.3f, "
                 "\"peak_bytes_per_event\": %.3f, \"finalize_s\": %.3f, \"handoffs\": %llu, \"waits\": %llu, "
                 "\"wait_ms\": %.3f}",
              i ? ", " : "", res[i].name, res[i].wall_ns, res[i].cpu_ns, res[i].proc_ns,
              res[i].wall_ns / res[0].wall_ns, res[i].faults_per_kev, res[i].rss_b_per_ev, res[i].peak_b_per_ev,
              res[i].fin_s, res[i].handoffs, res[i].waits, res[i].wait_ms);
    fprintf(f, "]}\n");
    fclose(f);
  }
  return 0;
}
