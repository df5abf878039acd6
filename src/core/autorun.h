/* autorun.h - the session `scope-profiler run` starts inside the program it
 * launched (autorun.c), as the manager and the MPI layer see it. */
#ifndef SP_AUTORUN_H
#define SP_AUTORUN_H

#include "scope_profiler.h"

/* 1 when `m` is the default manager and its run belongs to the launcher
 * (the program's own setup joins it, its finalize is deferred). 0 while the
 * launcher's own finalize runs. */
int sp__autorun_owns(const struct sp_manager *m);

/* The whole-program root region, 0 when not launched by `run`. */
sp_region sp__autorun_root(void);

/* Close the root region (MPI_Finalize: the job is written before MPI goes). */
void sp__autorun_end_root(void);

/* Close the root, finalize with the summary, say where the file is. Once. */
sp_status sp__autorun_finish(void);

/* For `run`'s preload library (src/run/run_preload.c), which finds them by
 * name: 1 when a thread the program starts now with start routine `fn`
 * should join the session (the run has a source that samples whole threads,
 * and fn is the program's, not one of the profiler's own libraries), and
 * the join itself, on the new thread before fn runs. */
SP_API int sp_i_run_thread_wanted(void *(*fn)(void *));
SP_API void sp_i_run_thread_started(void);

#endif
