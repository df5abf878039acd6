/* mpi_settings.h - the settings of MPI runs: which writer puts the ranks'
 * rows into the job's file, and whether MPI calls become regions. One block
 * of the settings table (src/config/settings_table.h explains the columns).
 * They resolve in every build; without libscope_profiler_mpi a run is one
 * rank and they have nothing to act on.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_MPI_MPI_SETTINGS_H
#define SP_MPI_MPI_SETTINGS_H

#define SP_GROUP_MPI(G) G(mpi, 0, "MPI", "Used by programs linked with libscope_profiler_mpi.")

#define SP__CHOICES_output_mode(C) \
  C(SP__OUTPUT_MODE_AUTO, "auto") \
  C(SP__OUTPUT_MODE_DIRECT, "direct") \
  C(SP__OUTPUT_MODE_PARALLEL, "parallel")

#define SP_SETTINGS_MPI(X) \
  X(18, profile_mpi_calls, mpi, profile_mpi_calls, BOOL, 0, 0, 1, \
    "Record MPI calls as regions through the PMPI wrappers of libscope_profiler_mpi.", READY) \
  X(24, output_mode, mpi, output_mode, ENUM, SP__OUTPUT_MODE_AUTO, 0, 0, \
    "MPI writer: direct (ownership token, serial HDF5), parallel (collective parallel HDF5) or auto.", READY)

#define SP_RULES_MPI(R)

#endif
