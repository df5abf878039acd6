/* finalize.c - the cost of a large run: memory per recorded event while
 * recording, and finalize throughput and file size when writing it.
 *
 * Records N timeline events (default 10M) in a few dozen nested regions on
 * one thread (bench/timesteps.h), reading peak RSS before and after
 * (getrusage), then finalizes to a file with the default settings
 * (uncompressed schema 3) and reports events written per second, wall and
 * process CPU time, and bytes per event. Events per second counts the whole
 * finalize: building the run (grouping by region, call tree, statistics)
 * and the HDF5 write, page cache and fsync included. With the default
 * max_buffer_bytes a run this long streams through the staging file;
 * --in-memory raises the budget so that it stays in memory.
 *
 * Each round is measured against a baseline in the same run, since the
 * machine's load moves wall times by 2x: writing the file's number of bytes
 * from one reused buffer into a fresh file beside it and fsyncing it (dd's
 * way: the floor of any writer of that file), and, since memory touched for
 * the first time is what is slow on some virtual machines, setting that
 * many bytes of freshly allocated memory. The dd is done twice: through
 * the page cache, as the writers did before 2026-12-02, and with O_DIRECT
 * (the file's bytes as the writers now send them; a first touch of fresh
 * page-cache pages is what a buffered write pays on this VM). --reps R rounds (default 3) give
 * medians of each figure and of the ratios. The same run is then recorded
 * again and finalized with deactivate_file_output, which isolates the build
 * step (--file-only leaves that out, for a profiler).
 *
 * --warm keeps freed memory in the heap (mallopt) and measures after one
 * round not counted, the steady state of a long job that finalizes more
 * than once.
 *
 * --pool T records the same calls on T threads at once instead, each
 * taking N/T of them under a context captured inside one call of the main
 * thread (as OpenMP's workers adopt the call that opened the parallel
 * region): every row is fed by every thread, and the workers' outermost
 * calls have their parent on another thread.
 *
 *   finalize [--events N] [--in-memory] [--reps R] [--warm] [--file-only]
 *            [--pool T] [--out FILE] [--keep] [--json FILE]
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

struct timing {
  double wall, cpu;
};

/* The process's CPU time in user space (the kernel's part is mostly the
 * page cache being filled, which the dd baseline pays too). */
static double user_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
}

/* `bytes` written from one 8 MiB buffer into a new file beside `out`,
 * fsynced, renamed into place and its directory fsynced, as finalize
 * publishes a file, then removed. `direct`: with O_DIRECT (rounded up to
 * whole 4096-byte blocks); wall -1 where the file system refuses it. */
static struct timing dd_baseline(const char *out, off_t bytes, int direct) {
  static char *buf;
  enum { BS = 8 << 20 };
  if (!buf && posix_memalign((void **)&buf, 4096, BS) != 0) exit(1);
  memset(buf, 0x5a, BS);
  char tmp[4200], dst[4200];
  snprintf(tmp, sizeof tmp, "%s.dd.tmp", out);
  snprintf(dst, sizeof dst, "%s.dd", out);
  double t0 = now_s(), c0 = cpu_s();
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
  if (fd < 0 && direct) return (struct timing){-1, -1}; /* no O_DIRECT here */
  if (fd < 0) {
    perror(tmp);
    exit(1);
  }
  if (direct) bytes = (bytes + 4095) / 4096 * 4096; /* whole blocks */
  for (off_t left = bytes; left > 0;) {
    ssize_t w = write(fd, buf, left < BS ? (size_t)left : BS);
    if (w <= 0 && direct) { /* refused at the write */
      close(fd);
      remove(tmp);
      return (struct timing){-1, -1};
    }
    if (w <= 0) {
      perror("write");
      exit(1);
    }
    left -= w;
  }
  if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, dst) != 0) {
    perror(dst);
    exit(1);
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", out);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  struct timing t = {now_s() - t0, cpu_s() - c0};
  remove(dst);
  return t;
}

/* `bytes` of freshly mapped memory set once. */
static struct timing fresh_baseline(size_t bytes) {
  double t0 = now_s(), c0 = cpu_s();
  char *p = malloc(bytes);
  if (!p) exit(1);
  memset(p, 1, bytes);
  __asm__ volatile("" : : "r"(p) : "memory");
  struct timing t = {now_s() - t0, cpu_s() - c0};
  free(p);
  return t;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { MAX_REPS = 15, MAX_POOL = 64 };

static struct {
  sp_manager *m;
  const sp_region *regs;
  sp_context ctx;
  long each;
  long done[MAX_POOL];
} pool;

static void *pool_worker(void *arg) {
  long k = (long)(intptr_t)arg;
  sp_context_adopt(pool.m, pool.ctx);
  pool.done[k] = ts_record(pool.m, pool.regs, pool.each);
  return NULL;
}

/* --pool: `events` calls on `threads` threads under one call of this one. */
static long pool_record(sp_manager *m, const sp_region *regs, sp_region outer, long events, int threads) {
  pool.m = m;
  pool.regs = regs;
  pool.each = events / threads;
  sp_region_begin(m, outer);
  pool.ctx = sp_context_capture(m);
  pthread_t th[MAX_POOL];
  int started = 0;
  for (int k = 0; k < threads; k++) started += pthread_create(&th[k], NULL, pool_worker, (void *)(intptr_t)k) == 0;
  long done = 1;
  for (int k = 0; k < started; k++) {
    pthread_join(th[k], NULL);
    done += pool.done[k];
  }
  sp_region_end(m, outer);
  return done;
}

int main(int argc, char **argv) {
  long events = 10000000;
  const char *out = "bench_finalize.h5", *json = NULL;
  int warm = 0, keep = 0, in_memory = 0, file_only = 0, reps = 3, threads = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atol(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pool") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warm")) warm = 1;
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else if (!strcmp(argv[i], "--in-memory")) in_memory = 1;
    else if (!strcmp(argv[i], "--file-only")) file_only = 1;
    else {
      fprintf(stderr, "usage: finalize [--events N] [--in-memory] [--reps R] [--warm] [--file-only] [--pool T] "
                      "[--out FILE] [--keep] [--json FILE]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (reps > MAX_REPS) reps = MAX_REPS;
  if (threads < 0 || threads > MAX_POOL) {
    fprintf(stderr, "finalize: --pool takes 1 to %d threads\n", MAX_POOL);
    return 2;
  }
  sp_region regs[TS_NREG];
  ts_regions(regs);
  sp_region outer = sp_region_intern("pool");
#define RECORD() (threads ? pool_record(m, regs, outer, events, threads) : ts_record(m, regs, events))
  sp_manager *m = ts_manager_with("finalize", out, in_memory ? "max_buffer_bytes=1099511627776" : NULL);
  if (warm) {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, -1);
    RECORD();
    sp_manager_finalize(m, NULL, NULL);
    printf("(warm: numbers below are after a first, identical round)\n");
  }
  double fin_w[MAX_REPS], fin_c[MAX_REPS], dd_w[MAX_REPS], dd_c[MAX_REPS], fr_w[MAX_REPS], fr_c[MAX_REPS];
  double rw[MAX_REPS], rc[MAX_REPS], rate[MAX_REPS], fin_u[MAX_REPS], dx_w[MAX_REPS], dx_c[MAX_REPS];
  long fin_rss = 0; /* KiB the first finalize added to the peak RSS */
  long done = 0;
  double mem = 0;
  off_t size = 0;
  printf("%ld events, %s, %d rounds", events, in_memory ? "kept in memory" : "default max_buffer_bytes", reps);
  if (threads) printf(", recorded by a pool of %d threads", threads);
  printf("\n");
  printf("round  finalize wall/CPU(user) s   M ev/s   dd wall/CPU s   dd direct wall/CPU s   fresh memory wall/CPU s"
         "   finalize/dd wall, CPU\n");
  for (int r = 0; r < reps; r++) {
    long rss0 = maxrss_kib();
    done = RECORD();
    long rss1 = maxrss_kib();
    if (r == 0) mem = (double)(rss1 - rss0) * 1024.0 / (double)done;
    double t0 = now_s(), c0 = cpu_s(), u0 = user_s();
    sp_status st = sp_manager_finalize(m, NULL, NULL);
    fin_w[r] = now_s() - t0;
    fin_c[r] = cpu_s() - c0;
    fin_u[r] = user_s() - u0;
    if (r == 0) fin_rss = maxrss_kib() - rss1;
    if (st != SP_OK) {
      fprintf(stderr, "finalize: %s\n", sp_last_error());
      return 1;
    }
    struct stat sb;
    if (stat(out, &sb) != 0) {
      perror(out);
      return 1;
    }
    size = sb.st_size;
    if (!keep || r + 1 < reps) remove(out);
    struct timing dd = dd_baseline(out, size, 0), dx = dd_baseline(out, size, 1), fr = fresh_baseline((size_t)size);
    dd_w[r] = dd.wall, dd_c[r] = dd.cpu, fr_w[r] = fr.wall, fr_c[r] = fr.cpu;
    dx_w[r] = dx.wall, dx_c[r] = dx.cpu;
    rate[r] = (double)done / fin_w[r];
    rw[r] = fin_w[r] / dd.wall;
    rc[r] = fin_c[r] / (dd.cpu > 1e-6 ? dd.cpu : 1e-6);
    printf("%5d  %8.3f / %6.3f (%5.3f)  %8.1f  %6.3f / %6.3f  %10.3f / %6.3f  %10.3f / %6.3f  %14.2f, %5.2f\n", r + 1,
           fin_w[r], fin_c[r], fin_u[r], rate[r] / 1e6, dd.wall, dd.cpu, dx.wall, dx.cpu, fr.wall, fr.cpu, rw[r], rc[r]);
  }
  double mw = median(fin_w, reps), mc = median(fin_c, reps), mdw = median(dd_w, reps), mdc = median(dd_c, reps);
  double mfw = median(fr_w, reps), mfc = median(fr_c, reps), mrw = median(rw, reps), mrc = median(rc, reps);
  double mrate = median(rate, reps), mu = median(fin_u, reps), mxw = median(dx_w, reps), mxc = median(dx_c, reps);
  double bpe = (double)size / (double)done;
  printf("events recorded        %ld\n", done);
  printf("memory while recording %.1f bytes/event\n", mem);
  printf("finalize's extra peak  %.1f MiB (peak RSS over the recording's, first round)\n", fin_rss / 1024.0);
  printf("finalize               %.3f s, %.1f M events/s (CPU %.3f s, %.1f M events/s of CPU; user %.3f s)\n", mw,
         mrate / 1e6, mc, (double)done / mc / 1e6, mu);
  printf("dd of the file's bytes %.3f s (CPU %.3f s): %.1f M events/s; finalize/dd %.2f wall, %.2f CPU\n", mdw, mdc,
         (double)done / mdw / 1e6, mrw, mrc);
  if (mxw >= 0)
    printf("dd with O_DIRECT       %.3f s (CPU %.3f s): %.1f M events/s\n", mxw, mxc, (double)done / mxw / 1e6);
  else
    printf("dd with O_DIRECT       refused by this file system\n");
  printf("fresh memory, as many  %.3f s (CPU %.3f s)\n", mfw, mfc);
  printf("file                   %.1f MiB, %.2f bytes/event (uncompressed)\n", (double)size / 1048576.0, bpe);
  double build_rate = 0;
  if (!file_only) {
    /* The build step alone: same events, no file. */
    const char *ov2[] = {"deactivate_file_output=1", "buffer_limit=1048576",
                         in_memory ? "max_buffer_bytes=1099511627776" : NULL, NULL};
    sp_manager_setup(m, &(sp_setup_args){.overrides = ov2});
    RECORD();
    double t2 = now_s(), c2 = cpu_s();
    sp_manager_finalize(m, NULL, NULL);
    double t3 = now_s(), c3 = cpu_s();
    build_rate = (double)done / (t3 - t2);
    printf("finalize without file  %.3f s, %.1f M events/s (CPU %.3f s; grouping, call tree, statistics)\n", t3 - t2,
           build_rate / 1e6, c3 - c2);
  }
  if (json) {
    FILE *f = fopen(json, "w");
    if (f) {
      fprintf(f,
              "{\"events\": %ld, \"bytes_per_event_memory\": %.2f, \"finalize_s\": %.4f, \"finalize_cpu_s\": %.4f, "
              "\"events_per_s\": %.0f, \"bytes_per_event_file\": %.3f, \"build_events_per_s\": %.0f, "
              "\"dd_s\": %.4f, \"dd_cpu_s\": %.4f, \"finalize_over_dd\": %.3f, \"finalize_over_dd_cpu\": %.3f, "
              "\"finalize_user_s\": %.4f, \"finalize_peak_rss_mib\": %.1f, \"dd_direct_s\": %.4f, "
              "\"dd_direct_cpu_s\": %.4f}\n",
              done, mem, mw, mc, mrate, bpe, build_rate, mdw, mdc, mrw, mrc, mu, fin_rss / 1024.0, mxw, mxc);
      fclose(f);
    }
  }
  sp_manager_destroy(m);
  return 0;
}
