/* mpi_job.c - the MPI test program: every rank records a known, rank-dependent
 * set of regions, then all finalize together into one file for the job.
 *
 * Rank r records: "step" 3+r times, each holding two "inner" calls; one
 * "rank_<r>" (a name only that rank has); "odd" once on odd ranks; and
 * --events N extra "bulk" calls. With SCOPE_PROFILER_CLOCK=manual every call
 * takes a fixed, rank-dependent time, so two runs give identical files.
 * Settings (file_path, output_mode, ...) come from the environment.
 *
 * Rank 0 checks the results finalize hands back and the published file,
 * both through our reader: ranks, counts per rank and region, metadata.
 * Other ranks check that their results are empty. Exit 0 when all is well.
 *
 *   mpi_job [--events N] [--sync] [--verbose] [--no-results]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope_profiler.h"
#include "scope_profiler/mpi.h"
#include "scope_profiler/reader.h"

/* Exported by the library for tests: advances the manual clock. */
void sp__clock_manual_advance(uint64_t ns);

static int failures;
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "mpi_job: FAILED %s: ", #cond);     \
      fprintf(stderr, __VA_ARGS__);                       \
      fputc('\n', stderr);                                \
      failures++;                                         \
    }                                                     \
  } while (0)

static void tick(uint64_t ns) { sp__clock_manual_advance(ns); }

static uint64_t count_of(sp_results *res, const char *name, int64_t rank) {
  size_t region;
  if (sp_results_find_region(res, name, &region) != SP_OK) return 0;
  sp_region_stats st;
  if (sp_results_region_rank_stats(res, region, rank, 0, &st) != SP_OK) return 0;
  return st.count;
}

/* Everything rank 0 knows about the job, from results or the file. */
static void check_job(sp_results *res, const char *what, int size, long events) {
  CHECK(sp_results_num_ranks(res) == (size_t)size, "%s: %zu ranks, expected %d", what, sp_results_num_ranks(res),
        size);
  for (int r = 0; r < size; r++) {
    CHECK(count_of(res, "step", r) == (uint64_t)(3 + r), "%s: rank %d step", what, r);
    CHECK(count_of(res, "inner", r) == (uint64_t)(2 * (3 + r)), "%s: rank %d inner", what, r);
    char name[32];
    snprintf(name, sizeof name, "rank_%d", r);
    CHECK(count_of(res, name, r) == 1, "%s: rank %d %s", what, r, name);
    CHECK(count_of(res, "odd", r) == (uint64_t)(r % 2), "%s: rank %d odd", what, r);
    CHECK(count_of(res, "bulk", r) == (uint64_t)events, "%s: rank %d bulk", what, r);
  }
  const sp_metadata_entry *e = sp_results_metadata(res, "mpi_size");
  CHECK(e && e->i == size, "%s: metadata mpi_size", what);
  e = sp_results_metadata(res, "num_nodes");
  CHECK(e && e->i == 1, "%s: metadata num_nodes (one host)", what);
  e = sp_results_metadata(res, "mpi_library_version");
  CHECK(e && e->s && strlen(e->s) > 3, "%s: metadata mpi_library_version", what);
  e = sp_results_metadata(res, "total_cores");
  CHECK(e && e->i >= size, "%s: metadata total_cores", what);
}

int main(int argc, char **argv) {
  long events = 0;
  int sync = 0, verbose = 0, want_results = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--events") && i + 1 < argc) events = atol(argv[++i]);
    else if (!strcmp(argv[i], "--sync")) sync = 1;
    else if (!strcmp(argv[i], "--verbose")) verbose = 1;
    else if (!strcmp(argv[i], "--no-results")) want_results = 0;
    else {
      fprintf(stderr, "usage: mpi_job [--events N] [--sync] [--verbose] [--no-results]\n");
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (sp_setup(NULL) != SP_OK) {
    fprintf(stderr, "mpi_job: setup: %s\n", sp_last_error());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (sync) {
    int64_t off = 0, err = 0;
    sp_status st = sp_mpi_sync_clock(&off, &err);
    CHECK(st == SP_OK, "sp_mpi_sync_clock: %s", sp_last_error());
    /* One host: one clock, so the true offset is 0 and the estimate is
     * within its error bound by construction. */
    CHECK(off <= err && -off <= err, "rank %d offset %lld outside +-%lld", rank, (long long)off, (long long)err);
  }
  sp_region step = sp_region_intern("step"), inner = sp_region_intern("inner"), odd = sp_region_intern("odd"),
            bulk = sp_region_intern("bulk");
  char name[32];
  snprintf(name, sizeof name, "rank_%d", rank);
  sp_region mine = sp_region_intern(name);
  for (int s = 0; s < 3 + rank; s++) {
    sp_begin(step);
    tick(100);
    for (int k = 0; k < 2; k++) {
      sp_begin(inner);
      tick(1000 + 10 * (uint64_t)rank + (uint64_t)k);
      sp_end(inner);
    }
    tick(50);
    sp_end(step);
  }
  sp_begin(mine);
  tick(7);
  sp_end(mine);
  if (rank % 2) {
    sp_begin(odd);
    tick(3);
    sp_end(odd);
  }
  for (long i = 0; i < events; i++) {
    sp_begin(bulk);
    tick(1);
    sp_end(bulk);
  }

  sp_finalize_args fin = {.verbose = verbose, .return_results = want_results};
  sp_results *res = NULL;
  sp_status st = sp_finalize(&fin, want_results ? &res : NULL);
  CHECK(st == SP_OK, "finalize on rank %d: %s", rank, sp_last_error());
  const sp_config *cfg = sp_manager_config(SP_DEFAULT);
  int file_output = cfg && !sp_config_deactivate_file_output(cfg);
  if (want_results) {
    CHECK(res != NULL, "rank %d got no results", rank);
    if (res && rank == 0) check_job(res, "results", size, events);
    if (res && rank != 0) CHECK(sp_results_num_rows(res) == 0, "rank %d results have rows", rank);
  }
  sp_results_free(res);
  if (rank == 0 && file_output && st == SP_OK) {
    sp_results *f = NULL;
    CHECK(sp_results_open(sp_manager_output_path(SP_DEFAULT), &f) == SP_OK, "open %s: %s",
          sp_manager_output_path(SP_DEFAULT), sp_last_error());
    if (f) check_job(f, "file", size, events);
    sp_results_free(f);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_job: %s (%d ranks)\n", all ? "FAILED" : "ok", size);
  MPI_Finalize();
  return all ? 1 : 0;
}
