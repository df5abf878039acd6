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

#include "scope_profiler/reader.h"

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
  struct sp__summary sum;
  int own_known;          /* own was rebuilt from the call tree */
  int64_t own;
  int64_t clock_offset;   /* ns added to this rank's times to put them on rank 0's clock */
  /* schema 3: the row's first start and call id, and where sequential
   * decoding stands (next event to decode, running value before it) */
  int64_t start_base, call_base;
  uint64_t start_next, call_next;
  int64_t start_acc, call_acc;
};

/* Schema 3: the events of one coded column whose true value is listed
 * beside it (ascending event numbers). */
struct sp__overflow {
  uint64_t *index;
  int64_t *value;
  size_t n;
};

struct sp__meta {
  sp_metadata_entry e; /* points into the fields below */
  char *key, *s, *text;
  int64_t *ints;
  double *floats;
  char **strings;
};

struct sp_results {
  hid_t file;
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

  struct sp__rrow *rows;
  size_t nrows;

  int64_t *ranks;
  size_t nranks;

  uint64_t nevents;
  hid_t ds_start, ds_end, ds_call, ds_parent, ds_thread, ds_task; /* H5I_INVALID_HID: absent */
  int thread_u32;
  /* schema 3: ds_start..ds_parent hold start_gaps, durations, call_id_gaps
   * and parent_offsets, decoded by read_events.c */
  int delta;
  struct sp__overflow overflow[4];

  struct sp__lines *lines; /* line-profile records, loaded on first use (read_lines.c) */

  sp_progress_fn progress;
  void *progress_ctx;
  uint64_t progress_done, progress_total;
};

/* HDF5 prints its error stack to stderr by default; the reader reports
 * problems through sp_last_error() instead. */
struct sp__h5quiet {
  H5E_auto2_t fn;
  void *data;
};
void sp__h5_quiet_begin(struct sp__h5quiet *q);
void sp__h5_quiet_end(const struct sp__h5quiet *q);

/* Open helpers (read_open.c, read_hier.c). */
sp_status sp__open_hierarchical(sp_results *r);
sp_status sp__read_metadata(sp_results *r, hid_t group);
sp_status sp__finish_open(sp_results *r);
/* SP_ERR_FORMAT when dataset d (n values) keeps them outside the file or,
 * with `written`, when its storage was never fully written. */
sp_status sp__check_storage(const sp_results *r, hid_t d, const char *what, hsize_t n,
                            int written);
/* Strings of a 1-D string dataset or attribute (vlen or fixed). */
sp_status sp__read_strings(hid_t obj, int is_attr, size_t n, char ***out, const char *what);
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
/* Task ids of a row's events (-1 where none: no track_async, or outside a task). */
sp_status sp__row_read_tasks(sp_results *r, size_t row, uint64_t first, size_t n, int64_t *task);
void sp__progress(sp_results *r, uint64_t add);
void sp__progress_begin(sp_results *r, uint64_t total);

/* Statistics helpers (read_stats.c). */
void sp__summary_from_durations(const int64_t *start, const int64_t *end, size_t n,
                                struct sp__summary *s);
void sp__summary_merge(struct sp__summary *a, const struct sp__summary *b);
/* numpy's default (linear) percentile; reorders `v`. */
double sp__percentile(int64_t *v, size_t n, double pct);
sp_status sp__rank_own_times(sp_results *r, int64_t rank);

/* Filters (read_filter.c). */
int sp__filter_has_patterns(const sp_filter *f);

/* Call trees (read_tree.c). */
sp_status sp__rank_calls(sp_results *r, int64_t rank, sp_call **calls, size_t *n,
                         size_t *overlaps);
sp_status sp__filter_calls(sp_results *r, const sp_filter *f, sp_call *calls, size_t *n);

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
/* Write a JSON string literal (with quotes) to f. */
void sp__json_write_string(FILE *f, const char *s);
/* Python repr() of a float: shortest round-trip digits, "1e-08", "0.5". */
void sp__format_double(char *buf, size_t size, double v);

/* Sort helpers. */
int sp__cmp_i64(const void *a, const void *b);

#endif
