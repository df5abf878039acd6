/* finalize.c - the cost of a large run: memory per recorded event while
 * recording, and finalize throughput and file size when writing it.
 *
 * Records N timeline events (default 10M) in a few dozen nested regions on
 * one thread, reading peak RSS before and after (getrusage), then finalizes
 * to an uncompressed file and reports events written per second and bytes
 * per event. Events per second counts the whole finalize: building the
 * columnar run (grouping by region, parents, statistics) and the HDF5 write
 * (page cache and fsync included). The same run is then recorded again and
 * finalized with deactivate_file_output, which isolates the build step.
 *
 * On virtual machines the first touch of fresh memory can dominate (the host
 * allocates each page): --warm keeps freed memory in the heap (mallopt) and
 * reports a second identical round, the steady state of a long job that
 * finalizes more than once.
 *
 *   finalize [--events N] [--out FILE] [--json FILE]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "scope_profiler.h"
#include "timesteps.h"

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Process CPU time (every thread: the stream writer's too); on a loaded
 * machine the steadier figure. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long events = 10000000;
  const char *out = "bench_finalize.h5", *json = NULL;
  int warm = 0, keep = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atol(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--warm")) warm = 1;
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else {
      fprintf(stderr, "usage: finalize [--events N] [--out FILE] [--json FILE]\n");
      return 2;
    }
  }
  sp_region regs[TS_NREG];
  ts_regions(regs);
  sp_manager *m = ts_manager("finalize", out);
  if (warm) {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, -1);
    ts_record(m, regs, events);
    sp_manager_finalize(m, NULL, NULL);
    printf("(warm: numbers below are a second, identical round)\n");
  }
  long rss0 = maxrss_kib();
  long done = ts_record(m, regs, events);
  long rss1 = maxrss_kib();
  double t0 = now_s(), c0 = cpu_s();
  sp_status st = sp_manager_finalize(m, NULL, NULL);
  double t1 = now_s(), c1 = cpu_s();
  if (st != SP_OK) {
    fprintf(stderr, "finalize: %s\n", sp_last_error());
    return 1;
  }
  struct stat sb;
  stat(out, &sb);
  double mem = (double)(rss1 - rss0) * 1024.0 / (double)done;
  double rate = (double)done / (t1 - t0);
  double bpe = (double)sb.st_size / (double)done;
  printf("events recorded        %ld\n", done);
  printf("memory while recording %.1f bytes/event (peak RSS +%.1f MiB)\n", mem, (rss1 - rss0) / 1024.0);
  printf("finalize               %.3f s, %.1f M events/s (CPU %.3f s)\n", t1 - t0, rate / 1e6, c1 - c0);
  printf("file                   %.1f MiB, %.2f bytes/event (uncompressed)\n", sb.st_size / 1048576.0, bpe);
  /* The build step alone: same events, no file. */
  const char *ov2[] = {"deactivate_file_output=1", "buffer_limit=1048576", NULL};
  sp_manager_setup(m, &(sp_setup_args){.overrides = ov2});
  ts_record(m, regs, events);
  double t2 = now_s();
  sp_manager_finalize(m, NULL, NULL);
  double t3 = now_s();
  double build_rate = (double)done / (t3 - t2);
  printf("finalize without file  %.3f s, %.1f M events/s (grouping, call tree, statistics)\n", t3 - t2,
         build_rate / 1e6);
  if (json) {
    FILE *f = fopen(json, "w");
    if (f) {
      fprintf(f, "{\"events\": %ld, \"bytes_per_event_memory\": %.2f, \"finalize_s\": %.4f, "
                 "\"events_per_s\": %.0f, \"bytes_per_event_file\": %.3f, \"build_events_per_s\": %.0f}\n",
              done, mem, t1 - t0, rate, bpe, build_rate);
      fclose(f);
    }
  }
  sp_manager_destroy(m);
  if (!keep) remove(out);
  return 0;
}
