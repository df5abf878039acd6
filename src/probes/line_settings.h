/* line_settings.h - the line-level profiling settings. One block of the settings table
 * (src/config/settings_table.h explains the columns): the extension that
 * implements these settings keeps its rows here, beside its code, and flips
 * their status to READY in the change that makes them work.
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_PROBES_LINE_SETTINGS_H
#define SP_PROBES_LINE_SETTINGS_H

#define SP_GROUP_LINE(G) G(line, 0, "Line profiles", "Time per source line inside profiled regions.")

#define SP_SETTINGS_LINE(X) \
  X(4, use_line_profiler, line, use_line_profiler, BOOL, 0, 0, 1, \
    "Line-level profiling of profiled functions (Python upstream: line_profiler).", PLANNED)

#define SP_RULES_LINE(R) \
  R(CONFLICTS, aggregation_mode, use_line_profiler, 0, 0, 0, "aggregation keeps only per-region totals, with no individual calls to attach line timings to")

#endif
