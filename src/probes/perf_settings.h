/* perf_settings.h - the hardware and software counter settings. One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_PERF_SETTINGS_H
#define SP_PROBES_PERF_SETTINGS_H

#define SP_GROUP_PERF(G) G(perf, 0, "Counters", "Counters per region through perf_event_open (and PAPI).")

/* Built when the build has the probe (SP_WITH_PERF, cmake/counters.cmake). */
#ifdef SP_HAVE_PERF
#define SP_PERF_BUILT 1
#else
#define SP_PERF_BUILT 0
#endif
#define SP_PERF_STATUS BUILT_IF(SP_PERF_BUILT, "SP_WITH_PERF=ON and the Linux kernel headers")

#define SP_SETTINGS_PERF(X) \
  X(3, perf_events, perf, perf_events, LIST, NULL, 0, 0, \
    "Events counted per region call: perf(1)'s names (cycles, instructions, task-clock, page-faults, ...), PMU names through libpfm4, PAPI_* or papi:<native> through PAPI; a list or a comma string; empty means off.", SP_PERF_STATUS)

#define SP_RULES_PERF(R)

#endif
