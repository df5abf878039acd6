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

#define SP_SETTINGS_RECURSIVE(X) \
  X(16, recursive_profile, recursive, recursive_profile, BOOL, 0, 0, 1, \
    "Default for function-wrapping regions: also profile the functions they call.", PLANNED)

#define SP_RULES_RECURSIVE(R)

#endif
