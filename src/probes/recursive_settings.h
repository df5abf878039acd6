/* recursive_settings.h - the whole-program (recursive) profiling settings. One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_RECURSIVE_SETTINGS_H
#define SP_PROBES_RECURSIVE_SETTINGS_H

#define SP_GROUP_RECURSIVE(G) \
  G(recursive, 0, "Recursive profiling", "Every function call of an instrumented program as a region.")

/* READY: the -finstrument-functions hooks (src/probes/recursive.c) are built everywhere. */
#define SP_SETTINGS_RECURSIVE(X) \
  X(16, recursive_profile, recursive, recursive_profile, BOOL, 0, 0, 1, \
    "Every function of a program compiled with -finstrument-functions becomes a region (Python upstream: profile the functions decorated ones call).", READY) \
  X(38, recursive_exclude, recursive, recursive_exclude, LIST, NULL, 0, 0, \
    "recursive_profile: functions whose name matches one of these globs are not recorded (their callees are).", READY) \
  X(39, recursive_exclude_files, recursive, recursive_exclude_files, LIST, NULL, 0, 0, \
    "recursive_profile: functions from source files matching one of these globs (full path or file name) are not recorded.", READY) \
  X(40, recursive_max_depth, recursive, recursive_max_depth, INT, SP_INT_NONE, 1, INT64_C(1) << 20, \
    "recursive_profile: record instrumented calls only down to this many instrumented frames (unset: no limit).", READY)

#define SP_RULES_RECURSIVE(R)

#endif
