/* sim.c - a small simulation-like program instrumented with scope-profiler.
 *
 * A time-step loop with nested regions (step > solve, halo, io), a
 * self-recursive adaptive mesh refinement (refine, SP_FUNCTION), and an
 * OpenMP parallel loop with a region inside it (omp_kernel). The whole run is
 * one profiling session, so the summary has a "% session" column. Settings
 * come from the environment like any instrumented program's
 * (SCOPE_PROFILER_FILE_PATH, SCOPE_PROFILER_AGGREGATION_MODE=1, ...).
 *
 * Built with -DSIM_WITH_MPI (examples/sim_mpi, linked with
 * libscope_profiler_mpi) the ranks split the cells between them, exchange
 * halos with MPI_Sendrecv inside "halo" and reduce the checksum inside "io";
 * run it under mpirun and every rank writes into one file for the job.
 *
 *   sim [--steps N] [--cells N] [--quiet]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"
#ifdef SIM_WITH_MPI
#include <mpi.h>
#endif

static double *u, *unew;
static int ncells = 20000;
static int rank = 0, nranks = 1;

static void solve(void) {
  SP_REGION("solve");
  for (int it = 0; it < 4; it++) {
    for (int i = 1; i < ncells - 1; i++) unew[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
    double *t = u;
    u = unew;
    unew = t;
  }
}

static void halo(void) {
  SP_REGION("halo");
#ifdef SIM_WITH_MPI
  /* Periodic ring of subdomains: ghost cells from the neighbours. */
  int left = (rank + nranks - 1) % nranks, right = (rank + 1) % nranks;
  MPI_Sendrecv(&u[ncells - 2], 1, MPI_DOUBLE, right, 0, &u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 1, &u[ncells - 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
#else
  /* Periodic boundaries; the MPI build exchanges with neighbours here. */
  u[0] = u[ncells - 2];
  u[ncells - 1] = u[1];
#endif
}

/* Refines a cell range until it is smooth enough: recursion of varying depth. */
static int refine(int lo, int hi, int depth) {
  SP_FUNCTION();
  double jump = fabs(u[lo] - u[hi - 1]);
  if (depth >= 6 || hi - lo < 64 || jump < 1e-3) return 1;
  int mid = lo + (hi - lo) / 2;
  return refine(lo, mid, depth + 1) + refine(mid, hi, depth + 1);
}

static double omp_work(int step) {
  double sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
    SP_REGION("omp_kernel");
#pragma omp for
    for (int i = 0; i < ncells; i++) sum += sin(u[i] * (step + 1)) * cos((double)i);
  }
  return sum;
}

static void io(int step, double checksum, FILE *out) {
  SP_REGION("io");
#ifdef SIM_WITH_MPI
  MPI_Allreduce(MPI_IN_PLACE, &checksum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank != 0) out = NULL;
#endif
  if (out && step % 10 == 0) fprintf(out, "step %4d  checksum %.6f\n", step, checksum);
}

int main(int argc, char **argv) {
  int steps = 20, quiet = 0;
#ifdef SIM_WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#endif
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cells") && i + 1 < argc) ncells = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quiet")) quiet = 1;
    else {
      fprintf(stderr, "usage: %s [--steps N] [--cells N] [--quiet]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 0 || ncells < 128) {
    fprintf(stderr, "sim: --steps must be >= 0 and --cells >= 128\n");
    return 2;
  }
#ifdef SIM_WITH_MPI
  /* --cells is the whole domain; each rank holds its share plus ghosts. */
  ncells = ncells / nranks + 2 < 128 ? 128 : ncells / nranks + 2;
#endif
  u = calloc((size_t)ncells, sizeof *u);
  unew = calloc((size_t)ncells, sizeof *unew);
  if (!u || !unew) return 1;
  for (int i = 0; i < ncells; i++)
    u[i] = sin(6.283185307 * (i + rank * ncells) / (ncells * nranks)) + (i % 97 == 0);

  sp_finalize_args fin = {.verbose = !quiet};
  int rc = 0;
  /* One session: set up before the body, finalized (and the summary
   * printed) after it, on every way out of the block. */
  SP_SESSION(session, NULL, &fin, NULL) {
    if (session.status != SP_OK) fprintf(stderr, "sim: profiling is off: %s\n", sp_last_error());
    int cells = 0;
    for (int step = 0; step < steps; step++) {
      SP_REGION("step");
      solve();
      halo();
      cells += refine(0, ncells, 0);
      double checksum = omp_work(step);
      io(step, checksum, quiet ? NULL : stdout);
    }
    if (!quiet && rank == 0) printf("refined cells over the run: %d\n", cells);
  }
  const sp_config *cfg = sp_manager_config(SP_DEFAULT);
  if (sp_manager_output_path(SP_DEFAULT)) {
    if (!quiet && rank == 0) printf("profile written to %s\n", sp_manager_output_path(SP_DEFAULT));
  } else if (cfg && sp_manager_is_active(SP_DEFAULT) && !sp_config_deactivate_file_output(cfg)) {
    fprintf(stderr, "sim: profile not written: %s\n", sp_last_error());
    rc = 1;
  }
  free(u);
  free(unew);
#ifdef SIM_WITH_MPI
  MPI_Finalize();
#endif
  return rc;
}
