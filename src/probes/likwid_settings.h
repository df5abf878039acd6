/* likwid_settings.h - the LIKWID marker settings. One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_LIKWID_SETTINGS_H
#define SP_PROBES_LIKWID_SETTINGS_H

#define SP_GROUP_LIKWID(G) G(likwid, 0, "LIKWID", "Hardware counters per region through the LIKWID marker API.")

/* Built when the build has the probe (SP_WITH_LIKWID, cmake/counters.cmake). */
#ifdef SP_HAVE_LIKWID
#define SP_LIKWID_BUILT 1
#else
#define SP_LIKWID_BUILT 0
#endif
#define SP_LIKWID_STATUS BUILT_IF(SP_LIKWID_BUILT, "SP_WITH_LIKWID=ON")

#define SP_SETTINGS_LIKWID(X) \
  X(2, use_likwid, likwid, use_likwid, BOOL, 0, 0, 1, \
    "Bracket every region with LIKWID marker regions and store LIKWID's counter results (rank<N>/likwid); takes effect under likwid-perfctr -m or likwid-mpirun -marker, and warns otherwise.", SP_LIKWID_STATUS) \
  X(35, likwid_library, likwid, likwid_library, STR, NULL, 0, 0, \
    "LIKWID's library for use_likwid, loaded at setup (default: liblikwid.so.5 from the loader's search path, e.g. the LD_LIBRARY_PATH of a LIKWID module).", SP_LIKWID_STATUS)

#define SP_RULES_LIKWID(R) \
  R(CONFLICTS, aggregation_mode, use_likwid, 0, 0, 0, "aggregation keeps only per-region totals, with no individual calls to attach LIKWID regions to")

#endif
