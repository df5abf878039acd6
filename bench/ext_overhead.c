/* ext_overhead.c - what extensions cost per region begin/end pair, as
 * ratios to a plain timeline pair measured in the same process and run.
 *
 * Cases: a raw rdtsc pair; the plain timeline pair (no extension); a run
 * with a selective column probe (one that takes only regions tagged
 * "bench.ext"), timed on a region it does not take (stays inlined: one
 * bitmap test more) and on one it takes (slow path plus two no-op hooks);
 * and, when this machine can open them, perf_events counted pairs (the
 * counters read with rdpmc where the kernel allows it, read() otherwise),
 * beside the floor of the read() path: two bare read()s of one counter.
 * GPU cases: use_nvtx with no NVTX tool attached (what a run outside Nsight
 * pays); use_gpu_timing on the test suite's mock CUDA driver (two event
 * records per pair through the real backend; the mock's records take a lock
 * and cost about what a real driver's do); use_gpu_timing with callbacks
 * that do nothing (the profiler's own share of a timed pair); both.
 *
 *   ext_overhead [--pairs N] [--reps R] [--events LIST] [--json FILE]
 *   ext_overhead --count CASE N    one case, for callgrind (bench/callgrind.sh)
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "core/core.h"
#include "probes/ext.h"
#include "scope_profiler.h"

#define BARRIER() __asm__ volatile("" ::: "memory")

static sp_manager *mgr;
static sp_region reg;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile unsigned long long sink;
static void loop_rdtsc(long n) {
  for (long i = 0; i < n; i++) {
#if defined(__x86_64__)
    unsigned long long a = __builtin_ia32_rdtsc();
    BARRIER();
    sink += __builtin_ia32_rdtsc() - a;
#endif
  }
}
/* The floor of a read()-path counted pair: two read()s of a task-clock
 * counter, nothing else. */
static int raw_fd = -1;
static void loop_raw_reads(long n) {
  uint64_t b[3];
  for (long i = 0; i < n; i++) {
    if (read(raw_fd, b, sizeof b) < 0) break;
    BARRIER();
    if (read(raw_fd, b, sizeof b) < 0) break;
    sink += b[0];
  }
}

static void loop_region(long n) {
  for (long i = 0; i < n; i++) {
    sp_region_begin(mgr, reg);
    BARRIER();
    sp_region_end(mgr, reg);
  }
}

/*====== A selective no-op column probe ======*/

static const struct sp_ext_col noop_cols[] = {{"bench_noop", "count", 0, SP_EXT_FOLD_SUM, -1}};
static int noop_wanted(const struct sp_config *c) {
  (void)c;
  return getenv("SP_BENCH_NOOP") != NULL;
}
static sp_status noop_setup(struct sp_ext_setup *s, void **proc) {
  (void)proc;
  s->cols = noop_cols;
  s->ncols = 1;
  return SP_OK;
}
static int noop_region(void *proc, uint32_t id, const struct sp_ext_region *r) {
  (void)proc;
  (void)id;
  for (size_t i = 0; i < r->ntags; i++)
    if (strcmp(r->tags[i], "bench.ext") == 0) return 1;
  return 0;
}
static void noop_enter(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  c->cols[0] = 0;
}
static void noop_exit(void *p, void *t, const struct sp_ext_call *c) {
  (void)p;
  (void)t;
  c->cols[0] = 1;
}
static const struct sp_ext noop_ext = {
    .abi = SP_EXT_ABI, .name = "bench_noop", .kind = SP_EXT_COLUMNS, .wanted = noop_wanted,
    .setup = noop_setup, .region_added = noop_region, .enter = noop_enter, .exit = noop_exit};

/* Callbacks that do nothing: what remains is the profiler's own cost. */
static int nop_record(void *user, void *stream, void **event) {
  (void)user, (void)stream;
  *event = (void *)&sink;
  return 0;
}
static int nop_elapsed(void *user, void *a, void *b, int wait, int64_t *ns) {
  (void)user, (void)a, (void)b, (void)wait;
  *ns = 0;
  return 0;
}

static sp_manager *make_cb(const char *const *ov) {
  sp_manager *m = sp_manager_create();
  sp_gpu_callbacks cb = {sizeof cb, NULL, nop_record, nop_elapsed, NULL, NULL, NULL};
  sp_setup_args a = {.overrides = ov};
  unsetenv("SP_BENCH_NOOP");
  if (!m || sp_manager_set_gpu_callbacks(m, &cb) != SP_OK || sp_manager_setup(m, &a) != SP_OK) {
    fprintf(stderr, "ext_overhead: setup failed: %s\n", sp_last_error());
    sp_manager_destroy(m);
    return NULL;
  }
  return m;
}

static sp_manager *make(const char *const *ov, int noop) {
  if (noop)
    setenv("SP_BENCH_NOOP", "1", 1);
  else
    unsetenv("SP_BENCH_NOOP");
  sp_manager *m = sp_manager_create();
  sp_setup_args a = {.overrides = ov};
  if (!m || sp_manager_setup(m, &a) != SP_OK) {
    fprintf(stderr, "ext_overhead: setup failed: %s\n", sp_last_error());
    sp_manager_destroy(m);
    return NULL;
  }
  return m;
}

struct result {
  char name[96];
  double med, min, max;
};

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static struct result measure(const char *name, void (*fn)(long), long pairs, int reps) {
  double *t = malloc((size_t)reps * sizeof *t);
  fn(pairs / 10);
  if (mgr) sp_manager_finalize(mgr, NULL, NULL);
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    fn(pairs);
    t[r] = (now_s() - t0) * 1e9 / (double)pairs;
    if (mgr) sp_manager_finalize(mgr, NULL, NULL); /* every repetition starts from the grown buffers */
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_d);
  struct result res;
  snprintf(res.name, sizeof res.name, "%s", name);
  res.med = t[reps / 2];
  res.min = t[0];
  res.max = t[reps - 1];
  free(t);
  return res;
}

static const char *const plain_ov[] = {"deactivate_file_output=1", "buffer_limit=4000000", "finalize_on_exit=0", NULL};

/* The case `name` set up in mgr/reg; 0, or -1 when it cannot run here. */
static int prepare(const char *name, const char *events) {
  static char ev_kv[512];
  const char *perf_ov[] = {"deactivate_file_output=1", "buffer_limit=4000000", "finalize_on_exit=0", ev_kv, NULL};
  const char *nvtx_ov[] = {"deactivate_file_output=1", "buffer_limit=4000000", "finalize_on_exit=0", "use_nvtx=1",
                           "quiet=1", NULL};
  const char *gpu_ov[] = {"deactivate_file_output=1", "buffer_limit=4000000", "finalize_on_exit=0",
                          "use_gpu_timing=1", "quiet=1", NULL, NULL};
  mgr = NULL;
  if (!strcmp(name, "timeline")) {
    mgr = make(plain_ov, 0);
    reg = sp_region_intern("bench.plain");
  } else if (!strcmp(name, "ext-untouched")) {
    mgr = make(plain_ov, 1);
    reg = sp_region_intern("bench.plain");
  } else if (!strcmp(name, "ext-taken")) {
    mgr = make(plain_ov, 1);
    reg = sp_region_intern_ex("bench.taken", NULL, -1, NULL, "bench.ext");
  } else if (!strcmp(name, "nvtx")) {
    unsetenv("NVTX_INJECTION64_PATH");
    mgr = make(nvtx_ov, 0);
    reg = sp_region_intern("bench.nvtx");
    if (mgr && mgr->next == 0) { /* built without NVTX3 */
      sp_manager_destroy(mgr);
      mgr = NULL;
      sp__set_error(SP_ERR_UNSUPPORTED, "no NVTX in this build");
    }
  } else if (!strcmp(name, "gpu-mock") || !strcmp(name, "nvtx+gpu-mock")) {
#ifdef SP_BENCH_MOCK_CUDA
    setenv("SCOPE_PROFILER_CUDA_LIBRARY", SP_BENCH_MOCK_CUDA, 1);
#endif
    if (name[0] == 'n') gpu_ov[5] = "use_nvtx=1";
    mgr = make(gpu_ov, 0);
    reg = sp_region_intern("bench.gpu");
    if (mgr && mgr->next == 0) {
      sp_manager_destroy(mgr);
      mgr = NULL;
      sp__set_error(SP_ERR_UNSUPPORTED, "no CUDA driver (the test mock is built with the tests)");
    }
  } else if (!strcmp(name, "gpu-callbacks")) {
    mgr = make_cb(gpu_ov);
    reg = sp_region_intern("bench.gpu_cb");
  } else if (!strcmp(name, "perf")) {
    snprintf(ev_kv, sizeof ev_kv, "perf_events=%s", events);
    mgr = make(perf_ov, 0);
    reg = sp_region_intern("bench.counted");
    if (mgr && mgr->next == 0) { /* perf_events accepted but not counted in this build */
      sp_manager_destroy(mgr);
      mgr = NULL;
      sp__set_error(SP_ERR_UNSUPPORTED, "no perf_events probe in this build");
    }
  }
  if (mgr) { /* the first calls decide the region and attach the thread */
    sp_region_begin(mgr, reg);
    sp_region_end(mgr, reg);
  }
  return mgr ? 0 : -1;
}

int main(int argc, char **argv) {
  long pairs = 1000000;
  int reps = 11;
  const char *json = NULL, *events = "task-clock";
  sp__ext_register(&noop_ext);
  if (argc == 4 && !strcmp(argv[1], "--count")) {
    if (prepare(argv[2], events) != 0) return 1;
    loop_region(atol(argv[3]));
    return 0;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--pairs") && i + 1 < argc) pairs = atol(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--events") && i + 1 < argc) events = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    else {
      fprintf(stderr, "usage: ext_overhead [--pairs N] [--reps R] [--events LIST] [--json FILE]\n"
                      "       ext_overhead --count CASE N\n");
      return 2;
    }
  }
  if (pairs < 1000 || reps < 1) return 2;
  struct result res[16];
  int n = 0;
  mgr = NULL;
  res[n++] = measure("rdtsc pair", loop_rdtsc, pairs, reps);
  static const char *const cases[][2] = {
      {"timeline", "timeline, no extension (baseline)"},
      {"ext-untouched", "selective extension, region it does not take"},
      {"ext-taken", "selective extension, region it takes (no-op hooks)"},
      {"perf", "perf_events counted pair"},
      {"nvtx", "use_nvtx, no NVTX tool attached"},
      {"gpu-callbacks", "use_gpu_timing, callbacks that do nothing"},
      {"gpu-mock", "use_gpu_timing, cuda backend on the mock driver"},
      {"nvtx+gpu-mock", "use_nvtx + use_gpu_timing (mock driver)"},
  };
  struct perf_event_attr pa;
  memset(&pa, 0, sizeof pa);
  pa.size = sizeof pa;
  pa.type = PERF_TYPE_SOFTWARE;
  pa.config = PERF_COUNT_SW_TASK_CLOCK;
  pa.exclude_kernel = 1;
  pa.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  raw_fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (prepare(cases[c][0], events) != 0) {
      printf("%-56s skipped: %s\n", cases[c][1], sp_last_error());
      continue;
    }
    char label[160];
    int perf = !strcmp(cases[c][0], "perf");
    snprintf(label, sizeof label, "%s%s%s%s", cases[c][1], perf ? " (" : "", perf ? events : "", perf ? ")" : "");
    res[n++] = measure(label, loop_region, pairs, reps);
    sp_manager_destroy(mgr);
    mgr = NULL;
  }
  if (raw_fd >= 0) {
    res[n++] = measure("two raw read()s of a task-clock counter (no profiler)", loop_raw_reads, pairs, reps);
    close(raw_fd);
  }
  double base = n > 1 ? res[1].med : 1;
  printf("scope-profiler %s extension overhead: %ld pairs x %d reps; median [min, max] ns per pair\n",
         sp_version_string(), pairs, reps);
  printf("%-64s %9s %19s %12s\n", "case", "ns/pair", "[min, max]", "/ timeline");
  for (int i = 0; i < n; i++)
    printf("%-64s %9.2f [%7.2f, %8.2f] %12.2f\n", res[i].name, res[i].med, res[i].min, res[i].max, res[i].med / base);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) return 1;
    fprintf(f, "{\n  \"pairs\": %ld,\n  \"reps\": %d,\n  \"cases\": [\n", pairs, reps);
    for (int i = 0; i < n; i++)
      fprintf(f, "    {\"case\": \"%s\", \"ns_per_pair\": %.3f, \"min\": %.3f, \"max\": %.3f, \"per_timeline\": %.3f}%s\n",
              res[i].name, res[i].med, res[i].min, res[i].max, res[i].med / base, i + 1 < n ? "," : "");
    fprintf(f, "  ]\n}\n");
    fclose(f);
  }
  return 0;
}
