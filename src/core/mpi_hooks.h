/* mpi_hooks.h - where MPI plugs into the core.
 *
 * The core never includes mpi.h. libscope_profiler_mpi is the same library
 * built with src/mpi/ added (and parallel HDF5); those sources install an
 * ops table from a constructor, and finalize consults it. Without the MPI
 * build sp__mpi_ops stays NULL and every run is a single rank.
 */
#ifndef SP_MPI_HOOKS_H
#define SP_MPI_HOOKS_H

#include <stdint.h>
#include <stdio.h>

#include "output/output.h"
#include "scope_profiler/results.h"

struct sp_mpi_ops {
  /* 1 when this run uses MPI: the program initialised it, or a launcher's
   * per-rank environment is present; SCOPE_PROFILER_MPI=0|1 forces it.
   * Must not call MPI before the program initialised it. */
  int (*in_use)(void);
  int (*rank)(void);
  int (*size)(void);
  /* Collective. Adds the job-wide metadata (mpi_size, num_nodes,
   * total_cores, MPI library version, per-rank hosts at "full") to `meta`. */
  sp_status (*metadata)(struct sp_meta *meta, const struct sp_config *cfg);
  /* Collective. Writes the whole job's file; `run` is this rank's part (its
   * rows carry this rank). Publishes atomically from rank 0. */
  sp_status (*write)(const struct sp_run *run, const struct sp_config *cfg, const char *path);
  /* Collective. The whole job's results on rank 0, empty results elsewhere. */
  sp_status (*results)(const struct sp_run *run, const struct sp_config *cfg, sp_results **out);
  /* Collective (verbose finalize). Prints the whole job's summary on rank 0;
   * NULL: rank 0 prints its own run. */
  void (*summary)(const struct sp_run *run, const struct sp_config *cfg, FILE *out);
};

/* Set by the MPI build's constructor; NULL otherwise. */
extern const struct sp_mpi_ops *sp__mpi_ops;

#endif
