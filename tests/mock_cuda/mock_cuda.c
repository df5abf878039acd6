/* tests/mock_cuda/mock_cuda.c - a CUDA driver of our own for the test suite,
 * built as libcuda.so.1 and found by the profiler through the loader path
 * (LD_LIBRARY_PATH), so the real "cuda" backend runs end to end without a
 * GPU: contexts, streams, events, their completion and their errors. The
 * device model and the environment that configures it are described in
 * mock_cuda.h.
 *
 * When the CUDA toolkit is installed the file is compiled against the real
 * cuda.h, so every entry point here is checked against the driver's own
 * prototypes (the names are the symbols a CUDA 13 driver exports: the _v2
 * ones where the header maps to them). It is thread-safe (one lock; the
 * current-context stack is per thread, as in the driver).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_cuda.h"

#ifdef MOCK_WITH_CUDA_H
#  include <cuda.h>
#else
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
#  define CUDAAPI
#  define CUDA_SUCCESS 0
#  define CUDA_ERROR_INVALID_VALUE 1
#  define CUDA_ERROR_OUT_OF_MEMORY 2
#  define CUDA_ERROR_NOT_INITIALIZED 3
#  define CUDA_ERROR_NO_DEVICE 100
#  define CUDA_ERROR_INVALID_DEVICE 101
#  define CUDA_ERROR_INVALID_CONTEXT 201
#  define CUDA_ERROR_INVALID_HANDLE 400
#  define CUDA_ERROR_NOT_READY 600
#  define CUDA_ERROR_ILLEGAL_ADDRESS 700
#  define CUDA_ERROR_UNKNOWN 999
#  define CU_STREAM_LEGACY ((CUstream)0x1)
#  define CU_STREAM_PER_THREAD ((CUstream)0x2)
#endif

#define MOCK_API __attribute__((visibility("default")))
#define MAX_DEVICES 8
#define CTX_MAGIC 0x43545831u
#define EV_MAGIC 0x45564e54u
#define ST_MAGIC 0x5354524du
#define CTX_STACK 16

struct CUctx_st {
  uint32_t magic;
  int device;
  struct CUstream_st *legacy;
};
struct CUstream_st {
  uint32_t magic;
  struct CUctx_st *ctx;
  uint64_t tail;      /* device time when its queued work is done */
  uint64_t synced;    /* events recorded at or before this sequence are done */
};
struct CUevent_st {
  uint32_t magic;
  struct CUctx_st *ctx;
  int recorded;
  uint64_t t;   /* device time it stands for */
  uint64_t seq; /* record sequence number (1, 2, ...) */
  struct CUstream_st *stream;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised, ndevices, real_clock;
static long long max_events = -1, record_fail_after = -1;
static int record_error = CUDA_ERROR_ILLEGAL_ADDRESS;
/* Device progress in the manual clock: every record and every query is one
 * step, so a device that lags K steps catches up while the CPU polls. */
static uint64_t lag, seq, ctx_synced;
static struct CUctx_st primary[MAX_DEVICES];
static struct CUstream_st legacy[MAX_DEVICES];
static struct mock_cuda_stats st;
#define MAX_STREAMS 256
static struct CUstream_st *streams[MAX_STREAMS];
static int nstreams;

static __thread struct CUctx_st *ctx_stack[CTX_STACK];
static __thread int ctx_depth;
static __thread struct CUstream_st per_thread[MAX_DEVICES];

static long long env_ll(const char *name, long long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtoll(v, NULL, 10) : dflt;
}

static uint64_t now_ns(void) {
  if (!real_clock) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct CUctx_st *current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* The stream a handle names, in the calling thread's current context for
 * the special handles. NULL with *rc set when there is none. */
static struct CUstream_st *stream_of(CUstream h, CUresult *rc) {
  struct CUctx_st *c = current();
  if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    if (!c) {
      st.calls_without_context++;
      *rc = CUDA_ERROR_INVALID_CONTEXT;
      return NULL;
    }
    if (h == CU_STREAM_PER_THREAD) {
      struct CUstream_st *s = &per_thread[c->device];
      if (s->magic != ST_MAGIC) *s = (struct CUstream_st){ST_MAGIC, c, 0, 0};
      return s;
    }
    return c->legacy;
  }
  struct CUstream_st *s = (struct CUstream_st *)h;
  if (s->magic != ST_MAGIC) {
    st.bad_handles++;
    *rc = CUDA_ERROR_INVALID_HANDLE;
    return NULL;
  }
  return s;
}

static int done(const struct CUevent_st *e) {
  if (real_clock) return now_ns() >= e->t;
  return seq - e->seq >= lag || e->seq <= ctx_synced || e->seq <= e->stream->synced;
}

static void wait_until(uint64_t t) {
  uint64_t n = now_ns();
  if (!real_clock || n >= t) return;
  struct timespec ts = {(time_t)((t - n) / 1000000000u), (long)((t - n) % 1000000000u)};
  nanosleep(&ts, NULL);
}

#define ENTER()                                 \
  pthread_mutex_lock(&lock);                    \
  if (!initialised) {                           \
    pthread_mutex_unlock(&lock);                \
    return CUDA_ERROR_NOT_INITIALIZED;          \
  }
#define LEAVE(rc)                               \
  do {                                          \
    CUresult rc_ = (rc);                        \
    pthread_mutex_unlock(&lock);                \
    return rc_;                                 \
  } while (0)

MOCK_API CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  pthread_mutex_lock(&lock);
  int err = (int)env_ll("SP_MOCK_CUDA_INIT_ERROR", 0);
  ndevices = (int)env_ll("SP_MOCK_CUDA_DEVICES", 1);
  if (ndevices > MAX_DEVICES) ndevices = MAX_DEVICES;
  if (err || ndevices <= 0) {
    pthread_mutex_unlock(&lock);
    return err ? (CUresult)err : CUDA_ERROR_NO_DEVICE;
  }
  if (!initialised) {
    max_events = env_ll("SP_MOCK_CUDA_MAX_EVENTS", -1);
    record_fail_after = env_ll("SP_MOCK_CUDA_RECORD_FAIL_AFTER", -1);
    record_error = (int)env_ll("SP_MOCK_CUDA_RECORD_ERROR", CUDA_ERROR_ILLEGAL_ADDRESS);
    lag = (uint64_t)env_ll("SP_MOCK_CUDA_LAG", 0);
    const char *clk = getenv("SP_MOCK_CUDA_CLOCK");
    real_clock = clk && !strcmp(clk, "real");
    for (int d = 0; d < MAX_DEVICES; d++) {
      primary[d] = (struct CUctx_st){CTX_MAGIC, d, &legacy[d]};
      legacy[d] = (struct CUstream_st){ST_MAGIC, &primary[d], 0, 0};
    }
    initialised = 1;
  }
  pthread_mutex_unlock(&lock);
  return CUDA_SUCCESS;
}

MOCK_API CUresult CUDAAPI cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}

MOCK_API CUresult CUDAAPI cuDeviceGetCount(int *count) {
  ENTER();
  *count = ndevices;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuDeviceGet(CUdevice *dev, int ordinal) {
  ENTER();
  if (ordinal < 0 || ordinal >= ndevices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  *dev = ordinal;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  ENTER();
  if (dev < 0 || dev >= ndevices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  snprintf(name, (size_t)len, "scope-profiler mock GPU %d", dev);
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  ENTER();
  if (dev < 0 || dev >= ndevices) LEAVE(CUDA_ERROR_INVALID_DEVICE);
  st.primary_retains++;
  *ctx = &primary[dev];
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTER();
  LEAVE(dev < 0 || dev >= ndevices ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *ctx) {
  ENTER();
  *ctx = current();
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  ENTER();
  if (ctx && ((struct CUctx_st *)ctx)->magic != CTX_MAGIC) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  st.set_current++;
  if (!ctx) {
    if (ctx_depth) ctx_depth--;
  } else if (ctx_depth) {
    ctx_stack[ctx_depth - 1] = ctx;
  } else {
    ctx_stack[ctx_depth++] = ctx;
  }
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  ENTER();
  if (!ctx || ((struct CUctx_st *)ctx)->magic != CTX_MAGIC) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  if (ctx_depth == CTX_STACK) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  st.push_current++;
  ctx_stack[ctx_depth++] = ctx;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *ctx) {
  ENTER();
  if (!ctx_depth) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  st.pop_current++;
  struct CUctx_st *c = ctx_stack[--ctx_depth];
  if (ctx) *ctx = c;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuCtxSynchronize(void) {
  ENTER();
  if (!current()) LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  st.ctx_syncs++;
  ctx_synced = seq;
  uint64_t t = 0;
  for (int d = 0; d < ndevices; d++)
    if (legacy[d].tail > t) t = legacy[d].tail;
  pthread_mutex_unlock(&lock);
  wait_until(t);
  return CUDA_SUCCESS;
}

MOCK_API CUresult CUDAAPI cuStreamCreate(CUstream *out, unsigned int flags) {
  (void)flags;
  ENTER();
  struct CUctx_st *c = current();
  if (!c) {
    st.calls_without_context++;
    LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  }
  if (nstreams == MAX_STREAMS) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  streams[nstreams++] = s; /* kept for the process: events may point at it */
  *s = (struct CUstream_st){ST_MAGIC, c, 0, 0};
  *out = s;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream h) {
  ENTER();
  struct CUstream_st *s = (struct CUstream_st *)h;
  if (!s || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD || s->magic != ST_MAGIC)
    LEAVE(CUDA_ERROR_INVALID_HANDLE);
  s->magic = 0; /* events recorded on it keep pointing here: never freed */
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
  CUresult rc = CUDA_SUCCESS;
  ENTER();
  struct CUstream_st *s = stream_of(h, &rc);
  if (!s) LEAVE(rc);
  st.stream_syncs++;
  s->synced = seq;
  uint64_t t = s->tail;
  pthread_mutex_unlock(&lock);
  wait_until(t);
  return CUDA_SUCCESS;
}

MOCK_API CUresult CUDAAPI cuEventCreate(CUevent *out, unsigned int flags) {
  (void)flags;
  ENTER();
  struct CUctx_st *c = current();
  if (!c) {
    st.calls_without_context++;
    LEAVE(CUDA_ERROR_INVALID_CONTEXT);
  }
  if (max_events >= 0 && (long long)st.live >= max_events) {
    st.create_failures++;
    LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  }
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) LEAVE(CUDA_ERROR_OUT_OF_MEMORY);
  e->magic = EV_MAGIC;
  e->ctx = c;
  st.created++;
  if (++st.live > st.max_live) st.max_live = st.live;
  *out = e;
  LEAVE(CUDA_SUCCESS);
}

static struct CUevent_st *event_of(CUevent h) {
  struct CUevent_st *e = (struct CUevent_st *)h;
  if (!e || e->magic != EV_MAGIC) {
    st.bad_handles++;
    return NULL;
  }
  return e;
}

MOCK_API CUresult CUDAAPI cuEventDestroy_v2(CUevent h) {
  ENTER();
  struct CUevent_st *e = event_of(h);
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  e->magic = 0;
  free(e);
  st.destroyed++;
  st.live--;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuEventRecord(CUevent h, CUstream sh) {
  CUresult rc = CUDA_SUCCESS;
  ENTER();
  struct CUevent_st *e = event_of(h);
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  struct CUstream_st *s = stream_of(sh, &rc);
  if (!s) LEAVE(rc);
  if (s->ctx != e->ctx) { /* an event of another context */
    st.bad_handles++;
    LEAVE(CUDA_ERROR_INVALID_HANDLE);
  }
  if (record_fail_after >= 0 && (long long)st.records >= record_fail_after) {
    st.record_failures++;
    LEAVE((CUresult)record_error);
  }
  st.records++;
  uint64_t n = now_ns();
  e->recorded = 1;
  e->t = s->tail > n ? s->tail : n;
  e->seq = ++seq;
  e->stream = s;
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuEventQuery(CUevent h) {
  ENTER();
  struct CUevent_st *e = event_of(h);
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  st.queries++;
  seq++;
  if (e->recorded && !done(e)) {
    st.not_ready++;
    LEAVE(CUDA_ERROR_NOT_READY);
  }
  LEAVE(CUDA_SUCCESS);
}

MOCK_API CUresult CUDAAPI cuEventSynchronize(CUevent h) {
  ENTER();
  struct CUevent_st *e = event_of(h);
  if (!e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  st.event_syncs++;
  if (!e->recorded) LEAVE(CUDA_SUCCESS);
  if (e->seq > e->stream->synced) e->stream->synced = e->seq; /* covers earlier ones too */
  uint64_t t = e->t;
  pthread_mutex_unlock(&lock);
  wait_until(t);
  return CUDA_SUCCESS;
}

MOCK_API CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  ENTER();
  struct CUevent_st *s = event_of(a), *e = event_of(b);
  if (!s || !e) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  st.elapsed_calls++;
  if (!s->recorded || !e->recorded) LEAVE(CUDA_ERROR_INVALID_HANDLE);
  if (!done(s) || !done(e)) {
    st.not_ready++;
    LEAVE(CUDA_ERROR_NOT_READY);
  }
  *ms = (float)(((double)e->t - (double)s->t) / 1e6);
  LEAVE(CUDA_SUCCESS);
}

static const struct { int code; const char *name, *text; } errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

MOCK_API CUresult CUDAAPI cuGetErrorName(CUresult rc, const char **out) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == (int)rc) {
      *out = errors[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

MOCK_API CUresult CUDAAPI cuGetErrorString(CUresult rc, const char **out) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == (int)rc) {
      *out = errors[i].text;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/*====== Test-only entry points (mock_cuda.h) ======*/

MOCK_API void mock_cuda_launch(void *stream, uint64_t ns) {
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&lock);
  struct CUstream_st *s = initialised ? stream_of((CUstream)stream, &rc) : NULL;
  if (s) {
    uint64_t n = now_ns();
    s->tail = (s->tail > n ? s->tail : n) + ns;
  }
  pthread_mutex_unlock(&lock);
}

MOCK_API void mock_cuda_get_stats(struct mock_cuda_stats *out) {
  pthread_mutex_lock(&lock);
  *out = st;
  pthread_mutex_unlock(&lock);
}
