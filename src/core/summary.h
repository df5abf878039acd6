/* summary.h - printing the per-region summary of a run (summary.c). */
#ifndef SP_SUMMARY_H
#define SP_SUMMARY_H

#include <stdio.h>

#include "output/output.h"

struct sp_ovh_figures;
/* ovh: the run's measured overhead figures (NULL: none measured); adds the
 * estimated share of each region's time spent in the profiler. */
void sp__summary_print(FILE *out, const struct sp_run *run, const char *label, const struct sp_ovh_figures *ovh);

/* The line-profile records of the run (rank<N>/line_profile groups) as
 * line_profiler's tables, for verbose finalize on every rank. */
void sp__summary_print_lines(FILE *out, const struct sp_run *run, uint32_t rank);

#endif
