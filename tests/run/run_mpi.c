/* run_mpi.c - an MPI program that knows nothing of scope-profiler, for
 * `mpirun -np N scope-profiler run -- run-mpi` (tests/integration/
 * test_run.sh): every rank works a little and meets the others. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  volatile double x = 0;
  for (int i = 0; i < 1000000 * (rank + 1); i++) x += i * 0.5;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("run_mpi: %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
