/* overhead.h - the profiler's estimated cost per call of a region, from the
 * two pair costs measured at setup: one rule, used by the summary finalize
 * prints, by the total finalize stores (overhead_total_ns) and by inspect's
 * ovh column, so that all three agree.
 *
 * A begin/end pair costs overhead_pair_ns when its lines (TLS block, thread
 * record, stack, event slot, the manager's line) are in the cache, as they
 * are for calls that come back to back, and overhead_cold_pair_ns when none
 * of them is: a pair after program work that evicted them. How much work
 * sits between two calls is not recorded, but a call's own duration is the
 * work between its begin and its end: a call under 20 warm pairs (the
 * summary's "!" bar, calls that mostly measure the profiler) counts warm, a
 * call of 40 warm pairs or more counts cold, linearly between. In a
 * memory-bound loop with calls of a microsecond the cold figure is what an
 * A/B run measures (bench/overhead_ab); for compute-bound calls of a few
 * microseconds, whose work keeps the profiler's lines cached, it is an
 * upper side (BENCHMARKS.md gives both).
 */
#ifndef SP_COMMON_OVERHEAD_H
#define SP_COMMON_OVERHEAD_H

/* The figures a run stores (negative or NaN: unknown). */
struct sp_ovh_figures {
  double pair_ns;  /* overhead_pair_ns: one pair, its lines cached */
  double cold_ns;  /* overhead_cold_pair_ns: one pair, none of its lines cached */
  double extra_ns; /* overhead_extra_ns: out-of-line calls and one-off costs, not per call */
  double total_ns; /* overhead_total_ns: every call's estimate plus extra_ns */
};

/* The estimated profiler cost of one call of a region whose mean call
 * lasts mean_ns; negative when the pair is unknown. Files without a cold
 * figure get the warm pair. */
static inline double sp__ovh_call_ns(double mean_ns, double pair_ns, double cold_ns) {
  if (!(pair_ns >= 0)) return -1;
  if (!(cold_ns > pair_ns) || !(pair_ns > 0)) return pair_ns;
  double bar = 20 * pair_ns, w = (mean_ns - bar) / bar;
  w = w > 0 ? (w < 1 ? w : 1) : 0;
  return pair_ns + w * (cold_ns - pair_ns);
}

#endif
