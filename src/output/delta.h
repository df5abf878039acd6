/* delta.h - schema 3's event encoding: the four per-call columns of a run
 * (start, end, call id, parent id) turned into small row-relative integers
 * stored in the narrowest unsigned type that holds nearly all of them, with
 * the few that do not fit listed beside them (docs/file-format.md,
 * "Schema 3"). The reader decodes it in src/read/read_events.c.
 */
#ifndef SP_OUTPUT_DELTA_H
#define SP_OUTPUT_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "output/output.h"
#include "scope_profiler/status.h"

enum { SP_DELTA_NCOLS = 4 };

/* The coded columns' dataset names under /events, in column order. */
extern const char *const sp__delta_col_names[SP_DELTA_NCOLS];

struct sp_delta_col {
  const char *name;      /* "start_gaps", "durations", "call_id_gaps", "parent_offsets" */
  unsigned width;        /* bytes per stored value: 1, 2, 4 or 8 */
  void *data;            /* nevents values of `width` bytes */
  uint64_t *ov_index;    /* ascending event indices whose value did not fit */
  int64_t *ov_value;     /* their true (decoded) values */
  size_t nov;
};

/* Per column: values that fit 1, 2, 4 bytes (counted at the narrowest), and
 * those that fit none. Sums over ranks give a job's widths. */
struct sp_delta_hist {
  uint64_t n[SP_DELTA_NCOLS][4];
};

struct sp_delta {
  struct sp_delta_col col[SP_DELTA_NCOLS];
  int64_t *start_bases;   /* per row: its first start (0 for an empty row) */
  int64_t *call_id_bases; /* per row: its first call id (-1 for an empty row) */
};

/* Encode the in-memory event columns of `run` (not a fill_events run) in
 * the widths that suit them. */
sp_status sp__delta_encode(const struct sp_run *run, struct sp_delta *out);

/* The same in three steps, for jobs whose ranks must agree on the widths:
 * per column, how many values fit 1, 2 or 4 bytes (counted at the narrowest)
 * and how many fit none; the widths for summed counts; the encoding in given
 * widths. */
sp_status sp__delta_count(const struct sp_run *run, struct sp_delta_hist *hist);
void sp__delta_widths(const struct sp_delta_hist *hist, unsigned widths[SP_DELTA_NCOLS]);
sp_status sp__delta_encode_widths(const struct sp_run *run, const unsigned widths[SP_DELTA_NCOLS],
                                  struct sp_delta *out);
void sp__delta_free(struct sp_delta *d);

#endif
