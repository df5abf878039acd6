/* test-gpu-run.c - use_gpu_timing, gpu_timing_backend, gpu_sync_on_exit and
 * use_nvtx through whole runs: setup, regions, finalize, and the file read
 * back both through our reader and through raw HDF5. The "cuda" backend runs
 * on our mock driver (tests/mock_cuda: exact device clock, lagging
 * completion, errors on demand), the "callbacks" backend on a fake device
 * clock of the test's own, NVTX through the recording tool (tests/nvtx_tool).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "h5util.h"
#include "mock_cuda/mock_cuda.h"
#include "scope_profiler.h"
#include "scope_profiler/reader.h"
#include "scope_profiler/results.h"

/*====== Helpers ======*/

static void use_mock(void) {
  const char *p = getenv("LD_LIBRARY_PATH");
  if (!p || !strstr(p, "mock_cuda"))
    setenv("SCOPE_PROFILER_CUDA_LIBRARY", SP_TEST_BINARY_DIR "/tests/mock_cuda/libcuda.so.1", 0);
}

static struct {
  int n;
  char text[16][1024];
} msgs;
static void on_message(sp_message_level level, const char *text, void *user) {
  (void)user;
  if (level == SP_MESSAGE_WARNING && msgs.n < 16) snprintf(msgs.text[msgs.n++], sizeof msgs.text[0], "%s", text);
}
static int warned(const char *needle) {
  int k = 0;
  for (int i = 0; i < msgs.n; i++) k += strstr(msgs.text[i], needle) != NULL;
  return k;
}

static sp_manager *run_with(const char *a, const char *b, const char *c) {
  use_mock();
  sp_set_message_handler(on_message, NULL);
  const char *ov[5] = {"file_path=g.h5", a, b, c, NULL};
  sp_manager *m = sp_manager_create();
  ASSERT(m != NULL);
  sp_setup_args args = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &args));
  return m;
}

static void finalize(sp_manager *m) {
  sp_finalize_args f = {0};
  ASSERT_OK(sp_manager_finalize(m, &f, NULL));
}

/* The run's file (written by the case's finalize), opened. */
static sp_results *opened(void) {
  sp_results *r;
  ASSERT_OK(sp_results_open("g.h5", &r));
  return r;
}

/* A case's end: its file's results and its manager freed. */
static void close_run(sp_results *r, sp_manager *m) {
  sp_results_free(r);
  sp_manager_destroy(m);
}

static mock_cuda_launch_fn launch;
static mock_cuda_stats_fn mstats;
static void *cuda; /* the driver the profiler loaded */
static void need_driver(void) {
  cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT(cuda != NULL);
  launch = (mock_cuda_launch_fn)(uintptr_t)dlsym(cuda, "mock_cuda_launch");
  mstats = (mock_cuda_stats_fn)(uintptr_t)dlsym(cuda, "mock_cuda_get_stats");
  if (!launch || !mstats) SKIP("libcuda.so.1 is a real driver, not the test mock");
}

/* A run with GPU timing (and setting `b`, or NULL) on the mock driver. */
static sp_manager *timed_run(const char *b) {
  sp_manager *m = run_with("use_gpu_timing=true", b, NULL);
  need_driver();
  return m;
}

/* Device times of every call of `region` (rank 0), in stored order. */
static int64_t *gpu_of(sp_results *r, const char *region, size_t *n) {
  size_t reg;
  ASSERT_OK(sp_results_find_region(r, region, &reg));
  for (size_t row = 0; row < sp_results_num_rows(r); row++) {
    sp_row_info info;
    ASSERT_OK(sp_results_row_info(r, row, &info));
    if (info.region != reg) continue;
    int64_t *v = malloc((info.count + 1) * sizeof *v);
    ASSERT_OK(sp_results_row_read_gpu(r, row, 0, info.count, v));
    *n = info.count;
    return v;
  }
  *n = 0;
  return NULL;
}

/* The reader's per-region device totals of `region`, all ranks: calls with
 * a device time and their sum. */
static void gpu_totals(sp_results *r, const char *region, uint64_t *count, int64_t *total) {
  size_t reg;
  ASSERT_OK(sp_results_find_region(r, region, &reg));
  ASSERT_OK(sp_results_region_gpu(r, reg, NULL, count, total));
}

static void expect_all(sp_results *r, const char *region, size_t calls, int64_t each) {
  size_t n;
  int64_t *v = gpu_of(r, region, &n);
  ASSERT_EQ(n, calls);
  for (size_t i = 0; i < n; i++)
    if (v[i] != each) SP_FAIL_("%s call %zu: gpu %lld, expected %lld", region, i, (long long)v[i], (long long)each);
  free(v);
  uint64_t count;
  int64_t total;
  gpu_totals(r, region, &count, &total);
  ASSERT_EQ(count, each >= 0 ? calls : 0);
  ASSERT_EQ(total, each >= 0 ? (int64_t)calls * each : 0);
}

static const char *meta(sp_results *r, const char *key) {
  const sp_metadata_entry *e = sp_results_metadata(r, key);
  return e ? e->text : NULL;
}

/* n calls of `region`, call i launching a kernel of dur + i % spread ns on
 * the manager's stream. */
static void launch_calls(sp_manager *m, const char *region, int n, uint64_t dur, int spread) {
  sp_region k = sp_region_intern(region);
  for (int i = 0; i < n; i++) {
    ASSERT_OK(sp_region_begin(m, k));
    launch(NULL, dur + (uint64_t)(i % spread));
    ASSERT_OK(sp_region_end(m, k));
  }
}

static void kernels(sp_manager *m, int rounds) {
  sp_region outer = sp_region_intern("step"), a = sp_region_intern("kernel_a"),
            b = sp_region_intern("kernel_b"), host = sp_region_intern("host");
  for (int i = 0; i < rounds; i++) {
    ASSERT_OK(sp_region_begin(m, outer));
    ASSERT_OK(sp_region_begin(m, a));
    launch(NULL, 1000);
    ASSERT_OK(sp_region_end(m, a));
    ASSERT_OK(sp_region_begin(m, b));
    launch(NULL, 2500);
    ASSERT_OK(sp_region_end(m, b));
    ASSERT_OK(sp_region_begin(m, host));
    ASSERT_OK(sp_region_end(m, host));
    ASSERT_OK(sp_region_end(m, outer));
  }
}

/*====== The cuda backend ======*/

SP_TEST(cuda_times_every_call_into_events_and_summary) {
  sp_manager *m = timed_run(NULL);
  kernels(m, 50);
  finalize(m);
  sp_results *r = opened();
  ASSERT(sp_results_has_gpu(r));
  expect_all(r, "kernel_a", 50, 1000);
  expect_all(r, "kernel_b", 50, 2500);
  expect_all(r, "step", 50, 3500);
  expect_all(r, "host", 50, 0);
  ASSERT_STR_EQ(meta(r, "gpu_backend"), "cuda");
  ASSERT_STR_EQ(meta(r, "gpu_device"), "scope-profiler mock GPU 0");
  ASSERT_STR_EQ(meta(r, "cuda_driver_version"), "13000");
  ASSERT_STR_EQ(meta(r, "gpu_untimed_calls"), "0");
  sp_results_free(r);
  /* Upstream's layout, read raw: int64 ns per call, and the summary. */
  hid_t f = H5Fopen("g.h5", H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/events/gpu_durations", H5P_DEFAULT);
  ASSERT(d >= 0);
  hid_t t = H5Dget_type(d);
  ASSERT(H5Tequal(t, H5T_STD_I64LE) > 0);
  H5Tclose(t);
  H5Dclose(d);
  H5Fclose(f);
  ASSERT_EQ(h5_len("g.h5", "/events/gpu_durations"), 200);
  uint64_t count;
  int64_t total;
  ASSERT_EQ(h5_gpu_stats("g.h5", "kernel_b", &count, &total), 0);
  ASSERT_EQ(count, 50);
  ASSERT_EQ(total, 50 * 2500);
  ASSERT_EQ(msgs.n, 0);
  sp_manager_destroy(m);
}

SP_TEST(no_device_warns_once_and_writes_no_gpu_column) {
  setenv("SP_MOCK_CUDA_DEVICES", "0", 1);
  sp_manager *m = run_with("use_gpu_timing=true", NULL, NULL);
  ASSERT_EQ(msgs.n, 1);
  ASSERT_EQ(warned("use_gpu_timing: no GPU time in this run: no CUDA device: cuInit returned "
                   "CUDA_ERROR_NO_DEVICE"), 1);
  ASSERT_EQ(warned("the file has no events/gpu_durations"), 1);
  sp_region a = sp_region_intern("a");
  for (int i = 0; i < 10; i++) {
    ASSERT_OK(sp_region_begin(m, a));
    ASSERT_OK(sp_region_end(m, a));
  }
  finalize(m);
  ASSERT_EQ(h5_len("g.h5", "/events/gpu_durations"), -1); /* absent, not -1s */
  sp_results *r = opened();
  ASSERT(!sp_results_has_gpu(r));
  ASSERT_EQ(sp_results_num_events(r), 10); /* timings recorded as usual */
  ASSERT(meta(r, "gpu_backend") == NULL);
  sp_results_free(r);
  uint64_t count;
  int64_t total;
  ASSERT_EQ(h5_gpu_stats("g.h5", "a", &count, &total), 0);
  ASSERT_EQ(count, 0);
  ASSERT_EQ(total, 0);
  sp_manager_destroy(m);
}

SP_TEST(no_driver_library_warns_with_the_reason) {
  setenv("SCOPE_PROFILER_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  sp_manager *m = run_with("use_gpu_timing=true", "gpu_timing_backend=cuda", NULL);
  ASSERT_EQ(warned("the CUDA driver library /nonexistent/libcuda.so.1 cannot be loaded"), 1);
  finalize(m);
  ASSERT_EQ(h5_len("g.h5", "/events/gpu_durations"), -1);
  sp_manager_destroy(m);
}

SP_TEST(unknown_backend_names_the_valid_ones) {
  use_mock();
  const char *ov[] = {"use_gpu_timing=true", "gpu_timing_backend=torch", "quiet=true", NULL};
  sp_manager *m = sp_manager_create();
  sp_setup_args args = {.overrides = ov};
  ASSERT_NE(sp_manager_setup(m, &args), SP_OK);
  ASSERT_CONTAINS(sp_last_error(), "auto");
  ASSERT_CONTAINS(sp_last_error(), "cuda");
  ASSERT_CONTAINS(sp_last_error(), "callbacks");
  sp_manager_destroy(m);
}

SP_TEST(calls_in_flight_are_resolved_at_finalize) {
  setenv("SP_MOCK_CUDA_LAG", "1000000000", 1); /* nothing completes until waited for */
  sp_manager *m = timed_run(NULL);
  kernels(m, 30);
  struct mock_cuda_stats s;
  mstats(&s);
  ASSERT_EQ(s.event_syncs, 0);
  finalize(m);
  mstats(&s);
  ASSERT_GT(s.event_syncs, 0);
  sp_results *r = opened();
  expect_all(r, "kernel_a", 30, 1000);
  expect_all(r, "step", 30, 3500);
  sp_results_free(r);
  sp_manager_destroy(m);
  mstats(&s);
  ASSERT_EQ(s.live, 0); /* every event went back at teardown */
}

SP_TEST(sync_on_exit_waits_for_the_stream_inside_the_cpu_interval) {
  setenv("SP_MOCK_CUDA_CLOCK", "real", 1); /* kernels take real time */
  sp_manager *m = timed_run("gpu_sync_on_exit=true");
  launch_calls(m, "kernel", 5, 2000000, 1); /* 2 ms each */
  struct mock_cuda_stats s;
  mstats(&s);
  ASSERT_EQ(s.stream_syncs, 5);
  finalize(m);
  sp_results *r = opened();
  size_t reg, n;
  ASSERT_OK(sp_results_find_region(r, "kernel", &reg));
  sp_events ev;
  ASSERT_OK(sp_results_events(r, reg, 0, &ev));
  int64_t *g = gpu_of(r, "kernel", &n);
  ASSERT_EQ(n, 5);
  for (size_t i = 0; i < n; i++) {
    ASSERT_GE(g[i], 2000000);
    /* The wait happened before the CPU end time was taken. */
    ASSERT_GE(ev.end_ns[i] - ev.start_ns[i], 2000000);
  }
  free(g);
  sp_events_free(&ev);
  close_run(r, m);
}

SP_TEST(without_sync_the_stream_is_never_waited_for) {
  setenv("SP_MOCK_CUDA_CLOCK", "real", 1);
  sp_manager *m = timed_run(NULL);
  launch_calls(m, "kernel", 5, 1000000, 1);
  struct mock_cuda_stats s;
  mstats(&s);
  ASSERT_EQ(s.stream_syncs, 0);
  ASSERT_EQ(s.event_syncs, 0);
  finalize(m);
  sp_results *r = opened();
  size_t n;
  int64_t *g = gpu_of(r, "kernel", &n);
  for (size_t i = 0; i < n; i++) ASSERT_GE(g[i], 1000000);
  free(g);
  close_run(r, m);
}

#define NCALLS_STREAM 100000 /* several 1 MiB buffers: each handoff resolves its pairs */
SP_TEST(bounded_memory_handoffs_keep_exact_times) {
  setenv("SP_MOCK_CUDA_LAG", "300", 1);
  sp_manager *m = timed_run("max_buffer_bytes=1048576");
  launch_calls(m, "a", NCALLS_STREAM, 100, 7);
  finalize(m);
  sp_results *r = opened();
  ASSERT_STR_EQ(meta(r, "gpu_backend"), "cuda");
  const sp_metadata_entry *blocks = sp_results_metadata(r, "streamed_blocks");
  ASSERT(blocks != NULL && blocks->i >= 2); /* it did hand buffers off */
  ASSERT_STR_EQ(meta(r, "dropped_events"), "0");
  size_t n;
  int64_t *g = gpu_of(r, "a", &n);
  ASSERT_EQ(n, NCALLS_STREAM);
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    ASSERT(g[i] >= 100 && g[i] <= 106);
    sum += g[i];
  }
  int64_t want = 0;
  for (int i = 0; i < NCALLS_STREAM; i++) want += 100 + i % 7;
  ASSERT_EQ(sum, want);
  free(g);
  uint64_t count;
  int64_t total;
  gpu_totals(r, "a", &count, &total);
  ASSERT_EQ(count, NCALLS_STREAM);
  ASSERT_EQ(total, want);
  close_run(r, m);
}

SP_TEST(failing_records_leave_untimed_calls_and_a_report) {
  setenv("SP_MOCK_CUDA_RECORD_FAIL_AFTER", "40", 1);
  sp_manager *m = timed_run(NULL);
  launch_calls(m, "a", 50, 10, 1);
  finalize(m);
  ASSERT_EQ(warned("GPU timing (cuda backend): 30 calls have no GPU time"), 1);
  ASSERT_EQ(warned("recording an event: CUDA_ERROR_ILLEGAL_ADDRESS"), 1);
  sp_results *r = opened();
  size_t n;
  int64_t *g = gpu_of(r, "a", &n);
  for (size_t i = 0; i < 20; i++) ASSERT_EQ(g[i], 10);
  for (size_t i = 20; i < 50; i++) ASSERT_EQ(g[i], -1);
  free(g);
  ASSERT_STR_EQ(meta(r, "gpu_untimed_calls"), "30");
  uint64_t count;
  int64_t total;
  gpu_totals(r, "a", &count, &total);
  ASSERT_EQ(count, 20); /* only the calls that have a time */
  ASSERT_EQ(total, 200);
  close_run(r, m);
}

SP_TEST(a_call_open_across_finalize_is_timed_in_the_next_file) {
  setenv("SP_MOCK_CUDA_LAG", "1000000000", 1);
  sp_manager *m = timed_run(NULL);
  sp_region outer = sp_region_intern("outer"), in = sp_region_intern("inner");
  ASSERT_OK(sp_region_begin(m, outer));
  launch(NULL, 100);
  ASSERT_OK(sp_region_begin(m, in));
  launch(NULL, 40);
  ASSERT_OK(sp_region_end(m, in));
  sp_finalize_args f = {0};
  ASSERT_EQ(sp_manager_finalize(m, &f, NULL), SP_ERR_OPEN_SCOPES);
  sp_results *r = opened();
  expect_all(r, "inner", 1, 40);
  sp_results_free(r);
  launch(NULL, 5);
  ASSERT_OK(sp_region_end(m, outer));
  finalize(m);
  ASSERT_OK(sp_results_open("g.h5", &r));
  expect_all(r, "outer", 1, 145);
  close_run(r, m);
}

/* Threads: each on its own per-thread default stream (the manager's stream
 * is CU_STREAM_PER_THREAD), one of them gone before finalize. */
#define NT 4
static sp_manager *tm;
static void *worker(void *arg) {
  int me = (int)(intptr_t)arg;
  sp_region a = sp_region_intern("work");
  for (int i = 0; i < 2000; i++) {
    ASSERT_OK(sp_region_begin(tm, a));
    launch((void *)2, (uint64_t)(1000 * (me + 1)));
    ASSERT_OK(sp_region_end(tm, a));
  }
  return NULL;
}

SP_TEST(threads_on_per_thread_streams) {
  setenv("SP_MOCK_CUDA_LAG", "64", 1);
  tm = timed_run("track_threads=true");
  ASSERT_OK(sp_manager_set_gpu_stream(tm, (void *)2));
  pthread_t th[NT];
  for (int i = 0; i < NT; i++) ASSERT_EQ(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL); /* detached before finalize */
  finalize(tm);
  sp_results *r = opened();
  size_t reg;
  ASSERT_OK(sp_results_find_region(r, "work", &reg));
  sp_events ev;
  ASSERT_OK(sp_results_events(r, reg, 0, &ev));
  size_t n;
  int64_t *g = gpu_of(r, "work", &n);
  ASSERT_EQ(n, NT * 2000);
  /* Every thread's calls carry its own kernel's time. */
  int64_t lane_of_time[NT + 1];
  for (int i = 0; i <= NT; i++) lane_of_time[i] = -2;
  for (size_t i = 0; i < n; i++) {
    ASSERT(g[i] % 1000 == 0 && g[i] >= 1000 && g[i] <= 1000 * NT);
    int k = (int)(g[i] / 1000);
    if (lane_of_time[k] == -2) lane_of_time[k] = ev.thread_ids[i];
    ASSERT_EQ(ev.thread_ids[i], lane_of_time[k]);
  }
  for (int k = 1; k <= NT; k++) ASSERT(lane_of_time[k] >= 0);
  free(g);
  sp_events_free(&ev);
  sp_results_free(r);
  struct mock_cuda_stats s;
  mstats(&s);
  ASSERT_EQ(s.calls_without_context, 0);
  ASSERT_EQ(s.bad_handles, 0);
  ASSERT_EQ(s.live, 0); /* the threads gave their events back when they ended */
  sp_manager_destroy(tm);
}

SP_TEST(a_region_records_on_its_own_stream) {
  sp_manager *m = timed_run(NULL);
  sp_region warm = sp_region_intern("warm"), on = sp_region_intern("on_stream"),
            off = sp_region_intern("default_stream");
  /* The first timed call binds the thread to the primary context, in
   * which the stream is then created. */
  ASSERT_OK(sp_region_begin(m, warm));
  ASSERT_OK(sp_region_end(m, warm));
  int (*create)(void **, unsigned) = (int (*)(void **, unsigned))(uintptr_t)dlsym(cuda, "cuStreamCreate");
  void *s = NULL;
  ASSERT_EQ(create(&s, 0), 0);
  ASSERT_OK(sp_manager_set_region_gpu_stream(m, on, s));
  ASSERT_EQ(sp_manager_set_region_gpu_stream(m, 0, s), SP_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < 10; i++) {
    ASSERT_OK(sp_region_begin(m, on));
    launch(s, 700);
    ASSERT_OK(sp_region_end(m, on));
    ASSERT_OK(sp_region_begin(m, off)); /* its events are on the default stream */
    launch(s, 300);
    ASSERT_OK(sp_region_end(m, off));
  }
  finalize(m);
  sp_results *r = opened();
  expect_all(r, "on_stream", 10, 700);
  expect_all(r, "default_stream", 10, 0);
  close_run(r, m);
}

/*====== The callbacks backend ======*/

static struct dev {
  pthread_mutex_t lock;
  int64_t clock;
  int records, released, syncs, not_ready;
} dv = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0};

static int d_record(void *user, void *stream, void **event) {
  struct dev *d = user;
  (void)stream;
  int64_t *e = malloc(2 * sizeof *e);
  pthread_mutex_lock(&d->lock);
  e[0] = d->clock;
  e[1] = d->records++;
  pthread_mutex_unlock(&d->lock);
  *event = e;
  return 0;
}
static int d_elapsed(void *user, void *start, void *end, int wait, int64_t *ns) {
  struct dev *d = user;
  int64_t *s = start, *e = end;
  pthread_mutex_lock(&d->lock);
  int ready = d->records - e[1] > 20; /* the device is 20 records behind */
  if (!ready && !wait) d->not_ready++;
  pthread_mutex_unlock(&d->lock);
  if (!ready && !wait) return SP_GPU_NOT_READY;
  *ns = e[0] - s[0];
  return 0;
}
static void d_release(void *user, void *event) {
  struct dev *d = user;
  pthread_mutex_lock(&d->lock);
  d->released++;
  pthread_mutex_unlock(&d->lock);
  free(event);
}
static int d_sync(void *user, void *stream) {
  (void)stream;
  ((struct dev *)user)->syncs++;
  return 0;
}
static void tick(int64_t ns) {
  pthread_mutex_lock(&dv.lock);
  dv.clock += ns;
  pthread_mutex_unlock(&dv.lock);
}

/* A manager timing on the test's fake device (dv), with one more setting. */
static sp_manager *on_fake_device(const char *setting) {
  sp_set_message_handler(on_message, NULL);
  sp_manager *m = sp_manager_create();
  sp_gpu_callbacks cb = {sizeof cb, &dv, d_record, d_elapsed, d_release, d_sync, NULL};
  ASSERT_OK(sp_manager_set_gpu_callbacks(m, &cb));
  const char *ov[] = {"file_path=g.h5", "use_gpu_timing=true", setting, NULL};
  sp_setup_args args = {.overrides = ov};
  ASSERT_OK(sp_manager_setup(m, &args));
  return m;
}

static void callbacks_run(const char *backend) {
  setenv("SCOPE_PROFILER_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1); /* must not be needed */
  sp_manager *m = on_fake_device(backend);
  sp_region a = sp_region_intern("a"), b = sp_region_intern("b");
  for (int i = 0; i < 200; i++) {
    ASSERT_OK(sp_region_begin(m, a));
    tick(17);
    ASSERT_OK(sp_region_begin(m, b));
    tick(1000 + i);
    ASSERT_OK(sp_region_end(m, b));
    ASSERT_OK(sp_region_end(m, a));
  }
  ASSERT_GT(dv.not_ready, 0); /* resolved asynchronously while recording */
  finalize(m);
  ASSERT_EQ(dv.records, 800);
  ASSERT_EQ(dv.released, 800);
  ASSERT_EQ(dv.syncs, 0);
  ASSERT_EQ(msgs.n, 0);
  sp_results *r = opened();
  ASSERT_STR_EQ(meta(r, "gpu_backend"), "callbacks");
  ASSERT(meta(r, "gpu_device") == NULL);
  size_t n;
  int64_t *g = gpu_of(r, "b", &n);
  ASSERT_EQ(n, 200);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(g[i], 1000 + (int64_t)i);
  free(g);
  g = gpu_of(r, "a", &n);
  for (size_t i = 0; i < n; i++) ASSERT_EQ(g[i], 1017 + (int64_t)i);
  free(g);
  sp_results_free(r);
  ASSERT(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == NULL); /* never loaded */
  sp_manager_destroy(m);
}

SP_TEST(callbacks_backend_exact_with_a_fake_device_clock) { callbacks_run("gpu_timing_backend=callbacks"); }
SP_TEST(auto_prefers_registered_callbacks) { callbacks_run("gpu_timing_backend=auto"); }

SP_TEST(callbacks_backend_without_callbacks_is_a_setup_error) {
  sp_manager *m = sp_manager_create();
  const char *ov[] = {"use_gpu_timing=true", "gpu_timing_backend=callbacks", "quiet=true", NULL};
  sp_setup_args args = {.overrides = ov};
  ASSERT_EQ(sp_manager_setup(m, &args), SP_ERR_CONFLICT);
  ASSERT_CONTAINS(sp_last_error(), "call sp_manager_set_gpu_callbacks() before setup");
  /* Registered afterwards, the next setup works. */
  sp_gpu_callbacks cb = {sizeof cb, &dv, d_record, d_elapsed, d_release, NULL, NULL};
  ASSERT_OK(sp_manager_set_gpu_callbacks(m, &cb));
  ASSERT_OK(sp_manager_setup(m, &args));
  sp_manager_destroy(m);
}

SP_TEST(callbacks_registration_checks_its_arguments) {
  sp_manager *m = sp_manager_create();
  sp_gpu_callbacks cb = {sizeof cb, NULL, d_record, NULL, NULL, NULL, NULL};
  ASSERT_EQ(sp_manager_set_gpu_callbacks(m, &cb), SP_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(sp_last_error(), "elapsed_ns");
  ASSERT_EQ(sp_manager_set_gpu_callbacks(NULL, &cb), SP_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(sp_manager_set_gpu_stream(NULL, NULL), SP_ERR_INVALID_ARGUMENT);
  ASSERT_OK(sp_manager_set_gpu_callbacks(m, NULL)); /* unregister */
  sp_manager_destroy(m);
}

SP_TEST(sync_on_exit_with_callbacks_uses_their_synchronize) {
  sp_manager *m = on_fake_device("gpu_sync_on_exit=true");
  sp_region a = sp_region_intern("a");
  for (int i = 0; i < 30; i++) {
    ASSERT_OK(sp_region_begin(m, a));
    tick(5);
    ASSERT_OK(sp_region_end(m, a));
  }
  ASSERT_EQ(dv.syncs, 30);
  ASSERT_EQ(dv.released, 60); /* each call resolved at its exit */
  finalize(m);
  sp_manager_destroy(m);
}

/*====== NVTX ======*/

static const char *tool(void) {
  const char *t = getenv("SP_NVTX_TOOL");
  if (!t || !*t) t = SP_TEST_BINARY_DIR "/tests/nvtx_tool/libsp_nvtx_record.so";
  return sp_test_file_exists(t) ? t : NULL;
}

/* Pushes per name and the deepest level, from the tool's record. */
struct nvtx_seen {
  int pushes[4], pops, bad, maxdepth;
  char domain[1024];
};
static void read_record(const char *const names[4], struct nvtx_seen *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen("rec.txt", "r");
  ASSERT(f != NULL);
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    long tid;
    int dom, depth, off = 0;
    unsigned col;
    char how[8];
    if (line[0] == 'D') snprintf(s->domain, sizeof s->domain, "%s", line + 2);
    if (line[0] == 'O' && sscanf(line, "O %ld %d %d", &tid, &dom, &depth) == 3 && depth <= 0) s->bad++;
    if (line[0] == 'O') s->pops++;
    if (line[0] == 'P' && sscanf(line, "P %ld %d %d %x %7s %n", &tid, &dom, &depth, &col, how, &off) >= 5) {
      if (depth > s->maxdepth) s->maxdepth = depth;
      for (int k = 0; k < 4; k++)
        if (!strcmp(line + off, names[k])) s->pushes[k]++;
    }
  }
  fclose(f);
}

static void nvtx_run(const char *extra) {
  const char *t = tool();
  if (!t) SKIP("built without NVTX3 (no recording tool)");
  setenv("NVTX_INJECTION64_PATH", t, 1);
  setenv("SP_NVTX_RECORD", "rec.txt", 1);
  use_mock();
  sp_set_message_handler(on_message, NULL);
  const char *ov[] = {"file_path=g.h5", "use_nvtx=true", extra, NULL};
  sp_setup_args args = {.overrides = ov};
  ASSERT_OK(sp_setup(&args));
  if (extra) need_driver();
  else launch = NULL;
  sp_region a = sp_region_intern("kernel_a"), b = sp_region_intern("kernel_b"), host = sp_region_intern("host");
  for (int i = 0; i < 25; i++) {
    SP_REGION("step");
    ASSERT_OK(sp_begin(a));
    if (launch) launch(NULL, 100);
    ASSERT_OK(sp_end(a));
    ASSERT_OK(sp_begin(b));
    ASSERT_OK(sp_begin(host));
    ASSERT_OK(sp_end(host));
    ASSERT_OK(sp_end(b));
  }
  sp_finalize_args f = {0};
  ASSERT_OK(sp_finalize(&f, NULL));
  ASSERT_EQ(msgs.n, 0);
  const char *names[4] = {"step", "kernel_a", "kernel_b", "host"};
  struct nvtx_seen s;
  read_record(names, &s);
  ASSERT_STR_EQ(s.domain, "1 scope-profiler");
  /* One push per recorded call, every pop matched, nested as the regions. */
  sp_results *r = opened();
  for (int k = 0; k < 4; k++) {
    size_t reg;
    sp_region_stats st;
    ASSERT_OK(sp_results_find_region(r, names[k], &reg));
    ASSERT_OK(sp_results_region_stats(r, reg, NULL, 0, &st));
    ASSERT_EQ(s.pushes[k], (int)st.count);
  }
  ASSERT_EQ(s.pops, 100);
  ASSERT_EQ(s.bad, 0);
  ASSERT_EQ(s.maxdepth, 2); /* step > kernel_b > host */
  if (extra) {
    ASSERT(sp_results_has_gpu(r));
    expect_all(r, "kernel_a", 25, 100);
  }
  sp_results_free(r);
}

SP_TEST(nvtx_ranges_match_the_profile) { nvtx_run(NULL); }
SP_TEST(nvtx_together_with_gpu_timing) { nvtx_run("use_gpu_timing=true"); }

SP_TEST(nvtx_without_a_tool_records_as_usual) {
  if (!tool()) SKIP("built without NVTX3");
  unsetenv("NVTX_INJECTION64_PATH");
  sp_manager *m = run_with("use_nvtx=true", NULL, NULL);
  sp_region a = sp_region_intern("a");
  for (int i = 0; i < 100; i++) {
    ASSERT_OK(sp_region_begin(m, a));
    ASSERT_OK(sp_region_end(m, a));
  }
  finalize(m);
  ASSERT_EQ(msgs.n, 0);
  ASSERT_EQ(h5_region_events("g.h5", "a"), 100);
  sp_manager_destroy(m);
}

SP_TEST(nvtx_domain_of_another_manager_names_its_file) {
  const char *t = tool();
  if (!t) SKIP("built without NVTX3");
  setenv("NVTX_INJECTION64_PATH", t, 1);
  setenv("SP_NVTX_RECORD", "rec.txt", 1);
  sp_manager *m = run_with("use_nvtx=true", NULL, NULL);
  sp_region a = sp_region_intern("a");
  ASSERT_OK(sp_region_begin(m, a));
  ASSERT_OK(sp_region_end(m, a));
  finalize(m);
  const char *names[4] = {"a", "", "", ""};
  struct nvtx_seen s;
  read_record(names, &s);
  ASSERT_STR_EQ(s.domain, "1 scope-profiler:g.h5");
  ASSERT_EQ(s.pushes[0], 1);
  sp_manager_destroy(m);
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
