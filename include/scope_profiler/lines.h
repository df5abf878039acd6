/* scope_profiler/lines.h - line-profile records: the type the writing and
 * the reading side share, and the writing side's entry for records made
 * outside the library's sampler.
 *
 * A record is one rank<N>/line_profile/<i> group of the file (upstream's
 * line_profiler layout): the lines of one function inside one region. The
 * library's sampler makes them for native code (use_line_profiler, see
 * docs/line-profiles.md); sp_manager_add_line_records() takes others (the
 * Python package's timed Python lines); the reader hands every one back
 * (sp_results_line_profiles, scope_profiler/reader.h).
 */
#ifndef SCOPE_PROFILER_LINES_H
#define SCOPE_PROFILER_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "scope_profiler/export.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sp_manager;

/* One line-profile record: rank<N>/line_profile/<i>, the lines of one
 * function inside one region (upstream's line_profiler records; ours come
 * from sampling: hits are samples, times the CPU time they stand for). */
typedef struct sp_line_profile {
  int64_t rank;
  size_t index;              /* <i> */
  const char *region;        /* NULL when the record does not say */
  const char *filename;
  const char *function;
  int64_t first_lineno;      /* 0 unknown */
  double unit;               /* seconds per unit of `times` */
  size_t n;                  /* rows */
  const int64_t *line_numbers; /* 0: no line information (see addresses) */
  const int64_t *hits;
  const double *times;
  const uint64_t *addresses; /* per row, the address in `module` of code without lines; NULL when absent */
  const char *module;        /* the object the code is in; NULL when absent */
  const char *source;        /* the function's lines as captured, NULL when absent */
  int64_t source_first_lineno;
  const char *const *inlined_into; /* "caller (file:line)" for inlined code */
  size_t ninlined;
} sp_line_profile;

/** Line-profile records made outside the library's sampler (the Python
 * package times the lines of profiled Python functions) for the run of
 * manager m. The next finalize writes them to rank<N>/line_profile/<i>
 * after the sampled records, in the order given, so one file and one reader
 * hold both. Copied. Used per record: region (NULL: ""), filename, function,
 * first_lineno, unit (seconds per unit of `times`, > 0), n, line_numbers,
 * hits, times, and module, source, source_first_lineno when set (without
 * source, the lines are read from `filename` when it is readable at
 * finalize); rank, index, addresses and inlined_into are the reader's and
 * ignored. SP_ERR_INACTIVE when m has no run set up with use_line_profiler;
 * SP_ERR_INVALID_ARGUMENT for a record without function or filename, rows
 * without arrays, or a unit <= 0 (nothing of the call is added then). */
SP_API sp_status sp_manager_add_line_records(struct sp_manager *m, const sp_line_profile *records, size_t n);

#ifdef __cplusplus
}
#endif
#endif
