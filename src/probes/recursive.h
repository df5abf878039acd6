/* recursive.h - recursive_profile for programs compiled with
 * -finstrument-functions: every instrumented function call becomes a call
 * of a region named after the function.
 *
 * The compiler makes each instrumented function call
 * __cyg_profile_func_enter(fn, site) on entry and __cyg_profile_func_exit on
 * return. This library defines both (glibc's are no-ops, so a program built
 * with the flag but not linked against scope-profiler runs as usual). While
 * off they cost one load and a branch. While on, the function address goes
 * through a lock-free open-addressing cache to its region; only a function's
 * first call takes a lock, to name it from DWARF (static functions too),
 * apply the exclusions and intern the region. A per-thread shadow stack of
 * the instrumented frames keeps ends matched to begins across excluded
 * functions, the depth limit, longjmp (frames skipped by it are ended at the
 * next exit found below them) and exits of functions entered before
 * profiling started (ignored).
 *
 * Exclusions: function-name globs, source-file globs (fnmatch, matched
 * against the full path and its last component), a depth limit (calls
 * deeper than `max_depth` instrumented frames are not recorded), and always
 * the functions of this library itself. Two functions of the same name in
 * different files become "name (file)"; compiler clones of one function
 * (name.constprop.0, ...) share its region.
 */
#ifndef SP_RECURSIVE_H
#define SP_RECURSIVE_H

#include <stdint.h>

#include "scope_profiler.h"

struct sp_rp_params {
  sp_manager *m;                    /* the manager the calls are recorded on */
  const char *const *exclude;       /* function-name globs, NULL-terminated, or NULL */
  const char *const *exclude_files; /* source-file globs, or NULL */
  int64_t max_depth;                /* <= 0: no limit */
};

/* Start recording instrumented calls on p->m (copies the patterns).
 * SP_ERR_ALREADY_ACTIVE when another manager records them already. */
sp_status sp__rp_start(const struct sp_rp_params *p);

/* Stop: later hook calls cost a branch again. Calls still open stay open on
 * the manager (and are reported as open at its finalize). */
void sp__rp_stop(void);

/* The manager recording instrumented calls, or NULL. */
sp_manager *sp__rp_manager(void);

struct sp_rp_stats {
  uint64_t functions; /* distinct functions seen since start */
  uint64_t excluded;  /* of which excluded (name, file or this library) */
};
struct sp_rp_stats sp__rp_stats(void);

#endif
