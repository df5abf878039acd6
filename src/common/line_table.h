/* line_table.h - one line-profile record (rank<N>/line_profile/<i>) printed
 * as line_profiler prints a function: Line #, Hits, Time, Per Hit, % Time,
 * Line Contents. The one printer behind finalize's verbose output (from the
 * run in memory) and `scope-profiler inspect --lines` (from a file). */
#ifndef SP_COMMON_LINE_TABLE_H
#define SP_COMMON_LINE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sp_line_table {
  const char *region, *filename, *function;
  int64_t first_lineno;
  double unit; /* seconds per time unit */
  size_t n;
  const int64_t *line_numbers, *hits;
  const double *times;
  const uint64_t *addresses;   /* rows without line information: their address in `module`; may be NULL */
  const char *module;          /* may be NULL */
  const char *source;          /* the function's lines as stored, or NULL */
  int64_t source_first_lineno; /* line of source's first line */
  const char *const *inlined_into;
  size_t ninlined;
};

/* Print one record; `read_source` lets it read `filename` for the Line
 * Contents when the record holds no source. */
void sp__line_table_print(FILE *out, const struct sp_line_table *t, int read_source);

/* "Timer unit: ..." header line, printed once before a run of records. */
void sp__line_table_header(FILE *out, double unit);

#endif
