/* diag.h - the library's messages on stderr (or to the program's handler):
 * see sp_set_message_handler() in scope_profiler/status.h for what may be
 * said and when. Depends on libc only. */
#ifndef SP_COMMON_DIAG_H
#define SP_COMMON_DIAG_H

#include "scope_profiler/status.h"

/* One line: "scope-profiler: warning: <text>" on stderr, or the handler. The
 * caller decides whether to speak at all (the `quiet` setting). */
void sp__message(sp_message_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* This process's rank from the launcher's environment (Open MPI, PMIx,
 * MPICH/Hydra, MVAPICH), or -1 when it was not started by one. No MPI call. */
int sp__launcher_rank(void);

/* This process's place among the processes its launcher started: 1 with
 * *rank and *size set, from Open MPI, PMIx, MPICH/Hydra and Intel MPI,
 * MVAPICH, or Slurm's srun (a job step's tasks); 0 when it was not started
 * by one of them, or started alone. No MPI call. */
int sp__launcher_world(int *rank, int *size);

#endif
