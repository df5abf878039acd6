/* scope_profiler/mpi.h - MPI programs: what libscope_profiler_mpi adds.
 *
 * Link MPI programs with libscope_profiler_mpi (CMake target
 * ScopeProfiler::scope_profiler_mpi, pkg-config scope_profiler_mpi) instead
 * of libscope_profiler; nothing else changes in the program. That library
 * writes one file for the whole job (docs/mpi.md):
 *
 *   - MPI is used when the program initialised it or a launcher's per-rank
 *     environment is present (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK,
 *     MV2_COMM_WORLD_RANK); SCOPE_PROFILER_MPI=0|1 forces the choice. Setup
 *     issues no MPI call. When a launcher started the program but it never
 *     initialised MPI, finalize initialises it (and finalizes it at exit).
 *   - Finalize is collective over MPI_COMM_WORLD: every rank calls it, with
 *     the same settings and finalize arguments, before MPI_Finalize. With
 *     return_results, rank 0 gets the whole job and the other ranks empty
 *     results; with verbose, rank 0 prints the job's summary.
 *   - output_mode picks the writer (direct: ranks append in turn to one
 *     serial-HDF5 file; parallel: collective parallel HDF5; auto).
 *   - profile_mpi_calls records MPI calls as regions with the bytes they
 *     move (events/mpi_bytes_sent, events/mpi_bytes_received).
 *
 * This header does not need mpi.h.
 */
#ifndef SCOPE_PROFILER_MPI_H
#define SCOPE_PROFILER_MPI_H

#include <stdint.h>

#include "scope_profiler/export.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when the profiler uses MPI for this process by the rules above (calls
 * only MPI_Initialized and MPI_Finalized). */
SP_API int sp_mpi_in_use(void);

/** Collective over MPI_COMM_WORLD, between MPI_Init and MPI_Finalize:
 * measure now how far each rank's monotonic clock is from rank 0's (a short
 * ping-pong with every rank). Finalize always measures again; a file written
 * after this call also stores this earlier measurement, so readers can
 * correct for clock drift over the run. `offset_ns` receives this rank's
 * offset (add it to this rank's times to get rank 0's timeline) and
 * `error_ns` its uncertainty (half the best round trip); either may be NULL.
 * SP_ERR_MPI when MPI is not initialised or already finalized. */
SP_API sp_status sp_mpi_sync_clock(int64_t *offset_ns, int64_t *error_ns);

#ifdef __cplusplus
}
#endif
#endif
