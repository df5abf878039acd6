/* scope_profiler/reader.h - reading profiles back: regions, ranks, events,
 * metadata, filters, statistics, call trees and exporters.
 *
 * An sp_results (scope_profiler/results.h) is opened from a file or an
 * in-memory image. Everything upstream scope-profiler writes is read,
 * recognised by content, not by name: HDF5 profiles in the "columnar"
 * layout (schema 3, start deltas and durations; schema 2, absolute start
 * and end times), the "aggregate" layout (one row of totals per region and
 * rank, no events) and the hierarchical schema 1 (/rank<N>/regions/<name>);
 * JSON profiles (format_version 1, plain or gzip); native traces (.spt
 * versions 1 and 2).
 * Opening validates the structure and reads only the small tables; events are
 * read lazily, slice by slice, when a caller asks for them. Summaries come from
 * the stored summary rows, so the summary of a ten-million-event file costs a
 * few kilobytes of I/O.
 *
 * Times are int64 nanoseconds of the writer's monotonic clock. Statistics are
 * in nanoseconds too; the CLI converts to seconds for display.
 *
 * Regions are numbered 0..sp_results_num_regions()-1 in the file's region
 * table order. Ranks are the distinct MPI ranks that recorded something,
 * sorted ascending.
 *
 * An sp_results is not thread-safe (serial HDF5 is not): use one per thread.
 * Every call that can fail returns sp_status and leaves a message in
 * sp_last_error().
 */
#ifndef SCOPE_PROFILER_READER_H
#define SCOPE_PROFILER_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scope_profiler/export.h"
#include "scope_profiler/lines.h"
#include "scope_profiler/results.h"
#include "scope_profiler/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*====== The file ======*/

/** Schema of the file: 3 or 2, or 1 for upstream's hierarchical layout; for
 * a JSON profile its format_version, for a native trace its version. */
SP_API int sp_results_schema(const sp_results *r);
/** What the input was: "hdf5", "json" (a JSON profile) or "native" (.spt). */
SP_API const char *sp_results_source_format(const sp_results *r);
/** "columnar", "aggregate" or "hierarchical". */
SP_API const char *sp_results_layout(const sp_results *r);
/** 1 when the file stores individual events (not the aggregate layout). */
SP_API int sp_results_has_events(const sp_results *r);
/** Path given to sp_results_open(); NULL for an image. */
SP_API const char *sp_results_path(const sp_results *r);
/** The metadata "label", or NULL when none was recorded. */
SP_API const char *sp_results_label(const sp_results *r);
/** The label, else the file name without its last extension, else "results". */
SP_API const char *sp_results_display_label(const sp_results *r);
/** Total events stored in the file (0 for the aggregate layout). */
SP_API uint64_t sp_results_num_events(const sp_results *r);

/*====== Metadata ======*/

typedef enum sp_value_kind {
  SP_VALUE_INT,          /* i */
  SP_VALUE_FLOAT,        /* f */
  SP_VALUE_STRING,       /* s */
  SP_VALUE_BOOL,         /* i (0 or 1) */
  SP_VALUE_INT_ARRAY,    /* n, ints */
  SP_VALUE_FLOAT_ARRAY,  /* n, floats */
  SP_VALUE_STRING_ARRAY, /* n, strings */
  SP_VALUE_OTHER         /* a type this reader does not interpret; see text */
} sp_value_kind;

typedef struct sp_metadata_entry {
  const char *key;
  sp_value_kind kind;
  int64_t i;
  double f;
  const char *s;
  size_t n;
  const int64_t *ints;
  const double *floats;
  const char *const *strings;
  /* A one-line rendering: 42, 0.5, the string itself, ["a", "b"]. */
  const char *text;
} sp_metadata_entry;

/** Number of /metadata attributes (in the file's attribute order). */
SP_API size_t sp_results_num_metadata(const sp_results *r);
/** Entry i; NULL when out of range. Owned by r. */
SP_API const sp_metadata_entry *sp_results_metadata_at(const sp_results *r, size_t i);
/** Entry by key; NULL when absent. */
SP_API const sp_metadata_entry *sp_results_metadata(const sp_results *r, const char *key);

/*====== Regions and ranks ======*/

SP_API size_t sp_results_num_regions(const sp_results *r);
/** Name of region i; NULL when out of range. */
SP_API const char *sp_results_region_name(const sp_results *r, size_t region);
/** Index of the region called `name`; SP_ERR_NOT_FOUND when there is none. */
SP_API sp_status sp_results_find_region(const sp_results *r, const char *name, size_t *region);

/** Number of distinct ranks, and the i-th one (ascending); -1 out of range. */
SP_API size_t sp_results_num_ranks(const sp_results *r);
SP_API int64_t sp_results_rank(const sp_results *r, size_t i);
/** 1 when `rank` recorded something in the file. */
SP_API int sp_results_has_rank(const sp_results *r, int64_t rank);
/** Number of ranks on which `region` has a row. */
SP_API size_t sp_results_region_num_ranks(const sp_results *r, size_t region);

/** 1 when the events carry a thread id column (lanes are per thread). */
SP_API int sp_results_has_threads(const sp_results *r);
/** The thread ids (lanes) that recorded calls on `rank`, ascending; reads
 * the rank's thread id column. 0 threads when the file has no thread ids.
 * free() *ids. */
SP_API sp_status sp_results_threads(sp_results *r, int64_t rank, int64_t **ids, size_t *n);
/** 1 when the events carry task ids (track_async): a task on a thread is
 * its own lane. */
SP_API int sp_results_has_tasks(const sp_results *r);
/** 1 if the events carry each call's await time (events/await_ns, track_async). */
SP_API int sp_results_has_await(const sp_results *r);
/** 1 when the file stores device time per call (events/gpu_durations:
 * use_gpu_timing found a usable backend on some rank). */
SP_API int sp_results_has_gpu(const sp_results *r);

/** 1 when the events carry call ids and parent ids (explicit nesting). */
SP_API int sp_results_has_call_ids(const sp_results *r);

/* The lane tables (/thread_table, /task_table; upstream's fields). Times are
 * as stored: relative to the rank's start_time_ns (sp_results_rank_start_ns),
 * -1 where unknown. Rows are owned by r; n is 0 when the file has no table. */
typedef struct sp_thread_info {
  int64_t rank, index;  /* index: what the events' thread ids hold */
  int64_t ident;        /* pthread_self() / Python's threading ident; 0 none */
  int64_t native_id;    /* OS thread id; 0 none */
  int daemon;
  int64_t start_ns, end_ns; /* end_ns -1: alive at finalize */
  int64_t cpu_ns;       /* -1 unknown */
  int64_t omp_thread;   /* ours; -1 unknown or outside OpenMP */
  const char *name;
} sp_thread_info;
typedef struct sp_task_info {
  int64_t rank, index;  /* index: what the events' task ids hold */
  int64_t thread_index; /* thread that last ran it; -1 unknown */
  int64_t created_ns, done_ns; /* done_ns -1: not finished */
  int64_t steps, running_ns, suspended_ns;
  int64_t switch_id;    /* ours: the id given to sp_task_switch(); -1 unknown */
  const char *kind, *name, *coro_name;
} sp_task_info;
SP_API sp_status sp_results_thread_table(const sp_results *r, const sp_thread_info **rows, size_t *n);
SP_API sp_status sp_results_task_table(const sp_results *r, const sp_task_info **rows, size_t *n);
/** The origin of rank `rank`'s lane-table times: its own start_time_ns
 * (/ranks/start_time_ns in an MPI job's file, else metadata start_time_ns).
 * SP_ERR_NOT_FOUND when the file records none. */
SP_API sp_status sp_results_rank_start_ns(const sp_results *r, int64_t rank, int64_t *ns);

/** Where a region was declared: the first rank that captured it. `file` is
 * "" and `line` -1 when unknown; `text` is "" when no source was captured.
 * Pointers are owned by r. */
SP_API sp_status sp_results_region_source(const sp_results *r, size_t region, const char **file,
                                          int64_t *line, const char **text);
/** The region's tags as JSON list text ("[]" when none). */
SP_API const char *sp_results_region_tags(const sp_results *r, size_t region);

/*====== Rows and events ======*/

/* The file stores one row per (region, rank); each row owns a slice of the
 * event columns. Rows are how exporters stream: read a row in pieces of any
 * size with sp_results_row_read(). */
typedef struct sp_row_info {
  size_t region;
  int64_t rank;
  uint64_t count; /* calls; events stored for it (0 in the aggregate layout) */
} sp_row_info;

SP_API size_t sp_results_num_rows(const sp_results *r);
SP_API sp_status sp_results_row_info(const sp_results *r, size_t row, sp_row_info *out);
/** Events [first, first+n) of a row into caller arrays; any pointer may be
 * NULL to skip that column. Columns the file lacks read as -1. A call that
 * ends before it starts is SP_ERR_FORMAT. */
SP_API sp_status sp_results_row_read(sp_results *r, size_t row, uint64_t first, size_t n,
                                     int64_t *start_ns, int64_t *end_ns, int64_t *call_ids,
                                     int64_t *parent_ids, int64_t *thread_ids);

/** Device time in ns of a row's events [first, first+n) (the same calls, in
 * the same order, as sp_results_row_read); -1 where a call has none, and
 * for every call when the file has no GPU times. */
SP_API sp_status sp_results_row_read_gpu(sp_results *r, size_t row, uint64_t first, size_t n,
                                         int64_t *gpu_ns);
/** The task (events/task_ids, -1 outside any task) and the await time in ns
 * (events/await_ns: how long the call's task was switched out while it was
 * open) of a row's events [first, first+n), the calls of
 * sp_results_row_read in the same order; either pointer may be NULL. A
 * column the file lacks reads as -1. */
SP_API sp_status sp_results_row_read_tasks(sp_results *r, size_t row, uint64_t first, size_t n,
                                           int64_t *task_ids, int64_t *await_ns);
typedef struct sp_events {
  size_t count;
  int64_t *start_ns, *end_ns;
  int64_t *call_ids, *parent_ids, *thread_ids; /* -1 where not recorded */
} sp_events;

/** All events of `region` on `rank` (in stored order), malloc'd into `out`;
 * release with sp_events_free(). A rank without the region gives count 0. */
SP_API sp_status sp_results_events(sp_results *r, size_t region, int64_t rank, sp_events *out);
SP_API void sp_events_free(sp_events *e);

/** Earliest start over all regions and ranks (from the summary rows); the
 * origin the exporters measure relative times from. 0 when nothing recorded. */
SP_API sp_status sp_results_min_start(sp_results *r, int64_t *out);

/* Per-region counter totals (perf_events): upstream's
 * rank<N>/perf_events/<region> groups, one row per (rank, region). */
typedef struct sp_counter_row {
  int64_t rank;
  char *region;        /* the region's name ('|' of the group name mapped back to '/') */
  int64_t calls;       /* calls of the region on that rank */
  size_t nevents;
  char **event_names;  /* as the perf_events setting named them */
  uint64_t *values;    /* summed over the region's calls */
} sp_counter_row;
/** Every counter row of the file (none: *n = 0); free with sp_counter_rows_free. */
SP_API sp_status sp_results_counters(sp_results *r, sp_counter_row **rows, size_t *n);
SP_API void sp_counter_rows_free(sp_counter_row *rows, size_t n);

/** Progress reports for long event reads: called with events read so far and
 * the total of the current operation. NULL turns it off. */
typedef void (*sp_progress_fn)(void *ctx, uint64_t done, uint64_t total);
SP_API void sp_results_set_progress(sp_results *r, sp_progress_fn fn, void *ctx);

/*====== Filters ======*/

/* Regions are kept when any include pattern matches (or there is none) and no
 * exclude pattern matches. Patterns are POSIX extended regular expressions
 * anchored at the start of the name only, like Python's re.match. Ranks come
 * from specs like "0,2,4-7"; several specs form their union; no spec means
 * every rank. */
typedef struct sp_filter sp_filter;

SP_API sp_status sp_filter_create(sp_filter **out);
SP_API void sp_filter_free(sp_filter *f);
SP_API sp_status sp_filter_include(sp_filter *f, const char *regex);
SP_API sp_status sp_filter_exclude(sp_filter *f, const char *regex);
SP_API sp_status sp_filter_ranks(sp_filter *f, const char *spec);
/** 1 when the region name passes the include/exclude patterns. NULL f: 1. */
SP_API int sp_filter_match_region(const sp_filter *f, const char *name);
/** 1 when the rank passes the rank selection. NULL f: 1. */
SP_API int sp_filter_match_rank(const sp_filter *f, int64_t rank);
/** Selected ranks (sorted, unique); 0 when every rank is selected. */
SP_API size_t sp_filter_num_ranks(const sp_filter *f);
SP_API const int64_t *sp_filter_rank_list(const sp_filter *f);
SP_API size_t sp_filter_num_includes(const sp_filter *f);
SP_API const char *sp_filter_include_at(const sp_filter *f, size_t i);
SP_API size_t sp_filter_num_excludes(const sp_filter *f);
SP_API const char *sp_filter_exclude_at(const sp_filter *f, size_t i);
/** SP_ERR_NOT_FOUND naming the first selected rank the file lacks. */
SP_API sp_status sp_filter_check_ranks(const sp_filter *f, const sp_results *r);

/** Parse one rank spec ("0,2,4-7") into a sorted, de-duplicated malloc'd
 * list; free() it. Errors (SP_ERR_INVALID_ARGUMENT): empty items, signs,
 * reversed ranges, non-numbers, values above 2^31-1, ranges of more than
 * 2^24 ranks. */
SP_API sp_status sp_parse_rank_spec(const char *spec, int64_t **ranks, size_t *n);

/*====== Line profiles ======*/

/* The record type, sp_line_profile, is in scope_profiler/lines.h. */

/** Every line-profile record of the file, by rank then index; owned by r,
 * read and checked on the first call. 0 records when the file has none.
 * SP_ERR_FORMAT names a record that is malformed. */
SP_API sp_status sp_results_line_profiles(sp_results *r, const sp_line_profile **out, size_t *n);

/*====== Statistics ======*/

#define SP_STATS_PERCENTILES 1u /* p50/p95/p99: reads the region's events */
#define SP_STATS_OWN 2u         /* exclusive time: stored, or rebuilt from call trees */

typedef struct sp_region_stats {
  uint64_t count;      /* calls */
  size_t ranks;        /* ranks with a row for the region among the selected */
  int64_t total_ns;    /* the rest is meaningless when count == 0 */
  int64_t min_ns, max_ns;
  int64_t first_ns;    /* duration of the chronologically first call */
  int64_t last_ns;     /* duration of the chronologically last call */
  double mean_ns;
  double std_ns;       /* population standard deviation */
  int64_t first_start_ns, last_end_ns;
  double imbalance;    /* slowest rank's total / mean rank total (ranks with the region) */
  double excess_ns;    /* slowest rank's total - mean rank total */
  int has_percentiles; /* set when SP_STATS_PERCENTILES and events exist */
  double p50_ns, p95_ns, p99_ns;
  int has_own;         /* set when SP_STATS_OWN and exclusive time is known */
  int64_t own_ns;      /* inclusive total minus direct children's time */
} sp_region_stats;

/** Statistics of `region` over the ranks `f` selects (NULL: all; the region
 * patterns of f are ignored here). Summary fields never read events. */
SP_API sp_status sp_results_region_stats(sp_results *r, size_t region, const sp_filter *f,
                                         unsigned flags, sp_region_stats *out);
/** The same for a single rank. */
SP_API sp_status sp_results_region_rank_stats(sp_results *r, size_t region, int64_t rank,
                                              unsigned flags, sp_region_stats *out);
/** Device time of `region` over the ranks `f` selects (NULL: all), from the
 * summary rows (summary_statistics gpu_count/gpu_total): the calls that
 * have one and their sum in ns. 0 and 0 without GPU timing. */
SP_API sp_status sp_results_region_gpu(sp_results *r, size_t region, const sp_filter *f,
                                       uint64_t *count, int64_t *total_ns);
/** The same for a single rank. */
SP_API sp_status sp_results_region_rank_gpu(sp_results *r, size_t region, int64_t rank,
                                            uint64_t *count, int64_t *total_ns);

/*====== Call trees ======*/

typedef struct sp_call {
  int64_t start_ns, end_ns;
  int64_t parent; /* index of the parent call in the same lane; -1: a root of its lane */
  int64_t thread; /* -1 when threads were not recorded */
  int64_t task;   /* -1 outside an async task or when tasks were not recorded */
  uint32_t region;
  uint32_t depth; /* within its lane */
  /* A root of its lane whose parent ran on another thread (an OpenMP worker's
   * call under the call that opened the parallel region): that call's index,
   * which may come later in the array; else -1. Lane parents and depths
   * ignore it, so lanes stay properly nested; call-path trees follow it. */
  int64_t xparent;
} sp_call;

/** Nest calls given their intervals, exactly as upstream's flame chart does:
 * sort by (lane, start, longer first), where a lane is a thread, or a task on
 * a thread; then walk each lane with a stack of open calls,
 * popping while the top has ended (end <= start): depth = stack size, parent =
 * the top. Fills parent and depth in place (after sorting). `overlaps` (may be
 * NULL) receives the number of calls that start inside their parent but end
 * after it. */
SP_API sp_status sp_call_stack_build(sp_call *calls, size_t n, size_t *overlaps);

/** Every call of the regions `f` keeps on `rank`, nested as above, sorted by
 * (thread, task, start, longer first). When the file records call and parent
 * ids they define the nesting; otherwise it is rebuilt by interval
 * containment per lane. Calls of regions the filter drops are removed and their
 * children attached to the nearest kept ancestor. free() *calls. */
SP_API sp_status sp_results_call_stack(sp_results *r, int64_t rank, const sp_filter *f,
                                       sp_call **calls, size_t *n, size_t *overlaps);

/* A call tree merged by call path (region under region), over ranks. The
 * path of a call with a parent on another thread goes through that parent. */
typedef struct sp_tree_node {
  uint32_t region;
  int64_t parent;       /* node index; -1 for a root */
  uint64_t count;
  int64_t total_ns;     /* inclusive, summed over calls (and threads) */
  int64_t children_ns;  /* time of direct child calls on the same thread: the
                         * node's own time is total_ns - children_ns */
  int64_t wall_ns;      /* time covered by its calls (per rank, summed), so
                         * calls of several threads at once count once */
  uint32_t threads;     /* most threads of one rank that ran its calls */
} sp_tree_node;

/** Merge the call stacks of the selected ranks into a call-path tree. Nodes
 * are in creation order (a parent before its children). free() *nodes. */
SP_API sp_status sp_results_call_tree(sp_results *r, const sp_filter *f, sp_tree_node **nodes,
                                      size_t *n);

/*====== Exporters ======*/

typedef enum sp_export_format {
  SP_EXPORT_CHROME_TRACE, /* Trace Event JSON, streamed */
  SP_EXPORT_SPEEDSCOPE,   /* speedscope evented profiles, one per lane */
  SP_EXPORT_FOLDED,       /* "a;b;c <self ns>" lines for flamegraph.pl */
  SP_EXPORT_GANTT_CSV,    /* file,rank,region,start_seconds,end_seconds; streamed */
  SP_EXPORT_FLAME_CSV,    /* file,rank,region,depth,start_seconds,end_seconds */
  SP_EXPORT_DURATIONS_CSV /* file,region,metric,value_seconds */
} sp_export_format;
/* OR'd into a CSV format: omit the header row (to append another file). */
#define SP_EXPORT_NO_HEADER 0x100

typedef struct sp_export_stats {
  uint64_t events;   /* calls written */
  size_t overlaps;   /* calls that overlapped their parent without nesting */
} sp_export_stats;

/** Write `r` (filtered by f; may be NULL) to `out` in `format`. `label` names
 * the file in the CSV "file" column (NULL: the display label). */
SP_API sp_status sp_results_export(sp_results *r, sp_export_format format, const sp_filter *f,
                                   const char *label, FILE *out, sp_export_stats *stats);

/** region_statistics.json (upstream's schema) for n files. `labels` may be
 * NULL (display labels, made unique as "x (2)"); `paths` are written as
 * given (callers pass absolute paths). */
SP_API sp_status sp_write_region_statistics_json(sp_results *const *results, size_t n,
                                                 const char *const *labels,
                                                 const char *const *paths, const sp_filter *f,
                                                 FILE *out);

/** Upstream's durations plot data, file,region,metric,value_seconds, for the
 * regions common to all files; metrics avg, min, max, total. */
SP_API sp_status sp_write_durations_csv(sp_results *const *results, size_t n,
                                        const char *const *labels, const sp_filter *f, FILE *out);

/** Upstream's JSON profile (format "scope-profiler-profile", format_version
 * 1) of `r`, the regions and ranks `f` keeps (NULL: all): metadata, one row
 * per (region, rank) with its source, tags and either its calls (absolute
 * start and end ns, and the call ids, parent ids, thread ids and task ids
 * the file has, exclusive time) or, for the aggregate layout, its totals;
 * the lane tables. One line, as upstream writes it; our reader reads it
 * back to the same results. */
SP_API sp_status sp_write_json_profile(sp_results *r, const sp_filter *f, FILE *out);

/** {"files":[{"file_path","num_ranks","metadata":{...}}]}, values unclipped. */
SP_API sp_status sp_write_metadata_json(sp_results *const *results, size_t n,
                                        const char *const *paths, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
