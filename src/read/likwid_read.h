/* likwid_read.h - LIKWID's results as a file written with use_likwid holds
 * them (rank<N>/likwid/regions/<tag>, docs/file-format.md), read back for
 * inspect: one row per rank and marker region, summed over its threads.
 */
#ifndef SP_LIKWID_READ_H
#define SP_LIKWID_READ_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/reader.h"

struct sp_likwid_row {
  int64_t rank;
  char *region;     /* the tag attribute (the region's name) */
  char *group_name; /* LIKWID's group (MEM_DP, ...); "" when unknown */
  char *source;     /* full_api, marker_file or marker_api */
  size_t nthreads;
  int64_t calls;   /* summed over the threads */
  double time_max; /* seconds: the slowest thread's */
  size_t nevents;
  char **event_names;
  double *events; /* [nevents], summed over the threads */
};

/* Every rank's LIKWID regions (none: *n = 0). SP_ERR_FORMAT, naming the
 * group, when one is malformed. */
sp_status sp__results_likwid(sp_results *r, struct sp_likwid_row **rows, size_t *n);
void sp__likwid_rows_free(struct sp_likwid_row *rows, size_t n);

#endif
