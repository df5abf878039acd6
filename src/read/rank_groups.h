/* rank_groups.h - the walk shared by the readers of per-region result groups
 * that a file keeps under each rank: rank<N>/<sub>/<group> (perf_events'
 * counter totals, LIKWID's marker regions). The walk finds the ranks, checks
 * that every entry below <sub> is a real group (a link could point anywhere),
 * and grows the row array; the caller's function reads one group into one
 * row. Keeping the walk in one place keeps its checks the same for every kind
 * of group, so a hostile file fails alike whichever table reads it.
 */
#ifndef SP_RANK_GROUPS_H
#define SP_RANK_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "read/read_internal.h"

struct sp__rank_walk {
  const char *kind; /* names the groups in errors: "counter group ..." */
  const char *sub;  /* the group under rank<N> that holds one group per region */
  size_t row_size;
  /* Reads group g (named `name`, at `path` for messages) of rank `rank` into
   * `row`, which is zeroed. On failure, what it allocated stays in `row` for
   * `clear`. */
  sp_status (*read)(sp_results *r, hid_t g, const char *name, const char *path, int64_t rank, void *row);
  void (*clear)(void *row);
};

/* Every rank's groups below rank<N>/<sub>, in name order, as one array of
 * rows (none: *n = 0, *rows = NULL). On failure nothing is returned and the
 * rows read so far are cleared and freed. */
sp_status sp__rank_walk(sp_results *r, const struct sp__rank_walk *spec, void **rows, size_t *n);

/* The format error for a damaged group, in the words every reader of these
 * groups uses. */
sp_status sp__rank_group_bad(const char *kind, const char *path, const char *what);

#endif
