/* read_internal.h - the reader's private state, shared by the files of
 * src/read/: opening and validation (read_open.c, read_hier.c), event access
 * (read_events.c), statistics (read_stats.c), filters (read_filter.c), call
 * trees (read_tree.c), JSON helpers (read_json.c) and exporters
 * (read_export.c). Nothing outside src/read/ and the tests includes this.
 */
#ifndef SP_READ_INTERNAL_H
#define SP_READ_INTERNAL_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>

#include "read/read_walk.h"
#include "scope_profiler/reader.h"

/* Event times the reader accepts: strictly within +-2^62 ns (146 years), so
 * that any two times' difference fits in int64 (read_events.c refuses
 * others; -2^62 to 2^62 would be 2^63). */
#define SP__TIME_LIMIT ((int64_t)1 << 62)

/* Limits that keep a hostile file from making us allocate absurd amounts:
 * the small tables are read whole at open time. */
#define SP__MAX_REGIONS (1u << 24)
#define SP__MAX_ROWS (1u << 26)
#define SP__MAX_EVENTS ((uint64_t)1 << 40)
#define SP__MAX_META_ATTRS 100000
#define SP__MAX_META_ELEMS (1u << 20)
#define SP__MAX_RANK 2147483647LL

/* The 11 fields of a summary_statistics row plus its call count. */
struct sp__summary {
  uint64_t count;
  int64_t total, minimum, maximum, first, last, start_minimum, end_maximum;
  uint64_t gpu_count;
  int64_t gpu_total;
  double mean, m2;
};

/* One (region, rank) row. */
struct sp__rrow {
  uint32_t region;
  int64_t rank;
  uint64_t offset, count; /* event slice (columnar) or dataset length (hierarchical) */
  char *group;            /* hierarchical: path of the group holding the datasets */
  int64_t source_line;
  int64_t exclusive;      /* stored exclusive total; -1 unknown */
  char *source_file, *source_text, *tags;
  int has_summary;        /* sum is valid (stored, or computed from events) */
  int has_spread;         /* mean and m2 are known (not only count/total/min/max) */
  struct sp__summary sum;
  int own_known;          /* own was rebuilt from the call tree */
  int64_t own;
  int64_t clock_offset;   /* ns added to this rank's times to put them on rank 0's clock */
  /* schema 3: where decoding the row's start deltas stands (next event,
   * running start before it) */
  uint64_t start_next;
  int64_t start_acc;
  /* events [0, checked) were read with their starts and ends and passed
   * sp__row_read's checks (their durations can then be read alone) */
  uint64_t checked;
};

/* A row of /thread_table or /task_table (reader.h), with its strings. */
struct sp__lanes {
  sp_thread_info *threads;
  size_t nthreads;
  sp_task_info *tasks;
  size_t ntasks;
  char **strings; /* every string the rows point at */
  size_t nstrings;
  int64_t *rank_starts; /* /ranks/start_time_ns, or NULL */
  size_t nrank_starts;
};

/* The keys of a JSON profile's lane-table rows ("threads", "tasks"), in
 * upstream's order, and where each is in our row: export_profile.c writes
 * them and read_native.c reads them from this one list. */
struct sp__lane_key {
  const char *key;
  char kind;    /* 'i' an int64_t, 'b' an int written as a JSON bool, 's' a const char * */
  char required; /* the reader refuses a row without it */
  size_t off;   /* in sp_thread_info (threads) or sp_task_info (tasks) */
};
/* tasks 0: the thread rows' keys, 1: the task rows'; *n: how many. */
const struct sp__lane_key *sp__lane_keys(int tasks, size_t *n);

struct sp__meta {
  sp_metadata_entry e; /* points into the fields below */
  char *key, *s, *text;
  int64_t *ints;
  double *floats;
  char **strings;
};

struct sp_results {
  hid_t file;
  const char *format; /* "hdf5", "json", "native" */
  int schema;
  const char *layout; /* static string */
  int aggregate;
  char *path;
  char *display_label;
  const char *label;

  struct sp__meta *meta;
  size_t nmeta;

  char **names;
  size_t nregions;
  size_t *region_row_start; /* rows of region i: region_rows[start[i] .. start[i+1]) */
  size_t *region_rows;
  /* region i's row that gives its source (the first with any) and its tags
   * (the first not "[]"), SIZE_MAX for none: found once at open, where a
   * scan of the region's rows per question made per-rank passes quadratic */
  size_t *region_source_row, *region_tags_row;

  struct sp__rrow *rows;
  size_t nrows;

  int64_t *ranks;
  size_t nranks;

  uint64_t nevents;
  hid_t ds_start, ds_end, ds_call, ds_parent, ds_thread, ds_task, ds_gpu, ds_await; /* H5I_INVALID_HID: absent */
  int hier_gpu; /* hierarchical: some region group has gpu_durations */
  int thread_u32;
  /* schema 3: ds_start and ds_end hold start_deltas and durations, decoded
   * by read_events.c */
  int delta;
  /* events held in memory (JSON profiles, native traces); NULL: from the file */
  int64_t *mem_start, *mem_end, *mem_call, *mem_parent, *mem_thread, *mem_task;
  int64_t *mem_gpu; /* device times in memory; NULL: none (-1 for every call) */
  int64_t *mem_await; /* await times in memory; NULL: none (-1) */
  struct sp__lanes lanes;

  struct sp__lines *lines; /* line-profile records, loaded on first use (read_lines.c) */

  sp_progress_fn progress;
  void *progress_ctx;
  uint64_t progress_done, progress_total;

  /* event columns that are virtual datasets of this file, their mappings
   * read once (read_events.c) */
  struct sp__vcol *vcols;
  size_t nvcols;
};

/* The virtual columns' mappings and source datasets freed (read_events.c). */
void sp__vcols_free(sp_results *r);

/* HDF5 prints its error stack to stderr by default; the reader reports
 * problems through sp_last_error() instead. */
struct sp__h5quiet {
  H5E_auto2_t fn;
  void *data;
};
void sp__h5_quiet_begin(struct sp__h5quiet *q);
void sp__h5_quiet_end(const struct sp__h5quiet *q);

/* Open helpers (read_open.c, read_hier.c, read_native.c). */
sp_status sp__open_hierarchical(sp_results *r);
sp_results *sp__results_new(void);
/* Non-HDF5 inputs recognised by content: upstream's JSON profile v1 (plain
 * or gzip) and native traces (.spt v1/v2). */
sp_status sp__open_json(sp_results *r, const char *data, size_t size);
/* Any input by content, from memory (`name` for messages): what
 * sp_results_open does once it has read a file; also the fuzz target's. */
sp_status sp__results_open_bytes(const void *data, size_t size, const char *name, sp_results **out);
sp_status sp__open_spt(sp_results *r, const unsigned char *data, size_t size);
sp_status sp__read_metadata(sp_results *r, hid_t group);
/* Points the public metadata entries at their strings (after building). */
void sp__meta_fix_pointers(sp_results *r);
sp_status sp__open_columnar(sp_results *r, hid_t root);
/* The kind of object `name` (one component) names under loc; H5I_BADID
 * when there is no such link, it dangles or leaves the file. */
H5I_type_t sp__child_type(hid_t loc, const char *name);
/* 1 when every link on `path` below loc exists and is a hard link (looked
 * at without following any): what may be opened without leaving the file. */
int sp__hard_path(hid_t loc, const char *path);
/* Open the 1-D dataset <gname>/<name> under grp and check its type class;
 * a missing optional one gives *ds = H5I_INVALID_HID and SP_OK. */
sp_status sp__open_column(sp_results *r, hid_t grp, const char *gname, const char *name, int required,
                          H5T_class_t want, hid_t *ds, hsize_t *len);
sp_status sp__read_column(sp_results *r, hid_t ds, hid_t memtype, void *buf, size_t n, const char *what);
sp_status sp__finish_open(sp_results *r);
/* SP_ERR_FORMAT when dataset d (n values) keeps them outside the file or,
 * with `written`, when its storage was never fully written. */
sp_status sp__check_storage(const sp_results *r, hid_t d, const char *what, hsize_t n,
                            int written);
/* Strings of a 1-D string dataset or attribute (vlen or fixed). */
sp_status sp__read_strings(hid_t obj, int is_attr, size_t n, char ***out, const char *what);
/* Refuse a variable-length string dataset of n values whose claimed lengths
 * the file cannot hold (read_vlen.c), before HDF5 allocates them. */
sp_status sp__vlen_check(hid_t dataset, size_t n, const char *what);
void sp__free_strings(char **v, size_t n);
/* Build "[\"a\", \"b\"]" from strings. */
char *sp__json_list_text(char *const *v, size_t n);

/* Line-profile records (read_lines.c). */
struct sp__lines;
void sp__lines_free(struct sp__lines *l);

/* Events (read_events.c). */
sp_status sp__row_summary(sp_results *r, size_t row, const struct sp__summary **out);
sp_status sp__row_read(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *start,
                       int64_t *end, int64_t *call, int64_t *parent, int64_t *thread);
/* Where the row's events are stored as several pieces that each may be in
 * start order on their own: the row-relative offsets (0 < cut < count, in
 * ascending order) at which a mapping of the virtual start column begins
 * (a staged file's (row, block) segments, docs/file-format.md "Staged
 * blocks"). *cuts is allocated (free it; NULL and 0 for a row stored in
 * one piece, or read through HDF5). SP_OK or SP_ERR_NO_MEMORY. */
sp_status sp__row_cuts(sp_results *r, size_t row, uint64_t **cuts, size_t *n);
/* Durations (end - start) of a row's events; `scratch` holds n values.
 * A schema-3 row whose times were all checked by an earlier read (the walk's)
 * reads its durations column alone; any other reads starts and ends. */
sp_status sp__row_read_durations(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *dur,
                                 int64_t *scratch);
/* Task ids of a row's events (-1 where none: no track_async, or outside a task). */
sp_status sp__row_read_tasks(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *task);
/* Await times (events/await_ns) of a row's events; -1 where the file has none. */
sp_status sp__row_read_await(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *await_ns);
/* Device times of a row's events (-1 where none: no GPU timing, or a call
 * without a measurement). */
sp_status sp__row_read_gpu(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *gpu);
void sp__progress(sp_results *r, uint64_t add);
void sp__progress_begin(sp_results *r, uint64_t total);

/* Statistics helpers (read_stats.c). */
void sp__summary_from_durations(const int64_t *start, const int64_t *end, size_t n,
                                struct sp__summary *s);
void sp__summary_merge(struct sp__summary *a, const struct sp__summary *b);
/* numpy's default (linear) percentile; reorders `v`. */
double sp__percentile(int64_t *v, size_t n, double pct);
/* k of them (best in increasing order: each selection then runs on the
 * part of v above the previous one) into out; NaN each when n is 0. */
void sp__percentiles(int64_t *v, size_t n, const double *pct, size_t k, double *out);
sp_status sp__rank_own_times(sp_results *r, int64_t rank);

/* Filters (read_filter.c). */
int sp__filter_has_patterns(const sp_filter *f);

/* Call trees (read_tree.c). */
sp_status sp__rank_calls(sp_results *r, int64_t rank, sp_call **calls, size_t *n,
                         size_t *overlaps);
sp_status sp__filter_calls(sp_results *r, const sp_filter *f, sp_call *calls, size_t *n);

/* A rank's calls in start order, nested as the above, without sorting:
 * read_walk.h. */

/* JSON output (read_json.c): Python json.dumps(indent=2)-shaped output. */
struct sp__json {
  FILE *f;
  int indent; /* spaces per level; 0: compact */
  int depth;
  int count[64]; /* items written at each depth */
  int after_key;
};
void sp__json_init(struct sp__json *j, FILE *f, int indent);
void sp__json_begin_object(struct sp__json *j);
void sp__json_end_object(struct sp__json *j);
void sp__json_begin_array(struct sp__json *j);
void sp__json_end_array(struct sp__json *j);
void sp__json_key(struct sp__json *j, const char *key);
void sp__json_string(struct sp__json *j, const char *s);
void sp__json_int(struct sp__json *j, int64_t v);
void sp__json_uint(struct sp__json *j, uint64_t v);
void sp__json_double(struct sp__json *j, double v); /* NaN/inf: null */
void sp__json_null(struct sp__json *j);
void sp__json_bool(struct sp__json *j, int v);
void sp__json_raw(struct sp__json *j, const char *text); /* an already-JSON value */
/* A metadata value as JSON (lists stay lists; OTHER as its text). */
void sp__json_meta_value(struct sp__json *j, const sp_metadata_entry *e);
/* The metadata object under its key: every metadata entry of r, in the file's order. */
void sp__json_metadata(struct sp__json *j, const sp_results *r);
/* Write a JSON string literal (with quotes) to f. */
void sp__json_write_string(FILE *f, const char *s);
/* Python repr() of a float: shortest round-trip digits, "1e-08", "0.5". */
void sp__format_double(char *buf, size_t size, double v);

/* Sort helpers. */
int sp__cmp_i64(const void *a, const void *b);

#endif
