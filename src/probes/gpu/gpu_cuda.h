/* gpu_cuda.h - the timing backends: CUDA events through the driver API
 * (gpu_cuda.c) and user callbacks (gpu_callbacks.c). */
#ifndef SP_GPU_CUDA_H
#define SP_GPU_CUDA_H

#include <stddef.h>

#include "probes/gpu/gpu_timer.h"
#include "scope_profiler/gpu.h"

/* Fill `out` with the CUDA backend; -1 with the reason in `why` when the
 * driver or a device is not usable (see sp__cuda_driver). */
int sp__gpu_cuda_backend(struct sp__gpu_backend *out, char *why, size_t whylen);

/* Device 0's name and the driver version for the run's metadata; NULL when
 * the driver is not usable. */
const char *sp__gpu_cuda_device(int *driver_version, int *ndevices);

/* Fill `out` with a backend over the user's callbacks (copied into *store,
 * which must outlive the backend). -1 with the reason when they are
 * incomplete. */
int sp__gpu_callbacks_backend(struct sp__gpu_backend *out, sp_gpu_callbacks *store,
                              const sp_gpu_callbacks *cb, char *why, size_t whylen);

#endif
