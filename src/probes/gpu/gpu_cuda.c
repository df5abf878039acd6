/* gpu_cuda.c - the "cuda" timing backend: CUDA events through the driver API
 * loaded by cuda_driver.c.
 *
 * Contexts: a thread's timing is bound, at its first timed call, to the CUDA
 * context current on it then (the one cudaSetDevice or the first runtime call
 * made current, or the user's cuCtxSetCurrent). A thread with no current
 * context gets device 0's primary context, made current on it: the context
 * the runtime API would pick on its first call anyway. Events are recorded on
 * the stream of the call (the legacy default stream unless the manager, the
 * thread or the region names one). Finalize resolves other threads' events
 * with their context pushed for the duration, so it works from any thread.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "probes/gpu/cuda_api.h"
#include "probes/gpu/gpu_cuda.h"

struct cuda_be {
  const struct sp__cuda *d;
  pthread_mutex_t lock;
  int primary_state; /* 0 not retained, 1 retained, <0 the error */
  sp__CUcontext primary;
};

static struct cuda_be the_be = {NULL, PTHREAD_MUTEX_INITIALIZER, 0, NULL};

static int primary_ctx(struct cuda_be *b, sp__CUcontext *ctx) {
  pthread_mutex_lock(&b->lock);
  if (b->primary_state == 0) {
    sp__CUdevice dev;
    sp__CUresult rc = b->d->DeviceGet(&dev, 0);
    if (rc == SP__CUDA_SUCCESS) rc = b->d->DevicePrimaryCtxRetain(&b->primary, dev);
    b->primary_state = rc == SP__CUDA_SUCCESS ? 1 : (rc > 0 ? -rc : -1);
  }
  int st = b->primary_state;
  *ctx = b->primary;
  pthread_mutex_unlock(&b->lock);
  return st > 0 ? 0 : -st;
}

static int cu_bind(void *bev, void **ts) {
  struct cuda_be *b = bev;
  sp__CUcontext ctx = NULL;
  sp__CUresult rc = b->d->CtxGetCurrent(&ctx);
  if (rc != SP__CUDA_SUCCESS) return rc;
  if (!ctx) {
    if ((rc = primary_ctx(b, &ctx)) != 0) return rc;
    if ((rc = b->d->CtxSetCurrent(ctx)) != SP__CUDA_SUCCESS) return rc;
  }
  *ts = ctx; /* the binding is the context itself */
  return 0;
}

static int cu_enter(void *bev, void *ts) {
  struct cuda_be *b = bev;
  return b->d->CtxPushCurrent((sp__CUcontext)ts);
}

static void cu_leave(void *bev, void *ts) {
  struct cuda_be *b = bev;
  sp__CUcontext popped;
  (void)ts;
  (void)b->d->CtxPopCurrent(&popped);
}

static int cu_create(void *bev, void *ts, void **ev) {
  struct cuda_be *b = bev;
  sp__CUevent e = NULL;
  (void)ts;
  sp__CUresult rc = b->d->EventCreate(&e, SP__CU_EVENT_DEFAULT);
  *ev = e;
  return rc;
}

static void cu_destroy(void *bev, void *ts, void *ev) {
  struct cuda_be *b = bev;
  (void)ts;
  (void)b->d->EventDestroy((sp__CUevent)ev);
}

static int cu_record(void *bev, void *ts, void *stream, void **ev) {
  struct cuda_be *b = bev;
  (void)ts;
  return b->d->EventRecord((sp__CUevent)*ev, (sp__CUstream)stream);
}

static int cu_elapsed(void *bev, void *ts, void *start, void *end, int wait, int64_t *ns) {
  struct cuda_be *b = bev;
  (void)ts;
  /* The end event done means the start is too when both are on one stream;
   * a call whose stream changed in between waits for its start as well. */
  sp__CUresult rc = wait ? b->d->EventSynchronize((sp__CUevent)end) : b->d->EventQuery((sp__CUevent)end);
  if (rc == SP__CUDA_ERROR_NOT_READY) return SP__GPU_NOT_READY;
  if (rc != SP__CUDA_SUCCESS) return rc;
  float ms = 0;
  rc = b->d->EventElapsedTime(&ms, (sp__CUevent)start, (sp__CUevent)end);
  if (rc == SP__CUDA_ERROR_NOT_READY) {
    if (!wait) return SP__GPU_NOT_READY;
    if ((rc = b->d->EventSynchronize((sp__CUevent)start)) != SP__CUDA_SUCCESS) return rc;
    rc = b->d->EventElapsedTime(&ms, (sp__CUevent)start, (sp__CUevent)end);
  }
  if (rc != SP__CUDA_SUCCESS) return rc;
  /* ms as a float: exact to well under a ns up to about 8 ms, and the
   * driver's own resolution is about half a microsecond. */
  double v = (double)ms * 1e6;
  *ns = v > 0 ? (int64_t)llround(v) : 0;
  return SP__GPU_DONE;
}

static int cu_sync(void *bev, void *ts, void *stream) {
  struct cuda_be *b = bev;
  (void)ts;
  return b->d->StreamSynchronize((sp__CUstream)stream);
}

static const char *cu_error_name(void *bev, int code, char *buf, size_t n) {
  struct cuda_be *b = bev;
  return sp__cuda_error_name(b->d, code, buf, n);
}

int sp__gpu_cuda_backend(struct sp__gpu_backend *out, char *why, size_t whylen) {
  const struct sp__cuda *d = sp__cuda_driver(why, whylen);
  if (!d) return -1;
  the_be.d = d;
  *out = (struct sp__gpu_backend){
      .name = "cuda",
      .be = &the_be,
      .bind = cu_bind,
      .enter = cu_enter,
      .leave = cu_leave,
      .create = cu_create,
      .destroy = cu_destroy,
      .record = cu_record,
      .elapsed = cu_elapsed,
      .sync = cu_sync,
      .error_name = cu_error_name,
  };
  return 0;
}

const char *sp__gpu_cuda_device(int *driver_version, int *ndevices) {
  const struct sp__cuda *d = sp__cuda_driver(NULL, 0);
  if (!d) return NULL;
  if (driver_version) *driver_version = d->driver_version;
  if (ndevices) *ndevices = d->ndevices;
  return d->device0_name;
}
