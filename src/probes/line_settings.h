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

#define SP__CHOICES_line_profile_sampler(C) \
  C(SP__LINE_SAMPLER_AUTO, "auto") \
  C(SP__LINE_SAMPLER_PERF, "perf") \
  C(SP__LINE_SAMPLER_TIMER, "timer")

/* READY: the sampler (src/probes/line.c, line_sample.c) is built everywhere; without libdw
 * (SP_WITH_LIBDW) the records keep addresses and modules, unsymbolised. */
#define SP_SETTINGS_LINE(X) \
  X(4, use_line_profiler, line, use_line_profiler, BOOL, 0, 0, 1, \
    "Line-level profiles by sampling: per-line hits and CPU time inside every region, per function (rank<N>/line_profile; Python upstream: line_profiler).", READY) \
  X(36, line_profile_rate, line, line_profile_rate, INT, 1000, 1, 100000, \
    "Line profiling: program-counter samples per CPU-second of each profiled thread.", READY) \
  X(37, line_profile_sampler, line, line_profile_sampler, ENUM, SP__LINE_SAMPLER_AUTO, 0, 0, \
    "Line profiling clock per thread: perf (perf_event task-clock, exact period), timer (POSIX CPU-time timer, at the kernel's tick) or auto (perf where the kernel allows it, else timer).", READY)

#define SP_RULES_LINE(R) \
  R(CONFLICTS, aggregation_mode, use_line_profiler, 0, 0, 0, "aggregation keeps only per-region totals, with no individual calls to attach line timings to")

#endif
