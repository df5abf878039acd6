/* file_size.c - output file size (bytes per event) and finalize time for each
 * hdf5_compression choice, on a synthetic time-step workload.
 *
 * The workload is an implicit solver's time loop with 32 regions, 4 levels
 * deep (step > solve > iteration > halo > pack/send/recv/unpack, assembly,
 * diagnostics, periodic output), 4-6 solver iterations per step, ~81 events
 * per step. Durations have realistic jitter: each call takes its region's base
 * time times a log-normal factor (sigma 3%), with a 0.2% chance of an OS-noise
 * spike (exponential, mean 20 us), and 30-50 ns of instrumentation gap around
 * every begin and end. Timestamps start at a realistic CLOCK_MONOTONIC value
 * (3 days of uptime).
 *
 * By default time is the manual clock (SCOPE_PROFILER_CLOCK=manual), so every
 * configuration writes exactly the same events and sizes are reproducible;
 * --real spins for the drawn durations on the real clock instead (each
 * configuration then records its own, slightly different run).
 *
 * The finalize time is the wall time of sp_manager_finalize: snapshot, HDF5
 * write with the filters, fsync and rename. Only same-run ratios are
 * meaningful on shared machines, hence the "x none" column.
 *
 * --jitter sets the log-normal sigma in percent (default 3). Every filter runs
 * on the default schema 3 (upstream's: int64 start deltas and durations per
 * call; call ids only where the intervals do not tell the nesting); "auto,
 * upstream's chunks" is upstream's own policy exactly (gzip 4 + shuffle in
 * the chunks h5py guesses for the run's event columns), to compare ours
 * with; the last rows repeat the main ones in schema 2 (absolute int64
 * starts and ends) for comparison.
 *
 * --max-buffer BYTES sets max_buffer_bytes, so that a long run streams its
 * buffers to the staging file (a quarter of it: 24 B per event in memory),
 * and the table says how many blocks each file streamed and whether it kept
 * call ids: the bytes per call of a streamed run against a short one.
 * --quick writes only none, zstd and auto.
 *
 *   file_size [--events N] [--reps R] [--real] [--jitter PERCENT] [--max-buffer BYTES] [--quick]
 *             [--keep DIR] [--json FILE]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"

#include <hdf5.h>

static int real_clock;
static const char *max_buffer;
static double jitter_sigma = 0.03;
static uint64_t rng_state;

/* splitmix64: deterministic, so every configuration sees the same run. */
static uint64_t rnd(void) {
  uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double gauss(void) {
  double u = unif(), v = unif();
  return sqrt(-2.0 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static void spend(uint64_t ns) {
  if (!real_clock) {
    sp__clock_manual_advance(ns);
    return;
  }
  double end = now_s() + (double)ns * 1e-9;
  while (now_s() < end) {
  }
}

/* A call of base duration `base` ns: log-normal jitter plus rare OS noise. */
static uint64_t jitter(double base) {
  double d = base * exp(jitter_sigma * gauss());
  if (unif() < 0.002) d += -20000.0 * log(1.0 - unif());
  return (uint64_t)d;
}
static uint64_t gap(void) { return 30 + rnd() % 21; }

static sp_manager *mgr;
enum {
  R_STEP, R_ASSEMBLE, R_BC, R_SOLVE, R_ITER, R_SPMV, R_HALO, R_PACK, R_SEND, R_RECV, R_UNPACK,
  R_DOT1, R_DOT2, R_AXPY1, R_AXPY2, R_AXPY3, R_PRECOND, R_DIAG, R_OUTPUT, R_FIELDS, R_CKPT,
  R_ELEM0, R_NORM0 = R_ELEM0 + 8, NREG = R_NORM0 + 3
};
static sp_region reg[NREG];
static const char *const names[R_ELEM0] = {
    "step", "assemble", "boundary_conditions", "solve", "iteration", "spmv", "halo_exchange",
    "pack", "send", "recv", "unpack", "dot_rr", "dot_pq", "axpy_x", "axpy_r", "axpy_p",
    "precondition", "diagnostics", "output", "write_fields", "write_checkpoint"};

static void enter(int r) {
  sp_region_begin(mgr, reg[r]);
  spend(gap());
}
static void leave(int r) {
  spend(gap());
  sp_region_end(mgr, reg[r]);
}
static void leaf(int r, double base) {
  enter(r);
  spend(jitter(base));
  leave(r);
}

/* One time step; returns the number of events it recorded. */
static long step(long k) {
  long ev = 0;
  enter(R_STEP);
  enter(R_ASSEMBLE);
  for (int i = 0; i < 8; i++) leaf(R_ELEM0 + i, 3000);
  leave(R_ASSEMBLE);
  leaf(R_BC, 1500);
  ev += 12; /* step, assemble, 8 blocks, bc, solve */
  enter(R_SOLVE);
  int iters = 4 + (int)(rnd() % 3);
  for (int it = 0; it < iters; it++) {
    enter(R_ITER);
    leaf(R_SPMV, 8000);
    enter(R_HALO);
    leaf(R_PACK, 700);
    leaf(R_SEND, 1500);
    leaf(R_RECV, 3000);
    leaf(R_UNPACK, 700);
    leave(R_HALO);
    leaf(R_DOT1, 600);
    leaf(R_DOT2, 600);
    leaf(R_AXPY1, 400);
    leaf(R_AXPY2, 400);
    leaf(R_AXPY3, 400);
    leaf(R_PRECOND, 5000);
    leave(R_ITER);
    ev += 13;
  }
  leave(R_SOLVE);
  enter(R_DIAG);
  for (int i = 0; i < 3; i++) leaf(R_NORM0 + i, 500);
  leave(R_DIAG);
  ev += 4;
  if (k % 20 == 0) {
    enter(R_OUTPUT);
    leaf(R_FIELDS, 200000);
    leaf(R_CKPT, 400000);
    leave(R_OUTPUT);
    ev += 3;
  }
  leave(R_STEP);
  return ev;
}

struct config {
  const char *label;
  const char *compression; /* NULL: none */
  const char *level;
  const char *chunk;
  const char *schema;      /* NULL: the default (3) */
};

struct result {
  double bytes_per_event, time_med, time_min, time_max, cpu_med;
  long long bytes;
  long events;
  long long blocks; /* streamed_blocks of the file, 0: written from memory */
  int ids;          /* whether it kept events/call_ids */
};

/* What the file says about how it was written. */
static void file_facts(const char *path, struct result *res) {
  sp_results *r = NULL;
  if (sp_results_open(path, &r) != SP_OK) return;
  const sp_metadata_entry *b = sp_results_metadata(r, "streamed_blocks");
  res->blocks = b && b->kind == SP_VALUE_INT ? (long long)b->i : 0;
  sp_results_free(r);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  res->ids = f >= 0 && H5Lexists(f, "events/call_ids", H5P_DEFAULT) > 0;
  if (f >= 0) H5Fclose(f);
}

/* h5py's guess_chunk() for a 1-D int64 column of n values, which gives
 * upstream's event columns their chunks: halve the length until the chunk
 * is within 50% of a target that grows with the dataset (8 KiB to 1 MiB). */
static long h5py_chunk(long n) {
  double size = (double)n * 8, target = 16384.0 * pow(2.0, log10(size / (1024.0 * 1024.0)));
  if (target > 1048576) target = 1048576;
  if (target < 8192) target = 8192;
  double c = (double)n;
  for (;;) {
    double bytes = c * 8;
    if ((bytes < target || fabs(bytes - target) / target < 0.5) && bytes < 1048576) break;
    if (c <= 1) break;
    c = ceil(c / 2.0);
  }
  return (long)c;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int run_one(const struct config *c, long nevents, const char *path, double *seconds,
                   double *cpu_seconds, long *events) {
  sp_options o = SP_OPTIONS_INIT;
  sp_options_set(&o, "file_path", path);
  if (c->compression) sp_options_set(&o, "hdf5_compression", c->compression);
  if (c->level) sp_options_set(&o, "hdf5_compression_level", c->level);
  if (c->chunk) sp_options_set(&o, "hdf5_chunk_size", c->chunk);
  if (c->schema) sp_options_set(&o, "hdf5_schema", c->schema);
  if (max_buffer) sp_options_set(&o, "max_buffer_bytes", max_buffer);
  sp_setup_args a = {.options = &o, .replace = 1};
  if (sp_manager_setup(mgr, &a) != SP_OK) {
    fprintf(stderr, "file_size: setup (%s) failed: %s\n", c->label, sp_last_error());
    sp_options_clear(&o);
    return -1;
  }
  sp_options_clear(&o);
  rng_state = 42;
  long ev = 0;
  uint64_t calls = 0; /* running totals over the manager's life: take the difference */
  for (int i = 0; i < NREG; i++) calls -= sp_manager_num_calls(mgr, reg[i]);
  for (long k = 0; ev < nevents; k++) ev += step(k);
  for (int i = 0; i < NREG; i++) calls += sp_manager_num_calls(mgr, reg[i]);
  if (calls != (uint64_t)ev) {
    fprintf(stderr, "file_size: %llu calls recorded, %ld expected\n", (unsigned long long)calls, ev);
    return -1;
  }
  double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  sp_status st = sp_manager_finalize(mgr, NULL, NULL);
  *seconds = now_s() - t0;
  *cpu_seconds = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  *events = ev;
  if (st != SP_OK) {
    fprintf(stderr, "file_size: finalize (%s) failed: %s\n", c->label, sp_last_error());
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  long nevents = 1000000;
  int reps = 3, quick = 0;
  const char *keep = NULL, *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) nevents = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--real")) real_clock = 1;
    else if (!strcmp(argv[i], "--jitter") && i + 1 < argc) jitter_sigma = atof(argv[++i]) / 100.0;
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else if (!strcmp(argv[i], "--max-buffer") && i + 1 < argc) max_buffer = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else {
      fprintf(stderr, "usage: %s [--events N] [--reps R] [--real] [--jitter PERCENT] [--max-buffer BYTES] "
              "[--quick] [--keep DIR] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (!real_clock) setenv("SCOPE_PROFILER_CLOCK", "manual", 1);
  /* Keep settings from the caller's environment out of the comparison. */
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION");
  unsetenv("SCOPE_PROFILER_HDF5_COMPRESSION_LEVEL");
  unsetenv("SCOPE_PROFILER_HDF5_CHUNK_SIZE");
  unsetenv("SCOPE_PROFILER_HDF5_SCHEMA");
  unsetenv("SCOPE_PROFILER_CONFIG");

  char dir[1024];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/sp-file-size-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  const char *outdir = keep;
  if (!outdir && !(outdir = mkdtemp(dir))) {
    perror("file_size: mkdtemp");
    return 1;
  }
  mgr = sp_manager_create();
  if (!mgr) {
    fprintf(stderr, "file_size: %s\n", sp_last_error());
    return 1;
  }
  for (int i = 0; i < R_ELEM0; i++) reg[i] = sp_region_intern(names[i]);
  for (int i = 0; i < 8; i++) {
    char n[32];
    snprintf(n, sizeof n, "element_block_%d", i);
    reg[R_ELEM0 + i] = sp_region_intern(n);
  }
  for (int i = 0; i < 3; i++) {
    char n[32];
    snprintf(n, sizeof n, "norm_%d", i);
    reg[R_NORM0 + i] = sp_region_intern(n);
  }
  if (!real_clock) sp__clock_manual_advance(UINT64_C(3) * 86400 * 1000000000); /* uptime */

  char upstream_chunk[32];
  snprintf(upstream_chunk, sizeof upstream_chunk, "%ld", h5py_chunk(nevents));
  const struct config configs[] = {
      {"none", NULL, NULL, NULL, NULL},
      {"none, chunked 65536", NULL, NULL, "65536", NULL},
      {"gzip (level 4)", "gzip", NULL, NULL, NULL},
      {"gzip level 1", "gzip", "1", NULL, NULL},
      {"lzf", "lzf", NULL, NULL, NULL},
      {"zstd (level 3)", "zstd", NULL, NULL, NULL},
      {"zstd level 1", "zstd", "1", NULL, NULL},
      {"zstd level 9", "zstd", "9", NULL, NULL},
      {"auto", "auto", NULL, NULL, NULL},
      {"auto, upstream's chunks (h5py's guess)", "auto", NULL, upstream_chunk, NULL},
      /* schema 2 (four int64 per call), for comparison */
      {"schema 2: none", NULL, NULL, NULL, "2"},
      {"schema 2: gzip (level 4)", "gzip", NULL, NULL, "2"},
      {"schema 2: zstd (level 3)", "zstd", NULL, NULL, "2"},
      {"schema 2: auto", "auto", NULL, NULL, "2"},
  };
  enum { NALL = sizeof configs / sizeof configs[0] };
  /* --quick: none, zstd 3, auto (indices into configs) */
  static const int quick_set[] = {0, 5, 8};
  int NCONF = quick ? 3 : NALL;
  int pick[NALL];
  for (int c = 0; c < NCONF; c++) pick[c] = quick ? quick_set[c] : c;
  struct result res[NALL];
  /* times[c * reps + r]: repetition-major order, so a load change on this
   * shared machine hits every configuration alike. */
  double *times = malloc((size_t)(reps * NCONF) * sizeof *times);
  double *cpu = malloc((size_t)(reps * NCONF) * sizeof *cpu);
  long ev[NALL] = {0};
  int failed = !times || !cpu;
  /* Warm-up: grows the event buffers and pages in the library and HDF5. */
  if (!failed) {
    char path[4096];
    snprintf(path, sizeof path, "%s/file_size_warmup.h5", outdir);
    failed = run_one(&configs[0], nevents, path, &times[0], &cpu[0], &ev[0]) != 0;
    unlink(path);
  }
  for (int r = 0; r < reps && !failed; r++)
    for (int c = 0; c < NCONF && !failed; c++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/file_size_%d.h5", outdir, c);
      failed = run_one(&configs[pick[c]], nevents, path, &times[c * reps + r], &cpu[c * reps + r],
                       &ev[c]) != 0;
    }
  for (int c = 0; c < NCONF && !failed; c++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/file_size_%d.h5", outdir, c);
    struct stat sb;
    if (stat(path, &sb) != 0) {
      perror(path);
      failed = 1;
      break;
    }
    double *t = &times[c * reps], *u = &cpu[c * reps];
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    qsort(u, (size_t)reps, sizeof *u, cmp_d);
    res[c] = (struct result){(double)sb.st_size / (double)ev[c], t[reps / 2], t[0], t[reps - 1],
                             u[reps / 2], (long long)sb.st_size, ev[c], 0, 0};
    file_facts(path, &res[c]);
    if (!keep) unlink(path);
  }
  free(times);
  free(cpu);
  sp_manager_destroy(mgr);
  if (!keep) rmdir(outdir);
  if (failed) return 1;

  printf("file size and finalize time, %ld events (%s clock, jitter %.1f%%), median of %d\n\n",
         res[0].events, real_clock ? "real" : "manual", jitter_sigma * 100.0, reps);
  printf("| configuration | bytes/event | file bytes | streamed blocks | call ids | finalize wall ms (min-max) | "
         "x none | finalize CPU ms | x none |\n");
  printf("|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
  for (int c = 0; c < NCONF; c++)
    printf("| %s | %.2f | %lld | %lld | %s | %.1f (%.1f-%.1f) | %.2f | %.1f | %.2f |\n", configs[pick[c]].label,
           res[c].bytes_per_event, res[c].bytes, res[c].blocks, res[c].ids ? "yes" : "no", res[c].time_med * 1e3,
           res[c].time_min * 1e3, res[c].time_max * 1e3, res[c].time_med / res[0].time_med, res[c].cpu_med * 1e3,
           res[c].cpu_med / res[0].cpu_med);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      perror(json);
      return 1;
    }
    fprintf(f, "{\"events\": %ld, \"clock\": \"%s\", \"jitter_percent\": %.2f, \"reps\": %d, "
            "\"results\": [\n", res[0].events, real_clock ? "real" : "manual", jitter_sigma * 100.0,
            reps);
    for (int c = 0; c < NCONF; c++)
      fprintf(f, "  {\"configuration\": \"%s\", \"bytes_per_event\": %.4f, \"file_bytes\": %lld, "
                 "\"streamed_blocks\": %lld, \"call_ids\": %d, "
                 "\"finalize_s\": %.6f, \"finalize_min_s\": %.6f, \"finalize_max_s\": %.6f, "
                 "\"finalize_cpu_s\": %.6f}%s\n",
              configs[pick[c]].label, res[c].bytes_per_event, res[c].bytes, res[c].blocks, res[c].ids, res[c].time_med,
              res[c].time_min, res[c].time_max, res[c].cpu_med, c + 1 < NCONF ? "," : "");
    fprintf(f, "]}\n");
    fclose(f);
  }
  return 0;
}
