/* gpu_callbacks.c - the "callbacks" timing backend: device timestamps from
 * functions the program registered (scope_profiler/gpu.h), for HIP, SYCL,
 * OpenCL or any library with timestamped events.
 *
 * The user's record() makes a handle per timestamp, so the pool keeps no
 * free list for this backend: handles go back through release() once their
 * pair has been read. Error codes are the user's own; SP_GPU_NOT_READY is the
 * one value with a meaning here.
 */
#include <stdio.h>
#include <string.h>

#include "probes/gpu/gpu_cuda.h"

static int cb_record(void *be, void *ts, void *stream, void **ev) {
  const sp_gpu_callbacks *cb = be;
  (void)ts;
  *ev = NULL;
  int rc = cb->record(cb->user, stream, ev);
  return rc == SP__GPU_NOT_READY ? -1 : rc;
}

static int cb_elapsed(void *be, void *ts, void *start, void *end, int wait, int64_t *ns) {
  const sp_gpu_callbacks *cb = be;
  (void)ts;
  int rc = cb->elapsed_ns(cb->user, start, end, wait, ns);
  if (rc == SP_GPU_NOT_READY) return SP__GPU_NOT_READY;
  return rc == SP__GPU_NOT_READY ? -1 : rc;
}

static void cb_release(void *be, void *ts, void *ev) {
  const sp_gpu_callbacks *cb = be;
  (void)ts;
  if (cb->release) cb->release(cb->user, ev);
}

static int cb_sync(void *be, void *ts, void *stream) {
  const sp_gpu_callbacks *cb = be;
  (void)ts;
  return cb->synchronize(cb->user, stream);
}

static const char *cb_error_name(void *be, int code, char *buf, size_t n) {
  const sp_gpu_callbacks *cb = be;
  const char *s = cb->error_name ? cb->error_name(cb->user, code) : NULL;
  if (s)
    snprintf(buf, n, "%s", s);
  else
    snprintf(buf, n, "error %d of the registered callbacks", code);
  return buf;
}

int sp__gpu_callbacks_backend(struct sp__gpu_backend *out, sp_gpu_callbacks *store,
                              const sp_gpu_callbacks *cb, char *why, size_t whylen) {
  if (!cb || cb->size < offsetof(sp_gpu_callbacks, release) || !cb->record || !cb->elapsed_ns) {
    snprintf(why, whylen, "the GPU callbacks need size = sizeof(sp_gpu_callbacks) and both record "
                          "and elapsed_ns; fill them in before sp_manager_set_gpu_callbacks()");
    return -1;
  }
  memset(store, 0, sizeof *store);
  memcpy(store, cb, cb->size < sizeof *store ? cb->size : sizeof *store);
  store->size = sizeof *store;
  *out = (struct sp__gpu_backend){
      .name = "callbacks",
      .be = store,
      .destroy = cb_release,
      .record = cb_record,
      .elapsed = cb_elapsed,
      .sync = store->synchronize ? cb_sync : NULL,
      .error_name = cb_error_name,
  };
  return 0;
}
