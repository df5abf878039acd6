/* scope_profiler/gpu.h - GPU time per region: the callbacks backend and the
 * stream a region's device time is measured on.
 *
 * With use_gpu_timing, every call of a region takes a device timestamp on
 * its stream at begin and at end, and the file stores the device time
 * between them per call (events/gpu_durations, int64 ns, -1 where a call has
 * none) and per region (gpu_count/gpu_total in summary_statistics). The CPU
 * timeline stays enqueue-side unless gpu_sync_on_exit waits for the stream
 * at every region exit. The device is never waited for otherwise: elapsed
 * times are read when the device has reached them, at the latest at finalize.
 *
 * gpu_timing_backend picks where timestamps come from:
 *   "cuda"       CUDA events through the driver (libcuda.so.1, loaded at
 *                setup; no link-time CUDA dependency);
 *   "callbacks"  the functions registered below, for HIP, SYCL, OpenCL or a
 *                vendor library: the C counterpart of the Python package's
 *                object with record_event() and elapsed_time_ns();
 *   "auto"       the callbacks when registered, else CUDA when a device is
 *                usable, else GPU timing off with one warning.
 */
#ifndef SCOPE_PROFILER_GPU_H
#define SCOPE_PROFILER_GPU_H

#include <stdint.h>

#include "scope_profiler/export.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* elapsed_ns() result: the device has not reached `end` yet. */
#define SP_GPU_NOT_READY 1

/* A timing backend of your own. The functions are called from the threads
 * that record regions (concurrently when several do) and, at finalize, from
 * the finalizing thread: they must be thread-safe. */
typedef struct sp_gpu_callbacks {
  uint32_t size; /* sizeof(sp_gpu_callbacks): lets the struct grow */
  void *user;    /* passed back to every function */
  /* Take a device timestamp on `stream` (the call's stream: NULL unless one
   * was named) and return its handle in *event. 0, or an error code of yours
   * (the call is then untimed and the code is reported at finalize). */
  int (*record)(void *user, void *stream, void **event);
  /* Device nanoseconds from `start` to `end` into *ns: 0 when done,
   * SP_GPU_NOT_READY while the device has not reached `end` (asked again
   * later; never answer it when `wait` is nonzero: block instead), or an
   * error code of yours. */
  int (*elapsed_ns)(void *user, void *start, void *end, int wait, int64_t *ns);
  /* Optional: `event` is no longer needed (after its pair was read). */
  void (*release)(void *user, void *event);
  /* Optional: wait until the work queued on `stream` is done, for
   * gpu_sync_on_exit. Without it, sync_on_exit waits through elapsed_ns. */
  int (*synchronize)(void *user, void *stream);
  /* Optional: a name for one of your error codes, for the finalize report. */
  const char *(*error_name)(void *user, int code);
} sp_gpu_callbacks;

struct sp_manager;

/** Register the callbacks backend on `m` (copied; NULL unregisters). Takes
 * effect at the next setup: gpu_timing_backend "callbacks" requires it and
 * "auto" prefers it. SP_ERR_INVALID_ARGUMENT when `size`, `record` or
 * `elapsed_ns` is missing. */
SP_API sp_status sp_manager_set_gpu_callbacks(struct sp_manager *m, const sp_gpu_callbacks *cb);

/** The stream (a CUstream with the cuda backend, anything your record()
 * understands with callbacks) every timed call of `m` records on, from the
 * next call on; NULL, the default, is the legacy default stream, which
 * orders itself against all blocking streams of its context. With the cuda
 * backend, (void *)2 (CU_STREAM_PER_THREAD) gives each thread its own
 * default stream: the usual choice for OpenMP programs. */
SP_API sp_status sp_manager_set_gpu_stream(struct sp_manager *m, void *stream);

/** The stream of region `r`'s calls (an sp_region) on `m`, overriding the
 * manager's, from the region's next call on. */
SP_API sp_status sp_manager_set_region_gpu_stream(struct sp_manager *m, uint32_t r, void *stream);

#ifdef __cplusplus
}
#endif
#endif
