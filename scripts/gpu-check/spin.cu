// spin.cu - kernels of known duration for scripts/gpu-check.sh: one thread
// spins on the GPU's nanosecond global timer until `ns` have passed, so a
// region around a launch has a device time the check can predict.
#include <cuda_runtime.h>

__global__ void sp_check_spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" int sp_check_spin(void *stream, unsigned long long ns) {
  sp_check_spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
  return (int)cudaGetLastError();
}

extern "C" int sp_check_stream_create(void **stream) {
  cudaStream_t s;
  int rc = (int)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  *stream = s;
  return rc;
}

extern "C" int sp_check_device_sync(void) { return (int)cudaDeviceSynchronize(); }

extern "C" int sp_check_set_device(int d) { return (int)cudaSetDevice(d); }
