/* gpu_check.c - the program scripts/gpu-check.sh builds on a machine with an
 * NVIDIA GPU: regions around kernels of known duration (spin.cu spins on the
 * GPU's global timer), recorded with use_gpu_timing on the real driver, and
 * the device times read back from the run's results and checked.
 *
 *   gpu_check timing    default stream; 2 ms and 1 ms kernels, a region
 *                       holding three of them, a host-only region
 *   gpu_check sync      gpu_sync_on_exit: the CPU time covers the kernel
 *   gpu_check streams   a region on a stream of its own, threads on
 *                       per-thread default streams
 *   gpu_check nvtx      use_nvtx (for nsys; checks nothing itself)
 *
 * Tolerances: a kernel of T ns must measure within [0.97 T, T + 0.5 ms] of
 * device time (launch latency and the timer's granularity are on top).
 * Prints one line per check; exits 1 when one fails.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"
#include "scope_profiler/results.h"

int sp_check_spin(void *stream, unsigned long long ns);
int sp_check_stream_create(void **stream);
int sp_check_device_sync(void);
int sp_check_set_device(int d);

#define MS 1000000LL

static int failures;
static void check(int ok, const char *what, const char *detail) {
  printf("%s  %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
  if (!ok) failures++;
}

static sp_manager *start(const char *mode, const char *extra) {
  sp_manager *m = sp_manager_create();
  const char *ov[] = {"deactivate_file_output=true", "use_gpu_timing=true", "gpu_timing_backend=cuda", extra,
                      NULL};
  sp_setup_args a = {.overrides = ov};
  if (sp_manager_setup(m, &a) != SP_OK) {
    fprintf(stderr, "gpu_check %s: setup failed: %s\n", mode, sp_last_error());
    exit(1);
  }
  return m;
}

static sp_results *finish(sp_manager *m) {
  sp_finalize_args f = {.return_results = 1};
  sp_results *r = NULL;
  if (sp_manager_finalize(m, &f, &r) != SP_OK || !r) {
    fprintf(stderr, "gpu_check: finalize failed: %s\n", sp_last_error());
    exit(1);
  }
  return r;
}

/* Device and CPU times of every call of `region` (first row). */
static size_t calls_of(sp_results *r, const char *region, int64_t **gpu, int64_t **cpu) {
  size_t reg;
  *gpu = *cpu = NULL;
  if (sp_results_find_region(r, region, &reg) != SP_OK) return 0;
  for (size_t row = 0; row < sp_results_num_rows(r); row++) {
    sp_row_info info;
    if (sp_results_row_info(r, row, &info) != SP_OK || info.region != reg) continue;
    size_t n = (size_t)info.count;
    int64_t *s = malloc((n + 1) * sizeof *s), *e = malloc((n + 1) * sizeof *e);
    *gpu = malloc((n + 1) * sizeof **gpu);
    *cpu = malloc((n + 1) * sizeof **cpu);
    if (sp_results_row_read(r, row, 0, n, s, e, NULL, NULL, NULL) != SP_OK ||
        sp_results_row_read_gpu(r, row, 0, n, *gpu) != SP_OK)
      n = 0;
    for (size_t i = 0; i < n; i++) (*cpu)[i] = e[i] - s[i];
    free(s);
    free(e);
    return n;
  }
  return 0;
}

/* Every call of `region` has a device time within the tolerance of `want`. */
static void expect_gpu(sp_results *r, const char *region, size_t calls, int64_t want) {
  int64_t *g, *c;
  size_t n = calls_of(r, region, &g, &c);
  char d[256];
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    if (g[i] < lo) lo = g[i];
    if (g[i] > hi) hi = g[i];
  }
  snprintf(d, sizeof d, "%zu calls (want %zu), device time %.3f..%.3f ms (want %.3f)", n, calls,
           n ? (double)lo / 1e6 : 0.0, n ? (double)hi / 1e6 : 0.0, (double)want / 1e6);
  int ok = n == calls && n > 0 && lo >= want - want * 3 / 100 && hi <= want + MS / 2;
  char what[128];
  snprintf(what, sizeof what, "%s: GPU time per call", region);
  check(ok, what, d);
  free(g);
  free(c);
}

static void mode_timing(void) {
  sp_manager *m = start("timing", NULL);
  sp_region k2 = sp_region_intern("spin_2ms"), k1 = sp_region_intern("spin_1ms"),
            three = sp_region_intern("three_1ms"), host = sp_region_intern("host_only");
  for (int i = 0; i < 20; i++) {
    sp_region_begin(m, k2);
    sp_check_spin(NULL, 2 * MS);
    sp_region_end(m, k2);
  }
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, three);
    for (int k = 0; k < 3; k++) {
      sp_region_begin(m, k1);
      sp_check_spin(NULL, MS);
      sp_region_end(m, k1);
    }
    sp_region_end(m, three);
    sp_region_begin(m, host);
    sp_region_end(m, host);
  }
  sp_check_device_sync();
  sp_results *r = finish(m);
  check(sp_results_has_gpu(r), "the results have GPU times", NULL);
  const sp_metadata_entry *dev = sp_results_metadata(r, "gpu_device");
  check(dev != NULL, "gpu_device metadata", dev ? dev->text : "missing");
  expect_gpu(r, "spin_2ms", 20, 2 * MS);
  expect_gpu(r, "spin_1ms", 30, MS);
  expect_gpu(r, "three_1ms", 10, 3 * MS);
  /* The CPU side stays enqueue-side: launches return before the kernels end,
   * so the CPU time of a call is well below its device time (most calls:
   * the first launches may wait for the device to wake up). */
  int64_t *g, *c;
  size_t n = calls_of(r, "spin_2ms", &g, &c), shorter = 0;
  for (size_t i = 0; i < n; i++) shorter += c[i] < g[i] / 2;
  char d[128];
  snprintf(d, sizeof d, "%zu of %zu calls took less CPU time than half their device time", shorter, n);
  check(n && shorter >= n / 2, "spin_2ms: CPU timeline is enqueue-side", d);
  free(g);
  free(c);
  size_t reg;
  uint64_t count = 0;
  int64_t total = 0;
  if (sp_results_find_region(r, "host_only", &reg) == SP_OK) sp_results_region_gpu(r, reg, NULL, &count, &total);
  snprintf(d, sizeof d, "%llu calls with device time, %lld ns in all", (unsigned long long)count, (long long)total);
  check(count == 10 && total < 10 * MS / 10, "host_only: (almost) no device time", d);
  sp_results_free(r);
  sp_manager_destroy(m);
}

static void mode_sync(void) {
  sp_manager *m = start("sync", "gpu_sync_on_exit=true");
  sp_region k = sp_region_intern("spin_2ms_synced");
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, k);
    sp_check_spin(NULL, 2 * MS);
    sp_region_end(m, k);
  }
  sp_results *r = finish(m);
  expect_gpu(r, "spin_2ms_synced", 10, 2 * MS);
  int64_t *g, *c;
  size_t n = calls_of(r, "spin_2ms_synced", &g, &c), covered = 0;
  for (size_t i = 0; i < n; i++) covered += c[i] >= g[i];
  char d[128];
  snprintf(d, sizeof d, "%zu of %zu calls took at least their device time on the CPU", covered, n);
  check(n && covered == n, "gpu_sync_on_exit: CPU time covers the kernel", d);
  free(g);
  free(c);
  sp_results_free(r);
  sp_manager_destroy(m);
}

static sp_manager *tm;
static void *worker(void *arg) {
  long me = (long)(intptr_t)arg;
  sp_check_set_device(0);
  sp_region k = sp_region_intern(me == 0 ? "thread0_1ms" : "thread1_3ms");
  for (int i = 0; i < 10; i++) {
    sp_region_begin(tm, k);
    sp_check_spin((void *)2, (unsigned long long)(me == 0 ? MS : 3 * MS));
    sp_region_end(tm, k);
  }
  return NULL;
}

static void mode_streams(void) {
  sp_manager *m = start("streams", NULL);
  sp_region warm = sp_region_intern("warm"), on = sp_region_intern("on_stream_2ms");
  sp_region_begin(m, warm);
  sp_region_end(m, warm);
  void *s = NULL;
  check(sp_check_stream_create(&s) == 0, "cudaStreamCreate", NULL);
  sp_manager_set_region_gpu_stream(m, on, s);
  for (int i = 0; i < 10; i++) {
    sp_region_begin(m, on);
    sp_check_spin(s, 2 * MS);
    sp_region_end(m, on);
  }
  sp_check_device_sync();
  sp_results *r = finish(m);
  expect_gpu(r, "on_stream_2ms", 10, 2 * MS);
  sp_results_free(r);
  sp_manager_destroy(m);

  /* Two threads at once, each on its per-thread default stream. */
  tm = start("streams", NULL);
  sp_manager_set_gpu_stream(tm, (void *)2);
  pthread_t th[2];
  for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  sp_check_device_sync();
  r = finish(tm);
  expect_gpu(r, "thread0_1ms", 10, MS);
  expect_gpu(r, "thread1_3ms", 10, 3 * MS);
  sp_results_free(r);
  sp_manager_destroy(tm);
}

static void mode_nvtx(void) {
  sp_manager *m = sp_manager_create();
  const char *ov[] = {"file_path=gpu_check_nvtx.h5", "use_nvtx=true", "use_gpu_timing=true", NULL};
  sp_setup_args a = {.overrides = ov};
  if (sp_manager_setup(m, &a) != SP_OK) exit(1);
  sp_region outer = sp_region_intern("nvtx_outer"), in = sp_region_intern("nvtx_kernel");
  for (int i = 0; i < 5; i++) {
    sp_region_begin(m, outer);
    sp_region_begin(m, in);
    sp_check_spin(NULL, MS);
    sp_region_end(m, in);
    sp_region_end(m, outer);
  }
  sp_check_device_sync();
  sp_finalize_args f = {0};
  check(sp_manager_finalize(m, &f, NULL) == SP_OK, "nvtx run finalized", NULL);
  sp_manager_destroy(m);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "timing";
  if (sp_check_set_device(0) != 0) {
    fprintf(stderr, "gpu_check: cudaSetDevice(0) failed: no usable GPU\n");
    return 77;
  }
  if (!strcmp(mode, "timing")) mode_timing();
  else if (!strcmp(mode, "sync")) mode_sync();
  else if (!strcmp(mode, "streams")) mode_streams();
  else if (!strcmp(mode, "nvtx")) mode_nvtx();
  else {
    fprintf(stderr, "gpu_check: unknown mode %s (timing, sync, streams, nvtx)\n", mode);
    return 2;
  }
  return failures ? 1 : 0;
}
