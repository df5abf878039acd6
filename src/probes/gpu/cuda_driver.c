/* cuda_driver.c - loads the CUDA driver library at run time and checks that a
 * device is usable, once per process.
 *
 * The driver is opened with dlopen (RTLD_LOCAL: its symbols never interpose
 * on the program's) and never closed: CUDA contexts and the runtime may still
 * use it at exit, and unloading a driver under live contexts is not safe. A
 * failure (no library, a symbol missing from a very old driver, cuInit
 * refusing, zero devices) is remembered with its reason, so every manager of
 * the process reports the same thing without trying again.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/gpu/cuda_api.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_state; /* 0 not tried, 1 usable, -1 not usable */
static struct sp__cuda drv;
static char load_why[512];

/* Symbols by preference. A function pointer cannot be assigned from dlsym's
 * void * in ISO C; copying the bytes is the sanctioned POSIX spelling. */
struct sym {
  size_t off;
  const char *names[3];
};
#define SP__SYM(field, ...) {offsetof(struct sp__cuda, field), {__VA_ARGS__}}
static const struct sym syms[] = {
    SP__SYM(Init, "cuInit"),
    SP__SYM(DriverGetVersion, "cuDriverGetVersion"),
    SP__SYM(DeviceGetCount, "cuDeviceGetCount"),
    SP__SYM(DeviceGet, "cuDeviceGet"),
    SP__SYM(DeviceGetName, "cuDeviceGetName"),
    SP__SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SP__SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    SP__SYM(CtxGetCurrent, "cuCtxGetCurrent"),
    SP__SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SP__SYM(CtxPushCurrent, "cuCtxPushCurrent_v2", "cuCtxPushCurrent"),
    SP__SYM(CtxPopCurrent, "cuCtxPopCurrent_v2", "cuCtxPopCurrent"),
    SP__SYM(EventCreate, "cuEventCreate"),
    SP__SYM(EventRecord, "cuEventRecord"),
    SP__SYM(EventQuery, "cuEventQuery"),
    SP__SYM(EventSynchronize, "cuEventSynchronize"),
    SP__SYM(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SP__SYM(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
    SP__SYM(StreamSynchronize, "cuStreamSynchronize"),
    SP__SYM(GetErrorName, "cuGetErrorName"),
    SP__SYM(GetErrorString, "cuGetErrorString"),
};

const char *sp__cuda_error_name(const struct sp__cuda *d, sp__CUresult rc, char *buf, size_t n) {
  const char *name = NULL;
  if (d && d->GetErrorName && d->GetErrorName(rc, &name) == SP__CUDA_SUCCESS && name)
    snprintf(buf, n, "%s", name);
  else
    snprintf(buf, n, "CUDA error %d", rc);
  return buf;
}

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
static void describe(const struct sp__cuda *d, sp__CUresult rc, char *buf, size_t n) {
  char name[96];
  const char *text = NULL;
  sp__cuda_error_name(d, rc, name, sizeof name);
  if (d->GetErrorString && d->GetErrorString(rc, &text) == SP__CUDA_SUCCESS && text)
    snprintf(buf, n, "%s (%s)", name, text);
  else
    snprintf(buf, n, "%s", name);
}

static int load(void) {
  const char *lib = getenv("SCOPE_PROFILER_CUDA_LIBRARY");
  int from_env = lib && *lib;
  if (!from_env) lib = "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(load_why, sizeof load_why,
             "the CUDA driver library %s cannot be loaded (%s); install the NVIDIA driver%s",
             lib, e ? e : "not found",
             from_env ? ", or correct SCOPE_PROFILER_CUDA_LIBRARY"
                      : ", or name its path in SCOPE_PROFILER_CUDA_LIBRARY");
    return -1;
  }
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = NULL;
    for (int k = 0; k < 3 && syms[i].names[k] && !p; k++) p = dlsym(h, syms[i].names[k]);
    if (!p) {
      snprintf(load_why, sizeof load_why,
               "the CUDA driver library %s has no %s (a driver this old is not supported; update the NVIDIA driver)",
               lib, syms[i].names[0]);
      return -1; /* h stays open: dlclose of a half-initialised driver is not worth the risk */
    }
    memcpy((char *)&drv + syms[i].off, &p, sizeof p);
  }
  char what[256];
  sp__CUresult rc = drv.Init(0);
  if (rc != SP__CUDA_SUCCESS) {
    describe(&drv, rc, what, sizeof what);
    snprintf(load_why, sizeof load_why, "%s: cuInit returned %s",
             rc == SP__CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "the CUDA driver cannot start", what);
    return -1;
  }
  if (drv.DriverGetVersion(&drv.driver_version) != SP__CUDA_SUCCESS) drv.driver_version = 0;
  int n = 0;
  rc = drv.DeviceGetCount(&n);
  if (rc != SP__CUDA_SUCCESS || n <= 0) {
    if (rc != SP__CUDA_SUCCESS) describe(&drv, rc, what, sizeof what);
    snprintf(load_why, sizeof load_why, "no CUDA device: cuDeviceGetCount %s%s",
             rc != SP__CUDA_SUCCESS ? "returned " : "found 0 devices",
             rc != SP__CUDA_SUCCESS ? what : "");
    return -1;
  }
  drv.ndevices = n;
  sp__CUdevice dev;
  if (drv.DeviceGet(&dev, 0) != SP__CUDA_SUCCESS ||
      drv.DeviceGetName(drv.device0_name, (int)sizeof drv.device0_name, dev) != SP__CUDA_SUCCESS)
    snprintf(drv.device0_name, sizeof drv.device0_name, "unknown");
  drv.device0_name[sizeof drv.device0_name - 1] = '\0';
  return 1;
}

const struct sp__cuda *sp__cuda_driver(char *why, size_t whylen) {
  pthread_mutex_lock(&load_lock);
  if (load_state == 0) load_state = load();
  int st = load_state;
  pthread_mutex_unlock(&load_lock);
  if (st > 0) return &drv;
  if (why && whylen) snprintf(why, whylen, "%s", load_why);
  return NULL;
}
