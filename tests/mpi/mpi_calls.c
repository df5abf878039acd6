/* mpi_calls.c - the profile_mpi_calls test program: inside one region
 * ("exchange") every rank makes a known set of MPI calls (point-to-point on a
 * ring, non-blocking with a wait, collectives, communicator creation, MPI-IO
 * on a shared file), so that tests/mpi/check_mpi.py --calls can check every
 * MPI region and its byte counts. Then:
 *
 *   - the first run's file is kept as <file_path>.run1.h5;
 *   - a second finalize must show no MPI call at all: the program made none
 *     since, and the profiler's own MPI traffic (parallel HDF5 included) must
 *     never be recorded as the program's;
 *   - with profile_mpi_calls off (SCOPE_PROFILER_PROFILE_MPI_CALLS=0) the
 *     first run must have no MPI region (checked here, through results).
 *
 * Settings come from the environment. Exit 0 when all is well.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"
#include "scope_profiler/reader.h"

static int failures;
#define CHECK(cond, ...)                              \
  do {                                                \
    if (!(cond)) {                                    \
      fprintf(stderr, "mpi_calls: FAILED %s: ", #cond); \
      fprintf(stderr, __VA_ARGS__);                   \
      fputc('\n', stderr);                            \
      failures++;                                     \
    }                                                 \
  } while (0)

static size_t mpi_regions(sp_results *r) {
  size_t n = 0;
  for (size_t i = 0; r && i < sp_results_num_regions(r); i++)
    if (!strncmp(sp_results_region_name(r, i), "MPI_", 4)) n++;
  return n;
}

static void exchange(int rank, int size, const char *io_path) {
  SP_REGION("exchange");
  double out[100], in[100];
  for (int i = 0; i < 100; i++) out[i] = rank + i;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  /* Ring: even ranks send first, so one rank or many never deadlock. */
  if (size == 1) {
    MPI_Request rq;
    MPI_Irecv(in, 100, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &rq);
    MPI_Send(out, 100, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Isend(out, 100, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &rq);
    MPI_Recv(in, 100, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
  } else if (rank % 2 == 0) {
    MPI_Send(out, 100, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
    MPI_Recv(in, 100, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(in, 100, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(out, 100, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
  }
  MPI_Request reqs[2];
  MPI_Irecv(in, 100, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &reqs[0]);
  MPI_Isend(out, 100, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &reqs[1]);
  /* real statuses: MPICH's MPI_STATUSES_IGNORE, (MPI_Status *)1, makes gcc
   * warn that Waitall writes through a pointer to nothing */
  MPI_Status sts[2];
  MPI_Waitall(2, reqs, sts);
  MPI_Status st;
  MPI_Sendrecv(out, 100, MPI_DOUBLE, right, 3, in, 100, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &st);

  MPI_Barrier(MPI_COMM_WORLD);
  int ten[10] = {0};
  MPI_Bcast(ten, 10, MPI_INT, 0, MPI_COMM_WORLD);
  double four[4] = {1, 2, 3, 4}, sum4[4];
  MPI_Allreduce(four, sum4, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double one = rank, *all = malloc((size_t)size * sizeof *all), *all2 = malloc((size_t)size * sizeof *all2);
  MPI_Gather(&one, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Allgather(&one, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < size; i++) all[i] = i;
  MPI_Alltoall(all, 1, MPI_DOUBLE, all2, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Request rq;
  MPI_Ibarrier(MPI_COMM_WORLD, &rq);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  double s1 = 1, r1 = 0;
  MPI_Iallreduce(&s1, &r1, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
  int done = 0;
  while (!done) MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
  free(all);
  free(all2);

  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&split);

  MPI_File fh;
  char block[1000];
  memset(block, 'a' + rank % 26, sizeof block);
  if (MPI_File_open(MPI_COMM_WORLD, io_path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS) {
    MPI_File_write_at_all(fh, (MPI_Offset)rank * 1000, block, 1000, MPI_CHAR, MPI_STATUS_IGNORE);
    /* MPI-IO's sync-barrier-sync: another rank may have written our block. */
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_read_at(fh, (MPI_Offset)rank * 1000, block, 1000, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
  } else {
    fprintf(stderr, "mpi_calls: MPI_File_open %s failed\n", io_path);
    failures++;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (sp_setup(NULL) != SP_OK) {
    fprintf(stderr, "mpi_calls: setup: %s\n", sp_last_error());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  const sp_config *cfg = sp_manager_config(SP_DEFAULT);
  int on = sp_config_profile_mpi_calls(cfg);
  char io_path[4200];
  snprintf(io_path, sizeof io_path, "%s.mpiio", sp_config_file_path(cfg));
  exchange(rank, size, io_path);

  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  CHECK(sp_finalize(&fin, &res) == SP_OK, "first finalize: %s", sp_last_error());
  if (rank == 0 && res) {
    if (on) CHECK(mpi_regions(res) >= 20, "only %zu MPI regions with profile_mpi_calls on", mpi_regions(res));
    else CHECK(mpi_regions(res) == 0, "%zu MPI regions with profile_mpi_calls off", mpi_regions(res));
  }
  sp_results_free(res);
  res = NULL;
  if (rank == 0) {
    char kept[4200];
    snprintf(kept, sizeof kept, "%s.run1.h5", sp_config_file_path(cfg));
    CHECK(rename(sp_config_file_path(cfg), kept) == 0, "keeping the first file as %s", kept);
    remove(io_path);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* the second run's only MPI call */
  CHECK(sp_finalize(&fin, &res) == SP_OK, "second finalize: %s", sp_last_error());
  /* The barrier above is the only MPI call since: nothing else may show. */
  if (rank == 0 && res) {
    for (size_t i = 0; i < sp_results_num_regions(res); i++) {
      const char *name = sp_results_region_name(res, i);
      CHECK(!strncmp(name, "MPI_Barrier", 12) || strncmp(name, "MPI_", 4) != 0,
            "the second run has %s: the profiler's own MPI traffic was recorded", name);
    }
  }
  sp_results_free(res);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_calls: %s (%d ranks, profile_mpi_calls=%d)\n", all ? "FAILED" : "ok", size, on);
  MPI_Finalize();
  return all ? 1 : 0;
}
