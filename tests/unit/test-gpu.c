/* test-gpu.c - device timing below the probe: the per-thread event pool and
 * its asynchronous resolution on a fake backend with an exact clock, the
 * callbacks backend, and the "cuda" backend end to end on our mock driver
 * (tests/mock_cuda, found through LD_LIBRARY_PATH as libcuda.so.1): pool
 * reuse, resolution when the pool runs low and at finish, sync on exit,
 * contexts, driver errors (no library, no device, init failure, out of
 * resources, failing records) and several recording threads.
 *
 * With the CUDA toolkit installed, our own driver declarations are checked
 * against cuda.h at compile time. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mock_cuda/mock_cuda.h"
#include "probes/gpu/cuda_api.h"
#include "probes/gpu/gpu_cuda.h"
#include "probes/gpu/gpu_timer.h"

#ifdef SP_TEST_HAVE_CUDA_H
#  include <cuda.h>
_Static_assert((int)SP__CUDA_SUCCESS == (int)CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert((int)SP__CUDA_ERROR_OUT_OF_MEMORY == (int)CUDA_ERROR_OUT_OF_MEMORY, "OUT_OF_MEMORY");
_Static_assert((int)SP__CUDA_ERROR_NOT_INITIALIZED == (int)CUDA_ERROR_NOT_INITIALIZED, "NOT_INITIALIZED");
_Static_assert((int)SP__CUDA_ERROR_DEINITIALIZED == (int)CUDA_ERROR_DEINITIALIZED, "DEINITIALIZED");
_Static_assert((int)SP__CUDA_ERROR_NO_DEVICE == (int)CUDA_ERROR_NO_DEVICE, "NO_DEVICE");
_Static_assert((int)SP__CUDA_ERROR_INVALID_CONTEXT == (int)CUDA_ERROR_INVALID_CONTEXT, "INVALID_CONTEXT");
_Static_assert((int)SP__CUDA_ERROR_INVALID_HANDLE == (int)CUDA_ERROR_INVALID_HANDLE, "INVALID_HANDLE");
_Static_assert((int)SP__CUDA_ERROR_NOT_READY == (int)CUDA_ERROR_NOT_READY, "NOT_READY");
_Static_assert((int)SP__CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES == (int)CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "OOR");
_Static_assert(SP__CU_EVENT_DEFAULT == CU_EVENT_DEFAULT, "CU_EVENT_DEFAULT");
_Static_assert(sizeof(sp__CUresult) == sizeof(CUresult), "CUresult size");
_Static_assert(sizeof(sp__CUdevice) == sizeof(CUdevice), "CUdevice size");
/* Same struct tags as cuda.h: the handle types are the same types. */
_Static_assert(__builtin_types_compatible_p(sp__CUevent, CUevent), "CUevent");
_Static_assert(__builtin_types_compatible_p(sp__CUstream, CUstream), "CUstream");
_Static_assert(__builtin_types_compatible_p(sp__CUcontext, CUcontext), "CUcontext");
/* The prototypes of the symbols we look up, parameter by parameter
 * (cuda.h's own macros map the names to the _v2 symbols). */
#  define SP__SAME_FN(ours, theirs) \
     _Static_assert(__builtin_types_compatible_p(__typeof__(((struct sp__cuda *)0)->ours), \
                    __typeof__(theirs) *), #theirs)
/* CUresult is an enum there and int here: compare with our return type. */
#  define SP__ARGS_FN(ours, theirs, ...) \
     _Static_assert(__builtin_types_compatible_p(__typeof__(((struct sp__cuda *)0)->ours), \
                    sp__CUresult (*)(__VA_ARGS__)), #theirs)
SP__ARGS_FN(Init, cuInit, unsigned);
SP__ARGS_FN(EventCreate, cuEventCreate, CUevent *, unsigned);
SP__ARGS_FN(EventRecord, cuEventRecord, CUevent, CUstream);
SP__ARGS_FN(EventElapsedTime, cuEventElapsedTime, float *, CUevent, CUevent);
SP__ARGS_FN(CtxPushCurrent, cuCtxPushCurrent, CUcontext);
SP__ARGS_FN(CtxPopCurrent, cuCtxPopCurrent, CUcontext *);
SP__ARGS_FN(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, CUcontext *, CUdevice);
/* And the real declarations take exactly these parameters. */
_Static_assert(__builtin_types_compatible_p(__typeof__(cuEventElapsedTime) *,
                                            CUresult (*)(float *, CUevent, CUevent)), "elapsed");
_Static_assert(__builtin_types_compatible_p(__typeof__(cuEventRecord) *,
                                            CUresult (*)(CUevent, CUstream)), "record");
_Static_assert(__builtin_types_compatible_p(__typeof__(cuEventCreate) *,
                                            CUresult (*)(CUevent *, unsigned)), "create");
_Static_assert(__builtin_types_compatible_p(__typeof__(cuDeviceGetName) *,
                                            CUresult (*)(char *, int, CUdevice)), "name");
#endif

/*====== A fake backend: exact device clock, controllable completion ======*/

struct fake_ev {
  int64_t t;
  uint64_t seq;
  int live;
};

static struct fake {
  int64_t clock;      /* device ns */
  uint64_t seq;       /* device progress: one step per record and per query */
  uint64_t lag;       /* an event completes `lag` steps after its record */
  int own_handles;    /* record() makes handles (the callbacks shape) */
  long long live, max_live, created, queries, syncs, waits;
  long long create_limit; /* -1: none */
  long long record_fail_after; /* -1: none */
  long long records;
  int elapsed_error;  /* returned by elapsed when set */
} fk;

static void fake_reset(void) {
  memset(&fk, 0, sizeof fk);
  fk.create_limit = -1;
  fk.record_fail_after = -1;
}

static void *fake_new(void) {
  struct fake_ev *e = calloc(1, sizeof *e);
  e->live = 1;
  fk.created++;
  if (++fk.live > fk.max_live) fk.max_live = fk.live;
  return e;
}

static int f_create(void *be, void *ts, void **ev) {
  (void)be, (void)ts;
  if (fk.create_limit >= 0 && fk.live >= fk.create_limit) return 2;
  *ev = fake_new();
  return 0;
}

static void f_destroy(void *be, void *ts, void *ev) {
  (void)be, (void)ts;
  struct fake_ev *e = ev;
  ASSERT(e->live);
  e->live = 0;
  fk.live--;
  free(e);
}

static int f_record(void *be, void *ts, void *stream, void **ev) {
  (void)be, (void)ts, (void)stream;
  if (fk.record_fail_after >= 0 && fk.records >= fk.record_fail_after) return 700;
  fk.records++;
  if (fk.own_handles) *ev = fake_new();
  struct fake_ev *e = *ev;
  ASSERT(e && e->live);
  e->t = fk.clock;
  e->seq = ++fk.seq;
  return 0;
}

static int f_done(const struct fake_ev *e) { return fk.seq - e->seq >= fk.lag; }

static int f_elapsed(void *be, void *ts, void *a, void *b, int wait, int64_t *ns) {
  (void)be, (void)ts;
  const struct fake_ev *s = a, *e = b;
  fk.queries++;
  fk.seq++;
  if (fk.elapsed_error) return fk.elapsed_error;
  if (!f_done(e) || !f_done(s)) {
    if (!wait) return SP__GPU_NOT_READY;
    fk.waits++;
  }
  *ns = e->t - s->t;
  return SP__GPU_DONE;
}

static int f_sync(void *be, void *ts, void *stream) {
  (void)be, (void)ts, (void)stream;
  fk.syncs++;
  return 0;
}

static const char *f_name(void *be, int code, char *buf, size_t n) {
  (void)be;
  snprintf(buf, n, "FAKE_ERROR_%d", code);
  return buf;
}

static struct sp__gpu_backend fake_backend(void) {
  struct sp__gpu_backend b = {.name = "fake", .create = fk.own_handles ? NULL : f_create,
                              .destroy = f_destroy, .record = f_record, .elapsed = f_elapsed,
                              .sync = f_sync, .error_name = f_name};
  return b;
}

/* Delivered values by tag. */
#define MAXTAG 100000
static int64_t got[MAXTAG];
static int ngot[MAXTAG];
static void deliver(void *ctx, uint64_t tag, int64_t ns) {
  (void)ctx;
  ASSERT(tag < MAXTAG);
  got[tag] = ns;
  ngot[tag]++;
}
static void clear_got(void) {
  memset(got, 0, sizeof got);
  memset(ngot, 0, sizeof ngot);
}

/* One call of `ns` device time on the fake clock. */
static void fake_call(struct sp__gpu_thread *t, uint64_t tag, int64_t ns, int sync) {
  sp__gpu_begin(t, NULL);
  fk.clock += ns;
  sp__gpu_end(t, NULL, tag, sync);
}

SP_TEST(pool_exact_durations_when_device_keeps_up) {
  fake_reset();
  clear_got();
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 1000; i++) fake_call(&t, i, (int64_t)(i * 7 + 1), 0);
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 1000; i++) {
    ASSERT_EQ(ngot[i], 1);
    ASSERT_EQ(got[i], (int64_t)(i * 7 + 1));
  }
  /* Completed pairs went back to the free list: a handful of events served
   * 2000 records. */
  ASSERT_LE(fk.created, 16);
  ASSERT_EQ(t.prob.untimed, 0);
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_resolves_lagging_device_when_low_and_at_finish) {
  fake_reset();
  clear_got();
  fk.lag = 300; /* the device is 300 records behind the CPU */
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 5000; i++) fake_call(&t, i, 10 + (int64_t)(i % 13), 0);
  /* Before finish: most calls were resolved asynchronously, the last ones
   * (those the device has not reached) are still in flight. */
  uint64_t resolved = 0;
  for (uint64_t i = 0; i < 5000; i++) resolved += (uint64_t)ngot[i];
  ASSERT_GT(resolved, 4000);
  ASSERT_GT(sp__gpu_pending(&t), 0);
  ASSERT_EQ(resolved + sp__gpu_pending(&t), 5000);
  /* Nothing waited so far. */
  ASSERT_EQ(fk.waits, 0);
  /* The pool grew to cover the lag, not the run. */
  ASSERT_GE(fk.max_live, 300);
  ASSERT_LE(fk.max_live, 2 * 2048);
  sp__gpu_finish(&t);
  ASSERT_EQ(sp__gpu_pending(&t), 0);
  for (uint64_t i = 0; i < 5000; i++) {
    ASSERT_EQ(ngot[i], 1);
    ASSERT_EQ(got[i], 10 + (int64_t)(i % 13));
  }
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_nested_calls_pair_their_own_events) {
  fake_reset();
  clear_got();
  fk.lag = 5;
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t k = 0; k < 50; k++) {
    sp__gpu_begin(&t, NULL); /* outer */
    fk.clock += 1;
    sp__gpu_begin(&t, NULL); /* middle */
    fk.clock += 10;
    fake_call(&t, 3 * k + 2, 100, 0); /* inner */
    fk.clock += 20;
    sp__gpu_end(&t, NULL, 3 * k + 1, 0);
    fk.clock += 2;
    sp__gpu_end(&t, NULL, 3 * k, 0);
  }
  sp__gpu_finish(&t);
  for (uint64_t k = 0; k < 50; k++) {
    ASSERT_EQ(got[3 * k + 2], 100);
    ASSERT_EQ(got[3 * k + 1], 130);
    ASSERT_EQ(got[3 * k], 133);
  }
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_open_calls_survive_finish) {
  fake_reset();
  clear_got();
  fk.lag = 1000000; /* nothing completes until waited for */
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  sp__gpu_begin(&t, NULL); /* stays open across the finish */
  fake_call(&t, 1, 50, 0);
  sp__gpu_finish(&t); /* a finalize in the middle of a call */
  ASSERT_EQ(got[1], 50);
  ASSERT_EQ(ngot[0], 0);
  fk.clock += 7;
  sp__gpu_end(&t, NULL, 0, 0);
  sp__gpu_finish(&t);
  ASSERT_EQ(ngot[0], 1);
  ASSERT_EQ(got[0], 57);
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_sync_on_exit_resolves_at_once) {
  fake_reset();
  clear_got();
  fk.lag = 1000000;
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 100; i++) {
    fake_call(&t, i, 40, 1);
    ASSERT_EQ(ngot[i], 1); /* resolved before the end returned */
    ASSERT_EQ(got[i], 40);
    ASSERT_EQ(sp__gpu_pending(&t), 0);
  }
  ASSERT_EQ(fk.syncs, 100);
  ASSERT_LE(fk.created, 8);
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_exhausted_marks_calls_untimed) {
  fake_reset();
  clear_got();
  fk.lag = 1000000;
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 100); /* rounded to 128 */
  for (uint64_t i = 0; i < 200; i++) fake_call(&t, i, 3, 0);
  ASSERT_EQ(sp__gpu_pending(&t), 128);
  ASSERT_EQ(t.prob.exhausted, 72);
  for (uint64_t i = 128; i < 200; i++) ASSERT_EQ(got[i], -1);
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 128; i++) ASSERT_EQ(got[i], 3);
  char msg[512];
  sp__gpu_problems_text(&t.prob, &b, msg, sizeof msg);
  ASSERT_CONTAINS(msg, "72 calls have no GPU time");
  ASSERT_CONTAINS(msg, "72 calls found too many calls in flight");
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_out_of_events_stops_growing_and_recycles) {
  fake_reset();
  clear_got();
  fk.lag = 40;
  fk.create_limit = 16; /* the device runs out of event resources */
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 1000; i++) fake_call(&t, i, 5, 0);
  sp__gpu_finish(&t);
  ASSERT_EQ(fk.max_live, 16);
  ASSERT_EQ(t.prob.create_errors, 1); /* tried once, then lived on 16 */
  uint64_t timed = 0, untimed_calls = 0;
  for (uint64_t i = 0; i < 1000; i++) {
    ASSERT_EQ(ngot[i], 1);
    if (got[i] == 5) timed++;
    else if (got[i] == -1) untimed_calls++;
    else ASSERT(!"a wrong duration");
  }
  ASSERT_EQ(timed + untimed_calls, 1000);
  ASSERT_EQ(untimed_calls, t.prob.untimed);
  ASSERT_GT(timed, 0);
  ASSERT_GT(untimed_calls, 0); /* 16 events cannot cover a lag of 40 steps */
  char msg[512];
  sp__gpu_problems_text(&t.prob, &b, msg, sizeof msg);
  ASSERT_CONTAINS(msg, "creating an event: FAKE_ERROR_2");
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_record_and_elapsed_errors_are_counted) {
  fake_reset();
  clear_got();
  fk.record_fail_after = 21; /* 10 calls, then the start of the 11th */
  struct sp__gpu_backend b = fake_backend();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 20; i++) fake_call(&t, i, 9, 0);
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 10; i++) ASSERT_EQ(got[i], 9);
  for (uint64_t i = 10; i < 20; i++) ASSERT_EQ(got[i], -1);
  ASSERT_EQ(t.prob.untimed, 10);
  ASSERT_EQ(t.prob.first_error, 700);
  char msg[512];
  sp__gpu_problems_text(&t.prob, &b, msg, sizeof msg);
  ASSERT_CONTAINS(msg, "10 calls have no GPU time");
  ASSERT_CONTAINS(msg, "recording an event: FAKE_ERROR_700");
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);

  fake_reset();
  clear_got();
  fk.elapsed_error = 999;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  fake_call(&t, 0, 9, 0);
  sp__gpu_finish(&t);
  ASSERT_EQ(got[0], -1);
  ASSERT_EQ(t.prob.elapsed_errors, 1);
  sp__gpu_thread_fini(&t);
  ASSERT_EQ(fk.live, 0);
}

SP_TEST(pool_backend_made_handles_are_released) {
  fake_reset();
  clear_got();
  fk.own_handles = 1; /* the callbacks shape: record() returns new handles */
  fk.lag = 50;
  struct sp__gpu_backend b = fake_backend();
  ASSERT(b.create == NULL);
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 3000; i++) fake_call(&t, i, (int64_t)i, 0);
  ASSERT_LE(fk.live, 2 * (50 + 64 + 2)); /* released as pairs resolve */
  sp__gpu_finish(&t);
  ASSERT_EQ(fk.live, 0);
  for (uint64_t i = 0; i < 3000; i++) ASSERT_EQ(got[i], (int64_t)i);
  sp__gpu_thread_fini(&t);
}

/*====== The callbacks backend ======*/

/* A fake device clock of the user's: a counter that kernels advance. */
static struct user_clock {
  int64_t now;
  int released, records, syncs;
} uc;

static int u_record(void *user, void *stream, void **event) {
  struct user_clock *c = user;
  ASSERT(stream == (void *)0x5eed);
  int64_t *e = malloc(sizeof *e);
  *e = c->now;
  c->records++;
  *event = e;
  return 0;
}
static int u_elapsed(void *user, void *start, void *end, int wait, int64_t *ns) {
  (void)user, (void)wait;
  *ns = *(int64_t *)end - *(int64_t *)start;
  return 0;
}
static void u_release(void *user, void *event) {
  ((struct user_clock *)user)->released++;
  free(event);
}
static int u_sync(void *user, void *stream) {
  (void)stream;
  ((struct user_clock *)user)->syncs++;
  return 0;
}

SP_TEST(callbacks_backend_exact_durations_and_release) {
  clear_got();
  memset(&uc, 0, sizeof uc);
  sp_gpu_callbacks cb = {sizeof cb, &uc, u_record, u_elapsed, u_release, u_sync, NULL};
  sp_gpu_callbacks store;
  struct sp__gpu_backend b;
  char why[256];
  ASSERT_EQ(sp__gpu_callbacks_backend(&b, &store, &cb, why, sizeof why), 0);
  ASSERT_STR_EQ(b.name, "callbacks");
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 100; i++) {
    sp__gpu_begin(&t, (void *)0x5eed);
    uc.now += (int64_t)(1000 + i);
    sp__gpu_end(&t, (void *)0x5eed, i, i % 2);
  }
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 100; i++) ASSERT_EQ(got[i], (int64_t)(1000 + i));
  ASSERT_EQ(uc.records, 200);
  ASSERT_EQ(uc.released, 200);
  ASSERT_EQ(uc.syncs, 50);
  sp__gpu_thread_fini(&t);
}

SP_TEST(callbacks_backend_rejects_incomplete_registration) {
  sp_gpu_callbacks cb = {sizeof cb, NULL, u_record, NULL, NULL, NULL, NULL};
  sp_gpu_callbacks store;
  struct sp__gpu_backend b;
  char why[256];
  ASSERT_EQ(sp__gpu_callbacks_backend(&b, &store, &cb, why, sizeof why), -1);
  ASSERT_CONTAINS(why, "elapsed_ns");
  cb.elapsed_ns = u_elapsed;
  cb.size = 4;
  ASSERT_EQ(sp__gpu_callbacks_backend(&b, &store, &cb, why, sizeof why), -1);
  ASSERT_CONTAINS(why, "sizeof(sp_gpu_callbacks)");
}

/*====== The CUDA backend on the mock driver ======*/

static mock_cuda_launch_fn launch;
static mock_cuda_stats_fn stats;

/* The driver the profiler loaded: the same library, looked up again. */
static void need_mock(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) SKIP("libcuda.so.1 is not loaded");
  launch = (mock_cuda_launch_fn)(uintptr_t)dlsym(h, "mock_cuda_launch");
  stats = (mock_cuda_stats_fn)(uintptr_t)dlsym(h, "mock_cuda_get_stats");
  if (!launch || !stats) SKIP("libcuda.so.1 is a real driver, not the test mock");
}

/* CTest puts the mock on the loader path (LD_LIBRARY_PATH), as a real
 * driver is found; run by hand or by scripts/sanitize.sh, name it. */
static void use_mock(void) {
  const char *p = getenv("LD_LIBRARY_PATH");
  if (!p || !strstr(p, "mock_cuda"))
    setenv("SCOPE_PROFILER_CUDA_LIBRARY", SP_TEST_BINARY_DIR "/tests/mock_cuda/libcuda.so.1", 0);
}

static struct sp__gpu_backend cuda_or_fail(void) {
  use_mock();
  struct sp__gpu_backend b;
  char why[512] = "";
  int rc = sp__gpu_cuda_backend(&b, why, sizeof why);
  if (rc) SP_FAIL_("cuda backend: %s", why);
  need_mock();
  return b;
}

static void cuda_call(struct sp__gpu_thread *t, void *stream, uint64_t tag, uint64_t ns, int sync) {
  sp__gpu_begin(t, stream);
  launch(stream, ns);
  sp__gpu_end(t, stream, tag, sync);
}

SP_TEST(cuda_backend_loads_mock_and_times_exactly) {
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  ASSERT_STR_EQ(b.name, "cuda");
  int ver = 0, ndev = 0;
  ASSERT_STR_EQ(sp__gpu_cuda_device(&ver, &ndev), "scope-profiler mock GPU 0");
  ASSERT_EQ(ver, 13000);
  ASSERT_EQ(ndev, 1);
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 2000; i++) cuda_call(&t, NULL, i, 1000 + 37 * i, 0);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_EQ(s.event_syncs, 0); /* the device kept up: nothing waited */
  uint32_t pending = sp__gpu_pending(&t);
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 2000; i++) ASSERT_EQ(got[i], (int64_t)(1000 + 37 * i));
  stats(&s);
  ASSERT_EQ(s.event_syncs, pending); /* finish waits only for what was in flight */
  /* No context was current: device 0's primary context, made current once. */
  ASSERT_EQ(s.primary_retains, 1);
  ASSERT_EQ(s.set_current, 1);
  ASSERT_EQ(s.calls_without_context, 0);
  ASSERT_EQ(s.records, 4000);
  ASSERT_LE(s.created, 16); /* reused */
  sp__gpu_thread_fini(&t);
  stats(&s);
  ASSERT_EQ(s.live, 0);
  ASSERT_EQ(s.bad_handles, 0);
}

SP_TEST(cuda_backend_async_resolution_with_lagging_device) {
  setenv("SP_MOCK_CUDA_LAG", "500", 1);
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 10000; i++) cuda_call(&t, NULL, i, 100 + i % 50, 0);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_GT(s.not_ready, 0);  /* it did find pairs in flight */
  ASSERT_EQ(s.event_syncs, 0); /* and never waited on the hot path */
  ASSERT_GT(sp__gpu_pending(&t), 0);
  ASSERT_LT(s.max_live, 4096); /* the pool covers the lag, not the run */
  sp__gpu_finish(&t);
  stats(&s);
  ASSERT_GT(s.event_syncs, 0); /* finish waited for the rest */
  for (uint64_t i = 0; i < 10000; i++) {
    ASSERT_EQ(ngot[i], 1);
    ASSERT_EQ(got[i], (int64_t)(100 + i % 50));
  }
  sp__gpu_thread_fini(&t);
  stats(&s);
  ASSERT_EQ(s.live, 0);
}

SP_TEST(cuda_backend_sync_on_exit_synchronizes_the_stream) {
  setenv("SP_MOCK_CUDA_LAG", "1000000", 1);
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 300; i++) {
    cuda_call(&t, NULL, i, 2500, 1);
    ASSERT_EQ(got[i], 2500);
  }
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_EQ(s.stream_syncs, 300);
  ASSERT_LE(s.created, 8);
  sp__gpu_thread_fini(&t);
}

SP_TEST(cuda_backend_binds_to_the_current_context) {
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  sp__CUresult (*retain)(sp__CUcontext *, sp__CUdevice) =
      (sp__CUresult(*)(sp__CUcontext *, sp__CUdevice))(uintptr_t)dlsym(h, "cuDevicePrimaryCtxRetain");
  sp__CUresult (*set)(sp__CUcontext) = (sp__CUresult(*)(sp__CUcontext))(uintptr_t)dlsym(h, "cuCtxSetCurrent");
  sp__CUcontext ctx;
  ASSERT_EQ(retain(&ctx, 0), 0);
  ASSERT_EQ(set(ctx), 0); /* what cudaSetDevice does */
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  cuda_call(&t, NULL, 0, 77, 0);
  sp__gpu_finish(&t);
  ASSERT_EQ(got[0], 77);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_EQ(s.primary_retains, 1); /* ours, above: the backend took the current one */
  ASSERT_EQ(s.set_current, 1);
  sp__gpu_thread_fini(&t);
}

SP_TEST(cuda_no_driver_library) {
  setenv("SCOPE_PROFILER_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  struct sp__gpu_backend b;
  char why[512];
  ASSERT_EQ(sp__gpu_cuda_backend(&b, why, sizeof why), -1);
  ASSERT_CONTAINS(why, "the CUDA driver library /nonexistent/libcuda.so.1 cannot be loaded");
  ASSERT_CONTAINS(why, "SCOPE_PROFILER_CUDA_LIBRARY");
  ASSERT(sp__gpu_cuda_device(NULL, NULL) == NULL);
  /* The outcome is remembered: the same reason again, without retrying. */
  char why2[512];
  ASSERT_EQ(sp__gpu_cuda_backend(&b, why2, sizeof why2), -1);
  ASSERT_STR_EQ(why, why2);
}

SP_TEST(cuda_no_device) {
  use_mock();
  setenv("SP_MOCK_CUDA_DEVICES", "0", 1);
  struct sp__gpu_backend b;
  char why[512];
  ASSERT_EQ(sp__gpu_cuda_backend(&b, why, sizeof why), -1);
  ASSERT_CONTAINS(why, "no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE "
                       "(no CUDA-capable device is detected)");
}

SP_TEST(cuda_init_failure_names_the_error) {
  use_mock();
  setenv("SP_MOCK_CUDA_INIT_ERROR", "999", 1);
  struct sp__gpu_backend b;
  char why[512];
  ASSERT_EQ(sp__gpu_cuda_backend(&b, why, sizeof why), -1);
  ASSERT_CONTAINS(why, "the CUDA driver cannot start: cuInit returned CUDA_ERROR_UNKNOWN");
}

SP_TEST(cuda_out_of_event_resources) {
  setenv("SP_MOCK_CUDA_MAX_EVENTS", "24", 1);
  setenv("SP_MOCK_CUDA_LAG", "40", 1); /* 20 pairs in flight need 40 events */
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 2000; i++) cuda_call(&t, NULL, i, 600, 0);
  sp__gpu_finish(&t);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_EQ(s.max_live, 24);
  ASSERT_EQ(s.create_failures, 1);
  uint64_t timed = 0;
  for (uint64_t i = 0; i < 2000; i++) {
    ASSERT_EQ(ngot[i], 1);
    ASSERT(got[i] == 600 || got[i] == -1);
    timed += got[i] == 600;
  }
  ASSERT_GT(timed, 100);
  ASSERT_EQ(2000 - timed, t.prob.untimed);
  char msg[512];
  sp__gpu_problems_text(&t.prob, &b, msg, sizeof msg);
  ASSERT_CONTAINS(msg, "creating an event: CUDA_ERROR_OUT_OF_MEMORY");
  sp__gpu_thread_fini(&t);
  stats(&s);
  ASSERT_EQ(s.live, 0);
}

SP_TEST(cuda_failing_records_are_reported) {
  setenv("SP_MOCK_CUDA_RECORD_FAIL_AFTER", "100", 1);
  clear_got();
  struct sp__gpu_backend b = cuda_or_fail();
  struct sp__gpu_thread t;
  sp__gpu_thread_init(&t, &b, deliver, NULL, 0);
  for (uint64_t i = 0; i < 80; i++) cuda_call(&t, NULL, i, 10, 0);
  sp__gpu_finish(&t);
  for (uint64_t i = 0; i < 50; i++) ASSERT_EQ(got[i], 10);
  for (uint64_t i = 50; i < 80; i++) ASSERT_EQ(got[i], -1);
  char msg[512];
  sp__gpu_problems_text(&t.prob, &b, msg, sizeof msg);
  ASSERT_CONTAINS(msg, "30 calls have no GPU time");
  ASSERT_CONTAINS(msg, "recording an event: CUDA_ERROR_ILLEGAL_ADDRESS");
  sp__gpu_thread_fini(&t);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_EQ(s.live, 0);
}

/* Several threads, each on a stream of its own, resolved by the main thread
 * after they exited (as finalize does). */
#define NTHREADS 4
#define NCALLS 3000
struct worker {
  struct sp__gpu_thread t;
  void *stream;
  int index;
  int64_t vals[NCALLS];
  int nvals[NCALLS];
};
static void deliver_w(void *ctx, uint64_t tag, int64_t ns) {
  struct worker *w = ctx;
  w->vals[tag] = ns;
  w->nvals[tag]++;
}
static struct sp__gpu_backend shared_b;
static pthread_mutex_t legacy_turn = PTHREAD_MUTEX_INITIALIZER;

static void *worker_main(void *arg) {
  struct worker *w = arg;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  sp__CUresult (*create)(sp__CUstream *, unsigned) =
      (sp__CUresult(*)(sp__CUstream *, unsigned))(uintptr_t)dlsym(h, "cuStreamCreate");
  sp__gpu_thread_init(&w->t, &shared_b, deliver_w, w, 0);
  /* The first begin binds the thread (primary context made current): the
   * stream is created after it, in that context. That call runs on the
   * legacy stream, which every thread of the context shares (as on a real
   * device): two threads timing it at once would each measure the other's
   * kernel too, so the binding calls take turns. */
  pthread_mutex_lock(&legacy_turn);
  sp__gpu_begin(&w->t, NULL);
  launch(NULL, 5);
  sp__gpu_end(&w->t, NULL, 0, 0);
  pthread_mutex_unlock(&legacy_turn);
  sp__CUstream s;
  ASSERT_EQ(create(&s, 0), 0);
  w->stream = s;
  for (uint64_t i = 1; i < NCALLS; i++) {
    sp__gpu_begin(&w->t, w->stream);
    launch(w->stream, (uint64_t)(w->index * 100000) + i);
    sp__gpu_end(&w->t, w->stream, i, 0);
  }
  return NULL;
}

SP_TEST(cuda_threads_on_their_own_streams) {
  setenv("SP_MOCK_CUDA_LAG", "64", 1);
  shared_b = cuda_or_fail();
  static struct worker w[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    w[i].index = i + 1;
    ASSERT_EQ(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  struct mock_cuda_stats s0;
  stats(&s0);
  /* The workers are gone; their contexts are pushed here for their pools. */
  for (int i = 0; i < NTHREADS; i++) sp__gpu_finish(&w[i].t);
  for (int i = 0; i < NTHREADS; i++) {
    ASSERT_EQ(w[i].nvals[0], 1);
    ASSERT_EQ(w[i].vals[0], 5);
    for (uint64_t k = 1; k < NCALLS; k++) {
      ASSERT_EQ(w[i].nvals[k], 1);
      ASSERT_EQ(w[i].vals[k], (int64_t)((uint64_t)w[i].index * 100000 + k));
    }
    ASSERT_EQ(w[i].t.prob.untimed, 0);
  }
  for (int i = 0; i < NTHREADS; i++) sp__gpu_thread_fini(&w[i].t);
  struct mock_cuda_stats s;
  stats(&s);
  ASSERT_GT(s.push_current, s0.push_current);
  ASSERT_EQ(s.push_current, s.pop_current);
  ASSERT_EQ(s.live, 0);
  ASSERT_EQ(s.bad_handles, 0);
  ASSERT_EQ(s.calls_without_context, 0);
  ASSERT_EQ(s.primary_retains, 1); /* one retain for the process */
}

int main(int argc, char **argv) { return sp_test_main(argc, argv); }
