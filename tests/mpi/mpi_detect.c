/* mpi_detect.c - when does libscope_profiler_mpi use MPI? A program linked
 * with it that never calls MPI itself (only MPI_Initialized at the end, to
 * see what the profiler did).
 *
 *   mpi_detect --expect-mpi 0|1 [--per-rank-file] [--late 0|1]
 *
 * --expect-mpi 1: the profiler must have used MPI (a launcher started us, or
 * SCOPE_PROFILER_MPI=1): MPI is initialised after finalize and the results
 * cover every rank of the launch. 0: it must not have touched MPI (no
 * launcher, or SCOPE_PROFILER_MPI=0), and the file is this process's alone.
 * --per-rank-file writes <file_path>.<launcher rank>.h5 (for 0 under a
 * launcher). --late F initialises and finalizes MPI before the profiler's
 * finalize, which must then fail with SP_ERR_MPI. F=1: the run was written
 * by MPI_Finalize (finalize_on_exit, the default); F=0: nothing was written
 * (run with SCOPE_PROFILER_FINALIZE_ON_EXIT=0).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scope_profiler.h"
#include "scope_profiler/mpi.h"
#include "scope_profiler/reader.h"

static int failures;
#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "mpi_detect: FAILED %s: ", #cond); \
      fprintf(stderr, __VA_ARGS__);                      \
      fputc('\n', stderr);                               \
      failures++;                                        \
    }                                                    \
  } while (0)

int main(int argc, char **argv) {
  int expect = -1, per_rank = 0, late = 0, late_file = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--expect-mpi") && i + 1 < argc) expect = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--per-rank-file")) per_rank = 1;
    else if (!strcmp(argv[i], "--late") && i + 1 < argc) late = 1, late_file = atoi(argv[++i]);
  }
  /* the launcher's view: Open MPI's variables, else MPICH (Hydra)'s */
  const char *lrank = getenv("OMPI_COMM_WORLD_RANK"), *lsize = getenv("OMPI_COMM_WORLD_SIZE");
  if (!lrank) lrank = getenv("PMI_RANK");
  if (!lsize) lsize = getenv("PMI_SIZE");
  int launch_size = lsize ? atoi(lsize) : 1, launch_rank = lrank ? atoi(lrank) : 0;
  char path[256], over[300];
  const char *base = getenv("SCOPE_PROFILER_FILE_PATH") ? getenv("SCOPE_PROFILER_FILE_PATH") : "detect.h5";
  snprintf(path, sizeof path, per_rank ? "%s.%d.h5" : "%s", base, launch_rank);
  snprintf(over, sizeof over, "file_path=%s", path);
  const char *overrides[] = {over, NULL};
  sp_setup_args sa = {.overrides = overrides};
  if (sp_setup(&sa) != SP_OK) {
    fprintf(stderr, "mpi_detect: setup: %s\n", sp_last_error());
    return 3;
  }
  int init = 1;
  MPI_Initialized(&init);
  CHECK(!init, "setup initialised MPI");
  for (int i = 0; i < 5; i++) {
    SP_REGION("work");
    usleep(100);
  }
  if (late) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    sp_finalize_args fin = {0};
    sp_status st = sp_finalize(&fin, NULL);
    CHECK(st == SP_ERR_MPI, "finalize after MPI_Finalize returned %s", sp_status_name(st));
    CHECK(strstr(sp_last_error(), "MPI_Finalize") != NULL, "unclear message: %s", sp_last_error());
    CHECK((access(path, F_OK) == 0) == late_file, "%s was%s written", path, late_file ? " not" : "");
    if (launch_rank == 0) printf("mpi_detect --late: %s (%s)\n", failures ? "FAILED" : "ok", sp_last_error());
    return failures ? 1 : 0;
  }
  sp_finalize_args fin = {.return_results = 1};
  sp_results *res = NULL;
  sp_status st = sp_finalize(&fin, &res);
  CHECK(st == SP_OK, "finalize: %s", sp_last_error());
  MPI_Initialized(&init);
  CHECK(init == (expect == 1), "MPI initialised: %d, expected %d", init, expect == 1);
  CHECK(sp_mpi_in_use() == (expect == 1), "sp_mpi_in_use() %d", sp_mpi_in_use());
  int rank = expect == 1 ? launch_rank : 0;
  if (res && rank == 0) {
    const sp_metadata_entry *e = sp_results_metadata(res, "mpi_size");
    int want = expect == 1 ? launch_size : 1;
    CHECK(e && e->i == want, "mpi_size %lld, expected %d", e ? (long long)e->i : -1LL, want);
    CHECK(sp_results_num_ranks(res) == (size_t)want, "%zu ranks in the results", sp_results_num_ranks(res));
  }
  sp_results_free(res);
  if (rank == 0) printf("mpi_detect: %s (mpi %d, %d launched)\n", failures ? "FAILED" : "ok", expect, launch_size);
  return failures ? 1 : 0;
}
