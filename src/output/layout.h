/* layout.h - the shape of one file made of one or more parts (a single
 * run, or an MPI job's ranks), worked out from the plan (plan.h): which
 * optional columns and tables it has, how long every dataset is, and where
 * each part's rows, events and table rows go. The serial writer lays out
 * one part; the MPI writers agree on a layout of every rank's part
 * (src/mpi/mpi_layout.c carries it between ranks) and then all of them
 * write through the same functions (h5common.h: sp__plan_create,
 * sp__plan_write_part), so a run gives the same file whoever writes it.
 */
#ifndef SP_OUTPUT_LAYOUT_H
#define SP_OUTPUT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "output/output.h"
#include "output/plan.h"
#include "scope_profiler/status.h"

struct sp_layout {
  int schema;    /* 2 or 3 */
  int aggregate; /* the aggregate layout */
  uint64_t nrows, nevents;
  char **names; /* the region table: names in order of first appearance, part by part */
  size_t nnames;
  int *cols; /* optional event columns (plan ids) some part recorded, in order of first appearance */
  size_t ncols;
  uint64_t table_rows[SP_NGROUPS]; /* rows of each table group over all parts; 0: no table */
  uint64_t table_cols[SP_NGROUPS]; /* bit k: some part recorded the group's k-th column */
};

/* Where one part goes in the file. */
struct sp_place {
  uint64_t row0, ev0;
  uint32_t *name_map; /* the part's region index -> region table index */
  size_t nnames;
  uint64_t table_row0[SP_NGROUPS];
};

/* The layout of `n` parts written as `schema` (2 or 3), and every part's
 * place (places has n slots). Parts must agree on the storage layout. */
sp_status sp__layout_build(const struct sp_run *parts, int n, int schema, struct sp_layout *L,
                           struct sp_place *places);
void sp__layout_free(struct sp_layout *L);
void sp__place_free(struct sp_place *p);

/* 1 when the part has a value array for optional event column `id`
 * (call/parent ids included); the array, or NULL. */
const void *sp__part_column(const struct sp_run *part, int id);
/* The columns a table recorded (bit k: cols[k] is not NULL). */
uint64_t sp__table_mask(const struct sp_table *t);
/* The part's table of group g, or NULL. */
const struct sp_table *sp__part_table(const struct sp_run *part, enum sp_group g);

/* Schema 3's row delta coding of a part's starts: out[i] is the row's
 * first start for a row's first event, else start[i] - start[i-1] (modulo
 * 2^64); events outside every row are coded as row starts. */
void sp__code_start_deltas(const struct sp_run *part, int64_t *out);

#endif
