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

/* One row of a record's table: a sampled line (hits >= 0), a line of text
 * between sampled ones (hits < 0), or code without line information
 * (line 0, with its address in the object when has_addr). */
struct sp_line_row {
  int64_t line, hits;
  double time; /* in the record's unit */
  const char *text; /* the line's contents, "" when unknown */
  uint64_t addr;
  int has_addr;
};

/* The rows of one record in the table's order (code without line
 * information first, then the lines from the function's first to its last
 * sampled one; only the sampled ones when that spans over 400 lines);
 * `read_source` as below. Returns the record's total time (in its unit), -1 when out of
 * memory. The row's text lives until fn returns. */
double sp__line_table_rows(const struct sp_line_table *t, int read_source,
                           void (*fn)(void *ctx, const struct sp_line_row *row), void *ctx);

/* Print one record; `read_source` lets it read `filename` for the Line
 * Contents when the record holds no source. */
void sp__line_table_print(FILE *out, const struct sp_line_table *t, int read_source);

/* "Timer unit: ..." header line, printed once before a run of records. */
void sp__line_table_header(FILE *out, double unit);

#endif
