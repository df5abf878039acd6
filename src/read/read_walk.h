/* read_walk.h - a rank's calls visited in start order, nested, streamed from
 * the file without holding or sorting them (read_walk.c). Shared by the call
 * trees and stacks of src/read/ and by the report's flame chart
 * (src/report/report_data.c), which draws from the walk instead of holding
 * every call of a rank.
 */
#ifndef SP_READ_WALK_H
#define SP_READ_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/reader.h"

/* fn gets each call with the tag its parent's call was given (NULL for a
 * root of its lane without a parent on another lane) and sets the call's
 * own tag, which its children get. Returns 1 when every call was visited, 0
 * when the walk refused the rank (rows out of order; with ids: a parent not
 * open when its child comes, ids too sparse, or negative or repeated ones
 * found once the walk began: whatever fn built must be dropped and the
 * sorted path taken, which gives the same result), -1 on an error (*err,
 * with sp_last_error() set; fn's own status when fn failed). */
struct sp__walk_call {
  int64_t start, end, thread, task, call;
  /* Nested by containment: the end of the lane parent (the stack's top),
   * whatever fn made of it; INT64_MIN for a root or nested by ids. */
  int64_t parent_end;
  uint32_t region;
  uint32_t lane;   /* dense index of (thread, task) within this walk */
  uint32_t by_ids; /* nested by the recorded ids (else by containment) */
  size_t row;      /* the (rank, region) row it was read from */
};
typedef sp_status (*sp__walk_fn)(void *ctx, const struct sp__walk_call *c,
                                 const uint64_t *parent_tag, uint64_t *tag);
int sp__walk_calls(sp_results *r, int64_t rank, sp__walk_fn fn, void *ctx, sp_status *err);
/* The rank's rows in ascending row order, found through each region's rows
 * (ordered by rank) rather than by a scan of every row: a scan per rank
 * made reading a file of many ranks quadratic. *out is allocated (free it;
 * NULL when the rank has none). SP_OK or SP_ERR_NO_MEMORY. */
sp_status sp__rank_rows(const sp_results *r, int64_t rank, size_t **out, size_t *n);
/* The first position k in region's rows (region_rows[k], read_internal.h)
 * whose rank is >= rank; the rank's rows follow it while the rank matches. */
size_t sp__region_rank_first(const sp_results *r, size_t region, int64_t rank);
/* 0 sends every caller to the sorted path (tests and bench/ compare both). */
extern int sp__walk_enabled;
extern int sp__walk_last; /* the last walk's verdict (tests) */
extern size_t sp__walk_last_buffers; /* bytes of the last walk's row buffers (tests) */

#endif
