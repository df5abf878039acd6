/* consumer_mpi.c - a tiny outside MPI program built against an installed
 * libscope_profiler_mpi (CMake package, shared and static, and pkg-config
 * with mpicc; tests/mpi/run.sh install). Its MPI_Barrier must be recorded
 * when SCOPE_PROFILER_PROFILE_MPI_CALLS=1: the PMPI wrappers interpose. */
#include <mpi.h>
#include <stdio.h>

#include "scope_profiler.h"
#include "scope_profiler/mpi.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (sp_setup(NULL) != SP_OK) {
    fprintf(stderr, "setup: %s\n", sp_last_error());
    rc = 1;
  }
  for (int i = 0; i < 3; i++) {
    SP_REGION("consumer");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (sp_finalize(NULL, NULL) != SP_OK) {
    fprintf(stderr, "finalize: %s\n", sp_last_error());
    rc = 1;
  }
  if (!sp_mpi_in_use()) {
    fprintf(stderr, "MPI is not in use\n");
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
