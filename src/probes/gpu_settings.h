/* gpu_settings.h - the GPU timing and NVTX settings ([profiling.gpu]). One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_GPU_SETTINGS_H
#define SP_PROBES_GPU_SETTINGS_H

#define SP_GROUP_GPU(G) \
  G(gpu, 1, "GPU", "Also spelled in the `[profiling.gpu]` table, or as `gpu.<field>`.")

#define SP__CHOICES_gpu_timing_backend(C) \
  C(SP__GPU_BACKEND_AUTO, "auto") \
  C(SP__GPU_BACKEND_CUDA, "cuda") \
  C(SP__GPU_BACKEND_CALLBACKS, "callbacks")

/* use_nvtx is built when the build found the NVTX3 headers (SP_HAVE_NVTX,
 * cmake/gpu.cmake); GPU timing needs no build switch (the driver is loaded
 * at setup). */
#ifdef SP_HAVE_NVTX
#define SP_NVTX_BUILT 1
#else
#define SP_NVTX_BUILT 0
#endif

#define SP_SETTINGS_GPU(X) \
  X(11, use_nvtx, gpu, nvtx, BOOL, 0, 0, 1, \
    "Emit NVTX ranges for NVIDIA Nsight tools around every region.", \
    BUILT_IF(SP_NVTX_BUILT, "SP_WITH_NVTX=ON and the NVTX3 headers of the CUDA toolkit")) \
  X(12, use_gpu_timing, gpu, timing, BOOL, 0, 0, 1, \
    "Record the device time of every region call (events/gpu_durations, gpu_count/gpu_total in the summary); CPU times stay enqueue-side.", READY) \
  X(13, gpu_timing_backend, gpu, backend, ENUM, SP__GPU_BACKEND_AUTO, 0, 0, \
    "Where device times come from: cuda (CUDA events through the driver, libcuda.so.1, loaded at setup), callbacks (functions registered with sp_manager_set_gpu_callbacks), or auto (the callbacks when registered, else cuda; GPU timing off with a warning when neither works).", READY) \
  X(14, gpu_sync_on_exit, gpu, sync_on_exit, BOOL, 0, 0, 1, \
    "Wait for the call's stream at region exit, before the CPU end time is taken (requires use_gpu_timing; removes CPU/GPU overlap).", READY)

#define SP_RULES_GPU(R) \
  R(CONFLICTS, aggregation_mode, use_gpu_timing, 0, 0, 0, "aggregation keeps only per-region totals, with no individual calls to attach GPU times to") \
  R(CONFLICTS, aggregation_mode, use_nvtx, 0, 0, 0, "aggregation keeps only per-region totals, with no individual calls to attach NVTX ranges to") \
  R(REQUIRES, gpu_sync_on_exit, use_gpu_timing, 0, 0, 0, "it waits for the device work that GPU timing records")

#endif
