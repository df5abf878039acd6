/* publish.c - how long a streamed run takes to publish its file after
 * SIGTERM (what a batch system sends at the time limit, with a grace period
 * before SIGKILL: Slurm's default is 30 s).
 *
 * A child process records N timeline events (default 20M) of the time-step
 * loop of bench/timesteps.h with the default max_buffer_bytes, so that they stream to the staging
 * file, and then waits; the parent sends SIGTERM and times it until the
 * child is gone (the signal watcher finalizes the run to its file and
 * re-raises the signal), wall time and the CPU time the process spent after
 * it had recorded. The file is then opened and its events counted.
 * Baseline in the same run: copying the file's bytes once into a fresh file
 * (read, write, fsync), what "another full copy" costs on this disk. The
 * time for 200M events is extrapolated linearly from the rate measured.
 *
 * Also reported: the bytes the child had written by then (wchar of
 * /proc/PID/io: every write and pwrite, page cache or not) per event
 * recorded, which says how many times the writer writes each call.
 *
 * With --copy-too the same run is also written the copy way right after the
 * staged publish (docs/file-format.md "Staged blocks"; the tests' hook
 * sp__h5_stage_copy_too): the parent times when each file appears (both are
 * renamed into place after their fsync), so the staged way and the copy
 * way of the same run are compared; the drain of the writer's backlog is
 * in the staged figure only (the copy way starts after it).
 *
 * --buffered turns the direct I/O driver off (h5direct.c's test hook
 * sp__direct_refuse = 3: plain sec2 writes through the page cache) in the
 * child, for an A/B of the same build.
 *
 *   publish [--events N] [--out FILE] [--copy-too] [--buffered]
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "output/h5direct.h"
#include "output/output.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"
#include "timesteps.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char copy_path[4200];

/* Bytes process `pid` has written so far (wchar), or -1. */
static long long wchar_of(pid_t pid) {
  char name[64], line[256];
  snprintf(name, sizeof name, "/proc/%d/io", (int)pid);
  FILE *f = fopen(name, "r");
  long long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "wchar: %lld", &v) == 1) break;
  if (f) fclose(f);
  return v;
}

static int buffered;

static void child(const char *out, long events, int ready) {
  if (copy_path[0]) sp__h5_stage_copy_too = copy_path;
  if (buffered) sp__direct_refuse = 3;
  sp_region regs[TS_NREG];
  ts_regions(regs);
  sp_manager *m = ts_manager("publish", out);
  ts_record(m, regs, events);
  /* the process's CPU time so far (recording, and the writer's blocks) */
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  double cpu = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  if (write(ready, &cpu, sizeof cpu) != (ssize_t)sizeof cpu) _exit(1);
  for (;;) pause();
}

/* Seconds to copy `path` once into a fresh file beside it, fsync included. */
static double copy_once(const char *path) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.copy", path);
  double t0 = now_s();
  int in = open(path, O_RDONLY), out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  static char buf[1 << 20];
  ssize_t n;
  while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) break;
  if (out >= 0) fsync(out);
  double t = now_s() - t0;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  remove(tmp);
  return t;
}

int main(int argc, char **argv) {
  long events = 20000000;
  const char *out = "bench_publish.h5";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atol(argv[++i]);
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--copy-too")) copy_path[0] = 1;
    else if (!strcmp(argv[i], "--buffered")) buffered = 1;
    else {
      fprintf(stderr, "usage: publish [--events N] [--out FILE] [--copy-too] [--buffered]\n");
      return 2;
    }
  }
  if (copy_path[0]) snprintf(copy_path, sizeof copy_path, "%s.copyway.h5", out);
  remove(out);
  if (copy_path[0]) remove(copy_path);
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    child(out, events, p[1]);
  }
  close(p[1]);
  double cpu_ready = 0;
  if (pid < 0 || read(p[0], &cpu_ready, sizeof cpu_ready) != (ssize_t)sizeof cpu_ready) {
    fprintf(stderr, "publish: the recording process failed\n");
    return 1;
  }
  long long written = wchar_of(pid);
  double t0 = now_s();
  kill(pid, SIGTERM);
  int status = 0;
  struct rusage ru;
  double t_out = -1, t_copy = -1;
  struct stat st0;
  while (wait4(pid, &status, WNOHANG, &ru) == 0) {
    if (t_out < 0 && stat(out, &st0) == 0) t_out = now_s() - t0;
    if (copy_path[0] && t_copy < 0 && stat(copy_path, &st0) == 0) t_copy = now_s() - t0;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  double t = now_s() - t0;
  if (t_out < 0) t_out = t;
  if (copy_path[0] && t_copy < 0) t_copy = t;
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec * 1e-6 - cpu_ready;
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) {
    fprintf(stderr, "publish: the run did not end by its SIGTERM (status %d)\n", status);
    return 1;
  }
  sp_results *r = NULL;
  if (sp_results_open(out, &r) != SP_OK) {
    fprintf(stderr, "publish: %s\n", sp_last_error());
    return 1;
  }
  uint64_t n = sp_results_num_events(r);
  const sp_metadata_entry *blocks = sp_results_metadata(r, "streamed_blocks");
  long long nb = blocks && blocks->kind == SP_VALUE_INT ? (long long)blocks->i : -1;
  const sp_metadata_entry *dropped = sp_results_metadata(r, "dropped_events");
  long long nd = dropped && dropped->kind == SP_VALUE_INT ? (long long)dropped->i : -1;
  sp_results_free(r);
  struct stat sb;
  stat(out, &sb);
  int staged = -1;
  hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT), d = f >= 0 ? H5Dopen2(f, "/events/durations", H5P_DEFAULT) : -1;
  if (d >= 0) {
    hid_t pl = H5Dget_create_plist(d);
    staged = H5Pget_layout(pl) == H5D_VIRTUAL;
    H5Pclose(pl);
    H5Dclose(d);
  }
  if (f >= 0) H5Fclose(f);
  double copy = copy_once(out);
  printf("events in the file      %llu (recorded %ld; streamed blocks %lld; dropped_events %lld)\n",
         (unsigned long long)n, events, nb, nd);
  printf("file                    %.1f MiB\n", (double)sb.st_size / 1048576.0);
  printf("written while recording %.1f B/event (wchar before the SIGTERM)\n", (double)written / (double)events);
  printf("events staged (virtual) %s\n", staged == 1 ? "yes" : staged == 0 ? "no (the copy way)" : "?");
  printf("SIGTERM to published    %.3f s, %.1f M events/s (process gone after %.3f s; CPU %.3f s)\n", t_out,
         (double)n / t_out / 1e6, t, cpu);
  if (copy_path[0]) {
    struct stat sc;
    printf("then the copy way       %.3f s more (same run; %.1f MiB), staged / copy %.3f\n", t_copy - t_out,
           stat(copy_path, &sc) == 0 ? (double)sc.st_size / 1048576.0 : -1.0, t_out / (t_copy - t_out));
    remove(copy_path);
  }
  printf("one copy of the file    %.3f s (baseline: read + write + fsync)\n", copy);
  printf("publish / copy          %.2f\n", t_out / copy);
  printf("200M events, projected  %.1f s (target < 10 s)\n", 2e8 / ((double)n / t_out));
  remove(out);
  return 0;
}
