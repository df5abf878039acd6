/* cuda_api.h - the few CUDA driver API types, constants and entry points GPU
 * timing uses, declared here so the library builds without the CUDA toolkit
 * and never links libcuda: the driver is loaded at setup with
 * dlopen("libcuda.so.1") (whose name is stable across CUDA versions, unlike
 * libcudart.so.N) and its entry points are looked up by name.
 *
 * The values and signatures are those of the driver ABI (cuda.h); the unit
 * test test-gpu.c checks them against the real cuda.h when the toolkit is
 * installed, and the mock driver in tests/mock_cuda/ is compiled against it.
 * The struct tags are cuda.h's own, so the handle types are the same types.
 */
#ifndef SP_CUDA_API_H
#define SP_CUDA_API_H

#include <stddef.h>

typedef int sp__CUresult;
typedef int sp__CUdevice;
typedef struct CUctx_st *sp__CUcontext;
typedef struct CUstream_st *sp__CUstream;
typedef struct CUevent_st *sp__CUevent;

enum {
  SP__CUDA_SUCCESS = 0,
  SP__CUDA_ERROR_OUT_OF_MEMORY = 2,
  SP__CUDA_ERROR_NOT_INITIALIZED = 3,
  SP__CUDA_ERROR_DEINITIALIZED = 4,
  SP__CUDA_ERROR_NO_DEVICE = 100,
  SP__CUDA_ERROR_INVALID_CONTEXT = 201,
  SP__CUDA_ERROR_INVALID_HANDLE = 400,
  SP__CUDA_ERROR_NOT_READY = 600,
  SP__CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
};
#define SP__CU_EVENT_DEFAULT 0u /* timing enabled, spin on synchronize */

/* The entry points, looked up once per process. Where the driver has
 * versioned symbols (cuEventDestroy_v2, ...) the newest one we know is tried
 * first, then the original name. */
struct sp__cuda {
  int driver_version;   /* cuDriverGetVersion: 13000 for CUDA 13.0 */
  int ndevices;
  char device0_name[128];
  sp__CUresult (*Init)(unsigned flags);
  sp__CUresult (*DriverGetVersion)(int *version);
  sp__CUresult (*DeviceGetCount)(int *count);
  sp__CUresult (*DeviceGet)(sp__CUdevice *dev, int ordinal);
  sp__CUresult (*DeviceGetName)(char *name, int len, sp__CUdevice dev);
  sp__CUresult (*DevicePrimaryCtxRetain)(sp__CUcontext *ctx, sp__CUdevice dev);
  sp__CUresult (*DevicePrimaryCtxRelease)(sp__CUdevice dev);
  sp__CUresult (*CtxGetCurrent)(sp__CUcontext *ctx);
  sp__CUresult (*CtxSetCurrent)(sp__CUcontext ctx);
  sp__CUresult (*CtxPushCurrent)(sp__CUcontext ctx);
  sp__CUresult (*CtxPopCurrent)(sp__CUcontext *ctx);
  sp__CUresult (*EventCreate)(sp__CUevent *ev, unsigned flags);
  sp__CUresult (*EventRecord)(sp__CUevent ev, sp__CUstream stream);
  sp__CUresult (*EventQuery)(sp__CUevent ev);
  sp__CUresult (*EventSynchronize)(sp__CUevent ev);
  sp__CUresult (*EventElapsedTime)(float *ms, sp__CUevent start, sp__CUevent end);
  sp__CUresult (*EventDestroy)(sp__CUevent ev);
  sp__CUresult (*StreamSynchronize)(sp__CUstream stream);
  sp__CUresult (*GetErrorName)(sp__CUresult err, const char **name);
  sp__CUresult (*GetErrorString)(sp__CUresult err, const char **text);
};

/* The process-wide driver: loaded, initialised (cuInit) and checked for a
 * device on the first call; later calls return the same outcome. NULL when it
 * is not usable, with the reason in `why` ("no CUDA device: cuInit returned
 * CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"). The library
 * named by $SCOPE_PROFILER_CUDA_LIBRARY (a name or a path) is loaded instead
 * of libcuda.so.1 when set. Thread-safe. */
const struct sp__cuda *sp__cuda_driver(char *why, size_t whylen);

/* "CUDA_ERROR_NOT_READY" for a driver error code; the number when the driver
 * does not know it. Writes into buf and returns it. */
const char *sp__cuda_error_name(const struct sp__cuda *d, sp__CUresult rc, char *buf, size_t n);

#endif
