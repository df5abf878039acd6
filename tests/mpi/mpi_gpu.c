/* mpi_gpu.c - use_gpu_timing in an MPI job (tests/mpi/run.sh gpu): every
 * rank times "kernel" calls on the test suite's mock CUDA driver with a
 * device time of its own ((rank + 1) * 1000 ns), except rank 1, which is
 * given no driver at all (as a node without a GPU would be) and so supplies
 * no GPU column: the job's file must still have events/gpu_durations, with
 * -1 for rank 1's calls, and the right gpu_count/gpu_total per row
 * (checked by check_mpi.py --gpu). Settings come from the environment. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "scope_profiler.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  setenv("SCOPE_PROFILER_CUDA_LIBRARY", rank == 1 ? "/nonexistent/libcuda.so.1" : SP_MOCK_CUDA, 1);
  const char *ov[] = {"use_gpu_timing=true", "quiet=true", NULL};
  sp_setup_args a = {.overrides = ov};
  if (sp_setup(&a) != SP_OK) {
    fprintf(stderr, "mpi_gpu: setup failed: %s\n", sp_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  void (*launch)(void *, uint64_t) = NULL;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) launch = (void (*)(void *, uint64_t))(uintptr_t)dlsym(h, "mock_cuda_launch");
  if (rank != 1 && !launch) {
    fprintf(stderr, "mpi_gpu: rank %d: the mock driver is not loaded\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  sp_region k = sp_region_intern("kernel"), host = sp_region_intern("host");
  for (int i = 0; i < 20; i++) {
    sp_begin(k);
    if (launch) launch(NULL, (uint64_t)(rank + 1) * 1000);
    sp_end(k);
    sp_begin(host);
    sp_end(host);
  }
  sp_finalize_args f = {0};
  int rc = sp_finalize(&f, NULL) == SP_OK ? 0 : 1;
  MPI_Finalize();
  return rc;
}
