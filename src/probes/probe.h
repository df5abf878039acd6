/* probe.h - the interface every probe implements.
 *
 * A probe adds per-call columns to the timeline (counter deltas, GPU time,
 * bytes allocated, ...). Probes are chosen once at setup from the resolved
 * configuration. A run with no probe keeps the fully inlined begin/end path;
 * a run with probes sends begin/end through the slow path, which records the
 * base event and then lets each probe fill its columns for that call. Column
 * values live in a per-thread side array indexed by the event's slot, so the
 * base event layout never changes and a probe costs nothing when unused.
 *
 * One probe per file in src/probes/, registered in probe.c's table.
 */
#ifndef SP_PROBE_H
#define SP_PROBE_H

#include <stdint.h>

#include "scope_profiler/status.h"

struct sp_config;

#define SP_MAX_PROBES 8
#define SP_PROBE_MAX_COLS 8

struct sp_probe {
  const char *name;
  int ncols;
  const char *col_names[SP_PROBE_MAX_COLS]; /* dataset names under /events */
  /* 1 if the configuration asks for this probe. */
  int (*wanted)(const struct sp_config *cfg);
  /* Set up process/manager state; SP_OK or an error with sp_last_error(). */
  sp_status (*setup)(const struct sp_config *cfg, void **state);
  /* Begin: store whatever the end needs into cols (this call's columns). */
  void (*begin)(void *state, int64_t *cols);
  /* End: turn cols into the final values (e.g. a counter delta). */
  void (*end)(void *state, int64_t *cols);
  void (*teardown)(void *state);
};

/* Probes the configuration asks for, in table order; returns the count. */
int sp__probes_select(const struct sp_config *cfg, const struct sp_probe **out, int max);

/* Test hook: add a probe to the table (tests of the probe interface). */
void sp__probe_register(const struct sp_probe *p);

#endif
