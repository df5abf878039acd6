/* memray_settings.h - the allocation capture settings
 * ([profiling.memray], the C counterpart of upstream's Memray group). One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_MEMRAY_SETTINGS_H
#define SP_PROBES_MEMRAY_SETTINGS_H

#define SP_GROUP_MEMRAY(G) \
  G(memray, 1, "Memory", "Also spelled in the `[profiling.memray]` table, or as `memray.<field>`.")

/* Built with the interposer's probe (SP_WITH_MEMORY, the top CMakeLists.txt). */
#ifdef SP_HAVE_MEMORY
#define SP_MEMRAY_BUILT 1
#else
#define SP_MEMRAY_BUILT 0
#endif
#define SP_MEMRAY_STATUS BUILT_IF(SP_MEMRAY_BUILT, "SP_WITH_MEMORY=ON")

#define SP_SETTINGS_MEMRAY(X) \
  X(5, use_memray, memray, enabled, BOOL, 0, 0, 1, \
    "Record process-wide allocations through libscope_profiler_memory.so (preloaded or linked): per-call memory columns and a capture file (C counterpart of upstream's Memray capture).", SP_MEMRAY_STATUS) \
  X(6, memory_profile_path, memray, path, STR, NULL, 0, 0, \
    "Allocation capture path, used while use_memray is on; default: file_path with its suffix replaced by .memray.bin.", SP_MEMRAY_STATUS) \
  X(7, memray_native_traces, memray, native_traces, BOOL, 0, 0, 1, \
    "Capture native stack frames with each allocation (libunwind; symbolised when read).", SP_MEMRAY_STATUS) \
  X(8, memray_trace_python_allocators, memray, trace_python_allocators, BOOL, 0, 0, 1, \
    "Trace the language runtime's own allocators (the Python package hooks Python's; a C program has none and says so once).", SP_MEMRAY_STATUS) \
  X(9, memray_follow_fork, memray, follow_fork, BOOL, 0, 0, 1, \
    "Keep tracking allocations across fork(): a child captures into <memory_profile_path>.<pid>; off, it stops capturing.", SP_MEMRAY_STATUS)

#define SP_RULES_MEMRAY(R)

#endif
