/* snapshot.h - building a run from a manager's thread logs (snapshot.c). */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H

#include "core/core.h"
#include "output/output.h"

/* Build the columnar run of every completed call; *open_calls counts the
 * calls still open (left out). */
sp_status sp__snapshot_build(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                             struct sp_run *run, uint64_t *open_calls);

/* After a finalize: keep only the calls still open, renumbered, so they
 * complete into the next run. */
void sp__snapshot_compact(struct sp_manager *m);

/* Aggregation mode: one row per region from the per-thread accumulators
 * (no events), and the reset after a finalize. */
sp_status sp__snapshot_build_aggregate(struct sp_manager *m, const struct sp_clock_map *cm, uint32_t rank,
                                       struct sp_run *run, uint64_t *open_calls);
void sp__snapshot_compact_aggregate(struct sp_manager *m);

#endif
